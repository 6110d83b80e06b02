import ArgumentParser
import AudioGraph
import AudioGraphTools
import AudioGraphJACK
import AudioGraphPlugins
import AudioGraphSndFile
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the render loop stops at the next block.
let interruptRequested = Atomic<Bool>(false)

struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render a graph offline, as fast as the machine allows.",
        discussion: """
            Ends when every source reaching a sink has ended, or at --duration. A graph with endless \
            sources (a tone without a duration, a looping file) needs --duration. Ctrl-C stops early; \
            files written so far are closed and valid.
            """)

    @Argument(help: "Graph file.") var graph: String

    @Option(name: .shortAndLong, help: "Stop after this many seconds.")
    var duration: Double?

    @Option(name: .shortAndLong, help: "Also write what reaches the sink to this WAV or FLAC file.")
    var output: String?

    @Option(help: "With -o: the sink to record when the graph has several.")
    var sink: String?

    @Option(help: "Frames per block (64…16384).")
    var blockFrames: Int = 1024

    @Flag(help: "No progress output.")
    var quiet = false

    @Flag(help: "Render damaged inputs anyway: every node's onError becomes skip (damage concealed or the source ended there), and the exit status is 0; each damaged input is still listed on stderr, --quiet or not.")
    var allowDamaged = false

    @Option(name: .customLong("set"), help: ParameterOverrides.help)
    var settings: [String] = []

    @Option(parsing: .upToNextOption,
            help: ArgumentHelp("Render once per input file, each put into NODE.PARAM like --set (patterns in quotes are expanded: 'src.path=music/*.flac'); needs --output-dir.",
                               valueName: "NODE.PARAM=FILE> <FILE"))
    var each: [String] = []

    @Option(help: "With --each: the folder of the outputs, one per input named after it (created when missing).")
    var outputDir: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "With --each: renders at a time (default: the processors this process may use).")
    var jobs: Int?

    @Option(help: ArgumentHelp("With --each: render only inputs I, I+N, I+2N… (0 ≤ I < N) of the list, for a job array (--shard $SLURM_ARRAY_TASK_ID/16).",
                               valueName: "I/N"))
    var shard: String?

    func validate() throws {
        _ = try ParameterOverrides.parse(settings)
        if each.isEmpty {
            for (given, flag) in [(outputDir != nil, "--output-dir"), (jobs != nil, "-j/--jobs"), (shard != nil, "--shard")] where given {
                throw ValidationError("\(flag) goes with --each NODE.PARAM=FILES…")
            }
        } else {
            _ = try BatchRequest.inputs(each)
            if outputDir == nil { throw ValidationError("--each needs --output-dir DIR: the folder for the outputs") }
            if output != nil { throw ValidationError("-o goes without --each: with --each the graph's file-out sinks are written into --output-dir") }
            if sink != nil { throw ValidationError("--sink goes without --each: with --each every file-out sink is written into --output-dir") }
            if let jobs, !(1...1024).contains(jobs) { throw ValidationError("-j must be from 1 to 1024 renders at a time") }
            if let shard { _ = try Shard(parsing: shard) }
        }
        if let d = duration {
            guard d > 0 else { throw ValidationError("--duration must be a positive number of seconds") }
            do { _ = try FrameTime.frames(seconds: d, sampleRate: GraphValidator.sampleRateRange.upperBound) } catch {
                throw ValidationError("--duration \(error)")
            }
        }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
    }

    func run() throws {
        // A render of a batch dies with the batch (RenderChild).
        if let value = getenv(BatchLeftovers.parentVariable), let parent = pid_t(String(cString: value)) {
            BatchLeftovers.dieWithParent(parent)
        }
        if !each.isEmpty {
            let (address, inputs) = try BatchRequest.inputs(each)
            let request = BatchRequest(
                graph: graph, settings: settings, address: address, inputs: inputs, outputDir: outputDir ?? ".",
                jobs: jobs ?? BatchRequest.availableProcessors(), shard: try shard.map { try Shard(parsing: $0) },
                duration: duration, blockFrames: blockFrames, quiet: quiet, allowDamaged: allowDamaged)
            return try Batch(request).run()
        }
        var g = try loadGraph(graph, overrides: try ParameterOverrides.parse(settings))
        if allowDamaged { g = Self.allowingDamage(g) }
        let endless = g.endlessSources
        if duration == nil, !endless.isEmpty {
            printError("agraph: \(graph): \(endless.joined(separator: ", ")) never end\(endless.count == 1 ? "s" : ""); give --duration SECONDS")
            throw ExitCode.failure
        }
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        let rate = g.sampleRate
        let limit = try duration.map { d throws(FrameTime.OutOfRange) in try FrameTime.frames(seconds: d, sampleRate: rate) }
        let known = knownSeconds(g)
        let progress = ProgressBar(total: limit.map { l in min(Double(l) / rate, known ?? .infinity) } ?? known, enabled: !quiet)
        let start = MonotonicClock.seconds()
        let compiled: CompiledGraph
        do {
            // -o: a file-out node added to the graph model, fed like the sink.
            let recorded = try output.map { try g.recording(to: $0, sink: sink) } ?? g
            // Nodes that must hear the whole input first (a loudness target)
            // get their analysis passes here; nothing is written in them.
            let passes = OfflinePasses.passCount(recorded)
            var pass = 0
            let made = try OfflinePasses.compile(
                recorded, maxFrames: blockFrames, limit: limit,
                shouldStop: { interruptRequested.load(ordering: .relaxed) },
                progress: { p in
                    if p.pass != pass {
                        pass = p.pass
                        progress.restart(label: "analysis \(p.pass)/\(passes)", total: progress.total)
                    }
                    progress.update(Double(p.frames) / rate)
                })
            guard let made else {
                progress.finish()
                printError("agraph: interrupted during the analysis pass; nothing was written")
                throw ExitCode(130)
            }
            compiled = made
            if passes > 0 { progress.restart(label: "render", total: progress.total) }
        } catch let e as ExitCode {
            throw e
        } catch {
            progress.finish()
            printError("agraph: \(graph): \(error)")
            throw ExitCode.failure
        }
        progress.finish()
        for n in compiled.notices { printError("agraph: \(n)") }
        // With --duration, on past it by what file sinks drop at their start
        // (a limiter's lookahead): each file is the duration long.
        var result = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames).run(
            maxFrames: OfflinePasses.framesToRender(limit, compiled),
            shouldStop: { interruptRequested.load(ordering: .relaxed) },
            progress: { progress.update(Double($0) / rate) })
        if let limit { result.frames = min(result.frames, limit) }
        let elapsed = MonotonicClock.seconds() - start
        progress.finish()
        for e in result.finishErrors { printError("agraph: \(e)") }
        for n in result.notices { printError("agraph: \(n)") }
        for line in PluginLog.drain() { printError("agraph: \(line)") }   // plugins' messages (agraph.log/1)
        let seconds = Double(result.frames) / rate
        if !quiet {
            let speed = elapsed > 0 ? seconds / elapsed : 0
            let why = switch result.ending {
            case .endOfStream: "end of stream"
            case .durationReached: "duration reached"
            case .interrupted: "interrupted"
            case .failed: "failed"
            }
            printError("rendered \(result.frames) frames (\(formatFixed(seconds, 3)) s) in \(formatFixed(elapsed, 3)) s, \(formatFixed(speed, 1))x real time; \(why)")
            if output == nil && !writesFiles(g) {
                let sinks = g.sinks.map { "'\($0.id)' (\($0.descriptor.typeID))" }.joined(separator: ", ")
                printError("agraph: nothing was written: the graph's sinks (\(sinks)) keep nothing offline; add -o FILE to record what reaches a sink")
            }
            if let output, result.finishErrors.isEmpty, result.ending != .interrupted { printError("wrote \(output)") }
        }
        if !result.finishErrors.isEmpty || result.ending == .failed { throw ExitCode.failure }
        if result.ending == .interrupted { throw ExitCode(130) }
    }
}

extension Render {
    /// `--allow-damaged`: the graph with every `onError` parameter (`file`,
    /// `media`, `ffmpeg`…) set to "skip". [main-thread]
    static func allowingDamage(_ graph: ValidatedGraph) -> ValidatedGraph {
        var g = graph
        for i in g.nodes.indices where g.nodes[i].descriptor.parameters.contains(where: { $0.name == "onError" }) {
            g.nodes[i].parameters.values["onError"] = .string("skip")
        }
        return g
    }
}

/// Whether the graph has a node that writes a file (a parameter of type
/// `.outputPath`, like `file-out`'s path).
func writesFiles(_ g: ValidatedGraph) -> Bool {
    g.nodes.contains { n in n.descriptor.parameters.contains { $0.type == .outputPath && n.parameters.string($0.name) != nil } }
}

/// The seconds a render of `g` will last when every source says how long
/// it is (`ValidatedGraph.knownSeconds`). [main-thread]
func knownSeconds(_ g: ValidatedGraph) -> Double? { g.knownSeconds }
