import AudioGraph

/// What plays the ABX trials: switches the ab node between its inputs.
/// `LiveABXPlayer` (AudioGraphLive) drives a graph playing in JACK; a test
/// records the switches. [main-thread]
public protocol ABXPlayer: AnyObject {
    /// Crossfades to `input` (an A–B switch, the node's own crossfade).
    func select(_ input: Int) throws
    /// Fades out to silence, holds it long enough that the switch cannot
    /// be heard, then fades in `input`: every switch to or from X.
    func selectThroughSilence(_ input: Int) throws
}

/// The ABX trials: the sequence of draws, the commands (`a`, `b`, `x`,
/// `x=a`, `x=b`, `q`, `help`), the answers and their times, the results.
/// What it says goes back as messages; the player switches the inputs.
/// [main-thread]
public final class ABXSession {
    public let player: any ABXPlayer
    public let inputA: Int, inputB: Int
    /// Whether X is B in each trial, in order (`ABXDraw`).
    public let xIsB: [Bool]
    public private(set) var results = ABXResults()
    public private(set) var finished = false
    /// What plays: "a", "b" or "x".
    public private(set) var playing = "a"
    private let clock: () -> Double
    private var trialStarted = 0.0
    private var listened: [String] = []

    /// A line for the listener: on stdout (`reply`) or as an error (stderr).
    public enum Message: Equatable {
        case reply(String)
        case error(String)
    }

    public static let help = """
        a, b, x     listen to A, B or X
        x=a, x=b    answer that X is A, or B (or: answer a, answer b)
        q           quit early (the trial under way is not counted)
        help        these commands
        """

    /// - Parameter clock: seconds, for the time each answer took.
    public init(player: any ABXPlayer, inputA: Int, inputB: Int, xIsB: [Bool],
                clock: @escaping () -> Double = { MonotonicClock.seconds() }) {
        self.player = player
        self.inputA = inputA
        self.inputB = inputB
        self.xIsB = xIsB
        self.clock = clock
    }

    /// Trials answered so far.
    public var trial: Int { results.trials.count }

    /// Puts A on and asks the first question.
    public func begin() throws -> [Message] {
        try player.select(inputA)
        playing = "a"
        return [startTrial()]
    }

    private func startTrial() -> Message {
        trialStarted = clock()
        listened = []
        return .reply("trial \(trial + 1) of \(xIsB.count): listen with a, b, x; answer with x=a or x=b (help: all commands)")
    }

    /// Runs one line of input; nothing once finished.
    public func handle(_ line: LineSplitter.Line) -> [Message] {
        guard !finished else { return [] }
        guard case .text(let text) = line else { return [.error("error: \(line.errorMessage ?? "line too long")")] }
        let words = text.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        do {
            switch words {
            case "": return []
            case "a", "b", "x": return try listen(words)
            case "x=a", "x = a", "answer a": return try answer(isB: false)
            case "x=b", "x = b", "answer b": return try answer(isB: true)
            case "q", "quit": quit(); return []
            case "help", "?": return [.reply(Self.help)]
            default: return [.error("error: unknown command '\(text)'; commands: a, b, x, x=a, x=b, q, help")]
            }
        } catch {
            return [.error("error: \(error)")]
        }
    }

    /// The end of input: the lines it still held, then quit.
    public func endOfInput(_ lines: [LineSplitter.Line]) -> [Message] {
        var out: [Message] = []
        for line in lines where !finished { out += handle(line) }
        if !finished { quit() }
        return out
    }

    /// The input a letter names in this trial.
    public func input(_ letter: String) -> Int {
        switch letter {
        case "a": inputA
        case "b": inputB
        default: xIsB[trial] ? inputB : inputA
        }
    }

    private func listen(_ letter: String) throws -> [Message] {
        listened.append(letter)
        try move(to: letter)
        return [.reply("playing \(letter.uppercased())")]
    }

    /// Switches to `letter`: nothing when it plays already, a crossfade
    /// between A and B, through silence to or from X.
    private func move(to letter: String) throws {
        defer { playing = letter }
        if letter == playing { return }
        if letter != "x" && playing != "x" {
            try player.select(input(letter))
        } else {
            try player.selectThroughSilence(input(letter))
        }
    }

    private func answer(isB: Bool) throws -> [Message] {
        let t = ABXTrial(number: trial + 1, xIsB: xIsB[trial], answeredB: isB,
                         seconds: clock() - trialStarted, listened: listened)
        results.trials.append(t)
        var out: [Message] = [.reply("trial \(t.number): answered X is \(ABXResults.letter(isB))")]
        if trial == xIsB.count {
            finished = true
            return out
        }
        try move(to: "a")
        out.append(startTrial())
        return out
    }

    /// Ends the session; the trial under way is not counted.
    public func quit() {
        results.quitEarly = trial < xIsB.count
        finished = true
    }
}
