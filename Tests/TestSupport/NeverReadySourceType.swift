import AudioGraph

/// A source for tests whose background job never gets ready, as a reader
/// stuck on a dead disk or a decoder that never delivers would be:
/// `{"type": "never-ready"}`, 2 channels of silence. Its job's `service`
/// does nothing and `isReady` is always false, so whatever waits for it
/// must give up by itself (a live start, a reload).
public struct NeverReadySourceType: NodeType {
    public init() {}

    public var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "never-ready", role: .source,
                       summary: "Silence from a background job that never gets ready (tests only).",
                       inputs: .none, parameters: [], origin: "TestSupport")
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? { StreamFormat(channels: 2, sampleRate: c.sampleRate) }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode { NeverReadyNode() }
}

/// The job of `never-ready`: never ready, never any work. [any thread]
public final class NeverReadyJob: BackgroundJob, @unchecked Sendable {
    public func service() -> Bool { false }
    public func isReady(forFrames frames: Int) -> Bool { false }
    public func finish() throws {}
    public var hasFailed: Bool { false }
}

/// Silence; its job never gets ready. [audio-thread renders]
final class NeverReadyNode: RenderNode {
    let job = NeverReadyJob()
    var output: AudioBus?

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }

    func render(frames: Int) { output?.clear(to: frames) }

    var backgroundJob: (any BackgroundJob)? { job }
}
