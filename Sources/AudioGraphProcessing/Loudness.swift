import AudioGraphCore
import AudioGraphNodeAPI
import Synchronization

extension ProcessingNodes {
    static var loudnessNodes: [any NodeType] { [LoudnessType()] }
}

/// `loudness`: measures EBU R128 loudness (libebur128) and, with `target`,
/// normalizes to it.
///
/// - Without `target` it passes its input through unchanged and measures.
/// - With `target`, offline (`normalize` `auto` or `two-pass`): the
///   renderer measures the whole input in an analysis pass, then renders
///   again with the one gain that brings the integrated loudness to the
///   target (`AnalysisPassNode`). Only when that gain would push the true
///   peak over `ceiling` does the true-peak limiter run too.
/// - With `target`, live (`auto` or `follow`): the gain follows the gated
///   (integrated) loudness measured so far, moving at most `rate` dB per
///   second, within ±`maxGain`, and a true-peak limiter holds `ceiling`.
///
/// Readings for the control surface (`get NODE.integrated`): momentary,
/// shortTerm, integrated, loudnessRange, truePeak (of the input) and gain
/// (applied now).
public struct LoudnessType: NodeType {
    public init() {}

    public static let modes = ["auto", "two-pass", "follow"]
    /// The readings `get` shows, with units.
    public static let readings: [(name: String, unit: String)] = [
        ("momentary", "LUFS"), ("shortTerm", "LUFS"), ("integrated", "LUFS"),
        ("loudnessRange", "LU"), ("truePeak", "dBTP"), ("gain", "dB"),
    ]

