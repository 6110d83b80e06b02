import AudioGraph
import AudioGraphPlugins
import CAGraphPlugin
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// A minimal host for one plugin library, written for the tests that drive
// a plugin through the C ABI directly (agraph_plugin.h), with none of the
// host's own code in between: no loader, no render or decoder node. The
// one copy of that marshalling in the tests; what the host does instead is
// tested through `PluginFolder` and the graph.

/// Why the harness or the plugin refused: the plugin's own error text when
/// it wrote one (so tests can match it), else what was missing.
public struct ABIPluginError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One plugin library opened with dlopen, its `agraph_plugin_entry`
/// called and its `init` run, as the loader does; then one of its
/// node types checked, asked for its layout and instantiated, with a
/// create_info marshalled here (values not given take the parameter's
/// default, as the host fills them in). Deinit calls the plugin's `deinit`
/// and closes the library. [main-thread]
public final class ABIPlugin {
    /// A parameter value as a graph file gives it.
    public enum Value {
        case string(String), choice(String), bool(Bool), number(Double)
    }

    public let path: String
    public let handle: UnsafeMutableRawPointer
    public let descriptor: UnsafePointer<agraph_plugin_t>
    /// The node type under test.
    public let type: UnsafePointer<agraph_node_type_t>
    /// What every create_info carries: the node's id, the channels of
    /// every input port (none for a decoder, whose input is frames) and of
    /// every output port, the rate.
    public let nodeID: String
    public let inputChannels: Int
    public let outputChannels: Int
    public let sampleRate: Double

