import CPrefetch
import Synchronization

/// A node whose `render` must not run at the same time as the `render` of
/// any other node of this kind (it shares state with them: a library
/// global, a shared scratch buffer). When an engine renders on several
/// threads (`Engine.useRenderThreads`), such nodes run one after another,
/// in schedule order; every other node runs as soon as its inputs are
/// ready. A node's own state, its buses, a plugin instance (CLAP, LV2 and
/// agraph plugins are called per instance), a meter's readings and JACK's
/// port buffers (`jack_port_get_buffer` from any thread within the cycle)
/// need no marking. [any-thread; a marker]
public protocol SerialRenderNode: AnyObject {}

/// An engine's schedule as a graph of tasks, for rendering one block on
/// several threads, the way JACK2 and Ardour run parallel graphs: each
/// task counts the tasks it waits for; a thread that finishes a task
/// counts its dependents down and queues those that reach zero; every
/// thread takes queued tasks until all are done.
///
/// Built on the main thread (`Engine.useRenderThreads`), from what each
/// step reads and writes: a step waits for the last step that wrote any
/// channel (or state) of a bus it reads or writes, and for every step that
/// read a bus since, before it writes it. The dependencies therefore hold
/// however the engine assigns buses (shared by liveness, in place): a
/// shared bus serializes the steps that share it. A task is a chain of
/// steps (a step whose one predecessor has no other successor joins its
/// predecessor's task), so a straight line of nodes costs one queue
/// operation, not one per node.
///
/// Per block (`run`, [audio-thread]): the counters are reset with plain
/// stores, the ready tasks queued in a fixed array sized here (each task is
/// queued at most once per block), atomic indices tagged with the block's
/// generation, so that a thread late from the last block cannot take a
/// stale slot. No allocation, lock or unbounded wait.
final class ParallelPlan: @unchecked Sendable {
    let taskCount: Int
    /// Task t's steps: `steps[stepStarts[t] ..< stepStarts[t + 1]]`, in schedule order.
    private let stepStarts: UnsafeMutablePointer<Int>
    private let steps: UnsafeMutablePointer<Int>
    /// Per step: its delay lines, `lineStarts[i] ..< lineStarts[i + 1]`.
    private let lineStarts: UnsafeMutablePointer<Int>
    private let initialPending: UnsafeMutablePointer<Int>
    /// Task t's dependents: `dependents[dependentStarts[t] ..< dependentStarts[t + 1]]`.
    private let dependentStarts: UnsafeMutablePointer<Int>
    private let dependents: UnsafeMutablePointer<Int>
    private let roots: UnsafeMutablePointer<Int>
    let rootCount: Int
    /// The most tasks that can run at once by depth (the widest level of
    /// the task graph): how many threads can help.
    let width: Int
    private let stepCount: Int

    // Per block.
    private let pending: UnsafeMutablePointer<Atomic<Int>>
    /// The queue: slot k holds generation << 32 | task, or 0 (empty).
    private let slots: UnsafeMutablePointer<Atomic<UInt64>>
    /// generation << 32 | the next slot to take.
    private let head = Atomic<UInt64>(0)
    private let tail = Atomic<Int>(0)
    /// Tasks not finished in this block.
    let remaining = Atomic<Int>(0)
    /// The block's generation (never 0), frames and transport hold: set by
    /// the rendering thread before it publishes `head`. [audio-thread]
    @exclusivity(unchecked) private var generation: UInt32 = 0
    @exclusivity(unchecked) private var frames = 0
    @exclusivity(unchecked) private var held = false

    unowned(unsafe) let engine: Engine
    private let nodes: ContiguousArray<any RenderNode>
    private let delayLines: ContiguousArray<DelayLine>
    /// The threads this plan renders on; set once, before the engine renders.
    let threads: RenderThreads

    /// How long a thread polls for a task before it sleeps: the rendering
    /// thread while helpers finish theirs, a helper between tasks.
    static let mainSpinNanoseconds: UInt64 = 50_000
    static let helperSpinNanoseconds: UInt64 = 10_000

