import AudioGraph
import CJack
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A graph running live inside a JACK client's process callback.
///
/// Threading:
/// - `start`, `stop`, `set`, `value`, `seek`, `pause`, `play`, `status`:
///   [main-thread or control-thread], one at a time.
/// - `events`: any task may iterate it.
/// - The process callback runs on JACK's real-time thread and only fetches
///   port buffers and calls `Engine.render`. The other JACK callbacks (xrun,
///   buffer size, shutdown, port connections) only store into atomics; a
///   monitor thread turns those into `events` and does the follow-up work.
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
        /// Fed sources keep this many frames ahead beyond one period.
        public var extraFill = 256
        /// Record every process cycle's duration (for benchmarks).
        public var measureCycles = false
        /// Called once on JACK's process thread when it starts (e.g. to set
        /// thread affinity); must itself be real-time safe.
        public var threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
        public init() {}
    }

    public enum Event: Sendable, Equatable {
        case xrun(total: Int)
        case underrun(node: String, total: Int)
        case endOfStream
        case bufferSize(Int)
        case connection(ours: String, other: String, connected: Bool)
        /// The JACK server went away.
        case shutdown(reason: String)
        /// The graph runs again on a (new) server after a shutdown.
        case reconnected
        /// The output route changed: headphones or not (see `outputIsHeadphones`).
        case route(headphones: Bool)
    }

    public struct Status: Sendable {
        public var seconds: Double
        public var frames: Int
        /// Peak of each output port since the last status, in dBFS.
        public var peaks: [(port: String, dBFS: Double)]
        public var xruns: Int
        public var underruns: Int
        /// JACK's DSP load, percent.
        public var cpuLoad: Double
        public var bufferSize: Int
        public var paused: Bool
        public var finished: Bool
        public var serverGone: Bool
    }

    public let graph: ValidatedGraph
    public let compiled: CompiledGraph
    public var engine: Engine { compiled.engine }
    public let binder: JACKPortBinder
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    public private(set) var client: JACKClient
    /// The server this graph started, if any.
    public private(set) var server: JACKServer?
    private var jackPorts: [OpaquePointer] = []
    let cycle: ProcessCycle
    private let options: Options
    private var monitor: Thread?
    private let monitorStop = Atomic<Bool>(false)
    private var stopped = false
    private var lastConnections: [String: Set<String>] = [:]
    /// Fed nodes whose underruns the monitor reports. [set before the monitor starts]
    private var underrunNodes: [(String, any UnderrunCounting)] = []

    // MARK: start

    /// Finds or starts a server, opens a client, compiles and activates the
    /// graph, connects its ports. Nothing touches JACK before the graph has
    /// passed its checks. [main-thread]
    /// - Parameter graph: validated with `NodeRegistry.withJACK(binder)`.
    public init(graph: ValidatedGraph, binder: JACKPortBinder, options: Options = Options()) throws {
        self.graph = graph
        self.binder = binder
        self.options = options
        try Self.checkPortNames(graph)

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
        self.server = server
        let client: JACKClient
        do {
            client = try JACKClient(name: options.clientName ?? graph.name, server: options.serverName)
        } catch {
            server?.stop()
            throw error
        }
        self.client = client
        guard client.sampleRate == graph.sampleRate else {
            client.close()
            server?.stop()
            throw JACKError("the JACK server runs at \(Int(client.sampleRate)) Hz but the graph at \(Int(graph.sampleRate)) Hz, and resampling is not available yet: set the graph's \"sampleRate\" to \(Int(client.sampleRate))")
        }
        let maxFrames = max(options.maxFrames, client.bufferSize)
        do {
            compiled = try GraphCompiler.compile(graph, maxFrames: maxFrames, live: true)
        } catch {
            client.close()
            server?.stop()
            throw error
        }
        cycle = ProcessCycle(engine: compiled.engine, binder: binder, maxFrames: maxFrames,
                             measure: options.measureCycles)
        (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        setTargetFill(bufferSize: client.bufferSize)
        do {
            try attach(client)
        } catch {
            client.close()
            server?.stop()
            throw error
        }
        startMonitor()
    }

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

    /// Registers the ports, installs the callbacks, fills the rings,
    /// activates and connects. [main-thread]
    private func attach(_ client: JACKClient) throws {
        var registered: [OpaquePointer] = []
        for p in binder.ports {
            let port = try client.registerPort(p.name, isInput: p.isInput)
            registered.append(port)
            client.setProperty(port, key: Self.prettyNameKey, value: p.prettyName)
            client.setProperty(port, key: Self.layoutKey, value: p.layout.rawValue)
        }
        jackPorts = registered
        cycle.bind(ports: registered)
        let context = Unmanaged.passUnretained(cycle).toOpaque()
        let h = client.handle
        if options.threadInit != nil {
            cycle.threadInit = options.threadInit
            cycle.clientHandle = h
            jack_set_thread_init_callback(h, threadInitCallback, context)
        }
        jack_set_process_callback(h, processCallback, context)
        jack_set_buffer_size_callback(h, bufferSizeCallback, context)
        jack_set_xrun_callback(h, xrunCallback, context)
        jack_on_info_shutdown(h, shutdownCallback, context)
        jack_set_port_connect_callback(h, portConnectCallback, context)
        jack_set_latency_callback(h, latencyCallback, Unmanaged.passUnretained(self).toOpaque())
        cycle.bufferSize.store(client.bufferSize, ordering: .relaxed)
        // Fill the rings before the first cycle so it does not underrun.
        engine.worker.start()
        engine.worker.waitUntilReady(frames: client.bufferSize)
        // Hold the graph (silence, sources still) until its ports are
        // connected, so that the first frames are heard, not lost.
        let wasPaused = cycle.paused.exchange(true, ordering: .relaxed)
        defer { cycle.paused.store(wasPaused, ordering: .relaxed) }
        try client.activate()
        try connectPorts()
        lastConnections = currentConnections()
        updateRoute()
    }

    /// The name of the live boolean parameter through which nodes learn the
    /// output route (headphones or not), e.g. the daa node's `endpoint: auto`.
    public static let routeParameter = "outputIsHeadphones"
    private var lastRoute: Bool?

    /// Whether any `jack-out` port is connected to a port matching that
    /// node's `headphones` patterns. [main-thread or monitor thread]
    public var outputIsHeadphones: Bool {
        for node in graph.nodes where node.descriptor.typeID == "jack-out" {
            let patterns = node.parameters.stringList("headphones") ?? JACKOutType.defaultHeadphonePatterns
            for (slot, port) in binder.ports.enumerated() where port.nodeID == node.id && slot < jackPorts.count {
                for other in client.connections(of: jackPorts[slot]) where patterns.contains(where: { globMatches($0, other) }) {
                    return true
                }
            }
        }
        return false
    }

    /// Tells the nodes that follow the route (a live boolean parameter
    /// `outputIsHeadphones`) when it changes, as DAAPlay follows route
    /// changes. [main-thread or monitor thread]
    private func updateRoute() {
        let headphones = outputIsHeadphones
        guard headphones != lastRoute else { return }
        lastRoute = headphones
        for node in graph.nodes {
            guard let index = node.descriptor.parameterIndex(named: Self.routeParameter),
                  node.descriptor.parameters[index].live,
                  let step = engine.stepIndex(of: node.id) else { continue }
            engine.post(ParameterChange(node: Int32(step), parameter: Int32(index), value: headphones ? 1 : 0))
        }
        continuation.yield(.route(headphones: headphones))
    }

    /// JACK's own pretty-name key (`JACK_METADATA_PRETTY_NAME` in metadata.h).
    public static let prettyNameKey = "http://jackaudio.org/metadata/pretty-name"

    /// Metadata key under which each port publishes its stream's layout tag.
    public static let layoutKey = "urn:audiograph:channel-layout"

    /// Connects each node's ports to the ports its `connect` patterns name,
    /// in order. [main-thread]
    private func connectPorts() throws {
        var byNode: [String: [(Int, JACKPortBinder.Port)]] = [:]
        for (i, p) in binder.ports.enumerated() { byNode[p.nodeID, default: []].append((i, p)) }
        for (nodeID, ports) in byNode {
            guard let patterns = ports.first?.1.connect, !patterns.isEmpty else { continue }
            let isInput = ports[0].1.isInput
            // Our inputs take from others' outputs, and the other way round.
            let candidates = client.ports(isInput: !isInput).filter { !$0.hasPrefix(client.name + ":") }
            var targets: [String] = []
            for pattern in patterns {
                targets += candidates.filter { globMatches(pattern, $0) && !targets.contains($0) }
            }
            if targets.isEmpty {
                continuation.yield(.connection(ours: nodeID, other: "no port matches \(patterns)", connected: false))
                continue
            }
            for (k, (slot, _)) in ports.enumerated() where k < targets.count {
                let ours = "\(client.name):\(binder.ports[slot].name)"
                if isInput { try client.connect(targets[k], ours) } else { try client.connect(ours, targets[k]) }
            }
        }
    }

    private func currentConnections() -> [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        for (i, port) in jackPorts.enumerated() {
            out[binder.ports[i].name] = Set(client.connections(of: port))
        }
        return out
    }

    private func setTargetFill(bufferSize: Int) {
        for node in graph.nodes {
            if let job = engine.node(node.id)?.backgroundJob as? FillTargeting {
                job.setTargetFill(frames: bufferSize + options.extraFill)
            }
        }
    }

    // MARK: control

    /// Changes a live parameter (`node.param`, `node.param[i]`). [control-thread]
    public func set(_ address: String, _ value: Double) throws { try compiled.set(address, value) }

    /// A parameter's current value. [control-thread]
    public func value(_ address: String) throws -> Double { try compiled.value(address) }

    /// Changes a live parameter given as a word: a number, true/false, or
    /// a choice's option name (`set dec.endpoint speakers`). [control-thread]
    public func set(_ address: String, word: String) throws {
        try compiled.set(address, try compiled.number(address, word: word))
    }

    /// Moves one source (or, with nil, every seekable source) to `seconds`.
    /// [control-thread]
    public func seek(node id: String?, seconds: Double) throws {
        let targets = graph.nodes.filter { id == nil || $0.id == id }
            .compactMap { n in engine.node(n.id).flatMap { $0 as? SeekableNode }.map { (n.id, $0) } }
        guard !targets.isEmpty else {
            let seekable = graph.nodes.filter { engine.node($0.id) is SeekableNode }.map(\.id)
            throw JACKError(id.map { "'\($0)' cannot seek" } ?? "nothing in this graph can seek"
                            + "; seekable nodes: \(seekable.isEmpty ? "none" : seekable.joined(separator: ", "))")
        }
        let frame: Int
        do { frame = try FrameTime.frames(seconds: seconds, sampleRate: graph.sampleRate) } catch {
            throw JACKError("cannot seek to \(error)")
        }
        for (nodeID, node) in targets where !node.seek(toFrame: frame) {
            let length = node.lengthFrames.map { " (it is \(Double($0) / graph.sampleRate) s long)" } ?? ""
            throw JACKError("cannot seek '\(nodeID)' to \(seconds) s\(length)")
        }
        engine.worker.wake()
    }

    /// Outputs silence and holds every source where it is. [control-thread]
    public func pause() { cycle.paused.store(true, ordering: .relaxed) }
    /// [control-thread]
    public func play() { cycle.paused.store(false, ordering: .relaxed) }

    /// A snapshot; reading it resets the peak meters. [control-thread]
    public func status() -> Status {
        let peaks = binder.ports.enumerated().filter { !$0.element.isInput }.map { i, p in
            (port: p.name, dBFS: Decibels.fromLinear(Double(binder.takePeak(i))))
        }
        let underruns = graph.nodes.compactMap { engine.node($0.id) as? UnderrunCounting }.map(\.underrunCount).reduce(0, +)
        return Status(seconds: Double(engine.framePosition) / graph.sampleRate, frames: engine.framePosition,
                      peaks: peaks, xruns: cycle.xruns.load(ordering: .relaxed), underruns: underruns,
                      cpuLoad: cycle.serverGone.load(ordering: .relaxed) ? 0 : client.cpuLoad,
                      bufferSize: cycle.bufferSize.load(ordering: .relaxed),
                      paused: cycle.paused.load(ordering: .relaxed), finished: engine.isFinished,
                      serverGone: cycle.serverGone.load(ordering: .relaxed))
    }

    /// Why the server went away, once it has. [any thread]
    public var shutdownReason: String? { cycle.serverGone.load(ordering: .acquiring) ? cycle.shutdownReason : nil }

    /// Process-cycle durations recorded so far, in nanoseconds (with
    /// `measureCycles`); drains them. [control-thread]
    public func takeCycleTimes() -> [UInt32] {
        var out: [UInt32] = []
        var v: UInt32 = 0
        while cycle.cycleTimes.pop(into: &v) { out.append(v) }
        return out
    }

    /// Tries to run again on a server after a shutdown: a new client with the
    /// same ports and the same engine. Retries with backoff until `timeout`.
    /// [main-thread]
    public func reconnect(timeout: Double) -> Bool {
        var delay = 0.25
        let deadline = Date().addingTimeInterval(timeout)
        client.close()
        engine.worker.stop()
        while Date() < deadline {
            if JACKClient.serverIsRunning(options.serverName),
               let c = try? JACKClient(name: options.clientName ?? graph.name, server: options.serverName),
               c.sampleRate == graph.sampleRate, c.bufferSize <= cycle.maxFrames {
                cycle.serverGone.store(false, ordering: .releasing)
                client = c
                setTargetFill(bufferSize: c.bufferSize)
                do {
                    try attach(c)
                    continuation.yield(.reconnected)
                    return true
                } catch {
                    c.close()
                }
            }
            usleep(UInt32(delay * 1e6))
            delay = min(delay * 2, 4)
        }
        return false
    }

    /// Stops cleanly: deactivates, writes and closes file sinks, unregisters
    /// the ports, closes the client, stops an embedded server. Idempotent.
    /// - Returns: errors from finishing the file sinks. [main-thread]
    @discardableResult
    public func stop() -> [String] {
        guard !stopped else { return [] }
        stopped = true
        monitorStop.store(true, ordering: .releasing)
        cycle.monitorWakeup.signal()
        let serverGone = cycle.serverGone.load(ordering: .acquiring)
        if !serverGone { client.deactivate() }
        engine.worker.stop()
        let errors = engine.worker.finishJobs().map { "\($0)" }
        if !serverGone {
            for port in jackPorts {
                client.removeProperties(port)
                client.unregister(port)
            }
        }
        client.close()
        server?.stop()
        continuation.finish()
        return errors
    }

    // MARK: monitor

    /// The monitor sleeps until a JACK callback signals it (xrun, buffer
    /// size, shutdown, connections) or 250 ms pass (underruns, end of
    /// stream): no periodic wake-ups at the rate of the audio.
    private func startMonitor() {
        underrunNodes = graph.nodes.compactMap { n in (engine.node(n.id) as? UnderrunCounting).map { (n.id, $0) } }
        let t = Thread { [weak self] in
            var xruns = 0, size = 0, connectionEpoch = 0, ended = false
            var underruns: [String: Int] = [:]
            while let self, !self.monitorStop.load(ordering: .acquiring) {
                if self.cycle.serverGone.load(ordering: .acquiring) {
                    self.continuation.yield(.shutdown(reason: self.cycle.shutdownReason))
                    // Wait for the owner to stop or reconnect.
                    while self.cycle.serverGone.load(ordering: .acquiring) && !self.monitorStop.load(ordering: .acquiring) {
                        self.cycle.monitorWakeup.wait(timeout: 0.05)
                    }
                    continue
                }
                let x = self.cycle.xruns.load(ordering: .relaxed)
                if x != xruns { xruns = x; self.continuation.yield(.xrun(total: x)) }
                let b = self.cycle.bufferSize.load(ordering: .relaxed)
                if b != size {
                    if size != 0 {
                        self.setTargetFill(bufferSize: b)
                        jack_recompute_total_latencies(self.client.handle)
                        self.continuation.yield(.bufferSize(b))
                    }
                    size = b
                }
                for (id, node) in self.underrunNodes {
                    let u = node.underrunCount
                    if u != underruns[id, default: 0] {
                        underruns[id] = u
                        self.continuation.yield(.underrun(node: id, total: u))
                    }
                }
                let epoch = self.cycle.connectionEpoch.load(ordering: .relaxed)
                if epoch != connectionEpoch {
                    connectionEpoch = epoch
                    let now = self.currentConnections()
                    for (port, others) in now {
                        let before = self.lastConnections[port] ?? []
                        for o in others.subtracting(before) { self.continuation.yield(.connection(ours: port, other: o, connected: true)) }
                        for o in before.subtracting(others) { self.continuation.yield(.connection(ours: port, other: o, connected: false)) }
                    }
                    self.lastConnections = now
                    self.updateRoute()
                }
                if self.engine.isFinished && !ended {
                    ended = true
                    self.continuation.yield(.endOfStream)
                }
                self.cycle.monitorWakeup.wait(timeout: 0.25)
            }
        }
        t.name = "agraph-monitor"
        t.start()
        monitor = t
    }

    // MARK: latency

    /// JACK asks for our ports' latencies. [JACK's notification thread]
    ///
    /// Capture direction: an output port's latency is the capture latency
    /// of the `jack-in` ports that feed it (if any) plus the graph's own
    /// latency on the way (fed sources add their ring's target fill).
    /// Playback direction: an input port's latency is the largest playback
    /// latency of the output ports it reaches plus the graph's latency.
    fileprivate func reportLatency(mode: jack_latency_callback_mode_t) {
        let latencies = engine.latencies
        // Per jack-out node: its own input's latency and whether jack-in feeds it.
        var steps: [String: Int] = [:]
        for (i, id) in engine.ids.enumerated() { steps[id] = i }
        func upstream(_ step: Int) -> Set<Int> {
            var seen: Set<Int> = [], stack = [step]
            while let s = stack.popLast() {
                for u in engine.inputIndices[s] where !seen.contains(u) { seen.insert(u); stack.append(u) }
            }
            return seen
        }
        let inSlots = binder.ports.indices.filter { binder.ports[$0].isInput }
        let outSlots = binder.ports.indices.filter { !binder.ports[$0].isInput }
        if mode == JackCaptureLatency {
            var captureIn = jack_latency_range_t(min: 0, max: 0)
            for s in inSlots {
                var r = jack_latency_range_t()
                jack_port_get_latency_range(jackPorts[s], JackCaptureLatency, &r)
                captureIn.min = max(captureIn.min, r.min)
                captureIn.max = max(captureIn.max, r.max)
            }
            for s in outSlots {
                guard let step = steps[binder.ports[s].nodeID], let feed = engine.inputIndices[step].first else { continue }
                let own = UInt32(latencies[feed])
                let jackIn = Set(binder.ports.filter(\.isInput).map(\.nodeID))
                let fromJackIn = upstream(step).contains { jackIn.contains(engine.ids[$0]) }
                var r = jack_latency_range_t(min: own + (fromJackIn ? captureIn.min : 0), max: own + (fromJackIn ? captureIn.max : 0))
                jack_port_set_latency_range(jackPorts[s], JackCaptureLatency, &r)
            }
        } else {
            for s in inSlots {
                var r = jack_latency_range_t(min: 0, max: 0)
                for o in outSlots {
                    guard let step = steps[binder.ports[o].nodeID], let feed = engine.inputIndices[step].first,
                          upstream(step).contains(where: { engine.ids[$0] == binder.ports[s].nodeID }) else { continue }
                    var out = jack_latency_range_t()
                    jack_port_get_latency_range(jackPorts[o], JackPlaybackLatency, &out)
                    let own = UInt32(latencies[feed])
                    r.min = max(r.min, out.min + own)
                    r.max = max(r.max, out.max + own)
                }
                jack_port_set_latency_range(jackPorts[s], JackPlaybackLatency, &r)
            }
        }
    }
}

