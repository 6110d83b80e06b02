import AudioGraphHost
import AudioGraphCore

/// What `RendererComparison.compare` is asked to do.
public struct ComparisonOptions: Sendable {
    /// The nodes whose outputs are compared: a node id, or `id:port` for
    /// an output port other than the first.
    public var a: String
    public var b: String
    /// Seconds to render; nil: to the end of the streams, or
    /// `endlessSeconds` when a source feeding A or B never ends.
    public var duration: Double?
    /// What an endless graph is compared over when no duration is given.
    public var endlessSeconds: Double = 30
    /// Frames per block of the offline renders.
    public var blockFrames: Int = 1024
    /// Length of each impulse response recorded for ILD and ITD.
    public var impulseSeconds: Double = 0.5
    /// The ITD search range, ± seconds.
    public var maxITDSeconds: Double = 0.001
    /// The Welch segment; nil: `WelchSpectrum.defaultFFTSize`.
    public var fftSize: Int?

    public init(a: String, b: String, duration: Double? = nil) {
        self.a = a
        self.b = b
        self.duration = duration
    }
}

/// Why a comparison could not be made.
public struct ComparisonError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// Stopped by `shouldStop` (Ctrl-C).
    public var interrupted = false
    public init(_ description: String, interrupted: Bool = false) {
        self.description = description
        self.interrupted = interrupted
    }
}

/// One input channel of a node, fed a unit impulse, and the inter-aural
/// differences of the node's two output channels' responses.
public struct ImpulseDirection: Sendable {
    /// The channel's label in its input's layout (L, C, Ls …), prefixed
    /// with the port name when the node has several inputs (`in2:L`).
    public var label: String
    public var port: String
    public var channel: Int
    public var interaural: InterauralDifference
}

/// The impulse part of a comparison for one node.
public enum ImpulseTest: Sendable {
    /// One entry per input channel of every input port, in port and channel order.
    case measured([ImpulseDirection])
    /// Why the node could not be measured with impulses (the rest of the
    /// comparison stands).
    case skipped(String)

    public var directions: [ImpulseDirection] {
        if case .measured(let d) = self { return d }
        return []
    }
}

/// One of the two compared outputs.
public struct ComparedOutput: Sendable {
    public var node: String
    public var port: String
    public var typeID: String
    /// Measured as rendered (before matching).
    public var measurements: OutputMeasurements
    /// The gain applied before the spectral measures: 0 for A, the
    /// matching offset for B.
    public var gainDB: Double
    /// `measurements.bandLevelsDB` with `gainDB` applied.
    public var matchedBandLevelsDB: [[Double]]
    /// The true peak with `gainDB` applied.
    public var matchedTruePeakDBTP: Double
    public var impulses: ImpulseTest
}

/// The result of `RendererComparison.compare`.
public struct ComparisonResult: Sendable {
    public var graphFile: String
    public var sampleRate: Double
    public var a: ComparedOutput
    public var b: ComparedOutput
    /// Frames rendered (of the graph's rate).
    public var frames: Int
    public var ending: OfflineRenderer.Ending
    /// dB applied to B so that its integrated loudness equals A's
    /// (LUFS_A − LUFS_B); nil when either could not be measured (silent or
    /// under 400 ms): the spectra are then compared unmatched.
    public var matchingOffsetDB: Double?
    public var bands: ThirdOctaveBands
    /// Per channel, per band: B's matched level − A's level, dB (NaN when
    /// either is −inf).
    public var differenceDB: [[Double]]
    public var options: ComparisonOptions
    /// What the user should know (a duration chosen for an endless graph,
    /// a measure that could not be made).
    public var notes: [String]

    public var seconds: Double { Double(frames) / sampleRate }
}

