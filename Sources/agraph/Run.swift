import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphOSC
import AudioGraphPlugins
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a graph live inside a JACK client.",
        discussion: """
            Joins the running JACK server, or starts an embedded one (jackd --no-realtime -d dummy) when \
            none runs, and stops it on exit. The graph is validated before anything touches JACK.

            Commands on stdin: set NODE.PARAM VALUE, get NODE.PARAM, seek [NODE] SECONDS, pause, play, \
            status, playlist NODE add|insert|remove|move|next|clear|list …, reload [FILE], quit, help. Playlist items that \
            start, end, are skipped or fail are printed on stdout. Ctrl-C and quit stop cleanly: files written, ports unregistered. \
            With --transport follow (or a source's "transport": "follow"), the time-based sources follow \
            the JACK transport: a locate moves them, start and stop play and pause them, and the status \
            line shows the transport's state and frame; `seek` leaves them to the transport. \
            Exits 0 at the end of the graph's streams (never while sources follow the transport), at --duration, on quit or Ctrl-C; \
            1 when the JACK server shuts down (unless --reconnect brings it back).

            --osc PORT serves the same commands over OSC (UDP): /agraph/NODE/PARAM VALUE, /agraph/get, \
            /agraph/set, /agraph/seek, /agraph/pause, /agraph/play, /agraph/status, /agraph/subscribe, \
            /agraph/unsubscribe (docs/osc.md). It listens on 127.0.0.1 only unless --osc-host says \
            otherwise: OSC has no authentication, and anyone who can reach the port controls the graph.

            Under an NSM session manager (NSM_URL set), it announces itself (capability :dirty:) and plays \
            the session's copy of GRAPH, PATH.json for the session's PATH (made from GRAPH the first time, \
            relative paths made absolute against GRAPH's folder), as the JACK client the session names; \
            save writes that file with the live parameter values; SIGTERM quits. It runs on after the \
            end of its streams until the session manager stops it (docs/nsm.md).

            Hot reload (`reload [FILE]`, SIGHUP, /agraph/reload over OSC, or --watch): the new file is validated first; an invalid \
            one is reported with its diagnostics and the running graph plays on. Nodes whose id, type, \
            inputs and parameters are unchanged keep their state; live-parameter-only changes become live \
            changes; the rest is swapped in at a cycle boundary, crossfaded over --reload-crossfade-ms on \
            the outputs that differ (docs/reload.md).
            """)

    @Argument(help: "Graph file.") var graph: String

    @OptionGroup var jack: LiveOptions

    @Option(name: .shortAndLong, help: "Stop after this many seconds.")
    var duration: Double?

    @Flag(help: "When the server shuts down, wait for it to come back (with backoff) and carry on.")
    var reconnect = false

    @Flag(help: "No status line.")
    var quiet = false

    @Option(name: .customLong("set"), help: ParameterOverrides.help)
    var settings: [String] = []

    @Option(name: .customLong("osc"), help: ArgumentHelp("Serve the control surface over OSC on this UDP port (0: a free port, printed).", valueName: "port"))
    var oscPort: Int?

    @Option(name: .customLong("osc-host"), help: ArgumentHelp("The address the OSC server listens on (default 127.0.0.1: this machine only; 0.0.0.0 or :: for every interface; OSC has no authentication).", valueName: "address"))
    var oscHost: String?

    @Flag(help: "Watch the graph file and reload it when it changes and validates.")
    var watch = false

    @Option(help: "Crossfade of a reload between the old and the new graph's outputs, in ms (0…10000).")
    var reloadCrossfadeMs: Double = 20

    func validate() throws {
        if let d = duration {
            guard d > 0 else { throw ValidationError("--duration must be a positive number of seconds") }
            guard d.isFinite, d <= FrameTime.maximumSeconds else {
                throw ValidationError("--duration \(FrameTime.OutOfRange(seconds: d))")
            }
        }
        _ = try ParameterOverrides.parse(settings)
        if let p = oscPort, !(0...65535).contains(p) { throw ValidationError("--osc must be a UDP port from 0 to 65535 (0: a free port)") }
        if oscHost != nil && oscPort == nil { throw ValidationError("--osc-host needs --osc PORT") }
        if let h = oscHost, h.isEmpty { throw ValidationError("--osc-host needs an address, e.g. 127.0.0.1, 0.0.0.0 or ::") }
        guard reloadCrossfadeMs.isFinite, (0...10_000).contains(reloadCrossfadeMs) else {
            throw ValidationError("--reload-crossfade-ms must be 0…10000 (got \(reloadCrossfadeMs))")
        }
    }

    func run() throws {
        let binder = JACKPortBinder()
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        // Under a session manager (NSM_URL set), the graph is the session's
        // copy and the JACK client is named by the session's client id.
        var jack = self.jack
        var nsm: NSMSession?
        let g: ValidatedGraph
        if let url = NSMClient.urlFromEnvironment {
            guard let (session, sessionGraph) = try NSMSession.join(
                url: url, original: graph, registry: standardRegistry(binder),
                overrides: try ParameterOverrides.parse(settings)) else { return }
            nsm = session
            g = sessionGraph
            jack.clientName = session.clientID
        } else {
            g = try loadGraph(graph, registry: standardRegistry(binder), overrides: try ParameterOverrides.parse(settings))
        }
        // The OSC port is bound before anything touches JACK: a port in use
        // is reported without starting the graph.
        var osc: OSCServer?
        if let port = oscPort {
            do { osc = try OSCServer(port: port, host: oscHost ?? OSCServer.loopback) } catch {
                nsm?.client.error(to: "/nsm/client/open", code: .launchFailed, "--osc: \(error)")
                printError("agraph: --osc: \(error)")
                throw ExitCode.failure
            }
        }
        let live: RunningGraph
        do { live = try jack.start(g, binder: binder, duration: duration) } catch {
            nsm?.client.error(to: "/nsm/client/open", code: .launchFailed, "the graph could not start in JACK")
            throw error
        }
        TestHooks.holdWriters(of: live)
        // Under a session, reload reads the session's file.
        let reloader = Reloader(live: live, binder: binder, file: nsm?.file ?? graph,
                                overrides: try ParameterOverrides.parse(settings), crossfadeMs: reloadCrossfadeMs)
        if let osc {
            do {
                try osc.start(control: { [live] in live.control },
                              reload: { [reloader] in try reloader.attempt(file: nil).description })
            } catch {
                nsm?.client.error(to: "/nsm/client/open", code: .launchFailed, "--osc: \(error)")
                live.stop()
                printError("agraph: --osc: \(error)")
                throw ExitCode.failure
            }
            printError("agraph: OSC on \(osc.url)" + (oscHost == nil ? " (this machine only; --osc-host to open it)" : ""))
        }
        nsm?.opened(live)
        signal(SIGPIPE, SIG_IGN)
        signal(SIGHUP) { _ in reloadRequested.store(true, ordering: .relaxed) }

        let console = Console(live: live, quiet: quiet)
        console.reloader = reloader
        var watcher = watch ? FileWatcher(path: reloader.file) : nil
        // Sources following the transport may be located back after their end.
        // A session's client runs until the session manager stops it.
        func isEndless() -> Bool {
            !live.graph.endlessSources.isEmpty || !live.transportFollowers.isEmpty || nsm != nil
        }
        var endless = isEndless()
        var reloads = 0
        var exitCode: Int32 = 0
        loop: while true {
            console.pollCommands(timeout: 0.1)
            console.printPluginMessages()
            if let osc { console.printOSCErrors(osc.takeErrors()) }
            console.printPlaylistEvents()
            nsm?.poll(live, reloader: reloader)
            if reloadRequested.exchange(false, ordering: .relaxed) {
                console.clearLine()
                reloader.reload(file: nil)
            }
            // `reload FILE` moves the watch to FILE.
            if watch && watcher?.path != reloader.file { watcher = FileWatcher(path: reloader.file) }
            switch watcher?.poll() {
            case .changed?:
                console.clearLine()
                reloader.reload(file: nil)
            case .vanished?:
                console.clearLine()
                printError("agraph: reload: \(reloader.file) is gone; the running graph plays on, and the file is loaded again when it comes back")
            case .unchanged?, nil: break
            }
            // After a reload (from here or over OSC): the new graph's
            // streams and followers; a session saves the new graph.
            if reloader.count != reloads {
                reloads = reloader.count
                endless = isEndless()
                nsm?.reloaded(live, from: reloader.file)
            }
            if console.quitRequested || interruptRequested.load(ordering: .relaxed) { break }
            if let reason = live.shutdownReason {
                console.clearLine()
                printError("agraph: the JACK server shut down\(reason.isEmpty ? "" : ": \(reason)")")
                if reconnect {
                    printError("agraph: waiting for a JACK server to come back…")
                    if live.reconnect(timeout: 3600, cancelled: { interruptRequested.load(ordering: .relaxed) }) {
                        printError("agraph: running again as client '\(live.client.name)'")
                        continue
                    }
                }
                exitCode = 1
                break
            }
            if !endless && live.engine.isFinished {
                console.clearLine()
                printError("agraph: end of stream")
                break
            }
            // --duration counts frames rendered (not wall time: a slow start
            // or an overloaded cycle would cut the audio short).
            if duration != nil && live.durationReached { break }
            console.showStatus()
        }
        console.clearLine()
        console.printPlaylistEvents()
        osc?.stop()
        let errors = live.stop()
        // After stop: nothing renders any more, so the position and the
        // counts are final.
        let status = live.status()
        console.printPluginMessages()
        for e in errors { printError("agraph: \(e)") }
        // Frames lost from a recording are said even with --quiet.
        if !quiet || !live.droppedFrames.isEmpty {
            printError("agraph: stopped at \(formatFixed(status.seconds, 2)) s (\(status.frames) frames); xruns \(status.xruns), underruns \(status.underruns)"
                       + Console.droppedSummary(live.droppedFrames))
        }
        if !errors.isEmpty { exitCode = 1 }
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}

