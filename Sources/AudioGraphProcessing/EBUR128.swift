import AudioGraphCore
import CEBUR128

/// Why a loudness measurement could not be set up.
public struct EBUR128Error: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One EBU R128 / ITU-R BS.1770-4 measurement, on libebur128.
///
/// The state is made in **histogram mode** (`EBUR128_MODE_HISTOGRAM`):
/// integrated loudness and loudness range come from two fixed 1000-bin
/// histograms (0.1 LU bins) allocated here, so `add` never allocates.
/// Without that mode libebur128 appends a heap-allocated entry to a list for
/// every 100 ms gating block (and for every short-term block), and
/// `ebur128_loudness_range` mallocs a copy: neither may run on the audio
/// thread. The histogram rounds each block's loudness to its bin's centre,
/// so integrated loudness and LRA are exact to ±0.05 LU.
///
/// Threading: one thread at a time. `init` and `deinit` allocate and free
/// ([main-thread]); `add` and every reading are realtime-safe (no
/// allocation, lock, I/O) and may run on the audio thread.
public final class EBUR128Meter: @unchecked Sendable {
    public let channels: Int
    public let sampleRate: Double
    /// Whether true peak (4× oversampled, BS.1770-4 Annex 2) is measured.
    public let measuresTruePeak: Bool
    /// Whether sample peak is measured (always when true peak is).
    public let measuresSamplePeak: Bool
    private var state: UnsafeMutablePointer<ebur128_state>?

