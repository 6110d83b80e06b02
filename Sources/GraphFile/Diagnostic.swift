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

/// "did you mean" for a misspelt name: the closest candidate within a few edits.
public func closestMatch(to word: String, in candidates: [String]) -> String? {
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count)
        for i in 1...a.count {
            var cur = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[b.count]
    }
    let w = Array(word.lowercased())
    let scored = candidates.map { ($0, distance(w, Array($0.lowercased()))) }
    guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, w.count / 3) else { return nil }
    return best.0
}
