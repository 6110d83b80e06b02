import AudioGraphCore

/// The type of a node parameter, as a graph file writes it.
public enum ParameterType: Sendable, Equatable {
    case number
    case integer
    case boolean
    case string
    /// One of a fixed set of strings.
    case choice([String])
    /// A file the node reads; relative paths resolve against the graph
    /// file's folder.
    case path
    /// A file the node writes (same resolution). Validation refuses an
    /// output path that is an input, another output, or the graph file.
    case outputPath
    case numberList
    case booleanList
    case stringList
    /// Channels of the input stream, each a 0-based index (an integer) or a
    /// label of the stream's layout (a string: "L", "LFE"); `range` bounds
    /// the indexes.
    case channelList
    /// Rows of numbers, an array of arrays (a mixing matrix); `range` bounds
    /// every element.
    case numberMatrix
    /// A whole number from 0 (an index; `range` bounds it) or one of these
    /// words (e.g. a stream: `1` or `"best"`). The value is a `.number` or
    /// a `.string`.
    case indexOrWord([String])
    /// An array of objects, each holding these fields (a playlist's items:
    /// `[{"path": "a.flac", "start": 1.5}, …]`). Every field is checked as a
    /// parameter of its own (type, range; required unless it has a default
    /// or is optional); other fields are refused.
    indirect case objectList([ParameterDescriptor])

    /// How the type reads in messages and in `agraph nodes`.
    public var name: String {
        switch self {
        case .number: "number"
        case .integer: "integer"
        case .boolean: "boolean"
        case .string: "string"
        case .choice(let options): "one of " + options.map { "\"\($0)\"" }.joined(separator: ", ")
        case .path: "path"
        case .outputPath: "path (written)"
        case .numberList: "array of numbers"
        case .booleanList: "array of booleans"
        case .stringList: "array of strings"
        case .channelList: "array of channel indexes or names"
        case .numberMatrix: "array of arrays of numbers"
        case .indexOrWord(let words): "index (0, 1, …) or " + words.map { "\"\($0)\"" }.joined(separator: ", ")
        case .objectList(let fields): "array of objects {" + fields.map(\.name).joined(separator: ", ") + "}"
        }
    }
}

/// One element of a `channelList`: a channel by position or by label.
public enum ChannelSelector: Sendable, Equatable, CustomStringConvertible {
    /// 0-based position in the stream.
    case index(Int)
    /// A label of the stream's layout (`ChannelLayout.channelLabels`).
    case name(String)

    public var description: String {
        switch self {
        case .index(let i): String(i)
        case .name(let s): "\"\(s)\""
        }
    }
}

/// A parameter value, after type checking.
public enum ParameterValue: Sendable, Equatable, CustomStringConvertible {
    case number(Double)
    case boolean(Bool)
    case string(String)
    case numberList([Double])
    case booleanList([Bool])
    case stringList([String])
    case channelList([ChannelSelector])
    case numberMatrix([[Double]])
    /// The objects of an `objectList`, each field by name.
    indirect case objectList([[String: ParameterValue]])

    public var description: String {
        switch self {
        case .number(let v): v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
        case .boolean(let b): String(b)
        case .string(let s): "\"\(s)\""
        case .numberList(let l): "[" + l.map { ParameterValue.number($0).description }.joined(separator: ", ") + "]"
        case .booleanList(let l): "[" + l.map(String.init).joined(separator: ", ") + "]"
        case .stringList(let l): "[" + l.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        case .channelList(let l): "[" + l.map(\.description).joined(separator: ", ") + "]"
        case .numberMatrix(let m): "[" + m.map { ParameterValue.numberList($0).description }.joined(separator: ", ") + "]"
        case .objectList(let l):
            "[" + l.map { o in "{" + o.keys.sorted().map { "\"\($0)\": \(o[$0]?.description ?? "")" }.joined(separator: ", ") + "}" }
                .joined(separator: ", ") + "]"
        }
    }
}

