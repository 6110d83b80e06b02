import AudioGraphCore
import AudioGraphNodeAPI
import CLilv
import CLV2Host
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An LV2 plugin running in the graph: one instance, or one per channel.
///
/// Threading (the CLAP way):
/// - `init`, `prepare` (instantiate, restore state, activate, measure the
///   latency), `saveState`, `deinit`: [main-thread & !rendering].
/// - `render`, `apply`: [audio-thread]. Around the plugins' `run`, only
///   pointer work and atomics: worker replies in, control outputs out.
/// - `reading`, `latency`: [any-thread] (atomics).
/// - the job (`LV2Job.service`): [worker-thread]: the plugins' `work`,
///   their audio-thread log messages, latency changes.
final class LV2Node: RenderNode, ReadingPublishing, LatencyChangeNotifying {
    /// Bytes of an atom port's buffer (also the `sequenceSize` option).
    static let atomBufferBytes = 8192

    let nodeID: String
    let plugin: LV2PluginDescription
    let controls: [LV2Control]
    let instanceCount: Int
    let sampleRate: Double
    private let state: String?

    private(set) var instances: [UnsafeMutablePointer<LilvInstance>] = []
    private var featureSets: [LV2FeatureSet] = []
    let workers: [LV2WorkerChannel]
    private let logOwner: LV2LogOwner
    /// Per instance: one Float per plugin port (control values; unused for others).
    private let values: [UnsafeMutablePointer<Float>]
    /// By descriptor parameter index: the control (nil: `uri`, `instances`, `state`).
    private let controlByParameter: [LV2Control?]
    /// The first instance's control input values as last set, by port
    /// index (Float bits): what a state save reads beside `run` (the
    /// plugin's own port memory is the audio thread's).
    private let inputMirror: [PublishedValue]
    /// Control output ports: their indexes, and the published values (Float bits).
    private let outputPorts: [Int]
    private let published: [PublishedValue]
    private let latencyPort: Int?
    private let currentLatency = Atomic<Int>(0)
    /// Set by the audio thread when the latency port changed; the job reports it.
    let latencyFlag = LV2LatencyFlag()
    @exclusivity(unchecked) private var lastLatency = 0

