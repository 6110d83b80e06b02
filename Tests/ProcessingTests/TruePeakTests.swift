import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// The vectorised BS.1770-4 Annex 2 true-peak kernel (`TruePeak.interpolatedPeak`,
/// `TruePeakMeter.blockPeak`, `TruePeakScanner` used by `agraph analyze`):
/// the same values as the scalar kernel to the last bit, and the same true
/// peak as libebur128's own interpolator (a different 4× filter) within
/// 0.1 dB on programme-like noise and on the EBU Tech 3341 true-peak cases
/// but one (where and why they differ more is said at each test).
final class TruePeakTests: XCTestCase {
    /// Noise, interleaved: `channels` channels, uniform in ±`amplitude`,
    /// each channel with its own scale so they differ.
    static func noise(frames: Int, channels: Int, amplitude: Double = 0.5, seed: UInt64 = 7) -> [Float] {
        var rng = SplitMix64(seed: seed)
        var out = [Float](repeating: 0, count: frames * channels)
        for i in 0..<frames {
            for c in 0..<channels {
                out[i * channels + c] = Float(rng.nextSigned() * amplitude / Double(c + 1))
            }
        }
        return out
    }

    /// The scalar kernel, one channel, whole signal: the largest span peak,
    /// and the sample peak (the spans stop 5 samples before the end).
    static func scalarPeak(_ x: [Float]) -> Float {
        let taps = TruePeak.coefficients.flatMap { $0 }
        var history = [Float](repeating: 0, count: TruePeak.stateFloats)
        var position = 0
        let spans = x.withUnsafeBufferPointer { src in
            taps.withUnsafeBufferPointer { t in
                history.withUnsafeMutableBufferPointer { h in
                    TruePeak.blockPeak(src.baseAddress!, count: src.count, taps: t.baseAddress!, history: h.baseAddress!,
                                       position: &position)
                }
            }
        }
        return max(spans, x.map(abs).max() ?? 0)
    }

    func testVectorisedBlockPeakEqualsTheScalarKernelBlockByBlock() {
        let x = Self.noise(frames: 48_000, channels: 1, amplitude: 0.9)
        let taps = TruePeak.coefficients.flatMap { $0 }
        var history = [Float](repeating: 0, count: TruePeak.stateFloats)
        var position = 0
        let meter = TruePeakMeter(channels: 2, vectorised: true)
        var rng = SplitMix64(seed: 3)
        var start = 0
        var blocks = 0
        x.withUnsafeBufferPointer { src in
            while start < src.count {
                // Block sizes around the 11-sample scalar head and the 4-wide vector step.
                let n = min(src.count - start, [1, 3, 11, 12, 13, 15, 16, 64, 127, 128, 1000][Int(rng.next() % 11)])
                let scalar = taps.withUnsafeBufferPointer { t in
                    history.withUnsafeMutableBufferPointer { h in
                        TruePeak.blockPeak(src.baseAddress! + start, count: n, taps: t.baseAddress!, history: h.baseAddress!,
                                           position: &position)
                    }
                }
                let vector = meter.blockPeak(channel: 1, src.baseAddress! + start, count: n)
                XCTAssertEqual(vector.bitPattern, scalar.bitPattern, "block at \(start), \(n) frames: \(vector) vs \(scalar)")
                start += n
                blocks += 1
            }
        }
        XCTAssertGreaterThan(blocks, 100)
    }

    func testScannerEqualsTheScalarKernelAcrossChunksAndChannels() {
        let frames = 30_011
        for channels in [1, 2, 6] {
            let x = Self.noise(frames: frames, channels: channels, seed: UInt64(channels))
            let whole = TruePeakScanner(channels: channels, vectorised: true)
            let small = TruePeakScanner(channels: channels, chunkFrames: 37, vectorised: true)
            let scalar = TruePeakScanner(channels: channels, chunkFrames: 1000, vectorised: false)
            x.withUnsafeBufferPointer { p in
                // Uneven calls: 1 frame, then 5, then the rest in 4099s.
                var at = 0
                for n in [1, 5] + Array(repeating: 4099, count: frames / 4099 + 1) where at < frames {
                    let m = min(n, frames - at)
                    whole.add(interleaved: p.baseAddress! + at * channels, frames: m)
                    small.add(interleaved: p.baseAddress! + at * channels, frames: m)
                    scalar.add(interleaved: p.baseAddress! + at * channels, frames: m)
                    at += m
                }
            }
            XCTAssertEqual(whole.frames, frames)
            for c in 0..<channels {
                let ch = (0..<frames).map { x[$0 * channels + c] }
                let expected = Double(Self.scalarPeak(ch))
                XCTAssertEqual(whole.truePeak(channel: c), expected, "\(channels) ch, channel \(c)")
                XCTAssertEqual(small.truePeak(channel: c), expected, "\(channels) ch, channel \(c), 37-frame chunks")
                XCTAssertEqual(scalar.truePeak(channel: c), expected, "\(channels) ch, channel \(c), scalar loop")
                XCTAssertEqual(scalar.samplePeak(channel: c), whole.samplePeak(channel: c))
                XCTAssertEqual(whole.samplePeak(channel: c), Double(ch.map(abs).max()!))
                let meanSquare = ch.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(frames)
                XCTAssertEqual(whole.meanSquare(channel: c), meanSquare, accuracy: meanSquare * 1e-5)
                XCTAssertEqual(small.meanSquare(channel: c), meanSquare, accuracy: meanSquare * 1e-5)
                XCTAssertGreaterThan(whole.truePeak(channel: c), whole.samplePeak(channel: c), "noise peaks between samples")
            }
        }
    }

