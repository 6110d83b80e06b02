import AudioGraphCore
import OrderedCollections

/// A parameter value given beside a graph file rather than in it
/// (`agraph render|run|validate --set NODE.PARAM=VALUE`). Overrides change
/// the parsed document before validation, so an overridden value is
/// checked exactly like one written in the file; every problem it causes
/// says where it came from (`origin`).
///
/// The value text is read as JSON when it parses (`-6`, `true`, `[0, -6]`,
/// `"a b"`), else taken as a string (`music/a.flac`). For a parameter that
/// takes a string (a path, a choice, a `stringList` element), a text that
/// parses as another JSON value stays the string typed (`5.1` for a
/// layout, a file named `1`). A relative path (a `path` or `outputPath`
/// parameter) resolves against `directory`, the folder of the command
/// line, not the graph file's: the user typed it in a shell.
public struct ParameterOverride: Sendable, Equatable {
    public var node: String
    public var parameter: String
    /// The list element (`mix.gains[1]=0.5`); nil for the whole parameter.
    /// The list must be written in the graph.
    public var element: Int?
    /// The value as typed.
    public var text: String
    /// For messages, e.g. `--set g.gain=-6`.
    public var origin: String
    /// Where a relative path given here resolves (absolute).
    public var directory: String

    public init(node: String, parameter: String, element: Int? = nil, text: String, origin: String, directory: String) {
        self.node = node
        self.parameter = parameter
        self.element = element
        self.text = text
        self.origin = origin
        self.directory = directory
    }

    /// The value to put in the document for a parameter described by `p`
    /// (nil when the node's type is unknown). [any-thread]
    func value(for p: ParameterDescriptor?, at location: SourceLocation) -> JSONValue {
        var value = (try? JSONParser.parse(text)) ?? JSONValue(kind: .string(text), location: location)
        let takesString: Bool = switch p?.type {
        case .string, .path, .outputPath, .choice: element == nil
        case .stringList: element != nil
        default: false
        }
        if takesString, value.string == nil { value = JSONValue(kind: .string(text), location: location) }
        if let p, p.type == .path || p.type == .outputPath, element == nil,
           let s = value.string, !s.isEmpty, !s.utf8.contains(0) {
            value = JSONValue(kind: .string(GraphPaths.resolve(s, against: directory)), location: location)
        }
        return value
    }
}

/// The document with the overrides applied: where each one landed, and the
/// overrides that could not be applied, as diagnostics.
struct OverriddenDocument {
    var root: JSONValue
    /// The pointer each applied override wrote, with its origin, in order.
    var applied: [(pointer: JSONPointer, origin: String)]
    var problems: [Diagnostic]

    /// `d`, located at the command line instead of the file and marked with
    /// the override's origin when it concerns an overridden value.
    func attributed(_ d: Diagnostic) -> Diagnostic {
        guard let hit = applied.last(where: { d.pointer.tokens.starts(with: $0.pointer.tokens) }) else { return d }
        var d = d
        d.location = nil
        d.message += " (from \(hit.origin))"
        return d
    }
}

extension GraphValidator {
    /// Reads the graph file at `path` and applies `overrides` to its
    /// document, as `validate(file:overrides:)` does before validating:
    /// for a caller that needs the overridden document itself (`agraph
    /// render --each` finds the file sinks in it). Fails with the
    /// diagnostics of an unreadable file, malformed JSON or an override
    /// naming no node or no parameter of the node's type. [main-thread | control-thread]
    public func document(file path: String, overrides: [ParameterOverride]) -> Result<JSONValue, GraphErrors> {
        ThreadRole.check(.main, .control)
        return Self.readGraphFile(path).flatMap { parse($0, file: path, overrides: overrides) }.flatMap { document in
            document.problems.isEmpty ? .success(document.root) : .failure(GraphErrors(document.problems))
        }
    }

    /// Parses a graph document and applies `overrides` to it; fails only on
    /// malformed JSON (the overrides' own problems are in the result).
    /// [main-thread]
    func parse(_ bytes: [UInt8], file: String, overrides: [ParameterOverride]) -> Result<OverriddenDocument, GraphErrors> {
        do {
            return .success(applying(overrides, to: try JSONParser.parse(bytes), file: file))
        } catch {
            return .failure(GraphErrors([Diagnostic(file: file, pointer: .root, location: error.location,
                message: "malformed JSON: \(error.message)")]))
        }
    }

