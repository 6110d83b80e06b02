import AudioGraphCore
import AudioGraphNodeAPI

/// `mixer`: sums N inputs, each with its own smoothed gain and mute, then an
/// output gain. Mono inputs are spread to every channel.
public struct MixerType: NodeType {
    public init() {}

    /// The most inputs a mixer takes (a bound on the graph file's number,
    /// not on the engine: each input costs a few dozen bytes).
    public static let maximumInputs = 65_536

    public let descriptor = NodeDescriptor(
        typeID: "mixer", role: .processor,
        summary: "Sums its inputs in0…inN-1 with per-input gains and mutes. Inputs must share a channel count, except mono inputs, which go to every channel.",
        inputs: .numbered(countParameter: "inputs"),
        parameters: [
            .init("inputs", .integer, range: 1...Double(MixerType.maximumInputs), default: .number(2), "Number of inputs (ports in0…inN-1)."),
            .init("gains", .numberList, range: -144...48, optional: true, unit: "dB", live: true,
                  "Gain of each input (one per input; default 0 dB). Live: \"gains[i]\"."),
            .init("mutes", .booleanList, optional: true, live: true,
                  "Mute of each input (one per input; default false). Live: \"mutes[i]\"."),
            .init("outputGain", .number, range: -144...48, default: .number(0), unit: "dB", live: true,
                  "Gain applied to the sum."),
            .init("channels", .integer, range: 1...64, optional: true,
                  "Output channels; default: the widest input's. Mono inputs go to every channel, any other input must have this many."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let p = c.parameters
        let n = p.integer("inputs") ?? 0
        if let g = p.numberList("gains"), g.count != n {
            c.error(parameter: "gains", "\(g.count) gain\(g.count == 1 ? "" : "s") for \(n) inputs: give exactly one per input")
        }
        if let m = p.booleanList("mutes"), m.count != n {
            c.error(parameter: "mutes", "\(m.count) mute\(m.count == 1 ? "" : "s") for \(n) inputs: give exactly one per input")
        }
        let known = c.inputFormats.compactMap { $0 }
        guard known.count == c.inputFormats.count, !known.isEmpty else { return nil }
        let given = p.integer("channels")
        let channels = given ?? known.map(\.channels).max() ?? 1
        var ok = true
        // One error per kind, at the first input it concerns, naming the
        // others: a wrong "channels" on a mixer of 4,096 inputs is one error.
        let wrongCount = known.indices.filter { known[$0].channels != channels && known[$0].channels != 1 }
        if let i = wrongCount.first {
            let f = known[i]
            if given != nil {
                c.error(input: i, "in\(i) has \(f.channels) channels but \"channels\" is \(channels); mixer inputs need that count (or mono)" + Self.others(wrongCount))
            } else {
                let widest = known.firstIndex { $0.channels == channels } ?? 0
                c.error(input: i, "in\(i) has \(f.channels) channels but in\(widest) has \(channels); mixer inputs need the same count (or mono)" + Self.others(wrongCount))
            }
            ok = false
        }
        let wrongRate = known.indices.filter { known[$0].sampleRate != c.sampleRate }
        if let i = wrongRate.first {
            c.error(input: i, "in\(i) runs at \(Int(known[i].sampleRate)) Hz, the graph at \(Int(c.sampleRate)) Hz" + Self.others(wrongRate))
            ok = false
        }
        guard ok else { return nil }
        let wide = known.filter { $0.channels == channels }
        let layouts = Set(wide.map(\.layout))
        let layout = layouts.count == 1 ? layouts.first : nil
        // 5.1 inputs that all have back surrounds mix to back; else side.
        return StreamFormat(channels: channels, sampleRate: c.sampleRate, layout: layout,
                            surroundsAreBack: !wide.isEmpty && wide.allSatisfy(\.surroundsAreBack))
    }

    /// "; so do in3, in4, … (N inputs in all)" after the first of
    /// `inputs`' error, or nothing when it is the only one.
    static func others(_ inputs: [Int]) -> String {
        guard inputs.count > 1 else { return "" }
        let rest = inputs.dropFirst()
        let shown = rest.prefix(5).map { "in\($0)" }.joined(separator: ", ")
        return "; so do \(shown)\(rest.count > 5 ? ", …" : "") (\(inputs.count) inputs in all)"
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        let p = c.parameters
        let n = p.integer("inputs") ?? c.inputFormats.count
        return MixerNode(gainsDB: p.numberList("gains") ?? Array(repeating: 0, count: n),
                         mutes: p.booleanList("mutes") ?? Array(repeating: false, count: n),
                         outputGainDB: p.number("outputGain") ?? 0,
                         sampleRate: c.sampleRate, descriptor: descriptor)
    }
}

/// Per-input state lives in buffers allocated once in `init`: no Swift
/// array is touched generically on the audio thread, where a debug build
/// would instantiate runtime metadata (which locks and allocates) on the
/// first `apply`.
final class MixerNode: RenderNode {
    /// The buses, set in `prepare`; behind a pointer because reading a
    /// class's stored `var` on the audio thread costs a dynamic
    /// exclusivity check per access.
    struct Wiring {
        var inputs: [AudioBus] = []
        var output: AudioBus?
        /// Every input is mono: each output channel gets the same sum.
        var allMono = false
    }
    let wiring: UnsafeMutablePointer<Wiring>
    var inputs: [AudioBus] { wiring.pointee.inputs }
    let count: Int
    let gainsDB: UnsafeMutablePointer<Double>
    let mutes: UnsafeMutablePointer<Bool>
    var outputGainDB: Double
    /// Effective gain of each input: its gain × mute × output gain.
    let gains: UnsafeMutablePointer<SmoothedGain>
    let gainsIndex: Int32, mutesIndex: Int32, outputIndex: Int32

    init(gainsDB: [Double], mutes: [Bool], outputGainDB: Double, sampleRate: Double, descriptor: NodeDescriptor) {
        count = gainsDB.count
        wiring = .allocate(capacity: 1)
        wiring.initialize(to: Wiring())
        self.gainsDB = .allocate(capacity: max(count, 1))
        self.gainsDB.initialize(from: gainsDB, count: count)
        self.mutes = .allocate(capacity: max(count, 1))
        self.mutes.initialize(repeating: false, count: count)
        for (i, m) in mutes.prefix(count).enumerated() { self.mutes[i] = m }
        self.outputGainDB = outputGainDB
        let ramp = rampFrames(sampleRate)
        gains = .allocate(capacity: max(count, 1))
        for i in 0..<count {
            (gains + i).initialize(to: SmoothedGain(self.mutes[i] ? 0 : linear(gainsDB[i] + outputGainDB), rampFrames: ramp))
        }
        gainsIndex = Int32(descriptor.parameterIndex(named: "gains") ?? -1)
        mutesIndex = Int32(descriptor.parameterIndex(named: "mutes") ?? -1)
        outputIndex = Int32(descriptor.parameterIndex(named: "outputGain") ?? -1)
    }

    deinit {
        wiring.deinitialize(count: 1)
        wiring.deallocate()
        gains.deinitialize(count: count)
        gains.deallocate()
        gainsDB.deallocate()
        mutes.deallocate()
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        guard inputs.count == count else {
            throw EngineError("mixer has \(inputs.count) inputs connected for \(count) gains")
        }
        wiring.pointee = Wiring(inputs: inputs, output: output, allMono: inputs.allSatisfy { $0.channels == 1 })
    }

    var hotMemory: [UnsafeRawBufferPointer] {
        var regions = [UnsafeRawBufferPointer(hot: wiring), UnsafeRawBufferPointer(hot: gains, count: count)]
        wiring.pointee.inputs.withUnsafeBufferPointer { regions.append(UnsafeRawBufferPointer($0)) }
        return regions
    }

    func apply(_ change: ParameterChange) {
        let e = Int(change.element)
        if change.parameter == outputIndex {
            outputGainDB = change.value
            var i = 0
            while i < count { retarget(i); i += 1 }
        } else if change.parameter == gainsIndex, e >= 0, e < count {
            gainsDB[e] = change.value
            retarget(e)
        } else if change.parameter == mutesIndex, e >= 0, e < count {
            mutes[e] = change.value != 0
            retarget(e)
        }
    }

    private func retarget(_ i: Int) {
        gains[i].setTarget(mutes[i] ? 0 : linear(gainsDB[i] + outputGainDB))
    }

    func render(frames: Int) {
        guard let output = wiring.pointee.output else { return }
        let inputs = wiring.pointee.inputs
        let channels = output.channels
        if !anyRamping() {
            renderSteady(output: output, frames: frames)
            output.state = BusState.merging(inputs)
            return
        }
        output.clear(to: frames)
        var i = 0
        while i < count {
            let input = inputs[i]
            let mono = input.channels == 1 && channels > 1
            gains[i].process(count: frames, channels: channels) { c, start, n, from, step in
                let src = input.channel(mono ? 0 : c) + start
                let dst = output.channel(c) + start
                if step == 0 {
                    if from != 0 { Kernels.addScaled(src, to: dst, count: n, gain: from) }
                } else {
                    _ = Kernels.addRamped(src, to: dst, count: n, from: from, step: step)
                }
            }
            i += 1
        }
        output.state = BusState.merging(inputs)
    }

    private func anyRamping() -> Bool {
        var i = 0
        while i < count {
            if gains[i].isRamping { return true }
            i += 1
        }
        return false
    }

    /// No gain is ramping: the same sums as `addScaled` input by input into
    /// a cleared output (same order, inputs with gain 0 skipped), four
    /// inputs per pass over the output instead of one; the first pass of
    /// four writes the output instead of clearing it first.
    private func renderSteady(output: AudioBus, frames: Int) {
        let inputs = wiring.pointee.inputs
        // Every input mono: every output channel gets the same sum, made
        // once and copied.
        let allMono = wiring.pointee.allMono
        let channels = allMono ? 1 : output.channels
        var c = 0
        while c < channels {
            let dst = output.channel(c)
            // Up to four pending (source, gain) pairs.
            var p0 = UnsafePointer(dst), p1 = UnsafePointer(dst), p2 = UnsafePointer(dst)
            var g0: Float = 0, g1: Float = 0, g2: Float = 0
            var pending = 0
            var written = false
            var i = 0
            while i < count {
                let g = gains[i].current
                if g != 0 {
                    let input = inputs[i]
                    let src = UnsafePointer(input.channel(input.channels == 1 && channels > 1 ? 0 : c))
                    switch pending {
                    case 0: p0 = src; g0 = g; pending = 1
                    case 1: p1 = src; g1 = g; pending = 2
                    case 2: p2 = src; g2 = g; pending = 3
                    default:
                        if written {
                            Kernels.addScaled4(p0, g0, p1, g1, p2, g2, src, g, to: dst, count: frames)
                        } else {
                            Kernels.setScaled4(p0, g0, p1, g1, p2, g2, src, g, to: dst, count: frames)
                            written = true
                        }
                        pending = 0
                    }
                }
                i += 1
            }
            if !written { Kernels.fill(dst, count: frames, value: 0) }
            switch pending {
            case 1: Kernels.addScaled(p0, to: dst, count: frames, gain: g0)
            case 2: Kernels.addScaled2(p0, g0, p1, g1, to: dst, count: frames)
            case 3:
                Kernels.addScaled2(p0, g0, p1, g1, to: dst, count: frames)
                Kernels.addScaled(p2, to: dst, count: frames, gain: g2)
            default: break
            }
            c += 1
        }
        if allMono {
            c = 1
            while c < output.channels {
                Kernels.copy(output.channel(0), to: output.channel(c), count: frames)
                c += 1
            }
        }
    }
}
