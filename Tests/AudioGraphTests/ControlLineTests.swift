import AudioGraph
import Foundation
import XCTest

/// The live console's line splitter and command parser (`agraph run`'s
/// stdin), without JACK.
final class ControlLineTests: XCTestCase {
    typealias Line = LineSplitter.Line

    func feed(_ chunks: [String], limit: Int = LineSplitter.defaultLimit, finish: Bool = false) -> [Line] {
        var splitter = LineSplitter(limit: limit)
        var lines: [Line] = []
        for c in chunks { lines += splitter.feed(Array(c.utf8)) }
        if finish { lines += splitter.finish() }
        return lines
    }

    // MARK: lines

    func testLFAndCRLFLineEndsReadTheSame() {
        XCTAssertEqual(feed(["status\n", "status\r\n", "pause\r\nplay\n"]),
                       [.text("status"), .text("status"), .text("pause"), .text("play")])
        XCTAssertEqual(try ControlLine.parse("status\r"), .status, "a CR left on a line is whitespace too")
    }

    func testOnlyTheCRRightBeforeTheLFIsDropped() {
        XCTAssertEqual(feed(["a\rb\r\r\n", "\r\n", "\n"]), [.text("a\rb\r"), .text(""), .text("")])
    }

    func testCRLFSplitAcrossChunks() {
        XCTAssertEqual(feed(["stat", "us\r", "\nqu", "it\r", "\n"]), [.text("status"), .text("quit")])
    }

    func testChunkBoundariesAnywhereGiveTheSameLines() {
        let text = "set mix.gains[1] -6\r\nget g.gain\n\nseek song 12.5\r\n\r\nhelp\nstatus\r\n"
        let bytes = Array(text.utf8)
        let whole = feed([text])
        XCTAssertEqual(whole, [.text("set mix.gains[1] -6"), .text("get g.gain"), .text(""),
                               .text("seek song 12.5"), .text(""), .text("help"), .text("status")])
        // Every split into two chunks, and byte by byte.
        for cut in 0...bytes.count {
            var s = LineSplitter()
            let lines = s.feed(bytes[..<cut]) + s.feed(bytes[cut...])
            XCTAssertEqual(lines, whole, "cut at \(cut)")
        }
        var s = LineSplitter()
        XCTAssertEqual(bytes.flatMap { s.feed([$0]) }, whole)
        XCTAssertFalse(s.hasPartialLine)
    }

    func testTheLastLineWithoutALineEndCountsAtTheEndOfInput() {
        XCTAssertEqual(feed(["status\nqu", "it"]), [.text("status")])
        XCTAssertEqual(feed(["status\nqu", "it"], finish: true), [.text("status"), .text("quit")])
        XCTAssertEqual(feed(["status\n"], finish: true), [.text("status")])
        XCTAssertEqual(feed(["quit\r"], finish: true), [.text("quit")])
    }

    func testTheLimitCountsTheLineWithoutItsLineEnd() {
        let limit = 8
        let exact = String(repeating: "x", count: limit)
        XCTAssertEqual(feed([exact + "\r\n"], limit: limit), [.text(exact)])
        XCTAssertEqual(feed([exact, "\r", "\n"], limit: limit), [.text(exact)])
        XCTAssertEqual(feed([exact + "\n"], limit: limit), [.text(exact)])
        XCTAssertEqual(feed([exact + "y\r\n", "ok\n"], limit: limit), [.tooLong(bytes: limit + 1, limit: limit), .text("ok")])
        XCTAssertEqual(feed([exact + "\ry\n"], limit: limit), [.tooLong(bytes: limit + 2, limit: limit)])
        XCTAssertEqual(feed([exact, "yz"], limit: limit, finish: true), [.tooLong(bytes: limit + 2, limit: limit)])
        XCTAssertEqual(Line.tooLong(bytes: 10_485_760, limit: 65_536).errorMessage,
                       "line too long: 10485760 bytes, limit 65536")
        XCTAssertNil(Line.text("x").errorMessage)
    }

