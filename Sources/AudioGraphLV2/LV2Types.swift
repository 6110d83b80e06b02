import AudioGraphCore
import AudioGraphNodeAPI

// The `lv2` node type: `{"type": "lv2", "params": {"uri": "http://…", …}}`.
// The generic type knows only `uri`, `instances` and `state`; the validator
// asks it (`SpecialisingNodeType`) for the type of each node's plugin,
// `LV2PluginType`, whose parameters are the plugin's control input ports,
// named by port symbol.

/// How a plugin's control input port is a node parameter.
struct LV2Control: Sendable {
    /// The port's index in the plugin.
    var port: Int
    var parameter: ParameterDescriptor
    /// For an enumeration: the port value of each choice, in choice order.
    var choiceValues: [Float]?
    /// The plugin's default for the port.
    var defaultPortValue: Float = 0
    /// `lv2:sampleRate`: the parameter is in Hz; the port's bounds and
    /// default are fractions of the sample rate (these).
    var rateFractions: (min: Double?, max: Double?, defaultValue: Double?)?

    /// The port value of parameter value `v` (a choice's index, 0/1, a number).
    func portValue(_ v: Double) -> Float {
        if let values = choiceValues {
            let i = Int(v.rounded())
            return values.indices.contains(i) ? values[i] : values.first ?? 0
        }
        return Float(v)
    }

    /// The parameter value of port value `f` (the nearest choice).
    func parameterValue(_ f: Float) -> Double {
        if let values = choiceValues, !values.isEmpty {
            let i = values.indices.min { abs(values[$0] - f) < abs(values[$1] - f) } ?? 0
            return Double(i)
        }
        return Double(f)
    }
}

/// The generic `lv2` type, registered as `lv2`. [any-thread]
public struct LV2NodeType: SpecialisingNodeType {
    public init() {}

    static let common: [ParameterDescriptor] = [
        .init("uri", .string, "The plugin's URI (`agraph nodes lv2` lists those installed; LV2_PATH says where to look)."),
        .init("instances", .choice(["single", "per-channel"]), default: .string("single"),
              "single: one instance takes the stream (its channel count must be the plugin's audio inputs); per-channel: one instance of a mono plugin per channel."),
        .init("state", .string, optional: true,
              "The plugin's saved state (LV2 state as Turtle, as `LV2State.save(_:)` returns it): its own data and its port values, restored when the node is made; parameters written with other values than the plugin's defaults are set over it."),
    ]

    public let descriptor = NodeDescriptor(
        typeID: "lv2", role: .processor,
        summary: "An LV2 plugin, hosted through lilv: its control input ports are parameters (by port symbol, live), its control outputs readings; `agraph nodes lv2:URI` describes one plugin.",
        inputs: .single, parameters: LV2NodeType.common, origin: "built-in (lilv)")

    public var specialisingParameter: String { "uri" }

    public func specialised(for value: String) throws -> any NodeType {
        try LV2PluginType(plugin: LV2World.shared.describe(value))
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        c.error(parameter: "uri", "no plugin chosen")
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        throw LV2Error("an lv2 node needs its plugin's type (the validator gives it)")
    }
}

/// The type of one plugin's nodes. [any-thread]
public struct LV2PluginType: NodeType {
    public let plugin: LV2PluginDescription
    public let descriptor: NodeDescriptor
    let controls: [LV2Control]

    /// Throws when AudioGraph cannot host the plugin: a required feature it
    /// does not give (named), a description lilv finds broken, no audio
    /// input or output.
    public init(plugin: LV2PluginDescription) throws(LV2Error) {
        self.plugin = plugin
        if let why = Self.unhostable(plugin) { throw LV2Error(why.sentence) }
        var controls: [LV2Control] = []
        let reserved = Set(LV2NodeType.common.map(\.name))
        for port in plugin.controlInputs where !reserved.contains(port.symbol) {
            controls.append(Self.control(port))
        }
        self.controls = controls
        let sidechain = !plugin.sideChainInputs.isEmpty
        descriptor = NodeDescriptor(
            typeID: "lv2", role: .processor,
            summary: "\(plugin.name)\(plugin.className.isEmpty ? "" : " (\(plugin.className))"), LV2 plugin <\(plugin.uri)>: \(plugin.audioInputs.count) audio in, \(plugin.audioOutputs.count) out\(sidechain ? ", \(plugin.sideChainInputs.count) sidechain" : "")\(plugin.latencyPort != nil ? "; reports its latency" : "").",
            inputs: sidechain ? .named([PortDescriptor("in", "the stream the plugin processes"),
                                        PortDescriptor("sidechain", "the plugin's sidechain input")]) : .single,
            parameters: LV2NodeType.common + controls.map(\.parameter),
            origin: plugin.bundle)
    }

