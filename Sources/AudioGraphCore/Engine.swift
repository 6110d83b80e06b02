import CPrefetch
import Synchronization

/// An error building an engine from a plan.
public struct EngineError: Error, Sendable, CustomStringConvertible {
    public var nodeID: String?
    public var message: String
    public init(nodeID: String? = nil, _ message: String) {
        self.nodeID = nodeID
        self.message = message
    }
    public var description: String {
        nodeID.map { "node '\($0)': \(message)" } ?? message
    }
}

/// A compiled graph: a flat schedule of nodes, every bus allocated, ready to
/// render blocks of up to `maxFrames` frames on the audio thread.
///
/// Threading:
/// - `init`, `start`, `stop`, `finish`: [main-thread]
/// - `render`: [audio-thread] — one thread at a time; no allocation, lock,
///   I/O, logging or waiting.
/// - `post`: [control-thread]
/// - `framePosition`, `isFinished`: [any-thread]
/// - `setTransportFollowers`: [main-thread & !rendering]; `transportHeld`:
///   [audio-thread], set before `render`
public final class Engine: @unchecked Sendable {
    /// One entry of the schedule, in topological order.
    public struct Step {
        public var id: String
        public var node: any RenderNode
        /// For each input port in order: the index (in the schedule) of the
        /// step whose output feeds it. Must be an earlier step.
        public var inputs: [Int]
        /// For each input port in order: which output port of that step
        /// feeds it (0 for single-output nodes).
        public var inputPorts: [Int]
        /// Channel count of each output port, in port order; empty for a sink.
        public var outputChannelCounts: [Int]
        /// The first output's channel count, or nil for a sink.
        public var outputChannels: Int? { outputChannelCounts.first }

        /// A step with at most one output (port 0 of each source).
        public init(id: String, node: any RenderNode, inputs: [Int], outputChannels: Int?) {
            self.init(id: id, node: node, inputs: inputs, inputPorts: inputs.map { _ in 0 },
                      outputChannelCounts: outputChannels.map { [$0] } ?? [])
        }

        /// A step with any number of outputs; `inputPorts` names the output
        /// port of each source.
        public init(id: String, node: any RenderNode, inputs: [Int], inputPorts: [Int], outputChannelCounts: [Int]) {
            self.id = id
            self.node = node
            self.inputs = inputs
            self.inputPorts = inputPorts
            self.outputChannelCounts = outputChannelCounts
        }
    }

    public let sampleRate: Double
    public let maxFrames: Int
    public let ids: [String]
    /// Each step's index by id (the first step of an id), so that looking
    /// a node up does not walk the schedule: hosts do it once per node.
    private let indexByID: [String: Int]
    /// For each step, the steps feeding its inputs.
    public let inputIndices: [[Int]]
    /// For each step, the output port of each of those steps that feeds it.
    public let inputPortIndices: [[Int]]
    let nodes: ContiguousArray<any RenderNode>
    private let pool: BusPool
    /// Whether some bus of this engine's own pool serves more than one
    /// output (`reuseBuses`).
    public let sharesBuses: Bool
    /// Buses in this engine's own pool (kept buses of a reload live in the
    /// old engine's). [any-thread]
    public var busCount: Int { pool.busCount }
    /// Every pool this engine's buses live in: its own first, then those of
    /// the engines it kept steps from (hot reload). [any-thread; the audio thread lays them out]
    let pools: ContiguousArray<BusPool>
    /// Bus of each step's first output (nil for sinks).
    public let outputs: [AudioBus?]
    /// Buses of each step's outputs, in port order (empty for sinks).
    public let portOutputs: [[AudioBus]]
    /// Buses feeding sinks: when all have ended, the graph has finished.
    private let sinkInputs: ContiguousArray<AudioBus>
    /// Parameter changes bound for the audio thread.
    public let parameters = ParameterQueue()
    /// Non-realtime work of the graph's nodes.
    public let worker: BackgroundWorker
    let position = Atomic<Int>(0)
    private let finished = Atomic<Bool>(false)
    /// Per step: whether it follows the host's transport.
    let followers: UnsafeMutablePointer<Bool>
    /// Per step: the node as a follower, when it follows.
    @exclusivity(unchecked) var followingNodes: ContiguousArray<(any TransportFollowing)?> = []
    /// Whether any step follows the transport.
    @exclusivity(unchecked) private(set) var anyFollower = false

