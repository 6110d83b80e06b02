// The realtime render node: one plugin instance in an engine, its
// `process` called on the audio thread through the C function pointer.
import AudioGraphHost
import CAGraphPlugin
#if canImport(Glibc)
import Glibc
#endif

/// One plugin instance in an engine: activate in `prepare`, process in
/// `render` through the C function pointer, with the process block, the
/// per-port entries and the channel pointer arrays allocated once in
/// `prepare`. Every port, port 0 included, is described once, in the
/// per-port arrays (ABI 2.0): nothing to reconcile after `process`. Its
/// host table (`host`) carries the output route and latency changes.
final class PluginRenderNode: RenderNode, HostedPluginInstance {
    let instance: OpaquePointer
    /// The node's host table; outlives the instance (destroyed in deinit first).
    let host: PluginHost
    /// The instance's `agraph.output-route/1` side, if it has one.
    let routeExt: agraph_output_route_ext_t?
    let typeID: String
    let nodeID: String
    let activateFn: @convention(c) (OpaquePointer?, Double, UInt32, UnsafeMutablePointer<CChar>?, UInt32) -> Int32
    let processFn: @convention(c) (OpaquePointer?, UnsafeMutablePointer<agraph_process_t>?) -> Void
    let setParameterFn: (@convention(c) (OpaquePointer?, UInt32, Double) -> Void)?
    let latencyFn: (@convention(c) (OpaquePointer?) -> UInt32)?
    let deactivateFn: @convention(c) (OpaquePointer?) -> Void
    let destroyFn: @convention(c) (OpaquePointer?) -> Void
    let liveMask: [Bool]
    /// The buses of every port, in port order.
    var inputs: [AudioBus] = []
    var outputs: [AudioBus] = []
    var active = false
    // Allocated in prepare, freed in deinit: the process block, every
    // port's channel pointers (one array per direction, ports one after
    // another) and the per-port entries pointing into them.
    var block: UnsafeMutablePointer<agraph_process_t>?
    var inputPointers: UnsafeMutablePointer<UnsafePointer<Float>?>?
    var outputPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    var inputPorts: UnsafeMutablePointer<agraph_input_port_buffers_t>?
    var outputPorts: UnsafeMutablePointer<agraph_output_port_buffers_t>?

    /// `type` was checked by `PluginNodeType` (activate, process,
    /// deactivate and destroy present). [main-thread]
    init(type: UnsafePointer<agraph_node_type_t>, instance: OpaquePointer, typeID: String, nodeID: String, host: PluginHost) {
        let t = type.pointee
        self.instance = instance
        self.host = host
        routeExt = routeExtension(type, instance)
        self.typeID = typeID
        self.nodeID = nodeID
        activateFn = t.activate!
        processFn = t.process!
        setParameterFn = t.set_parameter
        latencyFn = t.latency
        deactivateFn = t.deactivate!
        destroyFn = t.destroy!
        liveMask = (0..<Int(t.param_count)).map { t.params[$0].flags & UInt32(AGRAPH_PARAM_LIVE) != 0 }
    }

