import AudioGraphNodeAPI

extension ProcessingNodes {
    static var loudnessNodes: [any NodeType] { [] }
}
