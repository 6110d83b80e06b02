import AudioGraph
import Foundation
import TestSupport
import XCTest

/// What a playlist plays: consecutive items with no gap and no overlap;
/// items at other rates converted, other layouts mixed to the playlist's.
final class PlaylistPlaybackTests: PlaylistTestCase {
    /// A sine cut in two at an odd frame, the halves in two files, plays
    /// back as the whole sine: sample for sample (float WAV), or within
    /// 24-bit FLAC's quantization; exactly the original length.
    func testASineSplitAcrossTwoFilesPlaysWithoutASampleOfDiscontinuity() throws {
        let frames = 96_000, cut = 50_001
        let sine = Synth.sine(frequency: 997, amplitude: 0.5, sampleRate: Self.rate, frames: frames)
        for (format, ext, tolerance) in [(SoundFileFormat.wavFloat32, "wav", Float(0)), (.flacInt24, "flac", Float(3e-7))] {
            let a = dir.file("first.\(ext)"), b = dir.file("second.\(ext)")
            try writeSoundFile(a, format: format, channels: 1, sampleRate: Self.rate, samples: Array(sine[..<cut]))
            try writeSoundFile(b, format: format, channels: 1, sampleRate: Self.rate, samples: Array(sine[cut...]))
            let out = try render(graph(items([(a, ""), (b, "")]) + ", \"layout\": \"mono\""))
            XCTAssertEqual(out.result.ending, .endOfStream)
            let x = out.channels[0]
            XCTAssertEqual(x.count, frames, "\(ext): the two halves are the whole, no more, no less")
            var largest: Float = 0, at = 0
            for i in 0..<min(x.count, frames) where abs(x[i] - sine[i]) > largest {
                largest = abs(x[i] - sine[i])
                at = i
            }
            XCTAssertLessThanOrEqual(largest, tolerance, "\(ext): the output is the original sine (largest error at frame \(at))")
            XCTAssertEqual(words(out.events), ["started 0", "ended 0", "started 1", "ended 1"], ext)
        }
    }

    /// A 44.1 kHz mono item and a 5.1 item in a stereo playlist: the first
    /// at the graph's rate, centred at −3 dB in both channels; the second
    /// folded down by ITU-R BS.775 (L + 0.7071 C + 0.7071 Ls, R likewise,
    /// LFE dropped).
    func testAnItemAt44kHzAndA51ItemPlayAtTheGraphsRateAndTheBS775Levels() throws {
        let amplitude = 0.25
        let a = try sineFile("mono-44k1.flac", frequency: 1000, amplitude: amplitude, seconds: 1, rate: 44_100)
        // L R C LFE Ls Rs
        let frequencies = [500.0, 700, 900, 60, 1100, 1300]
        let b = try sineFile("surround.flac", frequencies: frequencies, amplitude: amplitude, seconds: 1)
        let out = try render(graph(items([(a.path, ""), (b.path, "")])))
        XCTAssertEqual(out.result.ending, .endOfStream)
        let (l, r) = (out.channels[0], out.channels[1])
        // The first item, converted: exactly 1 s at 48 kHz, in time: the
        // 1 kHz sine as if sampled at 48 kHz (within the converter's
        // 20-bit precision) away from the item's edges.
        let firstLength = l.count - 48_000
        XCTAssertEqual(firstLength, 48_000, "1 s at 44.1 kHz is 48,000 frames at 48 kHz")
        let resampled = Synth.sine(frequency: 1000, amplitude: amplitude * 0.5.squareRoot(), sampleRate: Self.rate, frames: 48_000)
        var largest: Float = 0
        for i in 2_000..<46_000 { largest = max(largest, abs(l[i] - resampled[i])) }
        XCTAssertLessThan(largest, 1e-4, "converted in time (lag 0) and in level")
        let full = SignalAnalysis.dBFS(amplitude)
        let mid = 12_000..<36_000
        for x in [l, r] {
            XCTAssertEqual(level(x, mid, 1000), full - 3.0103, accuracy: 0.05, "mono at -3 dB in each channel")
        }
        let surround = (firstLength + 12_000)..<(firstLength + 36_000)
        XCTAssertEqual(level(l, surround, 500), full, accuracy: 0.05, "L in L")
        XCTAssertEqual(level(r, surround, 700), full, accuracy: 0.05, "R in R")
        for x in [l, r] {
            XCTAssertEqual(level(x, surround, 900), full - 3.0103, accuracy: 0.05, "C at -3 dB in both")
            XCTAssertLessThan(level(x, surround, 60), full - 60, "LFE dropped")
        }
        XCTAssertEqual(level(l, surround, 1100), full - 3.0103, accuracy: 0.05, "Ls at -3 dB in L")
        XCTAssertEqual(level(r, surround, 1300), full - 3.0103, accuracy: 0.05, "Rs at -3 dB in R")
        XCTAssertLessThan(level(l, surround, 700), full - 60, "no R in L")
        XCTAssertLessThan(level(l, surround, 1300), full - 60, "no Rs in L")
        XCTAssertLessThan(level(r, surround, 500), full - 60, "no L in R")
        XCTAssertLessThan(level(r, surround, 1100), full - 60, "no Ls in R")
    }

    /// `start`, `end` and `gain` of an item: the part between them, at the gain.
    func testStartEndAndGainPlayThePartAskedForAtItsLevel() throws {
        let a = try sineFile("a.flac", frequency: 500, amplitude: 0.5, seconds: 1)
        let b = try sineFile("b.flac", frequency: 1500, amplitude: 0.5, seconds: 1)
        let out = try render(graph(items([(a.path, "\"start\": 0.25, \"end\": 0.75"), (b.path, "\"gain\": -6")]) + ", \"layout\": \"mono\""))
        let x = out.channels[0]
        XCTAssertEqual(x.count, 24_000 + 48_000)
        // The first item from its 0.25 s on, to the sample.
        let sine = a.samples
        var largest: Float = 0
        for i in 0..<24_000 { largest = max(largest, abs(x[i] - sine[12_000 + i])) }
        XCTAssertLessThanOrEqual(largest, 3e-7, "0.25 s to 0.75 s of the first file")
        XCTAssertEqual(level(x, 30_000..<66_000, 1500), SignalAnalysis.dBFS(0.5) - 6, accuracy: 0.05, "the second at -6 dB")
    }

    /// Items in a list file: relative paths resolve against its folder.
    func testItemsComeFromAListFileBesideTheirMedia() throws {
        try FileManager.default.createDirectory(atPath: dir.file("music"), withIntermediateDirectories: true)
        try sineFile("music/a.flac", frequency: 500, seconds: 0.5)
        try sineFile("music/b.flac", frequency: 1500, seconds: 0.5)
        try #"{"items": [{"path": "a.flac"}, {"path": "b.flac", "gain": -6}]}"#
            .write(toFile: dir.file("music/list.json"), atomically: true, encoding: .utf8)
        let out = try render(graph(#""file": "music/list.json", "layout": "mono""#))
        let x = out.channels[0]
        XCTAssertEqual(x.count, 48_000)
        XCTAssertEqual(level(x, 0..<24_000, 500), SignalAnalysis.dBFS(0.5), accuracy: 0.05)
        XCTAssertEqual(level(x, 24_000..<48_000, 1500), SignalAnalysis.dBFS(0.5) - 6, accuracy: 0.05)
        XCTAssertEqual(out.events.filter { $0.kind == .started }.map { $0.path.split(separator: "/").suffix(2).joined(separator: "/") },
                       ["music/a.flac", "music/b.flac"])
    }
}
