import AudioGraphCore
import AudioGraphNodeAPI

/// `test-tone`: sine, square, saw, white and pink noise, log sweep, impulse
/// train, silence. Every channel carries the same signal.
public struct TestToneType: NodeType {
    public enum Waveform: String, CaseIterable, Sendable {
        case sine, square, saw, white, pink, sweep, impulse, silence
    }

    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "test-tone", role: .source,
        summary: "Test signal generator: sine, square, saw, white/pink noise, logarithmic sweep, impulses, silence.",
        inputs: .none,
        parameters: [
            .init("waveform", .choice(Waveform.allCases.map(\.rawValue)), default: .string("sine"),
                  "Signal shape."),
            .init("frequency", .number, range: 0.01...192_000, default: .number(440), unit: "Hz", live: true,
                  "Tone frequency; start frequency of a sweep. Must be below half the sample rate."),
            .init("endFrequency", .number, range: 0.01...192_000, default: .number(20000), unit: "Hz",
                  "End frequency of a sweep."),
            .init("sweepTime", .number, range: 0.01...86_400, optional: true, unit: "s",
                  "Length of one sweep (then it starts again); default: the duration."),
            .init("interval", .number, range: 0...86_400, default: .number(1), unit: "s",
                  "Time between impulses; 0 for a single impulse."),
            .init("level", .number, range: -144...0, default: .number(-12), unit: "dBFS", live: true,
                  "Peak level of periodic waveforms; for noise, the RMS level of a sine of that peak."),
            .init("channels", .integer, range: 1...64, default: .number(2),
                  "Output channels (all carry the same signal)."),
            .init("duration", .number, range: 0.000_1...31_536_000, optional: true, unit: "s",
                  "End of stream after this time; endless when absent."),
            .init("seed", .integer, range: 0...4_294_967_295, default: .number(1),
                  "Noise seed: the same seed gives the same noise."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let p = c.parameters
        let nyquist = c.sampleRate / 2
        let waveform = p.string("waveform").flatMap(Waveform.init) ?? .sine
        func aboveNyquist(_ name: String) {
            if let f = p.number(name), f >= nyquist {
                c.error(parameter: name, "\"\(name)\" = \(ParameterValue.number(f)) Hz is at or above half the sample rate (\(ParameterValue.number(nyquist)) Hz); use a lower frequency")
            }
        }
        if [.sine, .square, .saw, .sweep].contains(waveform) { aboveNyquist("frequency") }
        if waveform == .sweep {
            aboveNyquist("endFrequency")
            if p.number("sweepTime") == nil && p.number("duration") == nil {
                c.error(parameter: "sweepTime", "a sweep needs \"sweepTime\" or \"duration\" (seconds)")
            }
        }
        guard let channels = p.integer("channels") else { return nil }
        return StreamFormat(channels: channels, sampleRate: c.sampleRate)
    }

    public func isEndless(_ p: NodeParameters) -> Bool { p.number("duration") == nil }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        TestToneNode(parameters: c.parameters, sampleRate: c.sampleRate, descriptor: descriptor)
    }
}

/// The running tone. [audio-thread | main-thread; render, apply: audio; init, prepare: main]
///
/// What `render` and `apply` change lives in one `State` behind a pointer
/// allocated in `init`: mutating stored properties of a class costs two
/// dynamic exclusivity checks per access on the audio thread (a TLS lookup
/// each), and with 8 tones that was a sixth of a live cycle's instructions
/// (docs/performance.md).
final class TestToneNode: RenderNode {
    struct State {
        var sine: SineOscillator
        var blep: BLEPOscillator
        var white: WhiteNoise
        var pink: PinkNoise
        var sweep: LogSweep
        var gain: SmoothedGain
        var impulseCountdown = 0
        var produced = 0
        var output: AudioBus?
    }

    let waveform: TestToneType.Waveform
    let sampleRate: Double
    let state: UnsafeMutablePointer<State>
    /// The sine oscillator's tables (owned by it, fixed at creation).
    let sineTables: (cos: UnsafeMutablePointer<Double>, sin: UnsafeMutablePointer<Double>)
    /// Scales the raw generator so `level` means what the descriptor says.
    let normalisation: Float
    let impulseInterval: Int
    let totalFrames: Int?
    let frequencyIndex: Int32
    let levelIndex: Int32

