import AudioGraph
import AudioGraphJACK

/// What the console drives: the graph's control surface and its status.
/// `RunningGraph` is one; a test gives a surface over a graph compiled
/// offline. [main-thread]
public protocol ConsoleTarget: AnyObject {
    /// The control surface of the graph playing now (a reload replaces it).
    var control: ControlSurface { get }
    /// The status now; reading it changes nothing.
    func status() -> GraphStatus
}

extension RunningGraph: ConsoleTarget {}

/// The interactive side of `agraph run`: control lines and the status line.
/// Lines come from a `LineReader` (stdin), are parsed by `ControlLine` and
/// run by the target's `ControlSurface`; the replies are its values, shown
/// as text; `reload [FILE]` goes to the `Reloader`. [main-thread]
public final class Console {
    public let target: any ConsoleTarget
    public let quiet: Bool
    public let output: TextOutput
    public var input: LineReader
    public private(set) var quitRequested = false
    private var lastStatus = 0.0
    /// The graph monitor the console reads its playlist lines from, and
    /// its place in it.
    private var eventFeed: (monitor: GraphMonitor, cursor: GraphEventCursor)?
    private var statusShown = false
    /// Runs `reload [FILE]`; without one, the line goes to the control
    /// surface (which refuses it).
    public var reloader: Reloader?

    public init(target: any ConsoleTarget, quiet: Bool, output: TextOutput = .standard, input: LineReader = LineReader()) {
        self.target = target
        self.quiet = quiet
        self.output = output
        self.input = input
    }

    /// Waits up to `timeout` for input and runs whole lines, up to a `quit`.
    public func pollCommands(timeout: Double) {
        let lines: [LineSplitter.Line]
        switch input.poll(timeout: timeout) {
        case .lines(let l): lines = l
        case .ended(let l): lines = l
        }
        for line in lines {
            handle(line)
            if quitRequested { return }
        }
    }

    /// Runs one line: a control line's reply on the reply stream, its
    /// error as `error: …` on the message stream; `quit` sets `quitRequested`.
    public func handle(_ line: LineSplitter.Line) {
        switch line {
        case .text(let text):
            if let reloader, let command = try? ControlLine.parse(text), case .reload(let file) = command {
                clearLine()
                reloader.reload(file: file)
                return
            }
            switch target.control.execute(line: text) {
            case nil: break
            case .success(.quit)?: quitRequested = true
            case .success(let reply)?: self.reply(reply.text)
            case .failure(let error)?: fail(error.message)
            }
        case .tooLong:
            fail(line.errorMessage ?? "line too long")
        }
    }

    func reply(_ text: String) {
        clearLine()
        output.writeOut(text + "\n")
    }

    func fail(_ text: String) {
        clearLine()
        output.error("error: \(text)")
    }

    /// A status line a few times a second on a terminal, every 2 s
    /// otherwise: the same text as the `status` command's reply.
    public func showStatus() {
        guard !quiet else { return }
        let now = MonotonicClock.seconds()
        guard now - lastStatus >= (output.isTerminal ? 0.25 : 2) else { return }
        lastStatus = now
        let text = target.status().text
        if output.isTerminal {
            output.writeErr("\r\u{1B}[K" + text)
            statusShown = true
        } else {
            output.writeErr("status: " + text + "\n")
        }
    }

    /// What plugins said (the `agraph.log/1` host extension) since the
    /// last call, one line each on the message stream.
    public func printPluginMessages() {
        let messages = PluginLog.drain()
        guard !messages.isEmpty else { return }
        clearLine()
        for line in messages { output.error("agraph: \(line)") }
    }

    /// Errors answered to OSC senders, shown as the console's own are
    /// (`OSCServer.takeErrors` rate-limits them).
    public func printOSCErrors(_ lines: [String]) {
        guard !lines.isEmpty else { return }
        clearLine()
        for line in lines { output.error("error: \(line)") }
    }

    /// Playlist items that started, ended, were skipped or failed since
    /// the last call, one line each on the reply stream (`pl: item 1 started: PATH`):
    /// the graph monitor's playlist events (it polls it first), from the
    /// oldest it keeps at the first call.
    public func printPlaylistEvents() {
        let monitor = target.control.monitor
        if eventFeed?.monitor !== monitor { eventFeed = (monitor, monitor.subscribe(includingKept: true)) }
        guard var feed = eventFeed else { return }
        monitor.poll()
        let events = monitor.events(since: &feed.cursor).compactMap { e -> PlaylistEvent? in
            if case .playlist(let p) = e { p } else { nil }
        }
        eventFeed = feed
        guard !events.isEmpty else { return }
        clearLine()
        for e in events { output.writeOut(e.description + "\n") }
    }

    /// "; dropped 1234 frames not in their file (rec 1234: the writer fell
    /// behind)" for the end-of-run line, or nothing.
    public static func droppedSummary(_ dropped: [String: Int]) -> String {
        guard !dropped.isEmpty else { return "" }
        let total = dropped.values.reduce(0, +)
        let nodes = dropped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "; dropped \(total) frame\(total == 1 ? "" : "s") not in their file (\(nodes): the writer fell behind)"
    }

    /// Erases the status line on a terminal, before other text.
    public func clearLine() {
        if statusShown {
            output.writeErr("\r\u{1B}[K")
            statusShown = false
        }
    }
}
