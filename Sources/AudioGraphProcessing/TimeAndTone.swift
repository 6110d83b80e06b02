import AudioGraphCore
import AudioGraphNodeAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ProcessingNodes {
    static var timeAndToneNodes: [any NodeType] { [DelayType(), FilterType()] }
}

/// Length of a crossfade or coefficient glide after a live change, in frames.
func glideFrames(_ sampleRate: Double) -> Int { max(Int(sampleRate * 0.02), 1) }

/// The end of a stream seen through a node that delays it: the output
/// carries the input `delay` frames late, so it ends `delay` frames later.
/// [audio-thread]
struct DelayedEnd {
    /// Input frames seen so far.
    var inputPosition = 0
    /// Where the input ended, once it has.
    var endPosition = Int.max

    /// The output's state for a block of `n` frames whose input had
    /// `input`, at a delay of `delay` frames; call once per block.
    @inline(__always)
    mutating func state(input: BusState, frames n: Int, delay: Int) -> BusState {
        if input.ended {
            if endPosition == Int.max { endPosition = inputPosition + input.validFrames }
        } else {
            endPosition = Int.max
        }
        let outStart = inputPosition - delay
        inputPosition += n
        if endPosition == Int.max { return BusState(validFrames: n, ended: false) }
        let left = endPosition - outStart
        return BusState(validFrames: left <= 0 ? 0 : (left < n ? left : n), ended: left <= n)
    }
}

// MARK: - delay

/// `delay`: delays its input by `samples` or `ms`, up to `maxMs`.
///
/// Latency: none is reported. A delay node's delay is the effect the user
/// asked for, not a side effect of processing: reported as latency, the
/// engine would delay every parallel path by as much to keep them aligned
/// and so undo it (a Haas delay on one side of a mixer would vanish), and
/// a live change would ask JACK to recompute latencies each time. Nodes
/// whose delay is a by-product (a limiter's lookahead, a resampler's
/// filter) report it; `delay` is the tool to delay on purpose.
public struct DelayType: NodeType {
    public init() {}

    /// The longest delay a graph may ask for, in ms.
    public static let maximumMs = 60_000.0
    /// `maxMs` when the graph gives none, unless the delay is longer.
    public static let defaultMaxMs = 1_000.0

