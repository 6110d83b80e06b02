/// A node that must hear its whole input before it renders it: offline
/// normalization to a loudness target measures the program first, then
/// applies one exact gain.
///
/// How an offline render runs such a graph (`OfflinePasses` in the
/// `AudioGraph` module; see docs/processing/loudness.md):
/// 1. **Analysis pass.** Only the nodes that feed the analysing nodes are
///    built, fresh; each analysing node gets `beginAnalysis()` before the
///    engine prepares it, then the pass renders to the end of the stream
///    (or the render's duration) with nothing written anywhere.
/// 2. **Final pass.** The whole graph is built again from scratch, so every
///    source starts over from its beginning ("rewinds") and every node from
///    its initial state; each analysing node gets the result of its
///    analysis through `useAnalysis(_:)` before the engine prepares it, and
///    the render goes on as usual.
///
/// An analysing node downstream of another one is analysed in a later pass,
/// after its upstream node's result is known. A source that cannot be
/// played twice (live input) cannot feed an analysing node: the node type
/// says so with `NodeType.isReplayable`, and rendering stops with an error
/// before anything runs.
///
/// Live, nothing calls these methods: the node must work without them (a
/// `loudness` node follows the loudness instead).
public protocol AnalysisPassNode: RenderNode {
    /// Makes this instance measure only: its output is its input unchanged.
    /// [main-thread; before `prepare`]
    func beginAnalysis()
    /// What the analysis pass measured, once it has ended.
    /// [main-thread & !rendering; after rendering stopped]
    func analysisResult() -> any Sendable
    /// Gives a fresh instance (of the final pass) what the analysis pass of
    /// the same node measured. Returns a line for the user (e.g. the gain
    /// applied), or nil. Throws when the result cannot be used.
    /// [main-thread; before `prepare`]
    func useAnalysis(_ result: any Sendable) throws -> String?
    /// After a pass, whether `analysisResult()` is to be tried in another
    /// pass (a fresh instance given it with `useAnalysis(_:)`) before the
    /// final render: a `loudness` node whose limiter engages measures its
    /// output after limiting and corrects the gain. The renderer stops
    /// after `OfflinePasses.maximumRefinements` such passes. Default false.
    /// [main-thread & !rendering; after rendering stopped]
    var wantsAnotherPass: Bool { get }
}

extension AnalysisPassNode {
    public var wantsAnotherPass: Bool { false }
}

/// A node whose latency an offline render takes out again at its file
/// sinks: the node flushes its delayed tail when its input ends, so a
/// `file-out` that drops the first `latency` frames it receives gets a file
/// as long as the input, every sample where it was (a `loudness` node's
/// limiter lookahead). Live, the latency is reported as usual.
public protocol OfflineAlignedNode: RenderNode {}

/// A sink that writes what an offline render produces (a `file-out`): the
/// offline passes tell it how many leading frames to drop (the latency of
/// the `OfflineAlignedNode`s upstream) and how many to write at most.
/// [main-thread & !rendering; every member]
public protocol OfflineTrimmingSink: RenderNode {
    /// Frames dropped at the start of what reaches the sink.
    var leadingFramesToDrop: Int { get set }
    /// Frames written at most after the drop (Int.max: all).
    var framesLeftToWrite: Int { get set }
}
