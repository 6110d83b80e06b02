import AudioGraph
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `agraph render --each`: the graph rendered once per input, each render
/// an `agraph render` child process (`RenderChild`), `jobs` at a time.
///
/// Why child processes rather than several engines on threads of this one:
/// a render is a whole process's worth of state (the interrupt flag, the
/// plugin log, one worker thread per engine, libraries of plugins and
/// vendors that may keep globals of their own), and a crash or a runaway
/// decoder on one damaged input must not take the others with it. A child
/// is exactly the `agraph render` a user would run, with `--set`
/// overrides: the same validation, the same messages, its own exit status.
///
/// Outputs: each `file-out` sink of the graph is redirected into
/// `--output-dir`, named after the input's file name without its extension
/// and the sink's extension: `a/b/song.flac` → `DIR/song.wav`; with several
/// file sinks, `DIR/song.SINK.wav` for each. Two inputs that would give the
/// same name, or an output that is an input or the graph, are refused
/// before anything is rendered (`BatchPlan`, checked on the whole list, so
/// every shard refuses alike). A render writes `DIR/.song.wav.partial-HOST-PID`
/// (PID: this process) and the file is renamed to `song.wav` when the
/// render has succeeded; a failed or interrupted render leaves nothing of
/// its own in DIR. Each render dies with this process (`AGRAPH_BATCH_PARENT`),
/// and what a batch killed outright left is removed by the next one
/// (`BatchLeftovers.removeDead`).
///
/// Nothing here prints or exits: what happens on the way goes to a message
/// sink (`Event`), what became of every input is the `Report`, and a batch
/// refused before it starts throws `BatchRunError`. [main-thread]
public struct BatchRun {
    /// What to render, as `agraph render GRAPH --each … --output-dir DIR` asks.
    public struct Options {
        /// The graph file.
        public var graph: String
        /// The `--set` items as typed, passed on to every render.
        public var settings: [String]
        /// The same items parsed, for the plan.
        public var overrides: [ParameterOverride]
        /// Where each input goes (`--each NODE.PARAM`).
        public var address: ParameterAddress
        /// The inputs as given, in order; quoted patterns not yet expanded.
        public var inputs: [String]
        /// `--output-dir` as given.
        public var outputDir: String
        /// Renders at a time (at least 1).
        public var jobs: Int
        public var shard: BatchShard?
        /// `--duration`, passed on to every render.
        public var duration: Double?
        /// `--block-frames`, passed on to every render.
        public var blockFrames: Int
        /// `--allow-damaged`, passed on to every render.
        public var allowDamaged: Bool
        /// The `agraph` executable each render runs (agraph passes
        /// `RenderChild.currentExecutable`).
        public var executable: String
        /// The node types the graph is planned with.
        public var registry: NodeRegistry

        /// [any-thread]
        public init(graph: String, settings: [String], overrides: [ParameterOverride], address: ParameterAddress,
                    inputs: [String], outputDir: String, jobs: Int, shard: BatchShard? = nil, duration: Double? = nil,
                    blockFrames: Int = 1024, allowDamaged: Bool = false, executable: String, registry: NodeRegistry) {
            self.graph = graph
            self.settings = settings
            self.overrides = overrides
            self.address = address
            self.inputs = inputs
            self.outputDir = outputDir
            self.jobs = jobs
            self.shard = shard
            self.duration = duration
            self.blockFrames = blockFrames
            self.allowDamaged = allowDamaged
            self.executable = executable
            self.registry = registry
        }
    }

    /// Why one input did not render, or what a damaged one's render said.
    public struct Failure: Equatable {
        public var input: String
        public var reasons: [String]

        /// [any-thread]
        public init(input: String, reasons: [String]) {
            self.input = input
            self.reasons = reasons
        }
    }