/// The static description of one parameter: enough to validate a graph and
/// to document the node without creating anything.
public struct ParameterDescriptor: Sendable, Equatable {
    public var name: String
    public var type: ParameterType
    /// Inclusive range for numbers, integers and number-list elements.
    public var range: ClosedRange<Double>?
    /// nil: the parameter is required (unless `optional`).
    public var defaultValue: ParameterValue?
    /// When true a missing value is allowed and stays absent (no default).
    public var optional: Bool
    /// Unit for display: "Hz", "dB", "dBFS", "s", "channels"…
    public var unit: String?
    public var summary: String
    /// Whether it may be changed while rendering (`node.param`).
    public var live: Bool

    public init(_ name: String, _ type: ParameterType, range: ClosedRange<Double>? = nil,
                default defaultValue: ParameterValue? = nil, optional: Bool = false,
                unit: String? = nil, live: Bool = false, _ summary: String) {
        self.name = name
        self.type = type
        self.range = range
        self.defaultValue = defaultValue
        self.optional = optional
        self.unit = unit
        self.summary = summary
        self.live = live
    }

    public var isRequired: Bool { defaultValue == nil && !optional }
}

/// The kind of data a port carries.
public enum PortKind: String, Sendable {
    case audio
}

/// One named port of a node type, as `agraph nodes TYPE` shows it.
public struct PortDescriptor: Sendable, Equatable {
    /// The name links use (`node:name`): letters, digits and '_'.
    public var name: String
    /// One line: what the port carries or accepts.
    public var summary: String

    public init(_ name: String, _ summary: String = "") {
        self.name = name
        self.summary = summary
    }

    /// Whether `name` can be a port name (letters, digits, '_'; not empty).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95
        }
    }
}

/// Which input ports a node has. Every input port takes exactly one link.
public enum InputPorts: Sendable {
    /// A source: no inputs.
    case none
    /// One input called `in`.
    case single
    /// `in0` … `inN-1`, N given by an integer parameter (or the length of a
    /// list parameter).
    case numbered(countParameter: String)
    /// Named inputs, in port order (e.g. `in` and `sidechain`).
    case named([PortDescriptor])
}

/// Which output ports a node has. An output may feed any number of inputs.
public enum OutputPorts: Sendable {
    /// A sink: no output.
    case none
    /// One output called `out` (every node type before several ports).
    case single
    /// `out0` … `outN-1`, N given by an integer parameter or the length of
    /// a list parameter (e.g. `split`'s `groups`).
    case numbered(countParameter: String)
    /// Named outputs, in port order. `defaultPort` is what a bare node id
    /// in a link's `from` means; nil: a link must name the port (unless
    /// there is only one).
    case named([PortDescriptor], defaultPort: String?)
}

/// Where a node's work runs.
public enum ExecutionDomain: String, Sendable {
    /// Entirely on the audio thread.
    case realtime
    /// Part of it on the worker thread, joined to the audio thread by a ring.
    case background
}

/// What a node type is: its ports and parameters, apart from any instance
/// (like a PipeWire/LADSPA descriptor). Validation needs nothing more.
public struct NodeDescriptor: Sendable {
    public enum Role: String, Sendable { case source, processor, sink }

    public var typeID: String
    public var role: Role
    public var summary: String
    public var inputs: InputPorts
    /// The output ports; `.single` (`out`) unless the type says otherwise,
    /// `.none` for sinks.
    public var outputs: OutputPorts
    public var parameters: [ParameterDescriptor]
    public var domain: ExecutionDomain
    /// Where the type comes from: "built-in" or a plugin's path.
    public var origin: String
    /// Codecs of compressed frames the input accepts; empty: PCM audio only.
    public var inputCodecs: [String]
    /// The node virtualizes for headphones (a binaural renderer): it
    /// refuses input already tagged `binaural`, so nothing is virtualized twice.
    public var virtualizes: Bool
    /// The node takes PCM input at a rate below the graph's (a rate island,
    /// docs/processing/rates.md): it does not depend on the rate and passes
    /// each block's valid frames on. Every other node refuses such input at
    /// validation.
    public var acceptsRateIslands: Bool

