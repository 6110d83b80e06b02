#if canImport(Glibc)
import Glibc
#endif
import Synchronization

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
    /// [main-thread; to set and to call]
    var onLatencyChange: (() -> Void)? { get set }
}

/// Which role the calling thread plays, for thread checks (the CLAP
/// `thread-check` way): threads mark themselves when they start their role.
/// The roles are the thread tags of the doc comments (`[main-thread]`,
/// `[audio-thread]`, `[worker-thread]`, `[owner-thread]`, `[control-thread]`,
/// and `[any-thread]`); docs/threads.md defines the tag grammar, says which
/// threads mark themselves what and which roles each tag accepts. Debug
/// builds check the tag at every tagged public entry point
/// (`ThreadRole.check`); release builds compile the checks away.
/// [any-thread; `current` is realtime-safe]
public enum ThreadRole: Int, Sendable, CustomStringConvertible, CaseIterable {
    /// A thread that never marked itself: treated as the main (control)
    /// thread, which is what a program's own threads are by default.
    case main = 0
    /// The thread that renders blocks: the JACK process thread, or the
    /// thread running an `OfflineRenderer`.
    case audio = 1
    /// The engine's background worker.
    case worker = 2
    /// A live session's owner thread: owns the JACK client and does the
    /// session's main-thread work (compiles, reloads, swaps) while the
    /// program's main thread waits; it may call `[main-thread]` functions.
    case owner = 3
    /// A thread that sends commands to a running graph (the OSC server's
    /// thread, the console reader): it asks the owner thread for what the
    /// owner thread owns.
    case control = 4

    public var description: String {
        switch self {
        case .main: "main"
        case .audio: "audio"
        case .worker: "worker"
        case .owner: "owner"
        case .control: "control"
        }
    }

    /// The role's thread tag: `main-thread`, `audio-thread`, …
    public var tag: String { description + "-thread" }

    /// Marks the calling thread; `nil` clears its mark. [any-thread; not realtime-safe]
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

    /// The calling thread's role. [any-thread; realtime-safe]
    public static var current: ThreadRole {
        marked ?? .main
    }

    /// The calling thread's mark, `nil` for a thread that never marked
    /// itself. [any-thread; realtime-safe]
    public static var marked: ThreadRole? {
        guard let p = pthread_getspecific(key) else { return nil }
        return ThreadRole(rawValue: Int(bitPattern: p) - 1)
    }

    /// Whether a thread in this role may call a function whose tag lists
    /// `roles` (docs/threads.md): where its role is listed; an owner thread
    /// also where `main` is (it does a live session's main-thread work); a
    /// main or owner thread also where `control` is (each sends its session
    /// commands too). A thread that never marked itself is not asked: it
    /// passes every check. [any-thread; realtime-safe]
    public func mayCall(_ roles: ThreadRoles) -> Bool {
        roles.contains(self)
            || (self == .owner && roles.contains(.main))
            || ((self == .main || self == .owner) && roles.contains(.control))
    }

    /// Whether the role does main-thread work: the main thread, or a live
    /// session's owner thread (a plugin's `is_main_thread` answers this).
    /// [any-thread; realtime-safe]
    public var actsAsMain: Bool { self == .main || self == .owner }

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()
}

/// A set of thread roles, the roles a thread tag lists (`[main-thread |
/// worker-thread]`). A bit mask: made and tested without allocating.
/// [any-thread; realtime-safe]
public struct ThreadRoles: Sendable, Equatable, CustomStringConvertible {
    public let bits: UInt8

    @inlinable @inline(__always)
    public init(bits: UInt8) { self.bits = bits }

    @inlinable @inline(__always)
    public init(_ role: ThreadRole) { bits = 1 << UInt8(role.rawValue) }

    @inlinable @inline(__always)
    public func adding(_ role: ThreadRole) -> ThreadRoles {
        ThreadRoles(bits: bits | (1 << UInt8(role.rawValue)))
    }

    @inlinable @inline(__always)
    public func contains(_ role: ThreadRole) -> Bool {
        bits & (1 << UInt8(role.rawValue)) != 0
    }

