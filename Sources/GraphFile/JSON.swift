// A small, strict (RFC 8259) JSON parser that records where every value and object key starts,
// preserves object key order and rejects duplicate keys. Graph-file diagnostics are built on it:
// they name `file:line:column` and a JSON pointer for each problem.

import OrderedCollections

// MARK: - SourceLocation

/// A position in a JSON document.
///
/// - `line` is 1-based. Line breaks are `\n`, `\r\n` or a lone `\r`.
/// - `column` is 1-based and counts **UTF-8 bytes** from the start of the line, so in `{"é": 1}`
///   the colon is at column 6, not 5. A UTF-8 byte order mark at the very start of the
///   document is not counted in the columns of line 1.
/// - `offset` is the 0-based byte offset from the start of the input (byte order mark included).
///
/// Locations order by `offset`, which is file order.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 1-based line number.
    public var line: Int
    /// 1-based column, in UTF-8 bytes from the start of the line.
    public var column: Int
    /// 0-based byte offset from the start of the input.
    public var offset: Int

    /// Creates a location from its parts; no consistency check is made between them.
    public init(line: Int, column: Int, offset: Int) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    /// `"line:column"`, e.g. `"3:5"`.
    public var description: String { "\(line):\(column)" }

    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        lhs.offset < rhs.offset
    }
}

// MARK: - JSONValue

/// A parsed JSON value together with the location where it starts.
///
/// For arrays and objects, nested values carry their own locations; for objects,
/// ``keyLocations`` additionally records where each key (its opening quote) starts.
public struct JSONValue: Sendable, Equatable {
    /// What kind of value this is, with its payload.
    public enum Kind: Sendable, Equatable {
        case null
        case bool(Bool)
        /// A number. `isInteger` is true when the literal had neither a fraction nor an
        /// exponent (`1` and `-0`, but not `1.0` or `1e2`).
        case number(Double, isInteger: Bool)
        case string(String)
        case array([JSONValue])
        /// An object; members are kept in the order they appear in the document.
        case object(OrderedDictionary<String, JSONValue>)
    }

    /// The value.
    public var kind: Kind
    /// Where the value starts (its first character).
    public var location: SourceLocation
    /// Where each object key starts (the key's opening quote); empty for non-objects.
    /// Iterate the object's members (``object``) for file order.
    public var keyLocations: [String: SourceLocation]

    /// Creates a value; `keyLocations` only makes sense for objects.
    public init(kind: Kind, location: SourceLocation, keyLocations: [String: SourceLocation] = [:]) {
        self.kind = kind
        self.location = location
        self.keyLocations = keyLocations
    }

    /// Whether the value is `null`.
    public var isNull: Bool {
        if case .null = kind { return true }
        return false
    }

    /// The boolean, if this is `true` or `false`.
    public var bool: Bool? {
        if case .bool(let value) = kind { return value }
        return nil
    }

    /// The number, if this is a number (integer or not).
    public var number: Double? {
        if case .number(let value, _) = kind { return value }
        return nil
    }

    /// The number as an `Int`, if the literal was an integer (no fraction, no exponent) whose
    /// value is known exactly.
    ///
    /// Numbers are stored as `Double`, so integers of magnitude 2^53 or more may already have been
    /// rounded; for those this returns `nil` rather than a possibly wrong value.
    public var integer: Int? {
        guard case .number(let value, isInteger: true) = kind,
              value.magnitude < 9_007_199_254_740_992 // 2^53
        else { return nil }
        return Int(exactly: value)
    }

