import AudioGraphNodeAPI

extension ProcessingNodes {
    static var rateNodes: [any NodeType] { [] }
}
