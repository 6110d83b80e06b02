import AudioGraph

/// A stand-in for live input in tests: `{"type": "live-src"}`, a 2-channel
/// source that cannot be played twice (`isReplayable` false), so that an
/// analysis pass upstream of it must be refused before anything is built.
public struct LiveSourceType: NodeType {
    public init() {}

    public var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "live-src", role: .source, summary: "test live input",
                       inputs: .none, parameters: [], origin: "TestSupport")
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? { StreamFormat(channels: 2, sampleRate: c.sampleRate) }
    public func makeNode(_ c: InstanceContext) throws -> any RenderNode { throw EngineError("must not be built") }
    public func isReplayable(_ p: NodeParameters) -> Bool { false }
}
