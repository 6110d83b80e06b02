import Foundation
import TestSupport
import XCTest

/// The published JSON Schema (`docs/graph.schema.json`) judged by a
/// standard validator (Python's `jsonschema`, draft 2020-12), beside the
/// project's own validator: every example graph passes both.
final class SchemaTests: XCTestCase {
    /// A Python 3 that has `jsonschema` (scripts/setup installs Debian's
    /// python3-jsonschema when none has it).
    static func python() throws -> String {
        for candidate in ["/usr/bin/env", "/usr/bin/python3"] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: candidate)
            p.arguments = (candidate.hasSuffix("env") ? ["python3"] : []) + ["-c", "import jsonschema"]
            p.standardError = FileHandle.nullDevice
            p.standardOutput = FileHandle.nullDevice
            guard (try? p.run()) != nil else { continue }
            p.waitUntilExit()
            if p.terminationStatus == 0 { return candidate }
        }
        throw XCTSkip("no Python 3 with the jsonschema module; run scripts/setup (it installs python3-jsonschema)")
    }

    func testEveryExampleGraphPassesTheSchemaWithAStandardValidator() throws {
        let python = try Self.python()
        let root = CLITests.repoRoot.path
        let examples = try ["Graphs", "Graphs/daa"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: root + "/" + folder)
                .filter { $0.hasSuffix(".json") }.sorted().map { root + "/" + folder + "/" + $0 }
        }
        XCTAssertGreaterThan(examples.count, 5)
        let script = """
            import json, sys
            from jsonschema import Draft202012Validator
            schema = json.load(open(sys.argv[1]))
            Draft202012Validator.check_schema(schema)
            v = Draft202012Validator(schema)
            bad = 0
            for path in sys.argv[2:]:
                errors = sorted(v.iter_errors(json.load(open(path))), key=lambda e: list(e.path))
                for e in errors[:3]:
                    print(f"{path}: /{'/'.join(map(str, e.path))}: {e.message[:300]}")
                bad += bool(errors)
            sys.exit(1 if bad else 0)
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = (python.hasSuffix("env") ? ["python3"] : []) + ["-c", script, root + "/docs/graph.schema.json"] + examples
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "the schema rejects example graphs:\n\(text)")

        // A plugin type the schema was not generated with passes as a
        // generic reverse-DNS node; a misspelt built-in type does not.
        let dir = try TemporaryDirectory()
        let other = dir.file("other.json"), typo = dir.file("typo.json")
        try #"{"format": "agraph/1", "nodes": [{"id": "x", "type": "org.example.reverb", "params": {"size": 3}}, {"id": "n", "type": "null"}], "links": [{"from": "x", "to": "n"}]}"#
            .write(toFile: other, atomically: true, encoding: .utf8)
        try #"{"format": "agraph/1", "nodes": [{"id": "x", "type": "test-tone", "params": {"frequncy": 3}}, {"id": "n", "type": "null"}], "links": [{"from": "x", "to": "n"}]}"#
            .write(toFile: typo, atomically: true, encoding: .utf8)
        // A playlist item with a field items do not have.
        let item = dir.file("item.json")
        try #"{"format": "agraph/1", "nodes": [{"id": "pl", "type": "playlist", "params": {"items": [{"path": "a.flac", "gian": 3}]}}, {"id": "n", "type": "null"}], "links": [{"from": "pl", "to": "n"}]}"#
            .write(toFile: item, atomically: true, encoding: .utf8)
        for (file, valid) in [(other, true), (typo, false), (item, false)] {
            let q = Process()
            q.executableURL = URL(fileURLWithPath: python)
            q.arguments = (python.hasSuffix("env") ? ["python3"] : []) + ["-c", script, root + "/docs/graph.schema.json", file]
            q.standardOutput = FileHandle.nullDevice
            try q.run()
            q.waitUntilExit()
            XCTAssertEqual(q.terminationStatus == 0, valid, file)
        }
    }
}
