import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphLive
import AudioGraphOSC
import AudioGraphPlugins
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
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
        // A live graph may be reloaded (from the OSC or console thread) into
        // one that names a plugin: the plugins load here, on the main thread,
        // not in a reload.
        _ = deferredPlugins.loaded
        let g: ValidatedGraph
        if let url = NSMClient.urlFromEnvironment {
            let overrides = try ParameterOverrides.parse(settings)
            let joined: (NSMSession, ValidatedGraph)?
            do {
                joined = try NSMSession.join(url: url, original: graph, registry: { standardRegistry(binder) },
                                             overrides: overrides, cancelled: { interruptRequested.load(ordering: .relaxed) })
            } catch { throw ExitCode.failure }
            guard let (session, sessionGraph) = joined else { return }
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
        let reloader = Reloader(live: live, registry: { standardRegistry(binder) }, file: nsm?.file ?? graph,
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

        let console = Console(target: live, quiet: quiet)
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

/// Set by SIGHUP: reload the graph file. [any-thread; a signal handler sets, the main thread takes]
let reloadRequested = Atomic<Bool>(false)
