import AudioGraph
import AudioGraphJACK
import AudioGraphSndFile
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 22: the live host with 10,000 nodes (item 5), frames a recording
/// lost (item 9), and what `agraph run` says about reloads, a watched file
/// that goes away and `--duration` (item 15).
final class LiveScaleAndLossTests: LiveTestCase {

    // MARK: 10,000 nodes (item 5)

    /// A `test-tone` through `count` `gain` nodes into a `null`.
    static func chain(_ count: Int, waveform: String = "sine") -> String {
        GainChain.json(count: count, waveform: waveform)
    }

    /// How many status replies stdout holds.
    func statusReplies(_ cli: CLIProcess) -> Int {
        cli.stdout.split(separator: "\n").filter { $0.contains(" xruns ") && $0.contains(" DSP ") }.count
    }

    /// 10,000 nodes: `agraph run` answers `status` within seconds of its
    /// launch (24.6 s to start and no answer in a minute before, in a debug
    /// build: node lookups by id were linear inside per-node loops), and a
    /// reload that replaces every node is done, summarised in one short
    /// line, and the console answers again within seconds.
    func testTenThousandNodesStartAndReloadWithTheConsoleAnswering() throws {
        let n = 10_000
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(Self.chain(n))
        let launched = Date()
        let cli = try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name, "--quiet"], directory: dir.path)
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 60), cli.stderr)
        cli.write(Array("status\n".utf8))
        XCTAssertTrue(waitUntil(timeout: 60) { statusReplies(cli) == 1 }, "stdout: \(cli.stdout)\nstderr: \(cli.stderr)")
        let answered = Date().timeIntervalSince(launched)
        XCTAssertLessThan(answered, LiveTiming.seconds(10), "first status answered \(answered) s after launch")

        // Every node replaced: the source's waveform is not live.
        _ = try writeGraph(Self.chain(n, waveform: "square"), "square.json")
        let asked = Date()
        cli.write(Array("reload square.json\nstatus\n".utf8))
        let line = "agraph: reload: \(n + 2) replaced (src, g0, g1, g2, g3, … and \(n - 3) more), 0 kept"
        XCTAssertNotNil(cli.waitForStderr(line, timeout: 60), cli.stderr)
        XCTAssertTrue(waitUntil(timeout: 60) { statusReplies(cli) == 2 }, "stdout: \(cli.stdout)\nstderr: \(cli.stderr)")
        let reloaded = Date().timeIntervalSince(asked)
        XCTAssertLessThan(reloaded, LiveTiming.seconds(10), "reload and the next status took \(reloaded) s")
        XCTAssertFalse(cli.stderr.contains("g9999"), "no line lists every node")
        cli.write(Array("quit\n".utf8))
        assertExitsCleanly(cli, timeout: 30)
    }

    // MARK: dropped frames (item 9)

    static let recorder = """
        {"format": "agraph/1", "name": "rec", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -12, "channels": 1}},
          {"id": "rec", "type": "file-out", "params": {"path": "rec.wav", "bufferTime": 0.01}}],
         "links": [{"from": "tone", "to": "rec"}]}
        """

    /// A writer held back loses frames: the count is in an event, the
    /// status and `droppedFrames`, and equals the frames rendered minus
    /// the frames in the file. (The sink counted them and nothing read the
    /// count: a 12.56 s hole went unreported.) With `Options.duration` the
    /// graph renders that much audio, to the period.
    func testFramesAHeldWriterDropsAreReportedAndMissingFromTheFile() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let live = try startGraph(Self.recorder, server: server.name) { $0.duration = 3 }
        let events = EventLog(live.events)
        let sink = try XCTUnwrap(live.engine.node("rec") as? FileSinkNode)
        sink.holdWriter(true)
        // The ring (two largest periods) fills, then frames are dropped.
        let dropping = events.wait(timeout: 10) { if case .dropped(node: "rec", total: let t) = $0 { t > 0 } else { false } }
        XCTAssertNotNil(dropping, "\(events.all)")
        XCTAssertGreaterThan(live.status().droppedFrames, 0)
        XCTAssertTrue(live.status().text.contains(" dropped "), live.status().text)
        sink.holdWriter(false)
        XCTAssertTrue(waitUntil(timeout: 15) { live.durationReached }, "3 s rendered")
        // The monitor reports the final count.
        let final = live.droppedFrames["rec"] ?? 0
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .dropped(node: "rec", total: final) }, "\(events.all)")
        XCTAssertEqual(live.stop(), [])

        let rendered = live.engine.framePosition
        XCTAssertGreaterThanOrEqual(rendered, 3 * 48000)
        XCTAssertLessThan(rendered, 3 * 48000 + server.period, "--duration stops within a period")
        let file = try readSoundFile(dir.file("rec.wav"))
        XCTAssertGreaterThan(final, 0)
        XCTAssertEqual(rendered - file.samples.count, final, "every frame rendered is in the file or counted as dropped")
        XCTAssertEqual(live.status().droppedFrames, final)
        XCTAssertEqual(live.droppedFrames, ["rec": final])
    }

    /// `agraph run --duration 2` stops at 2 s of audio rendered, in frames
    /// (it stopped at 1.72 s: the wall clock counted from before the first
    /// cycle); a writer held back (`AGRAPH_TEST_HOLD_WRITERS`) loses frames
    /// and the end-of-run line says how many, the same number that is
    /// missing from the file, and the status line shows them.
    func testCLIStopsAtTheDurationInFramesAndReportsDroppedFrames() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(Self.recorder)
        let cli = try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name, "--duration", "2"],
                                 directory: dir.path, environment: ["AGRAPH_TEST_HOLD_WRITERS": "1"])
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr)
        usleep(900_000)
        cli.write(Array("status\n".utf8))
        XCTAssertTrue(cli.waitForExit(timeout: LiveTiming.seconds(15)), cli.stderr)
        XCTAssertEqual(cli.status, 0, cli.stderr)
        XCTAssertTrue(cli.stdout.contains(" dropped "), "the status reply shows the frames dropped: \(cli.stdout)")

        let match = try XCTUnwrap(cli.stderr.firstMatch(of: /stopped at ([0-9.]+) s \(([0-9]+) frames\).*; dropped ([0-9]+) frames not in their file \(rec ([0-9]+): the writer fell behind\)/),
                                  cli.stderr)
        let frames = try XCTUnwrap(Int(match.2)), dropped = try XCTUnwrap(Int(match.3))
        XCTAssertEqual(Int(match.4), dropped)
        XCTAssertGreaterThanOrEqual(frames, 2 * 48000)
        XCTAssertLessThan(frames, 2 * 48000 + server.period, "stopped within a period of 2 s rendered")
        // The seconds shown are the frames rendered (2.00 at a period of 256;
        // 2.01 under ThreadSanitizer, whose servers run at 1024).
        XCTAssertEqual(try XCTUnwrap(Double(match.1)), Double(frames) / 48000, accuracy: 0.006)
        let file = try readSoundFile(dir.file("rec.wav"))
        XCTAssertGreaterThan(dropped, 0)
        XCTAssertEqual(frames - file.samples.count, dropped, "rendered − in the file = reported")
    }

    // MARK: reload and watch messages (item 15)

    /// A reload the live host refuses says "reload:" once (it said
    /// "agraph: reload: reload: …").
    func testARefusedReloadSaysReloadOnce() throws {
        let other = Self.toneGraph(connect: nil).replacingOccurrences(of: #""sampleRate": 48000"#, with: #""sampleRate": 44100"#)
        _ = try writeGraph(other, "other.json")
        let stderr = try atTheConsole(of: Self.toneGraph(connect: nil)) { cli in
            cli.write(Array("reload other.json\n".utf8))
            XCTAssertNotNil(cli.waitForStderr("the running graph plays on", timeout: 10), cli.stderr)
            cli.write(Array("quit\n".utf8))
        }
        XCTAssertTrue(stderr.contains("agraph: reload: the new graph's \"sampleRate\" is 44100 Hz"), stderr)
        XCTAssertFalse(stderr.contains("reload: reload:"), stderr)
    }

    /// `--watch`: a deleted graph file is said once, the graph plays on,
    /// and the file is loaded again when it comes back (nothing was said,
    /// and a file put back unchanged in size and time was never reloaded).
    func testAWatchedFileThatGoesAwayIsSaidOnceAndLoadedWhenItComesBack() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(Self.toneGraph(gain: true, connect: nil))
        let cli = try startAgraphRun(graph, server: server, ["--quiet", "--watch"])
        defer { cli.kill() }
        XCTAssertEqual(unlink(graph), 0)
        let gone = "is gone; the running graph plays on, and the file is loaded again when it comes back"
        XCTAssertNotNil(cli.waitForStderr(gone, timeout: 10), cli.stderr)
        usleep(1_000_000)
        XCTAssertEqual(cli.stderr.components(separatedBy: gone).count - 1, 1, "said once: \(cli.stderr)")
        cli.write(Array("status\n".utf8))
        XCTAssertTrue(waitUntil(timeout: 10) { statusReplies(cli) == 1 }, "plays on: \(cli.stdout)\n\(cli.stderr)")
        _ = try writeGraph(Self.toneGraph(gain: true, connect: nil).replacingOccurrences(of: #""gain": 0"#, with: #""gain": -6"#))
        XCTAssertNotNil(cli.waitForStderr("agraph: reload: 1 parameter changed (g.gain)", timeout: 10), cli.stderr)
        cli.write(Array("get g.gain\nquit\n".utf8))
        assertExitsCleanly(cli)
        XCTAssertTrue(cli.stdout.contains("-6"), cli.stdout)
    }
}
