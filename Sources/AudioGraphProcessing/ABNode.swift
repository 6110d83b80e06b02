import AudioGraphCore
import AudioGraphNodeAPI
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension ProcessingNodes {
    static var comparisonNodes: [any NodeType] { [ABType()] }
}

/// `ab`: plays one of N inputs (`in0`…`inN-1`, all of the same channels and
/// layout), switching between them with an equal-power crossfade, and with
/// `match: "loudness"` sets each input's gain so that they all play at the
/// same loudness: what a listener compares two renderers with (A/B, and the
/// blind ABX of `agraph abx`).
///
/// **Switching.** `select` (live) names the input that plays. A switch
/// crossfades over `crossfadeMs` along one phase θ from 0 to π/2: the new
/// input's weight is sin θ, every other input's is its weight at the switch
/// times cos θ / cos θ₀. A switch during a crossfade starts from the mix as
/// it is: θ₀ = asin(the new input's weight now), so the new input goes on
/// from where it was (a switch back to the input that was fading out picks
/// it up at its current weight) and the others fade out from theirs; the
/// phase keeps the speed of a full crossfade, so the rest takes
/// (1 − θ₀/(π/2)) · crossfadeMs. The sum of the squared weights stays 1
/// throughout (equal power for uncorrelated inputs), no weight jumps, and
/// a fresh switch is at cos(π/4), sin(π/4) halfway. `crossfadeMs` 0
/// switches at the next block's start. `select` -1 selects silence, as if
/// it were one more input: every input fades out (`agraph abx` switches
/// to and from X through it, so that no switch tells X away by being
/// silent, or by being a crossfade when the input stays the same).
///
/// **Loudness matching** (`match: "loudness"`), loudness by libebur128
/// (BS.1770-4, each input weighted by its layout):
/// - Reference (`reference`): "quietest" (the default) matches every input
///   to the quietest one, so no gain is ever above 0 dB and matching never
///   pushes a signal into clipping; an index matches all to that input
///   (gains may then boost, by at most `maxGain`). Inputs below the
///   −70 LUFS gate (silence) are left out and hold their gain.
/// - `matchBy` "auto": offline (`agraph render`), integrated loudness of
///   each whole input, measured in an analysis pass (`AnalysisPassNode`),
///   then one exact constant gain per input; live, the short-term (3 s)
///   sliding loudness. "short-term": always the sliding short-term
///   loudness (offline too, no analysis pass). "integrated": offline as
///   auto; live, the gated integrated loudness measured since the start.
/// - When following (live, or offline short-term), each gain moves toward
///   its match at most `rate` dB per second, in straight ramps, within
///   ±`maxGain`; the loudness is read and the gains retargeted every
///   100 ms.
///
/// Readings (`get NODE.gain1`): `select` (the input playing, or fading in;
/// -1 for silence),
/// `gain0`… (dB, the gain applied to each input now), `loudness0`… (LUFS,
/// each input's loudness before its gain: short-term or integrated as
/// `matchBy` says; -inf with `match` off).
public struct ABType: NodeType {
    public init() {}

    public static let matchModes = ["off", "loudness"]
    public static let matchByModes = ["auto", "short-term", "integrated"]
    public static let maxInputs = 16
    /// Below this (LUFS) an input counts as silent for matching.
    public static let gateLUFS = -70.0

    /// The readings `get NODE.NAME` shows for a node with `inputs` inputs.
    public static func readings(inputs n: Int) -> [(name: String, unit: String)] {
        [("select", "")] + (0..<n).map { ("gain\($0)", "dB") } + (0..<n).map { ("loudness\($0)", "LUFS") }
    }

