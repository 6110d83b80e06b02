// The C tables of a plugin, built once from the Swift description: what
// `agraph_plugin_entry` returns.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif


/// The C tables of a plugin: what `agraph_plugin_entry` returns.
///
/// Make one, in a global `let` (initialised once, thread-safely, on first
/// use): the tables it allocates are never freed, as the ABI requires of
/// everything reachable from the entry point. Immutable once built, hence
/// safe to share between threads.
public struct PluginExport: @unchecked Sendable {
    /// The pointer `agraph_plugin_entry` returns.
    public let descriptor: UnsafePointer<agraph_plugin_t>

    /// - Parameters:
    ///   - name, vendor, version: the plugin's own (not the ABI's), shown by `agraph nodes`.
    ///   - nodes: the node types, each a `PluginNode` class (a `PluginDecoder` for a decoder).
    ///   - details: AGRAPH_EXT_PLUGIN_INFO's text (`agraph nodes TYPE`), e.g. the
    ///     external library found. [main-thread]
    ///   - initialize: the library-wide init, given the plugin's path;
    ///     throwing refuses the library with the error's text. [main-thread]
    ///   - deinitialize: the library-wide deinit. [main-thread]
    /// One `PluginExport` per library: the closures are kept by the kit.
    /// [main-thread]
    public init(name: String, vendor: String, version: String, nodes: [any PluginNode.Type],
                details: (@Sendable () -> String)? = nil,
                initialize: (@Sendable (String) throws -> Void)? = nil,
                deinitialize: (@Sendable () -> Void)? = nil) {
        pluginHooks.withLock { $0 = PluginHooks(details: details, initialize: initialize, deinitialize: deinitialize) }
        descriptor = Self.makeDescriptor(name: name, vendor: vendor, version: version, nodes: nodes,
                                         hasDetails: details != nil)
    }

    static func makeDescriptor(name: String, vendor: String, version: String,
                               nodes: [any PluginNode.Type], hasDetails: Bool) -> UnsafePointer<agraph_plugin_t> {
        let types = UnsafeMutablePointer<UnsafePointer<agraph_node_type_t>?>.allocate(capacity: max(nodes.count, 1))
        for (i, node) in nodes.enumerated() { types[i] = UnsafePointer(makeNodeType(node)) }
        let p = UnsafeMutablePointer<agraph_plugin_t>.allocate(capacity: 1)
        p.initialize(to: agraph_plugin_t(
            abi: agraph_abi_version_t(major: UInt32(AGRAPH_PLUGIN_ABI_MAJOR), minor: UInt32(AGRAPH_PLUGIN_ABI_MINOR)),
            name: keep(name), vendor: keep(vendor), version: keep(version),
            node_type_count: UInt32(nodes.count), reserved0: 0,
            node_types: UnsafePointer(types),
            init: pluginInitTrampoline, deinit: pluginDeinitTrampoline,
            get_extension: hasDetails ? pluginGetExtension : nil))
        return UnsafePointer(p)
    }

    /// A C string that lives forever.
    static func keep(_ s: String) -> UnsafePointer<CChar> { UnsafePointer(strdup(s)!) }
    static func keep(_ s: String?) -> UnsafePointer<CChar>? { s.map { keep($0) } }

    static func makePort(_ p: PluginPort) -> agraph_port_t {
        var rule = AGRAPH_CHANNELS_FIXED
        var channels: UInt32 = 0
        switch p.channels {
        case .fixed(let n): channels = UInt32(n)
        case .sameAsInput: rule = AGRAPH_CHANNELS_SAME_AS_INPUT
        }
        return agraph_port_t(name: keep(p.name), channels_rule: rule.rawValue, channels: channels,
                             min_channels: UInt32(p.minChannels), max_channels: UInt32(p.maxChannels ?? 0))
    }

    static func makeParam(_ p: PluginParameter) -> agraph_param_t {
        var flags: UInt32 = 0
        if p.live { flags |= UInt32(AGRAPH_PARAM_LIVE) }
        if p.optional { flags |= UInt32(AGRAPH_PARAM_OPTIONAL) }
        if p.required { flags |= UInt32(AGRAPH_PARAM_REQUIRED) }
        if p.range != nil { flags |= UInt32(AGRAPH_PARAM_HAS_RANGE) }
        let type: agraph_param_type_t
        var choices: UnsafePointer<UnsafePointer<CChar>?>? = nil
        var choiceCount: UInt32 = 0
        switch p.type {
        case .number: type = AGRAPH_PARAM_NUMBER
        case .integer: type = AGRAPH_PARAM_INTEGER
        case .boolean: type = AGRAPH_PARAM_BOOLEAN
        case .string: type = AGRAPH_PARAM_STRING
        case .choice(let options):
            type = AGRAPH_PARAM_CHOICE
            let list = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(options.count, 1))
            for (i, o) in options.enumerated() { list[i] = keep(o) }
            choices = UnsafePointer(list)
            choiceCount = UInt32(options.count)
        }
        return agraph_param_t(name: keep(p.name), summary: keep(p.summary), unit: keep(p.unit),
                              type: type.rawValue, flags: flags,
                              min: p.range?.lowerBound ?? 0, max: p.range?.upperBound ?? 0,
                              default_number: p.defaultNumber, default_string: keep(p.defaultString),
                              choices: choices, choice_count: choiceCount, reserved0: 0)
    }

    static func makeNodeType(_ node: any PluginNode.Type) -> UnsafeMutablePointer<agraph_node_type_t> {
        let d = node.description
        let decoder = node as? any PluginDecoder.Type
        func array<T>(_ items: [T]) -> UnsafePointer<T>? {
            guard !items.isEmpty else { return nil }
            let p = UnsafeMutablePointer<T>.allocate(capacity: items.count)
            p.initialize(from: items, count: items.count)
            return UnsafePointer(p)
        }
        let inputs = d.inputs.map(makePort)
        let outputs = d.outputs.map(makePort)
        let params = d.parameters.map(makeParam)
        let box = Unmanaged.passRetained(TypeBox(node)).toOpaque()
        let t = UnsafeMutablePointer<agraph_node_type_t>.allocate(capacity: 1)
        t.initialize(to: agraph_node_type_t(
            type_id: keep(d.typeID), summary: keep(d.summary),
            domain: decoder == nil ? AGRAPH_DOMAIN_REALTIME.rawValue : AGRAPH_DOMAIN_WORKER.rawValue,
            flags: (d.endless ? UInt32(AGRAPH_NODE_ENDLESS) : 0) | (d.virtualizes ? UInt32(AGRAPH_NODE_VIRTUALIZES) : 0),
            input_count: UInt32(inputs.count), output_count: UInt32(outputs.count),
            inputs: array(inputs), outputs: array(outputs),
            param_count: UInt32(params.count), reserved0: 0, params: array(params),
            input_codec: keep(decoder?.inputCodec), plugin_data: box,
            check: checkTrampoline, output_layout: outputLayoutTrampoline,
            create: createTrampoline, activate: activateTrampoline,
            process: decoder == nil ? processTrampoline : nil,
            set_parameter: d.parameters.contains(where: \.live) ? setParameterTrampoline : nil,
            latency: latencyTrampoline, deactivate: deactivateTrampoline, destroy: destroyTrampoline,
            get_extension: instanceGetExtension))
        return t
    }
}
