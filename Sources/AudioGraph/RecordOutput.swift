import AudioGraphSndFile

extension ValidatedGraph {
    /// A reason `recording(to:sink:)` refused.
    public struct RecordingError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The graph with one more node: a `file-out` at `path` fed by what
    /// reaches one sink (`agraph render -o`). It is a node of the graph
    /// model like any other, checked by `file-out`'s own rules (format,
    /// folder, ring size) and the graph's (it may not overwrite an input,
    /// an output or the graph file); the compiler builds it like the rest.
    /// - Parameters:
    ///   - path: relative to the working directory.
    ///   - sinkID: the sink to record; may be nil when there is one.
    /// [main-thread]
    public func recording(to path: String, sink sinkID: String? = nil) throws(RecordingError) -> ValidatedGraph {
        ThreadRole.check(.main)
        let sinks = self.sinks
        let sink: Node
        if let id = sinkID {
            guard let s = sinks.first(where: { $0.id == id }) else {
                throw RecordingError(description: "no sink '\(id)'; sinks: \(sinks.map(\.id).joined(separator: ", "))")
            }
            sink = s
        } else if sinks.count == 1, let s = sinks.first {
            sink = s
        } else {
            throw RecordingError(description: "the graph has \(sinks.count) sinks (\(sinks.map(\.id).joined(separator: ", "))): choose one with --sink")
        }
        guard let source = sink.inputs.first, let sourcePort = sink.inputSourcePorts.first,
              let format = sink.inputFormats.first else {
            throw RecordingError(description: "'\(sink.id)' has no input to record")
        }
        let absolute = GraphPaths.resolve(path, against: GraphPaths.currentDirectory())
        if let conflict = outputConflict(absolute) {
            throw RecordingError(description: "cannot write \(path): \(conflict); write to another file")
        }
        let type = FileSinkType()
        var values: [String: ParameterValue] = ["path": .string(absolute)]
        for p in type.descriptor.parameters where values[p.name] == nil {
            if let d = p.defaultValue { values[p.name] = d }
        }
        let parameters = NodeParameters(values)
        let context = ResolveContext(nodeID: "output", parameters: parameters, inputFormats: [format],
                                     sampleRate: sampleRate, directory: directory, outputPortNames: [])
        _ = type.resolve(context)
        if let issue = context.issues.first {
            throw RecordingError(description: "cannot write \(path): \(issue.message)")
        }
        var id = "output"
        var n = 1
        while node(id) != nil { n += 1; id = "output\(n)" }
        var g = self
        g.nodes.append(Node(id: id, type: type, parameters: parameters, inputs: [source], inputSourcePorts: [sourcePort],
                            inputFormats: [format], inputPorts: ["in"]))
        return g
    }
}
