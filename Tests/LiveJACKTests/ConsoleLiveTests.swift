import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph run`'s console on a private `jackd -d dummy`: CRLF lines, and a
/// 10 MB line that no longer holds up the commands after it (issue 7 item 6).
final class ConsoleLiveTests: LiveTestCase {
    /// How many status replies stdout holds.
    func statusReplies(_ cli: CLIProcess) -> Int {
        cli.stdout.split(separator: "\n").filter { $0.contains(" xruns ") && $0.contains(" DSP ") }.count
    }

    /// Waits until stdout holds `count` status replies.
    func waitForStatusReplies(_ cli: CLIProcess, _ count: Int, timeout: Double,
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(waitUntil(timeout: timeout) { statusReplies(cli) == count },
                      "stdout: \(cli.stdout)\nstderr: \(cli.stderr)", file: file, line: line)
    }

    func testCRLFCommandsAndATenMegabyteLineGetPromptAnswers() throws {
        let stderr = try atTheConsole(of: Self.toneGraph(connect: nil)) { cli in
            // CRLF: `status\r` used to be "unknown command 'status'".
            cli.write(Array("status\r\n".utf8))
            waitForStatusReplies(cli, 1, timeout: 5)

            // A 10 MB line, then status: the line is refused once and status is
            // answered within seconds (it took 268 s when every read rescanned
            // the whole pending buffer).
            let size = 10 << 20
            let sent = Date()
            cli.writeInBackground([UInt8](repeating: UInt8(ascii: "x"), count: size) + Array("\r\nstatus\r\n".utf8))
            let refused = cli.waitForStderr("error: line too long: \(size) bytes, limit 65536", timeout: 30)
            XCTAssertNotNil(refused, cli.stderr)
            waitForStatusReplies(cli, 2, timeout: 30)
            let answered = Date().timeIntervalSince(sent)
            XCTAssertLessThan(answered, LiveTiming.seconds(10), "status after the 10 MB line took \(answered) s")
            XCTAssertEqual(cli.stderr.components(separatedBy: "line too long").count - 1, 1, "refused once\n\(cli.stderr)")
            XCTAssertFalse(cli.stderr.contains("unknown command"), cli.stderr)

            // Errors keep the graph running; quit stops it cleanly.
            cli.write(Array("seek inf\r\nquit\r\n".utf8))
        }
        XCTAssertTrue(stderr.contains("error: seek: 'inf' is not a finite number of seconds"), stderr)
    }

    /// `seek 1e308` trapped in `Int(_:)` (SIGILL): now the prompt answers
    /// with an error and the graph plays on.
    func testSecondsOutOfRangeAtThePromptAreAnsweredAndPlayGoesOn() throws {
        try writeSoundFile(dir.file("tone.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 440, amplitude: 0.5, sampleRate: 48000, frames: 48000 * 20))
        let player = #"{"format": "agraph/1", "nodes": [{"id": "song", "type": "file", "params": {"path": "tone.wav"}}, {"id": "out", "type": "jack-out"}], "links": [{"from": "song", "to": "out"}]}"#
        try atTheConsole(of: player) { cli in
            cli.write(Array("seek 1e308\nseek song 99999999999999999999\nseek 1e15\nstatus\n".utf8))
            waitForStatusReplies(cli, 1, timeout: 10)
            // The errors go to stderr, the status reply to stdout: two pipes
            // read apart, so the reply can be seen before the errors are.
            XCTAssertTrue(waitUntil(timeout: 5) { cli.stderr.components(separatedBy: "out of range").count - 1 == 3 }, cli.stderr)
            XCTAssertTrue(cli.isRunning, "still playing")
            cli.write(Array("seek 2\nquit\n".utf8))
        }
    }
}
