import AudioGraph
@testable import AudioGraphAnalysis
import Foundation
import TestSupport
import XCTest

/// The measurement kernels of `agraph compare`, each against a value known
/// in advance or measured another way in the test.
final class MeasurementTests: XCTestCase {
    // MARK: FFT

    func testRealFFTMatchesADirectDoublePrecisionFFT() throws {
        let n = 1024
        let fft = try RealFFT(size: n)
        let x = Synth.whiteNoise(frames: n, seed: 5)
        for i in 0..<n { fft.input[i] = x[i] }
        fft.forward()
        let reference = SignalAnalysis.fft(x.map(Double.init))
        var worst = 0.0
        for k in 0...(n / 2) {
            worst = max(worst, abs(Double(fft.output[2 * k]) - reference[k].re), abs(Double(fft.output[2 * k + 1]) - reference[k].im))
        }
        XCTAssertLessThan(worst, 1e-3, "every bin (magnitudes up to ~20) to float precision")
        XCTAssertEqual(Array(UnsafeBufferPointer(start: fft.input, count: n)), x, "the input is left as it was")
        XCTAssertThrowsError(try RealFFT(size: 1000)) { XCTAssertTrue("\($0)".contains("power of two"), "\($0)") }
    }

    // MARK: bands

    func testThirdOctaveBandsFollowIEC61260AndNyquist() {
        let b48 = ThirdOctaveBands(sampleRate: 48000)
        XCTAssertEqual(b48.count, 30)
        XCTAssertEqual(b48.bands.first?.nominalHz, 25)
        XCTAssertEqual(b48.bands.last?.nominalHz, 20000)
        let k1 = b48.bands[16]
        XCTAssertEqual(k1.nominalHz, 1000)
        XCTAssertEqual(k1.centreHz, 1000, accuracy: 1e-9)
        for (i, band) in b48.bands.enumerated() {
            XCTAssertEqual(band.upperHz / band.lowerHz, pow(10, 0.1), accuracy: 1e-12)
            XCTAssertEqual(band.centreHz, (band.lowerHz * band.upperHz).squareRoot(), accuracy: 1e-9)
            // Nominal frequencies round the exact ones by a few percent at most.
            XCTAssertEqual(band.nominalHz / band.centreHz, 1, accuracy: 0.03, "\(band.nominalHz)")
            if i > 0 { XCTAssertEqual(band.lowerHz, b48.bands[i - 1].upperHz, accuracy: 1e-9, "bands are contiguous") }
        }
        // At 44.1 kHz the 20 kHz band reaches past 22.05 kHz: left out.
        let b44 = ThirdOctaveBands(sampleRate: 44100)
        XCTAssertEqual(b44.count, 29)
        XCTAssertEqual(b44.bands.last?.nominalHz, 16000)
        XCTAssertEqual(ThirdOctaveBands(sampleRate: 8000).bands.last?.nominalHz, 3150)
        XCTAssertEqual(ThirdOctaveBands.label(31.5), "31.5")
        XCTAssertEqual(ThirdOctaveBands.label(12500), "12.5k")
    }

    /// Band levels of interleaved `samples` by `WelchSpectrum`, fed in blocks of `block`.
    func bandLevels(_ samples: [Float], channels: Int, block: Int = 1000, fftSize: Int? = nil) throws -> (WelchSpectrum, [[Double]]) {
        let w = try WelchSpectrum(channels: channels, sampleRate: 48000, fftSize: fftSize)
        samples.withUnsafeBufferPointer { p in
            guard let base = p.baseAddress else { return }
            var done = 0
            let frames = samples.count / channels
            while done < frames {
                let n = min(block, frames - done)
                w.add(interleaved: base + done * channels, frames: n)
                done += n
            }
        }
        w.finish()
        return (w, w.bandLevels(ThirdOctaveBands(sampleRate: 48000)))
    }

    func testASineReadsItsRMSLevelInItsBandAndLittleElsewhere() throws {
        let sine = Synth.sine(frequency: 1000, amplitude: 0.5, sampleRate: 48000, frames: 48000 * 3)
        let (_, levels) = try bandLevels(sine, channels: 1)
        let bands = ThirdOctaveBands(sampleRate: 48000)
        let k = bands.bands.firstIndex { $0.nominalHz == 1000 } ?? -1
        // RMS of a sine of peak 0.5: 20·log10(0.5) − 3.0103 dB.
        XCTAssertEqual(levels[0][k], 20 * log10(0.5) - 3.0103, accuracy: 0.02)
        XCTAssertLessThan(levels[0][k - 2], levels[0][k] - 60, "two bands below: the Hann window's leakage only")
        XCTAssertLessThan(levels[0][k + 2], levels[0][k] - 60, "two bands above")
    }