    public let descriptor = NodeDescriptor(
        typeID: "ab", role: .processor,
        summary: "Plays one of its inputs in0…inN-1 (same channels and layout), chosen by `select` (live), switching with an equal-power crossfade of `crossfadeMs`. With `match` set to loudness each input gets the gain that makes its loudness (libebur128) equal to the quietest input's (or `reference`'s): offline exactly, from each input's integrated loudness measured in a first pass; live by the short-term (3 s) loudness, the gains moving at `rate` dB/s. Readings: `get NODE.gain1` (dB), `loudness1` (LUFS), `select`. `agraph abx` runs blind ABX trials on it.",
        inputs: .numbered(countParameter: "inputs"),
        parameters: [
            .init("inputs", .integer, range: 2...Double(ABType.maxInputs), default: .number(2),
                  "Number of inputs (ports in0…inN-1), 2 to 16."),
            .init("select", .integer, range: -1...Double(ABType.maxInputs - 1), default: .number(0), live: true,
                  "The input that plays: 0 for in0, 1 for in1…; -1 for none (silence: every input fades out)."),
            .init("crossfadeMs", .number, range: 0...10_000, default: .number(50), unit: "ms", live: true,
                  "Length of the equal-power (sin/cos) crossfade of a switch; 0 switches at once."),
            .init("match", .choice(ABType.matchModes), default: .string("off"),
                  "off: every input at 0 dB; loudness: each input's gain makes their loudness equal (readings gain0…, loudness0…)."),
            .init("matchBy", .choice(ABType.matchByModes), default: .string("auto"),
                  "With match loudness: auto (integrated loudness measured in a first pass offline, short-term live), short-term (the sliding 3 s loudness, live and offline), integrated (offline as auto; live, the gated loudness since the start)."),
            .init("reference", .indexOrWord(["quietest"]), range: 0...Double(ABType.maxInputs - 1), default: .string("quietest"),
                  "With match loudness: the input the others are matched to, or \"quietest\" (no gain above 0 dB: matching never boosts)."),
            .init("rate", .number, range: 0.1...60, default: .number(3), unit: "dB/s", live: true,
                  "With match loudness, when the gains follow the loudness (live; offline short-term): the fastest a gain moves."),
            .init("maxGain", .number, range: 0...60, default: .number(20), unit: "dB",
                  "With match loudness: no gain goes beyond ±maxGain."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let p = c.parameters
        let n = p.integer("inputs") ?? 2
        if let s = p.integer("select"), s >= n {
            c.error(parameter: "select", "select \(s) names no input: this ab node has \(n) inputs (in0…in\(n - 1)); select 0…\(n - 1)")
        }
        if let r = Self.referenceIndex(p), r >= n {
            c.error(parameter: "reference", "reference \(r) names no input: this ab node has \(n) inputs (in0…in\(n - 1)); give 0…\(n - 1) or \"quietest\"")
        }
        if p.string("match") != "loudness" {
            for name in ["matchBy", "reference", "rate", "maxGain"] where c.writtenParameters.contains(name) {
                c.error(parameter: name, "\"\(name)\" applies to loudness matching only: add \"match\": \"loudness\", or leave \"\(name)\" out")
            }
        }
        let known = c.inputFormats.compactMap { $0 }
        guard known.count == c.inputFormats.count, let first = known.first else { return nil }
        var ok = true
        for (i, f) in known.enumerated() where f.encoding != .pcm {
            c.error(input: i, "in\(i) carries \(f.encoding); ab switches PCM audio: decode it first")
            ok = false
        }
        guard ok else { return nil }
        for (i, f) in known.enumerated() {
            if f.sampleRate != c.sampleRate {
                c.error(input: i, "in\(i) runs at \(Int(f.sampleRate)) Hz, the graph at \(Int(c.sampleRate)) Hz")
                ok = false
            } else if f.channels != first.channels {
                c.error(input: i, "in\(i) has \(f.channels) channels (\(f.layout)) but in0 has \(first.channels) (\(first.layout)); ab inputs must all have the same channels and layout: downmix or upmix one of them")
                ok = false
            } else if f.layout != first.layout {
                c.error(input: i, "in\(i) is \(f.layout) but in0 is \(first.layout); ab inputs must all have the same layout (tag them alike with format-tag if they mean the same)")
                ok = false
            }
        }
        guard ok else { return nil }
        return StreamFormat(channels: first.channels, sampleRate: c.sampleRate, layout: first.layout,
                            surroundsAreBack: first.surroundsAreBack)
    }

    /// The `reference` input, or nil for "quietest". [any-thread]
    static func referenceIndex(_ p: NodeParameters) -> Int? {
        p.integer("reference")
    }

    public func needsAnalysisPass(_ p: NodeParameters) -> Bool {
        p.string("match") == "loudness" && p.string("matchBy") != "short-term"
    }

    public func liveValueProblem(parameter: String, element: Int?, value: Double, parameters: NodeParameters,
                                 sampleRate: Double) -> String? {
        guard parameter == "select" else { return nil }
        let n = parameters.integer("inputs") ?? 2
        guard value == value.rounded() else { return "select is an input's number, a whole number 0…\(n - 1); got \(value)" }
        guard value >= -1, value < Double(n) else {
            return "select \(Int(value)) names no input: this ab node has \(n) inputs (in0…in\(n - 1)); select 0…\(n - 1)"
        }
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        let p = c.parameters
        let n = p.integer("inputs") ?? 2
        guard let format = c.inputFormats.first, c.inputFormats.count == n else {
            throw EngineError(nodeID: c.nodeID, "ab has \(c.inputFormats.count) inputs connected for \"inputs\": \(n)")
        }
        let match = p.string("match") == "loudness"
        var meters: [EBUR128Meter] = []
        if match {
            do {
                for _ in 0..<n {
                    meters.append(try EBUR128Meter(channels: format.channels, sampleRate: c.sampleRate, layout: format.layout,
                                                   truePeak: false, samplePeak: false))
                }
            } catch {
                throw EngineError(nodeID: c.nodeID, error.message)
            }
        }
        let config = ABNode.Config(
            count: n, channels: format.channels, select: min(max(p.integer("select") ?? 0, -1), n - 1),
            crossfadeMs: p.number("crossfadeMs") ?? 50, match: match,
            followIntegrated: p.string("matchBy") == "integrated",
            reference: Self.referenceIndex(p) ?? -1, rate: p.number("rate") ?? 3, maxGain: p.number("maxGain") ?? 20)
        return ABNode(nodeID: c.nodeID, config: config, meters: meters, descriptor: descriptor)
    }
}

/// What the analysis pass of an `ab` node measured: the integrated
/// loudness of each input, LUFS (-inf: below the gate).
public struct ABAnalysis: Sendable, Equatable {
    public var integratedLUFS: [Double]
    public init(integratedLUFS: [Double]) { self.integratedLUFS = integratedLUFS }
}

/// The runtime `ab` node.
///
/// Everything the audio thread touches lives in buffers allocated in `init`
/// and `prepare` and in `State` behind a pointer (no exclusivity checks, no
/// generic array code on the audio thread). The readings are published
/// through atomics holding Double bit patterns.
final class ABNode: RenderNode, AnalysisPassNode, MeasuringNode, @unchecked Sendable {
    struct Config {
        var count: Int
        var channels: Int
        /// The input playing at the start; -1 for none.
        var select: Int
        var crossfadeMs: Double
        var match: Bool
        /// Follow the integrated loudness so far rather than the short-term.
        var followIntegrated: Bool
        /// The reference input, -1 for the quietest.
        var reference: Int
        var rate: Double
        var maxGain: Double
    }

    /// How the gains are set, decided before `prepare`.
    enum Mode: Equatable {
        /// `match` off: every gain 0 dB, nothing measured.
        case off
        /// The analysis pass: every gain 0 dB, every input's integrated
        /// loudness measured.
        case measure
        /// After the analysis pass: one constant gain per input.
        case exact
        /// Live (or offline without an analysis pass): the gains follow
        /// the loudness measured so far at `rate`.
        case follow
    }

    /// The audio thread's state. [audio-thread; after `prepare`]
    struct State {
        var inputs: [AudioBus] = []
        var output: AudioBus?
        var mode: Mode = .off
        var sampleRate = 48_000.0
        /// The input playing, or fading in: 0…count-1, or `count` for
        /// silence (an input with no signal).
        var target = 0
        /// The crossfade's phase: the target's weight is sin θ.
        var theta = Double.pi / 2
        /// θ's step per frame during the current fade, and its cos and sin.
        var thetaStep = 0.0
        var cosStep = 1.0
        var sinStep = 0.0
        /// Frames left in the current fade (0: none).
        var fadeLeft = 0
        /// A full crossfade (θ from 0 to π/2), frames.
        var crossfadeFrames = 0.0
        var rate = 3.0
        var sincePublish = 0
        var publishEvery = 4_800
        var interleaved: UnsafeMutablePointer<Float>?
        /// Per-frame sin θ and cos θ of the block's fading part.
        var sinCurve: UnsafeMutablePointer<Float>?
        var cosCurve: UnsafeMutablePointer<Float>?
    }

    let nodeID: String
    let count: Int
    let channels: Int
    let reference: Int
    let maxGain: Double
    let followIntegrated: Bool
    let meters: [EBUR128Meter]
    let state: UnsafeMutablePointer<State>
    /// Per input, and for silence (`count`): the fade-out scale a_j (its
    /// weight is a_j · cos θ during a fade; 0 for the target).
    let fadeScale: UnsafeMutablePointer<Double>
    /// Per input: the gain now and where it is heading, dB.
    let gainDB: UnsafeMutablePointer<Double>
    let desiredDB: UnsafeMutablePointer<Double>
    /// Per input: the loudness last read, LUFS.
    let loudness: UnsafeMutablePointer<Double>
    /// Per input, for the block being rendered: the linear gain before its
    /// first frame and its step per frame.
    let gainFrom: UnsafeMutablePointer<Float>
    let gainStep: UnsafeMutablePointer<Float>
    /// Published readings (Double bits): select, gain0…, loudness0….
    let published: UnsafeMutablePointer<Atomic<UInt64>>
    let selectIndex: Int32, crossfadeIndex: Int32, rateIndex: Int32

    init(nodeID: String, config: Config, meters: [EBUR128Meter], descriptor: NodeDescriptor) {
        self.nodeID = nodeID
        count = config.count
        channels = config.channels
        reference = config.reference
        maxGain = config.maxGain
        followIntegrated = config.followIntegrated
        self.meters = meters
        state = .allocate(capacity: 1)
        var s = State()
        s.mode = config.match ? .follow : .off
        s.target = config.select < 0 ? config.count : config.select
        s.rate = config.rate
        state.initialize(to: s)
        fadeScale = .allocate(capacity: count + 1)
        fadeScale.initialize(repeating: 0, count: count + 1)
        gainDB = .allocate(capacity: count)
        gainDB.initialize(repeating: 0, count: count)
        desiredDB = .allocate(capacity: count)
        desiredDB.initialize(repeating: 0, count: count)
        loudness = .allocate(capacity: count)
        loudness.initialize(repeating: -.infinity, count: count)
        gainFrom = .allocate(capacity: count)
        gainFrom.initialize(repeating: 1, count: count)
        gainStep = .allocate(capacity: count)
        gainStep.initialize(repeating: 0, count: count)
        let readings = 1 + 2 * count
        published = .allocate(capacity: readings)
        for i in 0..<readings { (published + i).initialize(to: Atomic((-Double.infinity).bitPattern)) }
        selectIndex = Int32(descriptor.parameterIndex(named: "select") ?? -1)
        crossfadeIndex = Int32(descriptor.parameterIndex(named: "crossfadeMs") ?? -1)
        rateIndex = Int32(descriptor.parameterIndex(named: "rate") ?? -1)
        crossfadeMs = config.crossfadeMs
        publishSelectAndGains()
    }

    /// The crossfade length as given, until `prepare` knows the rate.
    private var crossfadeMs: Double

    deinit {
        state.pointee.interleaved?.deallocate()
        state.pointee.sinCurve?.deallocate()
        state.pointee.cosCurve?.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        fadeScale.deallocate()
        gainDB.deallocate()
        desiredDB.deallocate()
        loudness.deallocate()
        gainFrom.deallocate()
        gainStep.deallocate()
        published.deinitialize(count: 1 + 2 * count)
        published.deallocate()
    }

    // MARK: AnalysisPassNode [main-thread]

    func beginAnalysis() {
        if state.pointee.mode != .off { state.pointee.mode = .measure }
    }

    func analysisResult() -> any Sendable {
        ABAnalysis(integratedLUFS: meters.map(\.integrated))
    }

    func useAnalysis(_ result: any Sendable) throws -> String? {
        guard state.pointee.mode != .off else { return nil }
        guard let a = result as? ABAnalysis, a.integratedLUFS.count == count else {
            throw EngineError(nodeID: nodeID, "the analysis pass gave no loudness measurement of its \(count) inputs")
        }
        for i in 0..<count { loudness[i] = a.integratedLUFS[i] }
        let matched = Self.matchGains(loudness: loudness, count: count, reference: reference, maxGain: maxGain, into: desiredDB)
        for i in 0..<count { gainDB[i] = desiredDB[i] }
        state.pointee.mode = .exact
        publishSelectAndGains()
        publishLoudness()
        let each = (0..<count).map { i in
            let l = loudness[i]
            let measured = Self.isAudible(l) ? "\(formatFixed(l, 2)) LUFS" : "silent"
            return "in\(i) \(measured), gain \(gainDB[i] > 0 ? "+" : "")\(formatFixed(gainDB[i], 2)) dB"
        }.joined(separator: "; ")
        let ref = reference >= 0 ? "in\(reference)" : "the quietest input"
        var line = "'\(nodeID)': loudness matched to \(ref) (integrated, measured in a first pass): \(each)"
        if !matched { line += "; nothing matched: the reference is silent (below \(Int(ABType.gateLUFS)) LUFS)" }
        return line
    }

    // MARK: MeasuringNode

    var readingNames: [(name: String, unit: String)] { ABType.readings(inputs: count) }

    /// `select`, `gain<i>`, `loudness<i>`. [control-thread]
    func reading(_ name: String) -> Double? {
        if name == "select" { return Double(bitPattern: published[0].load(ordering: .relaxed)) }
        for (prefix, base) in [("gain", 1), ("loudness", 1 + count)] where name.hasPrefix(prefix) {
            guard let i = Int(name.dropFirst(prefix.count)), i >= 0, i < count,
                  String(i) == String(name.dropFirst(prefix.count)) else { return nil }
            return Double(bitPattern: published[base + i].load(ordering: .relaxed))
        }
        return nil
    }

    /// [audio-thread; main-thread before `prepare`]
    private func publishSelectAndGains() {
        publishSelect()
        var i = 0
        while i < count {
            published[1 + i].store(gainDB[i].bitPattern, ordering: .relaxed)
            i += 1
        }
    }

    /// [audio-thread; main-thread before `prepare`]
    private func publishSelect() {
        let t = state.pointee.target
        published[0].store(Double(t == count ? -1 : t).bitPattern, ordering: .relaxed)
    }

    /// [audio-thread; main-thread before `prepare`]
    private func publishLoudness() {
        var i = 0
        while i < count {
            published[1 + count + i].store(loudness[i].bitPattern, ordering: .relaxed)
            i += 1
        }
    }

    // MARK: matching

    /// Whether `lufs` is above the gate (not silence). [any-thread]
    @inline(__always)
    static func isAudible(_ lufs: Double) -> Bool { lufs.isFinite && lufs >= ABType.gateLUFS }

    /// The gain of each audible input that brings its loudness to the
    /// reference's (`reference` ≥ 0) or the quietest audible input's
    /// (`reference` -1), within ±`maxGain`, written into `desired`; silent
    /// inputs keep theirs. Returns false, changing nothing, when there is
    /// no audible reference. [any-thread; realtime-safe]
    @_noLocks
    static func matchGains(loudness: UnsafePointer<Double>, count: Int, reference: Int, maxGain: Double,
                           into desired: UnsafeMutablePointer<Double>) -> Bool {
        var ref = Double.infinity
        if reference >= 0 {
            guard reference < count, isAudible(loudness[reference]) else { return false }
            ref = loudness[reference]
        } else {
            var i = 0
            while i < count {
                if isAudible(loudness[i]) && loudness[i] < ref { ref = loudness[i] }
                i += 1
            }
            guard ref.isFinite else { return false }
        }
        var i = 0
        while i < count {
            if isAudible(loudness[i]) {
                let g = ref - loudness[i]
                desired[i] = g > maxGain ? maxGain : (g < -maxGain ? -maxGain : g)
            }
            i += 1
        }
        return true
    }

    // MARK: RenderNode

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        guard inputs.count == count else {
            throw EngineError(nodeID: nodeID, "ab has \(inputs.count) inputs connected for \(count)")
        }
        let s = state
        s.pointee.inputs = inputs
        s.pointee.output = output
        s.pointee.sampleRate = context.sampleRate
        s.pointee.publishEvery = max(Int(context.sampleRate / 10), 1)
        s.pointee.crossfadeFrames = crossfadeMs * context.sampleRate / 1000
        s.pointee.interleaved?.deallocate()
        s.pointee.sinCurve?.deallocate()
        s.pointee.cosCurve?.deallocate()
        s.pointee.interleaved = nil
        if !meters.isEmpty {
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: context.maxFrames * channels)
            buffer.initialize(repeating: 0, count: context.maxFrames * channels)
            s.pointee.interleaved = buffer
        }
        let sinCurve = UnsafeMutablePointer<Float>.allocate(capacity: context.maxFrames)
        sinCurve.initialize(repeating: 0, count: context.maxFrames)
        let cosCurve = UnsafeMutablePointer<Float>.allocate(capacity: context.maxFrames)
        cosCurve.initialize(repeating: 0, count: context.maxFrames)
        s.pointee.sinCurve = sinCurve
        s.pointee.cosCurve = cosCurve
        for i in 0..<count { gainFrom[i] = Float(Decibels.toLinear(gainDB[i])) }
        publishSelectAndGains()
        publishLoudness()
    }

