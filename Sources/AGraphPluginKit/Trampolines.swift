// The C function pointers of the core node type (agraph/plugin.h): each
// forwards one ABI call to the Swift type or instance.
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Swift type of a node type, kept in `agraph_node_type_t.plugin_data`.
final class TypeBox {
    let type: any PluginNode.Type
    init(_ type: any PluginNode.Type) { self.type = type }
}

/// An instance as the host sees it (`agraph_instance_t *`).
final class InstanceBox {
    let node: any PluginNode
    /// The same node as a decoder, cast once (not on the audio thread).
    let decoder: (any PluginDecoder)?
    /// Output channels (the decoder's PCM buffers).
    var channels = 0
    /// `last_error`'s text (AGRAPH_ERROR_CAPACITY bytes).
    let lastError: UnsafeMutablePointer<CChar>
    init(_ node: any PluginNode) {
        self.node = node
        decoder = node as? any PluginDecoder
        lastError = .allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        lastError.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
    }
    deinit { lastError.deallocate() }
}

/// The plugin-wide closures of the one `PluginExport` of this library.

@inline(__always)
func instance(_ p: OpaquePointer?) -> InstanceBox {
    Unmanaged<InstanceBox>.fromOpaque(UnsafeRawPointer(p!)).takeUnretainedValue()
}

func writeError(_ message: String, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: UInt32) {
    guard let buffer, capacity > 0 else { return }
    let bytes = Array(message.utf8.prefix(Int(capacity) - 1))
    for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
    buffer[bytes.count] = 0
}

func setup(_ info: UnsafePointer<agraph_create_info_t>) -> (any PluginNode.Type, PluginNodeSetup) {
    let i = info.pointee
    let type = Unmanaged<TypeBox>.fromOpaque(i.type.pointee.plugin_data!).takeUnretainedValue().type
    let params = type.description.parameters
    var numbers: [String: Double] = [:]
    var strings: [String: String] = [:]
    for k in 0..<min(Int(i.value_count), params.count) {
        let v = i.values[k]
        guard v.is_set != 0 else { continue }
        numbers[params[k].name] = v.number
        if let s = v.string { strings[params[k].name] = String(cString: s) }
    }
    // Every port once, in the per-port arrays (NULL array: count 0; a NULL
    // layout entry: not known yet).
    let inCount = min(Int(i.input_port_count), Int(AGRAPH_MAX_PORTS))
    let outCount = min(Int(i.output_port_count), Int(AGRAPH_MAX_PORTS))
    let ins: UnsafePointer<UInt32>? = i.input_port_channels, outs: UnsafePointer<UInt32>? = i.output_port_channels
    let inputPorts = (0..<inCount).map { k in ins.map { Int($0[k]) } ?? 0 }
    let outputPorts = (0..<outCount).map { k in outs.map { Int($0[k]) } ?? 0 }
    let tags: UnsafePointer<UnsafePointer<CChar>?>? = i.input_port_layouts
    let inputLayouts = (0..<inCount).map { k in tags?[k].map { String(cString: $0) } }
    let s = PluginNodeSetup(host: PluginHost(info), nodeID: i.node_id.map { String(cString: $0) } ?? "", sampleRate: i.sample_rate,
                            inputPortChannels: inputPorts, outputPortChannels: outputPorts, inputPortLayouts: inputLayouts,
                            numbers: numbers, strings: strings)
    return (type, s)
}

let checkTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?, UnsafeMutablePointer<CChar>?, UInt32) -> Int32 = { info, error, capacity in
    let (type, s) = setup(info!)
    if let reason = type.check(s) {
        writeError(reason, error, capacity)
        return 0
    }
    return 1
}

let createTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?, UnsafeMutablePointer<CChar>?, UInt32) -> OpaquePointer? = { info, errorOut, capacity in
    let (type, s) = setup(info!)
    do {
        let node = try type.init(s)
        let box = InstanceBox(node)
        box.channels = s.outputChannels
        return OpaquePointer(Unmanaged.passRetained(box).toOpaque())
    } catch {
        writeError("\(error)", errorOut, capacity)
        return nil
    }
}

let activateTrampoline: @convention(c) (OpaquePointer?, Double, UInt32, UnsafeMutablePointer<CChar>?, UInt32) -> Int32 = { p, rate, maxFrames, error, capacity in
    do {
        try instance(p).node.activate(sampleRate: rate, maxFrames: Int(maxFrames))
        return 1
    } catch let e {
        writeError("\(e)", error, capacity)
        return 0
    }
}

let processTrampoline: @convention(c) (OpaquePointer?, UnsafeMutablePointer<agraph_process_t>?) -> Void = { p, block in
    instance(p).node.process(PluginBlock(block!))
}

let setParameterTrampoline: @convention(c) (OpaquePointer?, UInt32, Double) -> Void = { p, index, value in
    instance(p).node.setParameter(Int(index), value: value)
}

let latencyTrampoline: @convention(c) (OpaquePointer?) -> UInt32 = { p in
    let box = instance(p)
    return UInt32(clamping: box.decoder != nil ? 0 : box.node.latency)
}

let deactivateTrampoline: @convention(c) (OpaquePointer?) -> Void = { p in
    instance(p).node.deactivate()
}

let destroyTrampoline: @convention(c) (OpaquePointer?) -> Void = { p in
    Unmanaged<InstanceBox>.fromOpaque(UnsafeRawPointer(p!)).release()
}

/// Layout names as static C strings (the ABI wants a static result).
let layoutNames = Mutex<[String: UnsafePointer<CChar>]>([:])

let outputLayoutTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?, UInt32) -> UnsafePointer<CChar>? = { info, port in
    let (type, s) = setup(info!)
    guard let name = type.outputLayout(s, port: Int(port)) else { return nil }
    return layoutNames.withLock { names in
        if let p = names[name] { return p }
        let p = PluginExport.keep(name)
        names[name] = p
        return p
    }
}
