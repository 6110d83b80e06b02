import AudioGraphCore
import AudioGraphNodeAPI

extension ProcessingNodes {
    /// `channel-map`, `downmix`, `upmix`. [main-thread]
    static var channelNodes: [any NodeType] {
        [ChannelMapType(), ChannelMixType(.down), ChannelMixType(.up)]
    }
}

/// `channel-map`: each output channel is one input channel, picked by index
/// or by its name in the input's layout; channels may be dropped, reordered
/// or repeated. Samples are copied exactly.
public struct ChannelMapType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "channel-map", role: .processor,
        summary: "Picks, reorders or duplicates channels by index or by name in the input's layout (L and R of 5.1, C alone, 1 then 0, 0 twice). Samples are copied exactly.",
        inputs: .single,
        parameters: [
            .init("channels", .channelList, range: 0...63,
                  "The input channel of each output channel, in order: an index from 0, or a name in the input's layout (L R C LFE Ls Rs Lb Rb; M for mono; \"1\", \"2\"… for discrete). Repeat one to duplicate it."),
            .init("layout", .choice(ChannelLayout.allCases.map(\.rawValue)), optional: true,
                  "The output's layout tag; default: the input's layout when the picked names spell one exactly (L R → stereo, or binaural from binaural), else mono for 1 channel, stereo for 2, discrete otherwise."),
        ], acceptsRateIslands: true)

    /// The input channel of each output channel, and the output format;
    /// nil after reporting an error. [main-thread]
    func plan(_ c: ResolveContext) -> (sources: [Int], output: StreamFormat)? {
        guard let picks = c.parameters.channelList("channels") else { return nil }
        var ok = true
        if picks.isEmpty || picks.count > 64 {
            c.error(parameter: "channels", "\(picks.count) channels; give 1 to 64, e.g. [\"L\", \"R\"] or [0, 1]")
            ok = false
        }
        var given: ChannelLayout?
        if let name = c.parameters.string("layout") {
            given = ChannelLayout(rawValue: name)
            if let n = given?.channelCount, n != picks.count {
                c.error(parameter: "layout", "\"\(name)\" has \(n) channel\(n == 1 ? "" : "s") but \"channels\" picks \(picks.count)")
                ok = false
            }
        }
        guard ok, let input = c.input else { return nil }
        let labels = input.layout.channelLabels(count: input.channels)
        let inputText = "the input has \(input.channels) channel\(input.channels == 1 ? "" : "s") (\(input.layout): \(labels.joined(separator: " ")))"
        var sources: [Int] = []
        for (i, pick) in picks.enumerated() {
            switch pick {
            case .index(let k):
                if k < input.channels {
                    sources.append(k)
                } else {
                    c.error(parameter: "channels", element: i, "channel index \(k) is out of range: \(inputText), indexes 0…\(input.channels - 1)")
                    ok = false
                }
            case .name(let name):
                if let k = labels.firstIndex(of: name) {
                    sources.append(k)
                } else {
                    let hint = closestMatch(to: name, in: labels).map { "did you mean \"\($0)\"? " } ?? ""
                    c.error(parameter: "channels", element: i, "\"\(name)\" is not a channel of the input: \(hint)\(inputText)")
                    ok = false
                }
            }
        }
        guard ok else { return nil }
        let layout = given ?? Self.layout(picking: sources, from: input)
        // All of a 5.1's channels in order keep its surrounds (side or back).
        let kept = sources == Array(0..<input.channels) && layout == input.layout && input.surroundsAreBack
        return (sources, StreamFormat(channels: sources.count, sampleRate: input.sampleRate, layout: layout,
                                      surroundsAreBack: kept))
    }

    /// The default output layout: the input's when the picks are all of its
    /// channels in order; else by the picked labels (L R → stereo); else
    /// the usual layout for the count except 6 and 8 (which would claim a
    /// speaker order the picks do not have).
    static func layout(picking sources: [Int], from input: StreamFormat) -> ChannelLayout {
        if sources == Array(0..<input.channels) { return input.layout }
        let labels = input.layout.channelLabels(count: input.channels)
        let picked = sources.map { labels[$0] }
        for layout in [ChannelLayout.stereo, .surround51, .surround71] where input.layout != .discrete {
            if let n = layout.channelCount, picked == layout.channelLabels(count: n) { return layout }
        }
        switch sources.count {
        case 1: return .mono
        case 2: return .stereo
        default: return .discrete
        }
    }

    /// [main-thread | control-thread; validation resolves on the thread that validates]
    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        ThreadRole.check(.main, .control)
        return plan(c)?.output
    }

    /// [main-thread]
    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        ThreadRole.check(.main)
        return try ChannelMatrixNode.make(c) { rc in
            guard let plan = plan(rc), let columns = rc.input?.channels else { return nil }
            return plan.sources.map { k in (0..<columns).map { $0 == k ? 1.0 : 0.0 } }
        }
    }
}