    public let descriptor = NodeDescriptor(
        typeID: "delay", role: .processor,
        summary: "Delays its input by `samples` or `ms` (exactly one of them), up to `maxMs`. Live changes crossfade from the old delay to the new one over 20 ms (no click). Reports no latency: the delay is the effect, so latency compensation leaves it alone.",
        inputs: .single,
        parameters: [
            .init("samples", .integer, range: 0...(DelayType.maximumMs * 384), optional: true, unit: "frames", live: true,
                  "The delay in frames (give this or ms). Live changes beyond maxMs are refused."),
            .init("ms", .number, range: 0...DelayType.maximumMs, optional: true, unit: "ms", live: true,
                  "The delay in milliseconds, rounded to the nearest frame (give this or samples). Live changes beyond maxMs are refused."),
            .init("maxMs", .number, range: 0...DelayType.maximumMs, optional: true, unit: "ms",
                  "The longest delay live changes may reach; memory is set aside for it when the graph is built. Default: 1000 ms, or the delay given if longer."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let p = c.parameters
        let samples = p.integer("samples"), ms = p.number("ms")
        if samples != nil && ms != nil {
            c.error(parameter: "ms", "give the delay either as \"samples\" or as \"ms\", not both")
        } else if samples == nil && ms == nil {
            c.error("delay needs its delay: \"samples\" (frames) or \"ms\" (milliseconds), e.g. \"params\": {\"ms\": 250}")
        }
        if let maxMs = p.number("maxMs") {
            let maxFrames = Self.frames(ms: maxMs, sampleRate: c.sampleRate)
            if let s = samples, s > maxFrames {
                c.error(parameter: "samples", "\(s) frames is more than maxMs \(ParameterValue.number(maxMs)) ms (\(maxFrames) frames at \(Int(c.sampleRate)) Hz): raise maxMs or shorten the delay")
            }
            if let m = ms, m > maxMs {
                c.error(parameter: "ms", "\(ParameterValue.number(m)) ms is more than maxMs \(ParameterValue.number(maxMs)) ms: raise maxMs or shorten the delay")
            }
        }
        if let s = samples, Double(s) > Self.maximumMs / 1000 * c.sampleRate {
            c.error(parameter: "samples", "\(s) frames is more than \(Int(Self.maximumMs / 1000)) s at \(Int(c.sampleRate)) Hz, the longest delay")
        }
        return c.input
    }

    static func frames(ms: Double, sampleRate: Double) -> Int {
        Int((ms * sampleRate / 1000).rounded())
    }

    /// The longest delay live changes may reach, in frames and in ms: maxMs,
    /// else 1000 ms or the delay given if longer (as `makeNode` sets aside).
    static func liveMaximum(_ p: NodeParameters, sampleRate: Double) -> (frames: Int, ms: Double) {
        if let maxMs = p.number("maxMs") { return (frames(ms: maxMs, sampleRate: sampleRate), maxMs) }
        let initialMs = p.integer("samples").map { Double($0) * 1000 / sampleRate } ?? p.number("ms") ?? 0
        let ms = max(defaultMaxMs, initialMs)
        let initial = p.integer("samples") ?? frames(ms: p.number("ms") ?? 0, sampleRate: sampleRate)
        return (max(frames(ms: defaultMaxMs, sampleRate: sampleRate), initial), ms)
    }

    /// A live delay beyond the node's maximum (maxMs) is refused.
    public func liveValueProblem(parameter: String, element: Int?, value: Double, parameters: NodeParameters,
                                 sampleRate: Double) -> String? {
        let limit = Self.liveMaximum(parameters, sampleRate: sampleRate)
        let given = parameters.number("maxMs") != nil ? "maxMs" : "the longest this node was built for"
        switch parameter {
        case "ms" where value > limit.ms:
            return "\(ParameterValue.number(value)) ms is more than \(given), \(ParameterValue.number(limit.ms)) ms (raise maxMs in the graph)"
        case "samples" where value > Double(limit.frames):
            return "\(ParameterValue.number(value)) frames is more than \(given), \(limit.frames) frames (raise maxMs in the graph)"
        default: return nil
        }
    }

    /// `get d.ms` of a delay given in samples (and the other way round).
    public func effectiveValue(parameter: String, element: Int?, parameters: NodeParameters, sampleRate: Double) -> Double? {
        switch parameter {
        case "ms": parameters.integer("samples").map { Double($0) * 1000 / sampleRate }
        case "samples": parameters.number("ms").map { Double(Self.frames(ms: $0, sampleRate: sampleRate)) }
        default: nil
        }
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        let p = c.parameters
        let fs = c.sampleRate
        let initial = p.integer("samples") ?? Self.frames(ms: p.number("ms") ?? 0, sampleRate: fs)
        let maxDelay = p.number("maxMs").map { Self.frames(ms: $0, sampleRate: fs) }
            ?? max(Self.frames(ms: Self.defaultMaxMs, sampleRate: fs), initial)
        guard let channels = c.inputFormats.first?.channels else { throw EngineError(nodeID: c.nodeID, "no input") }
        return DelayNode(channels: channels, delay: min(initial, maxDelay), maxDelay: maxDelay, sampleRate: fs,
                         descriptor: descriptor)
    }
}

/// The runtime `delay`: a ring per channel, written a block at a time, read
/// at one delay or, after a change, crossfaded from the old delay to the
/// new one. Changes during a crossfade wait for it to end (the latest wins).
final class DelayNode: RenderNode {
    struct State {
        var input: AudioBus?
        var output: AudioBus?
        var capacity = 0
        var writeIndex = 0
        /// The delay now (the one faded from, during a fade).
        var current: Int
        /// The delay asked for.
        var target: Int
        /// The delay faded to, and the frames of the fade done; `fading`
        /// false when none runs.
        var fadeTo = 0
        var fadeDone = 0
        var fading = false
        var end = DelayedEnd()
    }

    let channels: Int
    let maxDelay: Int
    let fadeFrames: Int
    let sampleRate: Double
    let state: UnsafeMutablePointer<State>
    /// `capacity` frames per channel, allocated in `prepare`.
    var ring: UnsafeMutablePointer<Float>?
    let samplesIndex: Int32, msIndex: Int32

    init(channels: Int, delay: Int, maxDelay: Int, sampleRate: Double, descriptor: NodeDescriptor) {
        self.channels = channels
        self.maxDelay = maxDelay
        self.sampleRate = sampleRate
        fadeFrames = glideFrames(sampleRate)
        state = .allocate(capacity: 1)
        state.initialize(to: State(current: delay, target: delay))
        samplesIndex = Int32(descriptor.parameterIndex(named: "samples") ?? -1)
        msIndex = Int32(descriptor.parameterIndex(named: "ms") ?? -1)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        ring?.deallocate()
    }

    /// The delay now, in frames. [any-thread; an estimate while rendering]
    var currentDelay: Int { state.pointee.current }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        let capacity = maxDelay + context.maxFrames
        ring?.deallocate()
        let r = UnsafeMutablePointer<Float>.allocate(capacity: max(capacity * channels, 1))
        r.initialize(repeating: 0, count: max(capacity * channels, 1))
        ring = r
        state.pointee.input = inputs.first
        state.pointee.output = output
        state.pointee.capacity = capacity
    }

    func apply(_ change: ParameterChange) {
        var frames: Double
        if change.parameter == samplesIndex { frames = change.value.rounded() }
        else if change.parameter == msIndex { frames = (change.value * sampleRate / 1000).rounded() }
        else { return }
        if !(frames >= 0) { frames = 0 }
        if frames > Double(maxDelay) { frames = Double(maxDelay) }
        state.pointee.target = Int(frames)
    }

    func render(frames n: Int) {
        guard let ring, let input = state.pointee.input, let output = state.pointee.output else { return }
        var s = state.pointee
        let capacity = s.capacity
        var c = 0
        while c < channels {
            Kernels.ringWrite(input.channel(c), count: n, ring: ring + c * capacity, capacity: capacity, at: s.writeIndex)
            c += 1
        }
        // The longest delay in this block decides where the stream ends.
        var longest = s.current
        var done = 0
        while done < n {
            if !s.fading && s.target != s.current {
                s.fading = true
                s.fadeTo = s.target
                s.fadeDone = 0
            }
            let at = (s.writeIndex + done) % capacity
            if s.fading {
                let m = min(fadeFrames - s.fadeDone, n - done)
                let step = 1 / Float(fadeFrames)
                if s.fadeTo > longest { longest = s.fadeTo }
                c = 0
                while c < channels {
                    Self.crossfade(ring + c * capacity, capacity: capacity, at: at, from: s.current, to: s.fadeTo,
                                   t0: Float(s.fadeDone) * step, step: step, count: m, into: output.channel(c) + done)
                    c += 1
                }
                s.fadeDone += m
                if s.fadeDone >= fadeFrames {
                    s.current = s.fadeTo
                    s.fading = false
                }
                done += m
            } else {
                c = 0
                while c < channels {
                    Kernels.ringRead(ring + c * capacity, capacity: capacity, at: at, delay: s.current,
                              count: n - done, into: output.channel(c) + done)
                    c += 1
                }
                done = n
            }
        }
        s.writeIndex = (s.writeIndex + n) % capacity
        let st = s.end.state(input: input.state, frames: n, delay: longest)
        state.pointee = s
        if st.validFrames < n { output.clear(from: st.validFrames, to: n) }
        output.state = st
    }


    /// `dst[i] = (1 − t)·ring[at + i − from] + t·ring[at + i − to]`, `t`
    /// rising from `t0 + step` by `step` a sample. [audio-thread]
    @_noLocks
    static func crossfade(_ ring: UnsafePointer<Float>, capacity: Int, at: Int, from: Int, to: Int,
                          t0: Float, step: Float, count: Int, into dst: UnsafeMutablePointer<Float>) {
        var a = at - from
        if a < 0 { a += capacity }
        var b = at - to
        if b < 0 { b += capacity }
        var t = t0
        var i = 0
        while i < count {
            t += step
            dst[i] = ring[a] + (ring[b] - ring[a]) * t
            a += 1
            if a == capacity { a = 0 }
            b += 1
            if b == capacity { b = 0 }
            i += 1
        }
    }
}

// MARK: - filter

/// `filter`: second-order sections after the Audio EQ Cookbook, cascaded
/// for steeper slopes.
public struct FilterType: NodeType {
    public init() {}