    func testPowerAddsUpToTheMeanSquareAndMatchesAnIndependentWelchEstimate() throws {
        let frames = 48000 * 4
        let x = Synth.whiteNoise(frames: frames, seed: 9).map { $0 * 0.3 }
        let (w, levels) = try bandLevels(x, channels: 1, block: 777)
        let p = w.meanSquare(channel: 0)
        // Parseval: the bins hold the mean square of the segments measured
        // (white noise: the whole signal's, to the estimate's spread).
        let meanSquare = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(frames)
        XCTAssertEqual(p.reduce(0, +) / meanSquare, 1, accuracy: 0.01)
        // The test's own double-precision Welch estimate (TestSupport's FFT),
        // integrated over the bands by overlap, gives the same levels.
        let reference = SignalAnalysis.powerSpectrum(x, fftSize: w.fftSize)
        let delta = 48000 / Double(w.fftSize)
        for (b, band) in ThirdOctaveBands(sampleRate: 48000).bands.enumerated() {
            var sum = 0.0
            for (k, v) in reference.enumerated() {
                let f = Double(k) * delta
                sum += v * max(0, min(band.upperHz, f + delta / 2) - max(band.lowerHz, f - delta / 2)) / delta
            }
            XCTAssertEqual(levels[0][b], 10 * log10(sum), accuracy: 0.01, "band \(band.nominalHz) Hz")
            // And the theory of white noise: the band's share of 0.09/3.
            if band.nominalHz >= 200 {
                XCTAssertEqual(levels[0][b], 10 * log10(0.03 * (band.upperHz - band.lowerHz) / 24000), accuracy: 0.6, "band \(band.nominalHz) Hz")
            }
        }
    }

    func testBlockSizesDoNotChangeTheResultAndShortStreamsAreMeasured() throws {
        let x = Synth.pinkNoise(frames: 48000 * 2, seed: 3, rms: 0.2)
        let stereo = x.enumerated().flatMap { [$0.element, -$0.element * 0.5] }
        let (_, one) = try bandLevels(stereo, channels: 2, block: 96000)
        let (_, odd) = try bandLevels(stereo, channels: 2, block: 129)
        for c in 0..<2 { for b in one[c].indices { XCTAssertEqual(one[c][b], odd[c][b], accuracy: 1e-9) } }
        for b in one[0].indices { XCTAssertEqual(one[0][b] - one[1][b], 20 * log10(2), accuracy: 1e-4, "channel 2 is channel 1 at −6.02 dB") }
        // 0.1 s, shorter than one 32768-point segment: one shorter window.
        let short = Synth.sine(frequency: 500, amplitude: 0.25, sampleRate: 48000, frames: 4800)
        let (w, levels) = try bandLevels(short, channels: 1)
        XCTAssertEqual(w.segments, 1)
        let k = ThirdOctaveBands(sampleRate: 48000).bands.firstIndex { $0.nominalHz == 500 } ?? -1
        XCTAssertEqual(levels[0][k], 20 * log10(0.25) - 3.0103, accuracy: 0.1)
        // Silence: −inf everywhere.
        let (_, silent) = try bandLevels([Float](repeating: 0, count: 48000), channels: 1)
        XCTAssertTrue(silent[0].allSatisfy { $0 == -.infinity })
    }

    // MARK: correlation

    func correlation(_ x: [Float], _ y: [Float]) -> Double? {
        var r = PearsonCorrelation()
        let interleaved = zip(x, y).flatMap { [$0, $1] }
        interleaved.withUnsafeBufferPointer { p in
            // Two calls: the sums carry across blocks.
            let half = x.count / 2
            r.add(interleaved: p.baseAddress!, stride: 2, x: 0, y: 1, frames: half)
            r.add(interleaved: p.baseAddress! + 2 * half, stride: 2, x: 0, y: 1, frames: x.count - half)
        }
        return r.coefficient
    }