/// Compares the outputs of two nodes of one graph, as a listener would
/// after matching their loudness (`agraph compare`).
///
/// How:
/// 1. The graph is cut down to A, B and the nodes feeding them (nothing
///    else is built: no file is written, no port opened), and a capture
///    sink (`CaptureSinkType`) is put behind A and behind B. It renders
///    offline (with the analysis passes a `loudness` node may need); after
///    each block the captured blocks go to one `OutputAnalyzer` each, so
///    nothing grows with the length.
/// 2. The matching offset is LUFS_A − LUFS_B. A gain is a constant factor
///    on every band's power, so B's matched band levels are its measured
///    ones plus the offset: the same numbers as measuring B after the gain.
///    Correlation does not change with gain.
/// 3. For each of A and B separately: for each channel k of each input
///    port, a graph of an impulse source (the port's format, a unit impulse
///    on channel k only, silence on the other ports), the node itself (same
///    type and parameters, not what fed it), and a capture is rendered for
///    `impulseSeconds`; the two output channels' responses give ILD and ITD
///    (`InterauralDifference`). Skipped, with the reason, for a node with
///    no input (a source), compressed input, input at another rate than the
///    graph's, or an output that is not 2 channels.
///
/// [main-thread]
public enum RendererComparison {
    /// - Parameters:
    ///   - shouldStop: polled between blocks (Ctrl-C).
    ///   - progress: seconds of the graph rendered so far (the main render).
    /// - Throws: `ComparisonError` naming what is wrong: an unknown node or
    ///   port, a sink, output that is not PCM, different channel counts or
    ///   rates, a render that failed or was interrupted.
    public static func compare(_ graph: ValidatedGraph, options: ComparisonOptions,
                               shouldStop: () -> Bool = { false },
                               progress: (Double) -> Void = { _ in }) throws(ComparisonError) -> ComparisonResult {
        let (ai, ap) = try locate(options.a, in: graph, flag: "--a")
        let (bi, bp) = try locate(options.b, in: graph, flag: "--b")
        let an = graph.nodes[ai], bn = graph.nodes[bi]
        let af = an.outputFormats[ap], bf = bn.outputFormats[bp]
        if af.channels != bf.channels {
            throw ComparisonError("'\(options.a)' has \(af.channels) channel\(af.channels == 1 ? "" : "s") (\(af.layout)) but '\(options.b)' has \(bf.channels) (\(bf.layout)): compare outputs with the same channel count (put a downmix or channel-map behind one)")
        }
        if af.sampleRate != bf.sampleRate {
            throw ComparisonError("'\(options.a)' runs at \(Int(af.sampleRate)) Hz but '\(options.b)' at \(Int(bf.sampleRate)) Hz: resample one of them")
        }
        guard options.blockFrames > 0, options.impulseSeconds > 0, options.maxITDSeconds >= 0 else {
            throw ComparisonError("block frames and the impulse length must be positive")
        }
        var notes: [String] = []

        // 1. The render: A, B, their ancestors and two captures.
        let captureA = BlockCapture(channels: af.channels), captureB = BlockCapture(channels: bf.channels)
        let sub = measurementGraph(graph, taps: [(ai, ap, captureA), (bi, bp, captureB)])
        var limit: Int?
        if let d = options.duration {
            limit = try frames(d, graph.sampleRate)
        } else if !sub.endlessSources.isEmpty {
            let endless = sub.endlessSources
            limit = try frames(options.endlessSeconds, graph.sampleRate)
            notes.append("\(endless.joined(separator: ", ")) never end\(endless.count == 1 ? "s" : ""): compared the first \(formatFixed(options.endlessSeconds, 1)) s (give a duration to choose)")
        }
        let analyzerA: OutputAnalyzer, analyzerB: OutputAnalyzer
        do {
            analyzerA = try OutputAnalyzer(format: af, fftSize: options.fftSize)
            analyzerB = try OutputAnalyzer(format: bf, fftSize: options.fftSize)
        } catch {
            throw ComparisonError("\(error)")
        }
        let result = try render(sub, blockFrames: options.blockFrames, limit: limit, shouldStop: shouldStop) { done in
            if let (p, n) = captureA.take() { analyzerA.add(interleaved: p, frames: n) }
            if let (p, n) = captureB.take() { analyzerB.add(interleaved: p, frames: n) }
            progress(Double(done) / graph.sampleRate)
        }
        let ma = analyzerA.finish(), mb = analyzerB.finish()

        // 2. Matching.
        var offset: Double?
        if ma.integratedLUFS.isFinite && mb.integratedLUFS.isFinite {
            offset = ma.integratedLUFS - mb.integratedLUFS
        } else {
            let which = [(ma, options.a), (mb, options.b)].filter { !$0.0.integratedLUFS.isFinite }.map { "'\($0.1)'" }
            notes.append("the integrated loudness of \(which.joined(separator: " and ")) could not be measured (silent, or shorter than 0.4 s): the spectra are compared without loudness matching")
        }
        for (m, name) in [(ma, options.a), (mb, options.b)] where m.seconds < 3 {
            notes.append("'\(name)' lasts \(formatFixed(m.seconds, 2)) s: its loudness range needs 3 s windows (EBU Tech 3342) and reads 0")
        }
        let gain = offset ?? 0
        let matchedB = mb.bandLevelsDB.map { $0.map { $0 + gain } }
        let difference = zip(matchedB, ma.bandLevelsDB).map { b, a in
            zip(b, a).map { x, y in x.isFinite && y.isFinite ? x - y : Double.nan }
        }

        // 3. Impulses.
        let ia = impulseTest(graph, node: ai, port: ap, options: options)
        let ib = impulseTest(graph, node: bi, port: bp, options: options)
        for (test, name) in [(ia, options.a), (ib, options.b)] {
            if case .skipped(let why) = test { notes.append("no ILD/ITD for '\(name)': \(why)") }
            let edge = test.directions.filter(\.interaural.itdAtSearchLimit).map(\.label)
            if !edge.isEmpty {
                notes.append("'\(name)': the ITD of \(edge.joined(separator: ", ")) lies at the edge of the ±\(formatFixed(options.maxITDSeconds * 1000, 2)) ms search range: the true delay may be longer")
            }
        }
        func output(_ i: Int, _ p: Int, _ m: OutputMeasurements, _ g: Double, _ levels: [[Double]], _ t: ImpulseTest) -> ComparedOutput {
            let n = graph.nodes[i]
            return ComparedOutput(node: n.id, port: n.outputPorts[p], typeID: n.descriptor.typeID, measurements: m, gainDB: g,
                                  matchedBandLevelsDB: levels, matchedTruePeakDBTP: m.truePeakDBTP + g, impulses: t)
        }
        return ComparisonResult(
            graphFile: graph.file, sampleRate: graph.sampleRate,
            a: output(ai, ap, ma, 0, ma.bandLevelsDB, ia), b: output(bi, bp, mb, gain, matchedB, ib),
            frames: result.frames, ending: result.ending, matchingOffsetDB: offset, bands: ma.bands,
            differenceDB: difference, options: options, notes: notes)
    }

