import ArgumentParser
import AudioGraph
import AudioGraphSndFile
#if canImport(Glibc)
import Glibc
#endif

/// `agraph render --each`: what the inputs become, decided and checked
/// before anything is rendered. [main-thread]
extension Batch {
    /// The inputs with quoted patterns expanded (`'music/*.flac'`, sorted);
    /// a name that exists is taken as it is.
    func expand(_ inputs: [String]) throws -> [String] {
        var out: [String] = []
        for input in inputs {
            guard input.contains(where: { "*?[".contains($0) }), access(input, F_OK) != 0 else {
                out.append(input)
                continue
            }
            var g = glob_t()
            defer { globfree(&g) }
            guard glob(input, 0, nil, &g) == 0, g.gl_pathc > 0 else {
                printError("agraph: --each: '\(input)' matches no file")
                throw ExitCode.failure
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
    func graphFiles(firstInput: String, graphDirectory: String) throws -> ([Sink], [String]) {
        var overrides = try ParameterOverrides.parse(request.settings)
        let a = request.address
        overrides.append(ParameterOverride(node: a.node, parameter: a.parameter, element: a.element,
                                           text: JSONOut.string(firstInput).rendered(), origin: "--each \(a)=…",
                                           directory: GraphPaths.currentDirectory()))
        let registry = standardRegistry()
        let document: JSONValue
        switch GraphValidator(registry: registry).document(file: request.graph, overrides: overrides) {
        case .success(let d): document = d
        case .failure(let errors):
            for d in errors.diagnostics { printError(d.description) }
            let n = errors.errors.count
            printError("\(request.graph): \(n) error\(n == 1 ? "" : "s")")
            throw ExitCode.failure
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
                printError("agraph: \(request.graph): cannot tell the file format of the sink '\(id)' (\"\(path)\"): give it \"format\" or a known extension (\(SoundFile.Container.extensions))")
                throw ExitCode.failure
            }
            let ext = fromPath != nil ? String(path[path.index(after: path.lastIndex(of: ".") ?? path.startIndex)...]) : container
            sinks.append(Sink(id: id, fileExtension: ext, format: container))
        }
        if sinks.isEmpty {
            printError("agraph: \(request.graph): --each writes the graph's file-out sinks into --output-dir, and the graph has none; add a file-out node")
            throw ExitCode.failure
        }
        return (sinks, reads)
    }

    /// Every input with its output names; refuses (before anything is
    /// rendered) two inputs that give one output name and an output that
    /// is an input or the graph file.
    func plan(inputs: [String], sinks: [Sink], graphReads: [String], directory: String, cwd: String) throws -> [Item] {
        let pid = getpid()
        var items: [Item] = []
        var owner: [String: String] = [:]
        var problems: [String] = []
        let read = Set(inputs.map { GraphPaths.canonical(GraphPaths.resolve($0, against: cwd)) })
        let alsoRead = Set(graphReads.map(GraphPaths.canonical))
        let graphFile = GraphPaths.canonical(GraphPaths.resolve(request.graph, against: cwd))
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
            for p in problems where seen.insert(p).inserted { printError("agraph: --each: \(p)") }
            printError("agraph: nothing was rendered")
            throw ExitCode.failure
        }
        return items
    }

    /// A file's name without its folder and its last extension
    /// (`a/b/song.flac` → `song`; `.hidden` stays `.hidden`).
    static func stem(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }
}
