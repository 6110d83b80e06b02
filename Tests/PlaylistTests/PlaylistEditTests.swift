import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Editing a playlist while it plays, through the control surface (the
/// commands `agraph run` takes at its prompt), rendered offline; the
/// events at each boundary; items that fail.
final class PlaylistEditTests: PlaylistTestCase {
    /// A 1 s item of its own frequency.
    func tone(_ name: String, _ frequency: Double) throws -> String {
        try sineFile(name, frequency: frequency, seconds: 1).path
    }

    /// insert, move, remove, add, list and a refused remove early in the
    /// first item; `next` in the middle of the second (the next item starts
    /// at that very frame); `clear` while the third plays (it plays to its
    /// end, then the playlist ends).
    func testAddInsertRemoveMoveNextAndClearChangeWhatPlaysNext() throws {
        let a = try tone("a.flac", 440), b = try tone("b.flac", 660), c = try tone("c.flac", 880)
        let d = try sineFile("d.flac", frequency: 1100, seconds: 1)
        let e = try tone("e.flac", 1320)
        let out = try render(graph(items([(a, ""), (b, ""), (c, "")]) + ", \"layout\": \"mono\""), commands: [
            9_600: ["playlist pl insert 1 \(d.path)",   // a d b c
                    "playlist pl move 3 1",              // a c d b
                    "playlist pl remove 3",              // a c d
                    "playlist pl add \(e)",              // a c d e
                    "playlist pl remove 9",
                    "playlist pl list"],
            72_000: ["playlist pl next"],                // c cut short: d from here
            76_800: ["playlist pl clear"],               // d plays on, e never starts
        ])
        XCTAssertEqual(out.result.ending, .endOfStream)
        XCTAssertEqual(out.replies[4], "error: pl: remove 9: the playlist has 4 items (indexes 0…3)")
        XCTAssertEqual(out.replies[5].split(separator: "\n").map { String($0.prefix(3)) }, ["> 0", "+ 1", "  2", "  3"],
                       "list: a plays, c is next:\n\(out.replies[5])")
        XCTAssertTrue(out.replies[5].contains("c.flac") && out.replies[5].hasSuffix("e.flac"), out.replies[5])
        let x = out.channels[0]
        XCTAssertEqual(x.count, 120_000, "a (1 s), half of c, d (1 s)")
        XCTAssertEqual(level(x, 0..<48_000, 440), SignalAnalysis.dBFS(0.5), accuracy: 0.05, "a")
        XCTAssertEqual(level(x, 48_000..<72_000, 880), SignalAnalysis.dBFS(0.5), accuracy: 0.05, "c, moved before d")
        XCTAssertEqual(level(x, 72_000..<120_000, 1100), SignalAnalysis.dBFS(0.5), accuracy: 0.05, "d after next")
        // `next` at frame 72,000: d's first sample is the output's 72,000th.
        var largest: Float = 0
        for i in 0..<48_000 { largest = max(largest, abs(x[72_000 + i] - d.samples[i])) }
        XCTAssertLessThanOrEqual(largest, 3e-7, "d from its first sample, at the frame of `next`")
        XCTAssertEqual(words(out.events), ["started 0", "ended 0", "started 1", "skipped 1", "started 2", "ended 2"])
        XCTAssertEqual(out.events.map { $0.path.split(separator: "/").last.map(String.init) ?? "" },
                       ["a.flac", "a.flac", "c.flac", "c.flac", "d.flac", "d.flac"])
    }

    /// A looping playlist starts again with its first item; `next` on the
    /// last item goes to the first.
    func testALoopingPlaylistStartsAgainAfterItsLastItem() throws {
        let a = try sineFile("a.flac", frequency: 500, seconds: 0.5).path
        let b = try sineFile("b.flac", frequency: 1500, seconds: 0.5).path
        let out = try render(graph(items([(a, ""), (b, "")]) + ", \"layout\": \"mono\", \"loop\": true"), seconds: 2.5,
                             commands: [60_000: ["playlist pl next"]])
        XCTAssertEqual(out.result.ending, .durationReached)
        let x = out.channels[0]
        XCTAssertEqual(x.count, 120_000)
        // a b a(next at 1.25 s) b a…: 0–0.5 a, 0.5–1 b, 1–1.25 a, 1.25–1.75 b, 1.75–2.25 a, 2.25– b
        for (range, f) in [(0..<24_000, 500.0), (24_000..<48_000, 1500), (48_000..<60_000, 500), (60_000..<84_000, 1500),
                           (84_000..<108_000, 500), (108_000..<120_000, 1500)] {
            XCTAssertEqual(level(x, range, f), SignalAnalysis.dBFS(0.5), accuracy: 0.1, "\(f) Hz in \(range)")
        }
        XCTAssertEqual(Array(words(out.events).prefix(6)), ["started 0", "ended 0", "started 1", "ended 1", "started 0", "skipped 0"])
    }

    /// A file missing by the time its turn comes (in a list file) and a
    /// garbage file added live: each is reported with the reason, and the
    /// next item plays right after what played before.
    func testAFailingItemIsReportedAndTheNextItemPlays() throws {
        try sineFile("a.flac", frequency: 440, seconds: 0.5)
        try sineFile("b.flac", frequency: 660, seconds: 0.5)
        try sineFile("c.flac", frequency: 880, seconds: 0.5)
        let d = try sineFile("d.flac", frequency: 1100, seconds: 0.5).path
        try #"[{"path": "a.flac"}, {"path": "b.flac"}, {"path": "c.flac"}]"#
            .write(toFile: dir.file("list.json"), atomically: true, encoding: .utf8)
        let garbage = dir.file("garbage.m4a")
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }).write(to: URL(fileURLWithPath: garbage))
        let out = try render(graph(#""file": "list.json", "layout": "mono""#),
                             commands: [0: ["playlist pl add \(garbage)", "playlist pl add \(d)"]],
                             beforeRendering: { try FileManager.default.removeItem(atPath: self.dir.file("b.flac")) })
        XCTAssertEqual(out.result.ending, .endOfStream)
        XCTAssertEqual(out.result.finishErrors, [], "a failed item does not fail the render")
        let x = out.channels[0]
        XCTAssertEqual(x.count, 72_000, "a, c and d; b and the garbage failed")
        for (range, f) in [(0..<24_000, 440.0), (24_000..<48_000, 880), (48_000..<72_000, 1100)] {
            XCTAssertEqual(level(x, range, f), SignalAnalysis.dBFS(0.5), accuracy: 0.05, "\(f) Hz in \(range)")
        }
        XCTAssertEqual(words(out.events), ["started 0", "ended 0", "failed 1", "started 2", "ended 2", "failed 3",
                                           "started 4", "ended 4"])
        let reasons = out.events.compactMap { e -> String? in if case .failed(let why) = e.kind { return why }; return nil }
        XCTAssertEqual(reasons.count, 2)
        XCTAssertTrue(reasons.first?.contains("b.flac: no such file or directory") == true, "\(reasons)")
        XCTAssertTrue(reasons.last?.contains("garbage.m4a") == true && reasons.last?.contains("Invalid data") == true, "\(reasons)")
        XCTAssertTrue(out.events[2].description.hasPrefix("pl: item 1 failed: cannot read "), out.events[2].description)
        XCTAssertEqual(out.result.notices.filter { $0.contains("failed") }.count, 2, "\(out.result.notices)")
    }

    /// Commands the control surface refuses, in words.
    func testRefusedCommandsSayWhy() throws {
        let a = try sineFile("a.flac", seconds: 0.5).path
        let out = try render(graph(items([(a, "")])), commands: [0: [
            "playlist nope next", "playlist pl move 0 3", "playlist pl insert 2 \(a)", "playlist pl add",
            "playlist pl add x.flac 2 1", "playlist pl add x.flac 0 - 30", "playlist pl jump",
        ]])
        XCTAssertEqual(out.replies, [
            "error: 'nope' is not a playlist; playlists: pl",
            "error: pl: move to 3: the playlist has 1 item (indexes 0…0)",
            "error: pl: insert at 2: the playlist has 1 item (indexes 0…1)",
            "error: playlist add takes a path: PATH [START [END [GAIN]]]",
            "error: playlist add: END '1' must be a time in seconds after START (or - for the item's end)",
            "error: playlist add: GAIN '30' must be a number of dB from -96 to 24",
            "error: unknown playlist command 'jump'; " + "playlist NODE add PATH [START [END [GAIN]]] | insert INDEX PATH [START [END [GAIN]]] | remove INDEX | move FROM TO | next | clear | list",
        ])
    }
}
