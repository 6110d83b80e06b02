import Foundation
import TestSupport
import XCTest

/// `agraph abx`'s refusals, which come before anything touches JACK (the
/// trials themselves run against a test server in LiveJACKTests'
/// ABXLiveTests).
final class AbxTests: XCTestCase {
    static let graph = """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "a", "type": "test-tone", "params": {"frequency": 440}},
          {"id": "b", "type": "test-tone", "params": {"frequency": 660}},
          {"id": "cmp", "type": "ab"}, {"id": "g", "type": "gain"}, {"id": "out", "type": "null"}],
         "links": [{"from": "a", "to": "cmp:in0"}, {"from": "b", "to": "cmp:in1"}, {"from": "cmp", "to": "g"}, {"from": "g", "to": "out"}]}
        """

    /// Runs `agraph abx GRAPH ARGS…` on a server name no jackd uses, never
    /// starting one: a refusal must come first.
    func abx(_ arguments: [String]) throws -> CLITests.Run {
        let dir = try TemporaryDirectory()
        let path = dir.file("abx.json")
        try Self.graph.write(toFile: path, atomically: true, encoding: .utf8)
        return try CLITests.agraph(arguments: ["abx", path, "--server", "external", "--server-name", "agraph-no-such-server"] + arguments)
    }

    func testANodeThatIsNotAnAbNodeIsRefused() throws {
        let r = try abx(["--node", "g"])
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("'g' is a gain node, not an ab node; ab nodes in "), r.stderr)
        XCTAssertTrue(r.stderr.contains(": cmp"), r.stderr)
        XCTAssertFalse(r.stderr.contains("running"), "refused before JACK: \(r.stderr)")
        XCTAssertEqual(r.stdout, "")
    }

    func testAMissingNodeIsRefusedNamingTheAbNodes() throws {
        let r = try abx(["--node", "ab"])
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("no node 'ab' in ") && r.stderr.contains("its ab nodes: cmp"), r.stderr)
    }

    func testInputsAndCountsOutOfRangeAreRefused() throws {
        let a = try abx(["--node", "cmp", "--a", "2"])
        XCTAssertEqual(a.status, 1, a.stderr)
        XCTAssertTrue(a.stderr.contains("--a 2: 'cmp' has 2 inputs (in0…in1)"), a.stderr)

        let same = try abx(["--node", "cmp", "--a", "1", "--b", "1"])
        XCTAssertNotEqual(same.status, 0)
        XCTAssertTrue(same.stderr.contains("--a and --b must be different inputs"), same.stderr)

        let trials = try abx(["--node", "cmp", "--trials", "0"])
        XCTAssertNotEqual(trials.status, 0)
        XCTAssertTrue(trials.stderr.contains("--trials must be from 1 to 1000"), trials.stderr)

        let json = try abx(["--node", "cmp", "--json", "/no-such-folder/r.json"])
        XCTAssertEqual(json.status, 1, json.stderr)
        XCTAssertTrue(json.stderr.contains("cannot write in the folder /no-such-folder"), json.stderr)
    }

    func testHelpDocumentsThePromptCommands() throws {
        let r = try CLITests.agraph(arguments: ["abx", "--help"])
        XCTAssertEqual(r.status, 0)
        for command in ["a, b, x", "x=a, x=b", "answer a", "quit early", "--seed", "--json", "binomial"] {
            XCTAssertTrue(r.stdout.contains(command), "help mentions \(command):\n\(r.stdout)")
        }
    }
}
