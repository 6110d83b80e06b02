import Foundation

/// A graph built in code: nodes with parameters as Swift literals, and
/// links between them. `build(registry:)` writes the graph document
/// (`jsonText`, a graph file) and validates it with the same validator as
/// a file, so a mistake gets the same diagnostic as in a file, with a JSON
/// pointer into `jsonText` (`/nodes/1/params/gain`).
///
/// ```swift
/// var b = GraphBuilder(name: "chain", sampleRate: 48000)
/// let tone = b.node("test-tone", id: "tone", params: ["frequency": 997, "level": -20, "duration": 1])
/// let gain = b.node("gain", id: "g", params: ["gain": -6])
/// b.link(tone, to: gain)
/// let out = b.node("file-out", params: ["path": "out.wav"])
/// b.link(gain, to: out)
/// let graph = try b.build(registry: .standard())
/// ```
///
/// A value type: copies are independent. [any-thread]
public struct GraphBuilder: Sendable {
    /// A node added to a builder: what `link` takes.
    public struct Node: Sendable, Hashable {
        /// The node's id in the document.
        public let id: String
        /// Its node type id (`"gain"`, `"lv2"`, a plugin's type).
        public let type: String
        /// Its index in the document's `"nodes"` (`/nodes/N`).
        public let index: Int
    }

    struct NodeEntry: Sendable {
        var id: String
        var type: String
        var params: [String: GraphValue]
        var description: String?
    }

    struct LinkEntry: Sendable {
        var from: String
        var to: String
    }

    /// The graph's `"name"`.
    public var name: String
    /// The graph's `"sampleRate"` in Hz; nil leaves it out (48000 offline).
    public var sampleRate: Double?
    /// The graph's `"latencyCompensation"`; nil leaves it out (true).
    public var latencyCompensation: Bool?
    /// The graph's `"description"`; nil leaves it out.
    public var description: String?
    private(set) var nodes: [NodeEntry] = []
    private(set) var links: [LinkEntry] = []

    /// [any-thread]
    public init(name: String, sampleRate: Double? = nil) {
        self.name = name
        self.sampleRate = sampleRate
    }

    /// Adds a node of type `type`.
    /// - Parameters:
    ///   - id: its id (letters, digits, `_`, `-`); nil: the type's name
    ///     and a number (`gain1`), unused in this builder.
    ///   - params: its parameters (`["gain": -6]`), checked by `build`
    ///     against the type like a file's.
    ///   - description: the node's `"description"`.
    /// [any-thread]
    @discardableResult
    public mutating func node(_ type: String, id: String? = nil, params: [String: GraphValue] = [:],
                              description: String? = nil) -> Node {
        let chosen = id ?? freshID(for: type)
        nodes.append(NodeEntry(id: chosen, type: type, params: params, description: description))
        return Node(id: chosen, type: type, index: nodes.count - 1)
    }

    /// Links `source`'s only output to `destination`'s only input
    /// (`{"from": "a", "to": "b"}` in a graph file). [any-thread]
    public mutating func link(_ source: Node, to destination: Node) {
        addLink(source, nil, destination, nil)
    }

    /// Links output port `sourcePort` of `source` to input port
    /// `destinationPort` of `destination`: `link(split, port: "out1", to:
    /// mixer, port: "in2")` is `{"from": "split:out1", "to": "mixer:in2"}`.
    /// [any-thread]
    public mutating func link(_ source: Node, port sourcePort: String, to destination: Node, port destinationPort: String) {
        addLink(source, sourcePort, destination, destinationPort)
    }

    /// Links output port `sourcePort` of `source` to `destination`'s only
    /// input. [any-thread]
    public mutating func link(_ source: Node, port sourcePort: String, to destination: Node) {
        addLink(source, sourcePort, destination, nil)
    }

    /// Links `source`'s only output to input port `destinationPort` of
    /// `destination` (`link(b, to: mixer, port: "in1")`). [any-thread]
    public mutating func link(_ source: Node, to destination: Node, port destinationPort: String) {
        addLink(source, nil, destination, destinationPort)
    }

    private mutating func addLink(_ source: Node, _ sourcePort: String?, _ destination: Node, _ destinationPort: String?) {
        links.append(LinkEntry(from: endpoint(source.id, sourcePort), to: endpoint(destination.id, destinationPort)))
    }

    /// Links a chain: each node to the next (their only ports). [any-thread]
    public mutating func chain(_ nodes: Node...) {
        for (a, b) in zip(nodes, nodes.dropFirst()) { link(a, to: b) }
    }

    /// The graph document: a graph file (`format` `agraph/1`), nodes in
    /// the order added, parameters sorted by name, links in the order made.
    /// A number that JSON cannot hold (NaN, an infinity) is written as
    /// `null`, which `build` reports. The built graph's `jsonText` is this,
    /// plus the sinks `build` adds to a graph that has none. [any-thread]
    public var jsonText: String { document().text }