    func apply(_ change: ParameterChange) {
        if change.parameter == selectIndex {
            let v = change.value
            guard v >= -1, v < Double(count), v == v.rounded() else { return }
            switchTo(v < 0 ? count : Int(v))
        } else if change.parameter == crossfadeIndex {
            let s = state
            s.pointee.crossfadeFrames = max(change.value, 0) * s.pointee.sampleRate / 1000
            // A fade under way goes on at the new speed from where it is.
            if s.pointee.fadeLeft > 0 { startFade(from: s.pointee.theta) }
        } else if change.parameter == rateIndex {
            state.pointee.rate = change.value
        }
    }

    /// Starts switching to input `k` (`count`: silence) from the mix as
    /// it is now. [audio-thread; at a block's start]
    private func switchTo(_ k: Int) {
        let s = state
        let target = s.pointee.target
        if k == target { return }
        // Each input's weight now: the target's sin θ, the others' a_j cos θ.
        let theta = s.pointee.fadeLeft > 0 ? s.pointee.theta : Double.pi / 2
        let c = cos(theta)
        var i = 0
        while i <= count {
            fadeScale[i] = i == target ? sin(theta) : fadeScale[i] * c
            i += 1
        }
        let w = fadeScale[k] < 1 ? fadeScale[k] : 1
        let theta0 = asin(w)
        let c0 = cos(theta0)
        s.pointee.target = k
        publishSelect()
        // a_j = w_j / cos θ₀, so that a_j cos θ starts at w_j.
        i = 0
        while i <= count {
            fadeScale[i] = i == k || c0 < 1e-9 ? 0 : fadeScale[i] / c0
            i += 1
        }
        if c0 < 1e-9 {
            s.pointee.fadeLeft = 0
            s.pointee.theta = .pi / 2
            return
        }
        startFade(from: theta0)
    }

