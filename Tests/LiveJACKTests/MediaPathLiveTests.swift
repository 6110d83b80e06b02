import AudioGraphPlugins
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 22 (B): a `media` path a user names must never block `agraph
/// run`'s main thread: a reload to a graph whose `media` path is a FIFO is
/// refused with the reason, the console still answers, and SIGTERM ends it.
final class MediaPathLiveTests: LiveTestCase {
    func testAReloadToAFIFOMediaPathIsRefusedAndTheConsoleAndSIGTERMStillWork() throws {
        XCTAssertEqual(mkfifo(dir.file("pipe.m4a"), 0o644), 0)
        let first = #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -12, "channels": 1}}, {"id": "out", "type": "jack-out", "params": {"ports": ["main_1"]}}], "links": [{"from": "tone", "to": "out"}]}"#
        let fifo = #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "m", "type": "media", "params": {"path": "pipe.m4a"}}, {"id": "dec", "type": "ffmpeg"}, {"id": "out", "type": "jack-out", "params": {"ports": ["main_1"]}}], "links": [{"from": "m", "to": "dec"}, {"from": "dec", "to": "out"}]}"#
        let server = try TestJACKServer()
        defer { server.stop() }
        let path = try writeGraph(first)
        _ = try writeGraph(fifo, "fifo.json")
        let cli = try startAgraphRun(path, server: server)
        defer { cli.kill() }
        cli.send("reload fifo.json")
        XCTAssertNotNil(cli.waitForStderr("the running graph plays on", timeout: 10), cli.stderr)
        XCTAssertTrue(cli.stderr.contains("/nodes/0/params/path") && cli.stderr.contains("FIFO"), cli.stderr)
        // The console answers: `status` prints the status line.
        let before = cli.stdout.count
        cli.send("status")
        XCTAssertTrue(waitUntil(timeout: 10) { cli.stdout.count > before && cli.stdout.dropFirst(before).contains("\n") },
                      "no reply to status after the reload: \(cli.stderr)")
        // SIGTERM ends it cleanly.
        cli.process.send(SIGTERM)
        XCTAssertTrue(cli.waitForExit(timeout: 10), "SIGTERM did not end agraph run: \(cli.stderr)")
        XCTAssertEqual(cli.status, 0, cli.stderr)
    }

    /// Issue 22 item 15: the status line says that a source is resampled.
    func testTheStatusLineSaysThatAMediaOrFileSourceIsResampled() throws {
        guard let ffmpeg = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        let made = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=5",
                                        "-ac", "1", "-ar", "44100", dir.file("tone-44k.wav")])
        guard made.status == 0 else { throw XCTSkip("ffmpeg could not make a WAV: \(made.stderr)") }
        let graph = #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "m", "type": "media", "params": {"path": "tone-44k.wav", "loop": true}}, {"id": "dec", "type": "ffmpeg"}, {"id": "out", "type": "jack-out", "params": {"ports": ["main_1"]}}], "links": [{"from": "m", "to": "dec"}, {"from": "dec", "to": "out"}]}"#
        let same = graph.replacingOccurrences(of: "tone-44k.wav", with: "tone-48k.wav")
        _ = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", dir.file("tone-44k.wav"), "-ar", "48000", dir.file("tone-48k.wav")])
        // A `file` source converted by its reader (resample "auto") says so too.
        let file = #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "f", "type": "file", "params": {"path": "tone-44k.wav", "loop": true}}, {"id": "out", "type": "jack-out", "params": {"ports": ["main_1"]}}], "links": [{"from": "f", "to": "out"}]}"#
        var cases: [(String, String?)] = [(file, "resampling 44100→48000 Hz")]
        // The media cases need the ffmpeg decoder plugin, which does not
        // load into the ThreadSanitizer build (Swift plugins); the file case
        // runs there too.
        if PluginCatalog.load().types.contains(where: { $0.descriptor.typeID == "ffmpeg" }) {
            cases += [(graph, "resampling 44100→48000 Hz"), (same, nil)]
        }
        for (json, expected) in cases {
            let server = try TestJACKServer()
            defer { server.stop() }
            let cli = try startAgraphRun(try writeGraph(json), server: server)
            defer { cli.kill() }
            let before = cli.stdout.count
            cli.send("status")
            var line = ""
            XCTAssertTrue(waitUntil(timeout: 10) {
                line = String(cli.stdout.dropFirst(before)).split(separator: "\n").first { $0.contains("xruns") }.map(String.init) ?? ""
                return !line.isEmpty
            }, "no status line: \(cli.stdout) \(cli.stderr)")
            if let expected {
                XCTAssertTrue(line.contains(expected), line)
            } else {
                XCTAssertFalse(line.contains("resampling"), line)
            }
            cli.send("quit")
            assertExitsCleanly(cli)
        }
    }
}