    /// While true, the steps that follow the host's transport
    /// (`setTransportFollowers`) are not rendered: their outputs are
    /// silence (running, not ended) and their streams stay where they are.
    /// A live host sets it before each `render` from its transport (JACK's
    /// stopped, starting, or not yet where the sources are). [audio-thread]
    /// (Unchecked exclusivity: one thread at a time sets and reads it, and
    /// a checked class `var` costs a runtime call per access.)
    @exclusivity(unchecked) public var transportHeld = false
    private let lastValid = Atomic<Int>(0)

    /// Frames of real signal that reached the sinks in the last block: less
    /// than the block in the block where the streams ended. [any-thread]
    public var lastBlockValidFrames: Int { lastValid.load(ordering: .relaxed) }

    /// Delay lines in front of node inputs whose paths are shorter than the
    /// longest path into the same node (latency compensation), in schedule
    /// order.
    let delayLines: ContiguousArray<DelayLine>
    /// The step each delay line feeds, in this engine's schedule (a line
    /// kept from an earlier engine keeps its `step` of that one).
    let lineSteps: ContiguousArray<Int>
    /// Whether the engine aligns paths of different latency.
    public let latencyCompensation: Bool
    /// One address in each cache line a block reads first, in the order it
    /// reads them (see `prefetchHotMemory`).
    private let hotLines: UnsafeMutablePointer<UnsafeRawPointer>
    private let hotLineCount: Int
    /// Where each group of `hotLines` starts: group 0 is the engine's own
    /// (the schedule, the pools' layouts and states), group `i + 1` step
    /// `i`'s; one more entry, the end.
    private let hotGroupStarts: UnsafeMutablePointer<Int>
    /// How many steps ahead `render` prefetches the next steps' hot lines;
    /// 0: it does not (offline, where caches stay warm). A live host sets
    /// it before the engine runs and calls `prefetchHotMemory` at the start
    /// of each cycle. [main-thread & !rendering]
    @exclusivity(unchecked) public var prefetchDistance = 0
    /// The distance a live host uses: measured with `agraph-bench cold`
    /// (1 and 2 alike, both ahead of prefetching everything at once).
    public static let livePrefetchDistance = 1
    /// Regions longer than this are streamed (the hardware prefetcher
    /// follows them); only their first lines are listed.
    public static let hotRegionLimit = 1024
    /// The task graph `render` runs on several threads (`useRenderThreads`);
    /// nil: the schedule in order on the calling thread.
    @exclusivity(unchecked) var parallelPlan: ParallelPlan?