    /// Runs the phase from `theta0` to π/2 at a full crossfade's speed, in
    /// a whole number of frames; none for a crossfade of 0 (the switch is
    /// then done). [audio-thread]
    private func startFade(from theta0: Double) {
        let s = state
        let full = s.pointee.crossfadeFrames
        let left = Double.pi / 2 - theta0
        guard full >= 1, left > 0 else {
            s.pointee.fadeLeft = 0
            s.pointee.theta = .pi / 2
            var i = 0
            while i <= count { fadeScale[i] = 0; i += 1 }
            return
        }
        // Rounded up, less a hair: a fade back after k frames takes k
        // frames, not k + 1 for the last bit of a rounding error.
        let frames = max(Int((left / (Double.pi / 2) * full - 1e-6).rounded(.up)), 1)
        let step = left / Double(frames)
        s.pointee.theta = theta0
        s.pointee.thetaStep = step
        s.pointee.cosStep = cos(step)
        s.pointee.sinStep = sin(step)
        s.pointee.fadeLeft = frames
    }

    func render(frames: Int) {
        let s = state
        guard let output = s.pointee.output, frames > 0 else { return }
        let inputs = s.pointee.inputs
        let mode = s.pointee.mode
        if mode == .measure || mode == .follow { measure(inputs, frames: frames) }
        setBlockGains(frames: frames, mode: mode)

        let target = s.pointee.target
        let fadeFrames = s.pointee.fadeLeft < frames ? s.pointee.fadeLeft : frames
        if fadeFrames > 0, let sinCurve = s.pointee.sinCurve, let cosCurve = s.pointee.cosCurve {
            let theta = s.pointee.theta
            ABKernels.fadeCurves(sin: sinCurve, cos: cosCurve, count: fadeFrames, cos0: cos(theta), sin0: sin(theta),
                                 cosStep: s.pointee.cosStep, sinStep: s.pointee.sinStep)
            var c = 0
            while c < channels {
                let dst = output.channel(c)
                Kernels.fill(dst, count: fadeFrames, value: 0)
                var i = 0
                while i < count {
                    let weight = i == target ? 1 : fadeScale[i]
                    if weight != 0 {
                        ABKernels.addWeighted(inputs[i].channel(c), to: dst, count: fadeFrames, gainFrom: gainFrom[i],
                                              gainStep: gainStep[i], curve: i == target ? sinCurve : cosCurve,
                                              scale: Float(weight))
                    }
                    i += 1
                }
                c += 1
            }
            s.pointee.theta = theta + s.pointee.thetaStep * Double(fadeFrames)
            s.pointee.fadeLeft -= fadeFrames
            if s.pointee.fadeLeft == 0 {
                s.pointee.theta = .pi / 2
                var i = 0
                while i <= count { fadeScale[i] = 0; i += 1 }
            }
        }
        let rest = frames - fadeFrames
        if rest > 0 && target == count {
            var c = 0
            while c < channels {
                Kernels.fill(output.channel(c) + fadeFrames, count: rest, value: 0)
                c += 1
            }
        } else if rest > 0 {
            let step = gainStep[target]
            let from = gainFrom[target] + step * Float(fadeFrames)
            let input = inputs[target]
            var c = 0
            while c < channels {
                let src = UnsafePointer(input.channel(c) + fadeFrames)
                let dst = output.channel(c) + fadeFrames
                if step == 0 {
                    Kernels.copyScaled(src, to: dst, count: rest, gain: from)
                } else {
                    _ = Kernels.copyRamped(src, to: dst, count: rest, from: from, step: step)
                }
                c += 1
            }
        }
        output.state = BusState.merging(inputs)
    }

