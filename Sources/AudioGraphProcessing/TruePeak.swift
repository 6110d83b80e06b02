import AudioGraphCore

/// True-peak estimation after ITU-R BS.1770-4, Annex 2: the signal is
/// oversampled 4× by the Annex's 48-tap polyphase FIR (4 phases × 12 taps)
/// and the largest absolute value is taken.
///
/// Timing: the interpolation filter is linear-phase with its centre 5.875
/// input samples back, so the four interpolated values made when sample
/// `n` arrives lie at `n − 5.875`, `n − 5.625`, `n − 5.375` and `n − 5.125`.
/// The kernel reports, for each incoming sample `n`, the peak of the span
/// `[n − 6, n − 5]`: the largest of those four values and of the two
/// samples `x[n − 6]`, `x[n − 5]` themselves (so the true peak is never
/// below the sample peak, as in libebur128). The lookahead limiter relies
/// on that fixed offset (`TruePeak.detectorDelay`).
///
/// The Annex defines the filter for 48 kHz; it is used unchanged at every
/// rate (at 96 kHz and above, 4× is more than the Annex asks for). Like
/// every 4× estimate it can read low for content near Nyquist (a sine at
/// 20 kHz in 48 kHz by up to about 0.5 dB), which is what the standard
/// accepts; the meter reports exactly the Annex's value.
///
/// `refined` (the limiter's detector) also fits a parabola through every
/// local maximum of the 4× points and its two neighbours and takes its
/// vertex: the peak between the 4× points, which the Annex's value misses,
/// is found to a few hundredths of a dB. The span then reaches 1/8 sample
/// further back (`[n − 6.125, n − 5]`).
public enum TruePeak {
    /// Taps per phase.
    public static let tapsPerPhase = 12
    /// Floats of state per channel: the history twice, then the last two
    /// interpolated points of the previous sample (for `refined`).
    public static let stateFloats = 26
    /// Oversampling factor.
    public static let phases = 4
    /// The kernel's value for sample `n` covers `[n − detectorDelay, n − detectorDelay + 1]`.
    public static let detectorDelay = 6

    /// BS.1770-4 Annex 2, table: phase `p`, tap `j` multiplies `x[n − j]`.
    public static let coefficients: [[Float]] = [
        [0.0017089843750, 0.0109863281250, -0.0196533203125, 0.0332031250000,
         -0.0594482421875, 0.1373291015625, 0.9721679687500, -0.1022949218750,
         0.0476074218750, -0.0266113281250, 0.0148925781250, -0.0083007812500],
        [-0.0291748046875, 0.0292968750000, -0.0517578125000, 0.0891113281250,
         -0.1665039062500, 0.4650878906250, 0.7797851562500, -0.2003173828125,
         0.1015625000000, -0.0582275390625, 0.0330810546875, -0.0189208984375],
        [-0.0189208984375, 0.0330810546875, -0.0582275390625, 0.1015625000000,
         -0.2003173828125, 0.7797851562500, 0.4650878906250, -0.1665039062500,
         0.0891113281250, -0.0517578125000, 0.0292968750000, -0.0291748046875],
        [-0.0083007812500, 0.0148925781250, -0.0266113281250, 0.0476074218750,
         -0.1022949218750, 0.9721679687500, 0.1373291015625, -0.0594482421875,
         0.0332031250000, -0.0196533203125, 0.0109863281250, 0.0017089843750],
    ]