/// The interactive side of `agraph run`: stdin commands and the status line.
/// Lines are split by `LineSplitter` (64 KiB limit, CRLF accepted), parsed
/// by `ControlLine` and run by the graph's `ControlSurface`; the replies
/// are its values, shown as text. [main-thread]
final class Console {
    let live: RunningGraph
    let quiet: Bool
    let isTerminal = isatty(STDERR_FILENO) == 1
    var stdinOpen = true
    var lines = LineSplitter()
    /// One read's worth of stdin, reused.
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var quitRequested = false
    var lastStatus = 0.0
    var playlistCursor = PlaylistEventCursor()
    var statusShown = false
    var reloader: Reloader?

    init(live: RunningGraph, quiet: Bool) {
        self.live = live
        self.quiet = quiet
    }

    /// Waits up to `timeout` for input on stdin and runs whole lines.
    func pollCommands(timeout: Double) {
        guard stdinOpen else {
            usleep(UInt32(timeout * 1e6))
            return
        }
        var fds = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, Int32(timeout * 1000)) > 0 else { return }
        let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
        if n <= 0 {
            stdinOpen = false
            for line in lines.finish() { handle(line) }
            return
        }
        for line in lines.feed(buffer[0..<n]) {
            handle(line)
            if quitRequested { return }
        }
    }

    func handle(_ line: LineSplitter.Line) {
        switch line {
        case .text(let text):
            if let reloader, let command = try? ControlLine.parse(text), case .reload(let file) = command {
                clearLine()
                reloader.reload(file: file)
                return
            }
            switch live.control.execute(line: text) {
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
        writeStdout(text + "\n")
    }

    func fail(_ text: String) {
        clearLine()
        printError("error: \(text)")
    }

    /// A status line a few times a second on a terminal, every 2 s
    /// otherwise: the same text as the `status` command's reply.
    func showStatus() {
        guard !quiet else { return }
        let now = MonotonicClock.seconds()
        guard now - lastStatus >= (isTerminal ? 0.25 : 2) else { return }
        lastStatus = now
        let text = live.status().text
        if isTerminal {
            writeStderr("\r\u{1B}[K" + text)
            statusShown = true
        } else {
            writeStderr("status: " + text + "\n")
        }
    }

    /// What plugins said (the `agraph.log/1` host extension) since the
    /// last call, one line each on stderr.
    func printPluginMessages() {
        let messages = PluginLog.drain()
        guard !messages.isEmpty else { return }
        clearLine()
        for line in messages { printError("agraph: \(line)") }
    }

    /// Errors answered to OSC senders, shown as the console's own are
    /// (`OSCServer.takeErrors` rate-limits them).
    func printOSCErrors(_ lines: [String]) {
        guard !lines.isEmpty else { return }
        clearLine()
        for line in lines { printError("error: \(line)") }
    }

    /// Playlist items that started, ended, were skipped or failed since
    /// the last call, one line each on stdout (`pl: item 1 started: PATH`).
    func printPlaylistEvents() {
        let events = live.control.playlistEvents(since: &playlistCursor)
        guard !events.isEmpty else { return }
        clearLine()
        for e in events { writeStdout(e.description + "\n") }
    }

    /// "; dropped 1234 frames not in their file (rec 1234: the writer fell
    /// behind)" for the end-of-run line, or nothing. [main-thread]
    static func droppedSummary(_ dropped: [String: Int]) -> String {
        guard !dropped.isEmpty else { return "" }
        let total = dropped.values.reduce(0, +)
        let nodes = dropped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "; dropped \(total) frame\(total == 1 ? "" : "s") not in their file (\(nodes): the writer fell behind)"
    }

    func clearLine() {
        if statusShown {
            writeStderr("\r\u{1B}[K")
            statusShown = false
        }
    }
}

/// Set by SIGHUP: reload the graph file. [signal handler sets, main-thread takes]
let reloadRequested = Atomic<Bool>(false)

/// `agraph run`'s hot reload: validates the file (diagnostics printed as
/// `agraph validate` prints them; the running graph plays on), then hands it
/// to `RunningGraph.reload` and prints what changed. One reload at a time:
/// the main thread (the prompt, SIGHUP, --watch) and the OSC thread
/// (`/agraph/reload`) both call it. [main-thread or osc-thread]
final class Reloader: @unchecked Sendable {
    let live: RunningGraph
    let binder: JACKPortBinder
    let overrides: [ParameterOverride]
    let crossfadeMs: Double
    /// The file reloaded by default (the last one loaded), and how many
    /// reloads have succeeded.
    private let state: Locked<(file: String, count: Int)>

    /// Why a reload did not happen, with the file's diagnostics.
    struct Failure: Error, CustomStringConvertible {
        /// The diagnostics, then the verdict (as the console prints them).
        var lines: [String]
        /// The verdict first (an OSC reply may be cut short), then the diagnostics.
        var description: String { (lines.suffix(1) + lines.dropLast()).joined(separator: "\n") }
    }

    init(live: RunningGraph, binder: JACKPortBinder, file: String, overrides: [ParameterOverride], crossfadeMs: Double) {
        self.live = live
        self.binder = binder
        self.overrides = overrides
        self.crossfadeMs = crossfadeMs
        state = Locked((file, 0))
    }

    /// The file a reload without one reads.
    var file: String { state.withLock { $0.file } }
    /// Reloads that succeeded so far.
    var count: Int { state.withLock { $0.count } }

    /// Reloads `file` (nil: the current one), printing what happened.
    /// Returns whether the new graph runs.
    @discardableResult
    func reload(file other: String?) -> Bool {
        do {
            printError("agraph: \(try attempt(file: other))")
            return true
        } catch {
            for line in error.lines { printError(line) }
            return false
        }
    }

    /// Reloads `file` (nil: the current one) and says what changed; the
    /// failure holds the diagnostics, the running graph playing on.
    func attempt(file other: String?) throws(Failure) -> ReloadReport {
        try state.withLock { (state) throws(Failure) -> ReloadReport in
            let path = other ?? state.file
            switch GraphValidator(registry: standardRegistry(binder)).validate(file: path, overrides: overrides) {
            case .failure(let errors):
                let n = errors.errors.count
                throw Failure(lines: errors.diagnostics.map(\.description)
                              + ["\(path): \(n) error\(n == 1 ? "" : "s")",
                                 "agraph: reload: \(path) not loaded; the running graph plays on"])
            case .success(let g):
                for w in g.warnings { printError(w.description) }
                do {
                    let report = try live.reload(graph: g, crossfadeMs: crossfadeMs)
                    state = (path, state.count + 1)
                    return report
                } catch {
                    // The library's reasons often say "reload:" themselves: once is enough.
                    let reason = "\(error)"
                    throw Failure(lines: ["agraph: \(reason.hasPrefix("reload: ") ? "" : "reload: ")\(reason); the running graph plays on"])
                }
            }
        }
    }
}

/// Watches a file by its modification time and size, polled from the main
/// loop (a non-realtime thread). A file that goes away is said once; when
/// it comes back, it counts as changed. [main-thread]
struct FileWatcher {
    let path: String
    private var last: (Int, Int, Int)?
    /// The file was gone at the last poll.
    private var gone = false

    enum Change { case unchanged, changed, vanished }

    init(path: String) {
        self.path = path
        last = Self.stamp(path)
    }

    static func stamp(_ path: String) -> (Int, Int, Int)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec), Int(st.st_size))
    }

    /// What happened to the file since the last poll: changed (or back
    /// after it was gone), gone (said once until it comes back), or nothing.
    mutating func poll() -> Change {
        guard let now = Self.stamp(path) else {
            if gone { return .unchanged }
            gone = true
            return .vanished
        }
        defer { last = now }
        if gone {
            gone = false
            return .changed
        }
        guard let last else { return .unchanged }
        return last != now ? .changed : .unchanged
    }
}
