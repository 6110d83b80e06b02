import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

/// The loudness of a whole programme, for offline analysis (`agraph
/// analyze`): integrated loudness after ITU-R BS.1770-4 (K-weighting,
/// 400 ms blocks every 100 ms, −70 LUFS absolute and −10 LU relative gates)
/// and loudness range after EBU Tech 3342 (3 s short-term blocks every
/// 100 ms, −70 LUFS absolute and −20 LU relative gates, the 10th to 95th
/// percentile).
///
/// Why not libebur128 here: it filters one channel at a time, strided,
/// through a scalar direct-form fourth-order section, about 12 ns a sample
/// on this project's reference machine: libebur128 alone takes longer over
/// a file than the whole of `agraph analyze` may (docs/performance.md). This
/// type runs the same K-weighting as two cascaded second-order sections in
/// transposed direct form, two channels per SIMD lane pair, in double
/// precision, and keeps the energy of every 100 ms sub-block; blocks and
/// short-term windows are sums of sub-blocks, and the gates and percentiles
/// are computed exactly from every block (no histogram). The `loudness`
/// node keeps libebur128 (`EBUR128Meter`), which needs no storage that
/// grows; LoudnessTests check that the two agree.
///
/// Threading: one thread at a time; `add` appends to an array (it
/// allocates), so this is not for the audio thread. [worker-thread | main-thread]
public final class ProgrammeLoudness: @unchecked Sendable {
    public let channels: Int
    public let sampleRate: Double
    /// Frames in a 100 ms sub-block (rounded like libebur128: (rate + 5) / 10).
    public let subBlockFrames: Int
    /// The K-weighting filter's coefficients at `sampleRate`.
    public let filter: KWeighting

    /// Channel pairs (lanes 0 and 1 of each group; a missing second channel
    /// reads as silence with weight 0).
    private let groups: Int
    /// Per group: the two sections' states (s1, s2 of the shelf, then of
    /// the high-pass) and the running sum of squares of the sub-block.
    private let state: UnsafeMutablePointer<SIMD2<Double>>
    private let sums: UnsafeMutablePointer<SIMD2<Double>>
    private let weights: UnsafeMutablePointer<SIMD2<Double>>
    private var filled = 0
    /// Weighted energy (Σ_channels G_c · Σ y²) of every complete 100 ms sub-block.
    public private(set) var subBlockEnergies: [Double] = []

    /// - Parameter weights: each channel's BS.1770-4 weight (1.0 front,
    ///   1.41 surround, 0 for LFE); see `ProgrammeLoudness.weights(layout:channels:)`.
    /// [any-thread]
    public init(channels: Int, sampleRate: Double, weights: [Double]) throws(EBUR128Error) {
        guard channels > 0, channels <= 64, weights.count == channels else {
            throw EBUR128Error("loudness is measured on 1 to 64 channels, not \(channels)")
        }
        guard sampleRate >= 16, sampleRate <= 2_822_400, sampleRate == sampleRate.rounded() else {
            throw EBUR128Error("loudness cannot be measured at \(sampleRate) Hz")
        }
        self.channels = channels
        self.sampleRate = sampleRate
        subBlockFrames = (Int(sampleRate) + 5) / 10
        filter = KWeighting(sampleRate: sampleRate)
        groups = (channels + 1) / 2
        state = .allocate(capacity: groups * 4)
        state.initialize(repeating: .zero, count: groups * 4)
        sums = .allocate(capacity: groups)
        sums.initialize(repeating: .zero, count: groups)
        self.weights = .allocate(capacity: groups)
        for g in 0..<groups {
            let c = 2 * g
            self.weights[g] = SIMD2(weights[c], c + 1 < channels ? weights[c + 1] : 0)
        }
        subBlockEnergies.reserveCapacity(36_000)
    }

    deinit {
        state.deallocate()
        sums.deallocate()
        weights.deallocate()
    }

    /// The BS.1770-4 weight of each channel of `layout` (the same positions
    /// as `EBUR128Meter.weights`: surrounds 1.41, LFE 0, the rest 1.0).
    public static func weights(layout: ChannelLayout, channels: Int) -> [Double] {
        switch (layout, channels) {
        case (.surround51, 6): return [1, 1, 1, 0, 1.41, 1.41]
        case (.surround71, 8): return [1, 1, 1, 0, 1.41, 1.41, 1, 1]
        default: return Array(repeating: 1, count: channels)
        }
    }

    /// Adds `frames` interleaved frames. [any-thread; one thread at a time]
    public func add(interleaved samples: UnsafePointer<Float>, frames: Int) {
        var done = 0
        while done < frames {
            let n = min(frames - done, subBlockFrames - filled)
            let src = samples + done * channels
            for g in 0..<groups {
                Self.filterPair(src, stride: channels, first: 2 * g, hasSecond: 2 * g + 1 < channels,
                                frames: n, filter, state + 4 * g, sums + g)
            }
            filled += n
            done += n
            if filled == subBlockFrames { closeSubBlock() }
        }
    }