    /// The 10 MB line of issue 7 (it kept `status` unanswered for 268 s):
    /// rejected once, in time linear in its length, and the next line is read.
    func testATenMegabyteLineIsRejectedOnceQuicklyAndTheNextLineIsRead() throws {
        let size = 10 << 20
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
        var s = LineSplitter()
        var lines: [Line] = []
        let began = Date()
        var fed = 0
        while fed < size {
            lines += s.feed(chunk)
            fed += chunk.count
        }
        lines += s.feed(Array("\r\nstatus\r\n".utf8))
        let took = Date().timeIntervalSince(began)
        XCTAssertEqual(lines, [.tooLong(bytes: size, limit: 65_536), .text("status")])
        XCTAssertEqual(lines.first?.errorMessage, "line too long: 10485760 bytes, limit 65536")
        XCTAssertEqual(try ControlLine.parse("status"), .status)
        // Linear: 10 MB in 4 KiB chunks takes well under a second (debug
        // build); rescanning the pending bytes on each chunk, as the console
        // did, scans 13 GB and takes minutes.
        XCTAssertLessThan(took, 5, "10 MB took \(took) s")

        // The same in one piece, and in odd chunk sizes, with LF only.
        var one = LineSplitter()
        XCTAssertEqual(one.feed([UInt8](repeating: 0x62, count: size) + Array("\nstatus\n".utf8)),
                       [.tooLong(bytes: size, limit: 65_536), .text("status")])
        var odd = LineSplitter()
        let stream = [UInt8](repeating: 0x63, count: 200_001) + Array("\r\nget a.b\r\n".utf8)
        var oddLines: [Line] = []
        var i = 0, step = 1
        while i < stream.count {
            let end = min(i + step, stream.count)
            oddLines += odd.feed(stream[i..<end])
            i = end
            step = step * 3 % 65_537 + 1
        }
        XCTAssertEqual(oddLines, [.tooLong(bytes: 200_001, limit: 65_536), .text("get a.b")])
    }

    func testLinesAreDecodedAsUTF8WithReplacement() {
        var s = LineSplitter()
        XCTAssertEqual(s.feed([0x67, 0x65, 0x74, 0x20, 0xC3]) + s.feed([0xA9, 0x2E, 0x78, 0x0A, 0xFF, 0x0A]),
                       [.text("get é.x"), .text("\u{FFFD}")])
    }

    // MARK: commands

    func parseError(_ line: String, file: StaticString = #filePath, line l: UInt = #line) -> String? {
        do {
            let c = try ControlLine.parse(line)
            XCTFail("'\(line)' parsed as \(String(describing: c))", file: file, line: l)
            return nil
        } catch {
            return error.message
        }
    }

    func testEveryCommand() throws {
        XCTAssertEqual(try ControlLine.parse("set mix.gains[1] -6"), .set(address: ParameterAddress(node: "mix", parameter: "gains", element: 1), value: "-6"))
        XCTAssertEqual(try ControlLine.parse("  set\tg.mute   true  "), .set(address: ParameterAddress(node: "g", parameter: "mute"), value: "true"))
        XCTAssertEqual(try ControlLine.parse("set dec.endpoint speakers"), .set(address: ParameterAddress(node: "dec", parameter: "endpoint"), value: "speakers"))
        XCTAssertEqual(try ControlLine.parse("get g.gain"), .get(address: ParameterAddress(node: "g", parameter: "gain")))
        XCTAssertEqual(try ControlLine.parse("seek 12.5"), .seek(node: nil, seconds: 12.5))
        XCTAssertEqual(try ControlLine.parse("seek song 30"), .seek(node: "song", seconds: 30))
        XCTAssertEqual(try ControlLine.parse("seek 0"), .seek(node: nil, seconds: 0))
        XCTAssertEqual(try ControlLine.parse("seek -0"), .seek(node: nil, seconds: 0))
        XCTAssertEqual(try ControlLine.parse("seek 1e3"), .seek(node: nil, seconds: 1000))
        XCTAssertEqual(try ControlLine.parse("pause"), .pause)
        XCTAssertEqual(try ControlLine.parse("play"), .play)
        XCTAssertEqual(try ControlLine.parse("status"), .status)
        XCTAssertEqual(try ControlLine.parse("quit"), .quit)
        XCTAssertEqual(try ControlLine.parse("exit"), .quit)
        XCTAssertEqual(try ControlLine.parse("help"), .help)
        XCTAssertEqual(try ControlLine.parse("help seek"), .help)
        XCTAssertNil(try ControlLine.parse(""))
        XCTAssertNil(try ControlLine.parse(" \t \r"))
        XCTAssertTrue(ControlLine.help.contains("seek [NODE] SECONDS"))
    }