    /// The task graph of `engine`'s schedule. [main-thread]
    init(engine: Engine, threads: RenderThreads) {
        self.engine = engine
        self.threads = threads
        nodes = engine.nodes
        delayLines = engine.delayLines
        let graph = Self.stepGraph(engine)
        let n = engine.nodes.count
        stepCount = n
        // Chains.
        var succCount = [Int](repeating: 0, count: n)
        for preds in graph { for p in preds { succCount[p] += 1 } }
        var taskOf = [Int](repeating: 0, count: n)
        var taskSteps: [[Int]] = []
        for i in 0..<n {
            let preds = graph[i]
            if preds.count == 1, succCount[preds[0]] == 1 {
                let t = taskOf[preds[0]]
                taskOf[i] = t
                taskSteps[t].append(i)
            } else {
                taskOf[i] = taskSteps.count
                taskSteps.append([i])
            }
        }
        let T = taskSteps.count
        taskCount = T
        var taskPreds = [Set<Int>](repeating: [], count: T)
        for i in 0..<n { for p in graph[i] where taskOf[p] != taskOf[i] { taskPreds[taskOf[i]].insert(taskOf[p]) } }
        var taskDeps = [[Int]](repeating: [], count: T)
        for t in 0..<T { for p in taskPreds[t] { taskDeps[p].append(t) } }
        width = Self.width(of: graph)
        stepStarts = .allocate(capacity: T + 1)
        steps = .allocate(capacity: max(n, 1))
        var k = 0
        for t in 0..<T {
            stepStarts[t] = k
            for s in taskSteps[t] { steps[k] = s; k += 1 }
        }
        stepStarts[T] = k
        lineStarts = .allocate(capacity: n + 1)
        var d = 0
        for i in 0...n {
            while d < engine.lineSteps.count && engine.lineSteps[d] < i { d += 1 }
            lineStarts[i] = d
        }
        initialPending = .allocate(capacity: max(T, 1))
        dependentStarts = .allocate(capacity: T + 1)
        let edgeCount = taskDeps.reduce(0) { $0 + $1.count }
        dependents = .allocate(capacity: max(edgeCount, 1))
        var e = 0
        var rootList: [Int] = []
        for t in 0..<T {
            initialPending[t] = taskPreds[t].count
            if taskPreds[t].isEmpty { rootList.append(t) }
            dependentStarts[t] = e
            for x in taskDeps[t].sorted() { dependents[e] = x; e += 1 }
        }
        dependentStarts[T] = e
        rootCount = rootList.count
        roots = .allocate(capacity: max(rootList.count, 1))
        for (j, r) in rootList.enumerated() { roots[j] = r }
        pending = .allocate(capacity: max(T, 1))
        slots = .allocate(capacity: max(T, 1))
        for t in 0..<max(T, 1) {
            (pending + t).initialize(to: Atomic(0))
            (slots + t).initialize(to: Atomic(0))
        }
    }

    deinit {
        // A helper late from this plan's last block may still look at it.
        threads.waitUntilUnused(Unmanaged.passUnretained(self).toOpaque())
        stepStarts.deallocate()
        steps.deallocate()
        lineStarts.deallocate()
        initialPending.deallocate()
        dependentStarts.deallocate()
        dependents.deallocate()
        roots.deallocate()
        pending.deinitialize(count: max(taskCount, 1))
        pending.deallocate()
        slots.deinitialize(count: max(taskCount, 1))
        slots.deallocate()
    }

