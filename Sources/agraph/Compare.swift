import ArgumentParser
import AudioGraph
import AudioGraphAnalysis
#if canImport(Glibc)
import Glibc
#endif

/// `agraph compare`: the outputs of two nodes of a graph, loudness-matched
/// and measured; the work is `RendererComparison` (AudioGraphAnalysis).
struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare the outputs of two nodes of a graph, loudness-matched: loudness, peaks, 1/3-octave spectra, correlation, ILD/ITD.",
        discussion: """
            Renders the graph offline (only NODE A, NODE B and what feeds them: no file is written) \
            and measures both outputs: integrated loudness and loudness range (ITU-R BS.1770-4, EBU \
            Tech 3342), true peak, and the offset in dB that gives B the loudness of A. B is matched \
            by that offset before the spectral measures: one-third-octave band levels per output \
            channel (per ear) and their differences B − A. The correlation of each left/right \
            channel pair is given for each output. Then each node is fed a unit impulse on each of \
            its input channels in turn (the node alone, same type and parameters) and, for 2-channel \
            outputs, the inter-aural level difference (dB, positive: left louder) and time difference \
            (µs, positive: left ear leads) of its response are given per direction; a node with no \
            input or with compressed input is compared without them, and says why. \
            A and B must have the same channel count and PCM output; NODE:PORT picks another output \
            port. Without --duration the graph renders to its end, or for 30 s when a source never \
            ends. --report DIR writes DIR/report.json (every number; keys in docs/compare.md) and \
            DIR/index.html (SVG plots, no script, nothing from the network).
            """)

    @Argument(help: "Graph file.") var graph: String

    @Option(name: .customLong("a"), help: ArgumentHelp("The first node (the reference).", valueName: "NODE"))
    var a: String

    @Option(name: .customLong("b"), help: ArgumentHelp("The second node (matched to A's loudness).", valueName: "NODE"))
    var b: String

    @Option(name: .shortAndLong, help: "Seconds to render (default: to the end; 30 s for endless graphs).")
    var duration: Double?

    @Option(help: ArgumentHelp("Write report.json and index.html into this folder (created when missing).", valueName: "DIR"))
    var report: String?

    @Option(help: "Frames per block (64…16384).")
    var blockFrames: Int = 1024

    @Flag(help: "No progress output.")
    var quiet = false

    @Option(name: .customLong("set"), help: ParameterOverrides.help)
    var settings: [String] = []

    func validate() throws {
        _ = try ParameterOverrides.parse(settings)
        if let d = duration {
            guard d > 0 else { throw ValidationError("--duration must be a positive number of seconds") }
            do { _ = try FrameTime.frames(seconds: d, sampleRate: GraphValidator.sampleRateRange.upperBound) } catch {
                throw ValidationError("--duration \(error)")
            }
        }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
    }

    func run() throws {
        let g = try loadGraph(graph, overrides: try ParameterOverrides.parse(settings))
        if let report {
            // Checked before the render: the report must not land on the graph or its inputs.
            let folder = GraphPaths.resolve(report, against: GraphPaths.currentDirectory())
            for name in ComparisonResult.reportFiles {
                if let conflict = g.outputConflict(folder + "/" + name) {
                    printError("agraph: --report \(report): \(conflict); choose another folder")
                    throw ExitCode.failure
                }
            }
        }
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        var options = ComparisonOptions(a: a, b: b, duration: duration)
        options.blockFrames = blockFrames
        // The endless graph's default only when a source never ends: a
        // stream whose length is not known shows no total rather than a false one.
        let total = duration ?? knownSeconds(g) ?? (g.endlessSources.isEmpty ? nil : options.endlessSeconds)
        let progress = ProgressBar(label: "compare", total: total, enabled: !quiet)
        let result: ComparisonResult
        do {
            result = try RendererComparison.compare(g, options: options,
                                                    shouldStop: { interruptRequested.load(ordering: .relaxed) },
                                                    progress: { progress.update($0) })
        } catch {
            progress.finish()
            if error.interrupted {
                printError("agraph: interrupted; nothing was written")
                throw ExitCode(130)
            }
            printError("agraph: \(graph): \(error)")
            throw ExitCode.failure
        }
        progress.finish()
        print(result.summary, terminator: "")
        if let report {
            do {
                try result.writeReport(to: report)
            } catch {
                printError("agraph: \(error)")
                throw ExitCode.failure
            }
            if !quiet { printError("wrote \(report)/report.json and \(report)/index.html") }
        }
    }
}
