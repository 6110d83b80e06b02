// The node's view of its host: the host table and the host extensions
// (ext/log.h, ext/output-route.h, ext/latency.h, ext/thread-check.h).


/// Severity of a message (`agraph_log_severity_t`).
public enum PluginLogSeverity: Int32, Sendable {
    case debug = 0, info = 1, warning = 2, error = 3
}

/// What a node's output reaches (`agraph_output_route_t`).
public enum PluginOutputRoute: UInt32, Sendable {
    case unknown = 0, headphones = 1, speakers = 2
}

/// The node's view of its host: the host table handed to `create`, with
/// the host extensions looked up once. Every member is a no-op (or
/// "unknown") when the host lacks the extension (`get_extension` gave
/// NULL for its id).
public struct PluginHost: @unchecked Sendable {
    // @unchecked: pointers to the host's immutable tables, valid while the node lives.
    public let table: UnsafePointer<agraph_host_t>?
    let logExt: UnsafePointer<agraph_host_log_t>?
    let routeExt: UnsafePointer<agraph_host_output_route_t>?
    let latencyExt: UnsafePointer<agraph_host_latency_t>?
    let threadExt: UnsafePointer<agraph_host_thread_check_t>?

    init(_ info: UnsafePointer<agraph_create_info_t>) {
        let t: UnsafePointer<agraph_host_t>? = info.pointee.host
        table = t
        func ext<T>(_ id: String, _: T.Type) -> UnsafePointer<T>? {
            guard let t, let get = t.pointee.get_extension, let raw = get(t, id) else { return nil }
            return raw.assumingMemoryBound(to: T.self)
        }
        logExt = ext(AGRAPH_HOST_EXT_LOG, agraph_host_log_t.self)
        routeExt = ext(AGRAPH_HOST_EXT_OUTPUT_ROUTE, agraph_host_output_route_t.self)
        latencyExt = ext(AGRAPH_HOST_EXT_LATENCY, agraph_host_latency_t.self)
        threadExt = ext(AGRAPH_HOST_EXT_THREAD_CHECK, agraph_host_thread_check_t.self)
    }

    /// Whether the host gave a table (every 2.0 host does).
    public var isPresent: Bool { table != nil }

    /// A message for the user, printed by the host with the node's id.
    /// [main-thread | worker-thread]: may allocate.
    public func log(_ severity: PluginLogSeverity, _ message: String) {
        guard let f = logExt?.pointee.log else { return }
        message.withCString { f(table, severity.rawValue, $0) }
    }

    /// The audio thread's log: queued by the host, no allocation.
    /// [audio-thread]
    public func logRealtime(_ severity: PluginLogSeverity, _ message: StaticString) {
        guard let f = logExt?.pointee.log_rt, message.hasPointerRepresentation else { return }
        // A string literal's bytes are NUL-terminated in the binary.
        message.utf8Start.withMemoryRebound(to: CChar.self, capacity: message.utf8CodeUnitCount + 1) {
            f(table, severity.rawValue, $0)
        }
    }

    /// The output route now. [any-thread; realtime-safe]
    public var outputRoute: PluginOutputRoute {
        guard let f = routeExt?.pointee.get else { return .unknown }
        return PluginOutputRoute(rawValue: f(table)) ?? .unknown
    }

    /// Tells the host that `latency` / `decoderLatency` changed.
    /// [main-thread & active]
    public func latencyChanged() { latencyExt?.pointee.changed?(table) }

    /// Which thread this is; nil when the host cannot tell. [any-thread; realtime-safe]
    public var isMainThread: Bool? { threadExt?.pointee.is_main_thread.map { $0(table) != 0 } }
    public var isAudioThread: Bool? { threadExt?.pointee.is_audio_thread.map { $0(table) != 0 } }
    public var isWorkerThread: Bool? { threadExt?.pointee.is_worker_thread.map { $0(table) != 0 } }
}