    /// What the batch says while it runs, in order.
    public enum Event: Equatable {
        /// Partial renders of dead batches were removed from the output folder.
        case removedLeftovers(names: [String], outputDir: String)
        /// The shard has no inputs (`shardNote`: " (shard I/N of M inputs)" or "").
        case noInputs(shardNote: String)
        /// Input `input` (the `index`th to finish of `count`) was rendered
        /// to `outputs` (as shown under --output-dir) in `seconds`; its
        /// render said `warnings`.
        case rendered(index: Int, count: Int, input: String, outputs: [String], seconds: Double, warnings: [String])
        /// Input `input` failed; why is in the report.
        case failed(index: Int, count: Int, input: String)

        /// Whether agraph shows it with `--quiet` too.
        public var shownWhenQuiet: Bool {
            if case .removedLeftovers = self { return true }
            return false
        }

        /// The event as agraph writes it on stderr. [any-thread]
        public var lines: [String] {
            switch self {
            case .removedLeftovers(let names, let outputDir):
                return ["agraph: removed \(names.count) partial render\(names.count == 1 ? "" : "s") left in \(outputDir) by an earlier batch that no longer runs: \(names.joined(separator: ", "))"]
            case .noInputs(let shardNote):
                return ["agraph: no inputs to render\(shardNote)"]
            case .rendered(let k, let n, let input, let outputs, let seconds, let warnings):
                return ["[\(k)/\(n)] \(input) -> \(outputs.joined(separator: ", ")) (\(formatFixed(seconds, 1)) s)"]
                    + warnings.map { "  \($0)" }
            case .failed(let k, let n, let input):
                return ["[\(k)/\(n)] \(input): failed"]
            }
        }
    }

    /// What became of the inputs of one run.
    public struct Report {
        /// The inputs of this shard.
        public var count = 0
        /// The inputs of every shard.
        public var allCount = 0
        public var rendered = 0
        public var finished = 0
        public var started = 0
        /// Renders ended by the cancellation.
        public var stopped = 0
        /// The inputs that failed, in the order they finished.
        public var failures: [Failure] = []
        /// Inputs rendered with damage allowed (`--allow-damaged`,
        /// `onError: skip`), with what each render said of it.
        public var damaged: [Failure] = []
        /// The final paths written (absolute), in the order they finished.
        public var outputs: [String] = []
        /// Whether the cancel check said stop.
        public var interrupted = false
        /// From the start of planning to the end.
        public var seconds = 0.0
        public var outputDir = ""
        /// " (shard I/N of M inputs)" or "".
        public var shardNote = ""

        /// The summary as agraph writes it on stderr: the count rendered
        /// (not with `quiet`), then, `quiet` or not, every damaged input,
        /// every failed one with its reasons, and the interruption.
        /// [any-thread]
        public func lines(quiet: Bool) -> [String] {
            var out: [String] = []
            let s = count == 1 ? "" : "s"
            if !quiet {
                out.append("agraph: rendered \(rendered) of \(count) input\(s)\(shardNote) into \(outputDir) in \(formatFixed(seconds, 1)) s")
            }
            // Listed with --quiet too: a damaged input is never passed over in silence.
            if !damaged.isEmpty {
                out.append("agraph: \(damaged.count) of \(count) input\(s) rendered with damage concealed or skipped:")
                for d in damaged {
                    out.append("  \(d.input):")
                    for line in d.reasons { out.append("    \(line)") }
                }
            }
            if !failures.isEmpty {
                out.append("agraph: \(failures.count) of \(count) input\(s) failed:")
                for f in failures {
                    out.append("  \(f.input): \(f.reasons.first ?? "failed")")
                    for line in f.reasons.dropFirst() { out.append("    \(line)") }
                }
            }
            if interrupted {
                out.append("agraph: interrupted: \(rendered) rendered, \(stopped) stopped, \(count - started) not started; nothing partial is left in \(outputDir)")
            }
            return out
        }
    }

    public let options: Options

