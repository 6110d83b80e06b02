import AudioGraphNodeAPI

extension ProcessingNodes {
    static var dynamicsNodes: [any NodeType] { [] }
}
