import AudioGraphCore
import OrderedCollections
#if canImport(Glibc)
import Glibc
#endif

/// Checks a graph file against the format and the node types: everything
/// that can be known before running. Reports every problem of a file, each
/// with its JSON pointer, position and node.
public struct GraphValidator: Sendable {
    /// The format string this version reads.
    public static let formatVersion = "agraph/1"
    public static let topLevelKeys = ["format", "name", "sampleRate", "latencyCompensation", "threads", "nodes", "links", "description"]
    public static let nodeKeys = ["id", "type", "params", "description"]
    public static let linkKeys = ["from", "to"]
    public static let sampleRateRange: ClosedRange<Double> = 8000...384_000
    public static let defaultSampleRate = 48000.0

    public let registry: NodeRegistry
    /// The rate a graph without `"sampleRate"` runs at: the default, or a
    /// live server's rate (`ValidatedGraph.revalidated(sampleRate:)`).
    public var sampleRateWhenOmitted: Double

    public init(registry: NodeRegistry, sampleRateWhenOmitted: Double = GraphValidator.defaultSampleRate) {
        self.registry = registry
        self.sampleRateWhenOmitted = sampleRateWhenOmitted
    }

    /// Reads and validates the graph file at `path`: a regular file of at
    /// most `FileChecks.maximumGraphFileBytes`. [main-thread | control-thread]
    public func validate(file path: String) -> Result<ValidatedGraph, GraphErrors> {
        ThreadRole.check(.main, .control)
        return validate(file: path, overrides: [])
    }

    /// The bytes of the graph file at `path` (a regular file of at most
    /// `FileChecks.maximumGraphFileBytes`), or why not. [main-thread]
    static func readGraphFile(_ path: String) -> Result<[UInt8], GraphErrors> {
        do {
            return .success(try FileChecks.readRegularFile(path, maximumBytes: FileChecks.maximumGraphFileBytes))
        } catch {
            return .failure(GraphErrors([Diagnostic(file: path, pointer: .root,
                message: "cannot read the graph file: \(error.reason)")]))
        }
    }

    /// Reads and validates the graph file at `path`, its document changed
    /// by `overrides` first (`--set`; see `ParameterOverride`). [main-thread | control-thread]
    public func validate(file path: String, overrides: [ParameterOverride]) -> Result<ValidatedGraph, GraphErrors> {
        ThreadRole.check(.main, .control)
        let bytes: [UInt8]
        switch Self.readGraphFile(path) {
        case .success(let b): bytes = b
        case .failure(let e): return .failure(e)
        }
        let absolute = GraphPaths.resolve(path, against: GraphPaths.currentDirectory())
        return validate(bytes: bytes, file: path, directory: GraphPaths.folder(of: absolute),
                        graphPath: GraphPaths.canonical(absolute), overrides: overrides)
    }

    /// Validates a graph document held in memory.
    /// - Parameters:
    ///   - file: the name used in diagnostics.
    ///   - directory: where relative paths in the graph resolve.
    ///   - graphPath: the graph file's own path, when it is a file: outputs
    ///     may not overwrite it.
    /// [main-thread | control-thread]
    public func validate(bytes: [UInt8], file: String, directory: String,
                         graphPath: String? = nil) -> Result<ValidatedGraph, GraphErrors> {
        ThreadRole.check(.main, .control)
        return validate(bytes: bytes, file: file, directory: directory, graphPath: graphPath, overrides: [])
    }

    /// Validates a graph document held in memory, changed by `overrides`.
    /// - Parameters:
    ///   - file: the name used in diagnostics.
    ///   - directory: where relative paths in the graph resolve.
    ///   - graphPath: the graph file's own path, when it is a file: outputs
    ///     may not overwrite it.
    ///   - overrides: parameter values that replace the document's before
    ///     validation (`--set`); problems they cause say so.
    /// [main-thread | control-thread]
    public func validate(bytes: [UInt8], file: String, directory: String, graphPath: String?,
                         overrides: [ParameterOverride]) -> Result<ValidatedGraph, GraphErrors> {
        ThreadRole.check(.main, .control)
        let document: OverriddenDocument
        switch parse(bytes, file: file, overrides: overrides) {
        case .success(let d): document = d
        case .failure(let errors): return .failure(errors)
        }
        let run = ValidationRun(file: file, directory: directory, root: document.root, registry: registry)
        run.graphPath = graphPath
        run.sampleRateWhenOmitted = sampleRateWhenOmitted
        let graph = run.validate()
        let diagnostics = document.problems + run.diagnostics.map { document.attributed($0) }
        if let graph, !diagnostics.contains(where: { $0.severity == .error }) {
            var g = graph
            g.warnings = diagnostics
            if !g.sampleRateIsExplicit {
                g.source = .init(bytes: bytes, registry: registry, graphPath: graphPath, overrides: overrides)
            }
            return .success(g)
        }
        return .failure(GraphErrors(diagnostics))
    }
}

