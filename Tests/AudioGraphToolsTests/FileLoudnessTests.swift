import AudioGraph
import AudioGraphTools
import Foundation
import XCTest

/// `agraph analyze`'s measurement in-process, on a tone made here.
final class FileLoudnessTests: XCTestCase {
    /// A stereo sine of `seconds` at `peakDBFS`, both channels alike.
    final class Sine: AnalysisInput {
        let channels = 2
        let sampleRate = 48_000.0
        let layout = ChannelLayout.stereo
        let isLengthKnown = true
        let frames: Int
        let amplitude: Double
        let frequency: Double
        var position = 0
        var finished = 0
        let readError: String? = nil

        init(frequency: Double, peakDBFS: Double, seconds: Double) {
            self.frequency = frequency
            amplitude = pow(10, peakDBFS / 20)
            frames = Int(seconds * 48_000)
        }

        func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) -> Int {
            let n = min(count, frames - position)
            for i in 0..<n {
                let v = Float(amplitude * sin(2 * .pi * frequency * Double(position + i) / sampleRate))
                buffer[2 * i] = v
                buffer[2 * i + 1] = v
            }
            position += n
            return n
        }

        func finish() -> [String] {
            finished += 1
            return []
        }
    }

    /// BS.1770: a stereo 997 Hz sine at -20 dBFS peak reads -20 LUFS (each
    /// channel's mean square 0.01/2 = -23.01 dB, K-weighting about +0.69 dB
    /// at 1 kHz offset by the -0.691 constant, and two channels +3.01 dB);
    /// sample peak -20 dBFS, each channel's RMS -23.01 dBFS; a steady tone
    /// has no loudness range.
    func testIntegratedLoudnessPeakAndRMSOfASine() throws {
        let tone = Sine(frequency: 997, peakDBFS: -20, seconds: 10)
        var calls = 0
        let r = try FileLoudness.measure(tone) { _ in calls += 1; return true }
        XCTAssertEqual(r.frames, 480_000)
        XCTAssertEqual(r.durationSeconds, 10, accuracy: 1e-12)
        XCTAssertEqual(r.integratedLUFS, -20.0, accuracy: 0.1)
        XCTAssertEqual(r.loudnessRangeLU, 0, accuracy: 0.1)
        XCTAssertEqual(r.samplePeakDBFS, -20, accuracy: 0.01)
        XCTAssertEqual(r.truePeakDBTP, -20, accuracy: 0.05)
        XCTAssertEqual(r.channels.count, 2)
        for c in r.channels {
            XCTAssertEqual(c.rmsDBFS, -20 - 10 * log10(2.0), accuracy: 0.01)
            XCTAssertEqual(c.peakDBFS, -20, accuracy: 0.01)
        }
        XCTAssertEqual(calls, (480_000 + FileLoudness.blockFrames - 1) / FileLoudness.blockFrames, "progress every block")
        XCTAssertGreaterThanOrEqual(tone.finished, 1, "the input was closed")

        // 10 dB down reads 10 LU down.
        let quieter = try FileLoudness.measure(Sine(frequency: 997, peakDBFS: -30, seconds: 10)) { _ in true }
        XCTAssertEqual(quieter.integratedLUFS, r.integratedLUFS - 10, accuracy: 0.05)
    }

    func testProgressReturningFalseInterrupts() {
        XCTAssertThrowsError(try FileLoudness.measure(Sine(frequency: 997, peakDBFS: -20, seconds: 10)) { $0 < 1 }) { error in
            XCTAssertTrue(error is FileLoudness.Interrupted)
        }
    }
}
