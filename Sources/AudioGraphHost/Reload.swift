import AudioGraphCore

/// What a hot reload changes: which nodes of the running graph are kept
/// (same object, state and buses), which become live parameter changes,
/// which are made anew, which go. Pure: no engine is touched.
///
/// A node is *kept* when the new file has a node of the same id and type,
/// the same inputs (by source id and port), the same input and output
/// formats, the same parameters apart from live ones, and every node
/// feeding it is kept too (so its inputs are kept buses: it needs no new
/// `prepare`). Live parameters that differ on a kept node become live
/// parameter changes. Any other node of the new file is *replaced* (same id
/// as before) or *added*; nodes of the running graph the new file lacks are
/// *removed*. A node downstream of a replaced one is therefore replaced
/// too (made anew, without its state); the report names it.
///
/// [any-thread]
public struct GraphDiff: Sendable {
    /// Ids of the new graph's nodes kept from the running one.
    public var kept: Set<String> = []
    /// New nodes whose id the running graph did not have, in file order.
    public var added: [String] = []
    /// New nodes made anew in place of a running node of the same id.
    public var replaced: [String] = []
    /// Running nodes the new graph does not have.
    public var removed: [String] = []
    /// Live parameter changes on kept nodes: address (`node.param`,
    /// `node.param[i]`) and value.
    public var parameterChanges: [(address: String, value: Double)] = []

    /// Whether nothing but live parameters changed (no engine is rebuilt).
    public var isParameterOnly: Bool { added.isEmpty && replaced.isEmpty && removed.isEmpty }

    public init(from old: ValidatedGraph, to new: ValidatedGraph) {
        var oldByID: [String: ValidatedGraph.Node] = [:]
        for n in old.nodes { oldByID[n.id] = n }
        let newIDs = Set(new.nodes.map(\.id))
        for n in new.nodes {
            guard let o = oldByID[n.id] else {
                added.append(n.id)
                continue
            }
            let sourcesKept = n.inputs.allSatisfy { kept.contains(new.nodes[$0].id) }
            let sameWiring = n.inputs.map { new.nodes[$0].id } == o.inputs.map { old.nodes[$0].id }
                && n.inputSourcePorts == o.inputSourcePorts
            if sourcesKept && sameWiring && n.descriptor.typeID == o.descriptor.typeID
                && n.inputFormats == o.inputFormats && n.outputFormats == o.outputFormats,
               let changes = Self.liveChanges(from: o, to: n) {
                kept.insert(n.id)
                parameterChanges += changes
            } else {
                replaced.append(n.id)
            }
        }
        removed = old.nodes.map(\.id).filter { !newIDs.contains($0) }
    }

    /// The live changes that turn `o`'s parameters into `n`'s, or nil when
    /// a parameter that is not live (or not expressible as a number)
    /// differs.
    static func liveChanges(from o: ValidatedGraph.Node, to n: ValidatedGraph.Node) -> [(address: String, value: Double)]? {
        var out: [(address: String, value: Double)] = []
        let names = Set(o.parameters.names).union(n.parameters.names)
        for name in names.sorted() {
            let a = o.parameters[name], b = n.parameters[name]
            if a == b { continue }
            guard let p = n.descriptor.parameters.first(where: { $0.name == name }), p.live, let a, let b else { return nil }
            switch (a, b) {
            case (.number, .number(let v)): out.append(("\(n.id).\(name)", v))
            case (.boolean, .boolean(let v)): out.append(("\(n.id).\(name)", v ? 1 : 0))
            case (.string, .string(let s)):
                guard case .choice(let options) = p.type, let i = options.firstIndex(of: s) else { return nil }
                out.append(("\(n.id).\(name)", Double(i)))
            case (.numberList(let x), .numberList(let y)) where x.count == y.count:
                for i in y.indices where x[i] != y[i] { out.append(("\(n.id).\(name)[\(i)]", y[i])) }
            case (.booleanList(let x), .booleanList(let y)) where x.count == y.count:
                for i in y.indices where x[i] != y[i] { out.append(("\(n.id).\(name)[\(i)]", y[i] ? 1 : 0)) }
            default: return nil
            }
        }
        return out
    }
}

