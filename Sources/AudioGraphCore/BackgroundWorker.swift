#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The engine's non-realtime threads: they service every `BackgroundJob`
/// (file reading, decoding, file writing) and sleep when none has work.
///
/// Jobs are spread over up to `maxThreads` threads (job k on thread
/// k mod threads), so a decoder and a file writer run on two cores at once
/// and a slow disk under one file holds up only the jobs on its thread. A
/// job is always serviced by the same thread (its rings are single-producer
/// or single-consumer on that side).
///
/// The audio thread (or the offline driver) calls `wake()` after it has
/// consumed or produced audio; each thread also wakes on a short timer.
public final class BackgroundWorker: @unchecked Sendable {
    /// Most worker threads per engine.
    public static let maxThreads = 4
    private let jobs: [any BackgroundJob]
    /// One wake-up per thread (`wake` signals each).
    private let wakeups: [Wakeup]
    /// Per thread: whether it has a job that is not `OnDemandJob` (woken
    /// after every block), else its on-demand jobs (woken when one has work).
    /// (Unchecked exclusivity: changed only by `startOffline` before the
    /// threads start, read by `wake` on the audio thread.)
    @exclusivity(unchecked) private var alwaysWake: ContiguousArray<Bool>
    @exclusivity(unchecked) private var onDemand: ContiguousArray<ContiguousArray<any OnDemandJob>>
    /// Per job: it runs on the thread that renders (`startOffline`), not
    /// on a worker thread.
    private var onRenderThread: [Bool]
    private let progress = Wakeup()
    private let stopping = Atomic<Bool>(false)
    /// Threads in `waitUntilReady`: the workers signal progress only then,
    /// so no stale signals pile up for a later wait to spin through.
    private let waiters = Atomic<Int>(0)
    private var threads: [pthread_t] = []
    /// How long a worker thread sleeps when idle, in seconds.
    public let idleTimeout: Double
    /// How long a thread whose jobs are all on-demand sleeps when idle: it
    /// is woken when one has work (after a block, and by the control
    /// paths that give work: seeks, playlist edits, locates), so its timer
    /// is only a safety net. Each timed wake-up costs CPU (a live graph of
    /// four LV2 nodes ran four threads waking 200 times a second each).
    public static let onDemandIdleTimeout = 0.05

    /// [main-thread]
    public init(jobs: [any BackgroundJob], idleTimeout: Double = 0.005) {
        ThreadRole.check(.main)
        self.jobs = jobs
        self.idleTimeout = idleTimeout
        let threads = min(jobs.count, Self.maxThreads)
        wakeups = (0..<threads).map { _ in Wakeup() }
        var always = ContiguousArray(repeating: false, count: threads)
        var demand = ContiguousArray(repeating: ContiguousArray<any OnDemandJob>(), count: threads)
        for (i, job) in jobs.enumerated() {
            if let d = job as? OnDemandJob { demand[i % threads].append(d) } else { always[i % threads] = true }
        }
        alwaysWake = always
        onDemand = demand
        onRenderThread = Array(repeating: false, count: jobs.count)
    }

    deinit { stop() }

    /// Worker threads this engine runs (0 without jobs).
    public var threadCount: Int { wakeups.count }

    /// Worker threads running now (0 before `start`, after `stop`, and
    /// when every job runs on the render thread). [main-thread]
    public var runningThreads: Int {
        ThreadRole.check(.main)
        return threads.count
    }

    /// Starts the threads for an offline render: each job that can do its
    /// work on the thread that renders, inside its node's `render`
    /// (`RenderThreadJob`), is told to, and only the jobs left get worker
    /// threads (none when none is left). With nothing to overlap, a
    /// hand-off to another thread costs task switches, semaphores and
    /// copies through rings, and buys nothing on a machine with no idle
    /// core. [main-thread & !rendering]
    public func startOffline() {
        ThreadRole.check(.main)
        guard threads.isEmpty else { return }
        for (i, job) in jobs.enumerated() {
            if let direct = job as? any RenderThreadJob, direct.runOnRenderThread() { onRenderThread[i] = true }
        }
        // A thread whose jobs all moved is neither started nor woken.
        for k in wakeups.indices where !hasThreadWork(k) {
            alwaysWake[k] = false
            onDemand[k] = []
        }
        start()
    }

    /// Whether thread `k` has a job that does not run on the render thread.
    private func hasThreadWork(_ k: Int) -> Bool {
        stride(from: k, to: jobs.count, by: wakeups.count).contains { !onRenderThread[$0] }
    }

    /// Starts the threads (no-op without jobs). [main-thread]
    public func start() {
        ThreadRole.check(.main)
        guard threads.isEmpty, !jobs.isEmpty else { return }
        stopping.store(false, ordering: .relaxed)
        for k in wakeups.indices where hasThreadWork(k) {
            let box = Unmanaged.passRetained(ThreadStart(worker: self, index: k))
            var t = pthread_t()
            let rc = ThreadSignals.blockedInNewThreads {
                pthread_create(&t, nil, { raw in
                    guard let raw else { return nil }
                    let start = Unmanaged<ThreadStart>.fromOpaque(raw).takeRetainedValue()
                    start.worker.loop(start.index)
                    return nil
                }, box.toOpaque())
            }
            if rc == 0 {
                threads.append(t)
            } else {
                box.release()
                // Fewer threads than wanted: stop those started and service
                // the jobs inline when asked (offline only).
                stop()
                return
            }
        }
    }

