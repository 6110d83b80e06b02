import Foundation
import TestSupport
import XCTest

/// `agraph render --duration 2` of a graph with a limiting `loudness`
/// node: the file sink drops the limiter's lookahead (72 frames at 48 kHz)
/// offline, and the render stopped at 2 s of frames, so the file was 72
/// frames short. It renders on by the lookahead: every file is exactly
/// 2 × 48000 frames, the one behind the limiter and one that is not, and a
/// click stays at its sample.
final class DurationLookaheadTests: XCTestCase {
    func testDurationGivesFilesOfExactlyThatManyFramesBehindALimiter() throws {
        let dir = try TemporaryDirectory("agraph-duration-lookahead")
        let rate = 48_000, click = 60_000
        // 3 s of a quiet 440 Hz sine (stereo) with a one-sample click at
        // frame 60 000: the normalization gain drives the click into the limiter.
        var samples: [Float] = []
        for i in 0..<(3 * rate) {
            let v: Float = i == click ? 0.7 : Float(0.01 * sin(2 * Double.pi * 440 * Double(i) / Double(rate)))
            samples += [v, v]
        }
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 2, sampleRate: Double(rate), samples: samples)
        let graph = dir.file("g.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "src", "type": "file", "params": {"path": "in.wav"}},
          {"id": "loud", "type": "loudness", "params": {"target": -23, "ceiling": -1}},
          {"id": "out", "type": "file-out", "params": {"path": "out.wav", "sampleFormat": "float32"}},
          {"id": "dry", "type": "file-out", "params": {"path": "dry.wav", "sampleFormat": "float32"}}],
         "links": [{"from": "src", "to": "loud"}, {"from": "loud", "to": "out"}, {"from": "src", "to": "dry"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)

        let run = try CLITests.agraph(arguments: ["render", graph, "--duration", "2"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("rendered 96000 frames (2.000 s)"), run.stderr)
        for name in ["out.wav", "dry.wav"] {
            let out = try readSoundFile(dir.file(name))
            XCTAssertEqual(out.samples.count, 2 * 2 * rate, "\(name): exactly 2 s × 48000 frames")
            let left = deinterleave(out.samples, channels: 2, channel: 0)
            let window = (click - 300)...(click + 300)
            let loudest = window.max { abs(left[$0]) < abs(left[$1]) } ?? -1
            XCTAssertEqual(loudest, click, "\(name): the click at frame \(click) is at frame \(loudest)")
        }
        // The dry file is the input, sample for sample, up to 2 s.
        let dry = try readSoundFile(dir.file("dry.wav"))
        XCTAssertEqual(dry.samples, Array(samples.prefix(2 * 2 * rate)))
    }
}