    /// Writes each override into the document, in order (a later one wins).
    /// An override naming no node, a parameter the node's type does not
    /// have, or a list element the document does not hold is reported and
    /// left out; a node of an unknown type takes the value as given (the
    /// validator reports the type). [any-thread]
    func applying(_ overrides: [ParameterOverride], to document: JSONValue, file: String) -> OverriddenDocument {
        var result = OverriddenDocument(root: document, applied: [], problems: [])
        guard !overrides.isEmpty, var top = document.object, let nodesValue = top["nodes"], var nodes = nodesValue.array else {
            for o in overrides {
                result.problems.append(Diagnostic(file: file, pointer: JSONPointer.root.appending("nodes"),
                    message: "no node \"\(o.node)\": the graph has no list of nodes (from \(o.origin))"))
            }
            return result
        }
        let nodesPointer = JSONPointer.root.appending("nodes")
        let ids = nodes.compactMap { $0["id"]?.string }
        for o in overrides {
            func problem(_ pointer: JSONPointer, _ message: String) {
                result.problems.append(Diagnostic(file: file, pointer: pointer, nodeID: ids.contains(o.node) ? o.node : nil,
                                                  message: message + " (from \(o.origin))"))
            }
            guard let index = nodes.firstIndex(where: { $0["id"]?.string == o.node }), var members = nodes[index].object else {
                let hint = closestMatch(to: o.node, in: ids).map { "did you mean \"\($0)\"? " } ?? ""
                problem(nodesPointer, "no node \"\(o.node)\"; \(hint)the graph's nodes: \(ids.isEmpty ? "none" : ids.joined(separator: ", "))")
                continue
            }
            let nodeValue = nodes[index]
            let paramsPointer = nodesPointer.appending(index).appending("params")
            let pointer = paramsPointer.appending(o.parameter)
            let descriptor = nodeValue["type"]?.string.flatMap { registry[$0] }?.descriptor
            let p = descriptor?.parameter(named: o.parameter)
            if let descriptor, p == nil {
                problem(pointer, ValidationRun.unknownParameter(o.parameter, of: descriptor))
                continue
            }
            var params: OrderedDictionary<String, JSONValue>
            switch members["params"] {
            case nil: params = [:]
            case .some(let v):
                guard let object = v.object else {
                    problem(paramsPointer, "cannot set \"\(o.parameter)\": \"params\" of '\(o.node)' is not an object")
                    continue
                }
                params = object
            }
            let location = params[o.parameter]?.location ?? members["params"]?.location ?? nodeValue.location
            let value = o.value(for: p, at: location)
            if let element = o.element {
                guard let old = params[o.parameter], var list = old.array else {
                    problem(pointer, "cannot set \"\(o.parameter)\"[\(element)]: the graph gives no list \"\(o.parameter)\" for '\(o.node)'; set the whole list, e.g. --set \(o.node).\(o.parameter)=[…]")
                    continue
                }
                guard element < list.count else {
                    problem(pointer, "cannot set \"\(o.parameter)\"[\(element)]: the list has \(list.count) element\(list.count == 1 ? "" : "s")\(list.isEmpty ? "" : " (0…\(list.count - 1))")")
                    continue
                }
                list[element] = value
                params[o.parameter] = JSONValue(kind: .array(list), location: old.location)
                result.applied.append((pointer.appending(element), o.origin))
            } else {
                params[o.parameter] = value
                result.applied.append((pointer, o.origin))
            }
            members["params"] = JSONValue(kind: .object(params), location: members["params"]?.location ?? location,
                                          keyLocations: members["params"]?.keyLocations ?? [:])
            nodes[index] = JSONValue(kind: .object(members), location: nodeValue.location, keyLocations: nodeValue.keyLocations)
        }
        top["nodes"] = JSONValue(kind: .array(nodes), location: nodesValue.location)
        result.root = JSONValue(kind: .object(top), location: document.location, keyLocations: document.keyLocations)
        return result
    }
}
