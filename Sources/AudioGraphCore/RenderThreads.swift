import CPrefetch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Helper threads that render an engine's independent branches beside the
/// thread that renders the block (JACK's process thread), within the block
/// (`Engine.useRenderThreads`).
///
/// Started before the graph is activated, never in the callback: each with
/// the real-time priority it is given (JACK's client priority, the priority
/// of the process thread, the way Ardour starts its process threads; a
/// system that refuses real-time scheduling gets ordinary threads, and
/// `isRealtime` says so), pinned to no CPU, marked as audio threads
/// (`ThreadRole.audio`), named `agraph-render`.
///
/// Between blocks a helper sleeps on a semaphore. The rendering thread
/// wakes as many helpers as there are ready tasks beyond the one it takes
/// (`sem_post`: no lock, no allocation), and so does any thread that makes
/// several tasks ready. The rendering thread never waits for a helper to
/// wake: it runs tasks itself, and waits only for tasks a helper is running
/// (polling 50 µs, then on a semaphore the finishing helper posts), which
/// the work bounds.
///
/// Threading: `init`, `stop`: [main-thread]; `helperCount`, `isRealtime`,
/// `threadIDs`: [any-thread]; the rest: [audio-thread].
public final class RenderThreads: @unchecked Sendable {
    /// Threads besides the rendering thread.
    public let helperCount: Int
    /// Whether the helpers got the real-time priority asked for.
    public private(set) var isRealtime = false
    /// The plan of the block under way (unretained), nil between blocks.
    let current = Atomic<UnsafeMutableRawPointer?>(nil)
    /// Per helper: the plan it looks at (a hazard pointer: a plan is not
    /// freed while a helper names it).
    private let hazards: UnsafeMutablePointer<Atomic<UnsafeMutableRawPointer?>>
    /// Helpers asleep, or about to be.
    private let sleepers = Atomic<Int>(0)
    /// The rendering thread sleeps in `sleepMain`.
    private let mainWaiting = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let work: UnsafeMutablePointer<sem_t>
    private let mainWake: UnsafeMutablePointer<sem_t>
    private var threads: [pthread_t] = []
    /// The helpers' kernel thread ids, once they run. [any-thread]
    public var threadIDs: [Int32] { tids.withLock { $0 } }
    private let tids = Locked<[Int32]>([])
    private let threadInit: (@convention(c) () -> Void)?

    /// An error starting the helper threads.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `helpers` threads. `realtimePriority`: SCHED_FIFO at that
    /// priority (nil: ordinary scheduling); refused by the system (no
    /// RLIMIT_RTPRIO), the threads start with ordinary scheduling.
    /// `threadInit` runs first thing on each helper (as JACK's thread-init
    /// callback on its process thread; tests count allocations with it).
    /// [main-thread]
    /// - Throws: `StartError` when a thread cannot be created.
    public init(helpers: Int, realtimePriority: Int32? = nil,
                threadInit: (@convention(c) () -> Void)? = nil) throws(StartError) {
        ThreadRole.check(.main)
        self.threadInit = threadInit
        helperCount = max(helpers, 0)
        hazards = .allocate(capacity: max(helperCount, 1))
        for k in 0..<max(helperCount, 1) { (hazards + k).initialize(to: Atomic(nil)) }
        work = .allocate(capacity: 1)
        sem_init(work, 0, 0)
        mainWake = .allocate(capacity: 1)
        sem_init(mainWake, 0, 0)
        var realtime = realtimePriority != nil
        for k in 0..<helperCount {
            var rc = Self.start(self, index: k, priority: realtime ? realtimePriority : nil)
            if rc.code != 0 && realtime {
                // No permission for real-time scheduling: ordinary threads.
                realtime = false
                rc = Self.start(self, index: k, priority: nil)
            }
            guard rc.code == 0 else {
                stop()
                throw StartError(description: "cannot start render thread \(k + 1) of \(helperCount): \(String(cString: strerror(rc.code)))")
            }
            threads.append(rc.thread)
        }
        isRealtime = realtime && helperCount > 0
        // Wait until every helper runs and is asleep: the first block
        // finds them ready.
        while sleepers.load(ordering: .acquiring) < helperCount { usleep(100) }
    }

    deinit {
        stop()
        hazards.deinitialize(count: max(helperCount, 1))
        hazards.deallocate()
        sem_destroy(work)
        work.deallocate()
        sem_destroy(mainWake)
        mainWake.deallocate()
    }

    private final class Start {
        let owner: RenderThreads
        let index: Int
        init(_ owner: RenderThreads, _ index: Int) {
            self.owner = owner
            self.index = index
        }
    }