    // Stored properties `render` reads are `@exclusivity(unchecked)`: each
    // is set only while preparing (main thread, not rendering), and a
    // checked class `var` costs a swift_beginAccess call per access on the
    // audio thread (callgrind: a third of the node's own instructions).
    @exclusivity(unchecked) private var input: AudioBus?
    @exclusivity(unchecked) private var sidechain: AudioBus?
    @exclusivity(unchecked) private var output: AudioBus?
    /// What `render` reads every block, in two blocks allocated at init
    /// (live, each cycle starts with cold caches, and each separate heap
    /// block or lilv struct read costs a miss: `perf annotate` put the
    /// node's samples on exactly those loads). [audio-thread | main-thread; the main thread while
    /// preparing]
    private let hot: UnsafeMutablePointer<LV2RenderHot>
    /// Per instance: its handle and its descriptor's `run` and
    /// `connect_port`, copied out of lilv's structs at prepare.
    private let slots: UnsafeMutablePointer<LV2RunSlot>
    /// The instances with a worker interface (their replies and `end_run`).
    @exclusivity(unchecked) private var workerInstances: [Int] = []
    /// Silence for CV inputs, and where CV outputs go.
    private var zeros: UnsafeMutablePointer<Float>?
    private var scratch: UnsafeMutablePointer<Float>?
    /// Atom ports: an empty input sequence, and output buffers (reset to
    /// their capacity before each run).
    private var atomIn: UnsafeMutableRawPointer?
    /// Output atom buffers and their sizes in bytes.
    @exclusivity(unchecked) private var atomOuts: [UnsafeMutableRawPointer] = []
    @exclusivity(unchecked) private var atomOutSizes: [Int] = []
    private var activated = false
    private let job: LV2Job
    /// Where `drainLog` copies a queued message. [worker-thread]
    private let logText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_LV2_LOG_TEXT))

    /// Set by the host on its thread, called by the job on the worker
    /// thread (the live host's closure posts to its owner thread): behind a lock.
    private let latencyHandler = Locked<(() -> Void)?>(nil)
    var onLatencyChange: (() -> Void)? {
        get { latencyHandler.withLock { $0 } }
        set { latencyHandler.withLock { $0 = newValue } }
    }

    init(nodeID: String, plugin: LV2PluginDescription, controls: [LV2Control], descriptor: NodeDescriptor,
         instanceCount: Int, initialValues: [Int: Float], state: String?, sampleRate: Double) {
        self.nodeID = nodeID
        self.plugin = plugin
        self.controls = controls
        self.instanceCount = max(instanceCount, 1)
        self.sampleRate = sampleRate
        self.state = state
        initial = initialValues
        logOwner = LV2LogOwner(nodeID: nodeID, uri: plugin.uri)
        let portCount = plugin.ports.count
        values = (0..<max(instanceCount, 1)).map { _ in
            let v = UnsafeMutablePointer<Float>.allocate(capacity: max(portCount, 1))
            v.initialize(repeating: 0, count: max(portCount, 1))
            for p in plugin.ports where p.kind == .control {
                let def = (p.defaultValue ?? p.minimum ?? 0) * (p.isSampleRate ? Float(sampleRate) : 1)
                v[p.index] = initialValues[p.index] ?? def
            }
            return v
        }
        controlByParameter = descriptor.parameters.map { p in controls.first { $0.parameter.name == p.name } }
        inputMirror = (0..<max(portCount, 1)).map { _ in PublishedValue() }
        for p in plugin.ports where p.kind == .control && p.isInput {
            inputMirror[p.index].bits.store(values[0][p.index].bitPattern, ordering: .relaxed)
        }
        outputPorts = plugin.controlOutputs.map(\.index)
        published = plugin.controlOutputs.map { _ in PublishedValue() }
        latencyPort = plugin.latencyPort?.index
        audioIn = plugin.audioInputs.map { UInt32($0.index) }
        sideIn = plugin.sideChainInputs.map { UInt32($0.index) }
        audioOut = plugin.audioOutputs.map { UInt32($0.index) }
        workers = (0..<max(instanceCount, 1)).map { _ in LV2WorkerChannel() }
        job = LV2Job()
        hot = .allocate(capacity: 1)
        hot.initialize(to: LV2RenderHot())
        slots = .allocate(capacity: max(instanceCount, 1))
        slots.initialize(repeating: LV2RunSlot(), count: max(instanceCount, 1))
        job.node = self
    }

    deinit {
        for inst in instances {
            if activated { lilv_instance_deactivate(inst) }
            lilv_instance_free(inst)
        }
        for v in values { v.deallocate() }
        zeros?.deallocate()
        scratch?.deallocate()
        atomIn?.deallocate()
        for a in atomOuts { a.deallocate() }
        logText.deallocate()
        hot.deallocate()
        slots.deallocate()
    }

    // MARK: preparing [main-thread]

    func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws {
        input = inputs.first
        sidechain = inputs.count > 1 ? inputs[1] : nil
        output = outputs.first
        guard instances.isEmpty else {
            hot.pointee.connected = LV2RenderHot().connected
            connectAudio()
            return
        }
        let maxFrames = context.maxFrames
        zeros = .allocate(capacity: maxFrames)
        zeros!.initialize(repeating: 0, count: maxFrames)
        scratch = .allocate(capacity: maxFrames)
        scratch!.initialize(repeating: 0, count: maxFrames)
        atomIn = Self.makeAtomBuffer(sequence: true)
        let ownerPtr = Unmanaged.passUnretained(logOwner).toOpaque()
        try LV2World.shared.withWorld { (w: OpaquePointer) throws in
            guard let p = LV2World.shared.plugin(w, plugin.uri) else {
                throw LV2Error("the LV2 plugin \"\(plugin.uri)\" is gone from LV2_PATH=\(LV2World.searchPath)")
            }
            for k in 0..<instanceCount {
                let set = LV2FeatureSet(sampleRate: sampleRate, maxFrames: maxFrames, owner: ownerPtr,
                                        logSink: lv2LogSink, scheduleWork: lv2ScheduleWork)
                // The worker's handle is the instance's channel.
                set.schedule.pointee.handle = Unmanaged.passUnretained(workers[k]).toOpaque()
                guard let inst = lilv_plugin_instantiate(p, sampleRate, set.features) else {
                    throw LV2Error("the LV2 plugin \"\(plugin.uri)\" (\(plugin.name)) could not be instantiated at \(Int(sampleRate)) Hz (its instantiate returned nothing; see its messages above)")
                }
                featureSets.append(set)
                instances.append(inst)
                workers[k].attach(inst)
            }
        }
        for k in 0..<instanceCount { connectControlAndOthers(k) }
        if let state, !state.isEmpty { try restore(state) }
        // The graph's values that differ from the defaults, over what the state set.
        for k in 0..<instanceCount { applyInitial(k) }
        for inst in instances { lilv_instance_activate(inst) }
        activated = true
        // The latency a plugin reports is known after a run: blocks of
        // silence until it holds still (a plugin may glide to a new delay).
        let probe = min(maxFrames, 256)
        for inst in instances {
            for p in plugin.ports where p.kind == .audio {
                lilv_instance_connect_port(inst, UInt32(p.index), p.isInput ? zeros : scratch)
            }
        }
        var last: Float = -1
        for _ in 0..<64 {
            for inst in instances { lilv_instance_run(inst, UInt32(probe)) }
            guard let port = latencyPort else { break }
            if values[0][port] == last { break }
            last = values[0][port]
        }
        readLatency()
        workerInstances = workers.indices.filter { workers[$0].hasWorker }
        hot.pointee.workerCount = workerInstances.count
        hot.pointee.atomOutCount = atomOuts.count
        hot.pointee.timed = agraph_lv2_run_timing_enabled() != 0
        for (k, inst) in instances.enumerated() {
            let d = lilv_instance_get_descriptor(inst)
            slots[k] = LV2RunSlot(handle: lilv_instance_get_handle(inst), run: d?.pointee.run, connect: d?.pointee.connect_port)
        }
        job.channels = ContiguousArray(workers.filter(\.hasWorker))
        // One counter for the node's logs: the job checks one word per block.
        for set in featureSets.dropFirst() { agraph_lv2_log_join(set.log, featureSets[0].log) }
        job.logGroup = featureSets.first?.log
        job.latencyFlag = latencyFlag
        lastLatency = currentLatency.load(ordering: .relaxed)
        latencyFlag.changed.store(false, ordering: .relaxed)
        hot.pointee.connected = LV2RenderHot().connected
        connectAudio()
    }

    /// The control values the graph's parameters set (those that differ
    /// from the plugin's defaults), applied over a restored state.
    private let initial: [Int: Float]

    private func applyInitial(_ k: Int) {
        for (port, v) in initial {
            values[k][port] = v
            if k == 0 { inputMirror[port].bits.store(v.bitPattern, ordering: .relaxed) }
        }
    }

    private func connectControlAndOthers(_ k: Int) {
        let inst = instances[k]
        for p in plugin.ports {
            switch p.kind {
            case .control: lilv_instance_connect_port(inst, UInt32(p.index), values[k] + p.index)
            case .cv: lilv_instance_connect_port(inst, UInt32(p.index), p.isInput ? zeros : scratch)
            case .atom:
                if p.isInput {
                    lilv_instance_connect_port(inst, UInt32(p.index), atomIn)
                } else {
                    let bytes = max(Self.atomBufferBytes, p.minimumSize ?? 0)
                    let b = Self.makeAtomBuffer(sequence: false, bytes: bytes)
                    atomOuts.append(b)
                    atomOutSizes.append(bytes)
                    lilv_instance_connect_port(inst, UInt32(p.index), b)
                }
            case .audio, .other:
                break
            }
        }
    }

    /// Port indexes of the main audio inputs, the sidechain inputs and the outputs.
    private let audioIn: [UInt32]
    private let sideIn: [UInt32]
    private let audioOut: [UInt32]

    /// Connects the audio ports to the buses' channels of this block.
    /// [audio-thread | main-thread; the main thread while preparing]
    @inline(__always)
    private func connectAudio() {
        guard let input, let output else { return }
        let side = sidechain
        let now: (UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?,
                  UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?) =
            (input.channel(0), input.channel(1), output.channel(0), output.channel(1), side?.channel(0), side?.channel(1))
        let c = hot.pointee.connected
        if c.0 == now.0 && c.1 == now.1 && c.2 == now.2 && c.3 == now.3 && c.4 == now.4 && c.5 == now.5 { return }
        hot.pointee.connected = now
        let audioIn = self.audioIn
        let sideIn = self.sideIn
        let audioOut = self.audioOut
        var k = 0
        while k < instanceCount {
            let slot = slots[k]
            guard let connect = slot.connect else { k += 1; continue }
            let h = slot.handle
            if instanceCount > 1 {
                connect(h, audioIn[0], k < input.channels ? input.channel(k) : zeros)
                connect(h, audioOut[0], k < output.channels ? output.channel(k) : scratch)
                k += 1
                continue
            }
            var i = 0
            while i < audioIn.count {
                connect(h, audioIn[i], i < input.channels ? input.channel(i) : zeros)
                i += 1
            }
            i = 0
            while i < sideIn.count {
                var p = zeros
                if let s = side, i < s.channels { p = s.channel(i) }
                connect(h, sideIn[i], p)
                i += 1
            }
            i = 0
            while i < audioOut.count {
                connect(h, audioOut[i], i < output.channels ? output.channel(i) : scratch)
                i += 1
            }
            k += 1
        }
    }

    static func makeAtomBuffer(sequence: Bool, bytes: Int = atomBufferBytes) -> UnsafeMutableRawPointer {
        let b = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 8)
        b.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        resetAtom(b, sequence: sequence, bytes: bytes)
        return b
    }

    /// An input: an empty sequence; an output: a chunk of the buffer's capacity. [audio-thread]
    @inline(__always)
    static func resetAtom(_ b: UnsafeMutableRawPointer, sequence: Bool, bytes: Int = atomBufferBytes) {
        if sequence {
            b.storeBytes(of: UInt32(8), toByteOffset: 0, as: UInt32.self)  // body: unit, pad
            b.storeBytes(of: sequenceURID, toByteOffset: 4, as: UInt32.self)
            b.storeBytes(of: UInt32(0), toByteOffset: 8, as: UInt32.self)
            b.storeBytes(of: UInt32(0), toByteOffset: 12, as: UInt32.self)
        } else {
            b.storeBytes(of: UInt32(bytes - 8), toByteOffset: 0, as: UInt32.self)
            b.storeBytes(of: chunkURID, toByteOffset: 4, as: UInt32.self)
        }
    }

    static let sequenceURID = LV2URIDTable.shared.map(LV2URI.atomSequence)
    static let chunkURID = LV2URIDTable.shared.map(LV2URI.atomChunk)

    // MARK: rendering [audio-thread]

    func apply(_ change: ParameterChange) {
        let i = Int(change.parameter)
        guard i >= 0, i < controlByParameter.count, let c = controlByParameter[i] else { return }
        let v = c.portValue(change.value)
        var k = 0
        while k < values.count {
            values[k][c.port] = v
            k += 1
        }
        inputMirror[c.port].bits.store(v.bitPattern, ordering: .relaxed)
    }

    /// What `render` and the job's `hasWork` read every block: the two
    /// blocks above, the control values, the job and its worker channels.
    var hotMemory: [UnsafeRawBufferPointer] {
        var regions = [UnsafeRawBufferPointer(hot: hot), UnsafeRawBufferPointer(hot: slots, count: instanceCount)]
        regions += values.map { UnsafeRawBufferPointer(hot: $0, count: max(plugin.ports.count, 1)) }
        regions.append(Engine.objectMemory(job))
        job.channels.withUnsafeBufferPointer { regions.append(UnsafeRawBufferPointer($0)) }
        regions += job.channels.map { Engine.objectMemory($0) }
        if let flag = job.latencyFlag { regions.append(Engine.objectMemory(flag)) }
        return regions
    }

    func render(frames: Int) {
        guard let input, let output else { return }
        let n = UInt32(frames)
        // A bus's channels move with the block size (`BusPool`'s stride):
        // the plugin is given this block's pointers.
        connectAudio()
        let h = hot.pointee
        if h.workerCount > 0 {
            var w = 0
            while w < workerInstances.count {
                workers[workerInstances[w]].deliverResponses()
                w += 1
            }
        }
        if h.atomOutCount > 0 {
            var a = 0
            while a < atomOuts.count {
                Self.resetAtom(atomOuts[a], sequence: false, bytes: atomOutSizes[a])
                a += 1
            }
        }
        let t0 = h.timed ? MonotonicClock.nanoseconds() : 0
        var k = 0
        while k < instanceCount {
            let slot = slots[k]
            slot.run?(slot.handle, n)
            k += 1
        }
        if h.timed { agraph_lv2_run_timing_add(MonotonicClock.nanoseconds() &- t0) }
        if h.workerCount > 0 {
            var w = 0
            while w < workerInstances.count {
                workers[workerInstances[w]].endRun()
                w += 1
            }
        }
        var j = 0
        let v0 = values[0]
        while j < outputPorts.count {
            published[j].bits.store(v0[outputPorts[j]].bitPattern, ordering: .relaxed)
            j += 1
        }
        if let port = latencyPort {
            let l = Int(max(v0[port], 0))
            if l != lastLatency {
                lastLatency = l
                currentLatency.store(l, ordering: .relaxed)
                latencyFlag.changed.store(true, ordering: .releasing)
            }
        }
        output.state = input.state
        let valid = input.state.validFrames
        if valid < frames {
            var c = 0
            while c < output.channels {
                Kernels.fill(output.channel(c) + valid, count: frames - valid, value: 0)
                c += 1
            }
        }
    }

    // MARK: latency, readings [any-thread]

    private func readLatency() {
        if let port = latencyPort { currentLatency.store(Int(max(values[0][port], 0)), ordering: .relaxed) }
    }

    var latency: Int { currentLatency.load(ordering: .relaxed) }

    var readingNames: [(name: String, unit: String)] {
        plugin.controlOutputs.map { ($0.symbol, $0.unit ?? "") }
    }

    func reading(_ name: String) -> Double? {
        guard let j = plugin.controlOutputs.firstIndex(where: { $0.symbol == name }) else { return nil }
        return Double(Float(bitPattern: published[j].bits.load(ordering: .relaxed)))
    }

    var backgroundJob: (any BackgroundJob)? { job }

    /// Prints the messages the plugins logged on the audio thread, and how
    /// many were dropped (queue full). Returns whether there were any.
    /// [worker-thread]
    func drainLog() -> Bool {
        var did = false
        var type: LV2_URID = 0
        let text = logText
        for set in featureSets {
            while agraph_lv2_log_pop(set.log, &type, text) != 0 {
                lv2LogSink(Unmanaged.passUnretained(logOwner).toOpaque(), type, text)
                did = true
            }
        }
        return did
    }

    // MARK: state [main-thread & !rendering]

    /// The plugin's state (its own data and its port values) as Turtle, for
    /// the `state` parameter. The first instance's, for per-channel nodes.
    func saveState() throws -> String {
        guard let inst = instances.first else { throw LV2Error("node '\(nodeID)': the plugin is not instantiated yet") }
        let urids = LV2URIDTable.shared
        return try LV2World.shared.withWorld { (w: OpaquePointer) throws -> String in
            guard let p = LV2World.shared.plugin(w, plugin.uri) else { throw LV2Error("the plugin \(plugin.uri) is gone") }
            let handle = Unmanaged.passUnretained(self).toOpaque()
            guard let st = lilv_state_new_from_instance(p, inst, urids.mapFeature, nil, nil, nil, nil,
                                                        lv2GetPortValue, handle, 0, featureSets[0].features) else {
                throw LV2Error("node '\(nodeID)': the plugin's state could not be saved")
            }
            defer { lilv_state_free(st) }
            guard let text = lilv_state_to_string(w, urids.mapFeature, urids.unmapFeature, st, "urn:audiograph:state", nil) else {
                throw LV2Error("node '\(nodeID)': the plugin's state could not be written as Turtle")
            }
            defer { lilv_free(text) }
            return String(cString: text)
        }
    }

    private func restore(_ text: String) throws {
        // Checked at validation; again here, outside the world's lock (lilv
        // crashes on Turtle without a preset). EngineError names the node.
        if let problem = LV2World.shared.stateProblem(text, plugin: plugin.uri) { throw LV2Error(problem) }
        let urids = LV2URIDTable.shared
        try LV2World.shared.withWorld { (w: OpaquePointer) throws in
            guard let st = lilv_state_new_from_string(w, urids.mapFeature, text) else {
                // EngineError names the node.
                throw LV2Error("its \"state\" is not an LV2 state lilv can read (Turtle from a saved state)")
            }
            defer { lilv_state_free(st) }
            for (k, inst) in instances.enumerated() {
                restoringInstance = k
                lilv_state_restore(st, inst, lv2SetPortValue, Unmanaged.passUnretained(self).toOpaque(), 0, featureSets[k].features)
            }
        }
    }

    /// The instance a state restore sets port values of.
    fileprivate var restoringInstance = 0

    fileprivate func portValue(symbol: String) -> Float? {
        guard let p = plugin.ports.first(where: { $0.symbol == symbol && $0.kind == .control && $0.isInput }) else { return nil }
        return Float(bitPattern: inputMirror[p.index].bits.load(ordering: .relaxed))
    }

    fileprivate func setPortValue(symbol: String, _ v: Float) {
        guard let p = plugin.ports.first(where: { $0.symbol == symbol && $0.kind == .control && $0.isInput }) else { return }
        values[restoringInstance][p.index] = v
        if restoringInstance == 0 { inputMirror[p.index].bits.store(v.bitPattern, ordering: .relaxed) }
    }
}

