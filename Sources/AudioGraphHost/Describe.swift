/// Text renderings of graphs and node types for the command line.
public enum Describe {
    /// Graphviz `dot` source of a validated graph: nodes by role, links
    /// labelled with the format they carry. A node with several input or
    /// output ports is drawn as a record with one field per port, and its
    /// links leave and enter those fields.
    public static func dot(_ g: ValidatedGraph) -> String {
        func escape(_ s: String) -> String { s.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"") }
        func q(_ s: String) -> String { "\"" + escape(s) + "\"" }
        var lines = ["digraph \(q(g.name)) {", "  rankdir=LR;", "  node [fontname=\"Helvetica\", fontsize=11];",
                     "  label=\(q("\(g.name) — \(Int(g.sampleRate)) Hz")); labelloc=t;"]
        for n in g.nodes {
            let shape = switch n.descriptor.role {
            case .source: "invhouse"
            case .processor: "box"
            case .sink: "house"
            }
            let style = n.descriptor.domain == .background ? ", style=dashed" : ""
            if isRecord(n) {
                // Record fields: {inputs} | name | {outputs}; `<p>` names a field.
                func field(_ prefix: String, _ names: [String]) -> String {
                    names.map { "<\(prefix)_\(recordEscape($0))> \(recordEscape($0))" }.joined(separator: "|")
                }
                var parts: [String] = []
                if !n.inputPorts.isEmpty { parts.append("{" + field("i", n.inputPorts) + "}") }
                parts.append(recordEscape(n.id) + "\\n" + recordEscape(n.descriptor.typeID))
                if !n.outputPorts.isEmpty { parts.append("{" + field("o", n.outputPorts) + "}") }
                // Escaped for a record already; with rankdir=LR the outer braces
                // put inputs, name and outputs side by side.
                lines.append("  \(q(n.id)) [label=\"{\(parts.joined(separator: "|"))}\", shape=record\(style)];")
            } else {
                // `\n` inside a dot string is Graphviz's own line break.
                lines.append("  \(q(n.id)) [label=\"\(escape(n.id))\\n\(escape(n.descriptor.typeID))\", shape=\(shape)\(style)];")
            }
        }
        for n in g.nodes {
            for (i, src) in n.inputs.enumerated() {
                let from = g.nodes[src]
                let port = i < n.inputSourcePorts.count ? n.inputSourcePorts[i] : 0
                let format = port < from.outputFormats.count ? from.outputFormats[port] : from.outputFormat
                let label = format.map { "\($0.channels) ch \($0.layout)" } ?? ""
                // A port field only where the node has several of that kind.
                let tail = from.outputPorts.count > 1 && port < from.outputPorts.count ? ":\(q("o_" + from.outputPorts[port]))" : ""
                let head = n.inputPorts.count > 1 && i < n.inputPorts.count ? ":\(q("i_" + n.inputPorts[i]))" : ""
                lines.append("  \(q(from.id))\(tail) -> \(q(n.id))\(head) [label=\(q(label))];")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether `dot` draws the node as a record of ports: it has several
    /// inputs or several outputs.
    static func isRecord(_ n: ValidatedGraph.Node) -> Bool {
        n.inputPorts.count > 1 || n.outputPorts.count > 1
    }

    /// Escapes the characters that mean something in a record label.
    static func recordEscape(_ s: String) -> String {
        var out = ""
        for c in s {
            if "{}|<>\\\" ".contains(c) { out.append("\\") }
            out.append(c)
        }
        return out
    }

    /// A node type's description for `agraph nodes TYPE`: every input and
    /// output port, then the parameters.
    public static func nodeType(_ d: NodeDescriptor) -> String {
        var out = "\(d.typeID) (\(d.role.rawValue), \(d.domain == .realtime ? "realtime" : "background reader/writer"); \(d.origin))\n"
        out += "  \(d.summary)\n"
        var named: [(String, [PortDescriptor], String?)] = []
        let inputs: String
        switch d.inputs {
        case .none: inputs = "none"
        case .single: inputs = "in"
        case .numbered(let p): inputs = "in0 … inN-1 (N = \(p))"
        case .named(let ports):
            inputs = ports.map(\.name).joined(separator: ", ")
            named.append(("input", ports, nil))
        }
        let outputs: String
        switch d.outputs {
        case _ where !d.hasOutput: outputs = "none"
        case .none: outputs = "none"
        case .single: outputs = "out"
        case .numbered(let p): outputs = "out0 … outN-1 (N = \(p)); links name one"
        case .named(let ports, let def):
            outputs = ports.map(\.name).joined(separator: ", ")
                + (ports.count > 1 ? (def.map { "; default \($0)" } ?? "; links name one") : "")
            named.append(("output", ports, def))
        }
        let multi = d.hasOutput && { if case .single = d.outputs { return false }; return true }()
        out += "  inputs: \(inputs)   \(multi ? "outputs" : "output"): \(outputs)\n"
        if d.virtualizes { out += "  virtualizes for headphones: binaural input is refused (nothing is virtualized twice)\n" }
        for (kind, ports, _) in named where ports.contains(where: { !$0.summary.isEmpty }) {
            for p in ports {
                out += "    \(kind) \(p.name)\(p.summary.isEmpty ? "" : ": \(p.summary)")\n"
            }
        }
        if d.parameters.isEmpty {
            out += "  parameters: none\n"
            return out
        }
        out += "  parameters:\n"
        for p in d.parameters {
            out += parameterLines(p, indent: "    ")
            if case .objectList(let fields) = p.type {
                for f in fields { out += parameterLines(f, indent: "        ") }
            }
        }
        return out
    }

    /// A parameter (or an object list's field): its facts, then its summary.
    static func parameterLines(_ p: ParameterDescriptor, indent: String) -> String {
        var facts = [p.type.name]
        if let r = p.range {
            facts.append("\(ParameterValue.number(r.lowerBound))…\(ParameterValue.number(r.upperBound))")
        }
        if let u = p.unit { facts.append(u) }
        if let def = p.defaultValue { facts.append("default \(def)") } else if p.optional { facts.append("optional") } else { facts.append("required") }
        if p.live { facts.append("live") }
        return "\(indent)\(p.name): \(facts.joined(separator: ", "))\n\(indent)  \(p.summary)\n"
    }

    /// One line per type for `agraph nodes`.
    public static func nodeList(_ registry: NodeRegistry) -> String {
        let width = registry.typeIDs.map(\.count).max() ?? 0
        return registry.types.map(\.descriptor).map { d in
            // Types not built in say where they come from (a plugin's path).
            d.typeID.padding(width) + "  " + d.role.rawValue.padding(9) + "  " + d.summary
                + (d.origin.hasPrefix("built-in") ? "" : "  [\(d.origin)]")
        }.joined(separator: "\n") + "\n"
    }
}

extension String {
    func replacingAll(_ a: String, _ b: String) -> String {
        split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
    func padding(_ n: Int) -> String { count >= n ? self : self + String(repeating: " ", count: n - count) }
}
