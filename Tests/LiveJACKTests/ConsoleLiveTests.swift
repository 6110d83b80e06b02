import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph run`'s console on a private `jackd -d dummy`: CRLF lines, and a
/// 10 MB line that no longer holds up the commands after it (issue 7 item 6).
final class ConsoleLiveTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("agraph-console")
    }

    override func tearDown() {
        dir = nil
    }

    /// Writes raw bytes to the process's stdin (no newline added).
    func write(_ cli: CLIProcess, _ bytes: [UInt8]) throws {
        let pipe = try XCTUnwrap(cli.process.standardInput as? Pipe)
        try pipe.fileHandleForWriting.write(contentsOf: Data(bytes))
    }

    /// How many status replies stdout holds.
    func statusReplies(_ cli: CLIProcess) -> Int {
        cli.stdout.split(separator: "\n").filter { $0.contains(" xruns ") && $0.contains(" DSP ") }.count
    }

    func waitFor(timeout: Double, _ predicate: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !predicate() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    func testCRLFCommandsAndATenMegabyteLineGetPromptAnswers() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = dir.file("tone.json")
        try LiveJACKTests.toneGraph(connect: nil).write(toFile: graph, atomically: true, encoding: .utf8)
        let cli = try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name, "--quiet"],
                                 directory: dir.path)
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr)

        // CRLF: `status\r` used to be "unknown command 'status'".
        try write(cli, Array("status\r\n".utf8))
        XCTAssertTrue(waitFor(timeout: 5) { statusReplies(cli) == 1 }, "stdout: \(cli.stdout)\nstderr: \(cli.stderr)")

        // A 10 MB line, then status: the line is refused once and status is
        // answered within seconds (it took 268 s when every read rescanned
        // the whole pending buffer).
        let size = 10 << 20
        let sent = Date()
        let input = try XCTUnwrap(cli.process.standardInput as? Pipe).fileHandleForWriting
        let long = Data([UInt8](repeating: UInt8(ascii: "x"), count: size) + Array("\r\nstatus\r\n".utf8))
        let writer = Thread { try? input.write(contentsOf: long) }
        writer.start()
        let refused = cli.waitForStderr("error: line too long: \(size) bytes, limit 65536", timeout: 30)
        XCTAssertNotNil(refused, cli.stderr)
        XCTAssertTrue(waitFor(timeout: 30) { statusReplies(cli) == 2 }, "stdout: \(cli.stdout)\nstderr: \(cli.stderr)")
        let answered = Date().timeIntervalSince(sent)
        XCTAssertLessThan(answered, 10, "status after the 10 MB line took \(answered) s")
        XCTAssertEqual(cli.stderr.components(separatedBy: "line too long").count - 1, 1, "refused once\n\(cli.stderr)")
        XCTAssertFalse(cli.stderr.contains("unknown command"), cli.stderr)

        // Errors keep the graph running; quit stops it cleanly.
        try write(cli, Array("seek inf\r\nquit\r\n".utf8))
        XCTAssertTrue(cli.waitForExit(timeout: 15), cli.stderr)
        XCTAssertEqual(cli.status, 0, cli.stderr)
        XCTAssertTrue(cli.stderr.contains("error: seek: 'inf' is not a finite number of seconds"), cli.stderr)
    }

    /// `seek 1e308` trapped in `Int(_:)` (SIGILL): now the prompt answers
    /// with an error and the graph plays on.
    func testSecondsOutOfRangeAtThePromptAreAnsweredAndPlayGoesOn() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        try writeSoundFile(dir.file("tone.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 440, amplitude: 0.5, sampleRate: 48000, frames: 48000 * 20))
        let graph = dir.file("player.json")
        try #"{"format": "agraph/1", "nodes": [{"id": "song", "type": "file", "params": {"path": "tone.wav"}}, {"id": "out", "type": "jack-out"}], "links": [{"from": "song", "to": "out"}]}"#
            .write(toFile: graph, atomically: true, encoding: .utf8)
        let cli = try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name, "--quiet"],
                                 directory: dir.path)
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr)
        try write(cli, Array("seek 1e308\nseek song 99999999999999999999\nseek 1e15\nstatus\n".utf8))
        XCTAssertTrue(waitFor(timeout: 10) { statusReplies(cli) == 1 }, "stdout: \(cli.stdout)\nstderr: \(cli.stderr)")
        XCTAssertEqual(cli.stderr.components(separatedBy: "out of range").count - 1, 3, cli.stderr)
        XCTAssertTrue(cli.process.isRunning, "still playing")
        try write(cli, Array("seek 2\nquit\n".utf8))
        XCTAssertTrue(cli.waitForExit(timeout: 15), cli.stderr)
        XCTAssertEqual(cli.status, 0, cli.stderr)
    }
}