/// Whether a node's latency port changed since the job last looked.
final class LV2LatencyFlag: Sendable {
    let changed = Atomic<Bool>(false)
}

/// A control output's latest value (Float bits). [any-thread; the audio thread writes]
final class PublishedValue: Sendable {
    let bits = Atomic<UInt32>(0)
}

/// Who a log message is from. [any-thread; any thread reads]
final class LV2LogOwner: @unchecked Sendable {
    let nodeID: String
    let uri: String
    init(nodeID: String, uri: String) {
        self.nodeID = nodeID
        self.uri = uri
    }

    static func line(_ nodeID: String, _ type: LV2_URID, _ text: String) -> String {
        let urids = LV2URIDTable.shared
        let kind = type == urids.map(LV2URI.logError) ? "error" : type == urids.map(LV2URI.logWarning) ? "warning"
            : type == urids.map(LV2URI.logTrace) ? "trace" : "note"
        return "agraph: lv2 node '\(nodeID)': \(kind): \(text.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}

/// Where LV2 plugins' log messages go. [any-thread]
public enum LV2Log {
    /// Takes each message (one line: `agraph: lv2 node 'eq': warning:
    /// text`); nil (the default) prints it on stderr. Called on the thread
    /// that logged, or the worker thread for messages logged on the audio
    /// thread. [main-thread & !rendering; set before rendering]
    nonisolated(unsafe) public static var handler: (@Sendable (String) -> Void)?
}

/// [main-thread | worker-thread | owner-thread | control-thread] A plugin's message, printed on
/// stderr.
let lv2LogSink: @convention(c) (UnsafeMutableRawPointer?, LV2_URID, UnsafePointer<CChar>?) -> Void = { owner, type, text in
    guard let owner, let text else { return }
    let o = Unmanaged<LV2LogOwner>.fromOpaque(owner).takeUnretainedValue()
    let line = LV2LogOwner.line(o.nodeID, type, String(cString: text))
    if let handler = LV2Log.handler { handler(line) } else { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}

/// [main-thread] lilv asks a port's value while saving state.
let lv2GetPortValue: @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt32>?, UnsafeMutablePointer<UInt32>?) -> UnsafeRawPointer? = { symbol, data, size, type in
    guard let symbol, let data else { return nil }
    let node = Unmanaged<LV2Node>.fromOpaque(data).takeUnretainedValue()
    guard let v = node.portValue(symbol: String(cString: symbol)) else { return nil }
    // lilv copies the value at once: a per-thread slot is enough.
    lv2PortValueSlot.pointee = v
    size?.pointee = 4
    type?.pointee = LV2URIDTable.shared.map(LV2URI.atomFloat)
    return UnsafeRawPointer(lv2PortValueSlot)
}

nonisolated(unsafe) let lv2PortValueSlot: UnsafeMutablePointer<Float> = {
    let p = UnsafeMutablePointer<Float>.allocate(capacity: 1)
    p.initialize(to: 0)
    return p
}()

/// [main-thread] lilv sets a port's value while restoring state.
let lv2SetPortValue: @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeRawPointer?, UInt32, UInt32) -> Void = { symbol, data, value, size, type in
    guard let symbol, let data, let value else { return }
    let node = Unmanaged<LV2Node>.fromOpaque(data).takeUnretainedValue()
    let urids = LV2URIDTable.shared
    let v: Float
    if type == urids.map(LV2URI.atomFloat), size == 4 { v = value.load(as: Float.self) }
    else if type == urids.map(LV2URI.atomInt), size == 4 { v = Float(value.load(as: Int32.self)) }
    else { return }
    node.setPortValue(symbol: String(cString: symbol), v)
}

/// What `LV2Node.render` reads every block besides the instances: where the
/// audio ports point (each bus's first two channels, main, output and
/// sidechain: a bus moves with the block size), how many instances have a
/// worker and how many atom outputs there are, and whether the run calls
/// are timed (`agraph_lv2_run_timing_enable`, read when the node is
/// prepared: no global is loaded per block).
struct LV2RenderHot {
    var connected: (UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?,
                    UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?) =
        (nil, nil, nil, nil, nil, nil)
    var workerCount = 0
    var atomOutCount = 0
    var timed = false
}

/// One plugin instance as `LV2Node.render` calls it.
struct LV2RunSlot {
    var handle: LV2_Handle?
    var run: (@convention(c) (LV2_Handle?, UInt32) -> Void)?
    var connect: (@convention(c) (LV2_Handle?, UInt32, UnsafeMutableRawPointer?) -> Void)?
}
