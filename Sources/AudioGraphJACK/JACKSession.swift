import AudioGraphHost
import CJack
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The JACK side of a running graph: the server it started (if any), the
/// client, its ports, connections, metadata and the output route, and the
/// follow-up work JACK's notifications ask for.
///
/// Threading: every method and property: [owner-thread], the one thread
/// (`OwnerThread`) that owns the client; other threads ask it through
/// `RunningGraph`. It is also the graph's main thread for the nodes: it
/// tells them the output route and reads their latencies. JACK's
/// notification callbacks only store into `ProcessCycle`'s atomics and
/// wake the owner; the latency callback reads the published
/// `LatencyPlan`.
final class JACKSession: @unchecked Sendable {
    typealias Event = RunningGraph.Event

    /// The graph as it runs (a reload replaces it).
    var graph: ValidatedGraph
    let binder: JACKPortBinder
    let options: RunningGraph.Options
    var compiled: CompiledGraph
    var engine: Engine { compiled.engine }
    let cycle: ProcessCycle
    /// The threads rendering beside JACK's process thread (`Options.threads`);
    /// nil: the process thread alone. A reload's engine renders on them too.
    let renderThreads: RenderThreads?
    /// The client's side of the cycle (its ports, by slot). [owner-thread]
    private(set) var side: ClientSide?
    /// What the client's latency callback reads (a rename gives the new
    /// client its own: for a moment there are two).
    private(set) var latency = LatencyPublisher()
    /// JACK's transport as the following sources see it; nil until a
    /// source follows it (the first may come with a reload). [owner-thread]
    private(set) var transport: JACKTransport?
    /// Carries out the transport's locates; made with `transport`.
    /// [owner-thread]
    private(set) var transportDriver: TransportDriver?
    /// The driver's thread. [owner-thread]
    private var transportThread: OwnerThread?
    /// The nodes that follow the transport, in graph order, with their
    /// runtime nodes. [owner-thread]
    private(set) var followers: [(id: String, node: any TransportFollowing)] = []
    /// The transport (nil when nothing follows it) and the followers' ids,
    /// for `status`: the owner thread writes it. [any-thread; takes a lock]
    let following = Locked<(transport: JACKTransport?, ids: [String])>((nil, []))
    /// The graph's monitor: the session posts what only it sees (routes,
    /// reconnections, connections it could not make) and shows it its
    /// counters (`GraphMonitorHost`); the monitor diffs the rest.
    let monitor: GraphMonitor
    private(set) var client: JACKClient
    /// The server this session started, if any.
    private(set) var server: JACKServer?
    /// Registered ports by slot; nil for a slot a reload gave up.
    var jackPorts: [OpaquePointer?] = []
    /// Our ports' connections as last seen, by short port name.
    private var lastConnections: [String: Set<String>] = [:]
    /// `lastConnections` and how many times they were settled, for the
    /// monitor: the owner thread writes them, the monitor's poller reads them.
    private let publishedConnections = Locked<(connections: [String: Set<String>], settled: Int)>(([:], 0))
    /// Connections to bring back after a reconnect, by slot, until the
    /// ports they name exist again.
    private var wanted: [Int: Set<String>] = [:]
    /// Nodes whose `connect` patterns match no port now, with the patterns
    /// (reported once until one matches). [owner-thread]
    private var waitingFor: [String: [String]] = [:]
    /// Ticks left in which the rules are applied again after ports came or went.
    private var rulesRecheck = 0
    /// `waitingFor` as last published, for `status`. [any-thread; takes a lock]
    let waitingPublished = Locked<[String: [String]]>([:])
    /// The route last announced, for the graph and for each route-aware node.
    private(set) var route: OutputRoute?
    var nodeRoutes: [String: OutputRoute] = [:]
    /// A reload whose swap is under way; released at a tick once done.
    var reloading: PendingReload?
    /// Called after a reload's swap is done (event sources follow the new nodes).
    var onReloaded: (() -> Void)?
    private var stopped = false
    /// The client's name when `rename` gave it one (a reconnect keeps it).
    private var renamed: String?

