import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the render loop stops at the next block.
let interruptRequested = Atomic<Bool>(false)

struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
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

    func validate() throws {
        if let d = duration {
            guard d > 0 else { throw ValidationError("--duration must be a positive number of seconds") }
            do { _ = try FrameTime.frames(seconds: d, sampleRate: GraphValidator.sampleRateRange.upperBound) } catch {
                throw ValidationError("--duration \(error)")
            }
        }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
    }

    func run() throws {
        let g = try loadGraph(graph)
        let endless = g.endlessSources
        if duration == nil, !endless.isEmpty {
            printError("agraph: \(graph): \(endless.joined(separator: ", ")) never end\(endless.count == 1 ? "s" : ""); give --duration SECONDS")
            throw ExitCode.failure
        }
        let compiled: CompiledGraph
        do {
            // -o: a file-out node added to the graph model, fed like the sink.
            let recorded = try output.map { try g.recording(to: $0, sink: sink) } ?? g
            compiled = try GraphCompiler.compile(recorded, maxFrames: blockFrames)
        } catch {
            printError("agraph: \(graph): \(error)")
            throw ExitCode.failure
        }
        for n in compiled.notices { printError("agraph: \(n)") }
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }

        let rate = g.sampleRate
        let limit = try duration.map { d throws(FrameTime.OutOfRange) in try FrameTime.frames(seconds: d, sampleRate: rate) }
        let progress = ProgressReporter(total: limit, sampleRate: rate, enabled: !quiet)
        let start = MonotonicClock.seconds()
        let result = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames).run(
            maxFrames: limit,
            shouldStop: { interruptRequested.load(ordering: .relaxed) },
            progress: { progress.update($0) })
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

/// Whether the graph has a node that writes a file (a parameter of type
/// `.outputPath`, like `file-out`'s path).
func writesFiles(_ g: ValidatedGraph) -> Bool {
    g.nodes.contains { n in n.descriptor.parameters.contains { $0.type == .outputPath && n.parameters.string($0.name) != nil } }
}

/// A progress bar on a terminal, plain lines otherwise (stderr).
final class ProgressReporter {
    let total: Int?
    let sampleRate: Double
    let enabled: Bool
    let isTerminal = isatty(STDERR_FILENO) == 1
    let started = MonotonicClock.seconds()
    lazy var lastPrint = started
    var lastFrames = 0

    init(total: Int?, sampleRate: Double, enabled: Bool) {
        self.total = total
        self.sampleRate = sampleRate
        self.enabled = enabled
    }

    func update(_ frames: Int) {
        lastFrames = frames
        guard enabled else { return }
        let now = MonotonicClock.seconds()
        let interval = isTerminal ? 0.1 : 2.0
        guard now - lastPrint >= interval else { return }
        lastPrint = now
        let seconds = Double(frames) / sampleRate
        let speed = seconds / max(now - started, 1e-9)
        if isTerminal {
            var line = "\r"
            if let total, total > 0 {
                let fraction = min(Double(frames) / Double(total), 1)
                let width = 30
                let filled = Int(fraction * Double(width))
                line += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
                line += "\(formatFixed(seconds, 1)) / \(formatFixed(Double(total) / sampleRate, 1)) s"
            } else {
                line += "\(formatFixed(seconds, 1)) s"
            }
            line += "  \(formatFixed(speed, 0))x "
            writeStderr(line)
        } else {
            writeStderr("progress: \(formatFixed(seconds, 1)) s rendered, \(formatFixed(speed, 0))x real time\n")
        }
    }

    func finish() {
        if enabled && isTerminal && lastPrint > started { writeStderr("\n") }
    }
}
