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

    /// [main-thread]
    public init(channels: Int) {
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
    }

    /// Forgets the signal so far. [audio-thread]
    public func reset() {
        Kernels.fill(history, count: TruePeak.stateFloats * channels, value: 0)
        var c = 0
        while c < channels { positions[c] = 0; c += 1 }
    }

    /// The true peak (linear) of the next `count` samples of `channel`,
    /// delayed by the filter: the spans ending 5 samples before each
    /// sample. [audio-thread]
    public func blockPeak(channel: Int, _ src: UnsafePointer<Float>, count: Int) -> Float {
        TruePeak.blockPeak(src, count: count, taps: taps, history: history + TruePeak.stateFloats * channel,
                           position: &positions[channel])
    }

    /// Per-sample span peaks of `channel` into `out` (see `TruePeak.spanPeaks`).
    /// [audio-thread]
    public func spanPeaks(channel: Int, _ src: UnsafePointer<Float>, count: Int,
                          into out: UnsafeMutablePointer<Float>, accumulate: Bool, refined: Bool = false) {
        TruePeak.spanPeaks(src, count: count, taps: taps, history: history + TruePeak.stateFloats * channel,
                           position: &positions[channel], into: out, accumulate: accumulate, refined: refined)
    }
}