    /// - Parameters:
    ///   - outputs: nil: `.none` for a sink, else `.single` (`out`).
    public init(typeID: String, role: Role, summary: String, inputs: InputPorts,
                outputs: OutputPorts? = nil,
                parameters: [ParameterDescriptor], domain: ExecutionDomain = .realtime,
                origin: String = "built-in", inputCodecs: [String] = [], virtualizes: Bool = false,
                acceptsRateIslands: Bool = false) {
        self.typeID = typeID
        self.role = role
        self.summary = summary
        self.inputs = inputs
        self.outputs = outputs ?? (role == .sink ? .none : .single)
        self.parameters = parameters
        self.domain = domain
        self.origin = origin
        self.inputCodecs = inputCodecs
        self.virtualizes = virtualizes
        self.acceptsRateIslands = acceptsRateIslands
    }

    /// Whether an input of this node may receive `encoding`.
    public func accepts(_ encoding: StreamEncoding) -> Bool {
        switch encoding {
        case .pcm: inputCodecs.isEmpty
        case .frames(let codec): inputCodecs.contains(codec)
        }
    }

    /// Whether the node has an output port.
    public var hasOutput: Bool {
        if case .none = outputs { return false }
        return role != .sink
    }

    public func parameter(named name: String) -> ParameterDescriptor? {
        parameters.first { $0.name == name }
    }

    public func parameterIndex(named name: String) -> Int? {
        parameters.firstIndex { $0.name == name }
    }

    /// The files a node's parameters name, of `kind` (`.path`: read,
    /// `.outputPath`: written): parameters of that type, and fields of that
    /// type in object lists (a playlist's items), each with its JSON
    /// pointer tokens below `params` and the path as written.
    public func filePaths(_ params: NodeParameters, of kind: ParameterType) -> [(tokens: [String], path: String)] {
        var out: [(tokens: [String], path: String)] = []
        for p in parameters {
            if p.type == kind, let value = params.string(p.name) {
                out.append(([p.name], value))
            } else if case .objectList(let fields) = p.type, let list = params.objectList(p.name) {
                for (i, object) in list.enumerated() {
                    for f in fields where f.type == kind {
                        if case .string(let value)? = object[f.name] { out.append(([p.name, String(i), f.name], value)) }
                    }
                }
            }
        }
        return out
    }

    /// The input port names for the given parameters.
    public func inputPortNames(_ params: NodeParameters) -> [String] {
        switch inputs {
        case .none: []
        case .single: ["in"]
        case .numbered(let p): (0..<Self.count(p, params)).map { "in\($0)" }
        case .named(let ports): ports.map(\.name)
        }
    }

    /// The output port names for the given parameters.
    public func outputPortNames(_ params: NodeParameters) -> [String] {
        guard hasOutput else { return [] }
        switch outputs {
        case .none: return []
        case .single: return ["out"]
        case .numbered(let p): return (0..<Self.count(p, params)).map { "out\($0)" }
        case .named(let ports, _): return ports.map(\.name)
        }
    }

    /// The output a bare node id in a link's `from` means: the only output,
    /// or the declared default; nil when a link must name one.
    public func defaultOutputPort(_ params: NodeParameters) -> String? {
        let names = outputPortNames(params)
        if names.count == 1 { return names[0] }
        if case .named(_, let d?) = outputs, names.contains(d) { return d }
        return nil
    }

    /// A port count given by a parameter: an integer, or a list's length.
    static func count(_ parameter: String, _ params: NodeParameters) -> Int {
        switch params[parameter] {
        case .number?: max(params.integer(parameter) ?? 0, 0)
        case .numberList(let l)?: l.count
        case .booleanList(let l)?: l.count
        case .stringList(let l)?: l.count
        case .channelList(let l)?: l.count
        case .numberMatrix(let m)?: m.count
        case .objectList(let l)?: l.count
        default: 0
        }
    }
}

