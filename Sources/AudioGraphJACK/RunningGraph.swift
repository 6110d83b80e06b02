import AudioGraphHost
import CJack
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A graph running live inside a JACK client's process callback: the
/// public face of three parts with one role each.
///
/// - `JACKSession`: the JACK client, ports, connections, metadata and
///   output route, owned by one thread (`OwnerThread`); every JACK call
///   and every main-thread call into a node (route, latency) runs there.
/// - `ProcessCycle`: the process callback (fetches port buffers, renders
///   the engine) and JACK's other callbacks, which only store into atomics
///   and wake the owner thread; the latency callback reads a published
///   `LatencyPlan`.
/// - `ControlSurface` (module AudioGraph, no JACK): set/get/seek/pause/
///   play/status by address and word, results as values.
///
/// Threading:
/// - `init`, `stop`, `reconnect`: [main-thread]; `stop` joins every thread
///   the graph started (owner, worker) and stops an embedded server.
/// - `set`, `value`, `seek`, `pause`, `play`, `status`, `control`:
///   [control-thread].
/// - `events`: any task may iterate it.
/// - `monitor`: see `GraphMonitor` (the owner thread polls it at each tick).
public final class RunningGraph: @unchecked Sendable {
    public enum ServerMode: String, Sendable, CaseIterable {
        /// Join a running server, or start an embedded one when none runs.
        case auto
        /// Join a running server; never start one.
        case external
        /// Always start (and later stop) a server of our own.
        case embedded
    }

    public struct Options: Sendable {
        /// JACK client name; default: the graph's name.
        public var clientName: String?
        public var server: ServerMode = .auto
        /// The server's name (`jackd -n`); nil for the default server.
        public var serverName: String?
        /// Driver of an embedded server: `dummy` (no sound card) or e.g. `alsa`.
        public var driver = "dummy"
        /// Period of an embedded server, in frames.
        public var period = 256
        /// The largest period the graph follows without reallocating;
        /// buffers are sized for it before activation.
        public var maxFrames = 8192
        /// Fed sources keep this many frames ahead beyond one period
        /// (prefetch, not latency: a seek or locate waits only for a
        /// period's worth). A file reader refills when half of it (at most
        /// 1024 frames) is gone, so its thread is woken every few cycles,
        /// not after every one.
        public var extraFill = 2048
        /// Record every process cycle's duration (for benchmarks).
        public var measureCycles = false
        /// With `measureCycles`: read at the end of every cycle and kept
        /// beside its duration (`takeCycleSamples`), e.g. a running total
        /// of the time spent in plugins, so a benchmark can pair each
        /// cycle with what happened in it. Called on the process thread:
        /// must be realtime-safe.
        public var cycleProbe: (@convention(c) () -> UInt64)?
        /// Prefetch the engine's hot memory at the start of every cycle
        /// (`Engine.prefetchHotMemory`); off only to measure what it does.
        public var prefetchHotMemory = true
        /// JACK transport: nil leaves it to each time-based source's
        /// `transport` parameter; `.follow` makes every one (`file`, the
        /// decoders of `ac4` and `media`, `playlist`) follow JACK's
        /// transport, `.free` none (`agraph run --transport follow|free`).
        public var transport: TransportMode?
        /// Hold a CPU wake-up latency request of this many µs while the
        /// graph runs (`CPULatencyRequest`, `/dev/cpu_dma_latency`; 0: the
        /// idle CPUs poll, so each cycle starts with warm caches). nil: none.
        /// It applies to the whole machine and costs power.
        public var cpuDMALatency: Int?
        /// Called once on JACK's process thread when it starts (e.g. to set
        /// thread affinity); must itself be real-time safe.
        public var threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
        /// Render this many seconds of audio (frames at the graph's running
        /// rate, rounded; in whole periods, so up to one period more), then
        /// hold as paused (silence, sources still) and set
        /// `durationReached` (`agraph run --duration`). Paused time does
        /// not count. nil: no limit.
        public var duration: Double?
        /// How long, in seconds, starting and a reload wait for the
        /// background jobs (file readers, decoders) to have their first
        /// period ready. A start that is not ready by then fails, and a
        /// reload is refused (the running graph plays on), naming the nodes
        /// that were not ready.
        public var readyTimeout: Double = 5
        /// Asked while starting or a reload waits for the background jobs:
        /// true ends the wait, and the start fails or the reload is refused
        /// (`agraph run`: SIGINT or SIGTERM came). nil: only the timeout
        /// ends it. [owner-thread; any thread sets what it reads]
        public var shouldStop: (@Sendable () -> Bool)?
        /// Threads rendering each cycle (`agraph run --threads`): nil
        /// takes the graph's `"threads"` (default 1, JACK's process thread
        /// alone); see `GraphThreads`. Decided at the start: a reload
        /// renders on the same threads.
        public var threads: GraphThreads?
        public init() {}
    }

