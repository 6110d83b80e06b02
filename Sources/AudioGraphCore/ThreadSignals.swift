#if canImport(Glibc)
import Glibc
#endif

/// The signals `agraph`'s commands handle (SIGINT, SIGTERM, SIGHUP) are
/// handled on the main thread only. Every thread AudioGraph starts blocks
/// them from its first instruction, and so do the threads those start:
/// libjack's process and notification threads inherit the mask of the
/// owner thread that opens the client. A signal then never runs a handler
/// on the audio thread or interrupts a JACK thread; the kernel gives it to
/// the main thread, the one thread that does not block it.
///
/// Keep libjack off the main thread: when its last client closes, JACK2's
/// library globals "restore" the mask they saved when the first client
/// opened with `SIG_BLOCK`, on the closing thread, so a main thread that
/// closed it would block these signals from then on (and so would any
/// process it spawns without resetting the mask).
public enum ThreadSignals {
    /// The signals blocked outside the main thread.
    public static let handledOnTheMainThread: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Runs `body`, which starts threads, with those signals blocked on the
    /// calling thread, so that the threads start with them blocked (a
    /// thread inherits its creator's mask); the caller's mask is restored
    /// after. [main-thread | worker-thread | owner-thread | control-thread; a thread that starts
    /// threads]
    public static func blockedInNewThreads<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        ThreadRole.check(.main, .worker, .control)
        var block = sigset_t()
        sigemptyset(&block)
        for s in handledOnTheMainThread { sigaddset(&block, s) }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try body()
    }

    /// The signals of `handledOnTheMainThread` the calling thread blocks.
    /// [any-thread]
    public static var blockedHere: [Int32] {
        var current = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &current)
        return handledOnTheMainThread.filter { sigismember(&current, $0) == 1 }
    }
}
