import ArgumentParser
import AudioGraph
import AudioGraphTools
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `agraph render GRAPH --each NODE.PARAM=FILES… --output-dir DIR` was
/// asked, as parsed from the command line.
struct BatchRequest {
    var graph: String
    /// The `--set` items, as typed (passed on to every render).
    var settings: [String]
    /// Where each input goes.
    var address: ParameterAddress
    /// The inputs as given, in order; patterns not yet expanded.
    var inputs: [String]
    var outputDir: String
    var jobs: Int
    var shard: Shard?
    var duration: Double?
    var blockFrames: Int
    var quiet: Bool
    /// `--allow-damaged`, passed on to every render.
    var allowDamaged = false

    /// Splits `--each NODE.PARAM=FILE FILE…` into the address and the
    /// files. [main-thread]
    /// - Throws: `ValidationError` naming `--each` when the first item is
    ///   not `NODE.PARAM=…` or no file is given.
    static func inputs(_ each: [String]) throws(ValidationError) -> (ParameterAddress, [String]) {
        guard let first = each.first else { throw ValidationError("--each needs NODE.PARAM=FILES…") }
        let head = try ParameterOverrides.parse(first, flag: "--each")
        let inputs = (head.text.isEmpty ? [] : [head.text]) + each.dropFirst()
        if inputs.isEmpty {
            throw ValidationError("--each '\(first)': no input files; write --each \(head.node).\(head.parameter)=FILE FILE…")
        }
        return (ParameterAddress(node: head.node, parameter: head.parameter, element: head.element), inputs)
    }

    /// Renders at a time by default: the processors this process may run
    /// on (its CPU affinity, as a Slurm allocation sets it, and cgroup
    /// quotas where Foundation reads them). [any thread]
    static func availableProcessors() -> Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }
}

/// `--shard I/N`: inputs I, I+N, I+2N… of the list, in the order given, so
/// that N machines of a job array each render their own part of one
/// catalogue without talking to each other.
struct Shard: Equatable {
    var index: Int
    var count: Int

    /// [main-thread]
    /// - Throws: `ValidationError` naming `--shard` unless `text` is `I/N`
    ///   with whole numbers 0 ≤ I < N.
    init(parsing text: String) throws(ValidationError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]),
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && !$0.hasPrefix("+") }) else {
            throw ValidationError("--shard '\(text)': expected I/N, two whole numbers with 0 ≤ I < N (e.g. --shard 0/4 … --shard 3/4)")
        }
        guard n >= 1 else { throw ValidationError("--shard '\(text)': N, the number of shards, must be at least 1") }
        guard (0..<n).contains(i) else {
            throw ValidationError("--shard '\(text)': I must be from 0 to \(n - 1); shards are numbered from 0, like SLURM_ARRAY_TASK_ID of --array=0-\(n - 1) and JOB_COMPLETION_INDEX")
        }
        index = i
        count = n
    }

    /// The elements of this shard, in order.
    func select<T>(_ items: [T]) -> [T] {
        stride(from: index, to: items.count, by: count).map { items[$0] }
    }

    var description: String { "\(index)/\(count)" }
}

/// `agraph render --each`: the graph rendered once per input, each render
/// an `agraph render` child process of this executable (`RenderChild`),
/// `jobs` at a time.
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
/// before anything is rendered (checked on the whole list, so every shard
/// refuses alike). A render writes `DIR/.song.wav.partial-HOST-PID` (PID:
/// this process) and the file is renamed to `song.wav` when the render has
/// succeeded; a failed or interrupted render leaves nothing of its own in
/// DIR. Each render dies with this process (`BatchLeftovers.dieWithParent`),
/// and what a batch killed outright left is removed by the next one
/// (`BatchLeftovers.removeDead`).
///
/// [main-thread]
struct Batch {
    let request: BatchRequest

    init(_ request: BatchRequest) { self.request = request }

    typealias Sink = BatchPlan.Sink
    typealias Item = BatchPlan.Item

    /// The plan's side of the request.
    var planner: BatchPlan {
        get throws {
            BatchPlan(graph: request.graph, outputDir: request.outputDir, overrides: try ParameterOverrides.parse(request.settings),
                      address: request.address, registry: standardRegistry())
        }
    }

    /// Why one input did not render.
    struct Failure {
        var input: String
        var reasons: [String]
    }

    /// What became of the inputs of one run.
    struct Tally {
        var rendered = 0
        var finished = 0
        var started = 0
        var stopped = 0
        var failures: [Failure] = []
        /// Inputs rendered with damage allowed (`--allow-damaged`, `onError:
        /// skip`), with what each render said of it.
        var damaged: [Failure] = []
    }

