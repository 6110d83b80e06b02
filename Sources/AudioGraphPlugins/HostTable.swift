// The host side of the plugin ABI (agraph_plugin.h: the host table of
// agraph/plugin.h, `agraph_host_t`, that each plugin node gets at create) and the host
// extensions behind it:
//
//   agraph.log/1           → `PluginLog` (messages queued, printed by the host)
//   agraph.output-route/1  → the node's `OutputRoute` (core `OutputRouteAware`)
//   agraph.latency/1       → the node's `onLatencyChange` (core `LatencyChangeNotifying`)
//   agraph.thread-check/1  → core `ThreadRole.current`
//
// One `PluginHost` per node (and a short-lived one per `check` /
// `output_layout` call), so that whatever the plugin says is about that node.
import AudioGraphHost
import CAGraphPlugin
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Messages from plugins (the `agraph.log/1` host extension), for the host
/// to print: `agraph render` prints them at the end, the live host on its
/// main loop.
public enum PluginLog {
    struct State {
        var lines: [String] = []
        var hosts: [WeakHost] = []
    }
    struct WeakHost { weak var host: PluginHost? }

    static let state = Locked<State>(State())

    /// Every message logged since the last drain, oldest first per node,
    /// one line each: `node 'dec' (daa): warning: text`; then, per node, how
    /// many audio-thread messages were dropped (queue full) and which host
    /// extension functions were called from the wrong thread.
    /// [main-thread]
    public static func drain() -> [String] {
        ThreadRole.check(.main)
        let hosts = state.withLock { s in
            s.hosts.removeAll { $0.host == nil }
            return s.hosts.compactMap(\.host)
        }
        for host in hosts { host.drainQueue() }
        return state.withLock { s in
            let lines = s.lines
            s.lines = []
            return lines
        }
    }

    /// Adds a line. [main-thread | worker-thread]
    static func append(_ line: String) { state.withLock { $0.lines.append(line) } }

    static func register(_ host: PluginHost) { state.withLock { $0.hosts.append(WeakHost(host: host)) } }

    static func severityName(_ severity: Int32) -> String {
        switch severity {
        case Int32(AGRAPH_LOG_DEBUG.rawValue): "debug"
        case Int32(AGRAPH_LOG_INFO.rawValue): "info"
        case Int32(AGRAPH_LOG_WARNING.rawValue): "warning"
        case Int32(AGRAPH_LOG_ERROR.rawValue): "error"
        default: "message"
        }
    }
}

/// The host table of one plugin node and the state behind its extensions.
/// Made on the main thread; the plugin calls into it on the threads each
/// extension function's tag allows.
public final class PluginHost: @unchecked Sendable {
    // @unchecked: the table is written once in init; the mutable state is
    // atomic, main-thread only (`onLatencyChange`), or the single-writer queue.
    public let nodeID: String
    public let typeID: String
    /// The `agraph_host_t` handed to the plugin; freed in deinit.
    public let table: UnsafeMutablePointer<agraph_host_t>
    private let route = Atomic<UInt32>(AGRAPH_ROUTE_UNKNOWN.rawValue)
    private let queue = RealtimeLogQueue(slots: 64)
    /// Calls of host functions on a thread their tag forbids.
    let logOnAudioThread = Atomic<Int>(0)
    let latencyOffMainThread = Atomic<Int>(0)
    /// Latency changes the plugin reported (on the main thread).
    public let latencyChanges = Atomic<Int>(0)
    /// Set by the node's owner (`LatencyChangeNotifying`). [main-thread]
    public var onLatencyChange: (() -> Void)?

    /// [main-thread]
    public init(nodeID: String, typeID: String) {
        ThreadRole.check(.main)
        self.nodeID = nodeID
        self.typeID = typeID
        table = .allocate(capacity: 1)
        table.initialize(to: agraph_host_t(
            abi: agraph_abi_version_t(major: UInt32(AGRAPH_PLUGIN_ABI_MAJOR), minor: UInt32(AGRAPH_PLUGIN_ABI_MINOR)),
            host_data: nil, name: HostStatics.shared.name, version: HostStatics.shared.version,
            get_extension: hostGetExtension))
        table.pointee.host_data = Unmanaged.passUnretained(self).toOpaque()
        PluginLog.register(self)
    }

    deinit {
        drainQueue()
        table.deallocate()
    }

    /// The route the plugin reads through `agraph.output-route/1`. [any-thread]
    public var outputRoute: OutputRoute {
        get {
            switch route.load(ordering: .relaxed) {
            case AGRAPH_ROUTE_HEADPHONES.rawValue: .headphones
            case AGRAPH_ROUTE_SPEAKERS.rawValue: .speakers
            default: .unknown
            }
        }
        set { route.store(Self.code(newValue), ordering: .relaxed) }
    }

    public static func code(_ route: OutputRoute) -> UInt32 {
        switch route {
        case .headphones: AGRAPH_ROUTE_HEADPHONES.rawValue
        case .speakers: AGRAPH_ROUTE_SPEAKERS.rawValue
        case .unknown: AGRAPH_ROUTE_UNKNOWN.rawValue
        }
    }

