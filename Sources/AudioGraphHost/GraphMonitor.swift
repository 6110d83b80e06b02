// One watcher of a running graph for every front end. The console, the
// OSC server, the NSM session and the Swift API (`RunningGraph.events`) all
// subscribe to the same `GraphMonitor`: it looks at the nodes (meters,
// readings, playlists, underruns, dropped frames, the end) and at the
// host's counters (xruns, pause, shutdown, buffer size, connections) once
// per poll, turns what changed into `GraphEvent`s, and hands the same
// values, in the same order, to each subscriber. No JACK, no OSC: a host
// supplies its counters through `GraphMonitorHost`.

import AudioGraphCore
import GraphFile
import Synchronization

/// Something that happened in a running graph, as every front end sees it.
public enum GraphEvent: Sendable, Equatable {
    /// The host's xruns so far.
    case xrun(total: Int)
    /// A fed node found too little audio: its total so far.
    case underrun(node: String, total: Int)
    /// A node dropped frames (a `file-out` whose writer fell behind:
    /// they are not in its file): its total so far.
    case dropped(node: String, total: Int)
    /// The graph played to its end.
    case endOfStream
    /// The host's period changed.
    case bufferSize(Int)
    /// One of our ports (by short name) was connected to or disconnected
    /// from another.
    case connection(ours: String, other: String, connected: Bool)
    /// The host (the JACK server) went away.
    case shutdown(reason: String)
    /// The graph runs again on a (new) server after a shutdown.
    case reconnected
    /// The output route changed (from the `jack-out` nodes' connections
    /// and their `headphones` patterns).
    case route(OutputRoute)
    /// A node's latency changed and the listed nodes' inputs could not
    /// be aligned again (more delay than their lines hold).
    case latencyNotAligned(nodes: [String])
    /// A `meter` node finished a window (at most one event per meter per
    /// poll, with its latest window).
    case meter(MeterReading)
    /// A `playlist` node's item started, ended, was skipped or failed
    /// (published when the audio reaches it).
    case playlist(PlaylistEvent)
    /// A node's reading changed (`ReadingPublishing`: an LV2 plugin's
    /// control output), looked at on each poll.
    case reading(node: String, name: String, value: Double)
    /// A hot reload took effect: what changed.
    case reloaded(ReloadReport)
    /// The graph was paused (true) or plays again (false).
    case paused(Bool)
    /// A live parameter was set (by any front end) to a value other than
    /// the one seen at the last poll: its address and value, one event per
    /// parameter per poll, by address.
    case parameter(address: String, value: Double)
}

/// What a host shows its monitor at each poll.
public struct HostCounters: Sendable, Equatable {
    /// Xruns so far.
    public var xruns: Int
    /// Whether the host holds the graph paused.
    public var paused: Bool
    /// Whether the host says the graph has ended (besides the engine's own
    /// end, which the monitor sees itself).
    public var finished: Bool
    /// Why the host (the server) went away; nil while it runs.
    public var shutdownReason: String?
    /// The host's period, in frames (0: not known).
    public var bufferSize: Int
    /// Our ports' connections: short port name → the ports each is
    /// connected to.
    public var connections: [String: Set<String>]
    /// A count the host moves on when it made its connections itself (at
    /// start, after a reconnect or a rename): the monitor then takes
    /// `connections` as they are, with no events for them.
    public var connectionsSettled: Int

    public init(xruns: Int = 0, paused: Bool = false, finished: Bool = false, shutdownReason: String? = nil,
                bufferSize: Int = 0, connections: [String: Set<String>] = [:], connectionsSettled: Int = 0) {
        self.connectionsSettled = connectionsSettled
        self.xruns = xruns
        self.paused = paused
        self.finished = finished
        self.shutdownReason = shutdownReason
        self.bufferSize = bufferSize
        self.connections = connections
    }
}

/// The host of a monitored graph (a live JACK session, a test's fake):
/// its counters, read once per poll.
public protocol GraphMonitorHost: AnyObject {
    /// The counters now; nil when there is nothing to tell (the host is
    /// gone). [main-thread | owner-thread | control-thread; on whichever
    /// thread polls the monitor, one poll at a time]
    func monitorCounters() -> HostCounters?
}

/// A subscriber's place in a monitor's events: each reader keeps its own.
/// [any-thread; the object's owning thread]
public struct GraphEventCursor: Sendable, Equatable {
    /// The sequence number of the next event this reader takes.
    public fileprivate(set) var next: Int
    /// Events this reader lost because it fell more than the monitor's
    /// capacity behind (the oldest are dropped for it alone).
    public fileprivate(set) var missed = 0
    fileprivate init(next: Int) { self.next = next }
}

