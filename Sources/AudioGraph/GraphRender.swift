import Foundation
import Synchronization

/// Cancels a render from another thread: `cancel()` makes the render stop
/// at the next block and throw `RenderError.cancelled`, leaving no output
/// file. A render also stops when the Swift task it runs in is cancelled.
public final class RenderCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    /// Asks the render to stop. [any-thread]
    public func cancel() { flag.store(true, ordering: .relaxed) }

    /// Whether `cancel()` was called. [any-thread]
    public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

/// Where a render is, reported between blocks.
public struct RenderProgress: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// Analysis pass `pass` of `passes`: nodes that must hear their
        /// whole input first (a loudness target) measure it; nothing is
        /// written. Frames start again at 0 in each pass.
        case analysis(pass: Int, passes: Int)
        /// The render itself.
        case render
    }

    public var phase: Phase
    /// Frames of the graph rendered so far in this phase (at the graph's
    /// rate); never decreasing within a phase.
    public var frames: Int
    /// The frames the phase will render when known: the duration, or the
    /// longest source when every source says how long it is (a tone's
    /// `duration`, a file's length).
    public var totalFrames: Int?

    /// `frames / totalFrames` when the total is known.
    public var fraction: Double? { totalFrames.map { $0 > 0 ? Double(frames) / Double($0) : 1 } }
}

/// How to render.
public struct RenderOptions: Sendable {
    /// The sink whose input is captured (`render(seconds:)`) or written
    /// (`render(to:)`); nil: the graph's only sink.
    public var sink: String?
    /// Frames per block, 64…16384.
    public var blockFrames: Int
    /// Cancels the render from another thread.
    public var cancellation: RenderCancellation?
    /// Called between blocks on the thread that renders (the caller's,
    /// marked audio-thread while it renders; keep it short).
    public var progress: (@Sendable (RenderProgress) -> Void)?

    public init(sink: String? = nil, blockFrames: Int = 1024, cancellation: RenderCancellation? = nil,
                progress: (@Sendable (RenderProgress) -> Void)? = nil) {
        self.sink = sink
        self.blockFrames = blockFrames
        self.cancellation = cancellation
        self.progress = progress
    }
}

/// Audio rendered into memory (`Graph.render(seconds:)`).
public struct RenderedAudio: Sendable, Equatable {
    /// The rate of the captured stream in Hz (the graph's, unless the sink
    /// sits on a rate island).
    public var sampleRate: Double
    /// One array of samples per channel, all of the same length.
    public var channels: [[Float]]
    /// Frames per channel.
    public var frameCount: Int { channels.first?.count ?? 0 }
    /// What the render said that is not an error (an analysis node's gain,
    /// plugins' messages).
    public var notices: [String] = []
}

/// What a render to a file did (`Graph.render(to:)`).
public struct RenderSummary: Sendable {
    /// The file written (absolute).
    public var path: String
    /// Frames of the graph rendered, at the graph's rate.
    public var frames: Int
    /// Seconds rendered.
    public var seconds: Double
    /// Whether the streams ended or the duration was reached.
    public var ending: OfflineRenderer.Ending
    /// What the render said that is not an error.
    public var notices: [String]
}

extension Graph {
    /// Renders the graph offline into a sound file at `url`, fed by what
    /// reaches the sink (`options.sink`, or the only one), as `agraph render
    /// -o` does: the format follows the extension (`.wav`, `.flac`). The
    /// graph's own outputs (`file-out` nodes) are written too. Returns when
    /// every file is complete and in place; each is written under a
    /// temporary name first, so an existing file is replaced only by a
    /// whole one.
    /// - Parameter seconds: stop after this long; nil: when every source
    ///   ends (a graph with an endless source needs it).
    /// - Throws: `RenderError`; when cancelled, no output file is left.
    /// [main-thread; blocks the calling thread (any of the program's own,
    /// not the audio or a worker thread) until done]
    @discardableResult
    public func render(to url: URL, seconds: Double? = nil, options: RenderOptions = RenderOptions())
        throws(RenderError) -> RenderSummary {
        ThreadRole.check(.main)
        guard url.isFileURL else { throw RenderError.output(path: url.absoluteString, reason: "not a file URL") }
        let path = GraphPaths.resolve(url.path, against: GraphPaths.currentDirectory())
        let sink = try chooseSink(options.sink)
        let recorded: ValidatedGraph
        do { recorded = try validated.recording(to: path, sink: sink.id) } catch {
            throw RenderError.output(path: path, reason: Self.recordingReason(error.description, path: path))
        }
        let run = try Self.run(recorded, seconds: seconds, options: options, capture: nil)
        return RenderSummary(path: path, frames: run.frames, seconds: Double(run.frames) / sampleRate, ending: run.ending,
                             notices: run.notices)
    }