/// One validation pass over one document; collects diagnostics.
final class ValidationRun {
    let file: String
    let directory: String
    let root: JSONValue
    let registry: NodeRegistry
    /// The canonical path of the graph file itself, if it is a file.
    var graphPath: String?
    /// The rate when the file gives none.
    var sampleRateWhenOmitted = GraphValidator.defaultSampleRate
    private(set) var diagnostics: [Diagnostic] = []
    /// Each type's default parameter values, shared by its nodes.
    private var defaultTables: [String: NodeParameters.Defaults] = [:]

    init(file: String, directory: String, root: JSONValue, registry: NodeRegistry) {
        self.file = file
        self.directory = directory
        self.root = root
        self.registry = registry
    }

    func error(_ pointer: JSONPointer, node: String? = nil, _ message: String) {
        diagnostics.append(Diagnostic(.error, file: file, pointer: pointer, location: location(of: pointer),
                                      nodeID: node, message: message))
    }

    func warning(_ pointer: JSONPointer, node: String? = nil, _ message: String) {
        diagnostics.append(Diagnostic(.warning, file: file, pointer: pointer, location: location(of: pointer),
                                      nodeID: node, message: message))
    }

    /// The position of the value at `pointer`, or of its nearest ancestor.
    private func location(of pointer: JSONPointer) -> SourceLocation? {
        var tokens = pointer.tokens
        while true {
            if let v = root.value(at: JSONPointer(tokens)) { return v.location }
            if tokens.isEmpty { return nil }
            tokens.removeLast()
        }
    }

    /// A node as read from the file, before ordering.
    struct ParsedNode {
        var index: Int
        var id: String
        var type: (any NodeType)?
        var parameters: NodeParameters
        /// The parameters the file writes, valid or not.
        var written: Set<String> = []
        var pointer: JSONPointer
        var portNames: [String]
        /// The output port names (empty for a sink).
        var outputNames: [String] = []
        /// Per input port: (source node index, its output port, link pointer).
        var feeds: [Int: (source: Int, sourcePort: Int, link: JSONPointer)] = [:]
        /// Links leaving each output port.
        var consumers: [Int] = []
        /// The parameter that counts its input (output) ports was wrong or
        /// missing, an error already said so: its ports are not known, and
        /// links to (from) it are not checked against them.
        var inputsUnknown = false
        var outputsUnknown = false
    }

