import AudioGraph
import AudioGraphSndFile
#if canImport(Glibc)
import Glibc
#endif

/// `agraph render --each`: what the inputs become, decided and checked
/// before anything is rendered: the inputs (patterns expanded), the
/// graph's file sinks, and each input's output names (final and
/// temporary), refused as a whole when two collide or one would overwrite
/// an input or a file the graph reads. [main-thread]
public struct BatchPlan {
    /// The graph file.
    public var graph: String
    /// `--output-dir` as given (outputs are shown under it).
    public var outputDir: String
    /// The `--set` overrides, passed on to every render.
    public var overrides: [ParameterOverride]
    /// Where each input goes (`--each NODE.PARAM`).
    public var address: ParameterAddress
    /// The node types the graph is read with.
    public var registry: NodeRegistry

    public init(graph: String, outputDir: String, overrides: [ParameterOverride], address: ParameterAddress,
                registry: NodeRegistry) {
        self.graph = graph
        self.outputDir = outputDir
        self.overrides = overrides
        self.address = address
        self.registry = registry
    }

    /// A file sink of the graph, and how its outputs are named and written.
    public struct Sink: Equatable {
        public var id: String
        /// The extension the outputs get (the sink path's, as written).
        public var fileExtension: String
        /// The container, given explicitly to the render (its temporary
        /// name has no extension).
        public var format: String

        public init(id: String, fileExtension: String, format: String) {
            self.id = id
            self.fileExtension = fileExtension
            self.format = format
        }
    }

    /// One input and the files it becomes.
    public struct Item {
        public var input: String
        public var path: String
        public var outputs: [(sink: String, final: String, temporary: String)]
    }

    /// Why nothing is rendered: the lines to show, in order.
    public struct Refused: Error, CustomStringConvertible {
        public var lines: [String]
        public var description: String { lines.joined(separator: "\n") }
    }

    /// An output path as the user would write it: under --output-dir as given.
    public func shown(_ path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return outputDir.hasSuffix("/") ? outputDir + name : outputDir + "/" + name
    }

    /// The inputs with quoted patterns expanded (`'music/*.flac'`, sorted);
    /// a name that exists is taken as it is.
    public func expand(_ inputs: [String]) throws(Refused) -> [String] {
        var out: [String] = []
        for input in inputs {
            guard input.contains(where: { "*?[".contains($0) }), access(input, F_OK) != 0 else {
                out.append(input)
                continue
            }
            var g = glob_t()
            defer { globfree(&g) }
            guard glob(input, 0, nil, &g) == 0, g.gl_pathc > 0 else {
                throw Refused(lines: ["agraph: --each: '\(input)' matches no file"])
            }
            for k in 0..<Int(g.gl_pathc) {
                if let p = g.gl_pathv[k] { out.append(String(cString: p)) }
            }
        }
        return out
    }

