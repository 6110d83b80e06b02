/// A parameter value of a graph built in code (`GraphBuilder`), written as
/// a Swift literal: `997`, `-20.5`, `"sine"`, `true`, `[1, 2]`,
/// `["path": "a.flac", "start": 2]`. It becomes the same JSON value in the
/// graph document, where the node type's rules check it like a file's.
public enum GraphValue: Sendable, Hashable {
    case number(Double)
    case bool(Bool)
    case string(String)
    case array([GraphValue])
    /// An object (a playlist item); its keys are written sorted.
    case object([String: GraphValue])

    /// The value as a JSON tree, or the JSON pointer tokens (below the
    /// value) of a number JSON cannot hold (NaN or an infinity).
    func json() -> Result<JSONOut, NonFiniteNumber> {
        switch self {
        case .number(let d):
            return d.isFinite ? .success(.number(d)) : .failure(NonFiniteNumber(tokens: [], value: d))
        case .bool(let b): return .success(.bool(b))
        case .string(let s): return .success(.string(s))
        case .array(let items):
            var out: [JSONOut] = []
            for (i, v) in items.enumerated() {
                switch v.json() {
                case .success(let j): out.append(j)
                case .failure(let e): return .failure(NonFiniteNumber(tokens: [String(i)] + e.tokens, value: e.value))
                }
            }
            return .success(.array(out))
        case .object(let members):
            var out: [(String, JSONOut)] = []
            for key in members.keys.sorted() {
                guard let v = members[key] else { continue }
                switch v.json() {
                case .success(let j): out.append((key, j))
                case .failure(let e): return .failure(NonFiniteNumber(tokens: [key] + e.tokens, value: e.value))
                }
            }
            return .success(.object(out))
        }
    }

    /// A number JSON cannot hold, and where it is below the value.
    struct NonFiniteNumber: Error {
        var tokens: [String]
        var value: Double
    }
}

extension GraphValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: GraphValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, GraphValue)...) {
        var members: [String: GraphValue] = [:]
        for (k, v) in elements { members[k] = v }
        self = .object(members)
    }
}

extension GraphValue {
    /// A number from a Swift value (`.init(someDouble)`, `.init(channels)`).
    public init(_ value: Double) { self = .number(value) }
    public init(_ value: Int) { self = .number(Double(value)) }
    public init(_ value: Bool) { self = .bool(value) }
    public init(_ value: String) { self = .string(value) }
}
