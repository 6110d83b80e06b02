import AudioGraphCore
import AudioGraphNodeAPI

// The host's own discarding sink: the offline passes end each analysis
// graph with one, and the built-in registry offers it as `null`.

/// `null`: a sink that discards its input.
public struct NullType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "null", role: .sink, summary: "Discards its input.", inputs: .single, parameters: [], acceptsRateIslands: true)

    public func resolve(_ c: ResolveContext) -> StreamFormat? { nil }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode { NullNode() }
}

final class NullNode: RenderNode {
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {}
    func render(frames: Int) {}
}