    /// Opens `path` and takes node type number `typeIndex`; create_infos
    /// name the node `nodeID`, with these channels and rate.
    public init(path: String, typeIndex: Int = 0, nodeID: String, inputChannels: Int, outputChannels: Int,
                sampleRate: Double) throws {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw ABIPluginError(dlerror().map { String(cString: $0) } ?? "dlopen failed: \(path)")
        }
        guard let symbol = dlsym(handle, "agraph_plugin_entry") else {
            dlclose(handle)
            throw ABIPluginError("\(path) does not export agraph_plugin_entry")
        }
        let entry = unsafeBitCast(symbol, to: agraph_plugin_entry_fn.self)
        guard let descriptor = entry() else {
            dlclose(handle)
            throw ABIPluginError("\(path): agraph_plugin_entry returned no descriptor")
        }
        guard descriptor.pointee.abi.major == UInt32(AGRAPH_PLUGIN_ABI_MAJOR) else {
            dlclose(handle)
            throw ABIPluginError("\(path): built for ABI \(descriptor.pointee.abi.major).\(descriptor.pointee.abi.minor), the harness reads \(AGRAPH_PLUGIN_ABI_MAJOR).x")
        }
        guard typeIndex >= 0, typeIndex < Int(descriptor.pointee.node_type_count),
              let type = descriptor.pointee.node_types[typeIndex] else {
            dlclose(handle)
            throw ABIPluginError("\(path) has no node type #\(typeIndex)")
        }
        let params = type.pointee.params
        guard type.pointee.type_id != nil,
              (0..<Int(type.pointee.param_count)).allSatisfy({ params != nil && params?[$0].name != nil }) else {
            dlclose(handle)
            throw ABIPluginError("\(path): node type #\(typeIndex) lacks its id or a parameter's name")
        }
        // Library-wide init before anything else, as the loader does.
        var error = Self.errorBuffer()
        if let initialize = descriptor.pointee.`init`, initialize(path, &error, UInt32(error.count)) != 1 {
            dlclose(handle)
            throw ABIPluginError(Self.text(error))
        }
        self.path = path
        self.handle = handle
        self.descriptor = descriptor
        self.type = type
        self.nodeID = nodeID
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        self.sampleRate = sampleRate
    }

    /// The plugin's `deinit` (every instance must be destroyed
    /// first); the next use starts over as after init.
    public func deinitLibrary() { descriptor.pointee.`deinit`?() }

    deinit {
        deinitLibrary()
        dlclose(handle)
    }

    /// The type's id.
    public var typeID: String { String(cString: type.pointee.type_id) }

    /// The text of the plugin-wide `agraph.plugin-info/1` extension, "" without it.
    public var details: String {
        guard let ext = descriptor.pointee.get_extension?(AGRAPH_EXT_PLUGIN_INFO) else { return "" }
        return ext.assumingMemoryBound(to: agraph_plugin_info_ext_t.self).pointee.details?().map { String(cString: $0) } ?? ""
    }

    /// The type's `input_codec` (decoder types), nil for audio input.
    public var typeInputCodec: String? { type.pointee.input_codec.map { String(cString: $0) } }

    /// The index of the parameter `name` in the type's table.
    public func parameterIndex(_ name: String) -> Int? {
        (0..<Int(type.pointee.param_count)).first { String(cString: type.pointee.params[$0].name) == name }
    }

    /// Calls `body` with a create_info for `values` (valid during the
    /// call): one entry per parameter, the ones not given defaulted (set
    /// unless the parameter is optional), as the host fills them in; with
    /// `host` as the host table (nil: a table made for the call).
    /// Throws for a name that is not a parameter or a choice that is not
    /// one of its options.
    public func withCreateInfo<R>(_ values: [String: Value], host: PluginHost? = nil,
                                  _ body: (UnsafePointer<agraph_create_info_t>) throws -> R) throws -> R {
        let t = type.pointee
        let names = (0..<Int(t.param_count)).map { String(cString: t.params[$0].name) }
        if let unknown = values.keys.sorted().first(where: { !names.contains($0) }) {
            throw ABIPluginError("\(typeID) has no parameter '\(unknown)'; its parameters: \(names.joined(separator: ", "))")
        }
        var strings: [UnsafeMutablePointer<CChar>] = []
        defer { strings.forEach { free($0) } }
        var array: [agraph_param_value_t] = try names.indices.map { i in
            let p = t.params[i]
            var v = agraph_param_value_t()
            v.is_set = p.flags & UInt32(AGRAPH_PARAM_OPTIONAL) != 0 ? 0 : 1
            v.number = p.default_number
            let choices = p.type == AGRAPH_PARAM_CHOICE.rawValue ? Int(p.choice_count) : 0
            if choices > 0 {
                let index = Int(p.default_number)
                guard (0..<choices).contains(index) else {
                    throw ABIPluginError("\(names[i]): default choice \(index) of \(choices)")
                }
                v.string = UnsafePointer(p.choices[index])
            }
            switch values[names[i]] {
            case .string(let s)?:
                guard let c = strdup(s) else { throw ABIPluginError("out of memory") }
                strings.append(c)
                v.string = UnsafePointer(c)
                v.is_set = 1
            case .choice(let s)?:
                guard let index = (0..<choices).first(where: { p.choices[$0].map { String(cString: $0) } == s }) else {
                    throw ABIPluginError("\(names[i]) has no choice '\(s)'")
                }
                v.number = Double(index)
                v.string = UnsafePointer(p.choices[index])
                v.is_set = 1
            case .bool(let b)?:
                v.number = b ? 1 : 0
                v.is_set = 1
            case .number(let n)?:
                v.number = n
                v.is_set = 1
            case nil:
                break
            }
            return v
        }
        let host = host ?? PluginHost(nodeID: nodeID, typeID: typeID)
        // Every port once: inputs (none for a decoder) at `inputChannels`,
        // outputs at `outputChannels`, inputs tagged with the usual layout.
        let inputs = [UInt32](repeating: UInt32(inputChannels), count: t.input_codec != nil ? 0 : Int(t.input_count))
        let outputs = [UInt32](repeating: UInt32(outputChannels), count: Int(t.output_count))
        let tag = strdup(ChannelLayout.default(forChannels: inputChannels).rawValue)
        defer { free(tag) }
        let tags = [UnsafePointer<CChar>?](repeating: tag.map { UnsafePointer($0) }, count: inputs.count)
        return try nodeID.withCString { id in
            try array.withUnsafeMutableBufferPointer { buffer in
                try inputs.withUnsafeBufferPointer { ins in
                    try outputs.withUnsafeBufferPointer { outs in
                        try tags.withUnsafeBufferPointer { layouts in
                            var info = agraph_create_info_t()
                            info.type = type
                            info.node_id = id
                            info.host = UnsafePointer(host.table)
                            info.values = UnsafePointer(buffer.baseAddress)
                            info.value_count = UInt32(buffer.count)
                            info.input_port_count = UInt32(ins.count)
                            info.output_port_count = UInt32(outs.count)
                            info.sample_rate = sampleRate
                            info.input_port_channels = ins.isEmpty ? nil : ins.baseAddress
                            info.output_port_channels = outs.isEmpty ? nil : outs.baseAddress
                            info.input_port_layouts = layouts.isEmpty ? nil : layouts.baseAddress
                            return try withExtendedLifetime(host) { try withUnsafePointer(to: &info) { try body($0) } }
                        }
                    }
                }
            }
        }
    }

    /// The type's `check` for `values`: nil when it accepts them, else its reason.
    public func check(_ values: [String: Value]) throws -> String? {
        guard let check = type.pointee.check else { throw ABIPluginError("\(typeID) has no check") }
        return try withCreateInfo(values) { info in
            var error = Self.errorBuffer()
            return check(info, &error, UInt32(error.count)) == 1 ? nil : Self.text(error)
        }
    }

    /// The type's `output_layout` of output port `port` for `values` (nil:
    /// it has none, or answers none).
    public func outputLayout(_ values: [String: Value], port: UInt32 = 0) throws -> String? {
        try withCreateInfo(values) { info in type.pointee.output_layout?(info, port).map { String(cString: $0) } }
    }

    /// A new instance for `values`, with `host` as its host table (default:
    /// a fresh one for this node); throws the plugin's error.
    public func create(_ values: [String: Value], host: PluginHost? = nil) throws -> ABIPluginInstance {
        let t = type.pointee
        guard let create = t.create, let activate = t.activate, let deactivate = t.deactivate, let destroy = t.destroy else {
            throw ABIPluginError("\(typeID) lacks create, activate, deactivate or destroy")
        }
        let host = host ?? PluginHost(nodeID: nodeID, typeID: typeID)
        var error = Self.errorBuffer()
        let instance = try withCreateInfo(values, host: host) { info in create(info, &error, UInt32(error.count)) }
        guard let instance else { throw ABIPluginError(Self.text(error)) }
        return ABIPluginInstance(plugin: self, instance: instance, host: host,
                                 activate: activate, deactivate: deactivate, destroy: destroy)
    }

    /// An error buffer of the ABI's capacity.
    static func errorBuffer() -> [CChar] { [CChar](repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY)) }

    /// The NUL-terminated text of an error buffer.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// One instance made by `ABIPlugin.create`: its lifecycle, live