    func validate() -> ValidatedGraph? {
        guard let top = root.object else {
            error(.root, "a graph file is a JSON object with \"format\", \"nodes\" and \"links\"; found \(root.typeName)")
            return nil
        }
        for key in top.keys where !GraphValidator.topLevelKeys.contains(key) {
            let hint = closestMatch(to: key, in: GraphValidator.topLevelKeys).map { " (did you mean \"\($0)\"?)" } ?? ""
            error(JSONPointer.root.appending(key), "unknown key \"\(key)\"\(hint); allowed: \(GraphValidator.topLevelKeys.joined(separator: ", "))")
        }
        // format
        let formatPointer = JSONPointer.root.appending("format")
        switch top["format"]?.string {
        case GraphValidator.formatVersion: break
        case .some(let other): error(formatPointer, "unsupported format \"\(other)\"; this version reads \"\(GraphValidator.formatVersion)\"")
        case .none:
            if top["format"] == nil {
                error(formatPointer, "missing \"format\": add \"format\": \"\(GraphValidator.formatVersion)\"")
            } else {
                error(formatPointer, "\"format\" must be the string \"\(GraphValidator.formatVersion)\"")
            }
        }
        // name
        var name = file.split(separator: "/").last.map { String($0.split(separator: ".").first ?? $0) } ?? "agraph"
        if let n = top["name"] {
            if let s = n.string, !s.isEmpty { name = s } else { error(JSONPointer.root.appending("name"), "\"name\" must be a non-empty string") }
        }
        // sample rate
        var sampleRate = sampleRateWhenOmitted
        let sampleRateIsExplicit = top["sampleRate"] != nil
        if let r = top["sampleRate"] {
            let p = JSONPointer.root.appending("sampleRate")
            if let v = r.number, r.integer != nil, GraphValidator.sampleRateRange.contains(v) {
                sampleRate = v
            } else {
                error(p, "\"sampleRate\" must be an integer number of Hz from 8000 to 384000 (e.g. 48000); found \(r.typeName == "string" ? "a string" : ParameterCheck.describe(r))")
            }
        }
        // latency compensation
        var latencyCompensation = true
        if let l = top["latencyCompensation"] {
            if let b = l.bool { latencyCompensation = b } else {
                error(JSONPointer.root.appending("latencyCompensation"), "\"latencyCompensation\" must be true (the default: paths of different latency are aligned where they meet) or false; found \(ParameterCheck.describe(l))")
            }
        }
        var threads = GraphThreads.count(1)
        if let t = top["threads"] {
            if let n = t.integer, let v = GraphThreads(word: String(n)) {
                threads = v
            } else if let w = t.string, let v = GraphThreads(word: w) {
                threads = v
            } else {
                error(JSONPointer.root.appending("threads"), "\"threads\" must be \(GraphThreads.expected); found \(ParameterCheck.describe(t))")
            }
        }
        if let d = top["description"], d.string == nil {
            error(JSONPointer.root.appending("description"), "\"description\" must be a string")
        }

        // nodes
        var nodes: [ParsedNode] = []
        var idIndex: [String: Int] = [:]
        let nodesPointer = JSONPointer.root.appending("nodes")
        if let list = top["nodes"]?.array {
            if list.isEmpty { error(nodesPointer, "the graph has no nodes") }
            for (i, value) in list.enumerated() {
                if let node = parseNode(value, index: i, pointer: nodesPointer.appending(i), seen: idIndex) {
                    if idIndex[node.id] == nil { idIndex[node.id] = nodes.count }
                    nodes.append(node)
                }
            }
        } else {
            error(nodesPointer, top["nodes"] == nil ? "missing \"nodes\": a list of node objects" : "\"nodes\" must be an array of node objects")
        }

        // links
        var links: [ValidatedGraph.Link] = []
        let linksPointer = JSONPointer.root.appending("links")
        // Nodes named by a rejected link: their "not connected" and "goes
        // nowhere" follow from that error and are not reported again.
        var touchedByBadLink = Set<String>()
        if let list = top["links"]?.array {
            links.reserveCapacity(list.count)
            for (i, value) in list.enumerated() {
                if let link = parseLink(value, pointer: linksPointer.appending(i), nodes: &nodes, ids: idIndex) {
                    links.append(link)
                } else if let o = value.object {
                    for key in ["from", "to"] {
                        if let text = o[key]?.string { touchedByBadLink.insert(Self.endpoint(text).node) }
                    }
                }
            }
        } else if top["links"] != nil {
            error(linksPointer, "\"links\" must be an array of {\"from\", \"to\"} objects")
        } else if nodes.count > 1 {
            error(linksPointer, "missing \"links\": a list of {\"from\": \"node\", \"to\": \"node:port\"} objects")
        }

        // every input fed; outputs used
        // (A duplicate id's second node is reported as such, not as unconnected.)
        for (k, node) in nodes.enumerated() where node.type != nil && !touchedByBadLink.contains(node.id) && idIndex[node.id] == k {
            for (port, portName) in node.portNames.enumerated() where node.feeds[port] == nil {
                error(node.pointer, node: node.id, "input port '\(portName)' is not connected: add a link {\"from\": \"…\", \"to\": \"\(node.id):\(portName)\"}")
            }
            if node.outputNames.count == 1, node.consumers.first == 0 {
                warning(node.pointer, node: node.id, "the output of '\(node.id)' goes nowhere")
            } else if node.outputNames.count > 1 {
                let unused = node.outputNames.indices.filter { node.consumers[$0] == 0 }.map { node.outputNames[$0] }
                if unused.count == node.outputNames.count {
                    warning(node.pointer, node: node.id, "the outputs of '\(node.id)' (\(unused.joined(separator: ", "))) go nowhere")
                } else if !unused.isEmpty {
                    warning(node.pointer, node: node.id, "output\(unused.count == 1 ? "" : "s") \(unused.map { "'\(node.id):\($0)'" }.joined(separator: ", ")) of '\(node.id)' go\(unused.count == 1 ? "es" : "") nowhere")
                }
            }
        }
        // a sink
        if !nodes.isEmpty, !nodes.contains(where: { $0.type.map { !$0.descriptor.hasOutput } ?? false }),
           !nodes.contains(where: { $0.type == nil }) {
            let sinks = registry.types.filter { !$0.descriptor.hasOutput }.map(\.descriptor.typeID)
            error(nodesPointer, "the graph has no sink: its audio goes nowhere; add one of: \(sinks.joined(separator: ", "))")
        }

        // order; cycles
        let order = topologicalOrder(nodes, links: linksPointer)

        // formats
        /// Per node: the format of each output port (nil where unknown).
        var formats: [Int: [StreamFormat?]] = [:]
        var resolved: [Int: (inputs: [StreamFormat?], outputs: [StreamFormat?])] = [:]
        for i in order {
            let node = nodes[i]
            guard let type = node.type, !node.inputsUnknown, !node.outputsUnknown else { continue }
            let inputFormats: [StreamFormat?] = node.portNames.indices.map { port in
                guard let feed = node.feeds[port], let ports = formats[feed.source], feed.sourcePort < ports.count,
                      let f = ports[feed.sourcePort] else { return nil }
                if !type.descriptor.accepts(f.encoding) {
                    let wanted = type.descriptor.inputCodecs.isEmpty
                        ? "PCM audio" : "compressed " + type.descriptor.inputCodecs.joined(separator: " or ") + " frames"
                    let decoders = registry.types.map(\.descriptor).filter { $0.accepts(f.encoding) }.map(\.typeID)
                    let hint = decoders.isEmpty ? "" : "; link it to a decoder: \(decoders.joined(separator: ", "))"
                    error(feed.link, node: node.id, "'\(nodes[feed.source].id)' emits \(f.encoding) but '\(node.id)' (\(type.descriptor.typeID)) takes \(wanted)\(hint)")
                    return nil
                }
                if f.encoding == .pcm && f.sampleRate != sampleRate && !type.descriptor.acceptsRateIslands {
                    error(feed.link, node: node.id, "'\(nodes[feed.source].id)' sends audio at \(Int(f.sampleRate)) Hz (a rate island) into '\(node.id)' (\(type.descriptor.typeID)), which works at the graph's \(Int(sampleRate)) Hz only: bring it back to \(Int(sampleRate)) Hz with a resample node first")
                    return nil
                }
                if type.descriptor.virtualizes && f.layout == .binaural {
                    error(feed.link, node: node.id, "'\(nodes[feed.source].id)' sends binaural audio (already virtualized for headphones) into '\(node.id)' (\(type.descriptor.typeID)), which virtualizes: that would virtualize twice; feed it the unvirtualized stream, or leave it out")
                    return nil
                }
                return f
            }
            let context = ResolveContext(nodeID: node.id, parameters: node.parameters, inputFormats: inputFormats,
                                         sampleRate: sampleRate, directory: directory, outputPortNames: node.outputNames,
                                         registry: registry, writtenParameters: node.written)
            let out = type.resolve(context)
            let outputs: [StreamFormat?] = node.outputNames.indices.map { context.outputFormats[$0] ?? out }
            for issue in context.issues {
                switch issue.subject {
                case .node:
                    error(node.pointer, node: node.id, issue.message)
                case .parameter(let p, let element):
                    var ptr = node.pointer.appending("params").appending(p)
                    if let e = element { ptr = ptr.appending(e) }
                    error(ptr, node: node.id, issue.message)
                case .parameterPath(let p, let path):
                    error(path.reduce(node.pointer.appending("params").appending(p)) { $0.appending($1) }, node: node.id, issue.message)
                case .input(let port):
                    error(node.feeds[port]?.link ?? node.pointer, node: node.id, issue.message)
                }
            }
            if context.issues.isEmpty { formats[i] = outputs }
            resolved[i] = (inputFormats, outputs)
        }

        checkFileCollisions(nodes)

        guard !diagnostics.contains(where: { $0.severity == .error }) else { return nil }
        var position: [Int: Int] = [:]
        for (k, i) in order.enumerated() { position[i] = k }
        var out: [ValidatedGraph.Node] = []
        out.reserveCapacity(order.count)
        // Nodes of a large graph mostly repeat the same port names, formats
        // and source ports: equal arrays share one storage (issue #24:
        // memory per node).
        var names = Interned<String>(), streamFormats = Interned<StreamFormat>(), ports = Interned<Int>()
        for i in order {
            let node = nodes[i]
            guard let type = node.type, let r = resolved[i] else { return nil }
            let inputs = node.portNames.indices.compactMap { node.feeds[$0].flatMap { position[$0.source] } }
            let sourcePorts = node.portNames.indices.compactMap { node.feeds[$0]?.sourcePort }
            let inputFormats = r.inputs.compactMap { $0 }
            let outputFormats = r.outputs.compactMap { $0 }
            guard inputs.count == node.portNames.count, inputFormats.count == inputs.count,
                  outputFormats.count == node.outputNames.count else { return nil }
            out.append(.init(id: node.id, type: type, parameters: node.parameters, inputs: inputs,
                             inputSourcePorts: ports.shared(sourcePorts), inputFormats: streamFormats.shared(inputFormats),
                             inputPorts: names.shared(node.portNames), outputPorts: names.shared(node.outputNames),
                             outputFormats: streamFormats.shared(outputFormats), pointer: node.pointer))
        }
        var graph = ValidatedGraph(file: file, directory: directory, name: name, sampleRate: sampleRate,
                                   latencyCompensation: latencyCompensation, nodes: out, links: links, warnings: [])
        graph.sampleRateIsExplicit = sampleRateIsExplicit
        graph.threads = threads
        graph.registry = registry
        return graph
    }