/// A node's parameters after validation: every given value type-checked and
/// in range, every missing one filled with its default.
///
/// Stored as one array of (name, value) sorted by name, looked up by binary
/// search, and the values left at their defaults in a table shared by
/// every node of the type (`Defaults`): a node has a few dozen parameters
/// at most and a graph may have tens of thousands of nodes (issue #24:
/// memory per node). `values` gives them all as a dictionary.
public struct NodeParameters: Sendable {
    struct Entry: Sendable {
        var name: String
        var value: ParameterValue
    }

    /// A type's default values, made once and shared by its nodes'
    /// parameters; immutable. [any-thread]
    public final class Defaults: Sendable {
        let entries: [Entry]
        public init(_ values: [String: ParameterValue]) {
            entries = values.map { Entry(name: $0.key, value: $0.value) }.sorted { $0.name < $1.name }
        }
    }

    /// Sorted by name, each name once.
    private var entries: [Entry]
    /// Values for the names `entries` lacks.
    private var defaults: Defaults?

    public init(_ values: [String: ParameterValue] = [:]) {
        entries = values.map { Entry(name: $0.key, value: $0.value) }.sorted { $0.name < $1.name }
        defaults = nil
    }

    /// `values`, and for every name they lack, its value in `defaults`.
    public init(_ values: [String: ParameterValue], defaults: Defaults) {
        self.init(values)
        self.defaults = defaults.entries.isEmpty ? nil : defaults
    }

    /// Every parameter by name (made on each read: read it once, not per
    /// lookup; `subscript(name:)` and the typed getters search in place).
    public var values: [String: ParameterValue] {
        get {
            var all = Dictionary(uniqueKeysWithValues: entries.lazy.map { ($0.name, $0.value) })
            for d in defaults?.entries ?? [] where all[d.name] == nil { all[d.name] = d.value }
            return all
        }
        set { self = NodeParameters(newValue) }
    }

    /// The names, sorted.
    public var names: [String] {
        guard let defaults else { return entries.map(\.name) }
        return Set(entries.map(\.name)).union(defaults.entries.map(\.name)).sorted()
    }

    public var isEmpty: Bool { entries.isEmpty && defaults == nil }
    public var count: Int { defaults == nil ? entries.count : names.count }

    private static func index(of name: String, in entries: [Entry]) -> Int? {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].name < name { lo = mid + 1 } else { hi = mid }
        }
        return lo < entries.count && entries[lo].name == name ? lo : nil
    }

    public subscript(name: String) -> ParameterValue? {
        get {
            if let i = Self.index(of: name, in: entries) { return entries[i].value }
            if let defaults, let i = Self.index(of: name, in: defaults.entries) { return defaults.entries[i].value }
            return nil
        }
        set {
            var all = values
            all[name] = newValue
            self = NodeParameters(all)
        }
    }

    public func number(_ name: String) -> Double? {
        if case .number(let v)? = self[name] { return v }
        return nil
    }
    public func integer(_ name: String) -> Int? {
        guard let v = number(name), v == v.rounded(), abs(v) < 1e15 else { return nil }
        return Int(v)
    }
    public func boolean(_ name: String) -> Bool? {
        if case .boolean(let v)? = self[name] { return v }
        return nil
    }
    public func string(_ name: String) -> String? {
        if case .string(let v)? = self[name] { return v }
        return nil
    }
    public func numberList(_ name: String) -> [Double]? {
        if case .numberList(let v)? = self[name] { return v }
        return nil
    }
    public func stringList(_ name: String) -> [String]? {
        if case .stringList(let v)? = self[name] { return v }
        return nil
    }
    public func booleanList(_ name: String) -> [Bool]? {
        if case .booleanList(let v)? = self[name] { return v }
        return nil
    }
    public func channelList(_ name: String) -> [ChannelSelector]? {
        if case .channelList(let v)? = self[name] { return v }
        return nil
    }
    public func numberMatrix(_ name: String) -> [[Double]]? {
        if case .numberMatrix(let v)? = self[name] { return v }
        return nil
    }
    public func objectList(_ name: String) -> [[String: ParameterValue]]? {
        if case .objectList(let v)? = self[name] { return v }
        return nil
    }
}