    /// Why AudioGraph cannot host `plugin`: in a few words (for `agraph
    /// nodes lv2`) and in a sentence (the error); nil when it can.
    public static func unhostable(_ plugin: LV2PluginDescription) -> (words: String, sentence: String)? {
        let missing = plugin.missingFeatures
        if !missing.isEmpty {
            let named = missing.map { "<\($0)>" }.joined(separator: ", ")
            return ("requires \(named)",
                    "the LV2 plugin \"\(plugin.uri)\" (\(plugin.name)) is unavailable: it requires the host feature\(missing.count == 1 ? "" : "s") \(named), which AudioGraph does not give (it gives \(LV2URI.givenFeatures.sorted().joined(separator: ", ")))")
        }
        if !plugin.verified {
            return ("broken description",
                    "the LV2 plugin \"\(plugin.uri)\" has a broken description (lilv could not verify \(plugin.bundle): a port or the binary is missing or malformed)")
        }
        if plugin.audioInputs.isEmpty || plugin.audioOutputs.isEmpty {
            return ("no audio input or output",
                    "the LV2 plugin \"\(plugin.uri)\" (\(plugin.name)) has \(plugin.audioInputs.count) audio input(s) and \(plugin.audioOutputs.count) output(s): AudioGraph hosts effects (audio in and out), not instruments or analysers without audio output")
        }
        return nil
    }

    /// A port value as a parameter value: the decimal the TTL wrote
    /// (0.0001, not 9.999999747378752e-05).
    static func decimal(_ f: Float) -> Double { Double(String(describing: f)) ?? Double(f) }

    static func control(_ port: LV2Port) -> LV2Control {
        var c = makeControl(port)
        c.defaultPortValue = port.defaultValue ?? port.minimum ?? 0
        return c
    }

    private static func makeControl(_ port: LV2Port) -> LV2Control {
        let lo = port.minimum.map(decimal), hi = port.maximum.map(decimal)
        if port.isSampleRate && !port.isToggle && !port.isEnumeration {
            // In Hz: the bounds depend on the graph's rate (checked in `resolve`).
            let bounds = [lo.map { "\($0) × rate" }, hi.map { "\($0) × rate" }].compactMap { $0 }.joined(separator: " … ")
            let def = (port.defaultValue ?? port.minimum).map(decimal)
            var c = LV2Control(port: port.index, parameter: .init(port.symbol, .number, optional: true, unit: "Hz", live: true,
                "\(port.name), in Hz (the plugin's range: \(bounds.isEmpty ? "any" : bounds)\(def.map { "; default \($0) × rate" } ?? ""))"))
            c.rateFractions = (lo, hi, def)
            return c
        }
        let range: ClosedRange<Double>? = if let lo, let hi, lo <= hi, lo.isFinite, hi.isFinite { lo...hi } else { nil }
        let def = port.defaultValue ?? port.minimum ?? 0
        let summary = port.name
        if port.isToggle {
            return LV2Control(port: port.index, parameter: .init(port.symbol, .boolean, default: .boolean(def > 0), live: true, summary))
        }
        if port.isEnumeration, !port.scalePoints.isEmpty {
            var labels: [String] = []
            for p in port.scalePoints {
                var l = p.label
                var n = 2
                while labels.contains(l) { l = "\(p.label) (\(n))"; n += 1 }
                labels.append(l)
            }
            let values = port.scalePoints.map(\.value)
            let i = values.indices.min { abs(values[$0] - def) < abs(values[$1] - def) } ?? 0
            return LV2Control(port: port.index, parameter: .init(port.symbol, .choice(labels), default: .string(labels[i]), live: true, summary),
                              choiceValues: values)
        }
        return LV2Control(port: port.index, parameter: .init(port.symbol, port.isInteger ? .integer : .number, range: range,
                                                              default: .number(decimal(def)), unit: port.unit, live: true, summary))
    }

    /// Whether `v` Hz is outside the range of a port in Hz (`lv2:sampleRate`:
    /// its bounds are fractions of the rate); nil for other ports.
    static func rateProblem(_ control: LV2Control, _ v: Double, sampleRate: Double) -> String? {
        guard let f = control.rateFractions else { return nil }
        let lo = f.min.map { $0 * sampleRate }, hi = f.max.map { $0 * sampleRate }
        if let lo, v < lo - 1e-9 || (hi.map { v > $0 + 1e-9 } ?? false) {
            return "\(v) Hz is out of the plugin's range \(lo)…\(hi.map { "\($0)" } ?? "") Hz at \(Int(sampleRate)) Hz"
        } else if let hi, v > hi + 1e-9 {
            return "\(v) Hz is above the plugin's maximum \(hi) Hz at \(Int(sampleRate)) Hz"
        }
        return nil
    }