/// What JACK's callbacks touch: preallocated, atomics only.
final class ProcessCycle: @unchecked Sendable {
    let engine: Engine
    let binder: JACKPortBinder
    let maxFrames: Int
    private var ports: UnsafeMutablePointer<OpaquePointer?>
    private var portCount = 0
    private var outputSlots: UnsafeMutablePointer<Int>
    private var outputCount = 0
    let paused = Atomic<Bool>(false)
    let xruns = Atomic<Int>(0)
    let bufferSize = Atomic<Int>(0)
    let oversizedCycles = Atomic<Int>(0)
    let connectionEpoch = Atomic<Int>(0)
    let serverGone = Atomic<Bool>(false)
    /// Wakes the monitor thread; JACK's callbacks signal it (sem_post never
    /// blocks or allocates).
    let monitorWakeup = Wakeup()
    /// The end of stream was signalled to the monitor. [audio-thread]
    private var endSignalled = false
    /// `Options.threadInit`, and the client whose process thread runs it.
    /// [set before activation]
    var threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    var clientHandle: OpaquePointer?
    /// The reason JACK gave, copied without allocating.
    private let reasonBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
    let measure: Bool
    let cycleTimes = SPSCRing<UInt32>(minimumCapacity: 1 << 16)

    init(engine: Engine, binder: JACKPortBinder, maxFrames: Int, measure: Bool) {
        self.engine = engine
        self.binder = binder
        self.maxFrames = maxFrames
        self.measure = measure
        ports = .allocate(capacity: JACKPortBinder.capacity)
        ports.initialize(repeating: nil, count: JACKPortBinder.capacity)
        outputSlots = .allocate(capacity: JACKPortBinder.capacity)
        outputSlots.initialize(repeating: 0, count: JACKPortBinder.capacity)
        reasonBuffer.initialize(repeating: 0, count: 256)
    }