    /// Allocates every bus and prepares every node. [main-thread]
    ///
    /// With `latencyCompensation`, a node with several inputs whose inputs
    /// arrive with different latencies reads the shorter ones through delay
    /// lines (allocated here), so that they stay aligned. Latencies are read
    /// right after each node's `prepare`. A line is also made, with room
    /// for up to one second more, for every input of a node downstream of a
    /// node whose latency may change (`LatencyChangeNotifying`).
    ///
    /// With `reusing` (hot reload), the steps it marks as kept are the
    /// running engine's node objects, already prepared: they keep their
    /// output buses and the delay lines in front of them and are not
    /// prepared again (see `EngineReuse`).
    /// - Throws: `EngineError` when a step reads a later step or a sink, or a node refuses to prepare.
    ///
    /// With `reuseBuses`, output buses are shared by liveness (see
    /// `BusPlan`): a bus serves a step's output from that step until its
    /// last reader has run, then the next output of its channel count;
    /// a node that `processesInPlace` writes into its input's bus when it
    /// is that bus's last reader. Buses feeding sinks stay valid to the end
    /// of the block. Without it (the default), every output has its own
    /// bus, which stays valid after `render` for any reader: a live engine
    /// (hot reload keeps nodes with the buses they were prepared with, and
    /// the old engine's retired nodes render after the new engine's kept
    /// ones during the crossfade) and callers that read intermediate
    /// outputs by step.
    public init(steps: [Step], sampleRate: Double, maxFrames: Int, latencyCompensation: Bool = true,
                reusing: EngineReuse? = nil, reuseBuses: Bool = false) throws {
        ThreadRole.check(.main)
        let kept: [Int?] = reusing?.keptFrom ?? steps.map { _ in nil }
        guard kept.count == steps.count else { throw EngineError("reuse plan for \(kept.count) steps, not \(steps.count)") }
        self.latencyCompensation = latencyCompensation
        guard maxFrames > 0 else { throw EngineError("maxFrames must be positive") }
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        ids = steps.map(\.id)
        var byID: [String: Int] = [:]
        byID.reserveCapacity(steps.count)
        for (i, step) in steps.enumerated() where byID[step.id] == nil { byID[step.id] = i }
        indexByID = byID
        inputIndices = steps.map(\.inputs)
        inputPortIndices = steps.map(\.inputPorts)
        // Every output port of every step made here gets its bus from one
        // pool: its own, or (reuseBuses) one shared by liveness.
        let plan = BusPlan(steps: steps, kept: kept, reuse: reuseBuses && reusing == nil)
        let pool = BusPool(channelCounts: plan.channelCounts, capacity: maxFrames)
        self.pool = pool
        sharesBuses = plan.shares
        // Steps given the same buses (shared by liveness) share one array.
        var outsByBuses: [[Int]: [AudioBus]] = [:]
        let portOuts = steps.indices.map { i -> [AudioBus] in
            if let j = kept[i], let old = reusing?.old { return old.portOutputs[j] }
            if let made = outsByBuses[plan.busOf[i]] { return made }
            let made = plan.busOf[i].map { pool.buses[$0] }
            outsByBuses[plan.busOf[i]] = made
            return made
        }
        outsByBuses = [:]
        if let old = reusing?.old, old.sharesBuses {
            try BusPlan.checkKept(steps: steps, kept: kept, buses: portOuts)
        }
        // Kept buses live in the old engine's pools: keep those that hold one.
        var pools: ContiguousArray<BusPool> = [pool]
        if let old = reusing?.old {
            let keptBuses = steps.indices.flatMap { i in kept[i] == nil ? [] : portOuts[i] }
            for p in old.pools where keptBuses.contains(where: { p.owns($0) }) { pools.append(p) }
        }
        self.pools = pools
        var lineSteps: ContiguousArray<Int> = []
        portOutputs = portOuts
        let outs = portOuts.map(\.first)
        outputs = outs
        var sinks: ContiguousArray<AudioBus> = []
        var lines: ContiguousArray<DelayLine> = []
        /// Per step: its output's latency, and whether a node of changing
        /// latency lies upstream (itself included).
        var latency: [Int] = []
        var changing: [Bool] = []
        let context = PrepareContext(sampleRate: sampleRate, maxFrames: maxFrames)
        // The old engine's delay lines by the step they feed, looked up once
        // per kept step.
        var oldLines: [Int: [Int]] = [:]
        if let old = reusing?.old {
            for (k, j) in old.lineSteps.enumerated() { oldLines[j, default: []].append(k) }
        }
        for (i, step) in steps.enumerated() {
            guard step.inputPorts.count == step.inputs.count else {
                throw EngineError(nodeID: step.id, "\(step.inputs.count) inputs but \(step.inputPorts.count) source ports")
            }
            var ins: [AudioBus] = []
            for (k, src) in step.inputs.enumerated() {
                let port = step.inputPorts[k]
                guard src >= 0, src < i, port >= 0, port < portOuts[src].count else {
                    throw EngineError(nodeID: step.id, "input from step \(src) port \(port) is not an output of an earlier node")
                }
                ins.append(portOuts[src][port])
            }
            let upstream = step.inputs.map { latency[$0] }
            let longest = upstream.max() ?? 0
            let mayChange = step.inputs.contains { changing[$0] }
            if let j = kept[i], let old = reusing?.old {
                // Prepared already, reading the buses and lines it was prepared with.
                for k in oldLines[j] ?? [] {
                    let line = old.delayLines[k]
                    lines.append(line)
                    lineSteps.append(i)
                    ins[line.port] = line.output
                }
                if step.outputChannelCounts.isEmpty { sinks.append(contentsOf: ins) }
                latency.append(longest + max(step.node.latency, 0))
                changing.append(mayChange || step.node is LatencyChangeNotifying)
                continue
            }
            if latencyCompensation && step.inputs.count > 1 && (mayChange || upstream.contains { $0 != longest }) {
                for (port, src) in step.inputs.enumerated() where mayChange || latency[src] < longest {
                    let need = longest - latency[src]
                    let line = DelayLine(step: i, port: port, source: ins[port], delay: need,
                                         maximumDelay: mayChange ? need + Int(sampleRate) : need, maxFrames: maxFrames)
                    lines.append(line)
                    lineSteps.append(i)
                    ins[port] = line.output
                }
            }
            do {
                try step.node.prepare(inputs: ins, outputs: portOuts[i], context: context)
            } catch let e as EngineError {
                throw e
            } catch {
                throw EngineError(nodeID: step.id, "\(error)")
            }
            if step.outputChannelCounts.isEmpty { sinks.append(contentsOf: ins) }
            latency.append(longest + max(step.node.latency, 0))
            changing.append(mayChange || step.node is LatencyChangeNotifying)
        }
        sinkInputs = sinks
        delayLines = lines
        self.lineSteps = lineSteps
        nodes = ContiguousArray(steps.map { $0.node })
        worker = BackgroundWorker(jobs: steps.compactMap { $0.node.backgroundJob })
        followers = .allocate(capacity: max(steps.count, 1))
        followers.initialize(repeating: false, count: max(steps.count, 1))
        // What a block reads first, in order: the schedule, the buses'
        // layouts and states, then each step's delay lines, node object
        // and the node's own hot memory.
        var global: [UnsafeRawBufferPointer] = []
        nodes.withUnsafeBufferPointer { global.append(UnsafeRawBufferPointer($0)) }
        for p in pools { global += p.hotMemory }
        var groups = [global]
        var line = 0
        for (i, step) in steps.enumerated() {
            var regions: [UnsafeRawBufferPointer] = []
            while line < lines.count && lineSteps[line] == i {
                regions.append(Self.objectMemory(lines[line]))
                line += 1
            }
            regions.append(Self.objectMemory(step.node))
            regions += step.node.hotMemory
            groups.append(regions)
        }
        let (addresses, starts) = Self.lineAddresses(groups: groups)
        hotLineCount = addresses.count
        hotLines = .allocate(capacity: max(addresses.count, 1))
        hotLines.initialize(from: addresses, count: addresses.count)
        hotGroupStarts = .allocate(capacity: starts.count)
        hotGroupStarts.initialize(from: starts, count: starts.count)
    }