    /// What `events` carries: the graph monitor's events (`GraphEvent`:
    /// xruns, underruns, dropped frames, the end, the period, connections,
    /// shutdown and reconnection, the route, latency, meters, playlists,
    /// readings, reloads, pause, live parameter values), the same values
    /// every front end gets.
    public typealias Event = GraphEvent

    /// Where the graph is: position, peaks (over the last 0.25–0.5 s, not reset
    /// by reading), xruns, underruns, DSP load.
    public typealias Status = GraphStatus


    /// The graph as it runs: for a graph without `"sampleRate"`, validated
    /// at the server's rate. A reload replaces it. [any-thread]
    public var graph: ValidatedGraph { current.withLock { $0.compiled.graph } }
    /// [any-thread] A reload replaces it.
    public var compiled: CompiledGraph { current.withLock { $0.compiled } }
    public var engine: Engine { compiled.engine }
    /// The threads rendering beside JACK's process thread (`Options.threads`);
    /// nil: the process thread alone. [any-thread]
    public var renderThreads: RenderThreads? { session.renderThreads }
    public let binder: JACKPortBinder
    /// Every event of the graph, from its start: a subscriber of `monitor`.
    public let events: AsyncStream<Event>
    /// The one graph monitor every front end subscribes to (the console,
    /// OSC, NSM, `events`); the owner thread polls it at each tick (4 Hz or
    /// more), and a front end may poll it too for quicker events.
    /// [any-thread; see `GraphMonitor` for its members]
    public let monitor: GraphMonitor
    private let continuation: AsyncStream<Event>.Continuation
    private let eventsToken: Int
    /// Set/get/seek/pause/play/status by address and word; a reload gives
    /// a new one (for the new graph). [control-thread]
    public var control: ControlSurface { ThreadRole.check(.control); return current.withLock { $0.control } }
    /// The compiled graph and its control surface, replaced together by a reload.
    private let current: Locked<(compiled: CompiledGraph, control: ControlSurface)>
    /// One reload at a time.
    private let reloadLock = Locked<Void>(())
    private let owner: OwnerThread
    private let session: JACKSession
    private let transport: LiveTransport
    let cycle: ProcessCycle
    private let stopped = Atomic<Bool>(false)
    /// `Options.cpuDMALatency`, released by `stop`.
    private let latencyRequest: CPULatencyRequest?