    /// [any-thread]
    public init(_ options: Options) { self.options = options }

    /// The plan's side of the options. [main-thread]
    public var planner: BatchPlan {
        ThreadRole.check(.main)
        return BatchPlan(graph: options.graph, outputDir: options.outputDir, overrides: options.overrides,
                         address: options.address, registry: options.registry)
    }

    /// A batch planned and its output folder ready: what `render` renders.
    public struct Prepared {
        /// The inputs of this shard, with their outputs.
        public let items: [BatchPlan.Item]
        /// The graph's file sinks.
        public let sinks: [BatchPlan.Sink]
        /// The inputs of every shard.
        public let allCount: Int
        /// " (shard I/N of M inputs)" or "".
        public let shardNote: String
        /// When planning started (`MonotonicClock.seconds()`).
        let start: Double
    }

    /// Plans, and prepares the output folder: created when missing, its
    /// partial renders of dead batches removed. Nothing is rendered yet.
    /// [main-thread]
    /// - Parameter message: what happens, as it happens
    ///   (`.removedLeftovers`, `.noInputs`).
    /// - Throws: `BatchRunError` when the plan is refused or the output
    ///   folder cannot be written (nothing is rendered then).
    public func prepare(message: (Event) -> Void) throws(BatchRunError) -> Prepared {
        ThreadRole.check(.main)
        let start = MonotonicClock.seconds()
        let cwd = GraphPaths.currentDirectory()
        let planner = self.planner
        let sinks: [BatchPlan.Sink], graphReads: [String], all: [BatchPlan.Item]
        let directory = GraphPaths.resolve(options.outputDir, against: cwd)
        do throws(BatchPlan.Refused) {
            let inputs = try planner.expand(options.inputs)
            guard let first = inputs.first else { throw BatchPlan.Refused(lines: []) }
            let graphDirectory = GraphPaths.folder(of: GraphPaths.resolve(options.graph, against: cwd))
            (sinks, graphReads) = try planner.graphFiles(firstInput: GraphPaths.resolve(first, against: cwd), graphDirectory: graphDirectory)
            all = try planner.plan(inputs: inputs, sinks: sinks, graphReads: graphReads, directory: directory, cwd: cwd)
        } catch {
            throw .refused(error.lines)
        }
        let items = options.shard?.select(all) ?? all
        do {
            _ = try FileChecks.createFolders(above: directory + "/.")
        } catch {
            throw .outputDirectory("agraph: --output-dir: \(error)")
        }
        if let problem = FileChecks.writableFileProblem(directory + "/.agraph-batch-check") {
            throw .outputDirectory("agraph: --output-dir \(options.outputDir): \(problem)")
        }
        let removed = BatchLeftovers.removeDead(in: directory)
        if !removed.isEmpty { message(.removedLeftovers(names: removed, outputDir: options.outputDir)) }
        let shardNote = options.shard.map { " (shard \($0.description) of \(all.count) inputs)" } ?? ""
        if items.isEmpty { message(.noInputs(shardNote: shardNote)) }
        return Prepared(items: items, sinks: sinks, allCount: all.count, shardNote: shardNote, start: start)
    }

    /// Renders every input of a prepared batch and says what became of
    /// each. Once `cancelled` says true no render is started, each running
    /// one is sent SIGTERM, and this returns when they have stopped.
    /// [main-thread]
    /// - Parameters:
    ///   - cancelled: polled between renders and every 50 ms while they run.
    ///   - message: each input as it finishes (`.rendered`, `.failed`).
    public func render(_ prepared: Prepared, cancelled: () -> Bool, message: (Event) -> Void) -> Report {
        ThreadRole.check(.main)
        var report = render(prepared.items, sinks: prepared.sinks, planner: planner, cancelled: cancelled, message: message)
        report.count = prepared.items.count
        report.allCount = prepared.allCount
        report.outputDir = options.outputDir
        report.shardNote = prepared.shardNote
        report.interrupted = cancelled()
        report.seconds = MonotonicClock.seconds() - prepared.start
        return report
    }

