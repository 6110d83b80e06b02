#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The engine's non-realtime thread: services every `BackgroundJob` (file
/// reading, decoding, file writing) and sleeps when none has work.
///
/// The audio thread (or the offline driver) calls `wake()` after it has
/// consumed or produced audio; the worker also wakes on a short timer.
public final class BackgroundWorker: @unchecked Sendable {
    private let jobs: [any BackgroundJob]
    private let wakeup = Wakeup()
    private let progress = Wakeup()
    private let stopping = Atomic<Bool>(false)
    /// Threads in `waitUntilReady`: the worker signals progress only then,
    /// so no stale signals pile up for a later wait to spin through.
    private let waiters = Atomic<Int>(0)
    private var thread: pthread_t?
    /// How long the worker sleeps when idle, in seconds.
    public let idleTimeout: Double

    /// [main-thread]
    public init(jobs: [any BackgroundJob], idleTimeout: Double = 0.005) {
        self.jobs = jobs
        self.idleTimeout = idleTimeout
    }

    deinit { stop() }

    /// Starts the thread (no-op without jobs). [main-thread]
    public func start() {
        guard thread == nil, !jobs.isEmpty else { return }
        stopping.store(false, ordering: .relaxed)
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { raw in
            guard let raw else { return nil }
            let worker = Unmanaged<BackgroundWorker>.fromOpaque(raw).takeRetainedValue()
            worker.loop()
            return nil
        }, box.toOpaque())
        if rc == 0 {
            thread = t
        } else {
            box.release()
            // No thread: service the jobs inline when asked (offline only).
        }
    }

    /// Wakes the worker. [any thread, audio-thread included]
    @inline(__always)
    public func wake() { wakeup.signal() }

    /// Blocks until every job can run `frames` frames. [control-thread, offline only]
    public func waitUntilReady(frames: Int) {
        if jobs.allSatisfy({ $0.isReady(forFrames: frames) }) { return }
        waiters.add(1, ordering: .sequentiallyConsistent)
        defer { waiters.subtract(1, ordering: .sequentiallyConsistent) }
        while !jobs.allSatisfy({ $0.isReady(forFrames: frames) }) {
            if thread == nil {
                // No worker thread: do the work here.
                _ = jobs.map { $0.service() }
                continue
            }
            wakeup.signal()
            progress.wait(timeout: 0.01)
        }
    }

    /// Stops and joins the thread, then lets every job finish. [main-thread]
    public func stop() {
        if let t = thread {
            stopping.store(true, ordering: .releasing)
            wakeup.signal()
            pthread_join(t, nil)
            thread = nil
        }
    }

    /// Errors from the jobs' `finish()`, in job order. [main-thread, after `stop()`]
    public func finishJobs() -> [any Error] {
        finishJobs(completed: true).errors
    }

    /// Finishes every job, telling it whether rendering ran to its end;
    /// returns their errors and notices, in job order.
    /// [main-thread, after `stop()`]
    public func finishJobs(completed: Bool) -> (errors: [any Error], notices: [String]) {
        var errors: [any Error] = []
        var notices: [String] = []
        for job in jobs {
            do { notices += try job.finish(completed: completed) } catch { errors.append(error) }
        }
        return (errors, notices)
    }

    /// Whether a job reported a failure that should stop an offline render.
    /// [any thread]
    public var hasFailedJob: Bool { jobs.contains { $0.hasFailed } }

    private func loop() {
        ThreadRole.mark(.worker)
        while !stopping.load(ordering: .acquiring) {
            var worked = false
            for job in jobs where job.service() { worked = true }
            if worked {
                if waiters.load(ordering: .sequentiallyConsistent) > 0 { progress.signal() }
            } else {
                wakeup.wait(timeout: idleTimeout)
            }
        }
    }
}
