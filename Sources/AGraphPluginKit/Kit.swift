// AGraphPluginKit: write an AudioGraph node plugin in Swift.
//
// A plugin is one short file: a class conforming to `PluginNode` per node
// type, a `PluginExport(...)` built once, and the exported entry
// point:
//
//     import AGraphPluginKit
//
//     final class Tremolo: PluginNode { ... }
//
//     let plugin = PluginExport(name: "Tremolo", vendor: "Example",
//                               version: "1.0", nodes: [Tremolo.self])
//
//     @c(agraph_plugin_entry)
//     public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { plugin.descriptor }
//
// The kit turns the Swift description into the C tables of
// `agraph_plugin.h` (allocated once, never freed: they must live as long as
// the library) and supplies the C function pointers (trampolines) that
// forward each ABI call to the Swift instance.
@_exported import CAGraphPlugin

// MARK: - Static description

/// How a parameter is typed in a graph file.
public enum PluginParameterType: Sendable, Equatable {
    case number
    case integer
    case boolean
    /// One of these strings; the value passed to the node is the index.
    case choice([String])
    case string
}

/// The static description of one parameter (see `agraph_param_t`).
public struct PluginParameter: Sendable {
    public var name: String
    public var type: PluginParameterType
    public var range: ClosedRange<Double>?
    /// Default: a number (number, integer, boolean 0/1, choice index) or text (string).
    public var defaultNumber: Double
    public var defaultString: String?
    public var unit: String?
    public var live: Bool
    public var optional: Bool
    public var required: Bool
    public var summary: String

    /// A number or integer parameter.
    public static func number(_ name: String, _ range: ClosedRange<Double>, default value: Double,
                              unit: String? = nil, live: Bool = false, integer: Bool = false,
                              _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: integer ? .integer : .number, range: range, defaultNumber: value,
                        defaultString: nil, unit: unit, live: live, optional: false, required: false, summary: summary)
    }

    public static func boolean(_ name: String, default value: Bool, live: Bool = false,
                               _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .boolean, range: nil, defaultNumber: value ? 1 : 0,
                        defaultString: nil, unit: nil, live: live, optional: false, required: false, summary: summary)
    }

    /// One of `options`; the default is given by name.
    public static func choice(_ name: String, _ options: [String], default value: String,
                              _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .choice(options), range: nil,
                        defaultNumber: Double(options.firstIndex(of: value) ?? 0),
                        defaultString: nil, unit: nil, live: false, optional: false, required: false, summary: summary)
    }

    /// Text; `default: nil` makes it required.
    public static func string(_ name: String, default value: String?, _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .string, range: nil, defaultNumber: 0, defaultString: value,
                        unit: nil, live: false, optional: false, required: value == nil, summary: summary)
    }
}

/// How many channels a port carries (see `agraph_channels_rule_t`).
public enum PluginChannels: Sendable {
    /// Exactly this many (an output).
    case fixed(Int)
    /// As many as the input, same layout tag (an output of a processor).
    case sameAsInput
}

/// An audio port (see `agraph_port_t`).
public struct PluginPort: Sendable {
    public var name: String
    public var channels: PluginChannels
    /// For an input: the accepted channel counts; nil upper bound = no limit.
    public var minChannels: Int
    public var maxChannels: Int?

    /// An input accepting `minChannels…maxChannels` channels.
    public static func input(_ name: String = "in", channels: ClosedRange<Int> = 1...64) -> PluginPort {
        PluginPort(name: name, channels: .fixed(0), minChannels: channels.lowerBound, maxChannels: channels.upperBound)
    }

    /// An output with `channels` channels.
    public static func output(_ name: String = "out", channels: PluginChannels = .sameAsInput) -> PluginPort {
        PluginPort(name: name, channels: channels, minChannels: 0, maxChannels: nil)
    }
}

/// The static description of a node type (see `agraph_node_type_t`).
public struct PluginNodeDescription: Sendable {
    public var typeID: String
    public var summary: String
    public var input: PluginPort?
    public var output: PluginPort?
    public var parameters: [PluginParameter]
    /// A source that never ends.
    public var endless: Bool