    // MARK: files

    /// Refuses an output path that is also an input, another output, or
    /// the graph file itself (compared as resolved real paths), so that a
    /// render can never destroy what it reads or what describes it.
    private func checkFileCollisions(_ nodes: [ParsedNode]) {
        var inputs: [String: (node: String, pointer: JSONPointer)] = [:]
        var outputs: [String: (node: String, pointer: JSONPointer)] = [:]
        var written: [(path: String, shown: String, node: String, pointer: JSONPointer)] = []
        for node in nodes {
            guard let type = node.type else { continue }
            for (tokens, value) in type.descriptor.filePaths(node.parameters, of: .path) {
                let canonical = GraphPaths.canonical(GraphPaths.resolve(value, against: directory))
                let pointer = tokens.reduce(node.pointer.appending("params")) { $0.appending($1) }
                if inputs[canonical] == nil { inputs[canonical] = (node.id, pointer) }
            }
            for (tokens, value) in type.descriptor.filePaths(node.parameters, of: .outputPath) {
                let full = GraphPaths.resolve(value, against: directory)
                let pointer = tokens.reduce(node.pointer.appending("params")) { $0.appending($1) }
                written.append((GraphPaths.canonical(full), full, node.id, pointer))
            }
        }
        for w in written {
            if let graphPath, w.path == graphPath {
                error(w.pointer, node: w.node, "'\(w.node)' would overwrite the graph file itself (\(w.shown)); write to another file")
            } else if let reader = inputs[w.path] {
                error(w.pointer, node: w.node, "'\(w.node)' would overwrite \(w.shown), which '\(reader.node)' reads (\(reader.pointer.display)); write to another file")
            } else if let other = outputs[w.path] {
                error(w.pointer, node: w.node, "'\(w.node)' and '\(other.node)' (\(other.pointer.display)) both write \(w.shown); give each output its own file")
            } else {
                outputs[w.path] = (w.node, w.pointer)
            }
        }
    }