    func testCommandErrors() {
        XCTAssertEqual(parseError("set mix.gains[1]"), "set takes a parameter and a value: set NODE.PARAM VALUE")
        XCTAssertEqual(parseError("set a.b 1 2"), "set takes a parameter and a value: set NODE.PARAM VALUE")
        XCTAssertEqual(parseError("set gain 1"), "'gain' is not a parameter address: write node.param or node.param[i]")
        XCTAssertEqual(parseError("set .gain 1"), "'.gain' is not a parameter address: write node.param or node.param[i]")
        XCTAssertEqual(parseError("get g."), "'g.' is not a parameter address: write node.param or node.param[i]")
        XCTAssertEqual(parseError("get"), "get takes a parameter: get NODE.PARAM")
        XCTAssertEqual(parseError("get a.b c"), "get takes a parameter: get NODE.PARAM")
        XCTAssertEqual(parseError("seek"), "seek takes a position in seconds: seek [NODE] SECONDS")
        XCTAssertEqual(parseError("seek a b c"), "seek takes a position in seconds: seek [NODE] SECONDS")
        XCTAssertEqual(parseError("seek song"), "seek: 'song' is not a number of seconds: seek [NODE] SECONDS")
        XCTAssertEqual(parseError("seek nan"), "seek: 'nan' is not a number of seconds: seek [NODE] SECONDS")
        XCTAssertEqual(parseError("seek -1"), "seek: the position must not be negative (got -1 s)")
        XCTAssertEqual(parseError("seek song -0.5"), "seek: the position must not be negative (got -0.5 s)")
        XCTAssertEqual(parseError("pause now"), "'pause' takes no arguments")
        XCTAssertEqual(parseError("play x"), "'play' takes no arguments")
        XCTAssertEqual(parseError("status 1"), "'status' takes no arguments")
        XCTAssertEqual(parseError("quit please"), "'quit' takes no arguments")
        XCTAssertEqual(parseError("exit 0"), "'exit' takes no arguments")
        XCTAssertEqual(parseError("stats"), "unknown command 'stats'; type 'help'")
        XCTAssertEqual(parseError("STATUS"), "unknown command 'STATUS'; type 'help'")
        // A long word is quoted shortened.
        XCTAssertEqual(parseError(String(repeating: "z", count: 1000)),
                       "unknown command '\(String(repeating: "z", count: 40))…'; type 'help'")
    }

    /// Issue 7 item 1 at the prompt: positions that are not finite never
    /// reach the graph. (Large finite ones, such as 1e308, are refused by
    /// `RunningGraph.seek` with the range.)
    func testSeekRefusesPositionsThatAreNotFinite() throws {
        for word in ["inf", "+inf", "infinity", "-inf", "1e400", "1e309"] {
            XCTAssertEqual(parseError("seek \(word)"), "seek: '\(word)' is not a finite number of seconds", word)
            XCTAssertEqual(parseError("seek song \(word)"), "seek: '\(word)' is not a finite number of seconds", word)
        }
        XCTAssertEqual(parseError("seek -1e400"), "seek: '-1e400' is not a finite number of seconds")
        XCTAssertEqual(try ControlLine.parse("seek 1e308"), .seek(node: nil, seconds: 1e308))
        XCTAssertEqual(try ControlLine.parse("seek 99999999999999999999"), .seek(node: nil, seconds: 1e20))
    }
}
