/// Text renderings of graphs and node types for the command line.
public enum Describe {
    /// Graphviz `dot` source of a validated graph: nodes by role, links
    /// labelled with the format they carry.
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
            // `\n` inside a dot string is Graphviz's own line break.
            lines.append("  \(q(n.id)) [label=\"\(escape(n.id))\\n\(escape(n.descriptor.typeID))\", shape=\(shape)\(style)];")
        }
        for n in g.nodes {
            let ports = n.descriptor.inputPortNames(n.parameters)
            for (i, src) in n.inputs.enumerated() {
                let from = g.nodes[src]
                var label = from.outputFormat.map { "\($0.channels) ch \($0.layout)" } ?? ""
                if ports.count > 1 { label = "\(ports[i]): " + label }
                lines.append("  \(q(from.id)) -> \(q(n.id)) [label=\(q(label))];")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A node type's description for `agraph nodes TYPE`.
    public static func nodeType(_ d: NodeDescriptor) -> String {
        var out = "\(d.typeID) (\(d.role.rawValue), \(d.domain == .realtime ? "realtime" : "background reader/writer"); \(d.origin))\n"
        out += "  \(d.summary)\n"
        let inputs = switch d.inputs {
        case .none: "none"
        case .single: "in"
        case .numbered(let p): "in0 … inN-1 (N = \(p))"
        }
        out += "  inputs: \(inputs)   output: \(d.hasOutput ? "out" : "none")\n"
        if d.parameters.isEmpty {
            out += "  parameters: none\n"
            return out
        }
        out += "  parameters:\n"
        for p in d.parameters {
            var facts = [p.type.name]
            if let r = p.range {
                facts.append("\(ParameterValue.number(r.lowerBound))…\(ParameterValue.number(r.upperBound))")
            }
            if let u = p.unit { facts.append(u) }
            if let def = p.defaultValue { facts.append("default \(def)") } else if p.optional { facts.append("optional") } else { facts.append("required") }
            if p.live { facts.append("live") }
            out += "    \(p.name): \(facts.joined(separator: ", "))\n      \(p.summary)\n"
        }
        return out
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