/// The one watcher of a running graph that every front end subscribes to.
///
/// A poll looks at every source once and appends what changed to one
/// log, numbered in order. Subscribers either pull with their own
/// `GraphEventCursor` (`subscribe()`, then `events(since:)`) or get a
/// callback for each event (`subscribe(_:)`); either way each gets every
/// event once, in order. A puller that stops pulling holds nothing up:
/// the log keeps the newest `capacity` events, and a puller that fell
/// further behind loses its oldest ones (counted in `missed`), no one
/// else's.
///
/// Threading: every member [main-thread | owner-thread | control-thread;
/// takes a lock], never the audio thread.
/// - `poll`: a live host's owner thread polls at each tick; a front end
///   wanting quicker events (OSC) may poll too. Polls are serialized, and
///   each diff happens once, whoever polls.
/// - Callbacks run on the thread that polled or posted, one event at a
///   time, in order; they must not block, nor poll or post.
public final class GraphMonitor: @unchecked Sendable {
    /// The events kept for pullers.
    public let capacity: Int

    /// The log: `events[0]` has sequence number `first`.
    private struct Log {
        var events: [GraphEvent] = []
        var first = 0
        var end: Int { first + events.count }
    }
    private let log = Locked(Log())

    /// The state a poll diffs against. Only touched under `pollLock`.
    private struct Sources {
        var meters: [(node: any MeterReporting, seen: Int)] = []
        var readings: [(id: String, node: any ReadingPublishing, names: [String], seen: [Double?])] = []
        var playlists: [(node: any PlaylistControlling, seen: Int)] = []
        var underruns: [(id: String, node: any UnderrunCounting, seen: Int)] = []
        var drops: [(id: String, node: any DropCounting, seen: Int)] = []
        var engine: Engine?
        /// The graph whose live values are watched, and what was seen of them.
        var compiled: CompiledGraph?
        var valuesSet = 0
        var values: [String: Double] = [:]
        var ended = false
        var counters = HostCounters()
        var shutdownReported = false
    }
    private let pollLock = Locked(Sources())
    private weak var host: (any GraphMonitorHost)?

    /// The callback subscribers. Events are appended to the log and handed
    /// to them under this lock, so each callback sees each event once, in
    /// the log's order, however many threads poll and post.
    private struct Callbacks {
        var subscribers: [(token: Int, call: @Sendable (GraphEvent) -> Void)] = []
        var nextToken = 0
    }
    private let callbacks = Locked(Callbacks())

    /// A monitor of `compiled` (nil: none yet, `follow` gives it one),
    /// with `host`'s counters (held weakly; nil: the graph alone).
    /// [main-thread | owner-thread | control-thread]
    public init(compiled: CompiledGraph? = nil, host: (any GraphMonitorHost)? = nil, capacity: Int = 4096) {
        ThreadRole.check(.main, .owner, .control)
        self.capacity = max(capacity, 1)
        self.host = host
        if let compiled { follow(compiled) }
    }

    /// Gives the monitor its host (held weakly). [main-thread | owner-thread | control-thread; takes a lock]
    public func setHost(_ host: (any GraphMonitorHost)?) {
        ThreadRole.check(.main, .owner, .control)
        pollLock.withLock { _ in self.host = host }
    }

