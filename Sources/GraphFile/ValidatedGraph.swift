import AudioGraphCore

/// A graph file that passed validation: nodes in processing order, every
/// parameter typed and defaulted, every stream's format known.
public struct ValidatedGraph: Sendable {
    public struct Node: Sendable {
        public var id: String
        public var type: any NodeType
        public var parameters: NodeParameters
        /// For each input port in order: the index in `nodes` of its source.
        public var inputs: [Int]
        /// For each input port in order: which output port of its source
        /// feeds it (an index into that node's `outputPorts`).
        public var inputSourcePorts: [Int]
        public var inputFormats: [StreamFormat]
        /// The format of the first output port; nil for sinks.
        public var outputFormat: StreamFormat? { outputFormats.first }
        /// The output ports' names and formats, in port order (empty for sinks).
        public var outputPorts: [String]
        public var outputFormats: [StreamFormat]
        /// The input ports' names, in port order.
        public var inputPorts: [String]
        /// Where the node stands in the file (`/nodes/N`).
        public var pointer: JSONPointer

        public var descriptor: NodeDescriptor { type.descriptor }

        /// A node added to a validated graph by the host (`agraph render -o`
        /// adds a `file-out`), already resolved by its type. [main-thread | control-thread;
        /// validation makes them, and OSC's reload validates on its thread]
        public init(id: String, type: any NodeType, parameters: NodeParameters, inputs: [Int], inputSourcePorts: [Int],
                    inputFormats: [StreamFormat], inputPorts: [String], outputPorts: [String] = [],
                    outputFormats: [StreamFormat] = [], pointer: JSONPointer = .root) {
            ThreadRole.check(.main, .control)
            self.id = id
            self.type = type
            self.parameters = parameters
            self.inputs = inputs
            self.inputSourcePorts = inputSourcePorts
            self.inputFormats = inputFormats
            self.inputPorts = inputPorts
            self.outputPorts = outputPorts
            self.outputFormats = outputFormats
            self.pointer = pointer
        }
    }

    /// A link as written, ports made explicit.
    public struct Link: Sendable, Equatable {
        public var from: String
        public var fromPort: String
        public var to: String
        public var toPort: String
    }

    /// The file as the user named it.
    public var file: String
    /// Its folder, absolute.
    public var directory: String
    public var name: String
    public var sampleRate: Double
    /// Whether the file gives `"sampleRate"`; without it the graph runs at
    /// a live server's rate (see `revalidated(sampleRate:)`).
    public var sampleRateIsExplicit = true
    /// What a graph without `"sampleRate"` was validated from, so that it
    /// can be validated again at another rate.
    public struct Source: Sendable {
        public var bytes: [UInt8]
        public var registry: NodeRegistry
        public var graphPath: String?
        /// The `--set` overrides it was validated with.
        public var overrides: [ParameterOverride] = []
    }
    public var source: Source?
    /// Whether paths of different latency are aligned where they meet
    /// (the graph's `"latencyCompensation"`, default true).
    public var latencyCompensation = true
    /// How many threads render it live (the graph's `"threads"`, default 1).
    public var threads = GraphThreads.count(1)
    /// In topological order: every node after the nodes that feed it.
    public var nodes: [Node]
    public var links: [Link]
    /// Problems that do not stop the graph from running.
    public var warnings: [Diagnostic]
    /// The node types it was validated with (nodes that drive another
    /// type's decoder find it here when they are made).
    public var registry = NodeRegistry()

    public func node(_ id: String) -> Node? { nodes.first { $0.id == id } }

    /// The same graph validated again at `rate` (a live server's): every
    /// node's checks and formats follow the rate. Only for a graph whose
    /// file gives no `"sampleRate"`; any other graph, or the same rate,
    /// comes back unchanged. [main-thread | owner-thread]
    public func revalidated(sampleRate rate: Double) -> Result<ValidatedGraph, GraphErrors> {
        ThreadRole.check(.main, .owner)
        guard !sampleRateIsExplicit, rate != sampleRate, let source else { return .success(self) }
        return GraphValidator(registry: source.registry, sampleRateWhenOmitted: rate)
            .validate(bytes: source.bytes, file: file, directory: directory, graphPath: source.graphPath,
                      overrides: source.overrides)
    }

    /// Sources that never end and reach a sink: rendering such a graph
    /// offline needs a duration. A node ends when all its inputs end.
    public var endlessSources: [String] {
        var endless = [Bool]()
        var from = [[String]]()
        for n in nodes {
            if n.inputs.isEmpty {
                let e = n.type.isEndless(n.parameters)
                endless.append(e)
                from.append(e ? [n.id] : [])
            } else {
                endless.append(n.inputs.contains { endless[$0] })
                from.append(Array(Set(n.inputs.flatMap { from[$0] })).sorted())
            }
        }
        return Array(Set(nodes.indices.filter { nodes[$0].outputFormat == nil }.flatMap { from[$0] })).sorted()
    }

    /// Nodes with no output.
    public var sinks: [Node] { nodes.filter { $0.outputFormat == nil } }

    /// Creates the folders the graph's outputs need (rendering creates what
    /// validation found missing); returns a line for each folder created.
    /// [main-thread]
    public func createOutputFolders() throws(FileCheckError) -> [String] {
        ThreadRole.check(.main)
        var made: [String] = []
        for n in nodes {
            for p in n.descriptor.parameters where p.type == .outputPath {
                guard let value = n.parameters.string(p.name) else { continue }
                if let folder = try FileChecks.createFolders(above: GraphPaths.resolve(value, against: directory)) {
                    made.append("created the folder \(folder) for '\(n.id)'")
                }
            }
        }
        return made
    }

    /// Why writing an extra output at `path` (absolute) would destroy
    /// something the graph uses: a file it reads or writes, or the graph
    /// file itself; nil when it would not. [main-thread]
    public func outputConflict(_ path: String) -> String? {
        ThreadRole.check(.main)
        let target = GraphPaths.canonical(path)
        let fileName = file.split(separator: "/").last.map(String.init) ?? file
        if GraphPaths.canonical(directory + "/" + fileName) == target {
            return "\(path) is the graph file itself"
        }
        for n in nodes {
            for kind in [ParameterType.path, .outputPath] {
                for (_, value) in n.descriptor.filePaths(n.parameters, of: kind)
                where GraphPaths.canonical(GraphPaths.resolve(value, against: directory)) == target {
                    return "\(path) is \(kind == .path ? "read" : "written") by '\(n.id)'"
                }
            }
        }
        return nil
    }
}
