import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// Offline two-pass normalization when the true-peak limiter engages
/// (issue #22, item 11): the loudness after limiting is measured and the
/// gain corrected until the target is met within 0.1 LU (checked with
/// ffmpeg's `ebur128=peak=true`, i.e. libebur128's algorithm), or the
/// notice says by how much and why it cannot be; the file written is as
/// long as the input and every transient stays at its sample.
final class LoudnessLimitedTests: XCTestCase {
    static let rate = 48_000.0

    /// Stereo pink noise at `rms` with one-sample clicks of `clickDBFS`
    /// (both channels, alternating sign) at `clicks`. Interleaved.
    static func noiseWithClicks(seconds: Double, rms: Double, clickDBFS: Double, clicks: [Int]) -> [Float] {
        var samples = LoudnessTests.pinkStereo(seconds: seconds, rms: rms, seed: 23)
        let amplitude = Float(pow(10, clickDBFS / 20))
        for (k, i) in clicks.enumerated() {
            let v = k % 2 == 0 ? amplitude : -amplitude
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        return samples
    }

    /// `file` → loudness (`params`) → `file-out`, rendered the way
    /// `agraph render` does (analysis passes, then the render).
    func normalize(_ input: String, params: String, to output: String) throws -> [String] {
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "src", "type": "file", "params": {"path": "\(input)"}},
                       {"id": "loud", "type": "loudness", "params": \(params)},
                       {"id": "out", "type": "file-out", "params": {"path": "\(output)", "sampleFormat": "float32"}}],
             "links": [{"from": "src", "to": "loud"}, {"from": "loud", "to": "out"}]}
            """
        let g = try TestGraph.validate(json)
        let compiled = try XCTUnwrap(try OfflinePasses.compile(g, maxFrames: 1024))
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors, [])
        XCTAssertEqual(result.ending, .endOfStream)
        return compiled.notices
    }

    /// Noise with -3 dBFS clicks (the limiter engages on every click) and a
    /// peakier programme (a click every 20 ms) both end within 0.1 LU of
    /// -23 LUFS by ffmpeg's measure, under the -1 dBTP ceiling; the file
    /// has the input's length and each click is at its input sample.
    func testLimitedNormalizationMeetsTheTargetAndStaysAligned() throws {
        guard let ffmpeg = FFmpegEBUR128.path else { throw XCTSkip("ffmpeg is not installed") }
        let dir = try TemporaryDirectory()
        let seconds = 8.0
        let frames = Int(seconds * Self.rate)
        let sparse = stride(from: 12_345, to: frames - 1000, by: 48_000).map { $0 }
        let dense = stride(from: 4_321, to: frames - 1000, by: 4800).map { $0 }
        for (name, rms, clickDBFS, clicks) in [("clicks", 0.005, -3.0, sparse), ("peaky", 0.002, -1.0, dense)] {
            let samples = Self.noiseWithClicks(seconds: seconds, rms: rms, clickDBFS: clickDBFS, clicks: clicks)
            let input = dir.file("\(name).wav"), output = dir.file("\(name)-norm.wav")
            try LoudnessTests.write(samples, channels: 2, to: input)
            let notices = try normalize(input, params: #"{"target": -23, "ceiling": -1}"#, to: output)
            XCTAssertTrue(notices.contains { $0.contains("limiter holds it at -1.00 dBTP") && $0.contains("after limiting") },
                          "\(name): \(notices)")
            let m = try FFmpegEBUR128.measure(output, ffmpeg: ffmpeg)
            XCTAssertEqual(m.integrated, -23, accuracy: 0.1, "\(name): integrated loudness after limiting (ffmpeg)")
            XCTAssertLessThanOrEqual(m.truePeak, -1 + 0.1, "\(name): true peak (ffmpeg prints 0.1 dB steps)")
            let out = try readSoundFile(output)
            XCTAssertEqual(out.samples.count, samples.count, "\(name): as long as the input, frame for frame")
            let left = deinterleave(out.samples, channels: 2, channel: 0)
            for i in clicks.prefix(20) {
                let window = (i - 300)...(i + 300)
                let loudest = window.max { abs(left[$0]) < abs(left[$1]) } ?? -1
                XCTAssertEqual(loudest, i, "\(name): the click at frame \(i) is at frame \(loudest) in the output")
            }
        }
    }

    /// A target the ceiling leaves no room for: the notice says how far
    /// under it the output ends, and that is what ffmpeg measures.
    func testUnreachableTargetSaysByHowMuchAndWhy() throws {
        guard let ffmpeg = FFmpegEBUR128.path else { throw XCTSkip("ffmpeg is not installed") }
        let dir = try TemporaryDirectory()
        let frames = Int(6 * Self.rate)
        let samples = Self.noiseWithClicks(seconds: 6, rms: 0.01, clickDBFS: -1,
                                           clicks: stride(from: 1000, to: frames - 1000, by: 4800).map { $0 })
        let input = dir.file("in.wav"), output = dir.file("out.wav")
        try LoudnessTests.write(samples, channels: 2, to: input)
        let notices = try normalize(input, params: #"{"target": -8, "ceiling": -20}"#, to: output)
        let line = try XCTUnwrap(notices.first { $0.contains("cannot reach -8.00 LUFS under a -20.00 dBTP ceiling") }, "\(notices)")
        XCTAssertTrue(line.contains("lower the target or raise the ceiling"), line)
        // "…, 5.43 LU under the target"
        let words = line.components(separatedBy: " ")
        let k = try XCTUnwrap(words.indices.first { $0 >= 2 && words[$0] == "under" && words[$0 - 1] == "LU" }, line)
        let short = try XCTUnwrap(Double(words[k - 2]), line)
        let m = try FFmpegEBUR128.measure(output, ffmpeg: ffmpeg)
        XCTAssertEqual(-8 - m.integrated, short, accuracy: 0.1, "the shortfall said vs measured: \(line)")
        XCTAssertGreaterThan(short, 1, line)
        XCTAssertLessThanOrEqual(m.truePeak, -20 + 0.1)
        XCTAssertEqual(try readSoundFile(output).samples.count, samples.count)
    }
}