    /// Creates helper `index`. [main-thread]
    private static func start(_ owner: RenderThreads, index: Int, priority: Int32?) -> (code: Int32, thread: pthread_t) {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        if let priority {
            pthread_attr_setinheritsched(&attr, Int32(PTHREAD_EXPLICIT_SCHED))
            pthread_attr_setschedpolicy(&attr, SCHED_FIFO)
            var param = sched_param()
            param.sched_priority = priority
            pthread_attr_setschedparam(&attr, &param)
        }
        let box = Unmanaged.passRetained(Start(owner, index))
        var t = pthread_t()
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&t, &attr, { raw in
                guard let raw else { return nil }
                let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
                start.owner.helper(start.index)
                return nil
            }, box.toOpaque())
        }
        if rc != 0 { box.release() }
        return (rc, t)
    }

    /// Stops and joins the helpers. Idempotent. [main-thread & !rendering]
    public func stop() {
        ThreadRole.check(.main)
        guard !threads.isEmpty else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        for _ in threads { sem_post(work) }
        for t in threads { pthread_join(t, nil) }
        threads = []
        tids.withLock { $0 = [] }
    }

    /// Helper `index`'s loop. [audio-thread]
    private func helper(_ index: Int) {
        ThreadRole.mark(.audio)
        let tid = Self.nameThisThread("agraph-render")
        tids.withLock { $0.append(tid) }
        threadInit?()
        while !stopping.load(ordering: .acquiring) {
            if let raw = enter(index) {
                Unmanaged<ParallelPlan>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.drain(main: false) }
                hazards[index].store(nil, ordering: .releasing)
            }
            sleepers.add(1, ordering: .sequentiallyConsistent)
            if stopping.load(ordering: .sequentiallyConsistent) { break }
            if workVisible(index) {
                sleepers.subtract(1, ordering: .sequentiallyConsistent)
                continue
            }
            while sem_wait(work) != 0 && errno == EINTR {}
            sleepers.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Names the calling thread (its /proc comm, as pthread_setname_np,
    /// which Swift's Glibc module does not import) and returns its kernel
    /// id (from /proc/thread-self). At a helper's start, not in a block.
    /// [audio-thread]
    private static func nameThisThread(_ name: String) -> Int32 {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        if fd >= 0 {
            _ = name.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        var buf = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &buf, buf.count - 1)
        guard n > 0 else { return 0 }
        let text = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "/").last.flatMap { Int32($0) } ?? 0
    }

    /// The current plan, with helper `index`'s hazard set on it; nil
    /// between blocks. [audio-thread]
    @inline(__always)
    private func enter(_ index: Int) -> UnsafeMutableRawPointer? {
        guard let raw = current.load(ordering: .sequentiallyConsistent) else { return nil }
        hazards[index].store(raw, ordering: .sequentiallyConsistent)
        if current.load(ordering: .sequentiallyConsistent) != raw {
            hazards[index].store(nil, ordering: .releasing)
            return nil
        }
        return raw
    }

    /// Whether a task waits in the current block's queue. [audio-thread]
    private func workVisible(_ index: Int) -> Bool {
        guard let raw = enter(index) else { return false }
        let ready = Unmanaged<ParallelPlan>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.hasReady() }
        hazards[index].store(nil, ordering: .releasing)
        return ready
    }

    /// Publishes a block's plan and wakes helpers for its `ready` tasks
    /// beyond the first. [audio-thread]
    @inline(__always)
    func begin(_ plan: UnsafeMutableRawPointer, ready: Int) {
        current.store(plan, ordering: .sequentiallyConsistent)
        wakeHelpers(ready - 1)
    }

    /// The block is done. [audio-thread]
    @inline(__always)
    func end() {
        current.store(nil, ordering: .releasing)
    }

    /// `count` more tasks were queued: wakes the rendering thread if it
    /// sleeps, and helpers for the rest. [audio-thread]
    @inline(__always)
    func notify(_ count: Int) {
        var left = count
        if mainWaiting.load(ordering: .sequentiallyConsistent)
            && mainWaiting.exchange(false, ordering: .sequentiallyConsistent) {
            sem_post(mainWake)
            left -= 1
        }
        wakeHelpers(left)
    }

    /// Every task of the block is done: wakes the rendering thread if it
    /// sleeps. [audio-thread]
    @inline(__always)
    func notifyDone() {
        if mainWaiting.load(ordering: .sequentiallyConsistent)
            && mainWaiting.exchange(false, ordering: .sequentiallyConsistent) {
            sem_post(mainWake)
        }
    }

    /// Posts the work semaphore for up to `count` sleeping helpers. [audio-thread]
    @inline(__always)
    private func wakeHelpers(_ count: Int) {
        guard count > 0 else { return }
        let asleep = sleepers.load(ordering: .sequentiallyConsistent)
        var k = count < asleep ? count : asleep
        while k > 0 {
            sem_post(work)
            k -= 1
        }
    }

    /// The rendering thread, with nothing to take while helpers run tasks:
    /// sleeps until one queues a task or the block is done. [audio-thread]
    func sleepMain(_ plan: ParallelPlan) {
        mainWaiting.store(true, ordering: .sequentiallyConsistent)
        if plan.remaining.load(ordering: .sequentiallyConsistent) == 0 || plan.hasReady() {
            // Called off; unless a helper took the flag and posts.
            if mainWaiting.exchange(false, ordering: .sequentiallyConsistent) { return }
        }
        while sem_wait(mainWake) != 0 && errno == EINTR {}
    }

    /// Returns once no helper looks at `plan` (a plan being freed: no block
    /// renders it any more). [main-thread]
    func waitUntilUnused(_ plan: UnsafeMutableRawPointer) {
        while true {
            var used = current.load(ordering: .sequentiallyConsistent) == plan
            var k = 0
            while k < helperCount && !used {
                if hazards[k].load(ordering: .sequentiallyConsistent) == plan { used = true }
                k += 1
            }
            if !used { return }
            sched_yield()
        }
    }

    /// Online CPUs. [any-thread]
    public static var processorCount: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }
}
