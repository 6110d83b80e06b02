import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph abx --json FILE` on a private `jackd -d dummy`: a results file
/// that would destroy the graph or cannot be a file is refused before the
/// first trial (the listener's answers are never lost at the end), and the
/// results are written under a temporary name and renamed: a link planted
/// at the name is replaced, not written through (issue #22, item 6).
final class ABXOutputTests: LiveTestCase {
    /// Starts `agraph abx GRAPH --node cmp --trials 1 ARGS…`, answers the
    /// one trial (so that a run that is not refused ends by itself) and
    /// waits for it to exit.
    func abxOneTrial(server: TestJACKServer, graph: String, _ arguments: [String]) throws -> CLIProcess {
        let cli = try CLIProcess(["abx", graph, "--node", "cmp", "--trials", "1", "--seed", "7", "--server", "external",
                                  "--server-name", server.name] + arguments, directory: dir.path)
        cli.writeInBackground(Array("x=a\n".utf8))
        XCTAssertTrue(cli.waitForExit(timeout: 20), "agraph abx did not exit: \(cli.stderr)")
        return cli
    }

    func testJSONNamingTheGraphFileIsRefusedBeforeTheFirstTrialAndTheGraphIsUnchanged() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(ABXLiveTests.graph, "abx.json")
        let before = try Data(contentsOf: URL(fileURLWithPath: graph))
        for name in [graph, "abx.json", "./sub/../abx.json"] {
            try FileManager.default.createDirectory(atPath: dir.file("sub"), withIntermediateDirectories: true)
            let cli = try abxOneTrial(server: server, graph: graph, ["--json", name])
            XCTAssertEqual(cli.status, 1, cli.stderr)
            XCTAssertTrue(cli.stderr.contains("--json \(name): ") && cli.stderr.contains("is the graph file itself"), cli.stderr)
            XCTAssertFalse(cli.stdout.contains("trial 1"), "refused before the first trial: \(cli.stdout)")
            XCTAssertFalse(cli.stderr.contains("agraph: running"), "refused before JACK: \(cli.stderr)")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: graph)), before, "the graph file is byte for byte unchanged")
        }
    }

    func testJSONNamingAFolderIsRefusedBeforeTheFirstTrial() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(ABXLiveTests.graph, "abx.json")
        let folder = dir.file("results")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let cli = try abxOneTrial(server: server, graph: graph, ["--json", folder])
        XCTAssertEqual(cli.status, 1, cli.stderr)
        XCTAssertTrue(cli.stderr.contains("--json \(folder): it is a directory, not a regular file"), cli.stderr)
        XCTAssertFalse(cli.stdout.contains("trial 1"), "refused before the first trial: \(cli.stdout)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), [], "nothing written in the folder")
    }

    func testResultsReplaceALinkAtTheNameAndDoNotWriteThroughIt() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(ABXLiveTests.graph, "abx.json")
        let victim = dir.file("notes.txt")
        let victimBytes = Data("the user's notes, not a results file\n".utf8)
        try victimBytes.write(to: URL(fileURLWithPath: victim))
        let json = dir.file("results.json")
        XCTAssertEqual(symlink(victim, json), 0)

        let cli = try abxOneTrial(server: server, graph: graph, ["--json", json])
        XCTAssertEqual(cli.status, 0, cli.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: victim)), victimBytes, "the link's target is byte for byte unchanged")
        var st = stat()
        XCTAssertEqual(lstat(json, &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG, "the results are a regular file where the link was")
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        XCTAssertEqual(object["answered"] as? Int, 1)
        XCTAssertEqual(object["seed"] as? Int, 7)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".part") }
        XCTAssertEqual(leftovers, [], "no temporary file is left")
    }
}