    // MARK: nodes

    private static let idCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")

    private func parseNode(_ value: JSONValue, index: Int, pointer: JSONPointer, seen: [String: Int]) -> ParsedNode? {
        guard let object = value.object else {
            error(pointer, "a node is an object {\"id\", \"type\", \"params\"}; found \(value.typeName)")
            return nil
        }
        for key in object.keys where !GraphValidator.nodeKeys.contains(key) {
            let hint = closestMatch(to: key, in: GraphValidator.nodeKeys).map { " (did you mean \"\($0)\"?)" } ?? ""
            error(pointer.appending(key), node: object["id"]?.string, "unknown key \"\(key)\" in a node\(hint); allowed: \(GraphValidator.nodeKeys.joined(separator: ", "))")
        }
        guard let id = object["id"]?.string else {
            error(pointer.appending("id"), object["id"] == nil ? "the node has no \"id\"" : "\"id\" must be a string")
            return nil
        }
        if id.isEmpty || !id.allSatisfy({ Self.idCharacters.contains($0) }) {
            error(pointer.appending("id"), node: id, "node id \"\(id)\" may hold only letters, digits, '_' and '-' (it is used in \"node:port\" and \"node.param\")")
        }
        if let first = seen[id] {
            error(pointer.appending("id"), node: id, "duplicate node id \"\(id)\": already used by /nodes/\(first); node ids must be unique")
        }
        var node = ParsedNode(index: index, id: id, type: nil, parameters: NodeParameters(), pointer: pointer, portNames: [])
        guard let typeName = object["type"]?.string else {
            error(pointer.appending("type"), node: id, object["type"] == nil
                  ? "the node has no \"type\"; known types: \(registry.typeIDs.joined(separator: ", "))"
                  : "\"type\" must be a string")
            return node
        }
        guard var type = registry[typeName] else {
            let note = registry.unavailableNote.map { "; \($0)" } ?? ""
            if let build = PackagePlugins.buildHint(for: typeName) {
                // One of this package's plugins, not built or not found:
                // which product to build, not a list of the known types.
                error(pointer.appending("type"), node: id, "unknown node type \"\(typeName)\": \(build)\(note)")
                return node
            }
            let hint = closestMatch(to: typeName, in: registry.typeIDs).map { "did you mean \"\($0)\"? " } ?? ""
            error(pointer.appending("type"), node: id, "unknown node type \"\(typeName)\"; \(hint)known types: \(registry.typeIDs.joined(separator: ", "))\(note)")
            return node
        }
        if let s = type as? any SpecialisingNodeType {
            // The parameter that chooses first; the rest against what it chose.
            let key = s.specialisingParameter
            let at = pointer.appending("params").appending(key)
            guard let chosen = object["params"]?.object?[key] else {
                error(object["params"] == nil ? pointer : at, node: id,
                      "missing required parameter \"\(key)\": \(s.descriptor.parameter(named: key)?.summary ?? "")")
                return node
            }
            guard let value = chosen.string else {
                error(at, node: id, "\"\(key)\" must be a string; found \(chosen.typeName)")
                return node
            }
            do { type = try s.specialised(for: value) } catch {
                self.error(at, node: id, "\(error)")
                return node
            }
        }
        node.type = type
        let errorsBefore = diagnostics.count
        node.parameters = parseParameters(object["params"], descriptor: type.descriptor, pointer: pointer.appending("params"), nodeID: id)
        if diagnostics.count > errorsBefore {
            // e.g. a mixer of 2,000 inputs: one error for "inputs", none per link.
            func unknown(_ count: String?) -> Bool { count.map { node.parameters[$0] == nil } ?? false }
            if case .numbered(let count) = type.descriptor.inputs { node.inputsUnknown = unknown(count) }
            if case .numbered(let count) = type.descriptor.outputs { node.outputsUnknown = unknown(count) }
        }
        node.written = Set(object["params"]?.object?.keys.map { $0 } ?? [])
        node.portNames = type.descriptor.inputPortNames(node.parameters)
        node.outputNames = type.descriptor.outputPortNames(node.parameters)
        node.consumers = Array(repeating: 0, count: node.outputNames.count)
        return node
    }

