import AudioGraphCore
import Foundation

/// What `agraph nodes lv2` and `agraph nodes lv2:URI` print. [main-thread]
public enum LV2Catalogue {
    /// Every installed plugin: name, URI, audio and control ports, and
    /// whether AudioGraph can host it (and why not).
    /// `search`: only the plugins whose name, URI or class holds it
    /// (any case).
    public static func list(search: String? = nil) -> String {
        var plugins = LV2World.shared.listing()
        let total = plugins.count
        if let search, !search.isEmpty {
            plugins = plugins.filter { d in
                [d.name, d.uri, d.className].contains { $0.range(of: search, options: .caseInsensitive) != nil }
            }
        }
        let matching = search.map { ", \(plugins.count) matching \"\($0)\"" } ?? ""
        var out = "LV2 plugins on LV2_PATH=\(LV2World.searchPath) (\(total)\(matching)); describe one with `agraph nodes lv2:URI`:\n"
        for d in plugins {
            let uri = d.uri
            let note = LV2PluginType.unhostable(d).map { "  [not hostable: \($0.words)]" } ?? ""
            out += "  \(d.name) <\(uri)>\n"
            out += "      audio \(d.audioInputs.count) in\(d.sideChainInputs.isEmpty ? "" : " + \(d.sideChainInputs.count) sidechain"), \(d.audioOutputs.count) out; "
            out += "\(d.controlInputs.count) parameter\(d.controlInputs.count == 1 ? "" : "s"), \(d.controlOutputs.count) reading\(d.controlOutputs.count == 1 ? "" : "s")"
            out += (d.latencyPort != nil ? "; reports latency" : "") + note + "\n"
        }
        return out
    }

    /// The plugin's ports and features, after its node type's description.
    public static func details(_ d: LV2PluginDescription) -> String {
        var out = "  LV2 plugin: \(d.name) <\(d.uri)>\(d.className.isEmpty ? "" : ", \(d.className)")\n  bundle: \(d.bundle)\n"
        func ports(_ title: String, _ list: [LV2Port]) {
            guard !list.isEmpty else { return }
            out += "  \(title): " + list.map { "\($0.symbol) (\($0.name))" }.joined(separator: ", ") + "\n"
        }
        ports("audio inputs (in)", d.audioInputs)
        ports("sidechain inputs (sidechain)", d.sideChainInputs)
        ports("audio outputs (out)", d.audioOutputs)
        if !d.controlOutputs.isEmpty {
            out += "  readings (get NODE.SYMBOL): " + d.controlOutputs.map { p in
                "\(p.symbol)\(p.unit.map { " [\($0)]" } ?? "")\(p.reportsLatency ? " (latency, compensated)" : "")"
            }.joined(separator: ", ") + "\n"
        }
        if !d.requiredFeatures.isEmpty { out += "  requires: " + d.requiredFeatures.joined(separator: ", ") + "\n" }
        return out
    }
}

/// LV2 state of a running graph's `lv2` nodes. [main-thread & !rendering]
public enum LV2State {
    /// The state of `node` (an `lv2` node's runtime node: `engine.node(id)`)
    /// as Turtle, for its `state` parameter: the plugin's own data and its
    /// port values. LV2 state's `save` has its own threading class: it may
    /// run beside the plugin's `run` (a live graph), not beside its
    /// instantiation functions. [main-thread | control-thread]
    public static func save(_ node: any RenderNode) throws -> String {
        ThreadRole.check(.main, .control)
        guard let n = node as? LV2Node else { throw LV2Error("not an lv2 node") }
        return try n.saveState()
    }
}