    // What the tick has seen of JACK's callbacks.
    private var seenSize = 0, seenConnections = 0, seenRegistrations = 0
    /// Peaks of the last few ticks, per output port (newest last).
    private var peakHistory: [[Float]] = []
    /// The metering window, in ticks (the owner thread ticks every 0.25 s
    /// at most, and whenever JACK's callbacks wake it).
    static let peakTicks = 2
    /// Peaks over the window, published for `status`. [any-thread; takes a lock]
    let peaks = Locked<[PortPeak]>([])
    /// JACK's DSP load (Double bits), read at each tick. [any-thread]
    let cpuLoad = Atomic<UInt64>(0)

    /// Finds or starts a server, opens a client, compiles the graph,
    /// registers the ports, tells route-aware nodes their route, activates
    /// and connects. Nothing touches JACK before the graph has passed its
    /// checks. [owner-thread]
    init(graph: ValidatedGraph, binder: JACKPortBinder, options: RunningGraph.Options,
         monitor: GraphMonitor, wakeup: Wakeup) throws {
        self.binder = binder
        self.options = options
        self.monitor = monitor
        try RunningGraph.checkPortNames(graph)

        var server: JACKServer?
        let running = JACKClient.serverIsRunning(options.serverName)
        switch options.server {
        case .external:
            guard running else {
                throw JACKError(JACKClient.describe(jack_status_t(rawValue: JackServerFailed.rawValue), server: options.serverName))
            }
        case .auto where running:
            break
        case .auto, .embedded:
            if running {
                throw JACKError("a JACK server \(options.serverName.map { "named '\($0)' " } ?? "")already runs; use --server external to join it, or --server-name to start another")
            }
            server = try JACKServer(name: options.serverName, driver: options.driver,
                                    sampleRate: Int(graph.sampleRate), period: options.period)
        }
        let client: JACKClient
        do {
            client = try JACKClient(name: options.clientName ?? graph.name, server: options.serverName)
        } catch {
            server?.stop()
            throw error
        }
        // Read before closing: a closed client has no rate.
        let serverRate = client.sampleRate
        var graph = graph
        if serverRate != graph.sampleRate {
            // A graph without "sampleRate" runs at the server's: validated
            // again at that rate (sources convert theirs), before anything
            // is activated. A graph that names its rate is not changed.
            guard !graph.sampleRateIsExplicit else {
                client.close()
                server?.stop()
                throw JACKError("the JACK server runs at \(Int(serverRate)) Hz but the graph at \(Int(graph.sampleRate)) Hz (its \"sampleRate\"): set the graph's \"sampleRate\" to \(Int(serverRate)), or remove it to run at the server's rate (file sources convert their own rate), or start the server at \(Int(graph.sampleRate)) Hz")
            }
            switch graph.revalidated(sampleRate: serverRate) {
            case .success(let g): graph = g
            case .failure(let errors):
                client.close()
                server?.stop()
                throw JACKError("at the JACK server's rate of \(Int(serverRate)) Hz the graph does not validate:\n\(errors)")
            }
        }
        self.graph = graph
        let maxFrames = max(options.maxFrames, client.bufferSize)
        do {
            compiled = try GraphCompiler.compile(graph, maxFrames: maxFrames, live: true)
        } catch {
            client.close()
            server?.stop()
            throw error
        }
        self.client = client
        self.server = server
        cycle = ProcessCycle(engine: compiled.engine, binder: binder, maxFrames: maxFrames,
                             measure: options.measureCycles, probe: options.cycleProbe, prefetch: options.prefetchHotMemory,
                             threadInit: options.threadInit, wakeup: wakeup)
        let engine = compiled.engine
        do {
            renderThreads = try Self.startRenderThreads(options.threads ?? graph.threads, engine: engine, client: client)
        } catch {
            client.close()
            server?.stop()
            throw error
        }
        if let d = options.duration { cycle.lastFrame.store(Int((d * graph.sampleRate).rounded()), ordering: .relaxed) }
        followers = Self.transportFollowers(graph, engine, mode: options.transport)
        engine.setTransportFollowers(Set(followers.map(\.id)))
        setTargetFill(bufferSize: client.bufferSize)
        do {
            cycle.transport = followers.isEmpty ? nil : try makeTransport()
            publishFollowers()
            try attach(client)
        } catch {
            transportThread?.stop()
            renderThreads?.stop()
            client.close()
            server?.stop()
            throw error
        }
    }