    /// Feeds `count` samples of one channel through the interpolator and
    /// writes, for each, the peak of its span (see the type's comment):
    /// `out[i] = max(out[i], peak)` when `accumulate`, else `out[i] = peak`.
    ///
    /// - `taps`: the 48 coefficients, phase after phase (see `TruePeakMeter`).
    /// - `history`: `stateFloats` floats: the channel's last 12 samples
    ///   stored twice (so a window of 12 is always contiguous), then two
    ///   for `refined`; `position` in `0..<12`.
    /// [audio-thread]
    @_noLocks
    public static func spanPeaks(_ src: UnsafePointer<Float>, count: Int, taps: UnsafePointer<Float>,
                                 history: UnsafeMutablePointer<Float>, position: inout Int,
                                 into out: UnsafeMutablePointer<Float>, accumulate: Bool, refined: Bool = false) {
        ThreadRole.check(.audio)
        var pos = position
        var i = 0
        while i < count {
            pos = pos == 0 ? 11 : pos - 1
            let x = src[i]
            history[pos] = x
            history[pos + 12] = x
            let w = history + pos
            let p = refined ? refinedWindowPeak(w, taps, history + 24) : windowPeak(w, taps)
            if accumulate {
                if p > out[i] { out[i] = p }
            } else {
                out[i] = p
            }
            i += 1
        }
        position = pos
    }

    /// Like `spanPeaks`, returning only the largest span peak of the block.
    /// [audio-thread]
    @_noLocks
    public static func blockPeak(_ src: UnsafePointer<Float>, count: Int, taps: UnsafePointer<Float>,
                                 history: UnsafeMutablePointer<Float>, position: inout Int) -> Float {
        ThreadRole.check(.audio)
        var pos = position
        var m: Float = 0
        var i = 0
        while i < count {
            pos = pos == 0 ? 11 : pos - 1
            let x = src[i]
            history[pos] = x
            history[pos + 12] = x
            let p = windowPeak(history + pos, taps)
            if p > m { m = p }
            i += 1
        }
        position = pos
        return m
    }

    /// `windowPeak`, and the vertices of the parabolas through each local
    /// maximum of the 4× points (`last`: the previous sample's last two
    /// points, updated).
    @inline(__always) @_noLocks
    static func refinedWindowPeak(_ w: UnsafePointer<Float>, _ h: UnsafePointer<Float>, _ last: UnsafeMutablePointer<Float>) -> Float {
        let (y0, y1, y2, y3) = phases(w, h)
        var m = abs(w[6])
        let s5 = abs(w[5])
        if s5 > m { m = s5 }
        let p2 = last[0], p3 = last[1]
        let v0 = vertex(p2, p3, y0), v1 = vertex(p3, y0, y1), v2 = vertex(y0, y1, y2), v3 = vertex(y1, y2, y3)
        if v0 > m { m = v0 }
        if v1 > m { m = v1 }
        if v2 > m { m = v2 }
        if v3 > m { m = v3 }
        let a3 = abs(y3)
        if a3 > m { m = a3 }
        last[0] = y2
        last[1] = y3
        return m
    }

    /// The four 4× points after `x[n − 6]` (the filter's 12 taps per phase
    /// over `w[j] = x[n − j]`), in the order the same sums always ran.
    @inline(__always) @_noLocks
    static func phases(_ w: UnsafePointer<Float>, _ h: UnsafePointer<Float>) -> (Float, Float, Float, Float) {
        var y0: Float = 0, y1: Float = 0, y2: Float = 0, y3: Float = 0
        var j = 0
        while j < 12 {
            let x = w[j]
            y0 += h[j] * x
            y1 += h[12 + j] * x
            y2 += h[24 + j] * x
            y3 += h[36 + j] * x
            j += 1
        }
        return (y0, y1, y2, y3)
    }

    /// The peak of the parabola through three equally spaced points whose
    /// middle one `b` is the largest in magnitude (else `|b|`, or less).
    @inline(__always) @_noLocks
    static func vertex(_ a: Float, _ b: Float, _ c: Float) -> Float {
        let s: Float = b < 0 ? -1 : 1
        let A = s * a, B = s * b, C = s * c
        if B < A || B < C { return B }
        let d = A - 2 * B + C
        if d >= 0 { return B }
        return B - (A - C) * (A - C) / (8 * d)
    }