/// parameters, extensions, and for decoder types (`agraph.decoder/1`)
/// decode, drain and flush into buffers the instance owns. Call
/// `deactivate` (if active) and `destroy` when done, as a host does; the
/// test decides when. [main-thread; decode, drain, flush: the worker's
/// calls, made from the test's thread]
public final class ABIPluginInstance {
    public let plugin: ABIPlugin
    public let instance: OpaquePointer
    /// The instance's host table (outlives the instance).
    public let host: PluginHost
    private let activateFn: @convention(c) (OpaquePointer?, Double, UInt32, UnsafeMutablePointer<CChar>?, UInt32) -> Int32
    private let deactivateFn: @convention(c) (OpaquePointer?) -> Void
    private let destroyFn: @convention(c) (OpaquePointer?) -> Void
    /// After activate, for a decoder type: its extension and one buffer a channel.
    private var decoder: agraph_decoder_ext_t?
    private var pcm: [UnsafeMutablePointer<Float>] = []
    private var capacity = 0

    init(plugin: ABIPlugin, instance: OpaquePointer, host: PluginHost,
         activate: @escaping @convention(c) (OpaquePointer?, Double, UInt32, UnsafeMutablePointer<CChar>?, UInt32) -> Int32,
         deactivate: @escaping @convention(c) (OpaquePointer?) -> Void,
         destroy: @escaping @convention(c) (OpaquePointer?) -> Void) {
        self.plugin = plugin
        self.instance = instance
        self.host = host
        activateFn = activate
        deactivateFn = deactivate
        destroyFn = destroy
    }

    deinit { pcm.forEach { $0.deallocate() } }

    /// The node type's table.
    public var type: agraph_node_type_t { plugin.type.pointee }