    deinit {
        ports.deallocate()
        outputSlots.deallocate()
        reasonBuffer.deallocate()
    }

    /// [main-thread, while the client is not active]
    func bind(ports registered: [OpaquePointer]) {
        for (i, p) in registered.enumerated() { ports[i] = p }
        portCount = registered.count
        outputCount = 0
        for (i, p) in binder.ports.enumerated() where !p.isInput {
            outputSlots[outputCount] = i
            outputCount += 1
        }
    }

    var shutdownReason: String { String(cString: reasonBuffer) }

    /// One JACK cycle. [audio-thread]
    @inline(__always)
    func run(_ frames: UInt32) {
        let start = measure ? MonotonicClock.nanoseconds() : 0
        let n = Int(frames)
        var i = 0
        while i < portCount {
            binder.buffers[i] = jack_port_get_buffer(ports[i], frames)?.assumingMemoryBound(to: Float.self)
            i += 1
        }
        if n > maxFrames || paused.load(ordering: .relaxed) {
            if n > maxFrames { oversizedCycles.add(1, ordering: .relaxed) }
            i = 0
            while i < outputCount {
                if let b = binder.buffers[outputSlots[i]] { Kernels.fill(b, count: n, value: 0) }
                i += 1
            }
        } else {
            engine.render(frames: n)
            // Tell the monitor at once, not at its next timeout.
            if !endSignalled && engine.isFinished {
                endSignalled = true
                monitorWakeup.signal()
            }
        }
        if measure {
            let took = MonotonicClock.nanoseconds() &- start
            _ = cycleTimes.push(UInt32(truncatingIfNeeded: min(took, UInt64(UInt32.max))))
        }
    }

