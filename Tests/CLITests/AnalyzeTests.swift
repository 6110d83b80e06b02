import Foundation
import TestSupport
import XCTest

/// `agraph analyze` and loudness normalization through `agraph render`, run
/// as a user would.
final class AnalyzeTests: XCTestCase {
    static let repoRoot: URL = CLITests.repoRoot

    /// `agraph ARGUMENTS` as `CLITests` runs it.
    func agraph(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CLITests.Run {
        try CLITests.agraph(arguments: arguments, file: file, line: line)
    }

    /// A stereo 1 kHz sine at `dBFS` in both channels (EBU Tech 3341 case 1
    /// at -23: -23 LUFS), 48 kHz float WAV.
    func sineFile(_ path: String, dBFS: Double, seconds: Double, right: Double? = nil) throws {
        let frames = Int(seconds * 48_000)
        let l = Synth.sine(frequency: 1000, amplitude: pow(10, dBFS / 20), sampleRate: 48_000, frames: frames)
        let r = Synth.sine(frequency: 1000, amplitude: pow(10, (right ?? dBFS) / 20), sampleRate: 48_000, frames: frames)
        var samples = [Float](repeating: 0, count: 2 * frames)
        for i in 0..<frames {
            samples[2 * i] = l[i]
            samples[2 * i + 1] = r[i]
        }
        try writeSoundFile(path, format: .wavFloat32, channels: 2, sampleRate: 48_000, samples: samples)
    }

    static let keys: Set<String> = ["integratedLUFS", "loudnessRangeLU", "truePeakDBTP", "samplePeakDBFS", "channels", "durationSeconds"]

    func testJSONHasExactlyTheKeysAndTheMeasurements() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("tone.wav")
        try sineFile(path, dBFS: -23, seconds: 10, right: -29)
        let run = try agraph(["analyze", path, "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        XCTAssertEqual(Set(object.keys), Self.keys)
        // -23 and -29 dBFS sines: 10·log10((10^-2.3 + 10^-2.9) / 2) + 3.01 ≈ -24.97 LUFS.
        let expected = 10 * log10((pow(10, -2.3) + pow(10, -2.9)) / 2)
        XCTAssertEqual(object["integratedLUFS"] as? Double ?? .nan, expected, accuracy: 0.1)
        XCTAssertEqual(object["loudnessRangeLU"] as? Double ?? .nan, 0, accuracy: 0.1)
        XCTAssertEqual(object["samplePeakDBFS"] as? Double ?? .nan, -23, accuracy: 0.01)
        XCTAssertEqual(object["truePeakDBTP"] as? Double ?? .nan, -23, accuracy: 0.1)
        XCTAssertEqual(object["durationSeconds"] as? Double ?? .nan, 10, accuracy: 1e-6)
        let channels = try XCTUnwrap(object["channels"] as? [[String: Any]])
        XCTAssertEqual(channels.count, 2)
        XCTAssertEqual(channels.map { $0["label"] as? String }, ["L", "R"])
        // A sine's RMS is its peak − 3.01 dB.
        XCTAssertEqual(channels[0]["rmsDBFS"] as? Double ?? .nan, -23 - 3.01, accuracy: 0.02)
        XCTAssertEqual(channels[1]["rmsDBFS"] as? Double ?? .nan, -29 - 3.01, accuracy: 0.02)
        XCTAssertEqual(channels[1]["peakDBFS"] as? Double ?? .nan, -29, accuracy: 0.01)
        XCTAssertEqual(run.stderr, "", "no progress lines for a short file off a terminal")
    }

    /// EBU Tech 3341 case 6 (5.0 in a 5.1 file: -23 LUFS with the
    /// surrounds weighted 1.41 and LFE not counted) and Tech 3342 case 1
    /// (LRA 10 LU). The six channels' peaks are scanned on two threads
    /// (three each): every channel reports its own level.
    func testSurroundWeightsLoudnessRangeAndEveryChannelsPeak() throws {
        let dir = try TemporaryDirectory()
        let levels: [Double] = [-28, -28, -24, -.infinity, -30, -30]
        let frames = 20 * 48_000
        let tone = Synth.sine(frequency: 1000, amplitude: 1, sampleRate: 48_000, frames: frames)
        var samples = [Float](repeating: 0, count: 6 * frames)
        for i in 0..<frames {
            for c in 0..<6 where levels[c].isFinite { samples[6 * i + c] = Float(pow(10, levels[c] / 20)) * tone[i] }
        }
        let surround = dir.file("3341-6.wav")
        try writeSoundFile(surround, format: .wavFloat32, channels: 6, sampleRate: 48_000, samples: samples)
        let run = try agraph(["analyze", surround, "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        XCTAssertEqual(object["integratedLUFS"] as? Double ?? .nan, -23, accuracy: 0.1, "3341 case 6")
        let channels = try XCTUnwrap(object["channels"] as? [[String: Any]])
        XCTAssertEqual(channels.count, 6)
        for (c, level) in levels.enumerated() {
            if level.isFinite {
                XCTAssertEqual(channels[c]["peakDBFS"] as? Double ?? .nan, level, accuracy: 0.01, "channel \(c) peak")
                XCTAssertEqual(channels[c]["truePeakDBTP"] as? Double ?? .nan, level, accuracy: 0.1, "channel \(c) true peak")
                XCTAssertEqual(channels[c]["rmsDBFS"] as? Double ?? .nan, level - 3.01, accuracy: 0.02, "channel \(c) RMS")
            } else {
                XCTAssertTrue(channels[c]["peakDBFS"] is NSNull, "channel \(c) is silent")
            }
        }

        let range = dir.file("3342-1.wav")
        let loud = Synth.sine(frequency: 1000, amplitude: pow(10, -20 / 20), sampleRate: 48_000, frames: frames)
        var stereo = [Float](repeating: 0, count: 4 * frames)
        for i in 0..<(2 * frames) {
            let v = i < frames ? loud[i] : loud[i - frames] * Float(pow(10, -10.0 / 20))
            stereo[2 * i] = v
            stereo[2 * i + 1] = v
        }
        try writeSoundFile(range, format: .wavFloat32, channels: 2, sampleRate: 48_000, samples: stereo)
        let lra = try agraph(["analyze", range, "--json"])
        XCTAssertEqual(lra.status, 0, lra.stderr)
        let r = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lra.stdout.utf8)) as? [String: Any], lra.stdout)
        XCTAssertEqual(r["loudnessRangeLU"] as? Double ?? .nan, 10, accuracy: 1, "3342 case 1")
    }

    func testFilesThatCannotBeAnalysedAreNamedAndTheOthersStillAnalysed() throws {
        let dir = try TemporaryDirectory()
        let good = dir.file("good.wav"), missing = dir.file("missing.wav"), garbage = dir.file("garbage.wav")
        try sineFile(good, dBFS: -23, seconds: 5)
        try Data("not audio at all".utf8).write(to: URL(fileURLWithPath: garbage))
        let run = try agraph(["analyze", missing, good, garbage, "--json"])
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains(missing), run.stderr)
        XCTAssertTrue(run.stderr.contains(garbage), run.stderr)
        XCTAssertTrue(run.stderr.contains("2 of 3 files could not be analysed"), run.stderr)
        let array = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [Any], run.stdout)
        XCTAssertEqual(array.count, 3)
        XCTAssertTrue(array[0] is NSNull)
        XCTAssertTrue(array[2] is NSNull)
        let object = try XCTUnwrap(array[1] as? [String: Any])
        XCTAssertEqual(Set(object.keys), Self.keys)
        XCTAssertEqual(object["integratedLUFS"] as? Double ?? .nan, -23, accuracy: 0.1)

        let text = try agraph(["analyze", good, missing])
        XCTAssertEqual(text.status, 1)
        XCTAssertTrue(text.stdout.contains("integrated   -23.0 LUFS"), text.stdout)
        XCTAssertTrue(text.stderr.contains("\(missing): cannot analyse"), text.stderr)
    }

    /// `agraph render` of the example graph normalizes in two passes; the
    /// file written measures -23 LUFS with `agraph analyze`.
    func testRenderNormalizesTheExampleGraph() throws {
        try FileManager.default.createDirectory(at: Self.repoRoot.appendingPathComponent("out"), withIntermediateDirectories: true)
        let dir = try TemporaryDirectory()
        let output = dir.file("normalized.wav")
        let render = try agraph(["render", "Graphs/loudness.json", "-o", output])
        XCTAssertEqual(render.status, 0, render.stderr)
        XCTAssertTrue(render.stderr.contains("'norm': measured"), render.stderr)
        let run = try agraph(["analyze", output, "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        XCTAssertEqual(object["integratedLUFS"] as? Double ?? .nan, -23, accuracy: 0.1)
        XCTAssertEqual(object["durationSeconds"] as? Double ?? .nan, 20, accuracy: 0.001)
    }
}
