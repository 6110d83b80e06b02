import AudioGraphNodeAPI

extension ProcessingNodes {
    static var channelNodes: [any NodeType] { [] }
}