    /// libebur128 (EBUR128_MODE_TRUE_PEAK) and the scanner on the same
    /// interleaved signal; both in dB.
    static func compare(_ x: [Float], channels: Int) throws -> [(libebur128: Double, scanner: Double)] {
        let frames = x.count / channels
        let layout: ChannelLayout = channels == 2 ? .stereo : .discrete
        let reference = try EBUR128Meter(channels: channels, sampleRate: 48_000, layout: layout, truePeak: true)
        let scanner = TruePeakScanner(channels: channels, vectorised: true)
        x.withUnsafeBufferPointer { p in
            reference.add(interleaved: p.baseAddress!, frames: frames)
            scanner.add(interleaved: p.baseAddress!, frames: frames)
        }
        return (0..<channels).map {
            (EBUR128Meter.decibels(reference.truePeak(channel: $0)), EBUR128Meter.decibels(scanner.truePeak(channel: $0)))
        }
    }

    /// Programme-like noise (white noise through a one-pole low-pass at
    /// about 2.7 kHz): within 0.1 dB of libebur128. White noise, whose
    /// peaks come largely from content near Nyquist, shows how the two 4×
    /// filters differ there (the Annex's ripple of ±0.2 dB against
    /// libebur128's Hann-windowed sinc, which rolls off earlier): within
    /// 0.5 dB (measured +0.28 and +0.41 dB; ffmpeg's resampler-based true
    /// peak differs from libebur128's by about 0.9 dB on such noise).
    func testAgreesWithLibebur128OnNoise() throws {
        let white = Self.noise(frames: 480_000, channels: 2, amplitude: 0.7, seed: 11)
        var smooth = white
        for c in 0..<2 {
            var y: Float = 0
            for i in 0..<480_000 {
                y += 0.3 * (white[2 * i + c] - y)
                smooth[2 * i + c] = 2 * y
            }
        }
        for (c, r) in try Self.compare(smooth, channels: 2).enumerated() {
            XCTAssertEqual(r.scanner, r.libebur128, accuracy: 0.1, "low-passed noise, channel \(c)")
            XCTAssertTrue(r.scanner.isFinite && r.scanner > -20, "low-passed noise, channel \(c): \(r.scanner) dBTP")
        }
        for (c, r) in try Self.compare(white, channels: 2).enumerated() {
            XCTAssertEqual(r.scanner, r.libebur128, accuracy: 0.5, "white noise, channel \(c)")
        }
    }

    /// EBU Tech 3341 cases 15–19: the expected true peak within +0.2/−0.4 dB,
    /// and libebur128's value within 0.1 dB, except case 17 (fs/6, 60°):
    /// there the peak falls on the Annex filter's phases 1 and 2, whose gain
    /// at 8 kHz is −0.22 dB, and between 4× points (−0.07 dB): the Annex
    /// kernel reads −6.30 dBTP, libebur128 −5.98, within 0.35 dB.
    func testAgreesWithLibebur128OnTheTech3341TruePeakCases() throws {
        for t in LoudnessTests.truePeakCases {
            let samples = LoudnessTests.truePeakSignal(t)
            for (c, r) in try Self.compare(samples, channels: 2).enumerated() {
                XCTAssertEqual(r.scanner, r.libebur128, accuracy: t.name == "3341-17" ? 0.35 : 0.1, "\(t.name), channel \(c)")
                // EBU Tech 3341: expected true peak +0.2 / −0.4 dB.
                XCTAssertLessThanOrEqual(r.scanner, t.expected + 0.2, t.name)
                XCTAssertGreaterThanOrEqual(r.scanner, t.expected - 0.4, t.name)
            }
        }
    }
}