    private func parseParameters(_ value: JSONValue?, descriptor: NodeDescriptor, pointer: JSONPointer, nodeID: String) -> NodeParameters {
        var values: [String: ParameterValue] = [:]
        let given: OrderedDictionary<String, JSONValue>
        if let value {
            guard let object = value.object else {
                error(pointer, node: nodeID, "\"params\" must be an object; found \(value.typeName)")
                return NodeParameters()
            }
            given = object
        } else {
            given = [:]
        }
        let checker = ParameterCheck { [unowned self] in self.error($0, node: nodeID, $1) }
        for (key, v) in given {
            guard let p = descriptor.parameter(named: key) else {
                error(pointer.appending(key), node: nodeID, Self.unknownParameter(key, of: descriptor))
                continue
            }
            if let typed = checker.check(v, against: p, pointer: pointer.appending(key)) {
                values[key] = typed
            }
        }
        for p in descriptor.parameters where given[p.name] == nil && p.defaultValue == nil && !p.optional {
            let kind = p.type.name == p.name ? "" : " (\(p.type.name)\(p.unit.map { " in \($0)" } ?? ""))"
            error(pointer.appending(p.name), node: nodeID, "missing required parameter \"\(p.name)\"\(kind): \(p.summary)")
        }
        // The defaults of the parameters not given come from one table per
        // type; a parameter given with a wrong value stays absent (it has no
        // default then: what depends on it, such as a mixer's ports counted
        // by "inputs", is not known), so such a node gets its own table.
        if given.keys.contains(where: { values[$0] == nil && descriptor.parameter(named: $0)?.defaultValue != nil }) {
            for p in descriptor.parameters where given[p.name] == nil {
                if let d = p.defaultValue { values[p.name] = d }
            }
            return NodeParameters(values)
        }
        return NodeParameters(values, defaults: defaultsTable(descriptor))
    }

    /// The default values of `descriptor`'s parameters, one table per type
    /// for the whole graph. [main-thread]
    private func defaultsTable(_ descriptor: NodeDescriptor) -> NodeParameters.Defaults {
        if let made = defaultTables[descriptor.typeID] { return made }
        var values: [String: ParameterValue] = [:]
        for p in descriptor.parameters { if let d = p.defaultValue { values[p.name] = d } }
        let made = NodeParameters.Defaults(values)
        defaultTables[descriptor.typeID] = made
        return made
    }

    /// The error for a parameter `key` that nodes of this type do not have,
    /// with the closest name and the list of those they have.
    static func unknownParameter(_ key: String, of descriptor: NodeDescriptor) -> String {
        let names = descriptor.parameters.map(\.name)
        let hint = closestMatch(to: key, in: names).map { "did you mean \"\($0)\"? " } ?? ""
        return "'\(descriptor.typeID)' has no parameter \"\(key)\"; \(hint)its parameters: \(names.isEmpty ? "none" : names.joined(separator: ", "))"
    }

    // MARK: links

    /// Splits "node:port"; a bare id means the default port.
    static func endpoint(_ s: String) -> (node: String, port: String?) {
        guard let colon = s.lastIndex(of: ":") else { return (s, nil) }
        return (String(s[..<colon]), String(s[s.index(after: colon)...]))
    }