    /// Feeds each input's real frames to its meter; every 100 ms reads the
    /// loudness, publishes it and, when following, retargets the gains.
    /// [audio-thread]
    private func measure(_ inputs: [AudioBus], frames: Int) {
        let s = state
        guard let interleaved = s.pointee.interleaved else { return }
        var i = 0
        while i < count {
            let input = inputs[i]
            let valid = min(input.state.validFrames, frames)
            if valid > 0 {
                if channels == 2 {
                    Kernels.interleave2(input.channel(0), input.channel(1), to: interleaved, count: valid)
                } else {
                    var c = 0
                    while c < channels {
                        Kernels.interleave(input.channel(c), to: interleaved, stride: channels, channel: c, count: valid)
                        c += 1
                    }
                }
                meters[i].add(interleaved: interleaved, frames: valid)
            }
            i += 1
        }
        s.pointee.sincePublish += frames
        guard s.pointee.sincePublish >= s.pointee.publishEvery else { return }
        s.pointee.sincePublish = 0
        let integrated = s.pointee.mode == .measure || followIntegrated
        i = 0
        while i < count {
            loudness[i] = integrated ? meters[i].integrated : meters[i].shortTerm
            i += 1
        }
        publishLoudness()
        if s.pointee.mode == .follow {
            _ = Self.matchGains(loudness: loudness, count: count, reference: reference, maxGain: maxGain, into: desiredDB)
        }
    }