    /// Plans, renders every input of the shard, and reports.
    /// - Throws: `ExitCode.failure` when the plan is refused (nothing is
    ///   rendered then) or an input failed; `ExitCode(130)` when
    ///   interrupted.
    func run() throws {
        let start = MonotonicClock.seconds()
        let cwd = GraphPaths.currentDirectory()
        let planner = try self.planner
        let inputs: [String], sinks: [Sink], graphReads: [String], all: [Item]
        let directory = GraphPaths.resolve(request.outputDir, against: cwd)
        do {
            inputs = try planner.expand(request.inputs)
            guard let first = inputs.first else { throw ExitCode.failure }
            let graphDirectory = GraphPaths.folder(of: GraphPaths.resolve(request.graph, against: cwd))
            (sinks, graphReads) = try planner.graphFiles(firstInput: GraphPaths.resolve(first, against: cwd), graphDirectory: graphDirectory)
            all = try planner.plan(inputs: inputs, sinks: sinks, graphReads: graphReads, directory: directory, cwd: cwd)
        } catch let refused as BatchPlan.Refused {
            for line in refused.lines { printError(line) }
            throw ExitCode.failure
        }
        let items = request.shard?.select(all) ?? all
        do {
            _ = try FileChecks.createFolders(above: directory + "/.")
        } catch {
            printError("agraph: --output-dir: \(error)")
            throw ExitCode.failure
        }
        if let problem = FileChecks.writableFileProblem(directory + "/.agraph-batch-check") {
            printError("agraph: --output-dir \(request.outputDir): \(problem)")
            throw ExitCode.failure
        }
        let removed = BatchLeftovers.removeDead(in: directory)
        if !removed.isEmpty {
            printError("agraph: removed \(removed.count) partial render\(removed.count == 1 ? "" : "s") left in \(request.outputDir) by an earlier batch that no longer runs: \(removed.joined(separator: ", "))")
        }
        let shardNote = request.shard.map { " (shard \($0.description) of \(all.count) inputs)" } ?? ""
        if items.isEmpty, !request.quiet { printError("agraph: no inputs to render\(shardNote)") }

        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        let tally = render(items, sinks: sinks)

        let s = items.count == 1 ? "" : "s"
        if !request.quiet {
            let elapsed = MonotonicClock.seconds() - start
            printError("agraph: rendered \(tally.rendered) of \(items.count) input\(s)\(shardNote) into \(request.outputDir) in \(formatFixed(elapsed, 1)) s")
        }
        // Listed with --quiet too: a damaged input is never passed over in silence.
        if !tally.damaged.isEmpty {
            printError("agraph: \(tally.damaged.count) of \(items.count) input\(s) rendered with damage concealed or skipped:")
            for d in tally.damaged {
                printError("  \(d.input):")
                for line in d.reasons { printError("    \(line)") }
            }
        }
        if !tally.failures.isEmpty {
            printError("agraph: \(tally.failures.count) of \(items.count) input\(s) failed:")
            for f in tally.failures {
                printError("  \(f.input): \(f.reasons.first ?? "failed")")
                for line in f.reasons.dropFirst() { printError("    \(line)") }
            }
        }
        if interruptRequested.load(ordering: .relaxed) {
            printError("agraph: interrupted: \(tally.rendered) rendered, \(tally.stopped) stopped, \(items.count - tally.started) not started; nothing partial is left in \(request.outputDir)")
            throw ExitCode(130)
        }
        if !tally.failures.isEmpty { throw ExitCode.failure }
    }

