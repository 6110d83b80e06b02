import Foundation
import TestSupport
import XCTest

/// A playlist's damaged items offline count like `media`'s (issue #22,
/// item 10; the playlist only warned and `render`/batch exited 0): a FLAC
/// cut short with garbage appended (made here with the ffmpeg tool, as in
/// `DamagedInputTests`) after an intact item. `render` and a batch name
/// the damaged item's file with what was concealed and exit non-zero;
/// `--allow-damaged` (or the playlist's `onError: skip`) exits 0 and still
/// names it.
final class DamagedPlaylistTests: XCTestCase {
    var dir: TemporaryDirectory!
    var damaged = ""
    var intact = ""

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("agraph-damaged-playlist")
        intact = dir.file("tone.flac")
        damaged = dir.file("bad.flac")
        do {
            try DamagedFLAC.make(intact: intact, damaged: damaged)
        } catch let e as DamagedFLAC.Unavailable {
            throw XCTSkip(e.description)
        }
    }

    /// playlist (the intact tone, then the damaged file; or a list file)
    /// → file-out "out.wav".
    func graph(_ extra: String = "", list: Bool = false, name: String = "g.json") throws -> String {
        let path = dir.file(name)
        let source = list ? #""file": "good.json""# : #""items": [{"path": "tone.flac"}, {"path": "bad.flac"}]"#
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "pl", "type": "playlist", "params": {\(source)\(extra)}},
          {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}],
         "links": [{"from": "pl", "to": "out"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func agraph(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CLITests.Run {
        try CLITests.agraph(arguments: arguments, file: file, line: line)
    }

    /// The line naming the damaged item, its file and what was concealed.
    func assertListsTheDamage(_ run: CLITests.Run, file: StaticString = #filePath, line: UInt = #line) {
        let path = damaged.replacingOccurrences(of: "//", with: "/")
        XCTAssertTrue(run.stderr.contains("'pl': item 1: damaged input \(path): 1 damaged frame concealed (last: libavcodec refused a flac"),
                      run.stderr, file: file, line: line)
        XCTAssertFalse(run.stderr.contains(intact.replacingOccurrences(of: "//", with: "/") + ":"), "the intact item is not named: \(run.stderr)",
                       file: file, line: line)
    }

    func testRenderOfAPlaylistWithADamagedItemFailsNamingIt() throws {
        let g = try graph()
        for quiet in [[], ["--quiet"]] {
            let run = try agraph(["render", g] + quiet)
            XCTAssertEqual(run.status, 1, run.stderr)
            assertListsTheDamage(run)
            XCTAssertTrue(run.stderr.contains("onError: fail"), run.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.wav")), "a failed render puts no output in place")
        }
    }

    func testAllowDamagedOrOnErrorSkipRendersTheListExitsZeroAndStillNamesTheItem() throws {
        for (arguments, extra) in [(["--allow-damaged"], ""), (["--allow-damaged", "--quiet"], ""), ([], #", "onError": "skip""#),
                                   (["--quiet"], #", "onError": "skip""#)] {
            try? FileManager.default.removeItem(atPath: dir.file("out.wav"))
            let run = try agraph(["render", try graph(extra)] + arguments)
            XCTAssertEqual(run.status, 0, "\(arguments) \(extra): \(run.stderr)")
            assertListsTheDamage(run)
            XCTAssertTrue(run.stderr.contains("(onError: skip)"), run.stderr)
            let out = try readSoundFile(dir.file("out.wav"))
            XCTAssertEqual(out.channels, 2)
            // The intact item whole (2 s), then what of the damaged one decodes.
            let frames = out.samples.count / 2
            XCTAssertGreaterThan(frames, 96_000 + 4800, "\(arguments) \(extra): both items played")
            XCTAssertLessThan(frames, 2 * 96_000, "\(arguments) \(extra): the damaged part is not played whole")
            let left = stride(from: 0, to: out.samples.count, by: 2).map { out.samples[$0] }
            XCTAssertEqual(SignalAnalysis.frequency(of: Array(left[97_000..<100_000]), sampleRate: 48000), 440, accuracy: 1)
        }
        // An unknown choice is refused at validation, naming the choices.
        let run = try agraph(["validate", try graph(#", "onError": "ignore""#)])
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssertTrue(run.stderr.contains("/nodes/0/params/onError") && run.stderr.contains("fail") && run.stderr.contains("skip"), run.stderr)
    }

    /// A batch over list files (`--each pl.file=…`): the list with the
    /// damaged item fails, named with the damage, and the other renders;
    /// with `--allow-damaged` both render and the damaged one is listed.
    func testBatchOfPlaylistsListsTheDamagedOneAndExitsNonZeroUnlessAllowed() throws {
        try #"[{"path": "tone.flac"}]"#.write(toFile: dir.file("good.json"), atomically: true, encoding: .utf8)
        try #"[{"path": "tone.flac"}, {"path": "bad.flac"}]"#.write(toFile: dir.file("worse.json"), atomically: true, encoding: .utf8)
        let g = try graph(list: true)
        let lists = [dir.file("good.json"), dir.file("worse.json")]
        for quiet in [[], ["--quiet"]] {
            let outDir = dir.file("out-\(quiet.count)")
            let failed = try agraph(["render", g, "--each", "pl.file=\(lists[1])", lists[0], "--output-dir", outDir] + quiet)
            XCTAssertEqual(failed.status, 1, failed.stderr)
            XCTAssertTrue(failed.stderr.contains("1 of 2 inputs failed:"), failed.stderr)
            XCTAssertTrue(failed.stderr.contains("  \(lists[1]): "), failed.stderr)
            assertListsTheDamage(failed)
            XCTAssertEqual(BatchTests.names(in: outDir), ["good.wav"], "only the intact list's output, nothing partial")

            let allowed = try agraph(["render", g, "--each", "pl.file=\(lists[1])", lists[0], "--output-dir", outDir, "--allow-damaged"] + quiet)
            XCTAssertEqual(allowed.status, 0, allowed.stderr)
            XCTAssertTrue(allowed.stderr.contains("1 of 2 inputs rendered with damage concealed or skipped:\n  \(lists[1]):\n"), allowed.stderr)
            assertListsTheDamage(allowed)
            XCTAssertEqual(BatchTests.names(in: outDir), ["good.wav", "worse.wav"])
        }
    }
}
