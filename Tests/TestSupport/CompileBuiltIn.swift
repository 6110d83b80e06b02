import AudioGraph

/// A graph file's text validated against the built-in node types and
/// compiled, as the control-surface and OSC tests start from. [any thread]
public func compileBuiltIn(_ json: String, file: String, maxFrames: Int) throws -> CompiledGraph {
    let graph = try GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: file, directory: "/tmp").get()
    return try GraphCompiler.compile(graph, maxFrames: maxFrames)
}