    /// `w[j] = x[n − j]`: the peak of the four phases and of `x[n − 6]`, `x[n − 5]`.
    @inline(__always) @_noLocks
    static func windowPeak(_ w: UnsafePointer<Float>, _ h: UnsafePointer<Float>) -> Float {
        let (y0, y1, y2, y3) = phases(w, h)
        var m = abs(w[6])
        let s5 = abs(w[5])
        if s5 > m { m = s5 }
        let a0 = abs(y0), a1 = abs(y1), a2 = abs(y2), a3 = abs(y3)
        if a0 > m { m = a0 }
        if a1 > m { m = a1 }
        if a2 > m { m = a2 }
        if a3 > m { m = a3 }
        return m
    }
}

// MARK: - vectorised kernel

extension TruePeak {
    /// The 48 coefficients each splatted into a `SIMD4` (phase after phase,
    /// tap after tap), for `interpolatedPeak`. [main-thread; allocates]
    public static func makeSplatTaps() -> UnsafeMutablePointer<SIMD4<Float>> {
        ThreadRole.check(.main)
        let p = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: 48)
        var k = 0
        for phase in coefficients {
            for c in phase { (p + k).initialize(to: SIMD4(repeating: c)); k += 1 }
        }
        return p
    }

    /// The largest |y_p[n]| over the four phases and `n` in `0..<count`,
    /// where `y_p[n] = Σ_j h[p][j] · x[n − j]`: the Annex's interpolated
    /// values without the samples themselves. Reads `x[−11 ..< count]`
    /// (the 11 samples before `x` must be the history).
    ///
    /// Vectorised across samples: four consecutive `n` at a time in a
    /// `SIMD4<Float>` (SSE2 on baseline x86-64), the taps splatted in memory
    /// (`splat`: from `makeSplatTaps`). The sums are formed in the same
    /// order as the scalar kernel's (tap 0 to 11), so the values are the
    /// same to the last bit. [any-thread; realtime-safe]
    @_noLocks
    public static func interpolatedPeak(_ x: UnsafePointer<Float>, count: Int, splat: UnsafePointer<SIMD4<Float>>,
                                        vectorised: Bool = true) -> Float {
        var unusedPeak: Float = 0
        var unusedSquares = 0.0
        return scan(x, count: count, splat: splat, statistics: false, vectorised: vectorised,
                    samplePeak: &unusedPeak, sumSquares: &unusedSquares)
    }

    /// `interpolatedPeak`, and in the same pass over `x[0 ..< count]` the
    /// largest |sample| (`samplePeak`, max-accumulated) and the sum of
    /// squares (`sumSquares`, added to; Float partial sums of at most 256
    /// terms per lane, added up in Double). [any-thread; realtime-safe]
    @_noLocks
    public static func scanWithStatistics(_ x: UnsafePointer<Float>, count: Int, splat: UnsafePointer<SIMD4<Float>>,
                                          vectorised: Bool = true, samplePeak: inout Float, sumSquares: inout Double) -> Float {
        scan(x, count: count, splat: splat, statistics: true, vectorised: vectorised,
             samplePeak: &samplePeak, sumSquares: &sumSquares)
    }

    /// Whether `TruePeakMeter` and `TruePeakScanner` use the vectorised
    /// kernel unless told otherwise: in optimised builds. Unoptimised
    /// (debug) builds run SIMD code lane by lane through the stack, about
    /// 6x slower than the scalar loop; both give the same values to the
    /// last bit (TruePeakTests). [any-thread]
    public static var vectorisedByDefault: Bool {
        #if DEBUG
        false
        #else
        true
        #endif
    }

    // Lane-wise max and min written as a select: one maxps/minps once
    // inlined (`pointwiseMax` is called out of line, through the standard
    // library's prespecialised copy).
    @inline(__always) @_noLocks
    static func vmax(_ a: SIMD4<Float>, _ b: SIMD4<Float>) -> SIMD4<Float> { a.replacing(with: b, where: b .> a) }

    @inline(__always) @_noLocks
    static func vmin(_ a: SIMD4<Float>, _ b: SIMD4<Float>) -> SIMD4<Float> { a.replacing(with: b, where: b .< a) }

    @inline(__always) @_noLocks
    static func load4(_ p: UnsafePointer<Float>) -> SIMD4<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
    }

    /// The kernel; `vectorised: false` runs the scalar loop (the tail's)
    /// over everything, with the same values.
    @inline(__always) @_noLocks
    static func scan(_ x: UnsafePointer<Float>, count: Int, splat h: UnsafePointer<SIMD4<Float>>, statistics: Bool,
                     vectorised: Bool, samplePeak: inout Float, sumSquares: inout Double) -> Float {
        var hi = SIMD4<Float>(repeating: 0), lo = SIMD4<Float>(repeating: 0)
        var shi = SIMD4<Float>(repeating: 0), slo = SIMD4<Float>(repeating: 0)
        var squares = SIMD4<Float>(repeating: 0)
        var total = 0.0
        var inPartial = 0
        var i = 0
        let vectorEnd = vectorised ? count : 0
        while i + 4 <= vectorEnd {
            let p = x + i
            var y0 = SIMD4<Float>(repeating: 0), y1 = y0, y2 = y0, y3 = y0
            var j = 0
            while j < 12 {
                let v = load4(p - j)
                y0 = y0 + h[j] * v
                y1 = y1 + h[12 + j] * v
                y2 = y2 + h[24 + j] * v
                y3 = y3 + h[36 + j] * v
                j += 1
            }
            hi = vmax(vmax(hi, y0), vmax(vmax(y1, y2), y3))
            lo = vmin(vmin(lo, y0), vmin(vmin(y1, y2), y3))
            if statistics {
                let v = load4(p)
                shi = vmax(shi, v)
                slo = vmin(slo, v)
                squares += v * v
                inPartial += 1
                if inPartial == 256 {
                    total += Double(squares.sum())
                    squares = SIMD4(repeating: 0)
                    inPartial = 0
                }
            }
            i += 4
        }
        var m = max(hi.max(), -lo.min())
        var sm = max(shi.max(), -slo.min())
        var tail = Double(squares.sum())
        while i < count {
            let p = x + i
            var y0: Float = 0, y1: Float = 0, y2: Float = 0, y3: Float = 0
            var j = 0
            while j < 12 {
                let v = p[-j]
                y0 += h[j][0] * v
                y1 += h[12 + j][0] * v
                y2 += h[24 + j][0] * v
                y3 += h[36 + j][0] * v
                j += 1
            }
            m = max(m, max(max(abs(y0), abs(y1)), max(abs(y2), abs(y3))))
            if statistics {
                let v = p[0]
                sm = max(sm, abs(v))
                tail += Double(v) * Double(v)
            }
            i += 1
        }
        if statistics {
            if sm > samplePeak { samplePeak = sm }
            sumSquares += total + tail
        }
        return m
    }
}