/// What a hot reload did, for the status line and the caller.
public struct ReloadReport: Sendable, Equatable, CustomStringConvertible {
    public var added: [String]
    public var replaced: [String]
    public var removed: [String]
    /// Addresses of the live parameters changed (`mix.gains[1]`).
    public var parametersChanged: [String]
    /// How many nodes were kept with their state.
    public var keptCount: Int
    /// Whether an engine was built and swapped in (false: parameters only).
    public var swapped: Bool
    /// From the command to the callback taking the new engine, in seconds
    /// (0 without a swap; −1 when the callback had not taken it after 1 s,
    /// e.g. the server stopped: it takes it when it runs again).
    public var secondsToSwap: Double

    public init(diff: GraphDiff, swapped: Bool, secondsToSwap: Double = 0) {
        added = diff.added
        replaced = diff.replaced
        removed = diff.removed
        parametersChanged = diff.parameterChanges.map(\.address)
        keptCount = diff.kept.count
        self.swapped = swapped
        self.secondsToSwap = secondsToSwap
    }

    /// Names a list in a report shows before "… and N more".
    public static let namesShown = 5

    /// "reload: 1 node added (eq), 1 replaced (rev), 2 parameters changed
    /// (mix.gains, out.gain), 5 kept"; a long list shows its first
    /// `namesShown` names and how many more ("… and 9995 more").
    public var description: String {
        func part(_ list: [String], _ one: String, _ many: String) -> String? {
            guard !list.isEmpty else { return nil }
            let shown = list.count > Self.namesShown + 1 ? list.prefix(Self.namesShown) + ["… and \(list.count - Self.namesShown) more"] : list[...]
            return "\(list.count) \(list.count == 1 ? one : many) (\(shown.joined(separator: ", ")))"
        }
        // Elements of one list parameter count once: mix.gains[0], mix.gains[1] → mix.gains.
        var params: [String] = []
        var seen = Set<String>()
        for a in parametersChanged {
            let base = a.split(separator: "[").first.map(String.init) ?? a
            if seen.insert(base).inserted { params.append(base) }
        }
        let parts = [part(added, "node added", "nodes added"), part(replaced, "replaced", "replaced"),
                     part(removed, "removed", "removed"), part(params, "parameter changed", "parameters changed")]
            .compactMap { $0 } + ["\(keptCount) kept"]
        return "reload: " + parts.joined(separator: ", ")
    }
}

extension CompiledGraph {
    /// The live values set so far, by address (under a lock: a reload reads
    /// them on the owner thread, NSM and the console on theirs).
    /// [main-thread | owner-thread | control-thread]
    public var liveValues: [String: Double] { ThreadRole.check(.main, .owner, .control); return valuesLock.withLock { $0 } }

    /// Live changes that bring the kept nodes' live parameters to `diff`'s
    /// new graph values, where set live to something else before: a reloaded
    /// file is the truth. [main-thread | control-thread; a reload runs it on the owner thread]
    public func liveResets(for diff: GraphDiff, in next: CompiledGraph) -> [(address: String, value: Double)] {
        ThreadRole.check(.main, .control)
        let changed = Set(diff.parameterChanges.map(\.address))
        var out: [(address: String, value: Double)] = []
        for (address, v) in liveValues.sorted(by: { $0.key < $1.key }) where !changed.contains(address) {
            guard let node = address.split(separator: ".").first.map(String.init), diff.kept.contains(node),
                  let fileValue = try? next.value(address), fileValue != v else { continue }
            out.append((address, fileValue))
        }
        return out
    }

    /// The same engine under a new graph (a reload that changed live
    /// parameters only): addresses resolve against `graph`. [main-thread]
    public func withGraph(_ graph: ValidatedGraph) -> CompiledGraph {
        ThreadRole.check(.main)
        return CompiledGraph(graph: graph, engine: engine, notices: [])
    }
}