    /// Runs the renders, `jobs` at a time, until every item has finished
    /// or, once cancelled, every started render has stopped (a SIGTERM is
    /// passed on to each).
    private func render(_ items: [BatchPlan.Item], sinks: [BatchPlan.Sink], planner: BatchPlan,
                        cancelled: () -> Bool, message: (Event) -> Void) -> Report {
        var report = Report()
        var running: [(item: BatchPlan.Item, child: RenderChild)] = []
        var passedOn = false
        while true {
            let interrupted = cancelled()
            if interrupted, !passedOn {
                passedOn = true
                for r in running { r.child.terminate() }
            }
            while !interrupted, running.count < max(options.jobs, 1), report.started < items.count {
                let item = items[report.started]
                report.started += 1
                do {
                    running.append((item, try RenderChild(executable: options.executable, arguments: arguments(for: item, sinks: sinks))))
                } catch {
                    report.finished += 1
                    report.failures.append(Failure(input: item.input, reasons: [error.description]))
                    message(.failed(index: report.finished, count: items.count, input: item.input))
                }
            }
            if running.isEmpty { return report }
            var fds = running.filter { $0.child.stderrFD >= 0 }.map { pollfd(fd: $0.child.stderrFD, events: Int16(POLLIN), revents: 0) }
            if fds.isEmpty { usleep(20_000) } else { _ = poll(&fds, nfds_t(fds.count), 50) }
            var still: [(item: BatchPlan.Item, child: RenderChild)] = []
            for r in running {
                r.child.readAvailable()
                guard r.child.reap() else { still.append(r); continue }
                r.child.readAvailable()
                report.finished += 1
                switch finish(r.item, r.child, planner: planner, cancelled: cancelled) {
                case .rendered:
                    report.rendered += 1
                    report.outputs += r.item.outputs.map(\.final)
                    let damage = r.child.lines.filter { $0.hasSuffix("(onError: skip)") }
                    if !damage.isEmpty { report.damaged.append(Failure(input: r.item.input, reasons: damage)) }
                    message(.rendered(index: report.finished, count: items.count, input: r.item.input,
                                      outputs: r.item.outputs.map { planner.shown($0.final) },
                                      seconds: MonotonicClock.seconds() - r.child.started, warnings: r.child.lines))
                case .stopped:
                    report.stopped += 1
                case .failed(let reasons):
                    report.failures.append(Failure(input: r.item.input, reasons: reasons))
                    message(.failed(index: report.finished, count: items.count, input: r.item.input))
                }
            }
            running = still
        }
    }

    private enum Outcome {
        case rendered
        case stopped
        case failed([String])
    }

    /// Moves a finished render's outputs into place, or removes what it
    /// left, and says which.
    private func finish(_ item: BatchPlan.Item, _ child: RenderChild, planner: BatchPlan, cancelled: () -> Bool) -> Outcome {
        if child.exitStatus == 0 {
            var reasons: [String] = []
            for o in item.outputs where access(o.temporary, F_OK) != 0 {
                reasons.append("the render ended without writing \(planner.shown(o.final))")
            }
            if reasons.isEmpty {
                for o in item.outputs where rename(o.temporary, o.final) != 0 {
                    reasons.append("cannot move the finished \(o.temporary) to \(o.final): \(FileChecks.errorText(errno))")
                }
            }
            if reasons.isEmpty { return .rendered }
            removeTemporaries(item)
            return .failed(reasons + child.lines)
        }
        removeTemporaries(item)
        if cancelled(), child.exitStatus == 130 || child.signal == SIGTERM || child.signal == SIGINT {
            return .stopped
        }
        // The child's own last line, "GRAPH: N errors", says nothing more.
        let graph = options.graph
        var reasons = child.lines.filter { line in
            guard line.hasPrefix(graph + ": ") else { return true }
            let words = line.dropFirst(graph.count + 2).split(separator: " ")
            return !(words.count == 2 && Int(words[0]) != nil && (words[1] == "error" || words[1] == "errors"))
        }
        if reasons.isEmpty {
            reasons = [child.signal.map { "the render was ended by signal \($0)" } ?? "the render failed (exit status \(child.exitStatus ?? -1))"]
        }
        return .failed(reasons.map { Self.truthful($0, item, planner: planner) })
    }