    public let descriptor = NodeDescriptor(
        typeID: "loudness", role: .processor,
        summary: "Measures EBU R128 loudness (libebur128): momentary, short-term, integrated, loudness range, true peak of its input, read with `get NODE.integrated` (momentary, shortTerm, integrated, loudnessRange, truePeak, gain). With `target` it normalizes: offline exactly, in two passes over the input; live with a gain that follows the gated loudness at `rate` dB/s under a true-peak ceiling.",
        inputs: .single,
        parameters: [
            .init("target", .number, range: -70 ... -5, optional: true, unit: "LUFS",
                  "Integrated loudness to normalize to (e.g. -23 for EBU R128, -16 for podcasts). Absent: measure only, the signal passes unchanged."),
            .init("normalize", .choice(LoudnessType.modes), default: .string("auto"),
                  "With target: auto (two-pass offline, follow live), two-pass (offline only: measure all, then one exact gain), follow (a gain that follows the loudness measured so far)."),
            .init("rate", .number, range: 0.1 ... 60, default: .number(3), unit: "dB/s", live: true,
                  "follow: the fastest the gain may change."),
            .init("maxGain", .number, range: 0 ... 60, default: .number(20), unit: "dB",
                  "follow: the gain stays within ±maxGain."),
            .init("ceiling", .number, range: -20 ... 0, default: .number(-1), unit: "dBTP", live: true,
                  "True-peak ceiling after the gain: follow always limits to it; two-pass adds the limiter only when the gain would exceed it."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let input = c.input else { return nil }
        if input.encoding != .pcm || input.channels < 1 || input.channels > 64 {
            c.error(input: 0, "loudness measures PCM audio of 1 to 64 channels; this input is \(input)")
            return nil
        }
        if c.parameters.number("target") == nil, let mode = c.parameters.string("normalize"), mode != "auto" {
            c.error(parameter: "normalize", "normalize \"\(mode)\" needs a \"target\" (the loudness to reach, in LUFS, e.g. -23)")
        }
        return input
    }

    public func needsAnalysisPass(_ p: NodeParameters) -> Bool {
        p.number("target") != nil && p.string("normalize") != "follow"
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let format = c.inputFormats.first else { throw EngineError(nodeID: c.nodeID, "no input") }
        let p = c.parameters
        let target = p.number("target")
        let mode = p.string("normalize") ?? "auto"
        if target != nil && mode == "two-pass" && c.live {
            throw EngineError(nodeID: c.nodeID, "normalize \"two-pass\" needs the whole input before it plays, which only an offline render (agraph render) has; live, use \"follow\" (or \"auto\")")
        }
        let meter: EBUR128Meter
        do { meter = try EBUR128Meter(channels: format.channels, sampleRate: c.sampleRate, layout: format.layout) } catch {
            throw EngineError(nodeID: c.nodeID, error.message)
        }
        return LoudnessNode(nodeID: c.nodeID, meter: meter, layout: format.layout, target: target, rate: p.number("rate") ?? 3, maxGain: p.number("maxGain") ?? 20,
                            ceiling: p.number("ceiling") ?? -1, descriptor: descriptor)
    }
}

/// What the analysis pass of a `loudness` node measured (its input), and,
/// when its limiter engages, what each pass after it measured at its
/// output after limiting.
public struct LoudnessAnalysis: Sendable, Equatable {
    public var integratedLUFS: Double
    public var loudnessRangeLU: Double
    public var truePeakDBTP: Double
    /// One pass rendered with a gain through the limiter and measured at the output.
    public struct LimitedPass: Sendable, Equatable {
        public var gainDB: Double
        public var integratedLUFS: Double
        public var truePeakDBTP: Double
    }
    /// The passes through the limiter so far, in order.
    public var limitedPasses: [LimitedPass] = []
    /// The gain to render with next; nil: the target less `integratedLUFS`.
    public var gainDB: Double?
    /// How far under the ceiling the limiter is set, dB: what the true peak
    /// after limiting was measured over the ceiling, in the passes so far.
    public var ceilingMarginDB = 0.0
    /// False while another pass through the limiter is wanted.
    public var settled = true

    public init(integratedLUFS: Double, loudnessRangeLU: Double, truePeakDBTP: Double) {
        self.integratedLUFS = integratedLUFS
        self.loudnessRangeLU = loudnessRangeLU
        self.truePeakDBTP = truePeakDBTP
    }
}

/// The runtime `loudness` node. Measures on the audio thread (libebur128 in
/// histogram mode: nothing allocates) and publishes the readings every
/// 100 ms through atomics.
///
/// Offline, when the limiter engages, the node corrects its gain: every pass
/// after the analysis pass renders with a gain, limits and measures the
/// output, until the loudness after limiting is within `tolerance` of the
/// target (or no more gain can bring it closer: the notice says how far and
/// why). Its limiter's lookahead is taken out again at the file sinks
/// (`OfflineAlignedNode`): the file is aligned with the input.
final class LoudnessNode: RenderNode, AnalysisPassNode, MeasuringNode, OfflineAlignedNode {
    /// What the node does with its signal, decided before `prepare`.
    enum Mode: Equatable {
        /// No target, or the analysis pass: output = input.
        case measure
        /// Two-pass, final pass: one exact gain (and the limiter when the
        /// gain would push the true peak over the ceiling).
        case exact(gainDB: Double, limit: Bool)
        /// The gain follows the loudness measured so far, under the limiter.
        case follow
    }

    static let lookaheadMs = 1.5
    static let releaseMs = 100.0
    /// How close to the target the loudness after limiting is brought, LU.
    static let tolerance = 0.05
    /// The most gain added over the straight gain to make up for limiting, dB.
    static let maximumMakeUpDB = 30.0
    /// The most passes through the limiter (the renderer allows more).
    static let maximumLimitedPasses = 8

    let nodeID: String
    let meter: EBUR128Meter
    let layout: ChannelLayout
    let target: Double?
    let maxGain: Double
    private(set) var mode: Mode
    var rate: Double
    var ceiling: Double
    let rateIndex: Int32
    let ceilingIndex: Int32

    var input: AudioBus?
    var output: AudioBus?
    var sampleRate = 48_000.0
    /// Interleaved copy of a block, for libebur128. [audio-thread]
    var interleaved: UnsafeMutablePointer<Float>?
    /// The output's channel pointers for the limiter. [audio-thread]
    var channelPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    var limiter: TruePeakLimiter?
    /// Offline with the limiter: what `useAnalysis` was given, and the
    /// meter of the output after limiting (made there, on the main thread).
    var given: LoudnessAnalysis?
    var outputMeter: EBUR128Meter?
    /// Frames of the limiter's delay still to flush after the input ended.
    var tailLeft = 0
    var publishEvery = 4800
    var sincePublish = 0
    /// The gain now and where it is heading, in dB. [audio-thread]
    var gainDB = 0.0
    var desiredGainDB = 0.0

    // Readings, published by the audio thread as Double bit patterns.
    private let momentaryBits = Atomic<UInt64>((-Double.infinity).bitPattern)
    private let shortTermBits = Atomic<UInt64>((-Double.infinity).bitPattern)
    private let integratedBits = Atomic<UInt64>((-Double.infinity).bitPattern)
    private let rangeBits = Atomic<UInt64>(0.0.bitPattern)
    private let truePeakBits = Atomic<UInt64>((-Double.infinity).bitPattern)
    private let gainBits = Atomic<UInt64>(0.0.bitPattern)

    init(nodeID: String, meter: EBUR128Meter, layout: ChannelLayout, target: Double?, rate: Double, maxGain: Double,
         ceiling: Double, descriptor: NodeDescriptor) {
        self.nodeID = nodeID
        self.meter = meter
        self.layout = layout
        self.target = target
        self.rate = rate
        self.maxGain = maxGain
        self.ceiling = ceiling
        // With a target the node follows until an analysis pass says
        // otherwise (`useAnalysis`): live, and offline when the host runs no
        // analysis pass, it behaves as `follow`.
        mode = target == nil ? .measure : .follow
        rateIndex = Int32(descriptor.parameterIndex(named: "rate") ?? -1)
        ceilingIndex = Int32(descriptor.parameterIndex(named: "ceiling") ?? -1)
    }

    deinit {
        interleaved?.deallocate()
        channelPointers?.deallocate()
    }

    // MARK: AnalysisPassNode [main-thread]

    func beginAnalysis() { mode = .measure }

    func analysisResult() -> any Sendable {
        if var a = given, let outputMeter, case .exact(let gain, true) = mode {
            // A pass through the limiter: what came out, and what next.
            let peak = outputMeter.truePeakDBTP
            a.limitedPasses.append(.init(gainDB: gain, integratedLUFS: outputMeter.integrated, truePeakDBTP: peak))
            // A true peak over the ceiling (the meter interpolates more
            // finely than the limiter's detector): set the limiter lower.
            let over = peak.isFinite ? peak - ceiling : 0
            if over > 0.01 { a.ceilingMarginDB += over + 0.02 }
            let next = Self.nextGain(target: target ?? a.integratedLUFS, straight: (target ?? a.integratedLUFS) - a.integratedLUFS,
                                     passes: a.limitedPasses)
            a.gainDB = next.gainDB
            a.settled = !(next.again || (over > 0.01 && a.limitedPasses.count < Self.maximumLimitedPasses))
            return a
        }
        var a = LoudnessAnalysis(integratedLUFS: meter.integrated, loudnessRangeLU: meter.loudnessRange,
                                 truePeakDBTP: meter.truePeakDBTP)
        if let target, a.integratedLUFS.isFinite, a.truePeakDBTP + target - a.integratedLUFS > ceiling {
            a.settled = false   // the limiter will take some loudness: measure it after limiting
        }
        return a
    }

    var wantsAnotherPass: Bool { (analysisResult() as? LoudnessAnalysis)?.settled == false }

    /// After passes through the limiter measured `passes`, the gain to
    /// render with next and whether to (false: `gainDB` is final, the
    /// pass that came closest). Secant steps on loudness against gain (the
    /// limiter makes the slope at most 1). [any-thread]
    static func nextGain(target: Double, straight: Double, passes: [LoudnessAnalysis.LimitedPass]) -> (gainDB: Double, again: Bool) {
        guard let last = passes.last else { return (straight, true) }
        // The pass closest to the target; of passes as close (within the
        // tolerance), the least gain: the least limiting.
        let closest = passes.map { abs($0.integratedLUFS - target) }.min() ?? 0
        let best = passes.filter { abs($0.integratedLUFS - target) <= closest + tolerance }.min { $0.gainDB < $1.gainDB } ?? last
        if abs(last.integratedLUFS - target) <= tolerance { return (last.gainDB, false) }
        if !last.integratedLUFS.isFinite || passes.count >= maximumLimitedPasses { return (best.gainDB, false) }
        var slope = 1.0
        if passes.count >= 2 {
            let before = passes[passes.count - 2]
            let dg = last.gainDB - before.gainDB
            if abs(dg) > 1e-6 { slope = (last.integratedLUFS - before.integratedLUFS) / dg }
        }
        // Loudness rises with gain, at most as fast: step by the shortfall
        // over the slope, kept within 0.1…1 so that a flat stretch (peaks
        // the limiter holds, louder than the rest) is crossed; never past
        // `maximumMakeUpDB` over the straight gain: there, out of reach.
        let next = min(last.gainDB + (target - last.integratedLUFS) / min(max(slope, 0.1), 1), straight + maximumMakeUpDB)
        if abs(next - last.gainDB) < 0.001 { return (best.gainDB, false) }
        return (next, true)
    }

    func useAnalysis(_ result: any Sendable) throws -> String? {
        guard let target else { return nil }
        guard let a = result as? LoudnessAnalysis else {
            throw EngineError(nodeID: nodeID, "the analysis pass gave no loudness measurement")
        }
        guard a.integratedLUFS.isFinite else {
            mode = .exact(gainDB: 0, limit: false)
            return "'\(nodeID)': the input is silent (below the -70 LUFS gate): left unchanged, not normalized to \(fmt(target)) LUFS"
        }
        let straight = target - a.integratedLUFS
        let gain = a.gainDB ?? straight
        let peakAfter = a.truePeakDBTP + straight
        let limit = peakAfter > ceiling || !a.limitedPasses.isEmpty
        mode = .exact(gainDB: gain, limit: limit)
        gainDB = gain
        given = a
        if limit {
            do {
                outputMeter = try EBUR128Meter(channels: meter.channels, sampleRate: meter.sampleRate, layout: layout)
            } catch {
                throw EngineError(nodeID: nodeID, error.message)
            }
        }
        var line = "'\(nodeID)': measured \(fmt(a.integratedLUFS)) LUFS, LRA \(fmt(a.loudnessRangeLU)) LU, true peak \(fmt(a.truePeakDBTP)) dBTP; gain \(signed(gain)) dB to \(fmt(target)) LUFS"
        guard limit else { return line }
        line += "; the true peak would reach \(fmt(peakAfter)) dBTP, so the limiter holds it at \(fmt(ceiling)) dBTP"
        guard let reached = a.limitedPasses.first(where: { $0.gainDB == gain }) else {
            return line + " (the loudness may end a little under the target)"
        }
        let passes = "\(a.limitedPasses.count) pass\(a.limitedPasses.count == 1 ? "" : "es") through the limiter"
        let short = target - reached.integratedLUFS
        if abs(short) <= 0.1 {
            return line + "; after limiting \(fmt(reached.integratedLUFS)) LUFS (gain \(signed(gain - straight)) dB over \(signed(straight)) dB to make up what the limiter took; \(passes))"
        }
        return line + "; cannot reach \(fmt(target)) LUFS under a \(fmt(ceiling)) dBTP ceiling: after limiting the output is \(fmt(reached.integratedLUFS)) LUFS, \(fmt(abs(short))) LU \(short > 0 ? "under" : "over") the target (\(passes)), because the limiter takes back nearly all of any more gain: the target leaves the peaks at most \(fmt(ceiling - target)) dB over the loudness and the programme's stand \(fmt(a.truePeakDBTP - a.integratedLUFS)) dB over it; lower the target or raise the ceiling"
    }

    private func signed(_ v: Double) -> String { (v >= 0 ? "+" : "") + fmt(v) }

    private func fmt(_ v: Double) -> String { formatFixed(v, 2) }

    // MARK: MeasuringNode

    var readingNames: [(name: String, unit: String)] { LoudnessType.readings }

    func reading(_ name: String) -> Double? {
        let bits: UInt64
        switch name {
        case "momentary": bits = momentaryBits.load(ordering: .relaxed)
        case "shortTerm": bits = shortTermBits.load(ordering: .relaxed)
        case "integrated": bits = integratedBits.load(ordering: .relaxed)
        case "loudnessRange": bits = rangeBits.load(ordering: .relaxed)
        case "truePeak": bits = truePeakBits.load(ordering: .relaxed)
        case "gain": bits = gainBits.load(ordering: .relaxed)
        default: return nil
        }
        return Double(bitPattern: bits)
    }

    // MARK: RenderNode

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        self.output = output
        sampleRate = context.sampleRate
        let channels = meter.channels
        interleaved?.deallocate()
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: context.maxFrames * channels)
        buffer.initialize(repeating: 0, count: context.maxFrames * channels)
        interleaved = buffer
        channelPointers?.deallocate()
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        pointers.initialize(repeating: buffer, count: channels)
        channelPointers = pointers
        publishEvery = max(Int(context.sampleRate / 10), 1)
        let needsLimiter: Bool
        switch mode {
        case .measure: needsLimiter = false
        case .exact(_, let limit): needsLimiter = limit
        case .follow: needsLimiter = true
        }
        limiter = needsLimiter
            ? TruePeakLimiter(channels: channels, sampleRate: context.sampleRate, maxFrames: context.maxFrames,
                              ceilingDBTP: ceiling - (given?.ceilingMarginDB ?? 0), releaseMs: Self.releaseMs, lookaheadMs: Self.lookaheadMs)
            : nil
        tailLeft = limiter?.latencyFrames ?? 0
        gainBits.store(gainDB.bitPattern, ordering: .relaxed)
    }

