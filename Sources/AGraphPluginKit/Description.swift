// The static description of a node type: parameters, ports, the type.


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

    /// One of `options`; the default is given by name. A live choice
    /// reaches `setParameter` as the index of the choice.
    public static func choice(_ name: String, _ options: [String], default value: String, live: Bool = false,
                              _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .choice(options), range: nil,
                        defaultNumber: Double(options.firstIndex(of: value) ?? 0),
                        defaultString: nil, unit: nil, live: live, optional: false, required: false, summary: summary)
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

/// An audio port (see `agraph_port_t`). With several ports in a direction
/// `name` is what links use (`node:sidechain`): letters, digits
/// and '_'; a lone port is `in` / `out` in graphs whatever its name.
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

    /// An output with `channels` channels (`.sameAsInput`: input port 0's).
    public static func output(_ name: String = "out", channels: PluginChannels = .sameAsInput) -> PluginPort {
        PluginPort(name: name, channels: channels, minChannels: 0, maxChannels: nil)
    }
}

/// The static description of a node type (see `agraph_node_type_t`).
public struct PluginNodeDescription: Sendable {
    public var typeID: String
    public var summary: String
    /// The input ports, in port order (empty: a source).
    public var inputs: [PluginPort]
    /// The output ports, in port order (empty: a sink).
    public var outputs: [PluginPort]
    public var parameters: [PluginParameter]
    /// A source that never ends.
    public var endless: Bool
    /// The node virtualizes: it renders for headphones
    /// (AGRAPH_NODE_VIRTUALIZES), so the host refuses binaural-tagged input
    /// to it. Name its output "binaural" in `outputLayout`.
    public var virtualizes: Bool

    /// The first input port, if any.
    public var input: PluginPort? { inputs.first }
    /// The first output port, if any.
    public var output: PluginPort? { outputs.first }

    /// A node with at most one input and one output.
    public init(typeID: String, summary: String, input: PluginPort?, output: PluginPort?,
                parameters: [PluginParameter], endless: Bool = false, virtualizes: Bool = false) {
        self.init(typeID: typeID, summary: summary, inputs: input.map { [$0] } ?? [],
                  outputs: output.map { [$0] } ?? [], parameters: parameters, endless: endless,
                  virtualizes: virtualizes)
    }

    /// A node with any number of ports (several in a direction: each
    /// named).
    public init(typeID: String, summary: String, inputs: [PluginPort], outputs: [PluginPort],
                parameters: [PluginParameter], endless: Bool = false, virtualizes: Bool = false) {
        self.typeID = typeID
        self.summary = summary
        self.inputs = inputs
        self.outputs = outputs
        self.parameters = parameters
        self.endless = endless
        self.virtualizes = virtualizes
    }
}
