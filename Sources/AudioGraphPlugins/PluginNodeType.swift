// The node-type adapter: one node type of a plugin (agraph_node_type_t)
// turned into a `NodeType` — its description read and checked once, its
// channel rules applied in `resolve`, its instances made in `makeNode`.
import AudioGraphHost
import CAGraphPlugin
#if canImport(Glibc)
import Glibc
#endif

/// A node type from a plugin: the C description turned into a
/// `NodeDescriptor`, channel rules checked in `resolve`, instances made
/// through the plugin's functions.
public struct PluginNodeType: FrameDecoderType, @unchecked Sendable {
    // @unchecked: the C tables are immutable and live until exit.
    let type: UnsafePointer<agraph_node_type_t>
    public let descriptor: NodeDescriptor
    /// Input channels accepted by each input port, and each output's rule,
    /// in port order. A decoder's input is not in `inputRanges` (it takes
    /// frames).
    let inputRanges: [ClosedRange<Int>]
    let outputRules: [OutputRule]
    /// The graph's names of the ports (see the naming rule in the header).
    let inputNames: [String]
    let outputNames: [String]
    let endless: Bool
    /// AGRAPH_NODE_VIRTUALIZES: the node renders for headphones; validation
    /// refuses binaural input to it (`NodeDescriptor.virtualizes`).
    let virtualizes: Bool
    /// A worker-domain decoder: the codecs its input takes.
    let inputCodec: String?
    /// `output_layout` (any output port's tag), when the plugin has it.
    let outputLayout: (@convention(c) (UnsafePointer<agraph_create_info_t>?, UInt32) -> UnsafePointer<CChar>?)?
    /// Parameters flagged AGRAPH_PARAM_VENDOR_LIBRARY: resolved by
    /// `VendorLibraryLocations` before the plugin sees them.
    let vendorLibraryParameters: [String]

    enum OutputRule { case none, fixed(Int), sameAsInput }