    public init(typeID: String, summary: String, input: PluginPort?, output: PluginPort?,
                parameters: [PluginParameter], endless: Bool = false) {
        self.typeID = typeID
        self.summary = summary
        self.input = input
        self.output = output
        self.parameters = parameters
        self.endless = endless
    }
}

// MARK: - Instances

/// What a node learns when it is created (or checked): its parameter
/// values and channel counts. [main-thread]
public struct PluginNodeSetup {
    public let nodeID: String
    public let sampleRate: Double
    public let inputChannels: Int
    public let outputChannels: Int
    /// Values by parameter name; absent for optional parameters left out.
    public let numbers: [String: Double]
    public let strings: [String: String]

    public func number(_ name: String) -> Double? { numbers[name] }
    public func integer(_ name: String) -> Int? { numbers[name].map { Int($0) } }
    public func boolean(_ name: String) -> Bool? { numbers[name].map { $0 != 0 } }
    /// A choice by its text, or a string parameter.
    public func string(_ name: String) -> String? { strings[name] }
}

/// A refusal with a reason, from `init` or `activate`.
public struct PluginError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One block passed to `process`: a thin view of `agraph_process_t`.
/// Valid only during the call. [audio-thread]
public struct PluginBlock {
    public let raw: UnsafeMutablePointer<agraph_process_t>

    @inlinable public init(_ raw: UnsafeMutablePointer<agraph_process_t>) { self.raw = raw }

    @inlinable public var frames: Int { Int(raw.pointee.frames) }
    @inlinable public var inputChannels: Int { Int(raw.pointee.input_channels) }
    @inlinable public var outputChannels: Int { Int(raw.pointee.output_channels) }
    /// The samples of input channel `c`.
    @inlinable public func input(_ c: Int) -> UnsafePointer<Float> { raw.pointee.inputs[c]! }
    /// The samples of output channel `c`.
    @inlinable public func output(_ c: Int) -> UnsafeMutablePointer<Float> { raw.pointee.outputs[c]! }
    @inlinable public var inputValidFrames: Int { Int(raw.pointee.input_valid_frames) }
    @inlinable public var inputEnded: Bool { raw.pointee.input_ended != 0 }
    /// Sets the output state (sources; processors that change the length).
    @inlinable public func setOutput(validFrames: Int, ended: Bool) {
        raw.pointee.output_valid_frames = UInt32(validFrames)
        raw.pointee.output_ended = ended ? 1 : 0
    }
}

/// A node type written in Swift: its static description and its instance.
///
/// Threading follows `agraph_plugin.h`: `init`, `check`, `activate`,
/// `deactivate`, `latency` on the main thread; `process` and
/// `setParameter` on the audio thread, where they must not allocate, lock,
/// print or wait (keep state in stored properties and buffers made in
/// `activate`; no arrays growing, no strings, no existentials).
public protocol PluginNode: AnyObject {
    /// The node type, apart from any instance. [any thread]
    static var description: PluginNodeDescription { get }

    /// Checks a parameter combination beyond the static description; nil
    /// when fine, else a one-line reason. [main-thread]
    static func check(_ setup: PluginNodeSetup) -> String?

    /// Creates an instance (!active). [main-thread]
    /// - Throws: `PluginError` (its text is reported to the user).
    init(_ setup: PluginNodeSetup) throws

    /// Allocates what `process` needs. [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws

    /// Processes one block. [audio-thread & active]
    func process(_ block: PluginBlock)

    /// Changes live parameter `index` (its position in `parameters`).
    /// [audio-thread & active]
    func setParameter(_ index: Int, value: Double)

    /// Frames of delay. [main-thread & active]
    var latency: Int { get }

    /// Frees what `activate` allocated. [main-thread & active]
    func deactivate()
}

extension PluginNode {
    public static func check(_ setup: PluginNodeSetup) -> String? { nil }
    public func activate(sampleRate: Double, maxFrames: Int) throws {}
    public func setParameter(_ index: Int, value: Double) {}
    public var latency: Int { 0 }
    public func deactivate() {}
}

