import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

/// The power spectrum of a stream, estimated by Welch's method, fed block by
/// block: Hann-windowed segments of `fftSize` frames overlapping by half,
/// each transformed by a real FFT (`RealFFT`, libavutil's av_tx), their
/// squared magnitudes averaged.
///
/// Calibration: `meanSquare(channel:)` gives, per bin k (0 … fftSize/2),
/// the share of the channel's mean square (its power, 1/N Σ x²) that lies
/// in that bin: P_k = c_k · Σ_segments |X_k|² / (N · Σ_segments Σ_n w_n²),
/// with c_k = 2 for 0 < k < N/2 (one-sided), else 1; so Σ_k P_k is the
/// mean square, and a sine of peak a puts a²/2 into the bins around it.
/// Frames after the last whole segment (less than a hop) are not used. A
/// stream shorter than one segment is measured as a single segment with a
/// Hann window as long as the stream, zero-padded.
///
/// Threading: one thread at a time; `add` does not allocate (`init` and
/// `finish` may). [any-thread; one at a time]
public final class WelchSpectrum: @unchecked Sendable {
    public let channels: Int
    public let sampleRate: Double
    public let fftSize: Int
    /// Frames between segment starts: half a segment.
    public let hop: Int
    private let fft: RealFFT
    private let window: UnsafeMutablePointer<Float>
    private let windowPower: Double
    /// Per channel, the frames of the segment being filled (planar).
    private let segment: UnsafeMutablePointer<Float>
    /// Per channel, Σ |X_k|² over the segments (fftSize/2 + 1 each).
    private let power: UnsafeMutablePointer<Double>
    private var filled = 0
    /// Σ over the segments measured of Σ_n w_n².
    private var windowPowerSum = 0.0
    public private(set) var segments = 0
    public private(set) var frames = 0
    private var finished = false

    /// The FFT size for `sampleRate`: the smallest power of two giving bins
    /// of 1.5 Hz or less (32768 at 44.1 and 48 kHz), so that the 25 Hz band
    /// (5.8 Hz wide) spans several bins.
    public static func defaultFFTSize(sampleRate: Double) -> Int {
        var n = 1024
        while sampleRate / Double(n) > 1.5 && n < 1 << 20 { n *= 2 }
        return n
    }

    /// - Throws: `AnalysisError` when the FFT cannot be set up or `channels` is not 1…64.
    public init(channels: Int, sampleRate: Double, fftSize: Int? = nil) throws(AnalysisError) {
        guard (1...64).contains(channels) else { throw AnalysisError("spectra are measured on 1 to 64 channels, not \(channels)") }
        let n = fftSize ?? Self.defaultFFTSize(sampleRate: sampleRate)
        fft = try RealFFT(size: n)
        self.channels = channels
        self.sampleRate = sampleRate
        self.fftSize = n
        hop = n / 2
        window = .allocate(capacity: n)
        Self.hann(window, length: n, padded: n)
        windowPower = Self.sumOfSquares(window, n)
        segment = .allocate(capacity: n * channels)
        segment.initialize(repeating: 0, count: n * channels)
        power = .allocate(capacity: (n / 2 + 1) * channels)
        power.initialize(repeating: 0, count: (n / 2 + 1) * channels)
    }

    deinit {
        window.deallocate()
        segment.deallocate()
        power.deallocate()
    }