    /// - Parameters:
    ///   - layout: gives each channel its BS.1770-4 weight (see `weights`).
    ///   - truePeak: measure true peak too (costs the oversampling;
    ///     libebur128's own scalar interpolator).
    ///   - samplePeak: measure sample peak too (a pass over every sample).
    ///     `agraph analyze` turns both off and measures peaks with
    ///     `TruePeakScanner` on another thread; libebur128 then only
    ///     filters and gates.
    /// [main-thread]
    public init(channels: Int, sampleRate: Double, layout: ChannelLayout, truePeak: Bool = true,
                samplePeak: Bool = true) throws(EBUR128Error) {
        ThreadRole.check(.main)
        guard channels > 0, channels <= 64 else { throw EBUR128Error("loudness is measured on 1 to 64 channels, not \(channels)") }
        guard sampleRate >= 16, sampleRate <= 2_822_400, sampleRate == sampleRate.rounded() else {
            throw EBUR128Error("libebur128 cannot measure at \(sampleRate) Hz")
        }
        var mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue | EBUR128_MODE_S.rawValue
            | EBUR128_MODE_HISTOGRAM.rawValue)
        if samplePeak || truePeak { mode |= Int32(EBUR128_MODE_SAMPLE_PEAK.rawValue) }
        if truePeak { mode |= Int32(EBUR128_MODE_TRUE_PEAK.rawValue) }
        guard let s = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else {
            throw EBUR128Error("libebur128 could not be initialised for \(channels) channels at \(Int(sampleRate)) Hz")
        }
        state = s
        self.channels = channels
        self.sampleRate = sampleRate
        measuresTruePeak = truePeak
        measuresSamplePeak = samplePeak || truePeak
        for (c, w) in Self.weights(layout: layout, channels: channels).enumerated() {
            _ = ebur128_set_channel(s, UInt32(c), Int32(w.rawValue))
        }
    }

    deinit { ebur128_destroy(&state) }

    /// The BS.1770-4 position of each channel: L, R, C at weight 1.0; the
    /// 5.1 surrounds (±110°) and the 7.1 side surrounds (±90°) at 1.41; the
    /// 7.1 back surrounds (±135°) at 1.0; LFE not counted. Mono and
    /// `discrete` channels count 1.0 each.
    static func weights(layout: ChannelLayout, channels: Int) -> [channel] {
        switch (layout, channels) {
        case (.stereo, 2), (.binaural, 2): return [EBUR128_LEFT, EBUR128_RIGHT]
        case (.surround51, 6):
            return [EBUR128_LEFT, EBUR128_RIGHT, EBUR128_CENTER, EBUR128_UNUSED, EBUR128_LEFT_SURROUND, EBUR128_RIGHT_SURROUND]
        case (.surround71, 8):
            return [EBUR128_LEFT, EBUR128_RIGHT, EBUR128_CENTER, EBUR128_UNUSED,
                    EBUR128_Mp090, EBUR128_Mm090, EBUR128_Mp135, EBUR128_Mm135]
        default: return Array(repeating: EBUR128_CENTER, count: channels)
        }
    }

    /// Adds `frames` interleaved frames. [any-thread; the object's owning thread; realtime-safe]
    @inline(__always)
    public func add(interleaved samples: UnsafePointer<Float>, frames: Int) {
        guard frames > 0, let state else { return }
        _ = ebur128_add_frames_float(state, samples, frames)
    }

    /// Momentary loudness (last 400 ms), LUFS; -inf for silence. [any-thread; the object's owning
    /// thread; realtime-safe]
    public var momentary: Double { read(ebur128_loudness_momentary) }
    /// Short-term loudness (last 3 s), LUFS. [any-thread; the object's owning thread;
    /// realtime-safe]
    public var shortTerm: Double { read(ebur128_loudness_shortterm) }
    /// Integrated (gated) loudness since the start, LUFS; -inf until a
    /// block passes the gates. [any-thread; the object's owning thread; realtime-safe]
    public var integrated: Double { read(ebur128_loudness_global) }
    /// Loudness range (EBU Tech 3342), LU. [any-thread; the object's owning thread; realtime-safe]
    public var loudnessRange: Double { read(ebur128_loudness_range) }
    /// The relative gate (integrated − 10 LU), LUFS. [any-thread; the object's owning thread;
    /// realtime-safe]
    public var relativeThreshold: Double { read(ebur128_relative_threshold) }

    /// Largest absolute sample of channel `c` so far (linear; 0 when sample
    /// peak is not measured). [any-thread; the object's owning thread; realtime-safe]
    public func samplePeak(channel c: Int) -> Double {
        guard measuresSamplePeak, let state, c >= 0, c < channels else { return 0 }
        var out = 0.0
        return ebur128_sample_peak(state, UInt32(c), &out) == 0 ? out : 0
    }

    /// Largest true peak of channel `c` so far (linear; 0 when true peak is
    /// not measured). [any-thread; the object's owning thread; realtime-safe]
    public func truePeak(channel c: Int) -> Double {
        guard measuresTruePeak, let state, c >= 0, c < channels else { return 0 }
        var out = 0.0
        return ebur128_true_peak(state, UInt32(c), &out) == 0 ? out : 0
    }

    /// The largest true peak of any channel, dBTP (-inf for silence).
    /// [any-thread; the object's owning thread; realtime-safe]
    public var truePeakDBTP: Double {
        var m = 0.0
        for c in 0..<channels { m = max(m, truePeak(channel: c)) }
        return Self.decibels(m)
    }

    /// The largest sample peak of any channel, dBFS. [any-thread; the object's owning thread;
    /// realtime-safe]
    public var samplePeakDBFS: Double {
        var m = 0.0
        for c in 0..<channels { m = max(m, samplePeak(channel: c)) }
        return Self.decibels(m)
    }

    /// 20·log10(linear); -inf for 0. [any-thread]
    @inline(__always)
    public static func decibels(_ linear: Double) -> Double {
        linear > 0 ? 20 * log10(linear) : -.infinity
    }

    @inline(__always)
    private func read(_ f: (UnsafeMutablePointer<ebur128_state>?, UnsafeMutablePointer<Double>?) -> Int32) -> Double {
        guard let state else { return -.infinity }
        var out = -Double.infinity
        return f(state, &out) == 0 ? out : -.infinity
    }
}

#if canImport(Glibc)
import Glibc
#endif
