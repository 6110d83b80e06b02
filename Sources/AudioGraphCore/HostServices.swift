#if canImport(Glibc)
import Glibc
#endif

/// What a node's output reaches: the host works it out (a live host from
/// the JACK ports its sink is connected to) and tells the nodes that care,
/// such as a decoder that renders for headphones or speakers.
public enum OutputRoute: String, Sendable, Equatable, CaseIterable {
    case headphones
    case speakers
    /// Not known (offline, or connections that say nothing).
    case unknown
}

/// A node that wants to know where its output goes.
public protocol OutputRouteAware: AnyObject {
    /// The route, before activation and whenever it changes.
    /// [main-thread]
    func outputRouteChanged(_ route: OutputRoute)
}

/// A node whose latency can change while it runs (a plugin that says so):
/// the host sets `onLatencyChange` and, when called, recomputes the graph's
/// latencies and reports them again (to JACK, when live).
public protocol LatencyChangeNotifying: AnyObject {
    /// Called on the main thread after the node's `latency` changed.
    /// [main-thread to set and to call]
    var onLatencyChange: (() -> Void)? { get set }
}

/// Which role the calling thread plays, for thread checks (the CLAP
/// `thread-check` way): threads mark themselves when they start their role.
/// [any thread; `current` is realtime-safe]
public enum ThreadRole: Int, Sendable, CustomStringConvertible {
    /// A thread that never marked itself: treated as the main (control)
    /// thread, which is what a program's own threads are by default.
    case main = 0
    /// The thread that renders blocks: the JACK process thread, or the
    /// thread running an `OfflineRenderer`.
    case audio = 1
    /// The engine's background worker.
    case worker = 2

    public var description: String {
        switch self {
        case .main: "main"
        case .audio: "audio"
        case .worker: "worker"
        }
    }

    /// Marks the calling thread; `nil` clears its mark. [any thread, not realtime-safe]
    public static func mark(_ role: ThreadRole?) {
        // No generic call here (`Optional.map`): in a debug build its
        // metadata is instantiated at the first call, which new worker
        // threads make at the same moment, and ThreadSanitizer cannot see
        // the runtime's own publication of it (libswiftCore is not
        // instrumented), so it reported a race between two starting threads.
        if let role {
            pthread_setspecific(key, UnsafeRawPointer(bitPattern: role.rawValue + 1))
        } else {
            pthread_setspecific(key, nil)
        }
    }

    /// The calling thread's role. [any thread, realtime-safe]
    public static var current: ThreadRole {
        guard let p = pthread_getspecific(key) else { return .main }
        return ThreadRole(rawValue: Int(bitPattern: p) - 1) ?? .main
    }

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()
}
