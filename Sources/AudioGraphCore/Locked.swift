#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, for state shared between non-realtime
/// threads (the main thread, the thread that owns the JACK client, the
/// worker, JACK's notification threads).
///
/// Why not `Synchronization.Mutex`: its lock is atomics and futex calls
/// inside the uninstrumented standard library, so ThreadSanitizer, which the
/// live tests run under, sees no ordering between the threads that take it
/// and reports races that are not there. TSan intercepts pthread mutexes.
///
/// Threading: [main-thread | worker-thread | owner-thread | control-thread] — taking a lock may
/// wait.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    public func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
