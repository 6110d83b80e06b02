import Foundation

/// Reference test signals, built independently of the product code so that
/// analysis tests and engine tests never validate the engine against itself.
///
/// Everything is computed in `Double` and rounded to `Float` once per sample.
/// Noise generators are deterministic: the same `seed` always gives the same
/// samples on every platform.
public enum Synth {
    /// A sine `amplitude · sin(2π·frequency·n/sampleRate + phase)` for
    /// `n` in `0..<frames`.
    ///
    /// The cycle count is reduced modulo 1 before scaling by 2π, so the
    /// phase stays exact to `Double` precision even for long signals.
    /// - Parameters:
    ///   - frequency: in Hz; any real value (non-integer is fine).
    ///   - amplitude: linear peak amplitude (1 = 0 dBFS).
    ///   - phase: start phase in radians.
    public static func sine(
        frequency: Double,
        amplitude: Double = 1,
        sampleRate: Double,
        frames: Int,
        phase: Double = 0
    ) -> [Float] {
        precondition(frames >= 0 && sampleRate > 0, "frames must be >= 0 and sampleRate > 0")
        let cyclesPerSample = frequency / sampleRate
        return (0..<frames).map { n in
            let cycles = cyclesPerSample * Double(n)
            let fraction = cycles - cycles.rounded(.down)
            return Float(amplitude * sin(2 * Double.pi * fraction + phase))
        }
    }

    /// An exponential ("log") sine sweep from `startHz` at frame 0 to `endHz`
    /// at frame `frames` (exclusive end), so the instantaneous frequency at
    /// frame `n` is ``logSweepFrequency(startHz:endHz:frames:at:)``.
    ///
    /// Phase is the exact integral of the frequency law:
    /// `φ(t) = 2π·f0·T/ln(r)·(r^(t/T) − 1)`, `r = f1/f0`, `T = frames/sampleRate`.
    public static func logSweep(
        from startHz: Double,
        to endHz: Double,
        amplitude: Double = 1,
        sampleRate: Double,
        frames: Int
    ) -> [Float] {
        precondition(startHz > 0 && endHz > 0 && frames > 0 && sampleRate > 0,
                     "frequencies, frames and sampleRate must be positive")
        let duration = Double(frames) / sampleRate
        let ratio = endHz / startHz
        if abs(ratio - 1) < 1e-12 {
            return sine(frequency: startHz, amplitude: amplitude, sampleRate: sampleRate, frames: frames)
        }
        let logRatio = log(ratio)
        let cycleScale = startHz * duration / logRatio
        return (0..<frames).map { n in
            let t = Double(n) / Double(frames)
            // expm1 keeps precision where r^(t) - 1 is small (near the start).
            let cycles = cycleScale * expm1(logRatio * t)
            let fraction = cycles - cycles.rounded(.down)
            return Float(amplitude * sin(2 * Double.pi * fraction))
        }
    }

    /// The instantaneous frequency of ``logSweep(from:to:amplitude:sampleRate:frames:)``
    /// at (possibly fractional) frame `n`: `f0 · (f1/f0)^(n/frames)`.
    public static func logSweepFrequency(startHz: Double, endHz: Double, frames: Int, at n: Double) -> Double {
        startHz * pow(endHz / startHz, n / Double(frames))
    }

    /// Uniform white noise in `[-1, 1)` (RMS `1/√3` ≈ −4.77 dBFS), from a
    /// SplitMix64 generator seeded with `seed`.
    public static func whiteNoise(frames: Int, seed: UInt64 = 1) -> [Float] {
        precondition(frames >= 0, "frames must be >= 0")
        var rng = SplitMix64(seed: seed)
        return (0..<frames).map { _ in Float(rng.nextSigned()) }
    }

