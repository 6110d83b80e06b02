#if canImport(Glibc)
import Glibc
#endif

/// A counting semaphore (POSIX `sem_t`) for waking a worker thread.
///
/// `signal()` is async-signal-safe and does not block or allocate, so the
/// audio thread may call it (JACK's own clients wake their disk threads the
/// same way). Only non-realtime threads may `wait`.
public final class Wakeup: @unchecked Sendable {
    private let sem: UnsafeMutablePointer<sem_t>

    /// [main-thread | control-thread; OSC's reload makes the new graph's nodes on its thread]
    public init() {
        ThreadRole.check(.main, .control)
        sem = .allocate(capacity: 1)
        sem_init(sem, 0, 0)
    }

    deinit {
        sem_destroy(sem)
        sem.deallocate()
    }

    /// Wakes one waiter (or the next `wait`). [any-thread; the audio thread included]
    @inline(__always)
    public func signal() { sem_post(sem) }

    /// Waits for a signal or until `seconds` pass; returns true when signalled.
    /// [main-thread | worker-thread | owner-thread | control-thread]
    @discardableResult
    public func wait(timeout seconds: Double) -> Bool {
        ThreadRole.check(.main, .worker, .control)
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let whole = Int(seconds)
        var nanos = Int(ts.tv_nsec) + Int((seconds - Double(whole)) * 1e9)
        ts.tv_sec += whole + nanos / 1_000_000_000
        nanos %= 1_000_000_000
        ts.tv_nsec = nanos
        while true {
            if sem_timedwait(sem, &ts) == 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