    private func parseLink(_ value: JSONValue, pointer: JSONPointer, nodes: inout [ParsedNode], ids: [String: Int]) -> ValidatedGraph.Link? {
        guard let object = value.object else {
            error(pointer, "a link is an object {\"from\": \"node[:port]\", \"to\": \"node[:port]\"}; found \(value.typeName)")
            return nil
        }
        for key in object.keys where !GraphValidator.linkKeys.contains(key) {
            error(pointer.appending(key), "unknown key \"\(key)\" in a link; allowed: from, to")
        }
        guard let fromText = object["from"]?.string, let toText = object["to"]?.string else {
            for key in ["from", "to"] where object[key]?.string == nil {
                error(pointer.appending(key), object[key] == nil ? "the link has no \"\(key)\"" : "\"\(key)\" must be a string \"node\" or \"node:port\"")
            }
            return nil
        }
        let (fromID, fromPortGiven) = Self.endpoint(fromText)
        let (toID, toPortGiven) = Self.endpoint(toText)
        var ok = true
        var source: Int?
        var target: Int?
        if let s = ids[fromID] { source = s } else {
            let hint = closestMatch(to: fromID, in: Array(ids.keys)).map { "; did you mean \"\($0)\"?" } ?? ""
            error(pointer.appending("from"), "no node \"\(fromID)\"\(hint)")
            ok = false
        }
        if let t = ids[toID] { target = t } else {
            let hint = closestMatch(to: toID, in: Array(ids.keys)).map { "; did you mean \"\($0)\"?" } ?? ""
            error(pointer.appending("to"), "no node \"\(toID)\"\(hint)")
            ok = false
        }
        var fromPort = fromPortGiven ?? "out"
        var sourcePort: Int?
        if let s = source, let type = nodes[s].type, !nodes[s].outputsUnknown {
            let outs = nodes[s].outputNames
            if !type.descriptor.hasOutput {
                error(pointer.appending("from"), node: fromID, "'\(fromID)' (a \(type.descriptor.typeID) node) is a sink and has no output port")
                ok = false
            } else if fromPortGiven == nil {
                if let d = type.descriptor.defaultOutputPort(nodes[s].parameters), let k = outs.firstIndex(of: d) {
                    fromPort = d
                    sourcePort = k
                } else if outs.isEmpty {
                    error(pointer.appending("from"), node: fromID, "'\(fromID)' has no output ports with these parameters")
                    ok = false
                } else {
                    error(pointer.appending("from"), node: fromID, "'\(fromID)' has several outputs (\(outs.joined(separator: ", "))): name one, e.g. \"\(fromID):\(outs[0])\"")
                    ok = false
                }
            } else if let k = outs.firstIndex(of: fromPort) {
                sourcePort = k
            } else {
                let hint = closestMatch(to: fromPort, in: outs).map { "did you mean '\($0)'? " } ?? ""
                let list = outs.count == 1 ? "its output is '\(outs[0])'" : "its outputs: \(outs.isEmpty ? "none" : outs.joined(separator: ", "))"
                error(pointer.appending("from"), node: fromID, "'\(fromID)' has no output port '\(fromPort)'; \(hint)\(list)")
                ok = false
            }
        }
        var toPort = toPortGiven ?? "in"
        var portIndex: Int?
        if let t = target, let type = nodes[t].type, !nodes[t].inputsUnknown {
            let ports = nodes[t].portNames
            if toPortGiven == nil, ports.count > 1 {
                error(pointer.appending("to"), node: toID, "'\(toID)' has several inputs (\(ports.joined(separator: ", "))): name one, e.g. \"\(toID):\(ports[0])\"")
                ok = false
            } else if toPortGiven == nil, ports.count == 1 {
                toPort = ports[0]
                portIndex = 0
            } else if let i = Self.index(ofPort: toPort, in: ports) {
                portIndex = i
            } else {
                let hint = closestMatch(to: toPort, in: ports).map { "did you mean '\($0)'? " } ?? ""
                error(pointer.appending("to"), node: toID, ports.isEmpty
                      ? "'\(toID)' (a \(type.descriptor.typeID) node) is a source and has no input port"
                      : "'\(toID)' has no input port '\(toPort)'; \(hint)its inputs: \(ports.joined(separator: ", "))")
                ok = false
            }
        }
        // A link to or from a node of an unknown type, or whose ports are
        // unknown, cannot be checked: that node's error says it all (no
        // "not connected", no "has no input port" after it).
        let unchecked = [source, target].contains { i in
            i.map { nodes[$0].type == nil || nodes[$0].inputsUnknown || nodes[$0].outputsUnknown } ?? false
        }
        if unchecked { return nil }
        if let t = target, let s = source, let port = portIndex {
            if let existing = nodes[t].feeds[port] {
                error(pointer.appending("to"), node: toID, "input '\(toID):\(toPort)' is fed twice: already by '\(nodes[existing.source].id)' at \(existing.link.display); to combine signals, use a mixer")
                ok = false
            } else if ok, let sp = sourcePort {
                nodes[t].feeds[port] = (s, sp, pointer)
                nodes[s].consumers[sp] += 1
            }
        }
        return ok ? .init(from: fromID, fromPort: fromPort, to: toID, toPort: toPort) : nil
    }