    /// The graph's `file-out` sinks after the `--set` overrides, with the
    /// first input put in place (so that a wrong NODE.PARAM is refused
    /// now, with the validator's words), and the files the graph reads
    /// besides the input (absolute).
    public func graphFiles(firstInput: String, graphDirectory: String) throws(Refused) -> ([Sink], [String]) {
        var overrides = self.overrides
        let a = address
        overrides.append(ParameterOverride(node: a.node, parameter: a.parameter, element: a.element,
                                           text: JSONOut.string(firstInput).rendered(), origin: "--each \(a)=…",
                                           directory: GraphPaths.currentDirectory()))
        let document: JSONValue
        switch GraphValidator(registry: registry).document(file: graph, overrides: overrides) {
        case .success(let d): document = d
        case .failure(let errors):
            let n = errors.errors.count
            throw Refused(lines: errors.diagnostics.map(\.description) + ["\(graph): \(n) error\(n == 1 ? "" : "s")"])
        }
        var reads: [String] = []
        for node in document["nodes"]?.array ?? [] {
            guard let type = node["type"]?.string.flatMap({ registry[$0] }), node["id"]?.string != a.node else { continue }
            for p in type.descriptor.parameters where p.type == .path {
                if let value = node["params"]?[p.name]?.string { reads.append(GraphPaths.resolve(value, against: graphDirectory)) }
            }
        }
        var sinks: [Sink] = []
        for node in document["nodes"]?.array ?? [] where node["type"]?.string == "file-out" {
            guard let id = node["id"]?.string else { continue }
            let path = node["params"]?["path"]?.string ?? ""
            let format = node["params"]?["format"]?.string
            let fromPath = SoundFile.Container(extensionOf: path)
            guard let container = format ?? fromPath?.rawValue else {
                throw Refused(lines: ["agraph: \(graph): cannot tell the file format of the sink '\(id)' (\"\(path)\"): give it \"format\" or a known extension (\(SoundFile.Container.extensions))"])
            }
            let ext = fromPath != nil ? String(path[path.index(after: path.lastIndex(of: ".") ?? path.startIndex)...]) : container
            sinks.append(Sink(id: id, fileExtension: ext, format: container))
        }
        if sinks.isEmpty {
            throw Refused(lines: ["agraph: \(graph): --each writes the graph's file-out sinks into --output-dir, and the graph has none; add a file-out node"])
        }
        return (sinks, reads)
    }

    /// Every input with its output names; refuses (before anything is
    /// rendered) two inputs that give one output name and an output that
    /// is an input or the graph file.
    /// - Parameter pid: the batch process, named in the temporary outputs.
    public func plan(inputs: [String], sinks: [Sink], graphReads: [String], directory: String, cwd: String,
                     pid: pid_t = getpid()) throws(Refused) -> [Item] {
        var items: [Item] = []
        var owner: [String: String] = [:]
        var problems: [String] = []
        let read = Set(inputs.map { GraphPaths.canonical(GraphPaths.resolve($0, against: cwd)) })
        let alsoRead = Set(graphReads.map(GraphPaths.canonical))
        let graphFile = GraphPaths.canonical(GraphPaths.resolve(graph, against: cwd))
        for input in inputs {
            let path = GraphPaths.resolve(input, against: cwd)
            let stem = Self.stem(of: path)
            var outputs: [(sink: String, final: String, temporary: String)] = []
            for sink in sinks {
                let name = sinks.count == 1 ? "\(stem).\(sink.fileExtension)" : "\(stem).\(sink.id).\(sink.fileExtension)"
                let final = directory + "/" + name
                if let other = owner[name] {
                    problems.append(other == input
                        ? "\(input) is given twice"
                        : "\(other) and \(input) would both be written to \(shown(final)); give the inputs distinct file names, or render them in separate runs with different --output-dir")
                } else {
                    owner[name] = input
                }
                let canonical = GraphPaths.canonical(final)
                if read.contains(canonical) {
                    problems.append("the output \(shown(final)) of \(input) is one of the inputs; choose another --output-dir")
                } else if alsoRead.contains(canonical) {
                    problems.append("the output \(shown(final)) of \(input) is a file the graph reads; choose another --output-dir")
                } else if canonical == graphFile {
                    problems.append("the output \(shown(final)) of \(input) is the graph file; choose another --output-dir")
                }
                outputs.append((sink.id, final, BatchLeftovers.temporary(name, in: directory, pid: pid)))
            }
            items.append(Item(input: input, path: path, outputs: outputs))
        }
        if !problems.isEmpty {
            var seen = Set<String>()
            throw Refused(lines: problems.filter { seen.insert($0).inserted }.map { "agraph: --each: \($0)" }
                          + ["agraph: nothing was rendered"])
        }
        return items
    }

    /// A file's name without its folder and its last extension
    /// (`a/b/song.flac` → `song`; `.hidden` stays `.hidden`).
    public static func stem(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }
}