    /// [main-thread & !active]
    func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws {
        self.inputs = inputs
        self.outputs = outputs
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        if active { deactivateFn(instance); active = false }
        guard activateFn(instance, context.sampleRate, UInt32(context.maxFrames), error, UInt32(AGRAPH_ERROR_CAPACITY)) != 0 else {
            error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
            let why = String(cString: error)
            throw EngineError(nodeID: nodeID, "\(typeID): activate failed: \(why.isEmpty ? "no reason given" : why)")
        }
        active = true
        freeBuffers()
        let inTotal = inputs.reduce(0) { $0 + $1.channels }
        let outTotal = outputs.reduce(0) { $0 + $1.channels }
        let ins = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: max(inTotal, 1))
        let outs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: max(outTotal, 1))
        ins.initialize(repeating: nil, count: max(inTotal, 1))
        outs.initialize(repeating: nil, count: max(outTotal, 1))
        let inPorts = UnsafeMutablePointer<agraph_input_port_buffers_t>.allocate(capacity: max(inputs.count, 1))
        let outPorts = UnsafeMutablePointer<agraph_output_port_buffers_t>.allocate(capacity: max(outputs.count, 1))
        var offset = 0
        for (k, bus) in inputs.enumerated() {
            for c in 0..<bus.channels { ins[offset + c] = UnsafePointer(bus.channel(c)) }
            (inPorts + k).initialize(to: agraph_input_port_buffers_t(
                channels: UInt32(bus.channels), valid_frames: 0, ended: 0, reserved0: 0,
                buffers: bus.channels > 0 ? UnsafePointer(ins + offset) : nil))
            offset += bus.channels
        }
        offset = 0
        for (k, bus) in outputs.enumerated() {
            for c in 0..<bus.channels { outs[offset + c] = bus.channel(c) }
            (outPorts + k).initialize(to: agraph_output_port_buffers_t(
                channels: UInt32(bus.channels), valid_frames: 0, ended: 0, reserved0: 0,
                buffers: bus.channels > 0 ? UnsafePointer(outs + offset) : nil))
            offset += bus.channels
        }
        let b = UnsafeMutablePointer<agraph_process_t>.allocate(capacity: 1)
        b.initialize(to: agraph_process_t(
            frames: 0, input_port_count: UInt32(inputs.count), output_port_count: UInt32(outputs.count), reserved0: 0,
            input_ports: inputs.isEmpty ? nil : UnsafePointer(inPorts), output_ports: outputs.isEmpty ? nil : outPorts))
        inputPointers = ins
        outputPointers = outs
        inputPorts = inPorts
        outputPorts = outPorts
        block = b
    }

    /// Refreshes every port's channel pointers and state, presets the
    /// outputs' state, calls `process`, and takes each output's state from
    /// its one entry. [audio-thread & active]
    func render(frames: Int) {
        guard let block, let ins = inputPointers, let outs = outputPointers,
              let inPorts = inputPorts, let outPorts = outputPorts else { return }
        block.pointee.frames = UInt32(frames)
        // Channel pointers follow the engine's block layout: refresh them,
        // and each input's state. The preset of the outputs is what the
        // inputs say: the longest valid span, ended when every input has
        // ended (a source: the whole block, running).
        var presetValid = inputs.isEmpty ? frames : 0
        var presetEnded = !inputs.isEmpty
        var offset = 0
        var k = 0
        while k < inputs.count {
            let bus = inputs[k]
            var c = 0
            while c < bus.channels { ins[offset + c] = UnsafePointer(bus.channel(c)); c += 1 }
            offset += bus.channels
            let s = bus.state
            let valid = s.validFrames < frames ? s.validFrames : frames
            inPorts[k].valid_frames = UInt32(valid)
            inPorts[k].ended = s.ended ? 1 : 0
            if valid > presetValid { presetValid = valid }
            if !s.ended { presetEnded = false }
            k += 1
        }
        let valid0 = UInt32(presetValid)
        let ended0: UInt32 = presetEnded ? 1 : 0
        offset = 0
        k = 0
        while k < outputs.count {
            let bus = outputs[k]
            var c = 0
            while c < bus.channels { outs[offset + c] = bus.channel(c); c += 1 }
            offset += bus.channels
            outPorts[k].valid_frames = valid0
            outPorts[k].ended = ended0
            k += 1
        }
        processFn(instance, block)
        k = 0
        while k < outputs.count {
            let written = Int(outPorts[k].valid_frames)
            let valid = written < frames ? written : frames
            let bus = outputs[k]
            if valid < frames { bus.clear(from: valid, to: frames) }
            bus.state = BusState(validFrames: valid, ended: outPorts[k].ended != 0)
            k += 1
        }
    }
    /// [audio-thread & active]
    func apply(_ change: ParameterChange) {
        let i = Int(change.parameter)
        guard i >= 0, i < liveMask.count, liveMask[i], let setParameterFn else { return }
        setParameterFn(instance, UInt32(i), change.value)
    }

    /// [main-thread]
    var latency: Int {
        guard active, let latencyFn else { return 0 }
        return Int(latencyFn(instance))
    }

    func freeBuffers() {
        block?.deallocate(); block = nil
        inputPointers?.deallocate(); inputPointers = nil
        outputPointers?.deallocate(); outputPointers = nil
        inputPorts?.deallocate(); inputPorts = nil
        outputPorts?.deallocate(); outputPorts = nil
    }

    /// [main-thread & !rendering; after the engine stopped]
    deinit {
        if active { deactivateFn(instance) }
        destroyFn(instance)
        freeBuffers()
    }
}