/// Whole-file measurement of each channel for `agraph analyze`: true peak
/// (BS.1770-4 Annex 2, the same 4× kernel as `TruePeakMeter`, vectorised),
/// sample peak and sum of squares, in one pass over each block.
///
/// The values match what `TruePeakMeter.blockPeak` reports over the same
/// samples (the span peaks include the samples themselves, so the true peak
/// is never below the sample peak). Like libebur128 the signal starts from
/// silence and the filter is not flushed at the end.
///
/// Threading: `init` [main-thread; allocates]; `add` and the readings on
/// one thread at a time (realtime-safe: no allocation, lock or I/O).
public final class TruePeakScanner: @unchecked Sendable {
    public let channels: Int
    /// Frames deinterleaved per pass.
    public let chunkFrames: Int
    let splat: UnsafeMutablePointer<SIMD4<Float>>
    /// Per channel: 11 history samples, then `chunkFrames` samples.
    let work: UnsafeMutablePointer<Float>
    let channelStride: Int
    let peaks: UnsafeMutablePointer<Float>
    let samplePeaks: UnsafeMutablePointer<Float>
    let squares: UnsafeMutablePointer<Double>
    /// Frames measured so far.
    public private(set) var frames = 0
    /// Whether the vectorised kernel runs (else the scalar loop: the same
    /// peaks; sums of squares equal to about 1e-6, summed in another order).
    public let vectorised: Bool

