import AudioGraphHost
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One thread that owns a resource (the JACK client, its ports,
/// connections and metadata): other threads ask it, with `sync` or
/// `async`, and it runs their requests one at a time, in order. Between
/// requests it runs `tick` whenever it is woken (`wake()`, from JACK's
/// notification threads) or `interval` seconds pass.
///
/// The thread is a plain pthread: `stop()` joins it.
///
/// Threading: `sync`, `async`, `wake`: [main-thread | worker-thread | owner-thread |
/// control-thread];
/// `start`, `stop`: [any-thread; the thread that made it].
final class OwnerThread: @unchecked Sendable {
    private let wakeup: Wakeup
    private let jobs = Locked<[Job]>([])
    private let stopping = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private var thread: pthread_t?
    private let name: String
    /// What the thread is for, in error messages ("owns the JACK client").
    private let purpose: String
    /// How long the thread sleeps when nothing wakes it, in seconds.
    let interval: Double
    /// Run on the owner thread after each wake-up and at each interval.
    /// [set before `start`]
    var tick: (() -> Void)?
    /// Set by `tick` when it wants to run again soon (2 ms) rather than
    /// after `interval`. [owner-thread]
    var soon = false

    /// `wakeup`: signalled by whoever has work for `tick` (JACK's callbacks).
    init(name: String, interval: Double, wakeup: Wakeup, purpose: String = "owns the JACK client") {
        self.name = name
        self.purpose = purpose
        self.wakeup = wakeup
        self.interval = interval
    }

    deinit { stop() }

    /// Whether the caller is the owner thread. [any-thread]
    var isCurrent: Bool { threadID.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Starts the thread. [main-thread]
    func start() throws(JACKError) {
        guard thread == nil else { return }
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        // Signals stay on the main thread; the JACK threads this one's
        // client starts inherit the mask.
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&t, nil, { raw in
                guard let raw else { return nil }
                let owner = Unmanaged<OwnerThread>.fromOpaque(raw).takeRetainedValue()
                owner.loop()
                return nil
            }, box.toOpaque())
        }
        guard rc == 0 else {
            box.release()
            throw JACKError("cannot start the thread that \(purpose) (error \(rc))")
        }
        thread = t
    }

    private func loop() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        ThreadRole.mark(.owner)   // docs/threads.md: it may call [main-thread] functions
        while true {
            runJobs()
            if stopping.load(ordering: .acquiring) {
                runJobs()
                return
            }
            tick?()
            let wait = soon ? 0.002 : interval
            soon = false
            wakeup.wait(timeout: wait)
        }
    }

    private func runJobs() {
        while true {
            let batch = jobs.withLock { j -> [Job] in
                let out = j
                j.removeAll()
                return out
            }
            if batch.isEmpty { return }
            for job in batch { job.run() }
        }
    }

    /// Runs `job` on the owner thread soon. [any-thread]
    func async(_ job: @escaping () -> Void) {
        let j = Job(run: job)
        jobs.withLock { $0.append(j) }
        wakeup.signal()
    }

    /// Runs `body` on the owner thread and returns its result (runs it at
    /// once when called on the owner thread, or when the thread is not
    /// running). [any-thread]
    func sync<T>(_ body: @escaping () throws -> T) throws -> T {
        try sync { Result { try body() } }.get()
    }

    /// `sync` for bodies that do not throw. [any-thread]
    func sync<T>(_ body: @escaping () -> T) -> T {
        if isCurrent || thread == nil || stopping.load(ordering: .acquiring) { return body() }
        let done = Wakeup()
        let box = ResultBox<T>()
        async {
            box.value = body()
            done.signal()
        }
        while !done.wait(timeout: 1) {}
        return box.value!
    }

    /// Wakes the thread to run `tick`. [any-thread; JACK's threads included]
    func wake() { wakeup.signal() }

    /// Runs the queued requests, stops the thread and joins it.
    /// Idempotent. [any-thread; not the owner thread]
    func stop() {
        guard let t = thread, !isCurrent else { return }
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
        pthread_join(t, nil)
        thread = nil
    }
}

/// A value handed from the owner thread to a waiting caller; the
/// semaphore between them orders the accesses.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// A request for the owner thread; it runs there only.
private struct Job: @unchecked Sendable {
    let run: () -> Void
}
