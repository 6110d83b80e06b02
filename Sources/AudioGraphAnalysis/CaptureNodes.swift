import AudioGraphHost
import AudioGraphCore

/// The last block that reached a `CaptureSinkType` node, interleaved: what
/// the driver of an offline render reads between blocks (the progress
/// callback of `OfflineRenderer.run`) and feeds to its analysers, so that
/// nothing of the stream is kept longer than a block.
///
/// Threading: the node writes in `render` [audio-thread]; `take` is for
/// the thread driving the offline render, between two blocks (in an
/// offline render both are the same thread). Not for live use.
public final class BlockCapture: @unchecked Sendable {
    public let channels: Int
    private var buffer: UnsafeMutablePointer<Float>?
    private var capacity = 0
    private var frames = 0
    public private(set) var ended = false
    /// Frames captured since the start.
    public private(set) var total = 0

    public init(channels: Int) { self.channels = channels }

    deinit { buffer?.deallocate() }

    /// Sets aside a block of `maxFrames` frames. [main-thread & !rendering]
    func prepare(maxFrames: Int) {
        buffer?.deallocate()
        buffer = .allocate(capacity: maxFrames * channels)
        buffer?.initialize(repeating: 0, count: maxFrames * channels)
        capacity = maxFrames
        frames = 0
        total = 0
        ended = false
    }

    /// Copies the valid frames of `bus` (interleaving them). [audio-thread]
    func record(_ bus: AudioBus) {
        guard let buffer else { return }
        let state = bus.state
        let n = min(max(state.validFrames, 0), capacity)
        for c in 0..<min(channels, bus.channels) {
            Kernels.interleave(bus.channel(c), to: buffer, stride: channels, channel: c, count: n)
        }
        frames = n
        total += n
        if state.ended { ended = true }
    }

    /// The frames of the last block not taken yet (interleaved; valid until
    /// the next block), then none until the next block. [between blocks]
    public func take() -> (samples: UnsafePointer<Float>, frames: Int)? {
        guard let buffer, frames > 0 else { return nil }
        let n = frames
        frames = 0
        return (UnsafePointer(buffer), n)
    }
}

/// A sink that hands each block to a `BlockCapture`: added by
/// `RendererComparison` behind the nodes it compares. Not in the registry:
/// graphs cannot name it. It takes streams at any rate (rate islands).
public struct CaptureSinkType: NodeType {
    public let capture: BlockCapture

    public init(capture: BlockCapture) { self.capture = capture }

    public var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "compare-capture", role: .sink, summary: "Hands each block to a BlockCapture (agraph compare).",
                       inputs: .single, parameters: [], origin: "AudioGraphAnalysis", acceptsRateIslands: true)
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? { nil }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode { CaptureSinkNode(capture: capture) }
}

/// [audio-thread | main-thread; render: audio; init, prepare: main]
final class CaptureSinkNode: RenderNode {
    let capture: BlockCapture
    var input: AudioBus?

    init(capture: BlockCapture) { self.capture = capture }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        capture.prepare(maxFrames: context.maxFrames)
    }

    func render(frames: Int) {
        if let input { capture.record(input) }
    }
}

/// A source of one unit impulse (1.0 at the first frame) on one channel of
/// a given format, silence on the others, then silence for ever: what
/// `RendererComparison` feeds a node to measure its response to each input
/// channel. `channel` nil: silence on every channel. Not in the registry.
public struct ImpulseSourceType: NodeType {
    public let format: StreamFormat
    public let channel: Int?

    public init(format: StreamFormat, channel: Int?) {
        self.format = format
        self.channel = channel
    }

    public var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "compare-impulse", role: .source, summary: "One unit impulse on one channel (agraph compare).",
                       inputs: .none, parameters: [], origin: "AudioGraphAnalysis")
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? { format }

    public func isEndless(_ parameters: NodeParameters) -> Bool { true }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode { ImpulseSourceNode(channel: channel) }
}

/// [audio-thread | main-thread; render: audio; init, prepare: main]
final class ImpulseSourceNode: RenderNode {
    let channel: Int?
    var output: AudioBus?
    var sent = false

    init(channel: Int?) { self.channel = channel }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        self.output = output
        sent = false
    }

    func render(frames: Int) {
        guard let output else { return }
        for c in 0..<output.channels { Kernels.fill(output.channel(c), count: frames, value: 0) }
        if !sent, frames > 0, let k = channel, k < output.channels {
            output.channel(k)[0] = 1
            sent = true
        }
        output.state = BusState(validFrames: frames, ended: false)
    }
}