    /// What a new thread needs to know.
    private final class ThreadStart {
        let worker: BackgroundWorker
        let index: Int
        init(worker: BackgroundWorker, index: Int) {
            self.worker = worker
            self.index = index
        }
    }

    /// Wakes the worker threads. [any-thread; the audio thread included]
    /// (An index loop: a `for … in` over the array allocates in debug
    /// builds, on the audio thread; RealtimeSafetyTests counts it.)
    @inline(__always)
    public func wake() {
        // Local copies: no retain and release per element (`Engine.render`).
        let wakeups = self.wakeups
        let alwaysWake = self.alwaysWake
        let onDemand = self.onDemand
        var k = 0
        while k < wakeups.count {
            if alwaysWake[k] || Self.anyHasWork(onDemand[k]) { wakeups[k].signal() }
            k += 1
        }
    }

    @inline(__always)
    private static func anyHasWork(_ jobs: ContiguousArray<any OnDemandJob>) -> Bool {
        var i = 0
        while i < jobs.count {
            if jobs[i].hasWork { return true }
            i += 1
        }
        return false
    }

    /// Blocks until every job can run `frames` frames. [main-thread | audio-thread |
    /// control-thread; offline only: an offline render waits on the thread that renders]
    public func waitUntilReady(frames: Int) {
        ThreadRole.check(.main, .audio, .control)
        _ = waitUntilReady(frames: frames, unless: { false })
    }

    /// Blocks until every job can run `frames` frames, or until `stop`
    /// returns true (asked about every 10 ms, so that SIGINT or SIGTERM
    /// ends a wait for a job that never gets ready); returns whether every
    /// job is ready. [main-thread | audio-thread | control-thread; offline only: an offline
    /// render waits on the thread that renders, a live start on the owner thread]
    public func waitUntilReady(frames: Int, unless stop: () -> Bool) -> Bool {
        ThreadRole.check(.main, .audio, .control)
        if jobs.allSatisfy({ $0.isReady(forFrames: frames) }) { return true }
        waiters.add(1, ordering: .sequentiallyConsistent)
        defer { waiters.subtract(1, ordering: .sequentiallyConsistent) }
        while !jobs.allSatisfy({ $0.isReady(forFrames: frames) }) {
            if stop() { return false }
            if threads.isEmpty {
                // No worker thread: do the work here.
                for (i, job) in jobs.enumerated() where !onRenderThread[i] { _ = job.service() }
                continue
            }
            wake()
            progress.wait(timeout: 0.01)
        }
        return true
    }

    /// Stops and joins the threads. [main-thread]
    public func stop() {
        ThreadRole.check(.main)
        guard !threads.isEmpty else { return }
        stopping.store(true, ordering: .releasing)
        wake()
        for t in threads { pthread_join(t, nil) }
        threads = []
    }

    /// Errors from the jobs' `finish()`, in job order. [main-thread; after `stop()`]
    public func finishJobs() -> [any Error] {
        ThreadRole.check(.main)
        return finishJobs(completed: true).errors
    }

    /// Finishes every job, telling it whether rendering ran to its end;
    /// returns their errors and notices, in job order.
    /// [main-thread; after `stop()`]
    public func finishJobs(completed: Bool) -> (errors: [any Error], notices: [String]) {
        ThreadRole.check(.main)
        var errors: [any Error] = []
        var notices: [String] = []
        for job in jobs {
            do { notices += try job.finish(completed: completed) } catch { errors.append(error) }
        }
        return (errors, notices)
    }

    /// Whether a job reported a failure that should stop an offline render.
    /// [any-thread]
    public var hasFailedJob: Bool { jobs.contains { $0.hasFailed } }

    /// Thread `index`: services jobs index, index + threads, … (those that
    /// do not run on the render thread).
    private func loop(_ index: Int) {
        ThreadRole.mark(.worker)
        let mine = stride(from: index, to: jobs.count, by: wakeups.count).filter { !onRenderThread[$0] }.map { jobs[$0] }
        let wakeup = wakeups[index]
        let timeout = alwaysWake[index] ? idleTimeout : max(idleTimeout, Self.onDemandIdleTimeout)
        while !stopping.load(ordering: .acquiring) {
            var worked = false
            for job in mine where job.service() { worked = true }
            if worked {
                if waiters.load(ordering: .sequentiallyConsistent) > 0 { progress.signal() }
            } else {
                wakeup.wait(timeout: timeout)
            }
        }
    }
}

/// A background job that an offline render can run on the thread that
/// renders: its node does the job's work inside `render` when it needs it
/// (a decoder decodes the frames the block needs straight into its output
/// bus, a file sink writes its input to the file), with no worker thread,
/// no ring and no wait. Live rendering keeps the job on a worker thread:
/// the audio thread must not block. [main-thread & !rendering]
public protocol RenderThreadJob: BackgroundJob {
    /// Switches the job, and its node, to doing the work in `render` from
    /// now on; returns whether it did (a job may decline, and then runs on
    /// a worker thread as before). Called once, before the first block,
    /// by `BackgroundWorker.startOffline`. While switched, `isReady`
    /// answers true and `service` is never called on a worker thread.
    /// [main-thread & !rendering]
    func runOnRenderThread() -> Bool
}
