/// A small ordered JSON tree and its pretty printer, for output whose key
/// order matters (the published schema, `--json` reports).
public indirect enum JSONOut: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONOut])
    case object([(String, JSONOut)])

    public static func == (a: JSONOut, b: JSONOut) -> Bool { a.rendered() == b.rendered() }

    /// Pretty JSON with two-space indentation and a final newline at top level.
    public func rendered(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent + 1)
        let end = String(repeating: "  ", count: indent)
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let d):
            if d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
            return String(d)
        case .string(let s): return Self.quote(s)
        case .array(let items):
            if items.isEmpty { return "[]" }
            if items.allSatisfy({ if case .array = $0 { false } else if case .object = $0 { false } else { true } }) {
                return "[" + items.map { $0.rendered() }.joined(separator: ", ") + "]"
            }
            return "[\n" + items.map { pad + $0.rendered(indent: indent + 1) }.joined(separator: ",\n") + "\n" + end + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n" + members.map { pad + Self.quote($0.0) + ": " + $0.1.rendered(indent: indent + 1) }
                .joined(separator: ",\n") + "\n" + end + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}

extension ParameterValue {
    var json: JSONOut {
        switch self {
        case .number(let d): .number(d)
        case .boolean(let b): .bool(b)
        case .string(let s): .string(s)
        case .numberList(let l): .array(l.map { .number($0) })
        case .booleanList(let l): .array(l.map { .bool($0) })
        case .stringList(let l): .array(l.map { .string($0) })
        case .channelList(let l): .array(l.map {
            switch $0 {
            case .index(let i): .number(Double(i))
            case .name(let s): .string(s)
            }
        })
        case .numberMatrix(let m): .array(m.map { .array($0.map { .number($0) }) })
        case .objectList(let l): .array(l.map { o in .object(o.keys.sorted().compactMap { k in o[k].map { (k, $0.json) } }) })
        }
    }
}