    /// Runs the renders, `jobs` at a time, until every item has finished
    /// or, once interrupted, every started render has stopped (a SIGTERM
    /// is passed on to each).
    private func render(_ items: [Item], sinks: [Sink]) -> Tally {
        var tally = Tally()
        var running: [(item: Item, child: RenderChild)] = []
        var passedOn = false
        while true {
            let interrupted = interruptRequested.load(ordering: .relaxed)
            if interrupted, !passedOn {
                passedOn = true
                for r in running { r.child.terminate() }
            }
            while !interrupted, running.count < request.jobs, tally.started < items.count {
                let item = items[tally.started]
                tally.started += 1
                do {
                    running.append((item, try RenderChild(arguments: arguments(for: item, sinks: sinks))))
                } catch {
                    tally.finished += 1
                    tally.failures.append(Failure(input: item.input, reasons: [error.description]))
                    report(tally.finished, of: items.count, item, failed: true)
                }
            }
            if running.isEmpty { return tally }
            var fds = running.filter { $0.child.stderrFD >= 0 }.map { pollfd(fd: $0.child.stderrFD, events: Int16(POLLIN), revents: 0) }
            if fds.isEmpty { usleep(20_000) } else { _ = poll(&fds, nfds_t(fds.count), 50) }
            var still: [(item: Item, child: RenderChild)] = []
            for r in running {
                r.child.readAvailable()
                guard r.child.reap() else { still.append(r); continue }
                r.child.readAvailable()
                tally.finished += 1
                switch finish(r.item, r.child) {
                case .rendered:
                    tally.rendered += 1
                    let damage = r.child.lines.filter { $0.hasSuffix("(onError: skip)") }
                    if !damage.isEmpty { tally.damaged.append(Failure(input: r.item.input, reasons: damage)) }
                    report(tally.finished, of: items.count, r.item, failed: false,
                           seconds: MonotonicClock.seconds() - r.child.started, warnings: r.child.lines)
                case .stopped:
                    tally.stopped += 1
                case .failed(let reasons):
                    tally.failures.append(Failure(input: r.item.input, reasons: reasons))
                    report(tally.finished, of: items.count, r.item, failed: true)
                }
            }
            running = still
        }
    }

    /// One line per finished input on stderr (failures only with --quiet,
    /// and their reasons at the end).
    private func report(_ k: Int, of n: Int, _ item: Item, failed: Bool, seconds: Double = 0, warnings: [String] = []) {
        guard !request.quiet else { return }
        if failed {
            printError("[\(k)/\(n)] \(item.input): failed")
            return
        }
        let names = item.outputs.map { shown($0.final) }.joined(separator: ", ")
        printError("[\(k)/\(n)] \(item.input) -> \(names) (\(formatFixed(seconds, 1)) s)")
        for w in warnings { printError("  \(w)") }
    }

    /// An output path as the user would write it: under --output-dir as given.
    func shown(_ path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return request.outputDir.hasSuffix("/") ? request.outputDir + name : request.outputDir + "/" + name
    }

    enum Outcome {
        case rendered
        case stopped
        case failed([String])
    }

    /// Moves a finished render's outputs into place, or removes what it
    /// left, and says which.
    private func finish(_ item: Item, _ child: RenderChild) -> Outcome {
        if child.exitStatus == 0 {
            var reasons: [String] = []
            for o in item.outputs where access(o.temporary, F_OK) != 0 {
                reasons.append("the render ended without writing \(shown(o.final))")
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
        if interruptRequested.load(ordering: .relaxed), child.exitStatus == 130 || child.signal == SIGTERM || child.signal == SIGINT {
            return .stopped
        }
        // The child's own last line, "GRAPH: N errors", says nothing more.
        var reasons = child.lines.filter { line in
            guard line.hasPrefix(request.graph + ": ") else { return true }
            let words = line.dropFirst(request.graph.count + 2).split(separator: " ")
            return !(words.count == 2 && Int(words[0]) != nil && (words[1] == "error" || words[1] == "errors"))
        }
        if reasons.isEmpty {
            reasons = [child.signal.map { "the render was ended by signal \($0)" } ?? "the render failed (exit status \(child.exitStatus ?? -1))"]
        }
        return .failed(reasons.map { truthful($0, item) })
    }

    /// A failed render's line as the user should read it once its
    /// temporaries are gone: the render's internal name
    /// (`DIR/.song.wav.partial-PID`) becomes the output's own, and "kept
    /// in ….part" becomes what is true now: deleted, the output unchanged.
    func truthful(_ line: String, _ item: Item) -> String {
        var text = line
        for o in item.outputs where text.contains(o.temporary) {
            let name = shown(o.final)
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
    private func removeTemporaries(_ item: Item) {
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
    private func arguments(for item: Item, sinks: [Sink]) -> [String] {
        var a = ["render", request.graph, "--quiet", "--block-frames", String(request.blockFrames)]
        if request.allowDamaged { a.append("--allow-damaged") }
        if let d = request.duration { a += ["--duration", String(d)] }
        for s in request.settings { a += ["--set", s] }
        a += ["--set", "\(request.address)=\(JSONOut.string(item.path).rendered())"]
        for (o, sink) in zip(item.outputs, sinks) {
            a += ["--set", "\(sink.id).path=\(JSONOut.string(o.temporary).rendered())", "--set", "\(sink.id).format=\(sink.format)"]
        }
        return a
    }
}
