import AudioGraphCore
import AudioGraphNodeAPI

extension ProcessingNodes {
    static var dynamicsNodes: [any NodeType] { [LimiterType(), MeterType()] }
}

/// `limiter`: a lookahead true-peak limiter (`TruePeakLimiter`).
///
/// Its lookahead is algorithmic delay, so it is reported as the node's
/// latency: the engine delays parallel paths to match, and live the
/// graph's JACK port latencies include it.
public struct LimiterType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "limiter", role: .processor,
        summary: "Lookahead true-peak limiter: the output's true peak (ITU-R BS.1770-4, 4× oversampled) stays at or below `ceiling`. One gain for all channels. The lookahead delays the signal and is reported as latency (compensated on parallel paths).",
        inputs: .single,
        parameters: [
            .init("ceiling", .number, range: -60...0, default: .number(-1), unit: "dBTP", live: true,
                  "The highest true peak let through."),
            .init("release", .number, range: 1...5000, default: .number(100), unit: "ms", live: true,
                  "Release time constant: the gain reduction falls to 1/e of itself in this time after the lookahead's hold."),
            .init("lookahead", .number, range: 0.5...50, default: .number(5), unit: "ms",
                  "How far ahead the limiter looks (the attack ramp is this long, less 9 frames); the delay it adds, at least 16 frames."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let input = c.input else { return nil }
        if input.encoding != .pcm {
            c.error(input: 0, "limiter takes PCM audio; this input is \(input)")
            return nil
        }
        return input
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let channels = c.inputFormats.first?.channels else { throw EngineError(nodeID: c.nodeID, "no input") }
        let p = c.parameters
        let limiter = TruePeakLimiter(channels: channels, sampleRate: c.sampleRate, maxFrames: LimiterNode.pieceFrames,
                                      ceilingDBTP: p.number("ceiling") ?? -1, releaseMs: p.number("release") ?? 100,
                                      lookaheadMs: p.number("lookahead") ?? 5)
        return LimiterNode(limiter: limiter, descriptor: descriptor)
    }
}

/// The runtime `limiter`: copies its input to its output and limits there.
final class LimiterNode: RenderNode {
    /// The limiter works in pieces of at most this many frames.
    static let pieceFrames = 1024

    struct Wiring {
        var input: AudioBus?
        var output: AudioBus?
        var end = DelayedEnd()
    }
    let wiring: UnsafeMutablePointer<Wiring>
    let limiter: TruePeakLimiter
    let channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let channelCount: Int
    let placeholder: UnsafeMutablePointer<Float>
    let ceilingIndex: Int32, releaseIndex: Int32

    init(limiter: TruePeakLimiter, descriptor: NodeDescriptor) {
        self.limiter = limiter
        channelCount = limiter.channels
        wiring = .allocate(capacity: 1)
        wiring.initialize(to: Wiring())
        placeholder = .allocate(capacity: 1)
        placeholder.initialize(to: 0)
        channels = .allocate(capacity: channelCount)
        channels.initialize(repeating: placeholder, count: channelCount)
        ceilingIndex = Int32(descriptor.parameterIndex(named: "ceiling") ?? -1)
        releaseIndex = Int32(descriptor.parameterIndex(named: "release") ?? -1)
    }

    deinit {
        wiring.deinitialize(count: 1)
        wiring.deallocate()
        channels.deallocate()
        placeholder.deallocate()
    }

    /// The lookahead. [main-thread]
    var latency: Int { limiter.latencyFrames }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        wiring.pointee.input = inputs.first
        wiring.pointee.output = output
    }

    func apply(_ change: ParameterChange) {
        if change.parameter == ceilingIndex { limiter.setCeiling(dBTP: change.value) }
        else if change.parameter == releaseIndex { limiter.setRelease(ms: change.value) }
    }

    func render(frames n: Int) {
        guard let input = wiring.pointee.input, let output = wiring.pointee.output else { return }
        var c = 0
        while c < channelCount {
            let dst = output.channel(c)
            Kernels.copy(input.channel(c), to: dst, count: n)
            channels[c] = dst
            c += 1
        }
        limiter.process(channels, frames: n)
        let st = wiring.pointee.end.state(input: input.state, frames: n, delay: limiter.latencyFrames)
        if st.validFrames < n { output.clear(from: st.validFrames, to: n) }
        output.state = st
    }
}