    func testCorrelationOfIdenticalInvertedAndIndependentChannels() throws {
        let a = Synth.whiteNoise(frames: 480_000, seed: 1)
        let b = Synth.whiteNoise(frames: 480_000, seed: 2)
        XCTAssertEqual(try XCTUnwrap(correlation(a, a)), 1, accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(correlation(a, a.map { $0 * 0.1 })), 1, accuracy: 1e-9, "a gain does not change it")
        XCTAssertEqual(try XCTUnwrap(correlation(a, a.map { -$0 })), -1, accuracy: 1e-12)
        // Independent noise: r ≈ 0 (its spread is 1/√n ≈ 0.0014).
        XCTAssertEqual(try XCTUnwrap(correlation(a, b)), 0, accuracy: 0.01)
        // a + b (equal powers): about 1/√2; exactly what the test's own
        // Pearson formula gives over the samples.
        let mix = zip(a, b).map { $0 + $1 }
        let n = Double(a.count)
        let sx = a.reduce(0.0) { $0 + Double($1) }, sy = mix.reduce(0.0) { $0 + Double($1) }
        let sxx = a.reduce(0.0) { $0 + Double($1) * Double($1) }, syy = mix.reduce(0.0) { $0 + Double($1) * Double($1) }
        let sxy = zip(a, mix).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
        let expected = (n * sxy - sx * sy) / ((n * sxx - sx * sx) * (n * syy - sy * sy)).squareRoot()
        XCTAssertEqual(try XCTUnwrap(correlation(a, mix)), expected, accuracy: 1e-9)
        XCTAssertEqual(expected, 1 / 2.0.squareRoot(), accuracy: 0.01)
        XCTAssertNil(correlation(a, [Float](repeating: 0, count: a.count)), "silence has no correlation")
    }

    func testChannelPairsOfEachLayout() {
        XCTAssertTrue(ChannelPairs.pairs(layout: .mono, channels: 1).isEmpty)
        XCTAssertEqual(ChannelPairs.pairs(layout: .binaural, channels: 2).map { [$0.0, $0.1] }, [[0, 1]])
        XCTAssertEqual(ChannelPairs.pairs(layout: .surround51, channels: 6).map { [$0.0, $0.1] }, [[0, 1], [4, 5]])
        XCTAssertEqual(ChannelPairs.pairs(layout: .surround71, channels: 8).map { [$0.0, $0.1] }, [[0, 1], [4, 5], [6, 7]])
        XCTAssertEqual(ChannelPairs.pairs(layout: .discrete, channels: 4).map { [$0.0, $0.1] }, [[0, 1]])
    }

    // MARK: ILD and ITD

    /// A decaying noise burst: an impulse response with no structure that
    /// could lock the cross-correlation onto a wrong lag.
    func response(_ length: Int, seed: UInt64) -> [Float] {
        Synth.whiteNoise(frames: length, seed: seed).enumerated().map { $0.element * Float(exp(-Double($0.offset) / 40)) }
    }

    func delayed(_ h: [Float], by d: Int, gain: Float, length: Int) -> [Float] {
        (0..<length).map { i in i >= d && i - d < h.count ? h[i - d] * gain : 0 }
    }

    /// The ITD is the low-frequency lag: a far ear whose high band arrives
    /// at another lag (a pinna or diffraction path; here a 6 kHz burst in
    /// both ears, stronger than the low band, 35 samples apart) does not
    /// move it; over the full band the correlation locks onto the burst.
    func testTheITDFollowsTheLowBandNotAHighFrequencyPath() {
        let length = 600
        let low = (0..<96).map { i in Float(sin(Double.pi * Double(i) / 96)) }   // a smooth, low-passed pulse
        func burst(_ i: Int) -> Float {                                         // 64 samples of 6 kHz, windowed
            Float(sin(Double.pi * Double(i) / 64) * sin(2 * Double.pi * 6000 * Double(i) / 48000))
        }
        var left = [Float](repeating: 0, count: length)
        var right = [Float](repeating: 0, count: length)
        for (i, v) in low.enumerated() {
            left[10 + i] = v
            right[10 + 20 + i] = 0.5 * v                                         // the low band 20 samples late
        }
        for i in 0..<64 {
            left[10 + i] += 3 * burst(i)
            right[10 + 35 + i] += 3 * burst(i)                                   // the high band 35 samples late
        }
        let d = InterauralDifference.measure(left: left, right: right, sampleRate: 48000)
        XCTAssertEqual(d.itdSamples ?? .nan, 20, accuracy: 0.05, "the low band's lag")
        // The burst dominates the full-band correlation: without the
        // low-pass, the peak would not be at 20.
        var best = (lag: 0, value: 0.0)
        for lag in -48...48 {
            var r = 0.0
            for n in 0..<length where n + lag >= 0 && n + lag < length { r += Double(left[n]) * Double(right[n + lag]) }
            if abs(r) > abs(best.value) { best = (lag, r) }
        }
        XCTAssertNotEqual(best.lag, 20, "the case needs the low-pass")
    }