    /// The time-based sources that follow the transport: those whose
    /// `transport` parameter says so, or every one when `mode` is given.
    static func transportFollowers(_ graph: ValidatedGraph, _ engine: Engine,
                                   mode: TransportMode?) -> [(id: String, node: any TransportFollowing)] {
        graph.nodes.compactMap { n in
            guard let f = engine.node(n.id) as? TransportFollowing, (mode ?? f.transportMode) == .follow else { return nil }
            return (n.id, f)
        }
    }

    /// The transport and its driver, made the first time a source follows;
    /// starts the driver's thread. [owner-thread]
    @discardableResult
    func makeTransport() throws -> JACKTransport {
        if let transport { return transport }
        let t = JACKTransport(sampleRate: graph.sampleRate)
        let cycle = self.cycle, extra = options.extraFill
        let driver = TransportDriver(transport: t, followers: [], worker: engine.worker,
                                     readyFrames: { cycle.bufferSize.load(ordering: .relaxed) + extra })
        let thread = OwnerThread(name: "agraph-transport", interval: 0.5, wakeup: t.wakeup,
                                 purpose: "locates the sources following the JACK transport")
        thread.tick = { [unowned thread] in thread.soon = driver.tick() }
        try thread.start()
        transport = t
        transportDriver = driver
        transportThread = thread
        return t
    }

    /// Hands the followers and the engine's worker to the transport driver
    /// and to `status`. [owner-thread]
    func publishFollowers() {
        transportDriver?.update(followers: followers.map(\.node), worker: engine.worker)
        let t = followers.isEmpty ? nil : transport
        let ids = followers.map(\.id)
        following.withLock { $0 = (t, ids) }
    }

    /// Follows the transport with `next` (a reload's new followers; the
    /// transport made beforehand when there are any), and registers as a slow-sync
    /// client while any source follows. Returns the transport the process
    /// callback is to use from the swap on (nil when none follows) and
    /// whether every follower must be located again (a follower is new).
    /// [owner-thread]
    func follow(_ next: [(id: String, node: any TransportFollowing)], kept: Set<String>) -> (JACKTransport?, relocate: Bool) {
        let before = Set(followers.map(\.id))
        let relocate = next.contains { !(kept.contains($0.id) && before.contains($0.id)) }
        // Made by the caller beforehand (`makeTransport`, which can fail).
        let t = next.isEmpty ? nil : transport
        if let t, before.isEmpty {
            jack_set_sync_callback(client.handle, transportSyncCallback, Unmanaged.passUnretained(t).toOpaque())
        } else if t == nil, !before.isEmpty {
            jack_set_sync_callback(client.handle, nil, nil)
        }
        followers = next
        return (t, relocate)
    }

    /// Sets fed sources' prefetch: one period plus `extraFill`. Prefetch is
    /// not latency. [owner-thread]
    func setTargetFill(bufferSize: Int) {
        for node in graph.nodes {
            if let job = engine.node(node.id)?.backgroundJob as? FillTargeting {
                job.setTargetFill(frames: bufferSize + options.extraFill)
            }
        }
    }