    /// Writes `jsonText` and validates it with `registry`, as a graph file
    /// named `NAME.json` in `directory` (default: the working directory;
    /// relative paths resolve against it).
    ///
    /// A graph without any sink (a chain built to be rendered into
    /// memory, `tone → gain`) gets a `null` sink behind each node whose
    /// output is linked nowhere (`g-sink` behind `g`); the graph's
    /// `jsonText` shows them. A graph with a sink is written as built, and
    /// an output linked nowhere gets the file's warning.
    /// - Throws: `GraphError.invalid` with the validator's diagnostics,
    ///   whose JSON pointers point into `jsonText`.
    /// [main-thread; any thread of the program's own, not the audio or a worker thread]
    public func build(registry: NodeRegistry, directory: URL? = nil) throws(GraphError) -> Graph {
        ThreadRole.check(.main)
        let (text, nonFinite) = withSinks(registry).document()
        let file = fileName
        if !nonFinite.isEmpty {
            // JSON has no NaN or infinity: said where, as the validator would.
            let diagnostics = nonFinite.map { p in
                Diagnostic(file: file, pointer: p.pointer, nodeID: p.nodeID,
                           message: "\(p.value) is not a number a graph file can hold; give a finite number")
            }
            throw GraphError.invalid(file: file, diagnostics: diagnostics)
        }
        return try Graph(jsonText: text, registry: registry, file: file, directory: directory)
    }

    /// This builder, when none of its nodes is a sink, with a `null` sink
    /// behind each node of a known type whose output is linked nowhere.
    func withSinks(_ registry: NodeRegistry) -> GraphBuilder {
        let roles = nodes.map { registry[$0.type]?.descriptor.role }
        guard !roles.contains(.sink) else { return self }
        var b = self
        let feeding = Set(links.map { $0.from.split(separator: ":", maxSplits: 1).first.map(String.init) ?? $0.from })
        for (i, n) in nodes.enumerated() where roles[i] != nil && !feeding.contains(n.id) {
            var id = n.id + "-sink"
            while b.nodes.contains(where: { $0.id == id }) { id += "_" }
            b.nodes.append(NodeEntry(id: id, type: "null", params: [:], description: nil))
            b.links.append(LinkEntry(from: n.id, to: id))
        }
        return b
    }

    /// The name diagnostics give the document: `NAME.json`.
    public var fileName: String { name + ".json" }

    // MARK: - Writing the document

    struct NonFinite {
        var pointer: JSONPointer
        var nodeID: String?
        var value: Double
    }

    private func document() -> (text: String, nonFinite: [NonFinite]) {
        var top: [(String, JSONOut)] = [("format", .string(GraphValidator.formatVersion)), ("name", .string(name))]
        if let description { top.append(("description", .string(description))) }
        if let sampleRate {
            top.append(("sampleRate", sampleRate.isFinite ? .number(sampleRate) : .null))
        }
        if let latencyCompensation { top.append(("latencyCompensation", .bool(latencyCompensation))) }
        var bad: [NonFinite] = []
        if let sampleRate, !sampleRate.isFinite {
            bad.append(NonFinite(pointer: JSONPointer(["sampleRate"]), nodeID: nil, value: sampleRate))
        }
        var nodeList: [JSONOut] = []
        for (i, n) in nodes.enumerated() {
            var members: [(String, JSONOut)] = [("id", .string(n.id)), ("type", .string(n.type))]
            if !n.params.isEmpty {
                var params: [(String, JSONOut)] = []
                for key in n.params.keys.sorted() {
                    guard let v = n.params[key] else { continue }
                    switch v.json() {
                    case .success(let j): params.append((key, j))
                    case .failure(let e):
                        params.append((key, .null))
                        bad.append(NonFinite(pointer: JSONPointer(["nodes", String(i), "params", key] + e.tokens),
                                             nodeID: n.id, value: e.value))
                    }
                }
                members.append(("params", .object(params)))
            }
            if let d = n.description { members.append(("description", .string(d))) }
            nodeList.append(.object(members))
        }
        top.append(("nodes", .array(nodeList)))
        top.append(("links", .array(links.map { .object([("from", .string($0.from)), ("to", .string($0.to))]) })))
        return (JSONOut.object(top).rendered() + "\n", bad)
    }

    private func endpoint(_ id: String, _ port: String?) -> String {
        port.map { "\(id):\($0)" } ?? id
    }

    /// `type` made a valid id (other characters become `-`) and numbered.
    private func freshID(for type: String) -> String {
        let base = String(type.unicodeScalars.map { s -> Character in
            (s.properties.isAlphabetic && s.isASCII) || ("0"..."9").contains(s) || s == "_" || s == "-" ? Character(s) : "-"
        })
        let stem = base.isEmpty ? "node" : base
        var n = 1
        while nodes.contains(where: { $0.id == "\(stem)\(n)" }) { n += 1 }
        return "\(stem)\(n)"
    }
}