    func testWholeSampleDelaysAndGainsComeOutExactly() {
        let h = response(256, seed: 4)
        // Right = left delayed by 9 samples at half the amplitude: the left
        // ear leads by 9 samples and is 6.02 dB louder.
        var d = InterauralDifference.measure(left: delayed(h, by: 0, gain: 1, length: 400),
                                             right: delayed(h, by: 9, gain: 0.5, length: 400), sampleRate: 48000)
        XCTAssertEqual(d.itdSamples ?? .nan, 9, accuracy: 1e-9)
        XCTAssertEqual(d.itdMicroseconds ?? .nan, 9 / 48000 * 1e6, accuracy: 1e-6)
        XCTAssertEqual(d.ildDB ?? .nan, 20 * log10(2), accuracy: 1e-5)
        XCTAssertFalse(d.itdAtSearchLimit)
        // Mirrored: the right ear leads by 30 samples, 12 dB louder.
        d = InterauralDifference.measure(left: delayed(h, by: 30, gain: 0.25, length: 400),
                                         right: delayed(h, by: 0, gain: 1, length: 400), sampleRate: 48000)
        XCTAssertEqual(d.itdSamples ?? .nan, -30, accuracy: 1e-9)
        XCTAssertEqual(d.ildDB ?? .nan, -20 * log10(4), accuracy: 1e-5)
        // Opposite polarity in one ear: the same lag.
        d = InterauralDifference.measure(left: delayed(h, by: 0, gain: 1, length: 400),
                                         right: delayed(h, by: 5, gain: -1, length: 400), sampleRate: 48000)
        XCTAssertEqual(d.itdSamples ?? .nan, 5, accuracy: 1e-9)
        XCTAssertEqual(d.ildDB ?? .nan, 0, accuracy: 1e-9)
    }

    func testFractionalDelaysAreFoundBetweenSamples() {
        // Gaussian pulses (σ = 4 samples) centred at 100 and 102.4.
        func pulse(_ centre: Double) -> [Float] {
            (0..<300).map { Float(exp(-pow((Double($0) - centre) / 4, 2) / 2)) }
        }
        let d = InterauralDifference.measure(left: pulse(100), right: pulse(102.4), sampleRate: 48000)
        XCTAssertEqual(d.itdSamples ?? .nan, 2.4, accuracy: 0.05)
        let e = InterauralDifference.measure(left: pulse(100.3), right: pulse(100), sampleRate: 48000)
        XCTAssertEqual(e.itdSamples ?? .nan, -0.3, accuracy: 0.05)
    }

    func testSilentEarsAndDelaysBeyondTheSearchRange() {
        let h = response(128, seed: 2)
        let silent = InterauralDifference.measure(left: h, right: [Float](repeating: 0, count: 128), sampleRate: 48000)
        XCTAssertNil(silent.ildDB)
        XCTAssertNil(silent.itdSamples)
        XCTAssertTrue(silent.leftEnergyDB.isFinite)
        XCTAssertEqual(silent.rightEnergyDB, -.infinity)
        // A broad pulse 100 samples (2.08 ms) later: beyond the ±1 ms (48
        // samples) search, the correlation still rising at its edge: flagged.
        let broad = (0..<100).map { Float(exp(-pow((Double($0) - 50) / 30, 2) / 2)) }
        let far = InterauralDifference.measure(left: delayed(broad, by: 0, gain: 1, length: 400),
                                               right: delayed(broad, by: 100, gain: 1, length: 400), sampleRate: 48000)
        XCTAssertTrue(far.itdAtSearchLimit)
        XCTAssertEqual(far.itdSamples ?? .nan, 48, accuracy: 1e-9)
        let wide = InterauralDifference.measure(left: delayed(h, by: 0, gain: 1, length: 400),
                                                right: delayed(h, by: 100, gain: 1, length: 400), sampleRate: 48000, maxLagSeconds: 0.003)
        XCTAssertEqual(wide.itdSamples ?? .nan, 100, accuracy: 1e-9)
        XCTAssertFalse(wide.itdAtSearchLimit)
    }
}
