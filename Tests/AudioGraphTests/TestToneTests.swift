import XCTest
import AudioGraph
import TestSupport

/// The `test-tone` node, judged by its signal.
final class TestToneTests: XCTestCase {
    let rate = 48000.0

    func tone(_ params: String, seconds: Double = 2) throws -> [[Float]] {
        try TestGraph.render(TestGraph.single("test-tone", params), seconds: seconds)
    }

    func testSineFrequencyAndLevel() throws {
        for (f, level) in [(997.0, -12.0), (50.0, -3.0), (12_345.6, -20.0), (440.0, 0.0)] {
            let out = try tone(#"{"frequency": \#(f), "level": \#(level), "channels": 2}"#)
            XCTAssertEqual(out.count, 2)
            for ch in out {
                XCTAssertEqual(ch.count, 96000)
                let measured = SignalAnalysis.frequency(of: ch, sampleRate: rate)
                XCTAssertEqual(measured, f, accuracy: f * 1e-4, "frequency within 0.01 %")
                XCTAssertEqual(SignalAnalysis.sineLevelDBFS(ch), level, accuracy: 0.05, "level within 0.05 dB")
                XCTAssertEqual(SignalAnalysis.dBFS(SignalAnalysis.peak(ch)), level, accuracy: 0.05)
            }
            XCTAssertNil(firstMismatch(out[0], out[1]), "every channel carries the same signal")
        }
    }

    /// A steady sine is scaled and written to two channels in one pass;
    /// it must equal, sample for sample, the unit sine times the level's
    /// linear gain in Float (what rendering and then scaling gives), on
    /// every channel, for every channel count and block size.
    func testSteadySineEqualsTheScaledUnitSineOnEveryChannel() throws {
        let reference = try tone(#"{"frequency": 997, "level": 0, "channels": 1}"#, seconds: 0.5)[0]
        let g = Float(Decibels.toLinear(-7.5))
        for channels in [1, 2, 3] {
            for block in [64, 1023] {
                let out = try TestGraph.render(TestGraph.single("test-tone", #"{"frequency": 997, "level": -7.5, "channels": \#(channels)}"#),
                                               seconds: 0.5, blockFrames: block)
                XCTAssertEqual(out.count, channels)
                for ch in out {
                    XCTAssertEqual(ch.count, reference.count)
                    XCTAssertNil(firstMismatch(ch, reference.map { $0 * g }), "\(channels) channels, block \(block)")
                }
            }
        }
    }

    func testSquareAndSaw() throws {
        for shape in ["square", "saw"] {
            let out = try tone(#"{"waveform": "\#(shape)", "frequency": 300, "level": -6, "channels": 1}"#)[0]
            XCTAssertEqual(SignalAnalysis.frequency(of: out, sampleRate: rate), 300, accuracy: 0.03)
            // Fundamental of a square is 4/π of its height; of a saw 2/π.
            let fundamental = SignalAnalysis.goertzelMagnitude(out, sampleRate: rate, frequency: 300)
            let height = SignalAnalysis.linear(fromDBFS: -6)
            let expected = shape == "square" ? 4 / Double.pi * height : 2 / Double.pi * height
            XCTAssertEqual(fundamental, expected, accuracy: expected * 0.01, shape)
            // Band-limited: little energy far above the harmonics' decay (aliasing stays low).
            XCTAssertLessThan(SignalAnalysis.peak(out), height * 1.2, shape)
        }
    }

    func testWhiteNoiseIsFlatAndAtLevel() throws {
        let out = try tone(#"{"waveform": "white", "level": -20, "channels": 1, "seed": 7}"#, seconds: 8)[0]
        let slope = SignalAnalysis.octaveBandSlope(out, sampleRate: rate, from: 50, to: 12800)
        XCTAssertEqual(slope, 0, accuracy: 0.3)
        // Same RMS as a sine of -20 dBFS peak.
        XCTAssertEqual(SignalAnalysis.rmsDBFS(out), -20 - 3.0103, accuracy: 0.1)
    }

    func testPinkNoiseSlopesThreeDecibelsPerOctave() throws {
        let out = try tone(#"{"waveform": "pink", "level": -20, "channels": 1, "seed": 3}"#, seconds: 8)[0]
        let slope = SignalAnalysis.octaveBandSlope(out, sampleRate: rate, from: 25, to: 12800)
        XCTAssertEqual(slope, -3.01, accuracy: 0.25)
        XCTAssertEqual(SignalAnalysis.rmsDBFS(out), -20 - 3.0103, accuracy: 0.2)
    }

    func testNoiseIsDeterministicPerSeed() throws {
        let a = try tone(#"{"waveform": "white", "seed": 5, "channels": 1}"#, seconds: 0.1)[0]
        let b = try tone(#"{"waveform": "white", "seed": 5, "channels": 1}"#, seconds: 0.1)[0]
        let c = try tone(#"{"waveform": "white", "seed": 6, "channels": 1}"#, seconds: 0.1)[0]
        XCTAssertNil(firstMismatch(a, b))
        XCTAssertNotNil(firstMismatch(a, c))
    }

    func testLogSweepStartsAndEndsWhereAsked() throws {
        let seconds = 4.0
        let out = try tone(#"{"waveform": "sweep", "frequency": 100, "endFrequency": 10000, "sweepTime": \#(seconds), "level": -6, "channels": 1}"#,
                           seconds: seconds)[0]
        let frames = Int(seconds * rate)
        XCTAssertEqual(out.count, frames)
        func expected(_ n: Int) -> Double { 100 * pow(100, Double(n) / Double(frames - 1)) }
        // Measured a little inside each end with a centred window.
        for n in [2400, frames / 2, frames - 1200] {
            let window = n < frames / 4 ? 4800 : 960
            let f = SignalAnalysis.instantaneousFrequency(of: out, sampleRate: rate, around: n, window: window)
            XCTAssertEqual(f, expected(n), accuracy: expected(n) * 0.005, "at frame \(n)")
        }
        // And the law itself: it starts at 100 Hz and ends at 10 kHz.
        XCTAssertEqual(expected(0), 100, accuracy: 1e-9)
        XCTAssertEqual(expected(frames - 1), 10000, accuracy: 1e-6)
        // Log sweep: equal time per octave, so the middle is at the geometric mean.
        XCTAssertEqual(expected(frames / 2), 1000, accuracy: 1)
        XCTAssertEqual(SignalAnalysis.dBFS(SignalAnalysis.peak(out)), -6, accuracy: 0.05)
    }

    func testImpulsesAreExactSamples() throws {
        let out = try tone(#"{"waveform": "impulse", "interval": 0.01, "level": -6, "channels": 1}"#, seconds: 0.1)[0]
        let amplitude = Float(SignalAnalysis.linear(fromDBFS: -6))
        for (i, v) in out.enumerated() {
            if i % 480 == 0 {
                XCTAssertEqual(v, amplitude, accuracy: 1e-6, "impulse at \(i)")
            } else if v != 0 {
                XCTFail("sample \(i) is \(v), expected 0")
                break
            }
        }
        let single = try tone(#"{"waveform": "impulse", "interval": 0, "channels": 1}"#, seconds: 0.2)[0]
        XCTAssertEqual(single.filter { $0 != 0 }.count, 1)
        XCTAssertNotEqual(single[0], 0)
    }

    func testDurationEndsTheStreamOnTheExactFrame() throws {
        // 0.5 s is not a multiple of the block size.
        let out = try tone(#"{"duration": 0.5, "channels": 1}"#, seconds: 10)[0]
        XCTAssertEqual(out.count, 24000)
    }

    func testSilenceIsZero() throws {
        let out = try tone(#"{"waveform": "silence", "channels": 3}"#, seconds: 0.2)
        XCTAssertEqual(out.count, 3)
        XCTAssertTrue(out.allSatisfy { $0.allSatisfy { $0 == 0 } })
    }
}