    /// `activate` at the plugin's rate; then, for a decoder type, its
    /// extension and `max_frames_per_decode` frames of buffer per output
    /// channel. Throws the plugin's error.
    public func activate(maxFrames: Int = 512) throws {
        var error = ABIPlugin.errorBuffer()
        guard activateFn(instance, plugin.sampleRate, UInt32(maxFrames), &error, UInt32(error.count)) == 1 else {
            throw ABIPluginError(ABIPlugin.text(error))
        }
        guard let ext = pluginExtension(AGRAPH_EXT_DECODER) else { return }
        let decoder = ext.assumingMemoryBound(to: agraph_decoder_ext_t.self).pointee
        guard let maxFramesPerDecode = decoder.max_frames_per_decode else {
            throw ABIPluginError("the decoder extension has no max_frames_per_decode")
        }
        self.decoder = decoder
        let frames = Int(maxFramesPerDecode(instance))
        if frames > capacity || pcm.count != plugin.outputChannels {
            pcm.forEach { $0.deallocate() }
            pcm = (0..<plugin.outputChannels).map { _ in
                let p = UnsafeMutablePointer<Float>.allocate(capacity: max(frames, 1))
                p.initialize(repeating: 0, count: max(frames, 1))
                return p
            }
            capacity = frames
        }
    }

    public func deactivate() { deactivateFn(instance) }
    public func destroy() { destroyFn(instance) }

    /// The instance's extension `id`, nil when it has none.
    public func pluginExtension(_ id: String) -> UnsafeRawPointer? { type.get_extension?(instance, id) }

    /// `set_parameter` for the parameter `name`.
    public func setParameter(_ name: String, _ value: Double) throws {
        guard let index = plugin.parameterIndex(name) else { throw ABIPluginError("\(plugin.typeID) has no parameter '\(name)'") }
        guard let set = type.set_parameter else { throw ABIPluginError("\(plugin.typeID) has no set_parameter") }
        set(instance, UInt32(index), value)
    }

    /// What a host does when the route changes: its table answers the new
    /// route, and the plugin side of `agraph.output-route/1`, if any, is told.
    public func routeChanged(_ route: OutputRoute) {
        host.outputRoute = route
        let ext = pluginExtension(AGRAPH_EXT_OUTPUT_ROUTE)?.assumingMemoryBound(to: agraph_output_route_ext_t.self)
        ext?.pointee.changed?(instance, PluginHost.code(route))
    }

    /// What one decode call returned and wrote: its status
    /// (`agraph_decode_status_t`) and the frames written, per channel.
    public struct Decoded {
        public var status: Int32
        public var channels: [[Float]]
        public var left: [Float] { channels.first ?? [] }
        public var right: [Float] { channels.count > 1 ? channels[1] : [] }
    }

    /// The decoder's `decode` of one frame (nil: the drain call, frame
    /// NULL and size 0) at `timestamp`. Needs `activate` first.
    public func decode(_ frame: [UInt8]?, timestamp: Int) throws -> Decoded {
        guard let decode = decoder?.decode else { throw ABIPluginError("\(plugin.typeID) is not an active decoder") }
        var written: UInt32 = 0
        let channels: [UnsafeMutablePointer<Float>?] = pcm
        let status = channels.withUnsafeBufferPointer { pointers in
            if let frame {
                return frame.withUnsafeBufferPointer { bytes in
                    decode(instance, bytes.baseAddress, UInt32(bytes.count), Int64(timestamp),
                           pointers.baseAddress, UInt32(capacity), &written)
                }
            }
            return decode(instance, nil, 0, Int64(timestamp), pointers.baseAddress, UInt32(capacity), &written)
        }
        guard Int(written) <= capacity else {
            throw ABIPluginError("decode wrote \(written) frames into buffers of \(capacity)")
        }
        return Decoded(status: status, channels: pcm.map { Array(UnsafeBufferPointer(start: $0, count: Int(written))) })
    }

    /// decode(NULL, 0) until it writes nothing, everything it wrote; throws
    /// the decoder's `last_error` on a status other than OK.
    public func drain() throws -> Decoded {
        var all = Decoded(status: 0, channels: Array(repeating: [], count: pcm.count))
        for _ in 0..<100 {
            let out = try decode(nil, timestamp: -1)
            if out.status != 0 { throw ABIPluginError(lastDecodeError ?? "drain: status \(out.status)") }
            if out.left.isEmpty { break }
            for c in all.channels.indices { all.channels[c] += out.channels[c] }
        }
        return all
    }

    /// The decoder's `flush`.
    public func flush() throws {
        guard let flush = decoder?.flush else { throw ABIPluginError("\(plugin.typeID) is not an active decoder") }
        flush(instance)
    }

    /// The decoder's `last_error` (nil: it has none).
    public var lastDecodeError: String? {
        decoder?.last_error?(instance).map { String(cString: $0) }
    }
}
