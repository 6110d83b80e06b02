import AudioGraphCore
import GraphFile

/// Offline rendering of graphs whose nodes must hear their whole input
/// first (a `loudness` node normalizing to a target): the analysis passes,
/// then the graph compiled for the final render with their results.
///
/// How it works (the node side is `AnalysisPassNode`, the type side
/// `NodeType.needsAnalysisPass`):
/// - A node that needs an analysis pass is analysed in pass `k`, where `k`
///   counts the analysing nodes on the longest path from a source to it,
///   itself included: usually one pass, more only when one analysing node
///   feeds another.
/// - Pass `k` builds, fresh, only the nodes that feed the pass's analysing
///   nodes (their ancestors), plus a `null` sink behind each, and renders
///   them to the end (or to `limit`). Analysing nodes of earlier passes get
///   their results; nothing downstream (files, ports) is built, so nothing
///   is written. Building the nodes again is what rewinds the sources: a
///   file opens at its start, a tone starts at phase 0.
/// - The final compile builds the whole graph once more and hands every
///   analysing node its result before the engine prepares it.
/// - A node may ask for its pass again with what it found
///   (`wantsAnotherPass`, at most `maximumRefinements` times): a loudness
///   target under a limiter is measured after limiting and corrected.
/// - Offline, the file sinks drop the latency of the `OfflineAlignedNode`s
///   upstream (a loudness node's limiter): the files stay aligned with, and
///   as long as, the input.
/// - A source that cannot be played twice (`isReplayable` false: live
///   input) feeding an analysing node is an error, before anything runs.
///
/// [main-thread]
public enum OfflinePasses {
    /// Where the passes are: `pass` of `passes` analysis passes, and the
    /// frames rendered so far in it.
    public struct Progress: Sendable {
        public var pass: Int
        public var passes: Int
        public var frames: Int
    }

    /// For each node of `graph`, the analysis pass it is analysed in (1…),
    /// or 0 when it needs none (offline).
    public static func analysisLevels(_ graph: ValidatedGraph) -> [Int] {
        var depth: [Int] = []
        var level: [Int] = []
        for n in graph.nodes {
            var d = n.inputs.map { $0 < depth.count ? depth[$0] : 0 }.max() ?? 0
            if n.type.needsAnalysisPass(n.parameters) {
                d += 1
                level.append(d)
            } else {
                level.append(0)
            }
            depth.append(d)
        }
        return level
    }

    /// How many analysis passes an offline render of `graph` makes.
    public static func passCount(_ graph: ValidatedGraph) -> Int {
        analysisLevels(graph).max() ?? 0
    }

    /// Runs the analysis passes `graph` needs (none: nothing is rendered)
    /// and compiles it for the final render, every analysing node given
    /// its result. The notices of the compiled graph say what each
    /// analysing node found and does (e.g. the gain applied).
    /// - Parameters:
    ///   - limit: frames to render at most in each pass (the render's
    ///     duration), nil: to the end of the streams.
    ///   - progress: between blocks of the analysis passes.
    /// - Returns: nil when `shouldStop` stopped an analysis pass.
    /// - Throws: `EngineError` when a node cannot be made, a source cannot
    ///   be replayed, or an analysis pass failed (its errors).
    public static func compile(_ graph: ValidatedGraph, maxFrames: Int, limit: Int? = nil,
                               shouldStop: () -> Bool = { false },
                               progress: (Progress) -> Void = { _ in }) throws -> CompiledGraph? {
        let levels = analysisLevels(graph)
        let passes = levels.max() ?? 0
        var results: [String: any Sendable] = [:]
        if passes > 0 { try checkReplayable(graph, levels: levels) }
        for pass in stride(from: 1, through: passes, by: 1) {
            // The pass itself, then (rarely) refinements: the nodes that
            // want another pass render again with their result so far.
            var refining: Set<String> = []
            var rounds = 0
            repeat {
                let sub = analysisGraph(graph, levels: levels, pass: pass)
                let compiled = try GraphCompiler.compile(sub, maxFrames: maxFrames) { node, made in
                    guard node.type.needsAnalysisPass(node.parameters) else { return }
                    guard let analysing = made as? AnalysisPassNode else {
                        throw EngineError(nodeID: node.id, "its type asks for an analysis pass but its node cannot take part in one")
                    }
                    if let r = results[node.id] {
                        _ = try analysing.useAnalysis(r)
                    } else {
                        analysing.beginAnalysis()
                    }
                }
                let result = OfflineRenderer(engine: compiled.engine, blockFrames: maxFrames).run(
                    maxFrames: limit, shouldStop: shouldStop,
                    progress: { progress(Progress(pass: pass, passes: passes, frames: $0)) })
                if result.ending == .interrupted { return nil }
                if result.ending == .failed || !result.finishErrors.isEmpty {
                    throw EngineError("the analysis pass failed: " + result.finishErrors.joined(separator: "; "))
                }
                var again: Set<String> = []
                for (i, n) in graph.nodes.enumerated() where levels[i] == pass && (rounds == 0 || refining.contains(n.id)) {
                    guard let node = compiled.engine.node(n.id) as? AnalysisPassNode else { continue }
                    results[n.id] = node.analysisResult()
                    if node.wantsAnotherPass { again.insert(n.id) }
                }
                refining = again
                rounds += 1
            } while !refining.isEmpty && rounds <= maximumRefinements
        }
        var lines: [String] = []
        let compiled = try GraphCompiler.compile(graph, maxFrames: maxFrames) { node, made in
            guard let r = results[node.id], let analysing = made as? AnalysisPassNode else { return }
            if let line = try analysing.useAnalysis(r) { lines.append(line) }
        }
        alignFileSinks(compiled.engine, limit: limit)
        return CompiledGraph(graph: compiled.graph, engine: compiled.engine, notices: compiled.notices + lines)
    }