    deinit {
        followers.deallocate()
        hotLines.deallocate()
        hotGroupStarts.deallocate()
    }

    /// The heap block of a class instance (its stored properties).
    /// [main-thread]
    public static func objectMemory(_ object: AnyObject) -> UnsafeRawBufferPointer {
        ThreadRole.check(.main)
        let p = Unmanaged<AnyObject>.passUnretained(object).toOpaque()
        // Swift allocates instances with malloc.
        return UnsafeRawBufferPointer(start: p, count: max(agraph_heap_block_size(p), 1))
    }

    /// One address per 64-byte line of each region (up to `hotRegionLimit`
    /// bytes of it), each line once, in order. [main-thread]
    public static func lineAddresses(_ regions: [UnsafeRawBufferPointer]) -> [UnsafeRawPointer] {
        ThreadRole.check(.main)
        return lineAddresses(groups: [regions]).addresses
    }

    /// `lineAddresses` of groups of regions, a line listed in the first
    /// group that has it; `starts` has each group's first index, then the
    /// end. [main-thread]
    static func lineAddresses(groups: [[UnsafeRawBufferPointer]]) -> (addresses: [UnsafeRawPointer], starts: [Int]) {
        var seen = Set<UInt>()
        var out: [UnsafeRawPointer] = []
        var starts: [Int] = []
        for regions in groups {
            starts.append(out.count)
            for r in regions {
                guard let base = r.baseAddress, r.count > 0 else { continue }
                let first = UInt(bitPattern: base) & ~63
                let end = UInt(bitPattern: base) + UInt(min(r.count, hotRegionLimit))
                var a = first
                while a < end {
                    if seen.insert(a).inserted, let p = UnsafeRawPointer(bitPattern: a) { out.append(p) }
                    a += 64
                }
            }
        }
        starts.append(out.count)
        return (out, starts)
    }

