import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphLive
import AudioGraphTools
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct Abx: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "abx",
        abstract: "Blind ABX trials on an ab node: listen to A, B and X, say whether X is A or B.",
        discussion: """
            Plays GRAPH live, as agraph run does (the running JACK server, or an embedded one), and \
            drives its ab node NODE: A is its input --a (in0), B its input --b (in1). In each trial X \
            is A or B, drawn at random and not shown; --seed N makes the draws repeatable (SplitMix64 \
            of N, one draw per trial: X is A when the draw's top bit is 0).

            Commands on stdin, one per line:
              a, b, x     listen to A, B or X
              x=a, x=b    answer that X is A, or B (or: answer a, answer b)
              q           quit early; so do end of input and Ctrl-C
              help        these commands
            After an answer the next trial starts on A; the trial under way when quitting is not \
            counted. A switch between A and B crossfades (the node's crossfadeMs, through its select). A switch \
            to or from X fades out to silence and in again (select -1 between), every time: no switch \
            tells by its sound which input X is. A command for what is already playing changes nothing.

            At the end it prints each trial, the score, and the probability of scoring at least as well \
            by guessing (one-sided binomial, p = 0.5); --json FILE writes them too: graph, node, seed, \
            and per trial X, the answer, whether it was right, the seconds taken and what was listened to.
            """)

    @Argument(help: "Graph file.") var graph: String

    @Option(help: "The ab node to drive.") var node: String

    @Option(help: "Number of trials, 1 to 1000.") var trials = 16

    @Option(help: "The ab node's input that is A.") var a = 0

    @Option(help: "The ab node's input that is B.") var b = 1

    @Option(help: "Seed of the random draws (0 to 2^53 - 1); default: a random one, written to --json.")
    var seed: UInt64?

    @Option(help: "Write the results to this JSON file.") var json: String?

    @OptionGroup var jack: LiveOptions

    @Option(name: .customLong("set"), help: ParameterOverrides.help)
    var settings: [String] = []

    /// Seeds up to 2^53 - 1 survive JSON's numbers exactly.
    static let maxSeed: UInt64 = (1 << 53) - 1

    func validate() throws {
        guard (1...1000).contains(trials) else { throw ValidationError("--trials must be from 1 to 1000") }
        guard a >= 0, b >= 0 else { throw ValidationError("--a and --b are input numbers, 0 or more") }
        guard a != b else { throw ValidationError("--a and --b must be different inputs (both are \(a))") }
        if let seed, seed > Self.maxSeed { throw ValidationError("--seed must be from 0 to \(Self.maxSeed)") }
        _ = try ParameterOverrides.parse(settings)
    }

    func run() throws {
        let binder = JACKPortBinder()
        let g = try loadGraph(graph, registry: standardRegistry(binder), overrides: try ParameterOverrides.parse(settings))
        let abNodes = g.nodes.filter { $0.descriptor.typeID == "ab" }.map(\.id)
        let list = abNodes.isEmpty ? "none" : abNodes.joined(separator: ", ")
        guard let n = g.node(node) else {
            printError("agraph: no node '\(node)' in \(graph); its ab nodes: \(list)")
            throw ExitCode.failure
        }
        guard n.descriptor.typeID == "ab" else {
            printError("agraph: '\(node)' is a \(n.descriptor.typeID) node, not an ab node; ab nodes in \(graph): \(list)")
            throw ExitCode.failure
        }
        let inputs = n.parameters.integer("inputs") ?? 2
        for (flag, input) in [("--a", a), ("--b", b)] where input >= inputs {
            printError("agraph: \(flag) \(input): '\(node)' has \(inputs) inputs (in0…in\(inputs - 1))")
            throw ExitCode.failure
        }
        // The results file is checked before the first trial: a listener's
        // answers must not be lost to a name that cannot be written at the end.
        if let json {
            let absolute = GraphPaths.resolve(json, against: GraphPaths.currentDirectory())
            let folder = (absolute as NSString).deletingLastPathComponent
            guard access(folder, W_OK) == 0 else {
                printError("agraph: --json \(json): cannot write in the folder \(folder)")
                throw ExitCode.failure
            }
            if let conflict = g.outputConflict(absolute) {
                printError("agraph: --json \(json): \(conflict); write the results to another file")
                throw ExitCode.failure
            }
            if let problem = FileChecks.writableFileProblem(absolute) {
                printError("agraph: --json \(json): \(problem); write the results to a file")
                throw ExitCode.failure
            }
        }
        let seed = self.seed ?? UInt64.random(in: 0...Self.maxSeed)
        let xs = ABXDraw.draws(seed: seed, count: trials)

        let live = try jack.start(g, binder: binder)
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGPIPE, SIG_IGN)

        let session = ABXSession(player: LiveABXPlayer(live: live, node: node), inputA: a, inputB: b, xIsB: xs)
        var input = LineReader()
        func say(_ messages: [ABXSession.Message]) {
            for m in messages {
                switch m {
                case .reply(let text): writeStdout(text + "\n")
                case .error(let text): printError(text)
                }
            }
        }
        var exitCode: Int32 = 0
        do {
            say(try session.begin())
            while !session.finished {
                switch input.poll(timeout: 0.1) {
                case .lines(let lines): for line in lines { say(session.handle(line)) }
                case .ended(let lines): say(session.endOfInput(lines))
                }
                if interruptRequested.load(ordering: .relaxed) { break }
                if let reason = live.shutdownReason {
                    printError("agraph: the JACK server shut down\(reason.isEmpty ? "" : ": \(reason)")")
                    exitCode = 1
                    break
                }
                if live.graph.endlessSources.isEmpty && live.engine.isFinished {
                    printError("agraph: the graph's streams ended")
                    break
                }
            }
        } catch {
            printError("agraph: \(error)")
            exitCode = 1
        }
        let errors = live.stop()
        for e in errors { printError("agraph: \(e)") }

        let results = session.results
        writeStdout(results.text)
        if let json {
            let report = results.json(graph: graph, node: node, inputA: a, inputB: b, seed: seed, planned: trials)
            do {
                // A temporary name, then a rename: never written through a link.
                try AtomicFile.write(Array((report.rendered() + "\n").utf8), to: json)
            } catch {
                printError("agraph: --json \(error)")
                exitCode = 1
            }
        }
        if !errors.isEmpty { exitCode = 1 }
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}