    public static let defaultQ = 0.5.squareRoot()

    public let descriptor = NodeDescriptor(
        typeID: "filter", role: .processor,
        summary: "Biquad filter (Audio EQ Cookbook): low-pass, high-pass, band-pass, notch, peaking, low-shelf, high-shelf, all-pass, at `frequency` with `q` (or `slope` for shelves) and `gain` (peaking, shelves). Steeper: `order` (low/high-pass: a Butterworth filter of that order) or `stages` (that many identical sections in a row). Live changes glide over 20 ms (no zipper noise).",
        inputs: .single,
        parameters: [
            .init("type", .choice(BiquadShape.allCases.map(\.rawValue)), "The shape."),
            .init("frequency", .number, range: 1...192_000, unit: "Hz", live: true,
                  "Cutoff, centre or shelf midpoint frequency; below half the sample rate. Live values at or above it are held just below."),
            .init("q", .number, range: 0.025...100, optional: true, live: true,
                  "Quality factor (default 0.7071: Butterworth for low/high-pass). Not with order, whose Qs are Butterworth's; not with slope."),
            .init("slope", .number, range: 0.01...1, optional: true, live: true,
                  "Shelves only, instead of q: the Cookbook's shelf slope S (1: as steep as it gets without a bump)."),
            .init("gain", .number, range: -48...48, optional: true, unit: "dB", live: true,
                  "Peaking and shelves only: the boost (or cut) at the centre / on the shelf. Default 0."),
            .init("order", .integer, range: 1...16, optional: true,
                  "Low-pass and high-pass only: a Butterworth filter of this order (-6 dB/octave per order), as second-order sections (and a first-order one for odd orders)."),
            .init("stages", .integer, range: 1...8, optional: true,
                  "That many identical sections in a row (e.g. 2 low-pass stages at q 0.7071: Linkwitz-Riley 4th order). Default 1. Not with order."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let p = c.parameters
        guard let name = p.string("type"), let shape = BiquadShape(rawValue: name) else { return c.input }
        if let f = p.number("frequency"), f >= c.sampleRate / 2 {
            c.error(parameter: "frequency", "\(ParameterValue.number(f)) Hz is not below half the sample rate (\(ParameterValue.number(c.sampleRate / 2)) Hz at \(Int(c.sampleRate)) Hz): a digital filter's frequency must be below it")
        }
        if p.number("q") != nil && p.number("slope") != nil {
            c.error(parameter: "slope", "give either \"q\" or \"slope\", not both")
        }
        if p.number("slope") != nil && !shape.isShelf {
            c.error(parameter: "slope", "\"slope\" shapes shelves (low-shelf, high-shelf); a \(name) filter takes \"q\"")
        }
        if p.number("gain") != nil && !shape.usesGain {
            c.error(parameter: "gain", "a \(name) filter has no gain (only peaking, low-shelf and high-shelf do); use a gain node to change the level")
        }
        if let order = p.integer("order") {
            if !shape.takesOrder {
                c.error(parameter: "order", "\"order\" makes a Butterworth low-pass or high-pass; for a \(name) filter use \"stages\" (\(order / 2 > 0 ? order / 2 : 1) for \(order))")
            } else if p.number("stages") != nil {
                c.error(parameter: "stages", "give either \"order\" (a Butterworth filter) or \"stages\" (identical sections), not both")
            } else if p.number("q") != nil {
                c.error(parameter: "q", "order \(order) is a Butterworth filter, whose section Qs are fixed; drop \"q\", or use \"stages\" with \"q\"")
            }
        }
        return c.input
    }

    /// `get f.q` with no q in the graph: 0.7071, or the Q a shelf's slope
    /// makes.
    public func effectiveValue(parameter: String, element: Int?, parameters: NodeParameters, sampleRate: Double) -> Double? {
        guard parameter == "q" else { return nil }
        if let slope = parameters.number("slope"), let shape = parameters.string("type").flatMap(BiquadShape.init), shape.isShelf {
            return BiquadCoefficients.shelfQ(slope: slope, gainDB: parameters.number("gain") ?? 0)
        }
        return Self.defaultQ
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        let p = c.parameters
        guard let name = p.string("type"), let shape = BiquadShape(rawValue: name),
              let channels = c.inputFormats.first?.channels else {
            throw EngineError(nodeID: c.nodeID, "filter needs a type and an input")
        }
        let settings = FilterSettings(shape: shape, frequency: p.number("frequency") ?? 1000,
                                      q: p.number("q"), slope: p.number("slope"), gainDB: p.number("gain") ?? 0,
                                      sampleRate: c.sampleRate)
        let qs: [Double]
        if let order = p.integer("order") { qs = BiquadCoefficients.butterworthQs(order: order) }
        else { qs = Array(repeating: -1, count: p.integer("stages") ?? 1) }
        return FilterNode(channels: channels, settings: settings, sectionQs: qs, descriptor: descriptor)
    }
}

/// What a `filter` node's sections are designed from.
struct FilterSettings {
    var shape: BiquadShape
    var frequency: Double
    var q: Double?
    var slope: Double?
    var gainDB: Double
    var sampleRate: Double

    /// Section `sectionQ`'s coefficients: `sectionQ` > 0 is a Butterworth
    /// pair's Q, 0 the first-order section, < 0 "use q or slope".
    @inline(__always)
    func coefficients(sectionQ: Double) -> BiquadCoefficients {
        let f = min(max(frequency, 1), sampleRate * 0.499)
        if sectionQ == 0 {
            return .firstOrder(highPass: shape == .highPass, frequency: f, sampleRate: sampleRate)
        }
        var q = sectionQ > 0 ? sectionQ : (q ?? FilterType.defaultQ)
        if sectionQ < 0, shape.isShelf, let slope { q = BiquadCoefficients.shelfQ(slope: slope, gainDB: gainDB) }
        return .design(shape, frequency: f, q: q, gainDB: gainDB, sampleRate: sampleRate)
    }
}

/// The runtime `filter`.
final class FilterNode: RenderNode {
    struct Wiring {
        var input: AudioBus?
        var output: AudioBus?
        var settings: FilterSettings
    }
    let wiring: UnsafeMutablePointer<Wiring>
    let channels: Int
    let cascade: BiquadCascade
    /// One per section: see `FilterSettings.coefficients(sectionQ:)`.
    let sectionQs: UnsafeMutablePointer<Double>
    let sections: Int
    let sources: UnsafeMutablePointer<UnsafePointer<Float>>
    let destinations: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// What the channel pointers hold before the first block.
    let placeholder: UnsafeMutablePointer<Float>
    let frequencyIndex: Int32, qIndex: Int32, slopeIndex: Int32, gainIndex: Int32

    init(channels: Int, settings: FilterSettings, sectionQs qs: [Double], descriptor: NodeDescriptor) {
        self.channels = channels
        sections = max(qs.count, 1)
        sectionQs = .allocate(capacity: sections)
        sectionQs.initialize(repeating: -1, count: sections)
        for (i, q) in qs.enumerated() { sectionQs[i] = q }
        cascade = BiquadCascade(channels: channels,
                                coefficients: (0..<sections).map { settings.coefficients(sectionQ: qs.isEmpty ? -1 : qs[$0]) },
                                rampFrames: glideFrames(settings.sampleRate))
        wiring = .allocate(capacity: 1)
        wiring.initialize(to: Wiring(settings: settings))
        placeholder = .allocate(capacity: 1)
        placeholder.initialize(to: 0)
        sources = .allocate(capacity: max(channels, 1))
        sources.initialize(repeating: UnsafePointer(placeholder), count: max(channels, 1))
        destinations = .allocate(capacity: max(channels, 1))
        destinations.initialize(repeating: placeholder, count: max(channels, 1))
        frequencyIndex = Int32(descriptor.parameterIndex(named: "frequency") ?? -1)
        qIndex = Int32(descriptor.parameterIndex(named: "q") ?? -1)
        slopeIndex = Int32(descriptor.parameterIndex(named: "slope") ?? -1)
        gainIndex = Int32(descriptor.parameterIndex(named: "gain") ?? -1)
    }

    deinit {
        wiring.deinitialize(count: 1)
        wiring.deallocate()
        sectionQs.deallocate()
        sources.deallocate()
        destinations.deallocate()
        placeholder.deallocate()
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        wiring.pointee.input = inputs.first
        wiring.pointee.output = output
    }

    func apply(_ change: ParameterChange) {
        let v = change.value
        if change.parameter == frequencyIndex { wiring.pointee.settings.frequency = v }
        else if change.parameter == qIndex { wiring.pointee.settings.q = v > 0 ? v : FilterType.defaultQ; wiring.pointee.settings.slope = nil }
        else if change.parameter == slopeIndex { wiring.pointee.settings.slope = v > 0 ? v : 1 }
        else if change.parameter == gainIndex { wiring.pointee.settings.gainDB = v }
        else { return }
        let settings = wiring.pointee.settings
        var s = 0
        while s < sections {
            cascade.setTarget(s, settings.coefficients(sectionQ: sectionQs[s]))
            s += 1
        }
        cascade.startGlide()
    }

    func render(frames n: Int) {
        guard let input = wiring.pointee.input, let output = wiring.pointee.output else { return }
        var c = 0
        while c < channels {
            sources[c] = UnsafePointer(input.channel(c))
            destinations[c] = output.channel(c)
            c += 1
        }
        cascade.process(sources, destinations, count: n)
        let st = input.state
        if st.validFrames < n { output.clear(from: st.validFrames, to: n) }
        output.state = st
    }
}