    /// Prefetches the hot lines of groups `from..<to` (clamped). [audio-thread]
    @inline(__always)
    func prefetchGroups(from: Int, to: Int) {
        let groups = nodes.count + 1
        let a = from < groups ? from : groups
        let b = to < groups ? to : groups
        guard a < b else { return }
        let lines = hotLines
        var i = hotGroupStarts[a]
        let end = hotGroupStarts[b]
        while i < end {
            agraph_prefetch_read(lines[i])
            i += 1
        }
    }

    /// Prefetches the cache lines a block reads first: the schedule, the
    /// buses' layouts and states, every node object and its `hotMemory`.
    ///
    /// Live, the data a block reads has mostly left the caches since the
    /// last cycle, and `render` finds it by following pointers (node, its
    /// state, its tables), one miss after another. Called at the very start
    /// of a cycle, before the host's own work (port buffers), the misses
    /// overlap with that work and with each other. Changes no result.
    /// Offline rendering, whose caches stay warm, does not need it.
    ///
    /// With a `prefetchDistance` of k > 0, this prefetches the engine's own
    /// lines and the first k steps' only; `render` prefetches step i + k's
    /// before it renders step i, so that each step's lines arrive shortly
    /// before they are needed instead of all at once.
    /// [audio-thread; realtime-safe: prefetch hints only]
    @inline(__always)
    public func prefetchHotMemory() {
        ThreadRole.check(.audio)
        let k = prefetchDistance
        prefetchGroups(from: 0, to: k > 0 ? 1 + k : nodes.count + 1)
    }

    /// Lines prefetched per block, at its start and ahead of each step
    /// together. [any-thread]
    public var hotLineTotal: Int { hotLineCount }

    /// Marks the steps named `ids` as following the host's transport (held
    /// while `transportHeld`); every other step runs freely. Returns the
    /// ids that name no step. [main-thread & !rendering]
    @discardableResult
    public func setTransportFollowers(_ ids: Set<String>) -> Set<String> {
        ThreadRole.check(.main)
        var unknown = ids
        followingNodes = ContiguousArray(repeating: nil, count: nodes.count)
        for (i, id) in self.ids.enumerated() {
            followers[i] = ids.contains(id)
            if followers[i] { followingNodes[i] = nodes[i] as? TransportFollowing }
            unknown.remove(id)
        }
        anyFollower = ids.count > unknown.count
        return unknown
    }

    /// The steps that follow the host's transport, in schedule order. [any-thread]
    public var transportFollowers: [String] { ids.indices.filter { followers[$0] }.map { ids[$0] } }

    /// Frames rendered so far. [any-thread]
    public var framePosition: Int { position.load(ordering: .relaxed) }

    /// True once every stream reaching a sink has ended. [any-thread]
    public var isFinished: Bool { finished.load(ordering: .relaxed) }

    /// The index of the step named `id`. [any-thread]
    public func stepIndex(of id: String) -> Int? { indexByID[id] }

    /// The runtime node of step `id`, for control from outside the audio
    /// thread (seek, counters). The schedule never changes after `init`.
    /// [main-thread | control-thread]
    public func node(_ id: String) -> (any RenderNode)? {
        ThreadRole.check(.main, .control)
        return stepIndex(of: id).map { nodes[$0] }
    }