    /// The channels this scanner measures (all by default; `agraph analyze`
    /// splits them between two threads, one scanner each). Readings of
    /// other channels are 0.
    public let measured: Range<Int>

    /// [main-thread]
    public init(channels: Int, measuring: Range<Int>? = nil, chunkFrames: Int = 8192,
                vectorised: Bool = TruePeak.vectorisedByDefault) {
        ThreadRole.check(.main)
        self.vectorised = vectorised
        self.channels = max(channels, 1)
        measured = (measuring ?? 0..<self.channels).clamped(to: 0..<self.channels)
        self.chunkFrames = max(chunkFrames, 16)
        splat = TruePeak.makeSplatTaps()
        channelStride = self.chunkFrames + 12
        work = .allocate(capacity: channelStride * self.channels)
        work.initialize(repeating: 0, count: channelStride * self.channels)
        peaks = .allocate(capacity: self.channels)
        peaks.initialize(repeating: 0, count: self.channels)
        samplePeaks = .allocate(capacity: self.channels)
        samplePeaks.initialize(repeating: 0, count: self.channels)
        squares = .allocate(capacity: self.channels)
        squares.initialize(repeating: 0, count: self.channels)
    }

    deinit {
        splat.deallocate()
        work.deallocate()
        peaks.deallocate()
        samplePeaks.deallocate()
        squares.deallocate()
    }

    /// Measures `frames` interleaved frames of `channels` channels.
    /// [any-thread; the object's owning thread; realtime-safe]
    @_noLocks
    public func add(interleaved src: UnsafePointer<Float>, frames count: Int) {
        var done = 0
        while done < count {
            let n = min(chunkFrames, count - done)
            let block = src + done * channels
            var c = measured.lowerBound
            while c < measured.upperBound {
                // work[1 ..< 12]: the 11 samples before this chunk; the chunk from 12.
                let base = work + c * channelStride
                let dst = base + 12
                var i = 0
                var s = block + c
                while i < n { dst[i] = s.pointee; s += channels; i += 1 }
                let p = TruePeak.scanWithStatistics(dst, count: n, splat: splat, vectorised: vectorised,
                                                    samplePeak: &samplePeaks[c], sumSquares: &squares[c])
                if p > peaks[c] { peaks[c] = p }
                // The last 11 samples become the history (ascending copy:
                // safe when the ranges overlap, n < 11).
                var k = 0
                while k < 11 { base[1 + k] = base[1 + n + k]; k += 1 }
                c += 1
            }
            done += n
        }
        frames += count
    }

    /// Channel `c`'s true peak so far (linear): the largest interpolated
    /// value or sample. [any-thread; the object's owning thread; realtime-safe]
    public func truePeak(channel c: Int) -> Double {
        guard measured.contains(c) else { return 0 }
        return Double(max(peaks[c], samplePeaks[c]))
    }

    /// Channel `c`'s largest |sample| so far (linear). [any-thread; the object's owning thread;
    /// realtime-safe]
    public func samplePeak(channel c: Int) -> Double {
        guard measured.contains(c) else { return 0 }
        return Double(samplePeaks[c])
    }

    /// Channel `c`'s mean square so far (0 before any frame). [any-thread; the object's owning
    /// thread; realtime-safe]
    public func meanSquare(channel c: Int) -> Double {
        guard measured.contains(c), frames > 0 else { return 0 }
        return squares[c] / Double(frames)
    }
}

