import AudioGraph
import Foundation
import TestSupport
import XCTest

/// `binaural` against ffmpeg's `sofalizer` on the same SOFA file, with the
/// nearest measurement (`interpolate=0`) and the same directions: the 5.1
/// surrounds at ±110° (sofalizer's own 5.1(side) surrounds are at ±90°, so
/// they are moved with `speakers`; by channel number, because sofalizer
/// looks names up by channel id but reads positions by channel index).
/// Each channel in turn carries noise; per channel and ear the two outputs
/// must correlate above 0.99. Levels are not compared: sofalizer scales by
/// −3 dB per input channel, and libmysofa's normalisation (which
/// `normalize=1` applies) picks its "front" as the smallest azimuth +
/// elevation, in KEMAR the measurement at (0°, −40°), not (0°, 0°).
final class BinauralSofalizerTests: XCTestCase {
    static let rate = 44100.0
    static let segment = 8192
    static let gap = 2048

    static var ffmpeg: String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let p = "\(dir)/ffmpeg"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs ffmpeg with `arguments`; its exit status and what it printed
    /// (stdout and stderr together).
    static func run(_ ffmpeg: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ffmpeg)
        p.arguments = arguments
        let pipe = Pipe()
        p.standardError = pipe
        p.standardOutput = pipe
        try p.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    static func correlation(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Double {
        let n = min(a.count, b.count)
        let x = a.prefix(n).map(Double.init), y = b.prefix(n).map(Double.init)
        let mx = x.reduce(0, +) / Double(n), my = y.reduce(0, +) / Double(n)
        var sxy = 0.0, sxx = 0.0, syy = 0.0
        for i in 0..<n {
            sxy += (x[i] - mx) * (y[i] - my)
            sxx += (x[i] - mx) * (x[i] - mx)
            syy += (y[i] - my) * (y[i] - my)
        }
        return sxy / (sxx * syy).squareRoot()
    }

    func testEveryChannelOf51CorrelatesWithSofalizer() throws {
        guard let ffmpeg = Self.ffmpeg else { throw XCTSkip("ffmpeg is not installed") }
        let help = try Self.run(ffmpeg, ["-hide_banner", "-h", "filter=sofalizer"])
        guard help.status == 0, help.output.contains("Filter sofalizer") else {
            throw XCTSkip("this ffmpeg has no sofalizer filter")
        }
        let dir = try TemporaryDirectory("agraph-sofalizer")
        let channels = 6
        let frames = channels * (Self.segment + Self.gap)
        var input = [[Float]](repeating: [Float](repeating: 0, count: frames), count: channels)
        for c in 0..<channels {
            let noise = Synth.whiteNoise(frames: Self.segment, seed: UInt64(c + 1))
            for i in 0..<Self.segment { input[c][c * (Self.segment + Self.gap) + i] = noise[i] * 0.25 }
        }
        var interleaved = [Float](repeating: 0, count: frames * channels)
        for c in 0..<channels { for i in 0..<frames { interleaved[i * channels + c] = input[c][i] } }
        let inPath = dir.file("in.wav"), outPath = dir.file("sofalizer.wav")
        try writeSoundFile(inPath, format: .wavFloat32, channels: channels, sampleRate: Self.rate, samples: interleaved)
        let filter = "channelmap=channel_layout=5.1(side),sofalizer=sofa=\(defaultSOFA):type=freq:interpolate=0:normalize=1:speakers=4 110|5 250"
        let r = try Self.run(ffmpeg, ["-hide_banner", "-nostdin", "-y", "-i", inPath, "-af", filter, "-c:a", "pcm_f32le", outPath])
        guard r.status == 0 else {
            return XCTFail("ffmpeg failed: \(r.output.suffix(800))")
        }
        let theirs = try readSoundFile(outPath)
        XCTAssertEqual(theirs.channels, 2)
        XCTAssertEqual(theirs.sampleRate, Self.rate)
        let ours = try BinauralGraph.render(layout: "5.1", input: input)
        for c in 0..<channels {
            let start = c * (Self.segment + Self.gap), end = start + Self.segment + Self.gap
            for ear in 0..<2 {
                let mine = ours[ear][start..<end]
                let other = deinterleave(theirs.samples, channels: 2, channel: ear)
                XCTAssertGreaterThanOrEqual(other.count, end, "sofalizer's output covers channel \(c)")
                guard other.count >= end else { continue }
                let rho = Self.correlation(mine, other[start..<end])
                XCTAssertGreaterThan(rho, 0.99, "channel \(c) ear \(ear): correlation \(rho)")
            }
        }
    }
}