    /// Sets each input's gain ramp for this block: constant (off, measure,
    /// exact), or moving toward its match at `rate` dB/s at most (follow).
    /// [audio-thread]
    private func setBlockGains(frames: Int, mode: Mode) {
        guard mode == .follow else {
            var i = 0
            while i < count {
                gainFrom[i] = mode == .exact ? Float(Decibels.toLinear(gainDB[i])) : 1
                gainStep[i] = 0
                i += 1
            }
            return
        }
        let maxStep = state.pointee.rate * Double(frames) / state.pointee.sampleRate
        var moved = false
        var i = 0
        while i < count {
            let before = gainDB[i]
            let from = Float(Decibels.toLinear(before))
            let wanted = desiredDB[i] - before
            let delta = wanted > maxStep ? maxStep : (wanted < -maxStep ? -maxStep : wanted)
            gainFrom[i] = from
            if delta != 0 {
                gainDB[i] = before + delta
                gainStep[i] = (Float(Decibels.toLinear(gainDB[i])) - from) / Float(frames)
                moved = true
            } else {
                gainStep[i] = 0
            }
            i += 1
        }
        if moved { publishSelectAndGains() }
    }
}

/// The `ab` node's loops. [audio-thread; any thread on memory it owns]
enum ABKernels {
    /// `sin[i] = sin(θ + (i+1)·δ)`, `cos[i] = cos(θ + (i+1)·δ)`, by rotating
    /// (cos θ, sin θ) by δ each frame, in Double (the error after a block
    /// of 8192 frames stays near 1e-12).
    @_noLocks
    static func fadeCurves(sin sOut: UnsafeMutablePointer<Float>, cos cOut: UnsafeMutablePointer<Float>, count: Int,
                           cos0: Double, sin0: Double, cosStep: Double, sinStep: Double) {
        var c = cos0, s = sin0
        var i = 0
        while i < count {
            let nc = c * cosStep - s * sinStep
            s = s * cosStep + c * sinStep
            c = nc
            sOut[i] = Float(s)
            cOut[i] = Float(c)
            i += 1
        }
    }

    /// `dst[i] += src[i] · g(i) · curve[i] · scale`, `g` a gain ramp
    /// (`gainFrom + (i+1)·gainStep`, as `Kernels.addRamped`).
    @_noLocks
    static func addWeighted(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int,
                            gainFrom: Float, gainStep: Float, curve: UnsafePointer<Float>, scale: Float) {
        var g = gainFrom
        var i = 0
        while i < count {
            g += gainStep
            dst[i] += src[i] * g * curve[i] * scale
            i += 1
        }
    }
}
