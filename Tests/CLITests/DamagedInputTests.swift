import Foundation
import TestSupport
import XCTest

/// Damaged media offline (issue #22, item 10): a FLAC cut short with
/// garbage appended, made here with the ffmpeg tool. `render` and a batch
/// list the damaged input with what was concealed and exit non-zero;
/// `--allow-damaged` exits 0 and still lists it (with `--quiet` too);
/// `media` and `ffmpeg` take `onError` with `file`'s choices.
final class DamagedInputTests: XCTestCase {
    var dir: TemporaryDirectory!
    /// The damaged file, and how many frames its intact part holds.
    var damaged = ""

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("agraph-damaged")
        damaged = dir.file("bad.flac")
        do {
            try DamagedFLAC.make(intact: dir.file("tone.flac"), damaged: damaged)
        } catch let e as DamagedFLAC.Unavailable {
            throw XCTSkip(e.description)
        }
    }

    /// media → ffmpeg → file-out "out.wav", with extra parameters.
    func graph(media: String = "", decoder: String = "", name: String = "g.json") throws -> String {
        let path = dir.file(name)
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "src", "type": "media", "params": {"path": "bad.flac"\(media)}},
          {"id": "dec", "type": "ffmpeg", "params": {\(decoder)}},
          {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}],
         "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func agraph(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CLITests.Run {
        try CLITests.agraph(arguments: arguments, file: file, line: line)
    }

    /// The line naming the damaged file and what was concealed.
    func assertListsTheDamage(_ run: CLITests.Run, file: StaticString = #filePath, line: UInt = #line) {
        // The path as agraph resolved it (TemporaryDirectory's may hold "//").
        let path = damaged.replacingOccurrences(of: "//", with: "/")
        XCTAssertTrue(run.stderr.contains("damaged input \(path): 1 damaged frame concealed (last: libavcodec refused a flac"),
                      run.stderr, file: file, line: line)
    }

    func testRenderOfDamagedMediaFailsNamingTheFileAndWhatWasConcealed() throws {
        let g = try graph()
        for quiet in [[], ["--quiet"]] {
            let run = try agraph(["render", g] + quiet)
            XCTAssertEqual(run.status, 1, run.stderr)
            assertListsTheDamage(run)
            XCTAssertTrue(run.stderr.contains("onError: fail"), run.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.wav")), "a failed render puts no output in place")
        }
    }

    func testAllowDamagedRendersWhatDecodesExitsZeroAndStillListsIt() throws {
        let g = try graph()
        for quiet in [[], ["--quiet"]] {
            let run = try agraph(["render", g, "--allow-damaged"] + quiet)
            XCTAssertEqual(run.status, 0, run.stderr)
            assertListsTheDamage(run)
            let out = try readSoundFile(dir.file("out.wav"))
            XCTAssertEqual(out.channels, 2)
            // What was intact decodes: a 440 Hz tone, at least a tenth of a second of it.
            let left = stride(from: 0, to: out.samples.count, by: 2).map { out.samples[$0] }
            XCTAssertGreaterThan(left.count, 4800, "what decoded is kept")
            XCTAssertLessThan(left.count, 96_000, "the damaged part is not the whole file")
            XCTAssertEqual(SignalAnalysis.frequency(of: Array(left[1000..<4800]), sampleRate: 48000), 440, accuracy: 1)
        }
    }

    /// `onError` on either node, like `file`'s: "skip" warns and goes on
    /// (exit 0), "fail" (the default) fails; an unknown choice is refused
    /// at validation naming the choices.
    func testOnErrorOnMediaAndFFmpegBehavesLikeFiles() throws {
        for (media, decoder, status) in [(#", "onError": "skip""#, "", Int32(0)), ("", #""onError": "skip""#, 0),
                                         (#", "onError": "fail""#, #""onError": "fail""#, 1)] {
            let run = try agraph(["render", try graph(media: media, decoder: decoder), "--quiet"])
            XCTAssertEqual(run.status, status, "media \(media), ffmpeg \(decoder): \(run.stderr)")
            assertListsTheDamage(run)
            XCTAssertTrue(run.stderr.contains(status == 0 ? "(onError: skip)" : "onError: fail"), run.stderr)
        }
        for (media, decoder, pointer) in [(#", "onError": "ignore""#, "", "/nodes/0/params/onError"), ("", #""onError": "ignore""#, "/nodes/1/params/onError")] {
            let run = try agraph(["validate", try graph(media: media, decoder: decoder)])
            XCTAssertEqual(run.status, 1, run.stderr)
            XCTAssertTrue(run.stderr.contains(pointer) && run.stderr.contains("fail") && run.stderr.contains("skip"), run.stderr)
        }
        // The file node's own onError, for comparison: fail by default.
        let path = dir.file("file.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "src", "type": "file", "params": {"path": "bad.flac"}},
          {"id": "out", "type": "null"}], "links": [{"from": "src", "to": "out"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try agraph(["render", path, "--quiet"]).status, 1)
        XCTAssertEqual(try agraph(["render", path, "--quiet", "--allow-damaged"]).status, 0)
    }

    func testBatchListsTheDamagedInputAndExitsNonZeroUnlessAllowed() throws {
        let good = dir.file("good.wav")
        try writeSoundFile(good, format: .wavFloat32, channels: 2, sampleRate: 48000,
                           samples: Synth.sine(frequency: 440, amplitude: 0.25, sampleRate: 48000, frames: 9600).flatMap { [$0, $0] })
        let g = try graph()
        for quiet in [[], ["--quiet"]] {
            let outDir = dir.file("out-\(quiet.count)")
            let failed = try agraph(["render", g, "--each", "src.path=\(damaged)", good, "--output-dir", outDir] + quiet)
            XCTAssertEqual(failed.status, 1, failed.stderr)
            XCTAssertTrue(failed.stderr.contains("1 of 2 inputs failed:"), failed.stderr)
            XCTAssertTrue(failed.stderr.contains("  \(damaged): "), failed.stderr)
            assertListsTheDamage(failed)
            XCTAssertEqual(BatchTests.names(in: outDir), ["good.wav"], "only the good input's output, nothing partial")

            let allowed = try agraph(["render", g, "--each", "src.path=\(damaged)", good, "--output-dir", outDir, "--allow-damaged"] + quiet)
            XCTAssertEqual(allowed.status, 0, allowed.stderr)
            XCTAssertTrue(allowed.stderr.contains("1 of 2 inputs rendered with damage concealed or skipped:\n  \(damaged):\n"), allowed.stderr)
            assertListsTheDamage(allowed)
            XCTAssertEqual(BatchTests.names(in: outDir), ["bad.wav", "good.wav"])
        }
    }
}