    private func closeSubBlock() {
        var e = SIMD2<Double>.zero
        for g in 0..<groups {
            e += sums[g] * weights[g]
            sums[g] = .zero
            // Flush what has decayed far below any gate before it can reach
            // the denormal range (slow on x86), as libebur128 does with FTZ.
            for k in 0..<4 {
                let s = state[4 * g + k]
                let tiny = SIMD2(repeating: 1e-20)
                state[4 * g + k] = s.replacing(with: 0, where: (s .< tiny) .& (s .> -tiny))
            }
        }
        subBlockEnergies.append(e.sum())
        filled = 0
    }

    @inline(__always)
    private static func filterPair(_ src: UnsafePointer<Float>, stride: Int, first: Int, hasSecond: Bool,
                                   frames: Int, _ k: KWeighting,
                                   _ state: UnsafeMutablePointer<SIMD2<Double>>,
                                   _ sum: UnsafeMutablePointer<SIMD2<Double>>) {
        var s1 = state[0], s2 = state[1], t1 = state[2], t2 = state[3], acc = sum[0]
        var p = src + first
        for _ in 0..<frames {
            let x = SIMD2(Double(p[0]), hasSecond ? Double(p[1]) : 0)
            p += stride
            let y = k.b0 * x + s1
            s1 = k.b1 * x - k.a1 * y + s2
            s2 = k.b2 * x - k.a2 * y
            let z = y + t1
            t1 = -2 * y - k.c1 * z + t2
            t2 = y - k.c2 * z
            acc += z * z
        }
        state[0] = s1; state[1] = s2; state[2] = t1; state[3] = t2; sum[0] = acc
    }

    // MARK: Readings (after the last `add`; a partial last sub-block is not counted, as in BS.1770's blocks)

    /// Energy at which loudness is −70 LUFS (the absolute gate).
    static let absoluteGate = pow(10.0, (-70.0 + 0.691) / 10)

    /// Mean-square energies of the windows of `length` sub-blocks ending at
    /// every sub-block (hop 100 ms).
    private func windows(_ length: Int) -> [Double] {
        let e = subBlockEnergies
        guard e.count >= length else { return [] }
        let scale = 1 / Double(length * subBlockFrames)
        var out: [Double] = []
        out.reserveCapacity(e.count - length + 1)
        for end in (length - 1)..<e.count {
            var s = 0.0
            for k in (end - length + 1)...end { s += e[k] }
            out.append(s * scale)
        }
        return out
    }

    static func loudness(energy: Double) -> Double { energy > 0 ? 10 * log10(energy) - 0.691 : -.infinity }

    /// Integrated loudness, LUFS (−inf when no block passes the gates).
    public var integrated: Double {
        let above = windows(4).filter { $0 >= Self.absoluteGate }
        guard !above.isEmpty else { return -.infinity }
        let relative = above.reduce(0, +) / Double(above.count) * 0.1
        let gated = above.filter { $0 >= relative }
        guard !gated.isEmpty else { return -.infinity }
        return Self.loudness(energy: gated.reduce(0, +) / Double(gated.count))
    }

    /// Loudness range, LU (0 when fewer than one short-term block passes
    /// the gates).
    public var loudnessRange: Double {
        let above = windows(30).filter { $0 >= Self.absoluteGate }
        guard !above.isEmpty else { return 0 }
        let relative = above.reduce(0, +) / Double(above.count) * 0.01
        let gated = above.filter { $0 >= relative }.sorted()
        guard !gated.isEmpty else { return 0 }
        let n = Double(gated.count - 1)
        let low = gated[Int(n * 0.10 + 0.5)]
        let high = gated[Int(n * 0.95 + 0.5)]
        return Self.loudness(energy: high) - Self.loudness(energy: low)
    }
}

/// The K-weighting filter of ITU-R BS.1770-4 at a given rate: a high-shelf
/// (+4 dB above about 1.7 kHz, the head's acoustic effect) followed by a
/// high-pass (the RLB curve, about 38 Hz). The analogue prototypes' corner
/// frequencies, gain and Q are those that reproduce the standard's 48 kHz
/// coefficients; other rates get them by the bilinear transform with
/// pre-warping (as libebur128 and ffmpeg do). The high-pass numerator is
/// (1, −2, 1), as in the standard.
public struct KWeighting: Sendable {
    /// Shelf: numerator b0, b1, b2; denominator 1, a1, a2.
    public let b0: Double, b1: Double, b2: Double, a1: Double, a2: Double
    /// High-pass denominator 1, c1, c2 (numerator 1, −2, 1).
    public let c1: Double, c2: Double

    public init(sampleRate: Double) {
        let shelfHz = 1681.974450955533
        let shelfDB = 3.999843853973347
        let shelfQ = 0.7071752369554196
        var k = tan(Double.pi * shelfHz / sampleRate)
        let vh = pow(10, shelfDB / 20)
        let vb = pow(vh, 0.4996667741545416)
        var a0 = 1 + k / shelfQ + k * k
        b0 = (vh + vb * k / shelfQ + k * k) / a0
        b1 = 2 * (k * k - vh) / a0
        b2 = (vh - vb * k / shelfQ + k * k) / a0
        a1 = 2 * (k * k - 1) / a0
        a2 = (1 - k / shelfQ + k * k) / a0
        let passHz = 38.13547087602444
        let passQ = 0.5003270373238773
        k = tan(Double.pi * passHz / sampleRate)
        a0 = 1 + k / passQ + k * k
        c1 = 2 * (k * k - 1) / a0
        c2 = (1 - k / passQ + k * k) / a0
    }
}