    /// Registers the ports, publishes metadata and the latency plan,
    /// installs the callbacks, fills the rings, tells the nodes their route,
    /// activates and connects. [owner-thread]
    private func attach(_ client: JACKClient) throws {
        let registered = try register(on: client)
        jackPorts = registered
        let side = ClientSide(cycle: cycle, client: client.handle, ports: registered)
        self.side = side
        cycle.bindOutputs()
        latency.publish(LatencyPlan(engine: engine, binder: binder, ports: registered))
        install(on: client, side: side, latency: latency)
        cycle.bufferSize.store(client.bufferSize, ordering: .relaxed)
        seenSize = client.bufferSize
        // The route the connections will give, known before anything is
        // rendered or decoded ahead.
        let planned = plannedConnections()
        updateRoute(planned.mapValues { Set($0) })
        // Fill the rings before the first cycle so it does not underrun;
        // a job that does not get ready in time (or a stop asked for)
        // fails the start instead of holding the owner thread for ever.
        engine.worker.start()
        if let problem = waitForJobs(engine.worker, of: engine, frames: client.bufferSize) {
            engine.worker.stop()
            throw JACKError("the graph did not start: \(problem)")
        }
        // Hold the graph (silence, sources still) until its ports are
        // connected, so that the first frames are heard, not lost.
        let wasPaused = cycle.paused.exchange(true, ordering: .relaxed)
        defer { cycle.paused.store(wasPaused, ordering: .relaxed) }
        try client.activate()
        try connect(planned)
        restoreWanted()
        publishWaiting()
        connectionsSettled()
    }

