import ArgumentParser
import AudioGraph
import AudioGraphJACK
#if canImport(Glibc)
import Glibc
#endif

/// The JACK options of the commands that play a graph live (`run`, `abx`),
/// and the start both share. [main-thread]
struct LiveOptions: ParsableArguments {
    @Option(help: "JACK client name (default: the graph's name).")
    var clientName: String?

    @Option(help: "auto: join a running server or start an embedded one; external: join only; embedded: always start one.")
    var server: RunningGraph.ServerMode = .auto

    @Option(help: "Name of the JACK server (jackd -n NAME); default: the default server.")
    var serverName: String?

    @Option(help: "Driver of an embedded server: dummy (no sound card) or alsa.")
    var driver = "dummy"

    @Option(help: "Period of an embedded server, in frames.")
    var period = 256

    @Option(help: ArgumentHelp(
        "JACK transport for every time-based source (file, ac4, media, playlist): follow (a transport locate moves it to the transport's frame; it plays while the transport rolls, and holds silent where it is while it stands still) or free (plays on its own). Default: each source's own \"transport\" parameter.",
        valueName: "follow|free"))
    var transport: TransportMode?

    @Option(help: ArgumentHelp(
        "Hold a CPU wake-up latency request of this many µs while the graph plays (Linux PM QoS, /dev/cpu_dma_latency, as cyclictest does): 0 keeps idle CPUs polling, so every cycle starts with warm caches. For the whole machine; costs power; the device is root's unless a udev rule gives it to your group.",
        valueName: "µs"))
    var cpuDMALatency: Int?

    @Option(help: ArgumentHelp(
        "Threads that render each JACK cycle: 1 (JACK's process thread alone), N (that thread and N - 1 helpers at JACK's real-time priority, running the graph's independent branches at the same time, as JACK2 and Ardour do), or auto (one per independent branch, up to the number of CPUs, when there are at least two of each; else 1). Default: the graph's \"threads\", else 1. It pays for graphs whose branches each cost a good part of a cycle.",
        valueName: "N|auto"))
    var threads: String?

    func validate() throws {
        if let t = threads, GraphThreads(word: t) == nil {
            throw ValidationError("--threads must be \(GraphThreads.expected); got '\(t)'")
        }
        if !(16...8192).contains(period) { throw ValidationError("--period must be from 16 to 8192 frames") }
        if let l = cpuDMALatency, !(0...Int(CPULatencyRequest.unconstrained)).contains(l) {
            throw ValidationError("--cpu-dma-latency must be from 0 to \(CPULatencyRequest.unconstrained) µs")
        }
    }

    var runningOptions: RunningGraph.Options {
        var options = RunningGraph.Options()
        options.clientName = clientName
        options.server = server
        options.serverName = serverName
        options.driver = driver
        options.period = period
        options.transport = transport
        options.cpuDMALatency = cpuDMALatency
        options.threads = threads.flatMap { GraphThreads(word: $0) }
        // SIGINT/SIGTERM end a wait for the background jobs (a start fails,
        // a reload is refused) as they end the main loop.
        options.shouldStop = { interruptRequested.load(ordering: .relaxed) }
        return options
    }

    /// Starts `graph` live; on failure prints why and throws
    /// `ExitCode.failure`. Prints the compile notices and the line saying
    /// where it runs (`agraph: running '…' … Type 'help' for commands.`).
    /// `duration`: seconds of audio to render (`RunningGraph.Options.duration`).
    func start(_ graph: ValidatedGraph, binder: JACKPortBinder, duration: Double? = nil) throws -> RunningGraph {
        let live: RunningGraph
        var options = runningOptions
        options.duration = duration
        do {
            live = try RunningGraph(graph: graph, binder: binder, options: options)
        } catch {
            printError("agraph: \(error)")
            throw ExitCode.failure
        }
        for n in live.compiled.notices { printError("agraph: \(n)") }
        // libjack picks the server: --server-name, else $JACK_DEFAULT_SERVER, else "default".
        let joined = serverName ?? getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let where_ = live.server != nil
            ? "an embedded JACK server (\(driver), \(period) frames)" : "JACK server '\(joined)'"
        let rate = live.graph.sampleRateIsExplicit ? "\(Int(live.graph.sampleRate)) Hz"
            : "\(Int(live.graph.sampleRate)) Hz (the server's rate: the graph gives no \"sampleRate\")"
        printError("agraph: running '\(graph.name)' at \(rate) on \(where_) as client '\(live.client.name)'; ports: "
                   + binder.ports.map(\.name).joined(separator: ", ") + ". Type 'help' for commands.")
        if let l = cpuDMALatency {
            printError("agraph: holding a CPU wake-up latency request of \(l) µs (\(CPULatencyRequest.devicePath)) while the graph plays")
        }
        if let r = live.renderThreads {
            let scheduling = r.isRealtime ? "at JACK's real-time priority" : "without real-time priority (the server does not run real time, or the system refused it)"
            printError("agraph: rendering on \(r.helperCount + 1) threads, JACK's process thread and \(r.helperCount) helper\(r.helperCount == 1 ? "" : "s") \(scheduling)"
                       + (live.engine.rendersInParallel ? "" : "; the graph has no independent branches to share"))
        }
        let following = live.transportFollowers
        if !following.isEmpty {
            printError("agraph: following the JACK transport: " + following.joined(separator: ", ")
                       + " (they play while it rolls; a locate moves them)")
        }
        return live
    }
}

extension RunningGraph.ServerMode: ExpressibleByArgument {}
extension TransportMode: ExpressibleByArgument {}