    /// A live change of a port in Hz is checked against the plugin's range
    /// at the graph's rate, as the file's value is in `resolve`.
    public func liveValueProblem(parameter: String, element: Int?, value: Double, parameters: NodeParameters,
                                 sampleRate: Double) -> String? {
        guard let control = controls.first(where: { $0.parameter.name == parameter }) else { return nil }
        return Self.rateProblem(control, value, sampleRate: sampleRate)
    }

    /// `get` of a port in Hz the graph leaves out: the plugin's default at
    /// the graph's rate, as the node sets it.
    public func effectiveValue(parameter: String, element: Int?, parameters: NodeParameters, sampleRate: Double) -> Double? {
        controls.first { $0.parameter.name == parameter }?.rateFractions?.defaultValue.map { $0 * sampleRate }
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        // At validation, not first at render: with the parameter's pointer.
        if let text = c.parameters.string("state"), !text.isEmpty,
           let problem = LV2World.shared.stateProblem(text, plugin: plugin.uri) {
            c.error(parameter: "state", problem)
        }
        for control in controls {
            guard let v = c.parameters.number(control.parameter.name),
                  let problem = Self.rateProblem(control, v, sampleRate: c.sampleRate) else { continue }
            c.error(parameter: control.parameter.name, problem)
        }
        guard let input = c.input else { return nil }
        let ins = plugin.audioInputs.count, outs = plugin.audioOutputs.count
        let perChannel = c.parameters.string("instances") == "per-channel"
        if perChannel {
            guard ins == 1 && outs == 1 else {
                c.error(parameter: "instances", "per-channel runs one instance per channel of a mono plugin; \(plugin.name) has \(ins) audio input(s) and \(outs) output(s): use \"single\"")
                return nil
            }
            if !plugin.sideChainInputs.isEmpty {
                c.error(parameter: "instances", "per-channel does not take a sidechain; use \"single\"")
                return nil
            }
            return StreamFormat(channels: input.channels, sampleRate: c.sampleRate, layout: input.layout,
                                surroundsAreBack: input.surroundsAreBack)
        }
        guard input.channels == ins else {
            let hint = ins == 1 ? "; for a mono plugin on this stream set \"instances\": \"per-channel\"" : "; bring the stream to \(ins) channel(s) first (channel-map, downmix)"
            c.error(input: 0, "\(plugin.name) takes \(ins) audio channel(s); the stream has \(input.channels)\(hint)")
            return nil
        }
        if !plugin.sideChainInputs.isEmpty, c.inputFormats.count > 1, let side = c.inputFormats[1], side.channels != plugin.sideChainInputs.count {
            c.error(input: 1, "\(plugin.name)'s sidechain takes \(plugin.sideChainInputs.count) channel(s); the stream has \(side.channels)")
            return nil
        }
        return StreamFormat(channels: outs, sampleRate: c.sampleRate, layout: outs == input.channels ? input.layout : nil,
                            surroundsAreBack: outs == input.channels && input.surroundsAreBack)
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        let perChannel = c.parameters.string("instances") == "per-channel"
        // The parameters that differ from the plugin's defaults: they are
        // set over what a restored `state` holds (the others keep it).
        var values: [Int: Float] = [:]
        for control in controls {
            var v: Float?
            if let f = control.rateFractions {
                let hz = c.parameters.number(control.parameter.name) ?? f.defaultValue.map { $0 * c.sampleRate }
                if let hz { values[control.port] = Float(hz) }
                continue
            }
            if let n = c.parameters.number(control.parameter.name) {
                v = control.choiceValues == nil ? Float(n) : control.portValue(n)
            } else if let b = c.parameters.boolean(control.parameter.name) {
                v = b ? 1 : 0
            } else if let s = c.parameters.string(control.parameter.name), case .choice(let options) = control.parameter.type,
                      let i = options.firstIndex(of: s) {
                v = control.portValue(Double(i))
            }
            if let v, v != control.defaultPortValue { values[control.port] = v }
        }
        let channels = c.inputFormats.first?.channels ?? plugin.audioInputs.count
        return LV2Node(nodeID: c.nodeID, plugin: plugin, controls: controls, descriptor: descriptor,
                       instanceCount: perChannel ? channels : 1, initialValues: values,
                       state: c.parameters.string("state"), sampleRate: c.sampleRate)
    }
}
