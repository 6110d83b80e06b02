import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// What `agraph compare --report DIR` writes, and the total it shows
/// (issue #22, items 7 and 15): the report files are written under
/// temporary names and renamed, so a link planted at `report.json` or
/// `index.html` is replaced, never written through; a link to the graph
/// is refused before the render; the progress total is the duration that
/// will be compared.
final class CompareOutputTests: XCTestCase {
    static let graph = """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "channels": 2, "duration": 1}},
          {"id": "g", "type": "gain", "params": {"gain": -6}},
          {"id": "out", "type": "null"}, {"id": "out2", "type": "null"}],
         "links": [{"from": "tone", "to": "out"}, {"from": "tone", "to": "g"}, {"from": "g", "to": "out2"}]}
        """

    func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG
    }

    func testALinkToTheGraphAtReportJSONIsRefusedAndTheGraphIsUnchanged() throws {
        let dir = try TemporaryDirectory("agraph-compare-out")
        let graph = dir.file("graph.json")
        try Self.graph.write(toFile: graph, atomically: true, encoding: .utf8)
        let before = try Data(contentsOf: URL(fileURLWithPath: graph))
        let report = dir.file("report")
        try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true)
        for name in ["report.json", "index.html"] {
            XCTAssertEqual(symlink(graph, report + "/" + name), 0)
            let run = try CLITests.agraph(arguments: ["compare", graph, "--a", "tone", "--b", "g", "--report", report, "--quiet"])
            XCTAssertEqual(run.status, 1, run.stderr)
            XCTAssertTrue(run.stderr.contains("--report \(report): ") && run.stderr.contains("is the graph file itself"), run.stderr)
            XCTAssertEqual(run.stdout, "", "refused before the render")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: graph)), before, "the graph file is byte for byte unchanged")
            unlink(report + "/" + name)
        }
    }

    func testLinksAtTheReportNamesAreReplacedNotWrittenThrough() throws {
        let dir = try TemporaryDirectory("agraph-compare-out")
        let graph = dir.file("graph.json")
        try Self.graph.write(toFile: graph, atomically: true, encoding: .utf8)
        let report = dir.file("report")
        try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true)
        var victims: [String: Data] = [:]
        for name in ["report.json", "index.html"] {
            let victim = dir.file("victim-" + name)
            let bytes = Data("not a report: \(name)\n".utf8)
            try bytes.write(to: URL(fileURLWithPath: victim))
            victims[victim] = bytes
            XCTAssertEqual(symlink(victim, report + "/" + name), 0)
        }
        let run = try CLITests.agraph(arguments: ["compare", graph, "--a", "tone", "--b", "g", "--report", report, "--quiet"])
        XCTAssertEqual(run.status, 0, run.stderr)
        for (victim, bytes) in victims {
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: victim)), bytes, "\(victim) is byte for byte unchanged")
        }
        for name in ["report.json", "index.html"] {
            XCTAssertTrue(isRegularFile(report + "/" + name), "\(name) is a regular file where the link was")
        }
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report + "/report.json"))) as? [String: Any])
        XCTAssertEqual(json["frames"] as? Int, 48000, "the report of the 1 s tone")
        XCTAssertTrue(try String(contentsOfFile: report + "/index.html", encoding: .utf8).hasPrefix("<!DOCTYPE html>"))
        XCTAssertEqual(BatchTests.names(in: report), ["index.html", "report.json"], "no temporary file is left")
    }

    /// A `media` source that stops at `end: 20` of a longer file: the
    /// progress bar (on a terminal, through `script`) counts to 20 s, the
    /// length compared, not the 30 s an endless graph would get.
    func testTheProgressTotalIsTheComparedDuration() throws {
        guard let ffmpeg = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        guard let script = findExecutable("script") else { throw XCTSkip("script (util-linux) is not installed") }
        let dir = try TemporaryDirectory("agraph-compare-out")
        let made = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=500:duration=25:sample_rate=48000",
                                        "-ac", "2", "-c:a", "pcm_s16le", dir.file("long.wav")])
        XCTAssertEqual(made.status, 0, made.stderr)
        let graph = dir.file("media.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "src", "type": "media", "params": {"path": "long.wav", "end": 20}},
          {"id": "dec", "type": "ffmpeg"},
          {"id": "g", "type": "gain", "params": {"gain": -6}},
          {"id": "out", "type": "null"}, {"id": "out2", "type": "null"}],
         "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}, {"from": "dec", "to": "g"}, {"from": "g", "to": "out2"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let agraph = try CLITests.agraphPath()
        // Small blocks: a run long enough for the bar to be drawn (every 0.1 s).
        let command = [agraph, "compare", graph, "--a", "dec", "--b", "g", "--block-frames", "64"].map { "'\($0)'" }.joined(separator: " ")
        let run = try runTool(script, ["-qec", command, "/dev/null"], timeout: 120)
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertTrue(run.stdout.contains("rendered 20.000 s (960000 frames"), run.stdout)
        let bars = run.stdout.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).filter { $0.contains("compare  [") }
        XCTAssertFalse(bars.isEmpty, "the bar was drawn: \(run.stdout)")
        let wrong = bars.filter { !$0.contains(" / 20.0 s") }
        XCTAssertEqual(wrong.count, 0, "the total is the 20 s compared: \(wrong.first ?? "")")
    }
}