    /// For each step, the earlier steps it must wait for (sorted, no
    /// duplicates): reads after writes, writes after reads and writes, of
    /// the same bus memory (channels by their pool and index, and the bus's
    /// state), and each `SerialRenderNode` after the one before it.
    /// [main-thread]
    static func stepGraph(_ engine: Engine) -> [[Int]] {
        struct Key: Hashable { var space: Int; var slot: Int }
        let pools = engine.pools
        func keys(_ bus: AudioBus) -> [Key] {
            var out = [Key(space: -1, slot: Int(bitPattern: UInt(bitPattern: bus.statePointer)))]
            for (p, pool) in pools.enumerated() where pool.owns(bus) {
                let b = bus.layout - pool.layouts
                let first = pool.firstChannel[b]
                for c in 0..<bus.channels { out.append(Key(space: p, slot: first + c)) }
            }
            return out
        }
        var lastWriter: [Key: Int] = [:]
        var readers: [Key: [Int]] = [:]
        var lastSerial: Int?
        var result: [[Int]] = []
        let n = engine.nodes.count
        var line = 0
        result.reserveCapacity(n)
        for i in 0..<n {
            var reads: [Key] = []
            var writes: [Key] = []
            for (k, src) in engine.inputIndices[i].enumerated() {
                reads += keys(engine.portOutputs[src][engine.inputPortIndices[i][k]])
            }
            while line < engine.delayLines.count && engine.lineSteps[line] < i { line += 1 }
            var l = line
            while l < engine.delayLines.count && engine.lineSteps[l] == i {
                reads += keys(engine.delayLines[l].source)
                writes += keys(engine.delayLines[l].output)
                l += 1
            }
            for bus in engine.portOutputs[i] { writes += keys(bus) }
            var deps = Set<Int>()
            for key in reads {
                if let w = lastWriter[key] { deps.insert(w) }
                readers[key, default: []].append(i)
            }
            for key in writes {
                if let w = lastWriter[key] { deps.insert(w) }
                for r in readers[key] ?? [] { deps.insert(r) }
                readers[key] = nil
                lastWriter[key] = i
            }
            if engine.nodes[i] is SerialRenderNode {
                if let s = lastSerial { deps.insert(s) }
                lastSerial = i
            }
            deps.remove(i)
            result.append(deps.sorted())
        }
        return result
    }

    /// Renders one block: every task, on this thread and the helpers.
    /// Returns when all are done. [audio-thread]
    func run(frames n: Int, held: Bool) {
        var g = generation &+ 1
        if g == 0 { g = 1 }
        generation = g
        frames = n
        self.held = held
        let tag = UInt64(g) << 32
        var t = 0
        while t < taskCount {
            pending[t].store(initialPending[t], ordering: .relaxed)
            slots[t].store(0, ordering: .relaxed)
            t += 1
        }
        var k = 0
        while k < rootCount {
            slots[k].store(tag | UInt64(roots[k]), ordering: .relaxed)
            k += 1
        }
        tail.store(rootCount, ordering: .relaxed)
        remaining.store(taskCount, ordering: .relaxed)
        head.store(tag, ordering: .sequentiallyConsistent)
        let threads = self.threads
        threads.begin(Unmanaged.passUnretained(self).toOpaque(), ready: rootCount)
        drain(main: true)
        threads.end()
    }

    /// Whether a task waits in the queue. [audio-thread]
    @inline(__always)
    func hasReady() -> Bool {
        let h = head.load(ordering: .sequentiallyConsistent)
        let index = Int(h & 0xFFFF_FFFF)
        guard index < taskCount else { return false }
        return slots[index].load(ordering: .sequentiallyConsistent) >> 32 == h >> 32
    }

    /// Takes a queued task of the current block: (task, generation tag), or
    /// nil when none waits. [audio-thread]
    @inline(__always)
    private func take() -> (Int, UInt64)? {
        while true {
            let h = head.load(ordering: .acquiring)
            let index = Int(h & 0xFFFF_FFFF)
            if index >= taskCount { return nil }
            let v = slots[index].load(ordering: .acquiring)
            // Not published in this block (yet).
            if v >> 32 != h >> 32 { return nil }
            if head.compareExchange(expected: h, desired: h &+ 1, ordering: .acquiringAndReleasing).exchanged {
                return (Int(v & 0xFFFF_FFFF), h & ~0xFFFF_FFFF)
            }
        }
    }

    /// Takes and runs tasks until every task of the block is done (the
    /// rendering thread) or none is left to take for a while (a helper).
    /// [audio-thread]
    func drain(main: Bool) {
        var next = -1
        var tag: UInt64 = 0
        while true {
            if next < 0, let (t, g) = take() {
                next = t
                tag = g
            }
            if next >= 0 {
                next = execute(next, tag: tag)
                continue
            }
            if remaining.load(ordering: .acquiring) == 0 { return }
            if spin(main ? Self.mainSpinNanoseconds : Self.helperSpinNanoseconds) { continue }
            if !main { return }
            threads.sleepMain(self)
        }
    }