    /// Finds or starts a server, opens a client, compiles and activates the
    /// graph, connects its ports; all on the owner thread it starts.
    /// Nothing touches JACK before the graph has passed its checks.
    /// [main-thread]
    /// - Parameter graph: validated with `NodeRegistry.builtIn.addingJACK(binder)`.
    public init(graph: ValidatedGraph, binder: JACKPortBinder, options: Options = Options()) throws {
        ThreadRole.check(.main)
        self.binder = binder
        // Before JACK: a request that cannot be held stops the start.
        latencyRequest = try options.cpuDMALatency.map { try CPULatencyRequest(microseconds: $0) }
        let (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        self.events = events
        self.continuation = continuation
        let monitor = GraphMonitor()
        self.monitor = monitor
        eventsToken = monitor.subscribe { continuation.yield($0) }
        let wakeup = Wakeup()
        let owner = OwnerThread(name: "agraph-jack", interval: 0.25, wakeup: wakeup)
        try owner.start()
        let session: JACKSession
        do {
            session = try owner.sync { () throws -> JACKSession in
                let s = try JACKSession(graph: graph, binder: binder, options: options,
                                        monitor: monitor, wakeup: wakeup)
                monitor.setHost(s)
                monitor.follow(s.compiled)
                // From here on the owner thread ticks the session and polls the monitor.
                owner.tick = { [weak s] in
                    guard let s else { return }
                    s.tick()
                    monitor.poll()
                }
                Self.routeLatencyNotices(s, on: owner)
                return s
            }
        } catch {
            owner.stop()
            continuation.finish()
            throw error
        }
        self.owner = owner
        self.session = session
        // A graph without "sampleRate" was validated again at the server's.
        cycle = session.cycle
        let transport = LiveTransport(session: session, monitor: monitor)
        self.transport = transport
        current = Locked((session.compiled, ControlSurface(compiled: session.compiled, host: transport)))
        owner.sync { [weak owner] in
            // The monitor and the latency notices follow a reload's nodes.
            session.onReloaded = { [weak owner, weak session] in
                guard let owner, let s = session else { return }
                monitor.follow(s.compiled)
                Self.routeLatencyNotices(s, on: owner)
            }
        }
        owner.wake()
    }

    /// Routes the nodes' latency notices to the owner thread. [owner-thread]
    private static func routeLatencyNotices(_ s: JACKSession, on owner: OwnerThread) {
        for id in s.engine.ids {
            guard let node = s.engine.node(id) as? LatencyChangeNotifying else { continue }
            node.onLatencyChange = { [weak owner, weak s] in owner?.async { s?.latencyChanged() } }
        }
    }

    /// The nodes that follow JACK's transport (their `transport`
    /// parameter, or `Options.transport`), in graph order. [any-thread]
    public var transportFollowers: [String] { session.following.withLock { $0.ids } }

    deinit { stop() }

    /// Port names must be unique across the graph's JACK nodes.
    static func checkPortNames(_ graph: ValidatedGraph) throws {
        var seen: [String: String] = [:]
        for node in graph.nodes where node.descriptor.typeID == "jack-in" || node.descriptor.typeID == "jack-out" {
            let isInput = node.descriptor.typeID == "jack-in"
            guard let format = isInput ? node.outputFormat : node.inputFormats.first else { continue }
            let names = portNames(node.parameters, format: format, isInput: isInput)
            for n in names {
                if let other = seen[n] {
                    throw EngineError(nodeID: node.id, "\(graph.file): \(node.pointer.appending("params").appending("ports").display): port name '\(n)' is also used by node '\(other)'; give one of them \"ports\"")
                }
                seen[n] = node.id
            }
        }
    }

    /// JACK's own pretty-name key (`JACK_METADATA_PRETTY_NAME` in metadata.h).
    public static let prettyNameKey = "http://jackaudio.org/metadata/pretty-name"

    /// Metadata key under which each port publishes its stream's layout tag.
    public static let layoutKey = "urn:audiograph:channel-layout"

    /// The JACK client (a new one after `reconnect`). [any-thread; asks the owner thread]
    public var client: JACKClient { owner.sync { [session] in session.client } }

    /// The server this graph started, if any. [any-thread; asks the owner thread]
    public var server: JACKServer? { owner.sync { [session] in session.server } }

    /// The graph's output route as last worked out. [any-thread; asks the owner thread]
    public var outputRoute: OutputRoute { owner.sync { [session] in session.route ?? .unknown } }

    // MARK: reload

    /// Hot reload: runs `graph` in place of the running one without a gap.
    ///
    /// The new graph must have been validated with this graph's registry
    /// (`NodeRegistry.builtIn.addingJACK(binder)`); a graph that does not validate is
    /// the caller's to report (the running graph is not touched). Nodes
    /// whose id, type, inputs and parameters are unchanged are kept with
    /// their state; live-parameter-only changes become live parameter
    /// changes (no rebuild); the rest is built on the owner thread and
    /// swapped in at a cycle boundary, crossfaded over `crossfadeMs` on the
    /// output ports that differ (`ReloadSwap`, docs/reload.md). Returns once
    /// the process callback has taken the new engine (or at once for a
    /// parameter-only change); the crossfade then runs on its own.
    /// - Throws: when the new graph cannot run here (sample rate, port
    ///   names, a node that cannot be made); the running graph plays on.
    /// [control-thread; not the audio thread or the owner thread]
    @discardableResult
    public func reload(graph: ValidatedGraph, crossfadeMs: Double = 20) throws -> ReloadReport {
        ThreadRole.check(.control)
        return try reloadLock.withLock { _ in
            guard !stopped.load(ordering: .acquiring) else { throw JACKError("reload: the graph has stopped") }
            let start = MonotonicClock.nanoseconds()
            let (diff, swap) = try owner.sync { [session] () throws -> (GraphDiff, ReloadSwap?) in
                try session.prepareReload(graph, crossfadeMs: crossfadeMs)
            }
            let next = owner.sync { [session] in session.compiled }
            transport.compiled.withLock { $0 = next }
            current.withLock { $0 = (next, ControlSurface(compiled: next, host: transport)) }
            guard let swap else {
                // The same engine under the new graph: no swap for the
                // monitor to follow, so it follows here.
                monitor.follow(next)
                let report = ReloadReport(diff: diff, swapped: false)
                monitor.post(.reloaded(report))
                return report
            }
            // The callback takes it at its next cycle; a stopped server never does.
            var waited = 0
            while !swap.taken.load(ordering: .acquiring) && waited < 5000 && !cycle.serverGone.load(ordering: .relaxed) {
                usleep(200)
                waited += 1
            }
            let took = swap.taken.load(ordering: .acquiring) ? Double(MonotonicClock.nanoseconds() &- start) / 1e9 : -1
            owner.wake()
            let report = ReloadReport(diff: diff, swapped: true, secondsToSwap: took)
            monitor.post(.reloaded(report))
            return report
        }
    }

    /// How long the process callback took to take the last reload's new
    /// engine (the swap alone, without rendering), in ns; 0 without
    /// `Options.measureCycles`. [any-thread]
    public var lastSwapNanoseconds: UInt64 { cycle.swapNanoseconds.load(ordering: .relaxed) }

    /// Whether a reload's crossfade is still running (its old engine not yet
    /// released). [any-thread; asks the owner thread]
    public var isReloading: Bool { owner.sync { [session] in session.reloading != nil } }

    // MARK: control

    /// Changes a live parameter (`node.param`, `node.param[i]`). [control-thread]
    public func set(_ address: String, _ value: Double) throws { ThreadRole.check(.control); try control.set(address, value) }

    /// A parameter's current value. [control-thread]
    public func value(_ address: String) throws -> Double { ThreadRole.check(.control); return try control.get(address).value }

    /// Changes a live parameter given as a word: a number, true/false, or
    /// a choice's option name (`set dec.endpoint speakers`). [control-thread]
    public func set(_ address: String, word: String) throws { ThreadRole.check(.control); try control.set(address, word: word) }

    /// Moves one source (or, with nil, every seekable source) to `seconds`.
    /// [control-thread]
    public func seek(node id: String?, seconds: Double) throws { ThreadRole.check(.control); try control.seek(node: id, seconds: seconds) }

    /// Outputs silence and holds every source where it is. [control-thread]
    public func pause() { ThreadRole.check(.control); transport.pause() }
    /// [control-thread]
    public func play() { ThreadRole.check(.control); transport.play() }

    /// The status now; reading it changes nothing. [control-thread]
    public func status() -> Status { ThreadRole.check(.control); return transport.status() }

    /// Frames each node dropped (`file-out`s whose writer fell behind:
    /// rendered, not in their file), by node id; nodes that dropped none
    /// are left out. Read after `stop`, the final counts. [any-thread]
    public var droppedFrames: [String: Int] {
        let running = compiled
        var out: [String: Int] = [:]
        for id in running.engine.ids {
            if let n = running.engine.node(id) as? DropCounting, n.droppedFrames > 0 { out[id] = n.droppedFrames }
        }
        return out
    }

    /// Whether `Options.duration` of audio has been rendered (the graph
    /// then holds, as paused). [any-thread]
    public var durationReached: Bool { cycle.durationReached.load(ordering: .acquiring) }

    /// Why the server went away, once it has. [any-thread]
    public var shutdownReason: String? { cycle.serverGone.load(ordering: .acquiring) ? cycle.shutdownReason : nil }

    /// Process-cycle durations recorded so far, in nanoseconds (with
    /// `measureCycles`); drains them. [control-thread; one at a time]
    public func takeCycleTimes() -> [UInt32] {
        ThreadRole.check(.control)
        return takeCycleSamples().map(\.nanoseconds)
    }

    /// Process cycles recorded so far (with `measureCycles`): each one's
    /// duration and `Options.cycleProbe`'s value at its end (0 without
    /// one); drains them (`takeCycleTimes` drains the same record).
    /// [control-thread; one at a time]
    public func takeCycleSamples() -> [CycleSample] {
        ThreadRole.check(.control)
        var out: [CycleSample] = []
        var v = CycleSample(nanoseconds: 0, probe: 0)
        while cycle.cycleTimes.pop(into: &v) { out.append(v) }
        return out
    }

    /// Tries to run again on a server after a shutdown: a new client with the
    /// same ports, the same engine and the connections of before (as their
    /// ports come back). Retries with backoff until `timeout` s pass or
    /// `cancelled` returns true. [main-thread]
    public func reconnect(timeout: Double, cancelled: @escaping @Sendable () -> Bool = { false }) -> Bool {
        ThreadRole.check(.main)
        guard !stopped.load(ordering: .acquiring) else { return false }
        return owner.sync { [session] in session.reconnect(timeout: timeout, cancelled: cancelled) }
    }

    /// Moves the graph to a JACK client named `name` (an NSM session
    /// switch), make before break: the new client's ports are connected
    /// where the old ones are, the cycle is handed from the old client to
    /// the new one between two cycles (no frame lost or doubled), then the
    /// old client closes. On failure the old client plays on untouched and
    /// the error is thrown. [main-thread]
    public func rename(to name: String) throws {
        ThreadRole.check(.main)
        guard !stopped.load(ordering: .acquiring) else { return }
        try owner.sync { [session] in try session.rename(to: name) }
    }

    /// Stops cleanly: deactivates, writes and closes file sinks, unregisters
    /// the ports, closes the client, stops an embedded server, and joins
    /// the owner and worker threads. Idempotent.
    /// - Returns: errors from finishing the file sinks. [main-thread]
    @discardableResult
    public func stop() -> [String] {
        ThreadRole.check(.main)
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return [] }
        let errors = owner.sync { [session] in session.stop() }
        owner.stop()
        monitor.unsubscribe(eventsToken)
        continuation.finish()
        latencyRequest?.release()
        return errors
    }
}