    /// [any JACK thread]
    func noteShutdown(_ reason: UnsafePointer<CChar>?) {
        if let reason { strncpy(reasonBuffer, reason, 255) }
        serverGone.store(true, ordering: .releasing)
        monitorWakeup.signal()
    }
}

// MARK: C callbacks (they never return non-zero: JACK would stop calling)

private func cycle(_ arg: UnsafeMutableRawPointer?) -> ProcessCycle? {
    arg.map { Unmanaged<ProcessCycle>.fromOpaque($0).takeUnretainedValue() }
}

/// [audio-thread]
private let processCallback: JackProcessCallback = { frames, arg in
    cycle(arg)?.run(frames)
    return 0
}

/// [every thread libjack starts for the client: JACK2 calls the thread-init
/// callback on its notification threads too] Forwards to
/// `Options.threadInit` on the process thread only.
private let threadInitCallback: JackThreadInitCallback = { arg in
    guard let c = cycle(arg), let handle = c.clientHandle, let user = c.threadInit else { return }
    if pthread_equal(pthread_self(), jack_client_thread_id(handle)) != 0 { user(nil) }
}

/// [a JACK thread] Buffers were sized for `maxFrames`: only note the size.
private let bufferSizeCallback: JackBufferSizeCallback = { frames, arg in
    if let c = cycle(arg) {
        c.bufferSize.store(Int(frames), ordering: .relaxed)
        c.monitorWakeup.signal()
    }
    return 0
}

/// [a JACK thread]
private let xrunCallback: JackXRunCallback = { arg in
    if let c = cycle(arg) {
        c.xruns.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
    return 0
}

/// [a JACK thread] The server is gone: set a flag; the main thread reports.
private let shutdownCallback: JackInfoShutdownCallback = { _, reason, arg in
    cycle(arg)?.noteShutdown(reason)
}

/// [JACK's notification thread]
private let portConnectCallback: JackPortConnectCallback = { _, _, _, arg in
    if let c = cycle(arg) {
        c.connectionEpoch.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
}

/// [JACK's notification thread]
private let latencyCallback: JackLatencyCallback = { mode, arg in
    guard let arg else { return }
    Unmanaged<RunningGraph>.fromOpaque(arg).takeUnretainedValue().reportLatency(mode: mode)
}