// MARK: - Export

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
    ///   - nodes: the node types, each a `PluginNode` class.
    /// [main-thread]
    public init(name: String, vendor: String, version: String, nodes: [any PluginNode.Type]) {
        descriptor = Self.makeDescriptor(name: name, vendor: vendor, version: version, nodes: nodes)
    }

    static func makeDescriptor(name: String, vendor: String, version: String,
                               nodes: [any PluginNode.Type]) -> UnsafePointer<agraph_plugin_t> {
        let types = UnsafeMutablePointer<UnsafePointer<agraph_node_type_t>?>.allocate(capacity: max(nodes.count, 1))
        for (i, node) in nodes.enumerated() { types[i] = UnsafePointer(makeNodeType(node)) }
        let p = UnsafeMutablePointer<agraph_plugin_t>.allocate(capacity: 1)
        p.initialize(to: agraph_plugin_t(
            abi: agraph_abi_version_t(major: UInt32(AGRAPH_PLUGIN_ABI_MAJOR), minor: UInt32(AGRAPH_PLUGIN_ABI_MINOR)),
            name: keep(name), vendor: keep(vendor), version: keep(version),
            node_type_count: UInt32(nodes.count), reserved0: 0,
            node_types: UnsafePointer(types), get_extension: nil))
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
        func array<T>(_ items: [T]) -> UnsafePointer<T>? {
            guard !items.isEmpty else { return nil }
            let p = UnsafeMutablePointer<T>.allocate(capacity: items.count)
            p.initialize(from: items, count: items.count)
            return UnsafePointer(p)
        }
        let inputs = d.input.map { [makePort($0)] } ?? []
        let outputs = d.output.map { [makePort($0)] } ?? []
        let params = d.parameters.map(makeParam)
        let box = Unmanaged.passRetained(TypeBox(node)).toOpaque()
        let t = UnsafeMutablePointer<agraph_node_type_t>.allocate(capacity: 1)
        t.initialize(to: agraph_node_type_t(
            type_id: keep(d.typeID), summary: keep(d.summary),
            domain: AGRAPH_DOMAIN_REALTIME.rawValue, flags: d.endless ? UInt32(AGRAPH_NODE_ENDLESS) : 0,
            input_count: UInt32(inputs.count), output_count: UInt32(outputs.count),
            inputs: array(inputs), outputs: array(outputs),
            param_count: UInt32(params.count), reserved0: 0, params: array(params),
            plugin_data: box,
            check: checkTrampoline, create: createTrampoline, activate: activateTrampoline,
            process: processTrampoline,
            set_parameter: d.parameters.contains(where: \.live) ? setParameterTrampoline : nil,
            latency: latencyTrampoline, deactivate: deactivateTrampoline, destroy: destroyTrampoline,
            get_extension: nil, input_codec: nil, output_layout: nil))
        return t
    }
}

// MARK: - Trampolines

/// The Swift type of a node type, kept in `agraph_node_type_t.plugin_data`.
final class TypeBox {
    let type: any PluginNode.Type
    init(_ type: any PluginNode.Type) { self.type = type }
}

/// An instance as the host sees it (`agraph_instance_t *`).
final class InstanceBox {
    let node: any PluginNode
    init(_ node: any PluginNode) { self.node = node }
}

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
    let s = PluginNodeSetup(nodeID: i.node_id.map { String(cString: $0) } ?? "", sampleRate: i.sample_rate,
                            inputChannels: Int(i.input_channels), outputChannels: Int(i.output_channels),
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
        return OpaquePointer(Unmanaged.passRetained(InstanceBox(node)).toOpaque())
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
    UInt32(clamping: instance(p).node.latency)
}

let deactivateTrampoline: @convention(c) (OpaquePointer?) -> Void = { p in
    instance(p).node.deactivate()
}

let destroyTrampoline: @convention(c) (OpaquePointer?) -> Void = { p in
    Unmanaged<InstanceBox>.fromOpaque(UnsafeRawPointer(p!)).release()
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