    var latency: Int { limiter?.latencyFrames ?? 0 }

    func apply(_ change: ParameterChange) {
        if change.parameter == rateIndex {
            rate = change.value
        } else if change.parameter == ceilingIndex {
            ceiling = change.value
            limiter?.setCeiling(dBTP: change.value)
        }
    }

    /// Adds the first `frames` frames of `bus` to `meter`, interleaved
    /// through the node's scratch buffer. [audio-thread; realtime-safe]
    @inline(__always)
    private func measure(_ bus: AudioBus, frames: Int, channels: Int, into meter: EBUR128Meter) {
        guard let interleaved else { return }
        if channels == 2 {
            Kernels.interleave2(bus.channel(0), bus.channel(1), to: interleaved, count: frames)
        } else {
            for c in 0..<channels {
                Kernels.interleave(bus.channel(c), to: interleaved, stride: channels, channel: c, count: frames)
            }
        }
        meter.add(interleaved: interleaved, frames: frames)
    }

    func render(frames: Int) {
        guard let input, let output, interleaved != nil else { return }
        let state = input.state
        let valid = min(state.validFrames, frames)
        let channels = meter.channels
        // Measure the input's real frames.
        if valid > 0 {
            measure(input, frames: valid, channels: channels, into: meter)
        }
        sincePublish += valid
        if sincePublish >= publishEvery || (state.ended && sincePublish > 0) {
            sincePublish = 0
            publish()
        }
        switch mode {
        case .measure:
            for c in 0..<channels { Kernels.copy(input.channel(c), to: output.channel(c), count: frames) }
            output.state = state
            return
        case .exact(let gain, _):
            let g = Float(Decibels.toLinear(gain))
            for c in 0..<channels { Kernels.copyScaled(input.channel(c), to: output.channel(c), count: frames, gain: g) }
        case .follow:
            // Move towards the desired gain at `rate` dB/s at most, in one
            // straight ramp over the block.
            let from = Float(Decibels.toLinear(gainDB))
            let maxStep = rate * Double(frames) / sampleRate
            let delta = max(-maxStep, min(maxStep, desiredGainDB - gainDB))
            gainDB += delta
            let to = Float(Decibels.toLinear(gainDB))
            let step = frames > 0 ? (to - from) / Float(frames) : 0
            for c in 0..<channels {
                _ = Kernels.copyRamped(input.channel(c), to: output.channel(c), count: frames, from: from, step: step)
            }
            gainBits.store(gainDB.bitPattern, ordering: .relaxed)
        }
        var outState = state
        if let limiter, let pointers = channelPointers {
            for c in 0..<channels { pointers[c] = output.channel(c) }
            limiter.process(UnsafePointer(pointers), frames: frames)
            // The limiter delays by its lookahead: after the input ends, its
            // last frames come out of the delay line.
            if state.ended {
                let flushed = min(frames - valid, tailLeft)
                tailLeft -= flushed
                outState = BusState(validFrames: valid + flushed, ended: tailLeft == 0)
                if outState.validFrames < frames {
                    for c in 0..<channels {
                        Kernels.fill(output.channel(c) + outState.validFrames, count: frames - outState.validFrames, value: 0)
                    }
                }
            }
            if let outputMeter, outState.validFrames > 0 {
                // Offline: the loudness after limiting, for the next pass.
                measure(output, frames: outState.validFrames, channels: channels, into: outputMeter)
            }
        }
        output.state = outState
    }

    /// Reads the meter and publishes every reading; in follow mode, sets
    /// the gain to head for. [audio-thread]
    private func publish() {
        let integrated = meter.integrated
        momentaryBits.store(meter.momentary.bitPattern, ordering: .relaxed)
        shortTermBits.store(meter.shortTerm.bitPattern, ordering: .relaxed)
        integratedBits.store(integrated.bitPattern, ordering: .relaxed)
        rangeBits.store(meter.loudnessRange.bitPattern, ordering: .relaxed)
        truePeakBits.store(meter.truePeakDBTP.bitPattern, ordering: .relaxed)
        if mode == .follow, let target, integrated.isFinite {
            desiredGainDB = max(-maxGain, min(maxGain, target - integrated))
        }
    }
}