    var prefix: String { "node '\(nodeID)' (\(typeID))" }

    /// A message from the plugin off the audio thread. [main-thread | worker-thread]
    func log(_ severity: Int32, _ message: UnsafePointer<CChar>?) {
        let text = message.map { truncatedString($0) } ?? ""
        PluginLog.append("\(prefix): \(PluginLog.severityName(severity)): \(text)")
    }

    /// A message from the audio thread: queued, no allocation. [audio-thread]
    func logRealtime(_ severity: Int32, _ message: UnsafePointer<CChar>?) {
        queue.push(severity, message)
    }

    /// Moves the queued audio-thread messages and the wrong-thread counts
    /// to `PluginLog`. [main-thread]
    func drainQueue() {
        queue.drain { severity, text in
            PluginLog.append("\(prefix): \(PluginLog.severityName(severity)): \(text)")
        }
        let dropped = queue.dropped.exchange(0, ordering: .relaxed)
        if dropped > 0 { PluginLog.append("\(prefix): \(dropped) audio-thread message\(dropped == 1 ? "" : "s") dropped (queue full)") }
        for line in threadViolations(reset: true) { PluginLog.append("\(prefix): \(line)") }
    }

    /// The host functions the plugin called on a thread their tag forbids,
    /// in words. [main-thread]
    public func threadViolations(reset: Bool = false) -> [String] {
        ThreadRole.check(.main)
        let log = reset ? logOnAudioThread.exchange(0, ordering: .relaxed) : logOnAudioThread.load(ordering: .relaxed)
        let latency = reset ? latencyOffMainThread.exchange(0, ordering: .relaxed) : latencyOffMainThread.load(ordering: .relaxed)
        var lines: [String] = []
        if log > 0 { lines.append("the plugin called \(AGRAPH_HOST_EXT_LOG) `log` on the audio thread \(log) time\(log == 1 ? "" : "s") (it may allocate: use `log_rt` there)") }
        if latency > 0 { lines.append("the plugin called \(AGRAPH_HOST_EXT_LATENCY) `changed` off the main thread \(latency) time\(latency == 1 ? "" : "s") (ignored; it is [main-thread])") }
        return lines
    }

    /// The plugin reported a latency change. [main-thread]
    func latencyChanged() {
        guard ThreadRole.current.actsAsMain else {
            latencyOffMainThread.add(1, ordering: .relaxed)
            return
        }
        latencyChanges.add(1, ordering: .relaxed)
        onLatencyChange?()
    }
}

/// The C strings and extension tables every host table shares: made once,
/// never freed (the plugin may keep the pointers).
struct HostStatics: @unchecked Sendable {
    let name: UnsafePointer<CChar>
    let version: UnsafePointer<CChar>
    let ids: [(UnsafePointer<CChar>, UnsafeRawPointer)]

    static let shared = HostStatics()

    private init() {
        func keep(_ s: String) -> UnsafePointer<CChar> { UnsafePointer(strdup(s)!) }
        func table<T>(_ value: T) -> UnsafeRawPointer {
            let p = UnsafeMutablePointer<T>.allocate(capacity: 1)
            p.initialize(to: value)
            return UnsafeRawPointer(p)
        }
        name = keep("agraph")
        version = keep("0.1.0")
        ids = [
            (keep(AGRAPH_HOST_EXT_LOG), table(agraph_host_log_t(log: hostLog, log_rt: hostLogRealtime))),
            (keep(AGRAPH_HOST_EXT_OUTPUT_ROUTE), table(agraph_host_output_route_t(get: hostRouteGet))),
            (keep(AGRAPH_HOST_EXT_LATENCY), table(agraph_host_latency_t(changed: hostLatencyChanged))),
            (keep(AGRAPH_HOST_EXT_THREAD_CHECK), table(agraph_host_thread_check_t(
                is_main_thread: hostIsMainThread, is_audio_thread: hostIsAudioThread, is_worker_thread: hostIsWorkerThread))),
        ]
    }
}

/// The `PluginHost` behind a host table, without retaining it (realtime-safe).
@inline(__always)
func withHost<R>(_ table: UnsafePointer<agraph_host_t>?, _ body: (PluginHost) -> R) -> R? {
    guard let data = table?.pointee.host_data else { return nil }
    return Unmanaged<PluginHost>.fromOpaque(data)._withUnsafeGuaranteedRef(body)
}

// The C functions of the host table. Each one realtime-safe unless its tag
// says otherwise.

/// [any-thread]: compares with preallocated C strings; no allocation.
let hostGetExtension: @convention(c) (UnsafePointer<agraph_host_t>?, UnsafePointer<CChar>?) -> UnsafeRawPointer? = { _, id in
    guard let id else { return nil }
    let ids = HostStatics.shared.ids
    var i = 0
    while i < ids.count {
        if strcmp(ids[i].0, id) == 0 { return ids[i].1 }
        i += 1
    }
    return nil
}