    /// Renders the graph offline into memory: what reaches the sink
    /// (`options.sink`, or the only one). The graph's own outputs
    /// (`file-out` nodes) are written too. Everything is kept in memory:
    /// about 4 bytes × channels × frames.
    /// - Parameter seconds: stop after this long; nil: when every source
    ///   ends (a graph with an endless source needs it).
    /// - Throws: `RenderError`; when cancelled, no output file is left.
    /// [main-thread; blocks the calling thread until done]
    public func render(seconds: Double? = nil, options: RenderOptions = RenderOptions()) throws(RenderError) -> RenderedAudio {
        ThreadRole.check(.main)
        let sink = try chooseSink(options.sink)
        guard let source = sink.inputs.first, let port = sink.inputSourcePorts.first, let format = sink.inputFormats.first else {
            throw RenderError.notAudio(sink: sink.id, reason: "nothing is linked to it")
        }
        guard format.encoding == .pcm else {
            throw RenderError.notAudio(sink: sink.id, reason: "it receives \(format.encoding), not audio")
        }
        let capture = BlockCapture(channels: format.channels)
        var g = validated
        var id = "capture"
        var n = 1
        while g.node(id) != nil { n += 1; id = "capture\(n)" }
        g.nodes.append(ValidatedGraph.Node(id: id, type: CaptureSinkType(capture: capture), parameters: NodeParameters(),
                                           inputs: [source], inputSourcePorts: [port], inputFormats: [format],
                                           inputPorts: ["in"]))
        let collector = Collector(channels: format.channels)
        let run = try Self.run(g, seconds: seconds, options: options, capture: (capture, collector))
        var channels = collector.samples
        // Past the duration by what file sinks drop at their start: cut.
        if let limit = run.limit, format.sampleRate == sampleRate {
            for c in channels.indices where channels[c].count > limit { channels[c].removeLast(channels[c].count - limit) }
        }
        return RenderedAudio(sampleRate: format.sampleRate, channels: channels, notices: run.notices)
    }

    /// The sink to capture or record: `id`, or the only one.
    func chooseSink(_ id: String?) throws(RenderError) -> ValidatedGraph.Node {
        let sinks = validated.sinks
        if let id {
            guard let s = sinks.first(where: { $0.id == id }) else { throw RenderError.unknownSink(id, sinks: sinks.map(\.id)) }
            return s
        }
        guard let first = sinks.first else { throw RenderError.noSink }
        guard sinks.count == 1 else { throw RenderError.severalSinks(sinks.map(\.id)) }
        return first
    }

    /// `recording(to:sink:)`'s reason without its own "cannot write PATH: ".
    static func recordingReason(_ text: String, path: String) -> String {
        let prefix = "cannot write \(path): "
        var reason = text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
        let advice = "; write to another file"
        if reason.hasSuffix(advice) { reason.removeLast(advice.count) }
        return reason
    }

    /// Samples taken from a `BlockCapture` between blocks.
    final class Collector {
        var samples: [[Float]]
        init(channels: Int) { samples = Array(repeating: [], count: channels) }

        /// Appends the block `capture` holds, de-interleaved.
        /// [audio-thread; the offline render's, between blocks]
        func take(_ capture: BlockCapture) {
            guard let (p, n) = capture.take() else { return }
            let k = samples.count
            for c in 0..<k {
                samples[c].reserveCapacity(samples[c].count + n)
                for i in 0..<n { samples[c].append(p[i * k + c]) }
            }
        }

        func reserve(_ frames: Int) {
            for c in samples.indices { samples[c].reserveCapacity(frames) }
        }
    }

    struct Run {
        var frames: Int
        var limit: Int?
        var ending: OfflineRenderer.Ending
        var notices: [String]
    }

