import AudioGraphNodeAPI

extension ProcessingNodes {
    static var timeAndToneNodes: [any NodeType] { [] }
}