/// [main-thread | worker-thread]; from the audio thread it is counted as a
/// violation and queued instead (never allocating there).
let hostLog: @convention(c) (UnsafePointer<agraph_host_t>?, Int32, UnsafePointer<CChar>?) -> Void = { table, severity, message in
    _ = withHost(table) { host in
        if ThreadRole.current == .audio {
            host.logOnAudioThread.add(1, ordering: .relaxed)
            host.logRealtime(severity, message)
        } else {
            host.log(severity, message)
        }
    }
}

/// [audio-thread]
let hostLogRealtime: @convention(c) (UnsafePointer<agraph_host_t>?, Int32, UnsafePointer<CChar>?) -> Void = { table, severity, message in
    _ = withHost(table) { $0.logRealtime(severity, message) }
}

/// [any-thread]
let hostRouteGet: @convention(c) (UnsafePointer<agraph_host_t>?) -> UInt32 = { table in
    withHost(table) { PluginHost.code($0.outputRoute) } ?? AGRAPH_ROUTE_UNKNOWN.rawValue
}

/// [main-thread]
let hostLatencyChanged: @convention(c) (UnsafePointer<agraph_host_t>?) -> Void = { table in
    _ = withHost(table) { $0.latencyChanged() }
}

let hostIsMainThread: @convention(c) (UnsafePointer<agraph_host_t>?) -> Int32 = { _ in ThreadRole.current.actsAsMain ? 1 : 0 }
let hostIsAudioThread: @convention(c) (UnsafePointer<agraph_host_t>?) -> Int32 = { _ in ThreadRole.current == .audio ? 1 : 0 }
let hostIsWorkerThread: @convention(c) (UnsafePointer<agraph_host_t>?) -> Int32 = { _ in ThreadRole.current == .worker ? 1 : 0 }

/// A single-writer, single-reader queue of short messages in preallocated
/// slots: the writer (the thread calling into the plugin, e.g. the audio
/// thread) never allocates, locks or waits; the main thread reads.
final class RealtimeLogQueue: @unchecked Sendable {
    static let slotBytes = Int(AGRAPH_LOG_RT_CAPACITY) + 8
    let slots: Int
    private let storage: UnsafeMutablePointer<UInt8>
    private let written = Atomic<Int>(0)
    private let read = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)

    init(slots: Int) {
        self.slots = slots
        storage = .allocate(capacity: slots * Self.slotBytes)
        storage.initialize(repeating: 0, count: slots * Self.slotBytes)
    }

    deinit { storage.deallocate() }

    /// Copies the message (cut to AGRAPH_LOG_RT_CAPACITY − 1 bytes) into the
    /// next slot, or counts it as dropped. [the one writer; realtime-safe]
    func push(_ severity: Int32, _ message: UnsafePointer<CChar>?) {
        let w = written.load(ordering: .relaxed)
        guard w &- read.load(ordering: .acquiring) < slots else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        let slot = storage + (w % slots) * Self.slotBytes
        UnsafeMutableRawPointer(slot).storeBytes(of: severity, as: Int32.self)
        var n = 0
        if let message {
            let limit = Int(AGRAPH_LOG_RT_CAPACITY) - 1
            while n < limit, message[n] != 0 {
                slot[8 + n] = UInt8(bitPattern: message[n])
                n += 1
            }
        }
        UnsafeMutableRawPointer(slot + 4).storeBytes(of: Int32(n), as: Int32.self)
        written.store(w &+ 1, ordering: .releasing)
    }

    /// Hands every queued message to `body`, oldest first. [the one reader]
    func drain(_ body: (Int32, String) -> Void) {
        var r = read.load(ordering: .relaxed)
        let w = written.load(ordering: .acquiring)
        while r != w {
            let slot = storage + (r % slots) * Self.slotBytes
            let severity = UnsafeRawPointer(slot).load(as: Int32.self)
            let n = Int(UnsafeRawPointer(slot + 4).load(as: Int32.self))
            body(severity, String(decoding: UnsafeBufferPointer(start: slot + 8, count: max(0, min(n, Self.slotBytes - 8))), as: UTF8.self))
            r &+= 1
            read.store(r, ordering: .releasing)
        }
    }
}

/// A plugin instance with its host table: what the realtime node and the
/// decoder node share (the route and latency extensions).
protocol HostedPluginInstance: OutputRouteAware, LatencyChangeNotifying {
    var instance: OpaquePointer { get }
    var host: PluginHost { get }
    var routeExt: agraph_output_route_ext_t? { get }
}

extension HostedPluginInstance {
    /// Tells the host table (what the plugin reads with `get`), then the
    /// plugin (which applies it from its next block or frame). [main-thread]
    func outputRouteChanged(_ route: OutputRoute) {
        host.outputRoute = route
        routeExt?.changed?(instance, PluginHost.code(route))
    }

    /// Called when the plugin reports a latency change. [main-thread]
    var onLatencyChange: (() -> Void)? {
        get { host.onLatencyChange }
        set { host.onLatencyChange = newValue }
    }
}
