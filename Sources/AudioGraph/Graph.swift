import Foundation

/// A validated graph, ready to render offline: read from a graph file,
/// from a JSON text, or built in code (`GraphBuilder.build(registry:)`).
/// Every way goes through the same validator as `agraph validate`, so a
/// graph that exists is one `agraph render` would accept.
///
/// Immutable; rendering it does not change it (each render builds its own
/// nodes), so one graph may be rendered many times. Its properties may
/// be read on any thread. [any-thread]
public final class Graph: Sendable {
    /// The validated graph model: nodes in processing order, parameters
    /// typed and defaulted, every stream's format known (for code that
    /// needs the host layer: compiling, describing, comparing).
    public let validated: ValidatedGraph
    /// The graph document: the file's text as read, or what a builder
    /// wrote. Diagnostics' JSON pointers point into it.
    public let jsonText: String

    /// The graph's name (`"name"`, or the file's name without extension).
    public var name: String { validated.name }
    /// The graph's sample rate in Hz.
    public var sampleRate: Double { validated.sampleRate }
    /// The file name used in diagnostics.
    public var file: String { validated.file }
    /// The ids of the nodes, in processing order.
    public var nodeIDs: [String] { validated.nodes.map(\.id) }
    /// The ids of the sinks (nodes with no output), in processing order.
    public var sinkIDs: [String] { validated.sinks.map(\.id) }
    /// Problems that do not stop the graph (`agraph validate`'s warnings).
    public var warnings: [Diagnostic] { validated.warnings }

    /// Reads and validates the graph file at `url`. Relative paths in it
    /// resolve against its folder, as for `agraph render`.
    /// - Throws: `GraphError.invalid` with the diagnostics `agraph
    ///   validate` prints (a file that cannot be read is one of them).
    /// [main-thread; any thread of the program's own, not the audio or a worker thread]
    public convenience init(contentsOf url: URL, registry: NodeRegistry) throws(GraphError) {
        ThreadRole.check(.main)
        guard url.isFileURL else { throw GraphError.notAFile(url) }
        let path = url.path
        let validator = GraphValidator(registry: registry)
        let bytes: [UInt8]
        do {
            bytes = try FileChecks.readRegularFile(path, maximumBytes: FileChecks.maximumGraphFileBytes)
        } catch {
            // The validator reads it again and says why it cannot, in its words.
            if case .failure(let errors) = validator.validate(file: path) {
                throw GraphError.invalid(file: path, diagnostics: errors.diagnostics)
            }
            throw GraphError.invalid(file: path, diagnostics: [Diagnostic(file: path, pointer: .root,
                message: "cannot read the graph file: \(error.reason)")])
        }
        let absolute = GraphPaths.resolve(path, against: GraphPaths.currentDirectory())
        let result = validator.validate(bytes: bytes, file: path, directory: GraphPaths.folder(of: absolute),
                                        graphPath: GraphPaths.canonical(absolute))
        try self.init(result, file: path, jsonText: String(decoding: bytes, as: UTF8.self))
    }

    /// Validates a graph document held in memory.
    /// - Parameters:
    ///   - file: the name diagnostics give the document.
    ///   - directory: where relative paths in it resolve (default: the
    ///     working directory).
    /// [main-thread]
    public convenience init(jsonText: String, registry: NodeRegistry, file: String = "graph.json",
                            directory: URL? = nil) throws(GraphError) {
        ThreadRole.check(.main)
        let folder = directory.map { GraphPaths.resolve($0.path, against: GraphPaths.currentDirectory()) }
            ?? GraphPaths.currentDirectory()
        let result = GraphValidator(registry: registry).validate(bytes: Array(jsonText.utf8), file: file, directory: folder)
        try self.init(result, file: file, jsonText: jsonText)
    }

    /// A graph already validated (e.g. with `--set` overrides) and its
    /// document. [any-thread]
    public init(validated: ValidatedGraph, jsonText: String) {
        self.validated = validated
        self.jsonText = jsonText
    }

    private convenience init(_ result: Result<ValidatedGraph, GraphErrors>, file: String, jsonText: String) throws(GraphError) {
        switch result {
        case .success(let g): self.init(validated: g, jsonText: jsonText)
        case .failure(let errors):
            throw GraphError.invalid(file: file, diagnostics: errors.diagnostics)
        }
    }
}