/// Per-channel state of the BS.1770-4 true-peak interpolator: the filter
/// history of each channel and the coefficients, in memory allocated once.
///
/// Threading: `init` [main-thread]; everything else [audio-thread] (or any
/// one thread that owns the meter).
public final class TruePeakMeter: @unchecked Sendable {
    public let channels: Int
    /// 48 coefficients, phase after phase.
    let taps: UnsafeMutablePointer<Float>
    /// `TruePeak.stateFloats` per channel.
    let history: UnsafeMutablePointer<Float>
    /// Ring position per channel.
    let positions: UnsafeMutablePointer<Int>
    /// The taps splatted for the vectorised kernel.
    let splat: UnsafeMutablePointer<SIMD4<Float>>
    /// Whether `blockPeak` uses the vectorised kernel.
    public let vectorised: Bool

    /// - Parameter vectorised: `blockPeak` through the vectorised kernel
    ///   (the same values as the scalar one).
    /// [main-thread]
    public init(channels: Int, vectorised: Bool = TruePeak.vectorisedByDefault) {
        ThreadRole.check(.main)
        self.vectorised = vectorised
        splat = TruePeak.makeSplatTaps()
        self.channels = max(channels, 1)
        taps = .allocate(capacity: 48)
        var k = 0
        for phase in TruePeak.coefficients {
            for c in phase { (taps + k).initialize(to: c); k += 1 }
        }
        history = .allocate(capacity: TruePeak.stateFloats * self.channels)
        history.initialize(repeating: 0, count: TruePeak.stateFloats * self.channels)
        positions = .allocate(capacity: self.channels)
        positions.initialize(repeating: 0, count: self.channels)
    }

    deinit {
        taps.deallocate()
        history.deallocate()
        positions.deallocate()
        splat.deallocate()
    }

    /// Forgets the signal so far. [audio-thread]
    public func reset() {
        ThreadRole.check(.audio)
        Kernels.fill(history, count: TruePeak.stateFloats * channels, value: 0)
        var c = 0
        while c < channels { positions[c] = 0; c += 1 }
    }

    /// The true peak (linear) of the next `count` samples of `channel`,
    /// delayed by the filter: the spans ending 5 samples before each
    /// sample. The same value as `TruePeak.blockPeak`: the first 11
    /// samples go through the scalar kernel (their windows reach into the
    /// history), the rest through the vectorised one (`TruePeak.interpolatedPeak`,
    /// reading `src` directly), then the history is set to the last 12
    /// samples. [audio-thread]
    @_noLocks
    public func blockPeak(channel: Int, _ src: UnsafePointer<Float>, count: Int) -> Float {
        ThreadRole.check(.audio)
        let h = history + TruePeak.stateFloats * channel
        let head = vectorised ? min(count, 11) : count
        var m = TruePeak.blockPeak(src, count: head, taps: taps, history: h, position: &positions[channel])
        guard count > 11 else { return m }
        let p = TruePeak.interpolatedPeak(src + 11, count: count - 11, splat: splat)
        if p > m { m = p }
        // The spans of samples 11..<count also hold x[n − 6] and x[n − 5]: src[5 ..< count − 5].
        let s = Kernels.peak(src + 5, count: count - 10)
        if s > m { m = s }
        var j = 0
        while j < 12 {
            let x = src[count - 1 - j]
            h[j] = x
            h[j + 12] = x
            j += 1
        }
        positions[channel] = 0
        return m
    }

    /// Per-sample span peaks of `channel` into `out` (see `TruePeak.spanPeaks`).
    /// [audio-thread]
    public func spanPeaks(channel: Int, _ src: UnsafePointer<Float>, count: Int,
                          into out: UnsafeMutablePointer<Float>, accumulate: Bool, refined: Bool = false) {
        ThreadRole.check(.audio)
        TruePeak.spanPeaks(src, count: count, taps: taps, history: history + TruePeak.stateFloats * channel,
                           position: &positions[channel], into: out, accumulate: accumulate, refined: refined)
    }
}
