/// One problem with a graph file, located as precisely as the file allows.
public struct Diagnostic: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable { case error, warning }

    public var severity: Severity
    /// The graph file as the user named it.
    public var file: String
    /// Where in the document; `JSONPointer.root` for the whole file.
    public var pointer: JSONPointer
    /// Line and column of the value the pointer names, when known.
    public var location: SourceLocation?
    /// The node concerned, when there is one.
    public var nodeID: String?
    /// What is wrong and, where it helps, what would be right.
    public var message: String

    public init(_ severity: Severity = .error, file: String, pointer: JSONPointer,
                location: SourceLocation? = nil, nodeID: String? = nil, message: String) {
        self.severity = severity
        self.file = file
        self.pointer = pointer
        self.location = location
        self.nodeID = nodeID
        self.message = message
    }

    /// `file:line:col: error: /pointer (node 'id'): message` — one line.
    public var description: String {
        var s = file
        if let l = location { s += ":\(l.line):\(l.column)" }
        s += ": \(severity.rawValue): \(pointer.display)"
        if let id = nodeID { s += " (node '\(id)')" }
        s += ": " + message
        return s
    }
}

/// Every diagnostic of a file that did not validate.
public struct GraphErrors: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