    /// Watches `compiled`'s nodes from here on (a reload's new graph).
    /// Nodes kept from the graph watched before (the same objects) go on
    /// from what was seen of them; new nodes are watched from their start.
    /// [main-thread | owner-thread | control-thread; takes a lock]
    public func follow(_ compiled: CompiledGraph) {
        ThreadRole.check(.main, .owner, .control)
        let engine = compiled.engine
        let nodes = compiled.graph.nodes.compactMap { n in engine.node(n.id).map { (id: n.id, node: $0) } }
        pollLock.withLock { s in
            var meters: [(node: any MeterReporting, seen: Int)] = []
            var readings: [(id: String, node: any ReadingPublishing, names: [String], seen: [Double?])] = []
            var playlists: [(node: any PlaylistControlling, seen: Int)] = []
            var underruns: [(id: String, node: any UnderrunCounting, seen: Int)] = []
            var drops: [(id: String, node: any DropCounting, seen: Int)] = []
            // What was seen of each node kept, by object (a graph may have
            // thousands of nodes).
            func seen<T>(_ list: [T], _ object: (T) -> AnyObject, _ value: (T) -> Int) -> [ObjectIdentifier: Int] {
                Dictionary(list.map { (ObjectIdentifier(object($0)), value($0)) }, uniquingKeysWith: { a, _ in a })
            }
            let meterSeen = seen(s.meters, { $0.node }, \.seen), playlistSeen = seen(s.playlists, { $0.node }, \.seen)
            let underrunSeen = seen(s.underruns, { $0.node }, \.seen), dropSeen = seen(s.drops, { $0.node }, \.seen)
            var readingSeen: [ObjectIdentifier: [Double?]] = [:]
            for r in s.readings { readingSeen[ObjectIdentifier(r.node)] = r.seen }
            for (id, node) in nodes {
                let key = ObjectIdentifier(node)
                if let m = node as? any MeterReporting {
                    meters.append((m, meterSeen[key] ?? 0))
                }
                if let r = node as? any ReadingPublishing {
                    let names = r.readingNames.map(\.name)
                    readings.append((id, r, names, readingSeen[key] ?? [Double?](repeating: nil, count: names.count)))
                }
                if let p = node as? any PlaylistControlling {
                    playlists.append((p, playlistSeen[key] ?? 0))
                }
                if let u = node as? any UnderrunCounting {
                    underruns.append((id, u, underrunSeen[key] ?? 0))
                }
                if let d = node as? any DropCounting {
                    drops.append((id, d, dropSeen[key] ?? 0))
                }
            }
            s.meters = meters
            s.readings = readings
            s.playlists = playlists
            s.underruns = underruns
            s.drops = drops
            if s.engine !== engine {
                s.engine = engine
                s.ended = false
            }
            if s.compiled !== compiled {
                // Values set before (a reload's resets) are where it starts.
                s.compiled = compiled
                s.valuesSet = compiled.valuesSet.load(ordering: .acquiring)
                s.values = compiled.liveValues
            }
        }
    }

    // MARK: polling

    /// Looks at every source once and publishes what changed since the
    /// last poll, to every subscriber. Returns how many events it found.
    /// [main-thread | owner-thread | control-thread; polls are serialized]
    @discardableResult
    public func poll() -> Int {
        ThreadRole.check(.main, .owner, .control)
        let found = pollLock.withLock { s in diff(&s) }
        publish(found)
        return found.count
    }

    /// The differences since the last poll, in a fixed order: the host's
    /// state, the nodes' counters, connections, meters, playlists,
    /// readings, then the end.
    private func diff(_ s: inout Sources) -> [GraphEvent] {
        var out: [GraphEvent] = []
        let c = host?.monitorCounters()
        if let c {
            if let reason = c.shutdownReason {
                if !s.shutdownReported {
                    s.shutdownReported = true
                    out.append(.shutdown(reason: reason))
                }
            } else {
                s.shutdownReported = false
                if c.xruns != s.counters.xruns {
                    s.counters.xruns = c.xruns
                    out.append(.xrun(total: c.xruns))
                }
                if c.bufferSize != s.counters.bufferSize {
                    s.counters.bufferSize = c.bufferSize
                    if c.bufferSize > 0 { out.append(.bufferSize(c.bufferSize)) }
                }
                if c.paused != s.counters.paused {
                    s.counters.paused = c.paused
                    out.append(.paused(c.paused))
                }
            }
        }
        for i in s.underruns.indices {
            let u = s.underruns[i].node.underrunCount
            guard u != s.underruns[i].seen else { continue }
            s.underruns[i].seen = u
            out.append(.underrun(node: s.underruns[i].id, total: u))
        }
        for i in s.drops.indices {
            let d = s.drops[i].node.droppedFrames
            guard d != s.drops[i].seen else { continue }
            s.drops[i].seen = d
            out.append(.dropped(node: s.drops[i].id, total: d))
        }
        if let c, c.shutdownReason == nil, c.connectionsSettled != s.counters.connectionsSettled {
            s.counters.connectionsSettled = c.connectionsSettled
            s.counters.connections = c.connections
        } else if let c, c.shutdownReason == nil, c.connections != s.counters.connections {
            for (port, others) in c.connections.sorted(by: { $0.key < $1.key }) {
                let before = s.counters.connections[port] ?? []
                for o in others.subtracting(before).sorted() { out.append(.connection(ours: port, other: o, connected: true)) }
                for o in before.subtracting(others).sorted() { out.append(.connection(ours: port, other: o, connected: false)) }
            }
            for (port, before) in s.counters.connections.sorted(by: { $0.key < $1.key }) where c.connections[port] == nil {
                for o in before.sorted() { out.append(.connection(ours: port, other: o, connected: false)) }
            }
            s.counters.connections = c.connections
        }
        for i in s.meters.indices {
            let window = s.meters[i].node.windowCount
            guard window != s.meters[i].seen else { continue }
            s.meters[i].seen = window
            out.append(.meter(s.meters[i].node.reading()))
        }
        for i in s.playlists.indices {
            let new = s.playlists[i].node.events(after: s.playlists[i].seen)
            guard let last = new.last else { continue }
            s.playlists[i].seen = last.sequence
            out += new.map { .playlist($0) }
        }
        for i in s.readings.indices {
            for (k, name) in s.readings[i].names.enumerated() {
                guard let v = s.readings[i].node.reading(name), v != s.readings[i].seen[k] else { continue }
                s.readings[i].seen[k] = v
                out.append(.reading(node: s.readings[i].id, name: name, value: v))
            }
        }
        if let compiled = s.compiled {
            let set = compiled.valuesSet.load(ordering: .acquiring)
            if set != s.valuesSet {
                s.valuesSet = set
                let now = compiled.liveValues
                for (address, v) in now.sorted(by: { $0.key < $1.key }) where s.values[address] != v {
                    out.append(.parameter(address: address, value: v))
                }
                s.values = now
            }
        }
        if !s.ended, (s.engine?.isFinished ?? false) || (c?.finished ?? false) {
            s.ended = true
            out.append(.endOfStream)
        }
        return out
    }