    /// The index of port `name` in `ports`: numbered ports ("in4095") are
    /// found by their number first, so that the links of a mixer of
    /// thousands of inputs are not checked in quadratic time.
    static func index(ofPort name: String, in ports: [String]) -> Int? {
        let digits = name.utf8.reversed().prefix { $0 >= 48 && $0 <= 57 }.count
        if digits > 0, digits < 10, let k = Int(name.suffix(digits)), k < ports.count, ports[k] == name { return k }
        return ports.firstIndex(of: name)
    }

    // MARK: order

    /// Kahn's order over the valid links; reports each cycle with its nodes.
    /// When there is no cycle, returns `depthFirstOrder` instead.
    private func topologicalOrder(_ nodes: [ParsedNode], links linksPointer: JSONPointer) -> [Int] {
        let n = nodes.count
        var successors = Array(repeating: [Int](), count: n)
        var indegree = Array(repeating: 0, count: n)
        for (t, node) in nodes.enumerated() {
            for (_, feed) in node.feeds.sorted(by: { $0.key < $1.key }) {
                successors[feed.source].append(t)
                indegree[t] += 1
            }
        }
        var ready = (0..<n).filter { indegree[$0] == 0 }
        var order: [Int] = []
        var head = 0
        while head < ready.count {
            let i = ready[head]
            head += 1
            order.append(i)
            for s in successors[i] {
                indegree[s] -= 1
                if indegree[s] == 0 { ready.append(s) }
            }
        }
        if order.count < n {
            // The rest holds at least one cycle: walk back along feeds.
            var reported = Set<Int>()
            for start in 0..<n where indegree[start] > 0 && !reported.contains(start) {
                var path: [Int] = []
                var seenAt: [Int: Int] = [:]
                var cur = start
                while seenAt[cur] == nil {
                    seenAt[cur] = path.count
                    path.append(cur)
                    guard let next = nodes[cur].feeds.values.map(\.source).filter({ indegree[$0] > 0 }).min() else { break }
                    cur = next
                }
                guard let begin = seenAt[cur] else { continue }
                let cycle = Array(path[begin...].reversed())
                if cycle.contains(where: { reported.contains($0) }) { continue }
                reported.formUnion(cycle)
                let names = (cycle + [cycle[0]]).map { nodes[$0].id }.joined(separator: " → ")
                let closing = nodes[cycle[0]].feeds.values.first { $0.source == cycle[cycle.count - 1] }?.link ?? linksPointer
                error(closing, node: nodes[cycle[0]].id, "the links form a cycle: \(names); a graph must flow one way (feedback needs a delay node)")
            }
        }
        guard order.count == n else { return order }
        return depthFirstOrder(nodes, successors: successors)
    }

    /// The order the engine runs the nodes in: each node right after the
    /// nodes that feed it, depth first from the nodes whose outputs feed
    /// nothing (in file order, inputs in port order). A node's output is
    /// then consumed soon after it is made: a mixer of 64 tones runs after
    /// its 64 tones, not after every tone of the graph, so an offline
    /// engine that reuses buses by liveness keeps the fan-in plus the depth
    /// alive instead of every source's output (issue #24, the wide tree),
    /// and the data is still in the cache. Only for an acyclic graph
    /// (Kahn's order found every node); iterative, so a chain of any length
    /// cannot overflow the stack.
    private func depthFirstOrder(_ nodes: [ParsedNode], successors: [[Int]]) -> [Int] {
        let n = nodes.count
        let inputs: [[Int]] = nodes.map { node in node.feeds.sorted(by: { $0.key < $1.key }).map(\.value.source) }
        var placed = [Bool](repeating: false, count: n)
        var order: [Int] = []
        order.reserveCapacity(n)
        var stack: [(node: Int, next: Int)] = []
        for root in 0..<n where successors[root].isEmpty && !placed[root] {
            stack.append((root, 0))
            while let top = stack.last {
                let ins = inputs[top.node]
                if top.next < ins.count {
                    stack[stack.count - 1].next += 1
                    let source = ins[top.next]
                    if !placed[source] { stack.append((source, 0)) }
                } else {
                    stack.removeLast()
                    if !placed[top.node] { placed[top.node] = true; order.append(top.node) }
                }
            }
        }
        return order.count == n ? order : order + (0..<n).filter { !placed[$0] }
    }
}

/// Equal arrays handed out as one shared storage (copy on write keeps them
/// independent values). [main-thread]
struct Interned<Element: Hashable> {
    private var seen: Set<[Element]> = []

    /// `array`, or an equal one handed out before.
    mutating func shared(_ array: [Element]) -> [Element] {
        if array.isEmpty { return [] }
        if let earlier = seen.firstIndex(of: array) { return seen[earlier] }
        seen.insert(array)
        return array
    }
}