    /// Waits until `worker`'s jobs can render `frames` frames, at most
    /// `options.readyTimeout` seconds and while `options.shouldStop` does
    /// not say stop. nil when they are ready; else why not, naming the
    /// nodes of `engine` whose jobs are not ready. [owner-thread]
    func waitForJobs(_ worker: BackgroundWorker, of engine: Engine, frames: Int) -> String? {
        let timeout = options.readyTimeout
        let deadline = Date().addingTimeInterval(timeout)
        let shouldStop = options.shouldStop
        var stopped = false
        let ready = worker.waitUntilReady(frames: frames, unless: {
            if shouldStop?() == true { stopped = true; return true }
            return Date() >= deadline
        })
        if ready { return nil }
        let waiting = engine.ids.filter { id in
            guard let job = engine.node(id)?.backgroundJob else { return false }
            return !job.isReady(forFrames: frames)
        }
        let which = waiting.isEmpty ? "its background jobs"
            : "the node\(waiting.count == 1 ? "" : "s") " + waiting.map { "'\($0)'" }.joined(separator: ", ")
        if stopped { return "interrupted while waiting for \(which) to have the first \(frames) frames ready" }
        let seconds = timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout)
        return "\(which) did not have the first \(frames) frames ready within \(seconds) s (a file or decoder that does not deliver)"
    }

    /// The client's connections as they are now are the ones seen: no
    /// events for them at the next tick; the route follows them.
    /// [owner-thread]
    private func connectionsSettled() {
        seenConnections = cycle.connectionEpoch.load(ordering: .relaxed)
        seenRegistrations = cycle.registrationEpoch.load(ordering: .relaxed)
        lastConnections = currentConnections()
        publishedConnections.withLock { $0 = (lastConnections, $0.settled + 1) }
        updateRoute(connectionsBySlot())
    }

    /// Registers the binder's ports on `client`, with their metadata; nil
    /// for a slot a reload gave up. [owner-thread]
    private func register(on client: JACKClient) throws -> [OpaquePointer?] {
        var registered: [OpaquePointer?] = []
        for p in binder.ports {
            if p.removed {
                registered.append(nil)
                continue
            }
            let port = try client.registerPort(p.name, isInput: p.isInput)
            registered.append(port)
            client.setProperty(port, key: RunningGraph.prettyNameKey, value: p.prettyName)
            client.setProperty(port, key: RunningGraph.layoutKey, value: p.layout.rawValue)
        }
        return registered
    }

    /// Installs JACK's callbacks on `client` (not active yet): the process
    /// and thread-init callbacks get its side, the latency callback its
    /// publisher, the others the cycle. [owner-thread]
    private func install(on client: JACKClient, side: ClientSide, latency: LatencyPublisher) {
        let context = Unmanaged.passUnretained(cycle).toOpaque()
        let sideContext = Unmanaged.passUnretained(side).toOpaque()
        let h = client.handle
        jack_set_thread_init_callback(h, threadInitCallback, sideContext)
        jack_set_process_callback(h, processCallback, sideContext)
        jack_set_buffer_size_callback(h, bufferSizeCallback, context)
        jack_set_xrun_callback(h, xrunCallback, context)
        jack_on_info_shutdown(h, shutdownCallback, context)
        jack_set_port_connect_callback(h, portConnectCallback, context)
        jack_set_port_registration_callback(h, portRegistrationCallback, context)
        jack_set_latency_callback(h, latencyCallback, Unmanaged.passUnretained(latency).toOpaque())
        if let transport, !followers.isEmpty {
            // A slow-sync client: a starting transport waits until the
            // followers are at its frame.
            jack_set_sync_callback(h, transportSyncCallback, Unmanaged.passUnretained(transport).toOpaque())
        }
    }

    /// For each port slot with `connect` patterns: the ports it will be
    /// connected to (each node's ports take the matches in order).
    /// [owner-thread]
    func plannedConnections() -> [Int: [String]] {
        var byNode: [String: [Int]] = [:]
        for (i, p) in binder.ports.enumerated() where !p.removed { byNode[p.nodeID, default: []].append(i) }
        var out: [Int: [String]] = [:]
        for (nodeID, slots) in byNode.sorted(by: { $0.key < $1.key }) {
            guard let first = slots.first else { continue }
            let patterns = binder.ports[first].connect
            guard !patterns.isEmpty else { continue }
            let isInput = binder.ports[first].isInput
            // Our inputs take from others' outputs, and the other way round.
            let candidates = client.ports(isInput: !isInput).filter { !$0.hasPrefix(client.name + ":") }
            var targets: [String] = []
            for pattern in patterns {
                targets += candidates.filter { globMatches(pattern, $0) && !targets.contains($0) }
            }
            if targets.isEmpty {
                // Said once, until a port matches: the rules keep applying
                // as ports come (`followConnectRules`).
                if waitingFor[nodeID] == nil {
                    monitor.post(.connection(ours: nodeID, other: "waiting for ports matching \(patterns.joined(separator: ", "))",
                                             connected: false))
                }
                waitingFor[nodeID] = patterns
                continue
            }
            waitingFor[nodeID] = nil
            for (k, slot) in slots.enumerated() where k < targets.count { out[slot] = [targets[k]] }
        }
        return out
    }

    /// The `connect` rules applied again after ports came or went: each of
    /// our ports with patterns is connected to the port its patterns give
    /// it now, where it is not already (a player started after the graph;
    /// a port that went and came back). Connections made otherwise are left
    /// alone. Not while a reload is under way (it connects its new ports
    /// itself). [owner-thread]
    func followConnectRules() {
        guard reloading == nil else { return }
        let current = connectionsBySlot()
        for (slot, targets) in plannedConnections().sorted(by: { $0.key < $1.key }) where jackPorts.indices.contains(slot) {
            let ours = "\(client.name):\(binder.ports[slot].name)"
            for t in targets where !(current[slot]?.contains(t) ?? false) {
                if binder.ports[slot].isInput { try? client.connect(t, ours) } else { try? client.connect(ours, t) }
            }
        }
        publishWaiting()
    }

    /// Publishes `waitingFor` for `status`. [owner-thread]
    private func publishWaiting() {
        let now = waitingFor
        waitingPublished.withLock { $0 = now }
    }

    /// Makes the planned connections. [owner-thread]
    func connect(_ planned: [Int: [String]]) throws {
        for (slot, targets) in planned.sorted(by: { $0.key < $1.key }) {
            let ours = "\(client.name):\(binder.ports[slot].name)"
            for t in targets {
                if binder.ports[slot].isInput { try client.connect(t, ours) } else { try client.connect(ours, t) }
            }
        }
    }

    /// Connects the remembered connections whose other port exists now.
    /// [owner-thread]
    private func restoreWanted() {
        guard !wanted.isEmpty else { return }
        let existing = Set(client.ports())
        for (slot, others) in wanted {
            let ours = "\(client.name):\(binder.ports[slot].name)"
            var left = others
            for o in others where existing.contains(o) {
                if binder.ports[slot].isInput { try? client.connect(o, ours) } else { try? client.connect(ours, o) }
                left.remove(o)
            }
            wanted[slot] = left.isEmpty ? nil : left
        }
    }

    func connectionsBySlot() -> [Int: Set<String>] {
        var out: [Int: Set<String>] = [:]
        for (i, port) in jackPorts.enumerated() { if let port { out[i] = Set(client.connections(of: port)) } }
        return out
    }

    private func currentConnections() -> [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        for (slot, others) in connectionsBySlot() { out[binder.ports[slot].name] = others }
        return out
    }

    // MARK: route

    /// The route of one `jack-out` node given its ports' connections:
    /// headphones when one matches its `headphones` patterns, speakers when
    /// connected to anything else, unknown when connected to nothing.
    private func route(ofSink node: ValidatedGraph.Node, _ connections: [Int: Set<String>]) -> OutputRoute {
        let patterns = node.parameters.stringList("headphones") ?? JACKOutType.defaultHeadphonePatterns
        var any = false
        for (slot, port) in binder.ports.enumerated() where port.nodeID == node.id {
            for other in connections[slot] ?? [] {
                if patterns.contains(where: { globMatches($0, other) }) { return .headphones }
                any = true
            }
        }
        return any ? .speakers : .unknown
    }

    /// Several routes as one: headphones wins, then speakers.
    private static func combine(_ routes: [OutputRoute]) -> OutputRoute {
        routes.contains(.headphones) ? .headphones : routes.contains(.speakers) ? .speakers : .unknown
    }

    /// Works out the route of the graph and of every `OutputRouteAware`
    /// node (from the `jack-out` nodes its output reaches) and tells those
    /// whose route changed. [owner-thread]
    func updateRoute(_ connections: [Int: Set<String>]) {
        let sinks = graph.nodes.filter { $0.descriptor.typeID == "jack-out" }
        var sinkRoute: [String: OutputRoute] = [:]
        for s in sinks { sinkRoute[s.id] = route(ofSink: s, connections) }
        // Downstream jack-outs of each step.
        var reaches = [Set<String>](repeating: [], count: engine.ids.count)
        for i in engine.ids.indices.reversed() {
            if sinkRoute[engine.ids[i]] != nil { reaches[i].insert(engine.ids[i]) }
            for u in engine.inputIndices[i] { reaches[u].formUnion(reaches[i]) }
        }
        for (i, id) in engine.ids.enumerated() {
            guard let node = engine.node(id) as? OutputRouteAware else { continue }
            let r = Self.combine(reaches[i].compactMap { sinkRoute[$0] })
            if nodeRoutes[id] != r {
                nodeRoutes[id] = r
                node.outputRouteChanged(r)
            }
        }
        let whole = Self.combine(Array(sinkRoute.values))
        if whole != route {
            route = whole
            monitor.post(.route(whole))
        }
    }

    // MARK: latency

    /// Recomputes the engine's compensation and the latency plan from the
    /// nodes' latencies, publishes it and has JACK ask again.
    /// [owner-thread]
    func latencyChanged() {
        let misaligned = engine.updateLatencyCompensation()
        if !misaligned.isEmpty { monitor.post(.latencyNotAligned(nodes: misaligned)) }
        latency.publish(LatencyPlan(engine: engine, binder: binder, ports: jackPorts))
        if !cycle.serverGone.load(ordering: .acquiring) { jack_recompute_total_latencies(client.handle) }
    }

    // MARK: monitor

    /// Turns what JACK's callbacks noted into events and follow-up work;
    /// meters the peaks. [owner-thread; at each wake-up]
    func tick() {
        guard !stopped else { return }
        finishReloadIfDone()
        // The monitor reports the shutdown, xruns, the period, the
        // connections (`monitorCounters`) and the nodes' counters.
        if cycle.serverGone.load(ordering: .acquiring) { return }
        let b = cycle.bufferSize.load(ordering: .relaxed)
        if b != seenSize {
            seenSize = b
            setTargetFill(bufferSize: b)
            jack_recompute_total_latencies(client.handle)
        }
        let registrations = cycle.registrationEpoch.load(ordering: .relaxed)
        if registrations != seenRegistrations {
            seenRegistrations = registrations
            restoreWanted()
            followConnectRules()
            rulesRecheck = 2
        } else if rulesRecheck > 0 {
            // A client's ports go one by one: the port list read at the
            // first change may still hold ports on their way out.
            rulesRecheck -= 1
            followConnectRules()
        }
        let epoch = cycle.connectionEpoch.load(ordering: .relaxed)
        if epoch != seenConnections {
            seenConnections = epoch
            lastConnections = currentConnections()
            publishedConnections.withLock { $0.connections = lastConnections }
            updateRoute(connectionsBySlot())
        }
        cpuLoad.store(client.cpuLoad.bitPattern, ordering: .relaxed)
        meterPeaks()
    }

    /// Takes the audio thread's peak cells into the window and publishes
    /// the window's peaks. [owner-thread]
    private func meterPeaks() {
        var now: [Float] = []
        for (i, p) in binder.ports.enumerated() where !p.isInput && !p.removed { now.append(binder.takePeak(i)) }
        // A reload may change the output ports: the window starts again.
        if let last = peakHistory.last, last.count != now.count { peakHistory.removeAll() }
        peakHistory.append(now)
        if peakHistory.count > Self.peakTicks { peakHistory.removeFirst(peakHistory.count - Self.peakTicks) }
        let names = binder.ports.filter { !$0.isInput && !$0.removed }.map(\.name)
        let held = names.indices.map { k in peakHistory.map { $0[k] }.max() ?? 0 }
        peaks.withLock { $0 = zip(names, held).map { PortPeak(port: $0, dBFS: Decibels.fromLinear(Double($1))) } }
    }

    // MARK: reconnect and stop

    /// Tries to run again on a server after a shutdown: a new client with
    /// the same ports and the same engine; the connections of before come
    /// back as their ports appear. Retries with backoff until `timeout` or
    /// until `cancelled` says so. [owner-thread]
    func reconnect(timeout: Double, cancelled: () -> Bool) -> Bool {
        var delay = 0.25
        let deadline = Date().addingTimeInterval(timeout)
        remember(lastConnections)
        client.close()
        engine.worker.stop()
        while Date() < deadline && !cancelled() {
            if JACKClient.serverIsRunning(options.serverName),
               let c = try? JACKClient(name: renamed ?? options.clientName ?? graph.name, server: options.serverName),
               c.sampleRate == graph.sampleRate, c.bufferSize <= cycle.maxFrames {
                cycle.serverGone.store(false, ordering: .releasing)
                do {
                    try adopt(c)
                    monitor.post(.reconnected)
                    for (port, others) in lastConnections.sorted(by: { $0.key < $1.key }) {
                        for o in others.sorted() { monitor.post(.connection(ours: port, other: o, connected: true)) }
                    }
                    return true
                } catch {
                    c.close()
                }
            }
            var left = delay
            while left > 0 && !cancelled() {
                usleep(50_000)
                left -= 0.05
            }
            delay = min(delay * 2, 4)
        }
        return false
    }

    /// Keeps our ports' `connections` (by short port name) to make again
    /// once the client is reopened. [owner-thread]
    private func remember(_ connections: [String: Set<String>]) {
        for (slot, port) in binder.ports.enumerated() {
            if let others = connections[port.name], !others.isEmpty { wanted[slot] = others }
        }
    }

    /// Makes `c` the session's client (a reconnect's or a rename's): its
    /// ports registered, the rings' fill set for its period, activated,
    /// the remembered connections made again. [owner-thread]
    private func adopt(_ c: JACKClient) throws {
        client = c
        lastConnections = [:]
        setTargetFill(bufferSize: c.bufferSize)
        try attach(c)
    }

    /// Moves the graph to a client named `name` (an NSM session switch
    /// gives a new client id), make before break: a reload under way
    /// finishes first; the new client is opened beside the old one, its
    /// ports registered and connected where the old ones are, and
    /// activated silent; the old client hands the cycle over between two
    /// cycles (`ClientSide`), so the graph goes on where it was with no
    /// frame lost or doubled; then the old client is closed. When the new
    /// client cannot be set up, it is closed, the old one plays on
    /// untouched and the error is thrown. [owner-thread]
    func rename(to name: String) throws {
        guard !stopped, name != client.name, let oldSide = side else { return }
        let deadline = Date().addingTimeInterval(5)
        while reloading != nil && Date() < deadline {
            finishReloadIfDone()
            if reloading != nil { usleep(5_000) }
        }
        guard reloading == nil else { throw JACKError("the reload's crossfade did not finish; the client keeps its name") }
        let old = client, oldName = client.name, oldPorts = jackPorts
        let connections = currentConnections()
        let c = try JACKClient(name: name, server: options.serverName)
        let incoming: ClientSide, publisher = LatencyPublisher()
        let registered: [OpaquePointer?]
        do {
            guard c.bufferSize == old.bufferSize, c.sampleRate == old.sampleRate else {
                throw JACKError("the new client runs at \(c.bufferSize) frames and \(Int(c.sampleRate)) Hz, the old one at \(old.bufferSize) and \(Int(old.sampleRate))")
            }
            registered = try register(on: c)
            incoming = ClientSide(cycle: cycle, client: c.handle, ports: registered, incoming: true)
            publisher.publish(LatencyPlan(engine: engine, binder: binder, ports: registered))
            install(on: c, side: incoming, latency: publisher)
            try c.activate()
            // Where the old ports are connected (our own ports by their new name).
            for (slot, port) in binder.ports.enumerated() where registered.indices.contains(slot) && registered[slot] != nil {
                let ours = "\(c.name):\(port.name)"
                for other in (connections[port.name] ?? []).sorted() {
                    let o = other.hasPrefix(oldName + ":") ? c.name + other.dropFirst(oldName.count) : other
                    if port.isInput { try c.connect(o, ours) } else { try c.connect(ours, o) }
                }
            }
        } catch {
            c.deactivate()
            c.close()
            throw error
        }
        // The handover: the old client renders one more cycle, the new one
        // every cycle after it. A server that runs no cycle for two seconds
        // gets the new client anyway, once the old one is deactivated.
        oldSide.handOver(to: incoming)
        let handedBy = Date().addingTimeInterval(2)
        while !incoming.hasTakenOver && Date() < handedBy && !cycle.serverGone.load(ordering: .acquiring) {
            usleep(1_000)
        }
        old.deactivate()
        incoming.renderEveryCycle()
        for case let port? in oldPorts { old.removeProperties(port) }
        old.close()
        client = c
        side = incoming
        latency = publisher
        jackPorts = registered
        renamed = name
        connectionsSettled()
        jack_recompute_total_latencies(c.handle)
    }

    /// Stops cleanly: deactivates, writes and closes file sinks, removes
    /// the metadata, unregisters the ports, closes the client, stops an
    /// embedded server. Idempotent.
    /// - Returns: errors from finishing the file sinks. [owner-thread]
    func stop() -> [String] {
        guard !stopped else { return [] }
        stopped = true
        transportThread?.stop()
        let serverGone = cycle.serverGone.load(ordering: .acquiring)
        if !serverGone { client.deactivate() }
        renderThreads?.stop()
        reloading?.retiredWorker.stop()
        engine.worker.stop()
        let errors = engine.worker.finishJobs().map { "\($0)" }
        if !serverGone {
            for case let port? in jackPorts {
                client.removeProperties(port)
                client.unregister(port)
            }
        }
        client.close()
        server?.stop()
        return errors
    }
}

extension JACKSession: GraphMonitorHost {
    /// The process cycle's counters and our ports' connections as last
    /// seen. [any-thread; atomics and a lock]
    func monitorCounters() -> HostCounters? {
        let gone = cycle.serverGone.load(ordering: .acquiring)
        let (connections, settled) = publishedConnections.withLock { $0 }
        return HostCounters(xruns: cycle.xruns.load(ordering: .relaxed), paused: cycle.paused.load(ordering: .relaxed),
                            shutdownReason: gone ? cycle.shutdownReason : nil,
                            bufferSize: cycle.bufferSize.load(ordering: .relaxed),
                            connections: connections, connectionsSettled: settled)
    }
}