    /// Renders one block through the whole schedule.
    ///
    /// Applies queued parameter changes first, then runs every node in
    /// order. `frames` above `maxFrames` is clamped. [audio-thread]
    public func render(frames: Int) {
        ThreadRole.check(.audio)
        let n = frames < maxFrames ? frames : maxFrames
        // Local copies of the arrays: calls through an element of a stored
        // array pay a retain and release each (the optimizer cannot see that
        // the opaque calls in the loop leave the array alone); through a
        // local `let` they do not (checked in the assembly).
        let pools = self.pools
        let nodes = self.nodes
        let delayLines = self.delayLines
        let lineSteps = self.lineSteps
        let sinkInputs = self.sinkInputs
        let held = transportHeld && anyFollower
        var p = 0
        while p < pools.count {
            pools[p].setBlockFrames(n)
            p += 1
        }
        var change = ParameterChange(node: -1, parameter: -1, value: 0)
        while parameters.next(into: &change) {
            let i = Int(change.node)
            if i >= 0 && i < nodes.count { nodes[i].apply(change) }
        }
        let ahead = prefetchDistance
        var i = 0
        var d = 0
        if let plan = parallelPlan {
            plan.run(frames: n, held: held)
            i = nodes.count
        }
        while i < nodes.count {
            if ahead > 0 { prefetchGroups(from: 1 + i + ahead, to: 2 + i + ahead) }
            while d < delayLines.count && lineSteps[d] == i {
                delayLines[d].render(frames: n)
                d += 1
            }
            if held && followers[i] {
                hold(step: i, frames: n)
            } else {
                nodes[i].render(frames: n)
            }
            i += 1
        }
        var done = true
        var valid = 0
        i = 0
        while i < sinkInputs.count {
            let state = sinkInputs[i].state
            if !state.ended { done = false }
            if state.validFrames > valid { valid = state.validFrames }
            i += 1
        }
        lastValid.store(sinkInputs.isEmpty ? n : valid, ordering: .relaxed)
        finished.store(done, ordering: .relaxed)
        position.add(n, ordering: .relaxed)
        worker.wake()
    }

    /// A held step's block: silence on every output, running (its stream
    /// not ended, not advanced); a `TransportFollowing` node does it itself
    /// (`renderHeld`). [audio-thread]
    @inline(__always)
    func hold(step i: Int, frames n: Int) {
        if let node = followingNodes[i] {
            node.renderHeld(frames: n)
            return
        }
        let buses = portOutputs[i]
        var k = 0
        while k < buses.count {
            buses[k].clear(from: 0, to: n)
            buses[k].state = BusState(validFrames: n, ended: false)
            k += 1
        }
    }

    /// Queues a parameter change for the next block. [control-thread]
    @discardableResult
    public func post(_ change: ParameterChange) -> Bool { ThreadRole.check(.control); return parameters.post(change) }

    /// The latency of each step's output, in frames: what the signal is
    /// delayed by on its way from the graph's sources, i.e. the node's own
    /// algorithmic delay plus the longest of its inputs' (the shorter ones
    /// are delayed to it when compensating). A source's prefetch (a file
    /// source's ring) is not delay and counts 0. Reads each node's
    /// `latency`. [main-thread]
    public var latencies: [Int] {
        ThreadRole.check(.main)
        var out: [Int] = []
        for (i, node) in nodes.enumerated() {
            let upstream = inputIndices[i].map { out[$0] }.max() ?? 0
            out.append(upstream + max(node.latency, 0))
        }
        return out
    }

    /// Sets every delay line from the nodes' current latencies (after a
    /// node said its latency changed); returns the ids of nodes whose
    /// inputs could not be aligned (no line, or more delay than it holds).
    /// [main-thread]
    @discardableResult
    public func updateLatencyCompensation() -> [String] {
        ThreadRole.check(.main)
        guard latencyCompensation else { return [] }
        let lat = latencies
        var misaligned: Set<Int> = []
        var lineOf: [Int: DelayLine] = [:]
        for (k, line) in delayLines.enumerated() { lineOf[lineSteps[k] << 16 | line.port] = line }
        for (i, inputs) in inputIndices.enumerated() where inputs.count > 1 {
            let longest = inputs.map { lat[$0] }.max() ?? 0
            for (port, src) in inputs.enumerated() {
                let need = longest - lat[src]
                if let line = lineOf[i << 16 | port] {
                    if !line.setDelay(need) { misaligned.insert(i) }
                } else if need != 0 {
                    misaligned.insert(i)
                }
            }
        }
        return misaligned.sorted().map { ids[$0] }
    }

    /// The delay each compensated input gets: (node id, input port, frames).
    /// [main-thread]
    public var compensationDelays: [(node: String, port: Int, frames: Int)] {
        ThreadRole.check(.main)
        return zip(lineSteps, delayLines).map { (ids[$0], $1.port, $1.delay) }
    }
}