    /// A periodic Hann window of `length` points (the one whose copies a
    /// half apart sum to a constant), then zeros up to `padded`.
    static func hann(_ w: UnsafeMutablePointer<Float>, length: Int, padded: Int) {
        for i in 0..<padded {
            w[i] = i < length ? Float(0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(length))) : 0
        }
    }

    static func sumOfSquares(_ p: UnsafePointer<Float>, _ n: Int) -> Double {
        var s = 0.0
        for i in 0..<n { s += Double(p[i]) * Double(p[i]) }
        return s
    }

    /// Adds `count` interleaved frames. [any-thread; the object's owning thread]
    public func add(interleaved src: UnsafePointer<Float>, frames count: Int) {
        guard !finished else { return }
        var done = 0
        while done < count {
            let n = min(count - done, fftSize - filled)
            for c in 0..<channels {
                Kernels.deinterleave(src + done * channels, stride: channels, channel: c,
                                     to: segment + c * fftSize + filled, count: n)
            }
            filled += n
            done += n
            if filled == fftSize {
                measureSegment(window: window, windowPower: windowPower)
                for c in 0..<channels {
                    let s = segment + c * fftSize
                    (s).update(from: s + hop, count: fftSize - hop)
                }
                filled = fftSize - hop
            }
        }
        frames += count
    }

    /// Windows, transforms and accumulates the segment of every channel.
    private func measureSegment(window: UnsafePointer<Float>, windowPower: Double) {
        let bins = fftSize / 2 + 1
        for c in 0..<channels {
            Self.multiply(segment + c * fftSize, window, into: fft.input, count: fftSize)
            fft.forward()
            Self.accumulatePower(fft.output, into: power + c * bins, bins: bins)
        }
        windowPowerSum += windowPower
        segments += 1
    }

    @inline(__always)
    static func multiply(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        let raw = (UnsafeRawPointer(a), UnsafeRawPointer(b), UnsafeMutableRawPointer(out))
        while i + 8 <= count {
            let x = raw.0.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            let y = raw.1.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            raw.2.storeBytes(of: x * y, toByteOffset: i * 4, as: SIMD8<Float>.self)
            i += 8
        }
        while i < count {
            out[i] = a[i] * b[i]
            i += 1
        }
    }

    /// power[k] += re_k² + im_k², four bins at a time.
    @inline(__always)
    static func accumulatePower(_ spectrum: UnsafePointer<Float>, into power: UnsafeMutablePointer<Double>, bins: Int) {
        let raw = UnsafeRawPointer(spectrum)
        var k = 0
        while k + 4 <= bins {
            let v = raw.loadUnaligned(fromByteOffset: k * 8, as: SIMD8<Float>.self)
            let sq = v * v
            let re = SIMD4(sq[0], sq[2], sq[4], sq[6])
            let im = SIMD4(sq[1], sq[3], sq[5], sq[7])
            let m = SIMD4<Double>(re + im)
            let p = UnsafeMutableRawPointer(power + k)
            p.storeBytes(of: p.loadUnaligned(as: SIMD4<Double>.self) + m, as: SIMD4<Double>.self)
            k += 4
        }
        while k < bins {
            let re = Double(spectrum[2 * k]), im = Double(spectrum[2 * k + 1])
            power[k] += re * re + im * im
            k += 1
        }
    }

    /// Ends the stream: a stream shorter than one segment is measured now
    /// (see the type's comment). Later `add`s are ignored. [any-thread; the object's owning thread]
    public func finish() {
        guard !finished else { return }
        finished = true
        if segments == 0 && filled > 1 {
            let w = UnsafeMutablePointer<Float>.allocate(capacity: fftSize)
            defer { w.deallocate() }
            Self.hann(w, length: filled, padded: fftSize)
            for c in 0..<channels {
                let s = segment + c * fftSize
                (s + filled).update(repeating: 0, count: fftSize - filled)
            }
            measureSegment(window: w, windowPower: Self.sumOfSquares(w, fftSize))
        }
    }

    /// Frequency of bin `k`, Hz.
    public func binFrequency(_ k: Int) -> Double { Double(k) * sampleRate / Double(fftSize) }

    /// Each bin's share of channel `c`'s mean square (after `finish`); all
    /// zeros when nothing was measured. [any-thread; the object's owning thread]
    public func meanSquare(channel c: Int) -> [Double] {
        let bins = fftSize / 2 + 1
        guard windowPowerSum > 0 else { return Array(repeating: 0, count: bins) }
        let scale = 1 / (Double(fftSize) * windowPowerSum)
        return (0..<bins).map { k in
            power[c * bins + k] * scale * (k == 0 || k == fftSize / 2 ? 1 : 2)
        }
    }

    /// The level of each band for each channel, dB of mean square (a sine
    /// of peak 1 in the band reads −3.01 dB, like an RMS level in dBFS;
    /// −inf when the band holds nothing). A bin counts towards a band in
    /// proportion to how much of its width ([f − Δ/2, f + Δ/2]) lies in
    /// the band. [any-thread; the object's owning thread, after `finish`]
    public func bandLevels(_ bands: ThirdOctaveBands) -> [[Double]] {
        let delta = sampleRate / Double(fftSize)
        return (0..<channels).map { c in
            let p = meanSquare(channel: c)
            return bands.bands.map { band in
                let first = max(0, Int((band.lowerHz / delta - 0.5).rounded(.down)))
                let last = min(p.count - 1, Int((band.upperHz / delta + 0.5).rounded(.up)))
                var sum = 0.0
                if first <= last {
                    for k in first...last {
                        let f = Double(k) * delta
                        let overlap = min(band.upperHz, f + delta / 2) - max(band.lowerHz, f - delta / 2)
                        if overlap > 0 { sum += p[k] * overlap / delta }
                    }
                }
                return sum > 0 ? 10 * log10(sum) : -.infinity
            }
        }
    }
}