    /// Pink (1/f power, −3.01 dB/octave) noise with RMS `rms`, from white noise
    /// with the given `seed`.
    ///
    /// Shaping filter: a cascade of first-order pole/zero sections. Poles and
    /// zeros alternate, each half an octave from the next, from a top zero at
    /// `0.45·fs` down to a bottom pole near `5e-5·fs`. Between a pole and the
    /// following zero the magnitude falls at 6.02 dB/octave, between a zero and
    /// the next pole it is flat, so on average it falls at 3.01 dB/octave.
    /// Sections are mapped to the z-plane alternately by the matched-z
    /// transform and by the pre-warped bilinear transform: near Nyquist the
    /// former errs high and the latter low, and alternating them keeps the
    /// power spectrum within about ±0.3 dB of the ideal `1/f` line from
    /// `4e-4·fs` to `0.44·fs` (20 Hz … 21 kHz at 48 kHz).
    /// The first 32768 output samples are discarded so the lowest section has
    /// settled.
    public static func pinkNoise(frames: Int, seed: UInt64 = 1, rms: Double = 0.25) -> [Float] {
        precondition(frames >= 0, "frames must be >= 0")
        if frames == 0 { return [] }
        let warmUp = 32768
        var rng = SplitMix64(seed: seed)
        var sections = pinkSections()
        var output = [Double](repeating: 0, count: frames)
        for n in 0..<(frames + warmUp) {
            var x = rng.nextSigned()
            for s in sections.indices {
                x = sections[s].process(x)
            }
            if n >= warmUp { output[n - warmUp] = x }
        }
        let sumOfSquares = output.reduce(0) { $0 + $1 * $1 }
        let actualRMS = (sumOfSquares / Double(frames)).squareRoot()
        let gain = actualRMS > 0 ? rms / actualRMS : 0
        return output.map { Float($0 * gain) }
    }

    /// The pink-noise filter cascade (normalised frequencies, `fs = 1`), laid out
    /// downwards from the top zero.
    private static func pinkSections() -> [FirstOrderSection] {
        var sections: [FirstOrderSection] = []
        let halfOctave = 2.0.squareRoot()
        var zero = 0.45
        while zero / halfOctave > 5e-5 {
            let pole = zero / halfOctave
            let mapping: FirstOrderSection.Mapping = sections.count.isMultiple(of: 2) ? .matchedZ : .bilinear
            sections.append(FirstOrderSection(poleFrequency: pole, zeroFrequency: zero, mapping: mapping))
            zero = pole / halfOctave
        }
        return sections
    }
}

/// One first-order pole/zero section, the digital version of
/// `H(s) = (s + ωz)/(s + ωp)` (up to gain); frequencies are normalised to the
/// sample rate.
private struct FirstOrderSection {
    /// How the analogue pole and zero are mapped to the z-plane.
    enum Mapping {
        /// `z = e^(−2πf)` for both the pole and the zero.
        case matchedZ
        /// Bilinear transform, `s = 2(1 − z⁻¹)/(1 + z⁻¹)`, with corners pre-warped.
        case bilinear
    }

    var b0: Double, b1: Double, a1: Double
    var x1 = 0.0, y1 = 0.0

    init(poleFrequency: Double, zeroFrequency: Double, mapping: Mapping) {
        switch mapping {
        case .matchedZ:
            b0 = 1
            b1 = -exp(-2 * Double.pi * zeroFrequency)
            a1 = -exp(-2 * Double.pi * poleFrequency)
        case .bilinear:
            let wp = 2 * tan(Double.pi * poleFrequency)
            let wz = 2 * tan(Double.pi * zeroFrequency)
            let k = 2.0
            let norm = k + wp
            b0 = (k + wz) / norm
            b1 = (wz - k) / norm
            a1 = (wp - k) / norm
        }
    }

    /// `y[n] = b0·x[n] + b1·x[n−1] − a1·y[n−1]`.
    mutating func process(_ x: Double) -> Double {
        let y = b0 * x + b1 * x1 - a1 * y1
        x1 = x
        y1 = y
        return y
    }
}

/// SplitMix64: a small, well-mixed 64-bit PRNG; deterministic and portable.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Uniform in `[-1, 1)`.
    public mutating func nextSigned() -> Double {
        nextUnit() * 2 - 1
    }
}
