import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphOSC
import AudioGraphPlugins
import Foundation
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
            status, playlist NODE add|insert|remove|move|next|clear|list …, quit, help. Playlist items that \
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
        do { live = try jack.start(g, binder: binder) } catch {
            nsm?.client.error(to: "/nsm/client/open", code: .launchFailed, "the graph could not start in JACK")
            throw error
        }
        if let osc {
            do { try osc.start(control: live.control) } catch {
                nsm?.client.error(to: "/nsm/client/open", code: .launchFailed, "--osc: \(error)")
                live.stop()
                printError("agraph: --osc: \(error)")
                throw ExitCode.failure
            }
            printError("agraph: OSC on \(osc.url)" + (oscHost == nil ? " (this machine only; --osc-host to open it)" : ""))
        }
        nsm?.opened(live)
        signal(SIGPIPE, SIG_IGN)

        let console = Console(live: live, quiet: quiet)
        // Sources following the transport may be located back after their end.
        // A session's client runs until the session manager stops it.
        let endless = !live.graph.endlessSources.isEmpty || !live.transportFollowers.isEmpty || nsm != nil
        let started = MonotonicClock.seconds()
        var exitCode: Int32 = 0
        loop: while true {
            console.pollCommands(timeout: 0.1)
            console.printPluginMessages()
            console.printPlaylistEvents()
            nsm?.poll(live)
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
            if let d = duration, MonotonicClock.seconds() - started >= d { break }
            console.showStatus()
        }
        console.clearLine()
        console.printPlaylistEvents()
        osc?.stop()
        let status = live.status()
        let errors = live.stop()
        console.printPluginMessages()
        for e in errors { printError("agraph: \(e)") }
        if !quiet {
            printError("agraph: stopped at \(formatFixed(status.seconds, 2)) s; xruns \(status.xruns), underruns \(status.underruns)")
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

    /// Playlist items that started, ended, were skipped or failed since
    /// the last call, one line each on stdout (`pl: item 1 started: PATH`).
    func printPlaylistEvents() {
        let events = live.control.playlistEvents(since: &playlistCursor)
        guard !events.isEmpty else { return }
        clearLine()
        for e in events { writeStdout(e.description + "\n") }
    }

    func clearLine() {
        if statusShown {
            writeStderr("\r\u{1B}[K")
            statusShown = false
        }
    }
}