    /// Polls for a queued task or the block's end, at most `budget` ns;
    /// false when neither came. [audio-thread]
    @inline(__always)
    private func spin(_ budget: UInt64) -> Bool {
        let start = MonotonicClock.nanoseconds()
        var k = 0
        while true {
            if remaining.load(ordering: .acquiring) == 0 || hasReady() { return true }
            agraph_cpu_relax()
            k &+= 1
            if k & 63 == 0 && MonotonicClock.nanoseconds() &- start > budget { return false }
        }
    }

    /// Runs task `t`'s steps, counts its dependents down and queues those
    /// that became ready (all but one, which it returns to run next; -1
    /// when none). [audio-thread]
    @inline(__always)
    private func execute(_ t: Int, tag: UInt64) -> Int {
        let n = frames
        let held = self.held && engine.anyFollower
        let nodes = self.nodes
        let delayLines = self.delayLines
        var s = stepStarts[t]
        let end = stepStarts[t + 1]
        while s < end {
            let i = steps[s]
            var d = lineStarts[i]
            let lineEnd = lineStarts[i + 1]
            while d < lineEnd {
                delayLines[d].render(frames: n)
                d += 1
            }
            if held && engine.followers[i] {
                engine.hold(step: i, frames: n)
            } else {
                nodes[i].render(frames: n)
            }
            s += 1
        }
        var keep = -1
        var pushed = 0
        var e = dependentStarts[t]
        let eEnd = dependentStarts[t + 1]
        while e < eEnd {
            let x = dependents[e]
            if pending[x].subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                if keep < 0 {
                    keep = x
                } else {
                    let slot = tail.add(1, ordering: .relaxed).oldValue
                    slots[slot].store(tag | UInt64(x), ordering: .sequentiallyConsistent)
                    pushed += 1
                }
            }
            e += 1
        }
        if pushed > 0 { threads.notify(pushed) }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { threads.notifyDone() }
        return keep
    }
}

extension Engine {
    /// Renders each block on the calling thread and `threads`' helpers from
    /// now on, the schedule's independent branches at the same time (the
    /// task graph is built here); nil renders on the calling thread alone.
    /// A schedule without two tasks that can run at once keeps rendering
    /// on the calling thread. Results are the same samples either way.
    /// [main-thread & !rendering]
    public func useRenderThreads(_ threads: RenderThreads?) {
        ThreadRole.check(.main)
        guard let threads, threads.helperCount > 0 else {
            parallelPlan = nil
            return
        }
        let plan = ParallelPlan(engine: self, threads: threads)
        parallelPlan = plan.width > 1 ? plan : nil
    }

    /// Whether blocks render on several threads (`useRenderThreads`). [any-thread]
    public var rendersInParallel: Bool { parallelPlan != nil }

    /// How many of the schedule's tasks can run at once at most (the
    /// widest level of its task graph; 1: a chain, nothing to share), for
    /// `"threads": "auto"`. Builds the task graph. [main-thread]
    public var independentBranches: Int {
        ThreadRole.check(.main)
        return ParallelPlan.width(of: ParallelPlan.stepGraph(self))
    }
}

extension ParallelPlan {
    /// The widest level of the chains of `graph` (see `init`). [main-thread]
    static func width(of graph: [[Int]]) -> Int {
        let n = graph.count
        var succCount = [Int](repeating: 0, count: n)
        for preds in graph { for p in preds { succCount[p] += 1 } }
        var level = [Int](repeating: 0, count: n)
        var isTaskStart = [Bool](repeating: true, count: n)
        var perLevel: [Int: Int] = [:]
        for i in 0..<n {
            let preds = graph[i]
            if preds.count == 1, succCount[preds[0]] == 1 {
                level[i] = level[preds[0]]
                isTaskStart[i] = false
            } else {
                level[i] = (preds.map { level[$0] + 1 }.max()) ?? 0
            }
            if isTaskStart[i] { perLevel[level[i], default: 0] += 1 }
        }
        return perLevel.values.max() ?? 0
    }
}
