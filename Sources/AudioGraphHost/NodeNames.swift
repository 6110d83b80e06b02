import AudioGraphNodeAPI

/// Messages that name a graph's nodes, kept short for a big graph.
enum NodeNames {
    /// "no node 'voice42x'; did you mean 'voice42'? nodes (10000): voice0,
    /// voice1, voice2, voice3, voice4, … and 9995 more": the closest id
    /// first when one is close (`closestMatch`), then the first
    /// `Reload.namesShown` ids (all of them when there are few).
    /// [main-thread | control-thread]
    static func noNode(_ id: String, in ids: [String]) -> String {
        let hint = closestMatch(to: id, in: ids).map { "did you mean '\($0)'? " } ?? ""
        return "no node '\(id)'; \(hint)\(summary(ids))"
    }

    /// "nodes: a, b, c", or "nodes (10000): a, b, c, d, e, … and 9995 more".
    static func summary(_ ids: [String], label: String = "nodes") -> String {
        let shown = ReloadReport.namesShown
        guard ids.count > shown + 1 else { return "\(label): \(ids.isEmpty ? "none" : ids.joined(separator: ", "))" }
        return "\(label) (\(ids.count)): \(ids.prefix(shown).joined(separator: ", ")), … and \(ids.count - shown) more"
    }
}