/// Transport and status of a live graph, for its `ControlSurface`.
/// [control-thread]
final class LiveTransport: ControlHost, @unchecked Sendable {
    private let session: JACKSession
    private var cycle: ProcessCycle { session.cycle }
    /// The running compiled graph (a reload replaces it). [any-thread]
    let compiled: Locked<CompiledGraph>
    /// The graph's monitor, for the control surfaces' front ends.
    let monitor: GraphMonitor?

    init(session: JACKSession, monitor: GraphMonitor) {
        self.session = session
        self.monitor = monitor
        compiled = Locked(session.compiled)
    }

    func pause() { cycle.paused.store(true, ordering: .relaxed) }
    func play() { cycle.paused.store(false, ordering: .relaxed) }

    var transportFollowers: [String] { session.following.withLock { $0.ids } }

    func status() -> GraphStatus {
        let running = compiled.withLock { $0 }
        let engine = running.engine
        let following = session.following.withLock { $0 }
        let transport = following.transport.map { t in
            let frame = t.frame.load(ordering: .relaxed)
            return TransportReading(state: t.reading, frame: frame, seconds: Double(frame) / running.graph.sampleRate,
                                    followers: following.ids, located: t.located.load(ordering: .relaxed))
        }
        let underruns = running.graph.nodes.compactMap { engine.node($0.id) as? UnderrunCounting }.map(\.underrunCount).reduce(0, +)
        let gone = cycle.serverGone.load(ordering: .relaxed)
        var status = GraphStatus(seconds: Double(engine.framePosition) / running.graph.sampleRate, frames: engine.framePosition,
                           peaks: session.peaks.withLock { $0 }, xruns: cycle.xruns.load(ordering: .relaxed),
                           underruns: underruns, cpuLoad: gone ? 0 : Double(bitPattern: session.cpuLoad.load(ordering: .relaxed)),
                           bufferSize: cycle.bufferSize.load(ordering: .relaxed),
                           paused: cycle.paused.load(ordering: .relaxed), finished: engine.isFinished, serverGone: gone,
                           meters: running.meterReadings,
                           damagedFrames: running.graph.nodes.compactMap { engine.node($0.id) as? DamageCounting }
                               .map(\.damagedFrames).reduce(0, +),
                           transport: transport,
                           droppedFrames: running.graph.nodes.compactMap { engine.node($0.id) as? DropCounting }
                               .map(\.droppedFrames).reduce(0, +))
            .with(resampledFrom: running.graph.nodes.compactMap { (engine.node($0.id) as? RateConverting)?.convertedFromRate },
                  graphRate: running.graph.sampleRate)
        status.waitingConnections = session.waitingPublished.withLock { $0 }
        return status
    }
}
