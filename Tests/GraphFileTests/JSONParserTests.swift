import XCTest
import OrderedCollections
@testable import GraphFile
import TestSupport

final class JSONParserTests: XCTestCase {

    // MARK: Helpers

    private func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONValue? {
        do {
            return try JSONParser.parse(text)
        } catch {
            XCTFail("unexpected error \(error) for \(text.debugDescription)", file: file, line: line)
            return nil
        }
    }

    /// The error for `text`, which must not parse.
    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONSyntaxError? {
        parseError(Array(text.utf8), file: file, line: line)
    }

    private func parseError(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> JSONSyntaxError? {
        do {
            let value = try JSONParser.parse(bytes)
            XCTFail("expected an error, got \(value.kind)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// Asserts that `text` fails at `line`:`column` with a message containing `message`.
    private func assertError(_ text: String, _ message: String, at expectedLine: Int, _ expectedColumn: Int,
                             file: StaticString = #filePath, line: UInt = #line) {
        guard let error = parseError(text, file: file, line: line) else { return }
        XCTAssertTrue(error.message.contains(message),
                      "message \(error.message.debugDescription) does not contain \(message.debugDescription) for \(text.debugDescription)",
                      file: file, line: line)
        XCTAssertEqual(error.location.line, expectedLine, "line for \(text.debugDescription): \(error)", file: file, line: line)
        XCTAssertEqual(error.location.column, expectedColumn, "column for \(text.debugDescription): \(error)", file: file, line: line)
    }

    // MARK: Valid documents

    func testScalars() throws {
        XCTAssertEqual(try JSONParser.parse("null").kind, .null)
        XCTAssertEqual(try JSONParser.parse("true").kind, .bool(true))
        XCTAssertEqual(try JSONParser.parse("false").kind, .bool(false))
        XCTAssertEqual(try JSONParser.parse("\"hi\"").kind, .string("hi"))
        XCTAssertEqual(try JSONParser.parse("42").kind, .number(42, isInteger: true))
        XCTAssertEqual(try JSONParser.parse("-0.5").kind, .number(-0.5, isInteger: false))
        XCTAssertEqual(try JSONParser.parse("\"\"").kind, .string(""))
        XCTAssertEqual(try JSONParser.parse(" \t\r\n 7 \n").kind, .number(7, isInteger: true))

        let null = try JSONParser.parse("null")
        XCTAssertTrue(null.isNull)
        XCTAssertNil(null.bool)
        XCTAssertNil(null.number)
        XCTAssertNil(null.string)
        XCTAssertNil(null.array)
        XCTAssertNil(null.object)
        XCTAssertNil(null["x"])
        XCTAssertEqual(null.location, SourceLocation(line: 1, column: 1, offset: 0))
        XCTAssertEqual(null.keyLocations, [:])
    }

    func testContainersAndAccessors() throws {
        let value = try JSONParser.parse(#"{"a": [1, 2.5, "x", true, null, {}, []], "b": {"c": false}}"#)
        let a = try XCTUnwrap(value["a"]?.array)
        XCTAssertEqual(a.count, 7)
        XCTAssertEqual(a[0].integer, 1)
        XCTAssertEqual(a[1].number, 2.5)
        XCTAssertEqual(a[2].string, "x")
        XCTAssertEqual(a[3].bool, true)
        XCTAssertTrue(a[4].isNull)
        XCTAssertEqual(a[5].object, [:])
        XCTAssertEqual(a[6].array, [])
        XCTAssertEqual(value["b"]?["c"]?.bool, false)
        XCTAssertNil(value["missing"])
        XCTAssertEqual(value.object?.keys.elements, ["a", "b"])

        XCTAssertEqual(a.map(\.typeName), ["integer", "number", "string", "boolean", "null", "object", "array"])
        XCTAssertEqual(value.typeName, "object")
    }

    func testEmptyContainersWithWhitespace() throws {
        XCTAssertEqual(try JSONParser.parse("[ \n ]").kind, .array([]))
        XCTAssertEqual(try JSONParser.parse("{ \r\n }").kind, .object([:]))
        XCTAssertEqual(try JSONParser.parse("[[]]").array?.first?.array, [])
    }

    func testKeyOrderIsPreserved() throws {
        let keys = ["zeta", "alpha", "mu", "beta", "omega", "a", "z", "m"]
        let text = "{" + keys.enumerated().map { "\"\($1)\": \($0)" }.joined(separator: ", ") + "}"
        let object = try XCTUnwrap(JSONParser.parse(text).object)
        XCTAssertEqual(Array(object.keys), keys)
        XCTAssertEqual(object.values.map { $0.integer }, Array(0..<keys.count))
    }

    func testNumbers() throws {
        let cases: [(String, Double, Bool)] = [
            ("0", 0, true), ("-0", -0.0, true), ("1", 1, true), ("1.0", 1, false), ("1e2", 100, false),
            ("1E2", 100, false), ("1e+2", 100, false), ("1e-2", 0.01, false), ("-12.5e1", -125, false),
            ("0.1", 0.1, false), ("123456789", 123456789, true), ("0e0", 0, false),
            ("2.2250738585072012e-308", .leastNormalMagnitude, false), // a classic hard-to-round case
            ("1.7976931348623157e308", .greatestFiniteMagnitude, false),
            ("9007199254740993", 9007199254740992, true), // correctly rounded (ties to even)
            ("1e-400", 0, false), // underflow rounds to zero
        ]
        for (text, expected, isInteger) in cases {
            let value = try JSONParser.parse(text)
            XCTAssertEqual(value.kind, .number(expected, isInteger: isInteger), text)
            XCTAssertEqual(value.number?.sign, expected.sign, text)
        }
    }

    func testIntegerDetection() throws {
        XCTAssertEqual(try JSONParser.parse("1").integer, 1)
        XCTAssertEqual(try JSONParser.parse("-17").integer, -17)
        XCTAssertEqual(try JSONParser.parse("-0").integer, 0)
        XCTAssertNil(try JSONParser.parse("1.0").integer)
        XCTAssertNil(try JSONParser.parse("1e2").integer)
        XCTAssertNil(try JSONParser.parse("1.5").integer)
        XCTAssertEqual(try JSONParser.parse("9007199254740991").integer, 9_007_199_254_740_991)
        XCTAssertNil(try JSONParser.parse("9007199254740993").integer, "may have been rounded")
        XCTAssertNil(try JSONParser.parse("100000000000000000000000").integer)
        XCTAssertNil(try JSONParser.parse("\"1\"").integer)

        XCTAssertEqual(try JSONParser.parse("1").typeName, "integer")
        XCTAssertEqual(try JSONParser.parse("1.0").typeName, "number")
        XCTAssertEqual(try JSONParser.parse("1e2").typeName, "number")
        XCTAssertEqual(try JSONParser.parse("1e2").number, 100)
    }

    // MARK: Strings

    func testEscapes() throws {
        let value = try JSONParser.parse(#""\" \\ \/ \b \f \n \r \t \u0041\u00e9\u20AC\u0000""#)
        XCTAssertEqual(value.string, "\" \\ / \u{8} \u{C} \n \r \t Aé€\u{0}")
    }

    func testSurrogatePairs() throws {
        XCTAssertEqual(try JSONParser.parse(#""\ud83c\udfb5""#).string, "🎵")
        XCTAssertEqual(try JSONParser.parse(#""\uD834\uDD1E x""#).string, "𝄞 x")
        XCTAssertEqual(try JSONParser.parse(#""\uDBFF\uDFFF""#).string, "\u{10FFFF}")

        assertError(#""\uD83C""#, "unpaired high surrogate \\uD83C", at: 1, 2)
        assertError(#""ab\uD83Cx""#, "unpaired high surrogate", at: 1, 4)
        assertError(#""\uD83C\u0041""#, "unpaired high surrogate", at: 1, 2)
        assertError(#""\uD83C\n""#, "unpaired high surrogate", at: 1, 2)
        assertError(#""\uD83C\uD83C""#, "unpaired high surrogate", at: 1, 2)
        assertError(#""\uDFB5""#, "unpaired low surrogate \\uDFB5", at: 1, 2)
        assertError(#""x\uDC00\uD800""#, "unpaired low surrogate", at: 1, 3)
    }

    func testUnicodeText() throws {
        XCTAssertEqual(try JSONParser.parse("\"héllo ☃ 🎵\"").string, "héllo ☃ 🎵")
        XCTAssertEqual(try JSONParser.parse("\"\u{7F}\"").string, "\u{7F}", "DEL need not be escaped")
    }

    func testInvalidUTF8InStrings() {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22],             // never valid
            [0x22, 0xC0, 0x80, 0x22],       // overlong NUL
            [0x22, 0xED, 0xA0, 0x80, 0x22], // encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], // above U+10FFFF
            [0x22, 0xE2, 0x82, 0x22],       // truncated sequence
            [0x22, 0x80, 0x22],             // lone continuation byte
        ] {
            guard let error = parseError(bytes) else { continue }
            XCTAssertTrue(error.message.contains("invalid UTF-8"), "\(bytes): \(error)")
            XCTAssertEqual(error.location.column, 2, "\(bytes)")
        }
    }

    func testByteOrderMark() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("{\"a\": x}".utf8)
        let error = try XCTUnwrap(parseError(bytes))
        XCTAssertEqual(error.location, SourceLocation(line: 1, column: 7, offset: 9), "BOM does not count in columns")
        let value = try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array(" [1]".utf8))
        XCTAssertEqual(value.location, SourceLocation(line: 1, column: 2, offset: 4))
        XCTAssertEqual(try JSONParser.parse("\u{FEFF}true").bool, true)
        // A BOM anywhere else is not whitespace.
        assertError("true\u{FEFF}", "trailing characters", at: 1, 5)
        assertError(" \u{FEFF}true", "expected a JSON value, found U+FEFF", at: 1, 2)
    }

    func testParsesAnyByteCollection() throws {
        XCTAssertEqual(try JSONParser.parse("[1]".utf8).array?.count, 1)
        let slice = Array("xx[true]".utf8)[2...]
        XCTAssertEqual(try JSONParser.parse(slice).array?.first?.bool, true)
    }

    // MARK: Locations

    func testValueAndKeyLocations() throws {
        let text = """
        {
          "name": "tone",
          "nodes": [
            1,
              {"id": null}
          ],
            "é": true
        }
        """
        let root = try JSONParser.parse(text)
        XCTAssertEqual(root.location, SourceLocation(line: 1, column: 1, offset: 0))
        XCTAssertEqual(root.keyLocations["name"], SourceLocation(line: 2, column: 3, offset: 4))
        XCTAssertEqual(root["name"]?.location, SourceLocation(line: 2, column: 11, offset: 12))
        XCTAssertEqual(root.keyLocations["nodes"]?.description, "3:3")
        XCTAssertEqual(root["nodes"]?.location.description, "3:12")
        let nodes = try XCTUnwrap(root["nodes"]?.array)
        XCTAssertEqual(nodes[0].location.description, "4:5")
        XCTAssertEqual(nodes[1].location.description, "5:7")
        XCTAssertEqual(nodes[1].keyLocations["id"]?.description, "5:8")
        XCTAssertEqual(nodes[1]["id"]?.location.description, "5:14")
        XCTAssertEqual(root.keyLocations["é"]?.description, "7:5")
        XCTAssertEqual(root["é"]?.location.description, "7:11", "columns count UTF-8 bytes")
        XCTAssertEqual(nodes[0].keyLocations, [:])
        // Offsets agree with the text.
        let bytes = Array(text.utf8)
        let idOffset = try XCTUnwrap(nodes[1].keyLocations["id"]?.offset)
        XCTAssertEqual(Array(bytes[idOffset..<idOffset + 4]), Array("\"id\"".utf8))
    }

    func testLineBreakStyles() throws {
        for newline in ["\n", "\r\n", "\r"] {
            let text = ["[", "1,", "  2", "]"].joined(separator: newline)
            let elements = try XCTUnwrap(JSONParser.parse(text).array, newline.debugDescription)
            XCTAssertEqual(elements[0].location.line, 2, newline.debugDescription)
            XCTAssertEqual(elements[1].location.line, 3, newline.debugDescription)
            XCTAssertEqual(elements[1].location.column, 3, newline.debugDescription)
            assertError(["[", "1,", "  x", "]"].joined(separator: newline), "expected a JSON value", at: 3, 3)
        }
    }

    func testSourceLocationDescriptionAndOrder() {
        let a = SourceLocation(line: 3, column: 5, offset: 20)
        let b = SourceLocation(line: 4, column: 1, offset: 30)
        XCTAssertEqual(a.description, "3:5")
        XCTAssertLessThan(a, b)
        let error = JSONSyntaxError(location: a, message: "boom")
        XCTAssertEqual(error.description, "3:5: boom")
    }

    // MARK: Errors

    func testErrorKinds() {
        // Array and object punctuation.
        assertError("[1, 2 x]", "expected ',' or ']' after an array element, found 'x'", at: 1, 7)
        assertError("[1 2]", "expected ',' or ']' after an array element, found '2'", at: 1, 4)
        assertError("[1,]", "expected a JSON value, found ']' (trailing commas are not allowed)", at: 1, 4)
        assertError("[,1]", "expected a JSON value, found ','", at: 1, 2)
        assertError("{\"a\": 1,}", "expected a string key after ',' in an object, found '}' (trailing commas are not allowed)", at: 1, 9)
        assertError("{\"a\": 1 \"b\": 2}", "expected ',' or '}' after an object member, found '\"'", at: 1, 9)
        assertError("{\"a\" 1}", "expected ':' after the object key \"a\", found '1'", at: 1, 6)
        assertError("{a: 1}", "expected a string key or '}' after '{', found 'a'", at: 1, 2)
        assertError("{'a': 1}", "(keys must use double quotes)", at: 1, 2)
        assertError("{1: 1}", "expected a string key or '}' after '{', found '1'", at: 1, 2)
        assertError("{\"a\": }", "expected a JSON value, found '}'", at: 1, 7)
        assertError("[1}", "expected ',' or ']' after an array element, found '}'", at: 1, 3)
        assertError("{\"a\": 1]", "expected ',' or '}' after an object member, found ']'", at: 1, 8)
        assertError("]", "expected a JSON value, found ']'", at: 1, 1)

        // Strings.
        assertError("\"abc", "unterminated string", at: 1, 1)
        assertError("[\"abc\\", "unterminated string", at: 1, 2)
        assertError("[\"\\u12", "unterminated string", at: 1, 2)
        assertError("[\"ab\ncd\"]", "unterminated string: line break", at: 1, 5)
        assertError("\"a\tb\"", "control character U+0009 in a string must be escaped", at: 1, 3)
        assertError("\"a\u{1}b\"", "control character U+0001", at: 1, 3)
        assertError(#""\x""#, "invalid escape sequence '\\x'", at: 1, 2)
        assertError(#""\'""#, "invalid escape sequence '\\''", at: 1, 2)
        assertError(#""\u12G4""#, "expected 4 hexadecimal digits after '\\u', found 'G'", at: 1, 6)
        assertError("'a'", "expected a JSON value, found ''' (strings must use double quotes)", at: 1, 1)

        // Numbers.
        assertError("01", "leading zeros are not allowed in numbers", at: 1, 2)
        assertError("-01", "leading zeros are not allowed", at: 1, 3)
        assertError("[00]", "leading zeros", at: 1, 3)
        assertError("-", "unexpected end of input", at: 1, 2)
        assertError("-a", "expected a digit after '-', found 'a'", at: 1, 2)
        assertError("1.", "unexpected end of input", at: 1, 3)
        assertError("1.e5", "expected a digit after the decimal point, found 'e'", at: 1, 3)
        assertError("1e", "unexpected end of input", at: 1, 3)
        assertError("[1e+]", "expected a digit in the exponent, found ']'", at: 1, 5)
        assertError("+1", "expected a JSON value, found '+' (numbers must not start with '+')", at: 1, 1)
        assertError(".5", "(numbers must start with a digit)", at: 1, 1)
        assertError("[1, 1e400]", "number 1e400 is too large to represent", at: 1, 5)
        assertError("-1e400", "too large", at: 1, 1)
        assertError("NaN", "invalid literal 'NaN'", at: 1, 1)
        assertError("[-Infinity]", "expected a digit after '-', found 'I'", at: 1, 3)
        assertError("[Infinity]", "invalid literal 'Infinity'", at: 1, 2)
        assertError("0x10", "trailing characters after the JSON value", at: 1, 2)

        // Literals.
        assertError("[True]", "invalid literal 'True'", at: 1, 2)
        assertError("nul", "unexpected end of input", at: 1, 4)
        assertError("[nul]", "invalid literal 'nul'", at: 1, 2)
        assertError("truefalse", "invalid literal 'truefalse'", at: 1, 1)
        assertError("[null1]", "expected ',' or ']' after an array element, found '1'", at: 1, 6)

        // Comments and other characters.
        assertError("// c\n1", "expected a JSON value, found '/' (comments are not allowed)", at: 1, 1)
        assertError("[1] /* c */", "trailing characters after the JSON value", at: 1, 5)
        assertError("\u{C}1", "found control character U+000C", at: 1, 1)
        assertError("[é]", "found U+00E9 'é'", at: 1, 2)
        XCTAssertEqual(parseError([0x5B, 0xFF])?.message, "expected a JSON value, found invalid UTF-8 byte 0xFF")

        // Document level.
        assertError("", "unexpected end of input", at: 1, 1)
        assertError(" \n ", "unexpected end of input", at: 2, 2)
        assertError("1 2", "trailing characters after the JSON value", at: 1, 3)
        assertError("{}\n\n  }", "trailing characters after the JSON value", at: 3, 3)
        assertError("[1,\n 2", "unexpected end of input (the array starting at line 1:1 is not closed)", at: 2, 3)
        assertError("{\"a\": [1],\n \"b\": {\"c\": ", "unexpected end of input (the object starting at line 2:7 is not closed)", at: 2, 13)
        assertError("{\"a\"", "unexpected end of input", at: 1, 5)
        assertError("{", "unexpected end of input", at: 1, 2)
    }

    func testExactMessages() {
        XCTAssertEqual(parseError("[1 x]")?.message, "expected ',' or ']' after an array element, found 'x'")
        XCTAssertEqual(parseError("\"abc")?.message, "unterminated string")
        XCTAssertEqual(parseError("1 x")?.message, "trailing characters after the JSON value")
        XCTAssertEqual(parseError("")?.message, "unexpected end of input")
        XCTAssertEqual(parseError("{\n  \"id\": 1,\n  \"x\": 2,\n  \"id\": 3\n}")?.message,
                       "duplicate key \"id\" (first at line 2:3)")
        XCTAssertEqual(parseError("[1,")?.description, "1:4: unexpected end of input (the array starting at line 1:1 is not closed)")
    }

    func testDuplicateKeys() {
        assertError("{\n  \"id\": 1,\n  \"x\": {\"id\": 2},\n    \"id\": 3\n}", "duplicate key \"id\" (first at line 2:3)", at: 4, 5)
        assertError(#"{"a": 1, "a": 1}"#, "duplicate key \"a\" (first at line 1:2)", at: 1, 10)
        // Escapes are decoded before comparing.
        assertError(#"{"a": 1, "\u0061": 2}"#, "duplicate key \"a\"", at: 1, 10)
        assertError(#"{"q\"\n": 1, "q\"\n": 2}"#, #"duplicate key "q\"\n""#, at: 1, 14)
        // Swift String equality is canonical equivalence: precomposed and decomposed é collide.
        assertError(#"{"\u00e9": 1, "e\u0301": 2}"#, "duplicate key", at: 1, 15)
        // The same key in different objects is fine.
        XCTAssertNotNil(parse(#"[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]"#))
    }

    func testErrorLocationsInMultiLineDocument() {
        let text = """
        {
          "nodes": [
            {"id": "a", "type": "gain"},
            {"id": "b" "type": "mixer"}
          ]
        }
        """
        assertError(text, "expected ',' or '}' after an object member, found '\"'", at: 4, 16)
        let text2 = """
        {
          "graph": {
            "rate": 48000,
            "channels": 2,
          }
        }
        """
        assertError(text2, "trailing commas are not allowed", at: 5, 3)
    }

    // MARK: Nesting

    func testNestingLimit() throws {
        let limit = JSONParser.maximumDepth
        XCTAssertEqual(limit, 512)
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        var value = try JSONParser.parse(deepest)
        for _ in 1..<limit {
            value = try XCTUnwrap(value.array?.first)
        }
        XCTAssertEqual(value.array, [])

        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        assertError(tooDeep, "nesting too deep", at: 1, limit + 1)

        let objects = String(repeating: "{\"k\":", count: limit) + "1" + String(repeating: "}", count: limit)
        XCTAssertNotNil(parse(objects))
        let tooDeepObjects = String(repeating: "{\"k\":", count: limit + 1) + "1" + String(repeating: "}", count: limit + 1)
        assertError(tooDeepObjects, "nesting too deep", at: 1, limit * 5 + 1)

        // Far deeper input is an error, not a stack overflow.
        assertError(String(repeating: "[", count: 200_000), "nesting too deep", at: 1, limit + 1)
        assertError(String(repeating: "[{\"a\":", count: 100_000), "nesting too deep", at: 1, 3 * limit + 1)
    }

    func testLongFlatDocument() throws {
        let count = 50_000
        let text = "[" + (0..<count).map(String.init).joined(separator: ",") + "]"
        let elements = try XCTUnwrap(JSONParser.parse(text).array)
        XCTAssertEqual(elements.count, count)
        XCTAssertEqual(elements.last?.integer, count - 1)
    }

    // MARK: JSON pointer

    func testPointerDescription() {
        XCTAssertEqual(JSONPointer.root.description, "")
        XCTAssertEqual(JSONPointer.root.display, "/")
        XCTAssertEqual(JSONPointer(["nodes", "0", "params"]).description, "/nodes/0/params")
        XCTAssertEqual(JSONPointer.root.appending("nodes").appending(3).appending("gain").description, "/nodes/3/gain")
        XCTAssertEqual(JSONPointer(["a/b", "m~n", "~1", ""]).description, "/a~1b/m~0n/~01/")
        XCTAssertEqual(JSONPointer([""]).description, "/")
        XCTAssertEqual(JSONPointer(["x"]).display, "/x")
        XCTAssertEqual(JSONPointer(["x"]), JSONPointer.root.appending("x"))
    }

    func testPointerParsing() {
        XCTAssertEqual(JSONPointer(parsing: ""), .root)
        XCTAssertEqual(JSONPointer(parsing: "/"), JSONPointer([""]))
        XCTAssertEqual(JSONPointer(parsing: "/a/0"), JSONPointer(["a", "0"]))
        XCTAssertEqual(JSONPointer(parsing: "/a~1b/m~0n"), JSONPointer(["a/b", "m~n"]))
        XCTAssertEqual(JSONPointer(parsing: "/~01"), JSONPointer(["~1"]), "~01 is ~ then 1, not /")
        XCTAssertEqual(JSONPointer(parsing: "//x/"), JSONPointer(["", "x", ""]))
        XCTAssertEqual(JSONPointer(parsing: "/\u{301}"), JSONPointer(["\u{301}"]), "split on scalars, not characters")
        XCTAssertNil(JSONPointer(parsing: "a"))
        XCTAssertNil(JSONPointer(parsing: "/a~"))
        XCTAssertNil(JSONPointer(parsing: "/a~2"))
        XCTAssertNil(JSONPointer(parsing: "#/a"))

        let samples: [[String]] = [[], [""], ["a"], ["a/b", "~", "~0", "~1", "/", ""], ["é", "🎵", "sp ace"], ["", ""]]
        for tokens in samples {
            let pointer = JSONPointer(tokens)
            XCTAssertEqual(JSONPointer(parsing: pointer.description), pointer, "\(tokens)")
        }
    }

    func testValueAtPointer() throws {
        let document = try JSONParser.parse(#"{"nodes": [{"id": "a"}, {"id": "b", "p/q": {"~": 5}}], "": 7, "x": null}"#)
        XCTAssertEqual(document.value(at: .root), document)
        XCTAssertEqual(document.value(at: JSONPointer(["nodes", "1", "id"]))?.string, "b")
        XCTAssertEqual(document.value(at: JSONPointer.root.appending("nodes").appending(0).appending("id"))?.string, "a")
        XCTAssertEqual(document.value(at: try XCTUnwrap(JSONPointer(parsing: "/nodes/1/p~1q/~0")))?.integer, 5)
        XCTAssertEqual(document.value(at: try XCTUnwrap(JSONPointer(parsing: "/")))?.integer, 7)
        XCTAssertEqual(document.value(at: JSONPointer(["x"]))?.isNull, true)
        XCTAssertEqual(document.value(at: JSONPointer(["nodes", "1"]))?.location.description, "1:25")

        XCTAssertNil(document.value(at: JSONPointer(["nodes", "2"])))
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "01"])), "leading zeros are not indices")
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "-"])))
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "-1"])))
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "+1"])))
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "99999999999999999999999"])))
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "id"])))
        XCTAssertNil(document.value(at: JSONPointer(["missing"])))
        XCTAssertNil(document.value(at: JSONPointer(["x", "y"])), "cannot descend into null")
        XCTAssertNil(document.value(at: JSONPointer(["nodes", "0", "id", "z"])), "cannot descend into a string")
    }

    // MARK: Fuzzing

    /// Line and column of `offset` computed independently of the parser (line breaks may only
    /// precede an error or a value if they were consumed as whitespace).
    private func referenceLocation(in bytes: [UInt8], offset: Int) -> SourceLocation {
        var line = 1
        var lineStart = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var index = lineStart
        while index < offset {
            if bytes[index] == 0x0A {
                line += 1
                lineStart = index + 1
            } else if bytes[index] == 0x0D, !(index + 1 < bytes.count && bytes[index + 1] == 0x0A) {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        return SourceLocation(line: line, column: offset - lineStart + 1, offset: offset)
    }

    /// Parses `bytes` (which must not crash) and checks every reported location.
    private func checkParse(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> Bool {
        do {
            let value = try JSONParser.parse(bytes)
            var pending = [value]
            while let next = pending.popLast() {
                XCTAssertEqual(next.location, referenceLocation(in: bytes, offset: next.location.offset), file: file, line: line)
                for (_, location) in next.keyLocations {
                    XCTAssertEqual(location, referenceLocation(in: bytes, offset: location.offset), file: file, line: line)
                }
                if let elements = next.array { pending += elements }
                if let members = next.object {
                    pending += members.values
                    XCTAssertEqual(Set(members.keys), Set(next.keyLocations.keys), file: file, line: line)
                }
            }
            return true
        } catch {
            XCTAssertTrue((0...bytes.count).contains(error.location.offset), "\(error)", file: file, line: line)
            XCTAssertEqual(error.location, referenceLocation(in: bytes, offset: error.location.offset),
                           "\(error) for \(bytes)", file: file, line: line)
            XCTAssertFalse(error.message.isEmpty, file: file, line: line)
            return false
        }
    }

    func testFuzzRandomBytes() {
        var random = SplitMix64(seed: 0xA0D1_06A9)
        let alphabet = Array("{}[],:\"\\/ \n\r\t0123456789-+.eEtrufalsn".utf8) + [0x00, 0xC3, 0xA9, 0xFF, 0xED, 0xF0, 0x9F]
        var successes = 0
        for _ in 0..<4000 {
            let length = Int.random(in: 0...40, using: &random)
            var bytes: [UInt8] = []
            for _ in 0..<length {
                bytes.append(Bool.random(using: &random)
                    ? alphabet.randomElement(using: &random) ?? 0
                    : UInt8.random(in: 0...255, using: &random))
            }
            if checkParse(bytes) { successes += 1 }
        }
        XCTAssertGreaterThan(successes, 0, "some random inputs should be valid JSON (e.g. single digits)")
    }

    func testFuzzMutationsOfValidDocument() throws {
        let document = Array("""
        \u{FEFF}{
          "graph": {"rate": 48000, "channels": 2, "name": "t\\u00e9st \\ud83c\\udfb5 \\"q\\""},
          "nodes": [
            {"id": "osc", "type": "test-tone", "params": {"frequency": 440.5e0, "amp": -0.25}},
            {"id": "out", "type": "null", "params": {}, "tags": [true, false, null, [], [[1]]]}
          ],\r
          "edges": [["osc", "out"]], "é": "ü"
        }
        """.utf8)
        XCTAssertTrue(checkParse(document))
        var random = SplitMix64(seed: 42)
        let interesting = Array("{}[],:\"\\ \n\r0-.eu".utf8) + [0xFF, 0xC3, 0xD8]
        var failures = 0
        for _ in 0..<4000 {
            var bytes = document
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<max(bytes.count, 1), using: &random)
                let byte = Bool.random(using: &random)
                    ? interesting.randomElement(using: &random) ?? 0
                    : UInt8.random(in: 0...255, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0 where index < bytes.count: bytes[index] = byte
                case 1: bytes.insert(byte, at: min(index, bytes.count))
                case 2 where index < bytes.count: bytes.remove(at: index)
                case 3: bytes.removeSubrange(min(index, bytes.count)...)
                default:
                    // Duplicate a random chunk somewhere else.
                    let end = min(bytes.count, index + Int.random(in: 1...20, using: &random))
                    let chunk = Array(bytes[min(index, end)..<end])
                    bytes.insert(contentsOf: chunk, at: Int.random(in: 0...bytes.count, using: &random))
                }
            }
            if !checkParse(bytes) { failures += 1 }
        }
        XCTAssertGreaterThan(failures, 1000, "most mutations should break the document")
    }
}