    init(parameters p: NodeParameters, sampleRate: Double, descriptor: NodeDescriptor) {
        self.sampleRate = sampleRate
        waveform = p.string("waveform").flatMap(TestToneType.Waveform.init) ?? .sine
        let f = p.number("frequency") ?? 440
        let seed = UInt64(p.integer("seed") ?? 1)
        let sweepSeconds = p.number("sweepTime") ?? p.number("duration") ?? 10
        state = .allocate(capacity: 1)
        state.initialize(to: State(
            sine: SineOscillator(frequency: f, sampleRate: sampleRate),
            blep: BLEPOscillator(shape: waveform == .saw ? .saw : .square, frequency: f, sampleRate: sampleRate),
            white: WhiteNoise(seed: seed),
            pink: PinkNoise(seed: seed),
            sweep: LogSweep(from: f, to: p.number("endFrequency") ?? 20000, seconds: sweepSeconds, sampleRate: sampleRate),
            gain: SmoothedGain(linear(p.number("level") ?? -12), rampFrames: rampFrames(sampleRate))))
        sineTables = (state.pointee.sine.cosTable, state.pointee.sine.sinTable)
        impulseInterval = Int(((p.number("interval") ?? 1) * sampleRate).rounded())
        totalFrames = p.number("duration").map { Int(($0 * sampleRate).rounded()) }
        switch waveform {
        case .white:
            // Uniform noise in [-1, 1) has an RMS of 1/√3; a sine of peak 1 has 1/√2.
            normalisation = Float((3.0 / 2.0).squareRoot())
        case .pink:
            normalisation = Float((0.5).squareRoot()) / Self.pinkFilterRMS()
        default:
            normalisation = 1
        }
        frequencyIndex = Int32(descriptor.parameterIndex(named: "frequency") ?? -1)
        levelIndex = Int32(descriptor.parameterIndex(named: "level") ?? -1)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// The RMS of the pink filter's output for white input uniform in
    /// [-1, 1): the input's RMS (1/√3) times the filter's power gain, the
    /// root of the sum of its squared impulse response. [main-thread]
    static func pinkFilterRMS() -> Float {
        var filter = PinkNoise.Filter()
        var energy = filter.step(1)
        energy *= energy
        // The slowest pole (0.99886) has decayed by e^-75 after 2^16 samples.
        for _ in 1..<(1 << 16) {
            let h = filter.step(0)
            energy += h * h
        }
        return Float((energy / 3).squareRoot())
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        state.pointee.output = output
    }

    /// Reads no field of `state`: a reload's compile asks a kept node for
    /// its hot memory while the audio thread advances the oscillators in
    /// `state` (the tables were taken at creation and never change).
    var hotMemory: [UnsafeRawBufferPointer] {
        [UnsafeRawBufferPointer(hot: state),
         UnsafeRawBufferPointer(hot: sineTables.cos, count: SineTable.length),
         UnsafeRawBufferPointer(hot: sineTables.sin, count: SineTable.length)]
    }

    func apply(_ change: ParameterChange) {
        if change.parameter == frequencyIndex {
            state.pointee.sine.setFrequency(change.value, sampleRate: sampleRate)
            state.pointee.blep.setFrequency(change.value, sampleRate: sampleRate)
        } else if change.parameter == levelIndex {
            state.pointee.gain.setTarget(linear(change.value))
        }
    }

    func render(frames: Int) {
        let st = state
        guard let out = st.pointee.output else { return }
        var n = frames
        if let total = totalFrames { n = max(0, min(frames, total - st.pointee.produced)) }
        let dst = out.channel(0)
        let channels = max(out.channels, 1)
        // Channels already written: a steady sine is scaled and written to
        // the first two channels in its own pass.
        var written = 1
        if waveform == .sine && !st.pointee.gain.isRamping {
            let second = channels > 1 ? out.channel(1) : dst
            st.pointee.sine.render(dst, second, count: n, gain: st.pointee.gain.current * normalisation)
            if n < frames { Kernels.fill(second + n, count: frames - n, value: 0) }
            written = channels > 1 ? 2 : 1
        } else {
            switch waveform {
            case .sine: st.pointee.sine.render(dst, count: n)
            case .square, .saw: st.pointee.blep.render(dst, count: n)
            case .white: st.pointee.white.render(dst, count: n)
            case .pink: st.pointee.pink.render(dst, count: n)
            case .sweep: st.pointee.sweep.render(dst, count: n)
            case .silence: Kernels.fill(dst, count: n, value: 0)
            case .impulse: renderImpulses(dst, count: n)
            }
            let k = normalisation
            st.pointee.gain.process(count: n, channels: 1) { _, start, len, from, step in
                if step == 0 {
                    Kernels.scale(dst + start, count: len, gain: from * k)
                } else {
                    _ = Kernels.copyRamped(dst + start, to: dst + start, count: len, from: from * k, step: step * k)
                }
            }
        }
        if n < frames { Kernels.fill(dst + n, count: frames - n, value: 0) }
        var c = written
        while c < channels {
            Kernels.copy(dst, to: out.channel(c), count: frames)
            c += 1
        }
        st.pointee.produced += n
        let ended = totalFrames.map { st.pointee.produced >= $0 } ?? false
        out.state = BusState(validFrames: n, ended: ended)
    }

    private func renderImpulses(_ dst: UnsafeMutablePointer<Float>, count: Int) {
        Kernels.fill(dst, count: count, value: 0)
        var i = 0
        while i < count {
            if state.pointee.impulseCountdown == 0 {
                dst[i] = state.pointee.produced + i == 0 || impulseInterval > 0 ? 1 : 0
                state.pointee.impulseCountdown = impulseInterval > 0 ? impulseInterval : Int.max
            }
            let skip = min(state.pointee.impulseCountdown, count - i)
            state.pointee.impulseCountdown -= skip
            i += skip
        }
    }
}