    static func frames(_ seconds: Double, _ rate: Double) throws(ComparisonError) -> Int {
        do {
            return try FrameTime.frames(seconds: seconds, sampleRate: rate)
        } catch {
            throw ComparisonError("duration \(seconds) s: \(error)")
        }
    }

    /// The node and output port `name` (`id` or `id:port`) stands for, if
    /// it has PCM output. [main-thread]
    /// - Throws: `ComparisonError` for an unknown node or port, a sink, or
    ///   compressed output.
    public static func locate(_ name: String, in graph: ValidatedGraph, flag: String) throws(ComparisonError) -> (node: Int, port: Int) {
        ThreadRole.check(.main)
        var id = name
        var portName: String?
        if graph.node(name) == nil, let colon = name.lastIndex(of: ":") {
            id = String(name[..<colon])
            portName = String(name[name.index(after: colon)...])
        }
        guard let index = graph.nodes.firstIndex(where: { $0.id == id }) else {
            let ids = graph.nodes.map(\.id)
            let hint = closestMatch(to: id, in: ids).map { "did you mean '\($0)'? " } ?? ""
            throw ComparisonError("\(flag): no node '\(id)' in \(graph.file); \(hint)nodes: \(ids.joined(separator: ", "))")
        }
        let node = graph.nodes[index]
        guard !node.outputFormats.isEmpty else {
            let feeders = node.inputs.map { "'\(graph.nodes[$0].id)'" }
            throw ComparisonError("\(flag): '\(id)' (\(node.descriptor.typeID)) is a sink: it has no output to compare"
                + (feeders.isEmpty ? "" : "; compare the node feeding it (\(feeders.joined(separator: ", ")))"))
        }
        var port = 0
        if let portName {
            guard let p = node.outputPorts.firstIndex(of: portName) else {
                throw ComparisonError("\(flag): '\(id)' (\(node.descriptor.typeID)) has no output port '\(portName)'; its outputs: \(node.outputPorts.joined(separator: ", "))")
            }
            port = p
        }
        let format = node.outputFormats[port]
        guard format.encoding == .pcm else {
            throw ComparisonError("\(flag): '\(name)' (\(node.descriptor.typeID)) outputs \(format.encoding), not PCM audio: compare the output of the node that decodes it")
        }
        guard format.channels > 0 else {
            throw ComparisonError("\(flag): '\(name)' (\(node.descriptor.typeID)) outputs no channels")
        }
        return (index, port)
    }