    /// The offline path of `agraph render`: analysis passes, compile,
    /// render, finish; a cancelled render's partial outputs removed.
    static func run(_ g: ValidatedGraph, seconds: Double?, options: RenderOptions,
                    capture: (BlockCapture, Collector)?) throws(RenderError) -> Run {
        guard (64...16384).contains(options.blockFrames) else { throw RenderError.invalidBlockFrames(options.blockFrames) }
        let rate = g.sampleRate
        var limit: Int?
        if let seconds {
            guard seconds > 0, seconds.isFinite else { throw RenderError.invalidDuration(seconds) }
            do { limit = try FrameTime.frames(seconds: seconds, sampleRate: rate) } catch { throw RenderError.invalidDuration(seconds) }
        }
        let endless = g.endlessSources
        if limit == nil, !endless.isEmpty { throw RenderError.endlessSources(endless) }
        var total = limit
        if let known = g.knownSeconds, let frames = try? FrameTime.frames(seconds: known, sampleRate: rate) {
            total = min(total ?? frames, frames)
        }
        // Room for up to ten minutes at once; a longer render grows as it goes.
        if let total, let (_, collector) = capture { collector.reserve(min(total, Int(rate) * 600)) }
        let cancellation = options.cancellation
        let shouldStop = { (cancellation?.isCancelled ?? false) || Task.isCancelled }
        let report = options.progress
        let outputs = PartialOutputs(g)

        let compiled: CompiledGraph
        do {
            let made = try OfflinePasses.compile(
                g, maxFrames: options.blockFrames, limit: limit, shouldStop: shouldStop,
                progress: { p in
                    report?(RenderProgress(phase: .analysis(pass: p.pass, passes: p.passes), frames: p.frames, totalFrames: total))
                })
            guard let made else {
                outputs.removeNew()
                throw RenderError.cancelled(framesRendered: 0)
            }
            compiled = made
        } catch let e as RenderError {
            throw e
        } catch let e as EngineError {
            outputs.removeNew()
            throw RenderError.setup(nodeID: e.nodeID, message: e.message)
        } catch {
            outputs.removeNew()
            throw RenderError.setup(nodeID: nil, message: "\(error)")
        }
        var result = OfflineRenderer(engine: compiled.engine, blockFrames: options.blockFrames).run(
            maxFrames: OfflinePasses.framesToRender(limit, compiled), shouldStop: shouldStop,
            progress: { frames in
                if let (c, collector) = capture { collector.take(c) }
                let shown = limit.map { min(frames, $0) } ?? frames
                report?(RenderProgress(phase: .render, frames: shown, totalFrames: total))
            })
        if let limit { result.frames = min(result.frames, limit) }
        let notices = compiled.notices + result.notices + PluginLog.drain()
        if result.ending == .interrupted {
            outputs.removeNew()
            throw RenderError.cancelled(framesRendered: result.frames)
        }
        if result.ending == .failed || !result.finishErrors.isEmpty {
            throw RenderError.failed(messages: result.finishErrors, notices: notices)
        }
        return Run(frames: result.frames, limit: limit, ending: result.ending, notices: notices)
    }
}

/// The output files of a graph (`.outputPath` parameters) and the partial
/// files beside them (`NAME.agraph-XXXXXX.part`, see `PendingOutput`)
/// that were there before a render: a cancelled render removes the ones
/// it made. [main-thread]
struct PartialOutputs {
    /// Per output: its folder, the partial names' prefix, those present.
    private var outputs: [(folder: String, prefix: String, before: Set<String>)] = []

    init(_ g: ValidatedGraph) {
        for n in g.nodes {
            for (_, value) in n.descriptor.filePaths(n.parameters, of: .outputPath) {
                let path = GraphPaths.resolve(value, against: g.directory)
                let folder = GraphPaths.folder(of: path)
                let prefix = (path.split(separator: "/").last.map(String.init) ?? path) + ".agraph-"
                outputs.append((folder, prefix, Self.partials(in: folder, prefix: prefix)))
            }
        }
    }

    static func partials(in folder: String, prefix: String) -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return Set(names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".part") })
    }

    /// Removes the partial files made since `init`.
    func removeNew() {
        for o in outputs {
            for name in Self.partials(in: o.folder, prefix: o.prefix).subtracting(o.before) {
                try? FileManager.default.removeItem(atPath: o.folder + "/" + name)
            }
        }
    }
}