    /// A failed render's line as the user should read it once its
    /// temporaries are gone: the render's internal name
    /// (`DIR/.song.wav.partial-PID`) becomes the output's own, and "kept
    /// in ….part" becomes what is true now: deleted, the output unchanged.
    /// [main-thread]
    static func truthful(_ line: String, _ item: BatchPlan.Item, planner: BatchPlan) -> String {
        var text = line
        for o in item.outputs where text.contains(o.temporary) {
            let name = planner.shown(o.final)
            let state = access(o.final, F_OK) == 0 ? "\(name) is unchanged" : "\(name) was not written"
            // FileSink's "…; N frames (S s) were written and kept in T; F is unchanged".
            if let m = text.firstMatch(of: #/; (\d+) frames \(([0-9.]+) s\) were written and kept in .*$/#) {
                text = String(text[..<m.range.lowerBound]) + "; the \(m.output.2) s rendered were deleted; \(state)"
            }
            // "…: rendering did not complete; the S s written are kept in T, and F is unchanged".
            if let m = text.firstMatch(of: #/; the ([0-9.]+) s written are kept in .*$/#) {
                text = String(text[..<m.range.lowerBound]) + "; the \(m.output.1) s rendered were deleted; \(state)"
            }
            text = text.replacingOccurrences(of: o.temporary, with: name)
        }
        return text
    }

    /// Removes an item's temporary outputs: the finished file and the
    /// render's own `…agraph-XXXXXX.part` (kept by an interrupted render).
    private func removeTemporaries(_ item: BatchPlan.Item) {
        for o in item.outputs {
            unlink(o.temporary)
            let folder = GraphPaths.folder(of: o.temporary)
            let prefix = (o.temporary.split(separator: "/").last.map(String.init) ?? o.temporary) + ".agraph-"
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in names where name.hasPrefix(prefix) && name.hasSuffix(".part") {
                unlink(folder + "/" + name)
            }
        }
    }

    /// The child's command line: the user's `--set`s, then the input and
    /// the sinks' temporary paths (as JSON strings, so that no file name is
    /// read as a number or `true`).
    func arguments(for item: BatchPlan.Item, sinks: [BatchPlan.Sink]) -> [String] {
        var a = ["render", options.graph, "--quiet", "--block-frames", String(options.blockFrames)]
        if options.allowDamaged { a.append("--allow-damaged") }
        if let d = options.duration { a += ["--duration", String(d)] }
        for s in options.settings { a += ["--set", s] }
        a += ["--set", "\(options.address)=\(JSONOut.string(item.path).rendered())"]
        for (o, sink) in zip(item.outputs, sinks) {
            a += ["--set", "\(sink.id).path=\(JSONOut.string(o.temporary).rendered())", "--set", "\(sink.id).format=\(sink.format)"]
        }
        return a
    }
}

/// Why `BatchRun.run` rendered nothing.
public enum BatchRunError: Error, CustomStringConvertible {
    /// The plan was refused (`BatchPlan.Refused`'s lines).
    case refused([String])
    /// The output folder cannot be made or written in.
    case outputDirectory(String)

    /// The lines agraph writes on stderr.
    public var lines: [String] {
        switch self {
        case .refused(let lines): return lines
        case .outputDirectory(let line): return [line]
        }
    }

    public var description: String { lines.joined(separator: "\n") }
}