    /// The string, if this is a string.
    public var string: String? {
        if case .string(let value) = kind { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var array: [JSONValue]? {
        if case .array(let value) = kind { return value }
        return nil
    }

    /// The members in document order, if this is an object.
    public var object: OrderedDictionary<String, JSONValue>? {
        if case .object(let value) = kind { return value }
        return nil
    }

    /// The member named `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = kind { return members[key] }
        return nil
    }

    /// The JSON type name for messages: `"null"`, `"boolean"`, `"integer"` (a number literal
    /// without fraction or exponent), `"number"`, `"string"`, `"array"` or `"object"`.
    public var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "boolean"
        case .number(_, let isInteger): isInteger ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

// MARK: - JSONSyntaxError

/// A syntax error: the location of the offending character and a one-line message.
///
/// Messages include, for example:
/// - `expected ',' or ']' after an array element, found 'x'`
/// - `unterminated string` (located at the opening quote)
/// - `duplicate key "id" (first at line 3:5)` (located at the second key)
/// - `trailing characters after the JSON value`
/// - `unexpected end of input` (possibly followed by which array or object is not closed)
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the problem is.
    public var location: SourceLocation
    /// What the problem is; does not include the location.
    public var message: String

    /// Creates an error.
    public init(location: SourceLocation, message: String) {
        self.location = location
        self.message = message
    }

    /// `"line:column: message"`; callers prepend the file name.
    public var description: String { "\(location): \(message)" }
}

// MARK: - JSONParser

/// Strict RFC 8259 JSON parsing with source locations.
///
/// - No comments, trailing commas, `NaN`/`Infinity`, leading zeros, single quotes or
///   unescaped control characters in strings.
/// - All escapes are decoded, including `\uXXXX` surrogate pairs; unpaired surrogates are errors.
/// - Strings must be valid UTF-8.
/// - A UTF-8 byte order mark at the start is skipped.
/// - Arrays and objects may nest at most ``maximumDepth`` levels; deeper input is an error
///   (the parser is iterative, so no input can overflow the stack).
/// - Numbers are parsed with correct rounding; numbers whose magnitude is too large for a
///   `Double` (e.g. `1e400`) are errors.
/// - Duplicate object keys are errors. Keys are compared as Swift `String`s, i.e. by Unicode
///   canonical equivalence, so `"\u00e9"` and `"e\u0301"` count as the same key.
public enum JSONParser {
    /// The maximum nesting depth of arrays and objects (a top-level `[]` has depth 1).
    public static let maximumDepth = 512

    /// Parses a complete JSON document from UTF-8 bytes.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var parser = Parser(bytes: Array(bytes))
        return try parser.parseDocument()
    }

    /// Parses a complete JSON document from a string.
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}

/// The parser's state. Containers being parsed live on an explicit stack (``frames``) instead
/// of the call stack, so nesting depth is bounded only by ``JSONParser/maximumDepth``.
private struct Parser {
    /// An array or object whose elements are being parsed.
    private struct Frame {
        var start: SourceLocation
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: OrderedDictionary<String, JSONValue> = [:]
        var keyLocations: [String: SourceLocation] = [:]
        /// The key whose value is being parsed (objects only).
        var pendingKey = ""

        var kindName: String { isObject ? "object" : "array" }
    }

    private let bytes: [UInt8]
    /// Offset of the next byte to read.
    private var position = 0
    /// Line of `position`.
    private var line = 1
    /// Offset of the first byte of the current line (column 1).
    private var lineStart = 0
    private var frames: [Frame] = []
    /// Reused buffer for decoding strings.
    private var scratch: [UInt8] = []

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    // MARK: Document and values

    mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            position = 3
            lineStart = 3
        }
        let value = try parseValue()
        skipWhitespace()
        if position < bytes.count {
            throw error("trailing characters after the JSON value")
        }
        return value
    }

    /// Parses one value, including everything nested in it.
    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        // Whether the value being looked for follows a ',' in an array (for a better message
        // on trailing commas).
        var afterComma = false
        nextValue: while true {
            skipWhitespace()
            let start = location
            guard let byte = peek() else { throw endOfInput() }
            var value: JSONValue
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = byte == UInt8(ascii: "{")
                guard frames.count < JSONParser.maximumDepth else {
                    throw error("nesting too deep: arrays and objects may nest at most \(JSONParser.maximumDepth) levels")
                }
                position += 1
                skipWhitespace()
                let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if peek() == closing {
                    position += 1
                    value = JSONValue(kind: isObject ? .object([:]) : .array([]), location: start)
                } else {
                    frames.append(Frame(start: start, isObject: isObject))
                    if isObject {
                        try parseKeyAndColon(afterComma: false)
                    }
                    afterComma = false
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                value = JSONValue(kind: .string(try parseString()), location: start)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber()
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                value = try parseLiteral()
            default:
                throw unexpectedValueStart(afterComma: afterComma)
            }

            // Hand the finished value to the enclosing container; close containers as long as
            // their closing bracket follows.
            while let top = frames.indices.last {
                skipWhitespace()
                if frames[top].isObject {
                    let key = frames[top].pendingKey
                    frames[top].members[key] = value
                    switch peek() {
                    case UInt8(ascii: ","):
                        position += 1
                        try parseKeyAndColon(afterComma: true)
                        afterComma = false
                        continue nextValue
                    case UInt8(ascii: "}"):
                        position += 1
                        let frame = frames.removeLast()
                        value = JSONValue(kind: .object(frame.members), location: frame.start,
                                          keyLocations: frame.keyLocations)
                    default:
                        throw unexpected("expected ',' or '}' after an object member")
                    }
                } else {
                    frames[top].elements.append(value)
                    switch peek() {
                    case UInt8(ascii: ","):
                        position += 1
                        afterComma = true
                        continue nextValue
                    case UInt8(ascii: "]"):
                        position += 1
                        let frame = frames.removeLast()
                        value = JSONValue(kind: .array(frame.elements), location: frame.start)
                    default:
                        throw unexpected("expected ',' or ']' after an array element")
                    }
                }
            }
            return value
        }
    }

    /// Parses `"key" :` inside the innermost object (after its '{' or a ','), checks the key
    /// for duplicates and makes it the pending key.
    private mutating func parseKeyAndColon(afterComma: Bool) throws(JSONSyntaxError) {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else {
            if afterComma {
                let hint = peek() == UInt8(ascii: "}") ? " (trailing commas are not allowed)" : ""
                throw unexpected("expected a string key after ',' in an object", hint: hint)
            }
            let hint = peek() == UInt8(ascii: "'") ? " (keys must use double quotes)" : ""
            throw unexpected("expected a string key or '}' after '{'", hint: hint)
        }
        let keyLocation = location
        let key = try parseString()
        guard let top = frames.indices.last else { return }
        if let first = frames[top].keyLocations[key] {
            throw JSONSyntaxError(location: keyLocation,
                                  message: "duplicate key \(Self.quoted(key)) (first at line \(first))")
        }
        frames[top].keyLocations[key] = keyLocation
        frames[top].pendingKey = key
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else {
            throw unexpected("expected ':' after the object key \(Self.quoted(key))")
        }
        position += 1
    }

    // MARK: Scalars

    private static let literals: [(text: String, kind: JSONValue.Kind)] = [
        ("true", .bool(true)), ("false", .bool(false)), ("null", .null),
    ]

    /// Parses `true`, `false` or `null`; any other run of letters is an error. A prefix of one
    /// of them at the end of the input is reported as an unexpected end of input.
    private mutating func parseLiteral() throws(JSONSyntaxError) -> JSONValue {
        let start = location
        let startOffset = position
        while let byte = peek(), Self.isASCIILetter(byte) {
            position += 1
        }
        let word = bytes[startOffset..<position]
        for (literal, kind) in Self.literals where word.elementsEqual(literal.utf8) {
            return JSONValue(kind: kind, location: start)
        }
        if position == bytes.count, Self.literals.contains(where: { $0.text.utf8.starts(with: word) }) {
            throw endOfInput()
        }
        let text = Self.abbreviated(String(decoding: word, as: UTF8.self))
        throw JSONSyntaxError(
            location: start,
            message: "invalid literal '\(text)' (expected a JSON value: true, false, null, a number, a string, an array or an object)")
    }

    /// Parses a number per the RFC 8259 grammar; the current byte is '-' or a digit.
    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = location
        let startOffset = position
        var isInteger = true
        if peek() == UInt8(ascii: "-") {
            position += 1
        }
        guard let first = peek(), Self.isDigit(first) else {
            throw unexpected("expected a digit after '-'")
        }
        position += 1
        if first == UInt8(ascii: "0") {
            if let next = peek(), Self.isDigit(next) {
                throw error("leading zeros are not allowed in numbers")
            }
        } else {
            skipDigits()
        }
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard let digit = peek(), Self.isDigit(digit) else {
                throw unexpected("expected a digit after the decimal point")
            }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") {
                position += 1
            }
            guard let digit = peek(), Self.isDigit(digit) else {
                throw unexpected("expected a digit in the exponent")
            }
            skipDigits()
        }
        let text = String(decoding: bytes[startOffset..<position], as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw JSONSyntaxError(location: start,
                                  message: "number \(Self.abbreviated(text)) is too large to represent")
        }
        return JSONValue(kind: .number(number, isInteger: isInteger), location: start)
    }

    private mutating func skipDigits() {
        while let byte = peek(), Self.isDigit(byte) {
            position += 1
        }
    }

    /// Parses a string; the current byte is its opening quote. Strings never contain raw line
    /// breaks, so the line does not change while reading one.
    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let openingQuote = location
        position += 1
        scratch.removeAll(keepingCapacity: true)
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(openingQuote: openingQuote)
            case 0x0A, 0x0D:
                throw error("unterminated string: line break before the closing '\"' (write \\n to put a line break in a string)")
            case 0x00..<0x20:
                throw error("control character \(Self.codePoint(UInt32(byte))) in a string must be escaped")
            case 0x20..<0x80:
                scratch.append(byte)
                position += 1
            default:
                guard let length = Self.utf8SequenceLength(in: bytes, at: position) else {
                    throw error("invalid UTF-8 byte \(Self.hexByte(byte)) in a string")
                }
                scratch.append(contentsOf: bytes[position..<position + length])
                position += length
            }
        }
        throw JSONSyntaxError(location: openingQuote, message: "unterminated string")
    }

    /// Decodes one escape sequence into `scratch`; the current byte is the backslash.
    private mutating func parseEscape(openingQuote: SourceLocation) throws(JSONSyntaxError) {
        let escapeStart = location
        position += 1
        guard let escaped = peek() else {
            throw JSONSyntaxError(location: openingQuote, message: "unterminated string")
        }
        let simple: UInt8? = switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escaped
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
        if let simple {
            scratch.append(simple)
            position += 1
            return
        }
        guard escaped == UInt8(ascii: "u") else {
            let shown = (0x21...0x7E).contains(escaped) ? "'\\\(Character(Unicode.Scalar(escaped)))'" : "after '\\': \(describeCurrent())"
            throw JSONSyntaxError(location: escapeStart, message: "invalid escape sequence \(shown) in a string")
        }
        position += 1
        let unit = try parseHex4(openingQuote: openingQuote)
        var scalarValue = unit
        switch unit {
        case 0xD800...0xDBFF:
            // A high surrogate must be followed immediately by an escaped low surrogate.
            guard position + 1 < bytes.count,
                  bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
            else {
                throw JSONSyntaxError(location: escapeStart,
                                      message: "unpaired high surrogate \\u\(Self.hex4(unit)) in a string")
            }
            let savedPosition = position
            position += 2
            let low = try parseHex4(openingQuote: openingQuote)
            guard (0xDC00...0xDFFF).contains(low) else {
                position = savedPosition
                throw JSONSyntaxError(location: escapeStart,
                                      message: "unpaired high surrogate \\u\(Self.hex4(unit)) in a string")
            }
            scalarValue = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
        case 0xDC00...0xDFFF:
            throw JSONSyntaxError(location: escapeStart,
                                  message: "unpaired low surrogate \\u\(Self.hex4(unit)) in a string")
        default:
            break
        }
        guard let scalar = Unicode.Scalar(scalarValue) else {
            throw JSONSyntaxError(location: escapeStart, message: "invalid \\u escape in a string")
        }
        UTF8.encode(scalar) { scratch.append($0) }
    }

    /// Reads the four hex digits of a `\u` escape.
    private mutating func parseHex4(openingQuote: SourceLocation) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek() else {
                throw JSONSyntaxError(location: openingQuote, message: "unterminated string")
            }
            guard let digit = Self.hexDigitValue(byte) else {
                throw unexpected("expected 4 hexadecimal digits after '\\u'")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    // MARK: Position and whitespace

    private var location: SourceLocation {
        SourceLocation(line: line, column: position - lineStart + 1, offset: position)
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    /// Skips JSON whitespace (space, tab, line feed, carriage return), counting lines.
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09:
                position += 1
            case 0x0A:
                position += 1
                line += 1
                lineStart = position
            case 0x0D:
                position += 1
                if position < bytes.count, bytes[position] == 0x0A {
                    position += 1
                }
                line += 1
                lineStart = position
            default:
                return
            }
        }
    }

    // MARK: Errors

    /// An error at the current position.
    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(location: location, message: message)
    }

    /// "`expectation`, found X" at the current position, or an end-of-input error.
    private func unexpected(_ expectation: String, hint: String = "") -> JSONSyntaxError {
        guard position < bytes.count else { return endOfInput() }
        return error("\(expectation), found \(describeCurrent())\(hint)")
    }

    /// The error for a character that cannot start a value.
    private func unexpectedValueStart(afterComma: Bool) -> JSONSyntaxError {
        let hint = switch peek() {
        case UInt8(ascii: "]") where afterComma: " (trailing commas are not allowed)"
        case UInt8(ascii: "'"): " (strings must use double quotes)"
        case UInt8(ascii: "/"), UInt8(ascii: "#"): " (comments are not allowed)"
        case UInt8(ascii: "+"): " (numbers must not start with '+')"
        case UInt8(ascii: "."): " (numbers must start with a digit)"
        default: ""
        }
        return unexpected("expected a JSON value", hint: hint)
    }

    /// "unexpected end of input", naming the innermost unclosed array or object if any.
    private func endOfInput() -> JSONSyntaxError {
        var message = "unexpected end of input"
        if let frame = frames.last {
            message += " (the \(frame.kindName) starting at line \(frame.start) is not closed)"
        }
        return error(message)
    }

    /// Describes the byte at the current position for an error message.
    private func describeCurrent() -> String {
        guard let byte = peek() else { return "end of input" }
        switch byte {
        case 0x20...0x7E:
            return "'\(Character(Unicode.Scalar(byte)))'"
        case 0x00..<0x20, 0x7F:
            return "control character \(Self.codePoint(UInt32(byte)))"
        default:
            guard let length = Self.utf8SequenceLength(in: bytes, at: position) else {
                return "invalid UTF-8 byte \(Self.hexByte(byte))"
            }
            let text = String(decoding: bytes[position..<position + length], as: UTF8.self)
            let value = text.unicodeScalars.first.map { $0.value } ?? 0
            return "\(Self.codePoint(value)) '\(text)'"
        }
    }

    // MARK: Helpers

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func hexDigitValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// The length of the well-formed UTF-8 sequence starting at `offset` (whose first byte is
    /// not ASCII), or `nil` if it is ill-formed (overlong, surrogate, above U+10FFFF, truncated).
    private static func utf8SequenceLength(in bytes: [UInt8], at offset: Int) -> Int? {
        guard offset < bytes.count else { return nil }
        let lead = bytes[offset]
        // Length and the allowed range of the second byte (which rules out overlong forms,
        // surrogates and code points above U+10FFFF); later bytes are 0x80...0xBF.
        let (length, second): (Int, ClosedRange<UInt8>)
        switch lead {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: return nil
        }
        guard offset + length <= bytes.count, second.contains(bytes[offset + 1]) else { return nil }
        for index in offset + 2 ..< offset + length where !(0x80...0xBF).contains(bytes[index]) {
            return nil
        }
        return length
    }

    /// `U+XXXX`.
    private static func codePoint(_ value: UInt32) -> String {
        "U+" + hex4(value)
    }

    /// At least four uppercase hex digits.
    private static func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `0xFF`.
    private static func hexByte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return "0x" + (digits.count < 2 ? "0" : "") + digits
    }

    /// Shortens long text from the input for display in a message.
    private static func abbreviated(_ text: String, limit: Int = 40) -> String {
        text.count <= limit ? text : text.prefix(limit) + "…"
    }

    /// A key in double quotes, with quotes, backslashes and control characters escaped.
    private static func quoted(_ key: String) -> String {
        var result = "\""
        for scalar in abbreviated(key).unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\u{0}"..<"\u{20}", "\u{7F}": result += "\\u" + hex4(scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

// MARK: - JSONPointer

/// An RFC 6901 JSON pointer, e.g. `/nodes/0/params/gain`.
///
/// In the string form each token is preceded by `/`, with `~` written as `~0` and `/` as `~1`.
/// The root pointer (no tokens) is the empty string.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The reference tokens, unescaped.
    public var tokens: [String]

    /// Creates a pointer from unescaped tokens.
    public init(_ tokens: [String] = []) {
        self.tokens = tokens
    }

    /// The pointer to the whole document.
    public static let root = JSONPointer()

    /// This pointer extended by an object key.
    public func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens + [token])
    }

    /// This pointer extended by an array index.
    public func appending(_ index: Int) -> JSONPointer {
        appending(String(index))
    }

    /// The RFC 6901 string form; `""` for the root.
    public var description: String {
        var result = ""
        for token in tokens {
            result += "/"
            for scalar in token.unicodeScalars {
                switch scalar {
                case "~": result += "~0"
                case "/": result += "~1"
                default: result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }

    /// The string form for messages: `"/"` for the root, otherwise ``description``.
    ///
    /// Note that this is not a valid pointer to the root: as an RFC 6901 pointer, `"/"` refers
    /// to the member with the empty key. Use ``description`` where a pointer must round-trip.
    public var display: String {
        tokens.isEmpty ? "/" : description
    }

    /// Parses the RFC 6901 string form: `""` (the root) or one or more `/`-prefixed tokens.
    /// Returns `nil` if the text does not start with `/` or contains `~` not followed by `0` or `1`.
    public init?(parsing text: String) {
        var tokens: [String] = []
        var scalars = text.unicodeScalars.makeIterator()
        guard let first = scalars.next() else {
            self.init()
            return
        }
        guard first == "/" else { return nil }
        var token = ""
        while let scalar = scalars.next() {
            switch scalar {
            case "/":
                tokens.append(token)
                token = ""
            case "~":
                switch scalars.next() {
                case "0": token += "~"
                case "1": token += "/"
                default: return nil
                }
            default:
                token.unicodeScalars.append(scalar)
            }
        }
        tokens.append(token)
        self.init(tokens)
    }
}

extension JSONValue {
    /// The value that `pointer` refers to, or `nil` if there is none.
    ///
    /// Array indices must be written in canonical form (`0`, `12`; not `01` or `-`).
    public func value(at pointer: JSONPointer) -> JSONValue? {
        var current = self
        for token in pointer.tokens {
            switch current.kind {
            case .object(let members):
                guard let member = members[token] else { return nil }
                current = member
            case .array(let elements):
                guard let index = Self.arrayIndex(token), index < elements.count else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The array index a pointer token denotes: digits without a leading zero (except `0`).
    private static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first,
              utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              first != UInt8(ascii: "0") || utf8.count == 1
        else { return nil }
        return Int(token)
    }
}