    /// Publishes an event the host saw itself (a route worked out, a
    /// reconnection, a reload, a connection that could not be made), in
    /// order with the polled ones. [main-thread | owner-thread | control-thread; takes a lock]
    public func post(_ event: GraphEvent) {
        ThreadRole.check(.main, .owner, .control)
        publish([event])
    }

    /// Appends `events` to the log and hands them to the callbacks.
    private func publish(_ events: [GraphEvent]) {
        guard !events.isEmpty else { return }
        callbacks.withLock { c in
            append(events)
            for e in events {
                for s in c.subscribers { s.call(e) }
            }
        }
    }

    private func append(_ events: [GraphEvent]) {
        log.withLock { l in
            l.events += events
            let excess = l.events.count - capacity
            if excess > 0 {
                l.events.removeFirst(excess)
                l.first += excess
            }
        }
    }

    // MARK: subscribing

    /// A cursor that takes the events from now on: the monitor polls first,
    /// so what happened before the subscription is not an event for it.
    /// `includingKept`: from the oldest event the monitor still keeps
    /// instead (a reader that comes late to a graph that runs, such as the
    /// console's playlist lines). [main-thread | owner-thread | control-thread; takes a lock]
    public func subscribe(includingKept: Bool = false) -> GraphEventCursor {
        ThreadRole.check(.main, .owner, .control)
        poll()
        return GraphEventCursor(next: log.withLock { includingKept ? $0.first : $0.end })
    }

    /// The events `cursor` has not taken yet, oldest first; advances it.
    /// Looks at nothing: `poll` does. [main-thread | owner-thread | control-thread; takes a lock]
    public func events(since cursor: inout GraphEventCursor) -> [GraphEvent] {
        ThreadRole.check(.main, .owner, .control)
        let (events, next, missed) = log.withLock { l -> ([GraphEvent], Int, Int) in
            let start = max(cursor.next, l.first)
            guard start < l.end else { return ([], l.end, start - cursor.next) }
            return (Array(l.events[(start - l.first)...]), l.end, start - cursor.next)
        }
        cursor.missed += max(missed, 0)
        cursor.next = next
        return events
    }

    /// Calls `handler` with every event from now on (those already in the
    /// log are not repeated), on the thread that polls or posts; returns a
    /// token for `unsubscribe`. [main-thread | owner-thread | control-thread; takes a lock]
    public func subscribe(_ handler: @escaping @Sendable (GraphEvent) -> Void) -> Int {
        ThreadRole.check(.main, .owner, .control)
        return callbacks.withLock { c in
            c.nextToken += 1
            c.subscribers.append((c.nextToken, handler))
            return c.nextToken
        }
    }

    /// Ends a callback subscription. [main-thread | owner-thread | control-thread; takes a lock]
    public func unsubscribe(_ token: Int) {
        ThreadRole.check(.main, .owner, .control)
        callbacks.withLock { c in c.subscribers.removeAll { $0.token == token } }
    }
}