    /// Reads and checks the C description (ABI 2.0: every field, whatever
    /// the plugin's minor version). [main-thread]
    init(type: UnsafePointer<agraph_node_type_t>, path: String) throws {
        self.type = type
        let t = type.pointee
        inputCodec = try boundedString(t.input_codec, "input_codec")
        outputLayout = t.output_layout
        guard let id = try boundedString(t.type_id, "the type id"), !id.isEmpty else { throw PluginError("no type id") }
        guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) else {
            throw PluginError("type id may hold only letters, digits, '.', '-' and '_'")
        }
        let maxPorts = Int(AGRAPH_MAX_PORTS)
        guard t.input_count <= UInt32(maxPorts), t.output_count <= UInt32(maxPorts) else {
            throw PluginError("\(t.input_count) inputs and \(t.output_count) outputs; at most \(maxPorts) of each")
        }
        guard t.input_count + t.output_count > 0 else { throw PluginError("no ports") }
        let isDecoder = t.domain == AGRAPH_DOMAIN_WORKER.rawValue
        if t.domain != AGRAPH_DOMAIN_REALTIME.rawValue {
            guard isDecoder else { throw PluginError("unknown domain \(t.domain)") }
            guard inputCodec != nil, t.input_count == 1, t.output_count == 1 else {
                throw PluginError("a worker-domain node must be a decoder (extension \(AGRAPH_EXT_DECODER)): one input with input_codec and one output")
            }
            guard t.get_extension != nil else { throw PluginError("a decoder needs get_extension for \(AGRAPH_EXT_DECODER)") }
        }
        guard t.create != nil, t.activate != nil, t.deactivate != nil, t.destroy != nil, isDecoder || t.process != nil else {
            throw PluginError("create, activate, process, deactivate and destroy are required")
        }
        /// The graph's names of `count` ports: `single` for one, else the
        /// declared names (checked).
        func names(_ table: UnsafePointer<agraph_port_t>?, _ count: Int, single: String, kind: String) throws -> [String] {
            guard count > 1 else { return count == 1 ? [single] : [] }
            var out: [String] = []
            for k in 0..<count {
                guard let name = try boundedString(table?[k].name, "\(kind) port \(k)'s name"), PortDescriptor.isValidName(name) else {
                    throw PluginError("\(kind) port \(k) needs a name of letters, digits and '_' (a node with several \(kind)s names each)")
                }
                guard !out.contains(name) else { throw PluginError("two \(kind) ports are called '\(name)'") }
                out.append(name)
            }
            return out
        }
        if t.input_count > 0 && t.inputs == nil { throw PluginError("input port table is NULL") }
        if t.output_count > 0 && t.outputs == nil { throw PluginError("output port table is NULL") }
        inputNames = try names(t.inputs, Int(t.input_count), single: "in", kind: "input")
        outputNames = try names(t.outputs, Int(t.output_count), single: "out", kind: "output")
        var ranges: [ClosedRange<Int>] = []
        if !isDecoder, let table = t.inputs {
            for k in 0..<Int(t.input_count) {
                let port = table[k]
                let lo = max(Int(port.min_channels), 1)
                let hi = port.max_channels == 0 ? 64 : Int(port.max_channels)
                guard lo <= hi else { throw PluginError("input \(inputNames[k]) accepts \(lo)…\(hi) channels") }
                ranges.append(lo...hi)
            }
        }
        inputRanges = ranges
        var rules: [OutputRule] = []
        if let table = t.outputs {
            for k in 0..<Int(t.output_count) {
                let port = table[k]
                let which = t.output_count > 1 ? "output \(outputNames[k])" : "output"
                switch port.channels_rule {
                case AGRAPH_CHANNELS_FIXED.rawValue:
                    guard (1...64).contains(port.channels) else { throw PluginError("\(which) has \(port.channels) channels (1…64)") }
                    rules.append(.fixed(Int(port.channels)))
                case AGRAPH_CHANNELS_SAME_AS_INPUT.rawValue:
                    guard t.input_count >= 1 else { throw PluginError("a source's \(which) cannot be \"same as input\"") }
                    rules.append(.sameAsInput)
                default:
                    throw PluginError("unknown channel rule \(port.channels_rule) for \(which)")
                }
            }
        }
        outputRules = rules
        endless = t.flags & UInt32(AGRAPH_NODE_ENDLESS) != 0
        virtualizes = t.flags & UInt32(AGRAPH_NODE_VIRTUALIZES) != 0
        guard t.param_count <= UInt32(PluginLimits.parameters) else {
            throw PluginError("claims \(t.param_count) parameters; at most \(PluginLimits.parameters) are read")
        }
        var params: [ParameterDescriptor] = []
        var vendorLibraries: [String] = []
        for i in 0..<Int(t.param_count) {
            guard let p = t.params?[i] else { throw PluginError("parameter table is NULL") }
            let parameter = try Self.parameter(p)
            if p.flags & UInt32(AGRAPH_PARAM_VENDOR_LIBRARY) != 0 { vendorLibraries.append(parameter.name) }
            params.append(parameter)
        }
        vendorLibraryParameters = vendorLibraries
        let names = params.map(\.name)
        if Set(names).count != names.count { throw PluginError("duplicate parameter names") }
        if params.contains(where: \.live) && t.set_parameter == nil {
            throw PluginError("live parameters but no set_parameter")
        }
        let role: NodeDescriptor.Role = t.input_count == 0 ? .source : (t.output_count == 0 ? .sink : .processor)
        let inputs: InputPorts = t.input_count == 0 ? .none : (t.input_count == 1 ? .single : .named(inputNames.map { PortDescriptor($0) }))
        let outputs: OutputPorts? = t.output_count > 1 ? .named(outputNames.map { PortDescriptor($0) }, defaultPort: nil) : nil
        descriptor = NodeDescriptor(typeID: id, role: role, summary: try boundedString(t.summary, "the type's summary") ?? "", inputs: inputs,
                                    outputs: outputs, parameters: params, domain: isDecoder ? .background : .realtime, origin: path,
                                    inputCodecs: inputCodec.map { $0.split(separator: " ").map(String.init) } ?? [],
                                    virtualizes: virtualizes)
    }

    static func parameter(_ p: agraph_param_t) throws -> ParameterDescriptor {
        guard let name = try boundedString(p.name, "a parameter name"), !name.isEmpty else { throw PluginError("a parameter has no name") }
        let flags = p.flags
        let live = flags & UInt32(AGRAPH_PARAM_LIVE) != 0
        let optional = flags & UInt32(AGRAPH_PARAM_OPTIONAL) != 0
        let required = flags & UInt32(AGRAPH_PARAM_REQUIRED) != 0
        let range: ClosedRange<Double>? = flags & UInt32(AGRAPH_PARAM_HAS_RANGE) != 0 ? (p.min <= p.max ? p.min...p.max : nil) : nil
        if flags & UInt32(AGRAPH_PARAM_HAS_RANGE) != 0 && range == nil {
            throw PluginError("parameter \(name): min \(p.min) > max \(p.max)")
        }
        let type: ParameterType
        var def: ParameterValue?
        switch p.type {
        case AGRAPH_PARAM_NUMBER.rawValue:
            type = .number; def = .number(p.default_number)
        case AGRAPH_PARAM_INTEGER.rawValue:
            type = .integer; def = .number(p.default_number.rounded())
        case AGRAPH_PARAM_BOOLEAN.rawValue:
            type = .boolean; def = .boolean(p.default_number != 0)
        case AGRAPH_PARAM_CHOICE.rawValue:
            guard p.choice_count <= UInt32(PluginLimits.choices) else {
                throw PluginError("parameter \(name): claims \(p.choice_count) choices; at most \(PluginLimits.choices) are read")
            }
            var options: [String] = []
            for k in 0..<Int(p.choice_count) {
                guard let c = try boundedString(p.choices?[k], "parameter \(name): choice \(k)") else { break }
                options.append(c)
            }
            guard !options.isEmpty, options.count == Int(p.choice_count) else { throw PluginError("parameter \(name): a choice needs its strings") }
            type = .choice(options)
            let i = Int(p.default_number)
            guard options.indices.contains(i) else { throw PluginError("parameter \(name): default choice \(i) out of range") }
            def = .string(options[i])
        case AGRAPH_PARAM_STRING.rawValue:
            type = .string; def = try boundedString(p.default_string, "parameter \(name): default string").map { .string($0) }
        default:
            throw PluginError("parameter \(name): unknown type \(p.type)")
        }
        if live, type == .string {
            throw PluginError("parameter \(name): string parameters cannot be live")
        }
        if flags & UInt32(AGRAPH_PARAM_VENDOR_LIBRARY) != 0 && type != .string {
            throw PluginError("parameter \(name): only a string parameter can name a vendor library")
        }
        if let r = range, case .number(let v)? = def, !r.contains(v), !required, !optional {
            throw PluginError("parameter \(name): default \(v) outside \(r.lowerBound)…\(r.upperBound)")
        }
        if required || optional || (type == .string && def == nil && !optional) { def = nil }
        return ParameterDescriptor(name, type, range: range, default: def, optional: optional,
                                   unit: try boundedString(p.unit, "parameter \(name): unit"), live: live,
                                   try boundedString(p.summary, "parameter \(name): summary") ?? "")
    }

    public func isEndless(_ parameters: NodeParameters) -> Bool { endless }

    /// `parameters` with every vendor-library parameter replaced by the real
    /// path it resolves to (see VendorLibraries.swift); nil after reporting
    /// each refusal to `refuse(parameter, message)`. Loads nothing.
    /// [main-thread]
    func resolvingVendorLibraries(_ parameters: NodeParameters, directory: String,
                                  refuse: (String, String) -> Void) -> NodeParameters? {
        guard !vendorLibraryParameters.isEmpty else { return parameters }
        let locations = VendorLibraryLocations.current()
        var resolved = parameters
        var ok = true
        for name in vendorLibraryParameters {
            guard case .string(let value)? = parameters[name] else { continue }
            switch locations.resolve(value, directory: directory) {
            case .success(let path): resolved.values[name] = .string(path)
            case .failure(let refusal): refuse(name, refusal.message); ok = false
            }
        }
        return ok ? resolved : nil
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        // Vendor libraries first: nothing a graph names reaches the plugin
        // (whose check may load it) before it is found in a trusted folder.
        guard let parameters = resolvingVendorLibraries(c.parameters, directory: c.directory,
                                                        refuse: { c.error(parameter: $0, $1) }) else { return nil }
        var inputChannels: [Int] = []
        var inputLayouts: [ChannelLayout?] = []
        for (k, range) in inputRanges.enumerated() {
            guard k < c.inputFormats.count, let input = c.inputFormats[k] else { return nil }
            guard range.contains(input.channels) else {
                let which = inputRanges.count > 1 ? " on its input '\(inputNames[k])'" : ""
                c.error(input: k, "\(descriptor.typeID) accepts \(range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)…\(range.upperBound)") channels\(which); the input has \(input.channels)")
                return nil
            }
            inputChannels.append(input.channels)
            inputLayouts.append(input.layout)
        }
        if inputCodec != nil, c.input == nil { return nil }
        var outputs: [StreamFormat] = []
        for rule in outputRules {
            switch rule {
            case .none: break
            case .fixed(let n): outputs.append(StreamFormat(channels: n, sampleRate: c.sampleRate))
            case .sameAsInput:
                guard let input = c.input else { return nil }
                if inputCodec != nil {
                    // A decoder's PCM follows what its frames decode to, at the graph's rate.
                    guard input.channels > 0 else {
                        c.error(input: 0, "\(descriptor.typeID) takes its channels from its input, and its source does not say how many channels its frames decode to")
                        return nil
                    }
                    outputs.append(StreamFormat(channels: input.channels, sampleRate: c.sampleRate, layout: input.layout,
                                                surroundsAreBack: input.surroundsAreBack))
                } else {
                    outputs.append(input)
                }
            }
        }
        let host = PluginHost(nodeID: c.nodeID, typeID: descriptor.typeID)
        for k in outputs.indices where outputLayout != nil {
            let channels = outputs[k].channels
            let named = withCreateInfo(nodeID: c.nodeID, parameters: parameters, sampleRate: c.sampleRate, host: host,
                                       inputPortChannels: inputChannels, outputPortChannels: outputs.map(\.channels),
                                       inputPortLayouts: inputLayouts) { info, _ in
                outputLayout.flatMap { $0(info, UInt32(k)) }.map { truncatedString($0, limit: 64) }
            }.result
            if let name = named {
                let which = outputs.count > 1 ? " of output '\(outputNames[k])'" : ""
                guard let layout = ChannelLayout(rawValue: name), layout.channelCount.map({ $0 == channels }) ?? true else {
                    c.error("the plugin names the layout\(which) \"\(name)\", which does not fit \(channels) channels")
                    return nil
                }
                outputs[k].layout = layout
            }
        }
        if let check = type.pointee.check {
            let ok = withCreateInfo(nodeID: c.nodeID, parameters: parameters, sampleRate: c.sampleRate, host: host,
                                    inputPortChannels: inputChannels, outputPortChannels: outputs.map(\.channels),
                                    inputPortLayouts: inputLayouts) { info, error in
                check(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
            }
            if ok.result == 0 {
                c.error(ok.message.isEmpty ? "refused by the plugin" : ok.message)
                return nil
            }
        }
        for (k, f) in outputs.enumerated() { c.setOutput(k, f) }
        return outputs.first
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        var refusals: [String] = []
        guard let parameters = resolvingVendorLibraries(c.parameters, directory: c.directory,
                                                        refuse: { refusals.append("parameter \($0): \($1)") }) else {
            throw EngineError(nodeID: c.nodeID, refusals.joined(separator: "; "))
        }
        guard let create = type.pointee.create else {
            throw EngineError(nodeID: c.nodeID, "\(descriptor.typeID) (\(descriptor.origin)): the plugin has no create function")
        }
        let host = PluginHost(nodeID: c.nodeID, typeID: descriptor.typeID)
        let inputPortChannels = inputCodec != nil ? [] : c.inputFormats.map(\.channels)
        let inputPortLayouts: [ChannelLayout?] = inputCodec != nil ? [] : c.inputFormats.map(\.layout)
        let made = withCreateInfo(nodeID: c.nodeID, parameters: parameters, sampleRate: c.sampleRate, host: host,
                                  inputPortChannels: inputPortChannels, outputPortChannels: c.outputFormats.map(\.channels),
                                  inputPortLayouts: inputPortLayouts) { info, error in
            create(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
        }
        guard let instance = made.result else {
            throw EngineError(nodeID: c.nodeID, "\(descriptor.typeID) (\(descriptor.origin)): create failed: \(made.message.isEmpty ? "no reason given" : made.message)")
        }
        if inputCodec != nil {
            guard let source = c.inputNodes.first as? CompressedFrameSource else {
                type.pointee.destroy?(instance)
                throw EngineError(nodeID: c.nodeID, "\(descriptor.typeID): its input is not a source of compressed frames")
            }
            // Damage fails an offline render when the decoder or its source
            // has an onError parameter and neither says "skip"; live
            // playback conceals it either way (as `playlist` does).
            let policies = [c.parameters.string("onError"), source.onError].compactMap { $0 }
            let failsOnDamage = !c.live && !policies.isEmpty && !policies.contains("skip")
            return try PluginDecoderNode(type: type, instance: instance, typeID: descriptor.typeID, nodeID: c.nodeID,
                                         source: source, channels: c.outputFormat?.channels ?? 2, host: host,
                                         failsOnDamage: failsOnDamage)
        }
        return PluginRenderNode(type: type, instance: instance, typeID: descriptor.typeID, nodeID: c.nodeID, host: host)
    }

    /// A decoder instance with the default parameters, for a node that
    /// decodes with this type itself (a playlist): `channels` in and out.
    /// [main-thread]
    public func makeFrameDecoder(nodeID: String, channels: Int, sampleRate: Double) throws -> any FrameDecoder {
        ThreadRole.check(.main)
        guard inputCodec != nil, let create = type.pointee.create else {
            throw EngineError(nodeID: nodeID, "\(descriptor.typeID) (\(descriptor.origin)) is not a decoder")
        }
        var defaults = NodeParameters()
        for p in descriptor.parameters { if let d = p.defaultValue { defaults.values[p.name] = d } }
        let host = PluginHost(nodeID: nodeID, typeID: descriptor.typeID)
        let made = withCreateInfo(nodeID: nodeID, parameters: defaults, sampleRate: sampleRate, host: host,
                                  inputPortChannels: [], outputPortChannels: [channels]) { info, error in
            create(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
        }
        guard let instance = made.result else {
            throw EngineError(nodeID: nodeID, "\(descriptor.typeID) (\(descriptor.origin)): create failed: \(made.message.isEmpty ? "no reason given" : made.message)")
        }
        return try PluginFrameDecoder(type: type, instance: instance, host: host, typeID: descriptor.typeID,
                                      nodeID: nodeID, channels: channels)
    }

    /// Calls `body` with the C view of a node (valid during the call only):
    /// its parameters, `host` as its host table, the channels of every port
    /// (an entry per declared port: a port past the end of the given array
    /// gets 0, not yet known; a decoder has no input ports, its input being
    /// frames), each input's layout tag (nil, or past the end: the usual
    /// layout for that input's channel count; an input of unknown channels
    /// gets none), and an error buffer; returns its result and the message.
    /// [main-thread]
    public func withCreateInfo<R>(nodeID: String, parameters: NodeParameters, sampleRate: Double, host: PluginHost,
                                  inputPortChannels: [Int], outputPortChannels: [Int],
                                  inputPortLayouts: [ChannelLayout?] = [],
                                  _ body: (UnsafePointer<agraph_create_info_t>, UnsafeMutablePointer<CChar>) -> R) -> (result: R, message: String) {
        ThreadRole.check(.main)
        func counts(_ given: [Int], _ n: Int) -> [UInt32] {
            (0..<n).map { $0 < given.count ? UInt32(clamping: given[$0]) : 0 }
        }
        let inputCounts = counts(inputPortChannels, inputCodec != nil ? 0 : inputNames.count)
        let outputCounts = counts(outputPortChannels, outputNames.count)
        var strings: [UnsafeMutablePointer<CChar>] = []
        defer { strings.forEach { free($0) } }
        // One tag per input port, NULL where the input is unknown.
        let layouts: [UnsafePointer<CChar>?] = inputCounts.enumerated().map { k, channels in
            let given = k < inputPortLayouts.count ? inputPortLayouts[k] : nil
            guard let layout = given ?? (channels > 0 ? ChannelLayout.default(forChannels: Int(channels)) : nil) else { return nil }
            let cs = strdup(layout.rawValue)!
            strings.append(cs)
            return UnsafePointer(cs)
        }
        var values: [agraph_param_value_t] = []
        for p in descriptor.parameters {
            var v = agraph_param_value_t(is_set: 1, reserved0: 0, number: 0, string: nil)
            switch parameters[p.name] {
            case .number(let x)?: v.number = x
            case .boolean(let b)?: v.number = b ? 1 : 0
            case .string(let s)?:
                let cs = strdup(s)!
                strings.append(cs)
                v.string = UnsafePointer(cs)
                if case .choice(let options) = p.type { v.number = Double(options.firstIndex(of: s) ?? 0) }
            default: v.is_set = 0
            }
            values.append(v)
        }
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        let id = strdup(nodeID)!
        defer { free(id) }
        let result = values.withUnsafeBufferPointer { buf in
            inputCounts.withUnsafeBufferPointer { ins in
                outputCounts.withUnsafeBufferPointer { outs in
                    layouts.withUnsafeBufferPointer { tags in
                        var info = agraph_create_info_t(type: type, node_id: UnsafePointer(id), host: UnsafePointer(host.table),
                                                        values: buf.baseAddress, value_count: UInt32(buf.count),
                                                        input_port_count: UInt32(ins.count), output_port_count: UInt32(outs.count),
                                                        reserved0: 0, sample_rate: sampleRate,
                                                        input_port_channels: ins.isEmpty ? nil : ins.baseAddress,
                                                        output_port_channels: outs.isEmpty ? nil : outs.baseAddress,
                                                        input_port_layouts: tags.isEmpty ? nil : tags.baseAddress)
                        return withExtendedLifetime(host) { withUnsafePointer(to: &info) { body($0, error) } }
                    }
                }
            }
        }
        error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
        return (result, String(cString: error))
    }
}