    /// The tag's role list: `main-thread | owner-thread`.
    public var description: String {
        ThreadRole.allCases.filter(contains).map(\.tag).joined(separator: " | ")
    }
}

/// A call of a tagged function from a thread whose role the tag does not
/// accept, as the debug check found it.
public struct ThreadRoleViolation: Sendable, CustomStringConvertible {
    /// The function called (`#function`), its file (`#fileID`) and line.
    public let function: StaticString
    public let file: StaticString
    public let line: UInt
    /// The roles the function's tag lists.
    public let expected: ThreadRoles
    /// The calling thread's role.
    public let actual: ThreadRole

    public var description: String {
        "thread role violation: \(function) (\(file):\(line)) is [\(expected)], called on a thread marked \(actual.tag)"
    }
}

extension ThreadRole {
    /// What a failed check does; `nil` (the default) traps with the
    /// violation's description. Tests install a handler that records.
    /// Set it before the threads it should see start. [any-thread]
    public static var violationHandler: (@Sendable (ThreadRoleViolation) -> Void)? {
        get { handlerBox.withLock { $0 } }
        set { handlerBox.withLock { $0 = newValue } }
    }

    private static let handlerBox = Mutex<(@Sendable (ThreadRoleViolation) -> Void)?>(nil)

    /// Debug builds: checks that the calling thread may call a function
    /// tagged with `role` (the first statement of every tagged public entry
    /// point, written by scripts/thread-tags). Release builds: nothing.
    /// Allocates nothing and takes no lock unless the check fails; wrapped
    /// in `_unsafePerformance` so that `@_noLocks` functions may call it
    /// (the failure path takes a lock and allocates: it is a bug).
    /// [any-thread; realtime-safe]
    @inlinable @inline(__always)
    public static func check(_ role: ThreadRole,
                             function: StaticString = #function, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        _unsafePerformance { verify(ThreadRoles(role), function, file, line) }
        #endif
    }

    /// `check` for a tag of two roles (`[main-thread | worker-thread]`).
    /// [any-thread; realtime-safe]
    @inlinable @inline(__always)
    public static func check(_ role: ThreadRole, _ other: ThreadRole,
                             function: StaticString = #function, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        _unsafePerformance { verify(ThreadRoles(role).adding(other), function, file, line) }
        #endif
    }

    /// `check` for a tag of three roles. [any-thread; realtime-safe]
    @inlinable @inline(__always)
    public static func check(_ role: ThreadRole, _ second: ThreadRole, _ third: ThreadRole,
                             function: StaticString = #function, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        _unsafePerformance { verify(ThreadRoles(role).adding(second).adding(third), function, file, line) }
        #endif
    }

    /// The check's body (debug builds only call it). [any-thread; realtime-safe]
    @usableFromInline
    static func verify(_ roles: ThreadRoles, _ function: StaticString, _ file: StaticString, _ line: UInt) {
        guard let role = marked, !role.mayCall(roles) else { return }
        violated(ThreadRoleViolation(function: function, file: file, line: line, expected: roles, actual: role))
    }

    /// A failed check: the handler, or a trap naming the function.
    /// [any-thread; off the fast path: takes a lock, may allocate]
    static func violated(_ violation: ThreadRoleViolation) {
        if let handler = violationHandler {
            handler(violation)
        } else if logsInsteadOfTrapping {
            let line = "agraph: \(violation.description)\n"
            line.utf8CString.withUnsafeBufferPointer { _ = write(2, $0.baseAddress, $0.count - 1) }
        } else {
            fatalError(violation.description, file: violation.file, line: violation.line)
        }
    }

    /// `AGRAPH_THREAD_CHECKS=log` in the environment: a debug build writes
    /// each violation to stderr and goes on instead of trapping, so that one
    /// run (a whole test suite, its agraph children included) lists every
    /// wrong tag rather than stopping at the first. Read once.
    static let logsInsteadOfTrapping: Bool = getenv("AGRAPH_THREAD_CHECKS").map { String(cString: $0) == "log" } ?? false
}