    /// `graph` cut down to the tapped nodes and their ancestors, in order,
    /// with a capture sink (`CaptureSinkType`, ids `compare.a`, `compare.b`
    /// …) behind each tap: node index, output port, and where its blocks
    /// go. Nothing else of the graph is kept (no file-out, no jack-out).
    /// [main-thread]
    public static func measurementGraph(_ graph: ValidatedGraph, taps: [(node: Int, port: Int, capture: BlockCapture)]) -> ValidatedGraph {
        ThreadRole.check(.main)
        var (g, newIndex) = graph.cut(toFeedersOf: taps.map(\.node))
        for (k, (i, port, capture)) in taps.enumerated() {
            guard let index = newIndex[i] else { continue }
            var id = "compare." + (k < 26 ? String(UnicodeScalar(UInt8(97 + k))) : "\(k)")
            while graph.node(id) != nil { id += "_" }
            g.nodes.append(ValidatedGraph.Node(id: id, type: CaptureSinkType(capture: capture), parameters: NodeParameters(),
                                               inputs: [index], inputSourcePorts: [port],
                                               inputFormats: [graph.nodes[i].outputFormats[port]], inputPorts: ["in"]))
        }
        return g
    }

    /// Compiles `graph` (its analysis passes first) and renders it offline;
    /// `afterBlock` runs after every block with the frames so far.
    static func render(_ graph: ValidatedGraph, blockFrames: Int, limit: Int?, shouldStop: () -> Bool,
                       afterBlock: (Int) -> Void) throws(ComparisonError) -> OfflineRenderer.Result {
        let compiled: CompiledGraph?
        do {
            compiled = try OfflinePasses.compile(graph, maxFrames: blockFrames, limit: limit, shouldStop: shouldStop)
        } catch {
            throw ComparisonError("\(error)")
        }
        guard let compiled else { throw ComparisonError("interrupted", interrupted: true) }
        let result = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames)
            .run(maxFrames: limit, shouldStop: shouldStop, progress: afterBlock)
        if result.ending == .interrupted { throw ComparisonError("interrupted", interrupted: true) }
        if result.ending == .failed || !result.finishErrors.isEmpty {
            throw ComparisonError("rendering failed: " + result.finishErrors.joined(separator: "; "))
        }
        return result
    }

    /// Why node `index` cannot be fed impulses, or nil when it can.
    static func impulseObstacle(_ graph: ValidatedGraph, node index: Int, port: Int) -> String? {
        let node = graph.nodes[index]
        if node.inputs.isEmpty { return "'\(node.id)' (\(node.descriptor.typeID)) is a source: it has no input to send impulses into" }
        for (p, f) in node.inputFormats.enumerated() {
            if f.encoding != .pcm {
                return "its input '\(node.inputPorts[p])' carries \(f.encoding): an impulse cannot be sent into compressed input"
            }
            if f.sampleRate != graph.sampleRate {
                return "its input '\(node.inputPorts[p])' runs at \(Int(f.sampleRate)) Hz, not the graph's \(Int(graph.sampleRate)) Hz"
            }
            if f.channels < 1 { return "its input '\(node.inputPorts[p])' has no channels" }
        }
        let out = node.outputFormats[port]
        if out.channels != 2 {
            return "ILD and ITD are measured between 2 output channels (ears); '\(node.id)' outputs \(out.channels)"
        }
        return nil
    }

    static func impulseTest(_ graph: ValidatedGraph, node index: Int, port: Int, options: ComparisonOptions) -> ImpulseTest {
        if let why = impulseObstacle(graph, node: index, port: port) { return .skipped(why) }
        // The responses run at the output's rate (a rate island's may be lower).
        let rate = graph.nodes[index].outputFormats[port].sampleRate
        do {
            let responses = try impulseResponses(graph, node: index, port: port, seconds: options.impulseSeconds,
                                                 blockFrames: options.blockFrames)
            return .measured(responses.map { r in
                ImpulseDirection(label: r.label, port: r.port, channel: r.channel,
                                 interaural: InterauralDifference.measure(left: r.response[0], right: r.response[1],
                                                                          sampleRate: rate,
                                                                          maxLagSeconds: options.maxITDSeconds))
            })
        } catch {
            return .skipped(error.description)
        }
    }

    /// The response of node `index` (its type and parameters alone, fed
    /// by impulse sources) to a unit impulse on each channel of each input
    /// port, recorded on output `port` for `seconds`.
    /// - Returns: per input channel: its label (see `ImpulseDirection`),
    ///   port name, channel, and the response of each output channel.
    /// - Throws: `ComparisonError` when the node cannot be fed impulses
    ///   (a source, compressed input) or a render fails.
    /// [main-thread]
    public static func impulseResponses(_ graph: ValidatedGraph, node index: Int, port: Int = 0, seconds: Double,
                                        blockFrames: Int = 1024) throws(ComparisonError)
        -> [(label: String, port: String, channel: Int, response: [[Float]])] {
        ThreadRole.check(.main)
        let node = graph.nodes[index]
        if node.inputs.isEmpty || node.inputFormats.contains(where: { $0.encoding != .pcm }) {
            throw ComparisonError(impulseObstacle(graph, node: index, port: port) ?? "'\(node.id)' cannot be fed impulses")
        }
        let length = try frames(seconds, graph.sampleRate)
        let outFormat = node.outputFormats[port]
        var out: [(label: String, port: String, channel: Int, response: [[Float]])] = []
        for (p, format) in node.inputFormats.enumerated() {
            let labels = format.layout.channelLabels(count: format.channels)
            for k in 0..<format.channels {
                var nodes: [ValidatedGraph.Node] = []
                for (q, f) in node.inputFormats.enumerated() {
                    nodes.append(ValidatedGraph.Node(id: "compare.impulse\(q)", type: ImpulseSourceType(format: f, channel: q == p ? k : nil),
                                                     parameters: NodeParameters(), inputs: [], inputSourcePorts: [],
                                                     inputFormats: [], inputPorts: [], outputPorts: ["out"], outputFormats: [f]))
                }
                var m = node
                m.inputs = Array(0..<node.inputFormats.count)
                m.inputSourcePorts = m.inputs.map { _ in 0 }
                nodes.append(m)
                let capture = BlockCapture(channels: outFormat.channels)
                nodes.append(ValidatedGraph.Node(id: "compare.capture", type: CaptureSinkType(capture: capture), parameters: NodeParameters(),
                                                 inputs: [nodes.count - 1], inputSourcePorts: [port], inputFormats: [outFormat],
                                                 inputPorts: ["in"]))
                var g = graph
                g.nodes = nodes
                g.links = []
                var response = [[Float]](repeating: [], count: outFormat.channels)
                for c in response.indices { response[c].reserveCapacity(length) }
                _ = try render(g, blockFrames: blockFrames, limit: length, shouldStop: { false }) { _ in
                    guard let (samples, n) = capture.take() else { return }
                    for c in 0..<outFormat.channels {
                        for i in 0..<n { response[c].append(samples[i * outFormat.channels + c]) }
                    }
                }
                let label = k < labels.count ? labels[k] : "\(k + 1)"
                out.append((node.inputFormats.count > 1 ? "\(node.inputPorts[p]):\(label)" : label, node.inputPorts[p], k, response))
            }
        }
        return out
    }
}
