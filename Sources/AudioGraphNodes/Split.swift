import AudioGraphCore
import AudioGraphNodeAPI

/// `split`: one multichannel input, several outputs, each a group of
/// consecutive input channels. `groups` lists the channel count of each
/// output, in order: `[2, 1, 1, 2]` on 5.1 (L R C LFE Ls Rs) gives `out0` =
/// L R, `out1` = C, `out2` = LFE, `out3` = Ls Rs. Channels past the groups
/// are dropped. Each output's layout is the usual one for its count (1 mono,
/// 2 stereo, 6 5.1, 8 7.1, else discrete), or the matching entry of
/// `layouts`.
public struct SplitType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "split", role: .processor,
        summary: "Splits its input into outputs out0…outN-1 of consecutive channel groups: groups [2, 1, 1, 2] on 5.1 gives L R, C, LFE, Ls Rs. Channels past the groups are dropped.",
        inputs: .single,
        outputs: .numbered(countParameter: "groups"),
        parameters: [
            .init("groups", .numberList, range: 1...64, unit: "channels",
                  "Channels of each output, in order (one output per entry, out0…outN-1), taken from the input's channels in order."),
            .init("layouts", .stringList, optional: true,
                  "Layout tag of each output (one per group: mono, stereo, binaural, 5.1, 7.1, discrete); default: the usual layout for the group's channel count."),
        ], acceptsRateIslands: true)

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let groups = c.parameters.numberList("groups") else { return nil }
        var ok = true
        if groups.isEmpty {
            c.error(parameter: "groups", "give at least one group, e.g. [2, 1, 1, 2] for 5.1 into front, centre, LFE, surrounds")
            ok = false
        }
        for (i, g) in groups.enumerated() where g != g.rounded() {
            c.error(parameter: "groups", element: i, "groups[\(i)] = \(ParameterValue.number(g)) must be a whole number of channels")
            ok = false
        }
        var layouts: [ChannelLayout?] = Array(repeating: nil, count: groups.count)
        if let names = c.parameters.stringList("layouts") {
            if names.count != groups.count {
                c.error(parameter: "layouts", "\(names.count) layout\(names.count == 1 ? "" : "s") for \(groups.count) groups: give exactly one per group")
                ok = false
            } else {
                for (i, name) in names.enumerated() {
                    guard let layout = ChannelLayout(rawValue: name) else {
                        let all = ChannelLayout.allCases.map(\.rawValue)
                        let hint = closestMatch(to: name, in: all).map { "did you mean \"\($0)\"? " } ?? ""
                        c.error(parameter: "layouts", element: i, "unknown layout \"\(name)\"; \(hint)known: \(all.joined(separator: ", "))")
                        ok = false
                        continue
                    }
                    if let n = layout.channelCount, n != Int(groups[i]) {
                        c.error(parameter: "layouts", element: i, "\"\(name)\" has \(n) channel\(n == 1 ? "" : "s") but group \(i) has \(Int(groups[i]))")
                        ok = false
                    }
                    layouts[i] = layout
                }
            }
        }
        guard ok, let input = c.input else { return nil }
        let total = groups.reduce(0) { $0 + Int($1) }
        guard total <= input.channels else {
            c.error(parameter: "groups", "the groups take \(total) channels but the input has \(input.channels) (\(input.layout): \(input.layout.channelLabels(count: input.channels).joined(separator: " ")))")
            return nil
        }
        for (i, g) in groups.enumerated() {
            c.setOutput(i, StreamFormat(channels: Int(g), sampleRate: input.sampleRate, layout: layouts[i]))
        }
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        SplitNode(groups: c.outputFormats.map(\.channels))
    }
}

/// Copies each group of input channels to its output with `Kernels.copy`;
/// every output carries the input's stream state. [audio-thread; for render]
final class SplitNode: RenderNode {
    /// First input channel of each output.
    let offsets: [Int]
    var input: AudioBus?
    var outputs: [AudioBus] = []

    init(groups: [Int]) {
        var first: [Int] = []
        var c = 0
        for g in groups { first.append(c); c += g }
        offsets = first
    }

    /// [main-thread]
    func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws {
        guard let input = inputs.first else { throw EngineError("split needs its input") }
        guard outputs.count == offsets.count else {
            throw EngineError("split has \(outputs.count) output buses for \(offsets.count) groups")
        }
        for (k, out) in outputs.enumerated() where offsets[k] + out.channels > input.channels {
            throw EngineError("split group \(k) reaches channel \(offsets[k] + out.channels) of a \(input.channels)-channel input")
        }
        self.input = input
        self.outputs = outputs
    }

    /// [audio-thread]
    func render(frames: Int) {
        guard let input else { return }
        let state = input.state
        var k = 0
        while k < outputs.count {
            let out = outputs[k]
            let first = offsets[k]
            var c = 0
            while c < out.channels {
                Kernels.copy(UnsafePointer(input.channel(first + c)), to: out.channel(c), count: frames)
                c += 1
            }
            out.state = state
            k += 1
        }
    }
}
