import ArgumentParser
import AudioGraph
import AudioGraphJACK
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct Abx: ParsableCommand {
    static let configuration = CommandConfiguration(
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

        let session = ABXSession(live: live, node: node, inputA: a, inputB: b, xIsB: xs)
        var exitCode: Int32 = 0
        do {
            try session.begin()
            while !session.finished {
                session.poll(timeout: 0.1)
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

/// The random draws of X. [any thread]
enum ABXDraw {
    /// SplitMix64 (Steele, Lea, Flood 2014) of `seed`, one draw per trial:
    /// true (X is B) when the draw's top bit is 1.
    static func draws(seed: UInt64, count: Int) -> [Bool] {
        var state = seed
        return (0..<count).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return z >> 63 == 1
        }
    }
}

/// One answered trial.
struct ABXTrial {
    var number: Int
    /// Whether X was B (else A).
    var xIsB: Bool
    var answeredB: Bool
    var seconds: Double
    /// What was listened to, in order ("a", "b", "x").
    var listened: [String]
    var correct: Bool { xIsB == answeredB }
}

/// The trials answered, the score and its probability by guessing.
struct ABXResults {
    var trials: [ABXTrial] = []
    var quitEarly = false

    var correct: Int { trials.filter(\.correct).count }

    /// P(at least `correct` right of `trials.count` by guessing).
    var pValue: Double { Self.binomialTail(atLeast: correct, of: trials.count) }

    /// P(K ≥ k) for K binomial(n, 1/2): Σ_{i=k…n} C(n, i) / 2ⁿ, summed
    /// term by term from 2⁻ⁿ (n ≤ 1000 stays within Double's range). [any thread]
    static func binomialTail(atLeast k: Int, of n: Int) -> Double {
        guard k > 0 else { return 1 }
        guard k <= n else { return 0 }
        var term = pow(0.5, Double(n))     // C(n, 0) / 2ⁿ
        var sum = 0.0
        for i in 0...n {
            if i >= k { sum += term }
            term = term * Double(n - i) / Double(i + 1)
        }
        return min(sum, 1)
    }

    static func letter(_ isB: Bool) -> String { isB ? "B" : "A" }

    /// Each trial, then the score and the probability, for stdout.
    var text: String {
        var out = ""
        for t in trials {
            out += "trial \(t.number): X was \(Self.letter(t.xIsB)), answered \(Self.letter(t.answeredB)): "
                + (t.correct ? "right" : "wrong") + " (\(formatFixed(t.seconds, 1)) s)\n"
        }
        let n = trials.count
        if n == 0 { return out + "score: no trial answered\n" }
        out += "score: \(correct) of \(n) right\(quitEarly ? " (quit early)" : "")\n"
        out += "p = \(String(format: "%.6g", pValue)): the probability of \(correct) or more right of \(n) by guessing (one-sided binomial, p = 0.5)\n"
        return out
    }

    func json(graph: String, node: String, inputA: Int, inputB: Int, seed: UInt64, planned: Int) -> JSONOut {
        .object([
            ("graph", .string(graph)),
            ("node", .string(node)),
            ("a", .number(Double(inputA))),
            ("b", .number(Double(inputB))),
            ("seed", .number(Double(seed))),
            ("trialsPlanned", .number(Double(planned))),
            ("completed", .bool(!quitEarly && trials.count == planned)),
            ("trials", .array(trials.map { t in
                .object([
                    ("trial", .number(Double(t.number))),
                    ("x", .string(Self.letter(t.xIsB))),
                    ("xInput", .number(Double(t.xIsB ? inputB : inputA))),
                    ("answer", .string(Self.letter(t.answeredB))),
                    ("correct", .bool(t.correct)),
                    ("seconds", .number(t.seconds)),
                    ("listened", .array(t.listened.map { .string($0) })),
                ])
            })),
            ("answered", .number(Double(trials.count))),
            ("correct", .number(Double(correct))),
            ("pValue", .number(pValue)),
        ])
    }
}

/// The ABX prompt: reads stdin's lines, switches the ab node, records the
/// answers. [main-thread]
final class ABXSession {
    let live: RunningGraph
    let node: String
    let inputA: Int, inputB: Int
    let xIsB: [Bool]
    private(set) var results = ABXResults()
    private(set) var finished = false

    /// What plays: "a", "b" or "x".
    private var playing = "a"
    private var trialStarted = 0.0
    private var listened: [String] = []
    private var lines = LineSplitter()
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    static let help = """
        a, b, x     listen to A, B or X
        x=a, x=b    answer that X is A, or B (or: answer a, answer b)
        q           quit early (the trial under way is not counted)
        help        these commands
        """

    init(live: RunningGraph, node: String, inputA: Int, inputB: Int, xIsB: [Bool]) {
        self.live = live
        self.node = node
        self.inputA = inputA
        self.inputB = inputB
        self.xIsB = xIsB
    }

    var trial: Int { results.trials.count }

    /// Puts A on and asks the first question.
    func begin() throws {
        try select(inputA)
        playing = "a"
        startTrial()
    }

    private func startTrial() {
        trialStarted = MonotonicClock.seconds()
        listened = []
        writeStdout("trial \(trial + 1) of \(xIsB.count): listen with a, b, x; answer with x=a or x=b (help: all commands)\n")
    }

    /// Waits up to `timeout` for stdin and runs the whole lines it got.
    func poll(timeout: Double) {
        var fds = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&fds, 1, Int32(timeout * 1000)) > 0 else { return }
        let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
        if n <= 0 {
            for line in lines.finish() where !finished { handle(line) }
            if !finished { quit() }
            return
        }
        for line in lines.feed(buffer[0..<n]) where !finished { handle(line) }
    }

    private func handle(_ line: LineSplitter.Line) {
        guard case .text(let text) = line else {
            printError("error: \(line.errorMessage ?? "line too long")")
            return
        }
        let words = text.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        do {
            switch words {
            case "": return
            case "a", "b", "x": try listen(words)
            case "x=a", "x = a", "answer a": try answer(isB: false)
            case "x=b", "x = b", "answer b": try answer(isB: true)
            case "q", "quit": quit()
            case "help", "?": writeStdout(Self.help + "\n")
            default: printError("error: unknown command '\(text)'; commands: a, b, x, x=a, x=b, q, help")
            }
        } catch {
            printError("error: \(error)")
        }
    }

    /// The input a letter names in this trial.
    private func input(_ letter: String) -> Int {
        switch letter {
        case "a": inputA
        case "b": inputB
        default: xIsB[trial] ? inputB : inputA
        }
    }

    private func listen(_ letter: String) throws {
        listened.append(letter)
        try move(to: letter)
        writeStdout("playing \(letter.uppercased())\n")
    }

    /// Switches to `letter`: nothing when it plays already, a crossfade
    /// between A and B, through silence to or from X.
    private func move(to letter: String) throws {
        defer { playing = letter }
        if letter == playing { return }
        if letter != "x" && playing != "x" {
            try select(input(letter))
            return
        }
        // Hold the silence for the fade and two periods of *rendered* audio:
        // the engine's frame count, not the wall clock, which a loaded
        // machine (or a non-realtime server) stretches away from it.
        let before = live.status().frames
        try select(-1)
        let fadeMs = (try? live.control.get("\(node).crossfadeMs").value) ?? 50
        let period = max(live.status().bufferSize, 256)
        // The change applies at the start of the next cycle: one more period.
        let until = before + Int(fadeMs / 1000 * live.graph.sampleRate) + 3 * period
        let deadline = MonotonicClock.seconds() + 5 + fadeMs / 1000
        while live.status().frames < until && MonotonicClock.seconds() < deadline {
            usleep(2_000)
        }
        try select(input(letter))
    }

    private func select(_ input: Int) throws {
        try live.control.set("\(node).select", Double(input))
    }

    private func answer(isB: Bool) throws {
        let t = ABXTrial(number: trial + 1, xIsB: xIsB[trial], answeredB: isB,
                         seconds: MonotonicClock.seconds() - trialStarted, listened: listened)
        results.trials.append(t)
        writeStdout("trial \(t.number): answered X is \(ABXResults.letter(isB))\n")
        if trial == xIsB.count {
            finished = true
            return
        }
        try move(to: "a")
        startTrial()
    }

    private func quit() {
        results.quitEarly = trial < xIsB.count
        finished = true
    }
}