    /// The most passes a level renders again for nodes that want another
    /// one (`AnalysisPassNode.wantsAnotherPass`) after its analysis pass.
    public static let maximumRefinements = 10

    /// Tells each `file-out` to drop the latency of the `OfflineAlignedNode`s
    /// upstream of it (the longest sum along a path), so that their delay
    /// does not reach the file: it is as long as the input, aligned with it.
    /// With `limit` (the render's duration) each file gets at most that
    /// many frames; the render goes on past it by what the sinks drop
    /// (`framesToRender`), so that each file is exactly `limit` long.
    static func alignFileSinks(_ engine: Engine, limit: Int? = nil) {
        var trim: [Int] = []
        for (i, id) in engine.ids.enumerated() {
            let upstream = engine.inputIndices[i].map { $0 < trim.count ? trim[$0] : 0 }.max() ?? 0
            let node = engine.node(id)
            if let sink = node as? any OfflineTrimmingSink {
                sink.leadingFramesToDrop = upstream
                sink.framesLeftToWrite = limit ?? Int.max
            }
            trim.append(upstream + ((node as? OfflineAlignedNode).map { max($0.latency, 0) } ?? 0))
        }
    }

    /// The frames to render for files of `limit` frames (the render's
    /// duration; nil: to the end of the streams) from a graph compiled
    /// here: `limit` plus the most frames a file sink drops at its start
    /// (a limiter's lookahead), so that the file is `limit` frames long
    /// and not shorter by the lookahead. The sinks stop writing at `limit`
    /// (`alignFileSinks`). [main-thread & !rendering]
    public static func framesToRender(_ limit: Int?, _ compiled: CompiledGraph) -> Int? {
        ThreadRole.check(.main)
        guard let limit else { return nil }
        let dropped = compiled.engine.ids.compactMap { (compiled.engine.node($0) as? any OfflineTrimmingSink)?.leadingFramesToDrop }.max() ?? 0
        let (sum, overflow) = limit.addingReportingOverflow(dropped)
        return overflow ? Int.max : sum
    }

    /// Refuses live input (or any source that cannot be played twice)
    /// upstream of an analysing node.
    static func checkReplayable(_ graph: ValidatedGraph, levels: [Int]) throws {
        for (i, n) in graph.nodes.enumerated() where levels[i] > 0 {
            for a in graph.feeders(of: [i]).sorted() where graph.nodes[a].inputs.isEmpty {
                let source = graph.nodes[a]
                if !source.type.isReplayable(source.parameters) {
                    throw EngineError(nodeID: n.id, "it needs the whole input before rendering (an analysis pass), but its source '\(source.id)' (\(source.descriptor.typeID)) is live input, which cannot be played twice; render a recording of it, or let the node follow the input as it plays (loudness: normalize \"follow\"; ab: matchBy \"short-term\")")
                }
            }
        }
    }

    /// The part of `graph` that pass `pass` renders: the pass's analysing
    /// nodes and their ancestors, in the graph's order, each analysing node
    /// followed by a `null` sink.
    static func analysisGraph(_ graph: ValidatedGraph, levels: [Int], pass: Int) -> ValidatedGraph {
        let roots = graph.nodes.indices.filter { levels[$0] == pass }
        var (g, newIndex) = graph.cut(toFeedersOf: roots)
        for r in roots {
            let n = graph.nodes[r]
            guard let index = newIndex[r], let format = n.outputFormats.first else { continue }
            var id = "\(n.id).analysis"
            while graph.node(id) != nil { id += "_" }
            g.nodes.append(ValidatedGraph.Node(id: id, type: NullType(), parameters: NodeParameters(), inputs: [index],
                                               inputSourcePorts: [0], inputFormats: [format], inputPorts: ["in"]))
        }
        return g
    }
}

extension ValidatedGraph {
    /// The nodes `roots` and every node feeding them, as indices. [any-thread]
    public func feeders(of roots: [Int]) -> Set<Int> {
        var seen = Set<Int>()
        var stack = roots
        while let i = stack.popLast() {
            guard seen.insert(i).inserted else { continue }
            stack += nodes[i].inputs
        }
        return seen
    }

    /// The nodes `roots` and every node feeding them, in the graph's order,
    /// as a graph of their own (no links: node inputs carry the wiring), and
    /// where each kept node went (old index → new index). Callers append the
    /// sinks they need (an analysis pass's `null`, `compare`'s captures).
    /// [any-thread]
    public func cut(toFeedersOf roots: [Int]) -> (graph: ValidatedGraph, index: [Int: Int]) {
        let keep = feeders(of: roots)
        var newIndex: [Int: Int] = [:]
        var kept: [Node] = []
        for (i, n) in nodes.enumerated() where keep.contains(i) {
            var m = n
            m.inputs = n.inputs.map { newIndex[$0] ?? 0 }
            newIndex[i] = kept.count
            kept.append(m)
        }
        var g = self
        g.nodes = kept
        g.links = []
        return (g, newIndex)
    }
}
