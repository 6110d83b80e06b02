import CFraming

/// The first fields of an AC-4 frame's table of contents (`ac4_toc()`,
/// ETSI TS 103 190-1): enough to time, count and seek frames without
/// decoding them. Read from the start of `raw_ac4_frame`, most significant
/// bit first:
///
/// ```
/// bitstream_version   2 bits; if == 3: += variable_bits(2)
/// sequence_counter    10 bits
/// b_wait_frames       1 bit; if set: wait_frames 3 bits; if wait_frames > 0: 2 more bits
/// fs_index            1 bit   0 = 44.1 kHz, 1 = 48 kHz
/// frame_rate_index    4 bits
/// b_iframe_global     1 bit
/// ```
///
/// A pure value. [any-thread]
public struct AC4TOC: Sendable, Hashable {
    /// `bitstream_version`, with the `variable_bits(2)` extension added
    /// when the 2-bit field is 3 (so values ≥ 3 are possible).
    public var bitstreamVersion: Int
    /// `sequence_counter`: 1 … 1020, wrapping from 1020 to 1; 0 marks a splice.
    public var sequenceCounter: Int
    /// `wait_frames` when `b_wait_frames` is set, else nil.
    public var waitFrames: Int?
    /// `fs_index`: 0 = 44.1 kHz, 1 = 48 kHz.
    public var fsIndex: Int
    /// `frame_rate_index`, 0 … 13 (14 and 15 are reserved and rejected by `parse`).
    public var frameRateIndex: Int
    /// `b_iframe_global`: every substream of this frame decodes on its own —
    /// a clean place to start decoding after a seek.
    public var isIFrame: Bool

    /// The sample rate `fs_index` names: 44 100 or 48 000 Hz.
    public var sampleRate: Int { fsIndex == 0 ? 44_100 : 48_000 }

    /// Frames per second (e.g. 23.4375 for index 13 at 48 kHz; 44 100 / 2048
    /// for index 13 at 44.1 kHz).
    public var framesPerSecond: Double {
        let (n, d) = AC4TOC.frameRate(index: frameRateIndex, fsIndex: fsIndex)
        return Double(n) / Double(d)
    }

    /// Audio samples (per channel) one frame stands for at `sampleRate`,
    /// rounded to the nearest integer. See `exactSamplesPerFrame`.
    ///
    /// - Index 13 (the "native" rate DAAPlay plays) is exactly 2048 samples at
    ///   48 kHz and at 44.1 kHz.
    /// - For the video-aligned rates (indices 0…12) this is computed as
    ///   `sampleRate / framesPerSecond` (at 48 kHz: 2002, 2000, 1920, 1601.6,
    ///   1600, 1001, 1000, 960, 800.8, 800, 480, 400.4, 400). It is exact where
    ///   that quotient is an integer; for 29.97, 59.94 and 119.88 fps
    ///   (indices 3, 8, 11) the quotient is fractional and this value is an
    ///   **approximation** (rounded: 1602, 801, 400); a decoder's frames there
    ///   alternate in length, and timestamps that add this value up drift by
    ///   up to 0.4 sample per frame. At 44.1 kHz the specification uses only
    ///   index 13; other indices there are likewise `44100 / fps`, an
    ///   approximation. `samplesPerFrameIsExact` tells which case applies.
    public var samplesPerFrame: Int { Int(exactSamplesPerFrame.rounded()) }

    /// `sampleRate / framesPerSecond` without rounding (1601.6 at 29.97 fps).
    public var exactSamplesPerFrame: Double {
        if frameRateIndex == 13 { return 2048 }
        let (n, d) = AC4TOC.frameRate(index: frameRateIndex, fsIndex: fsIndex)
        return Double(sampleRate) * Double(d) / Double(n)
    }

    /// Whether `samplesPerFrame` is exact (see there).
    public var samplesPerFrameIsExact: Bool {
        if frameRateIndex == 13 { return true }
        let (n, d) = AC4TOC.frameRate(index: frameRateIndex, fsIndex: fsIndex)
        return fsIndex == 1 && (sampleRate * d) % n == 0
    }

    /// Frames per second for `frame_rate_index`, as numerator and denominator
    /// (0: 24000/1001, 1: 24, 2: 25, 3: 30000/1001, 4: 30, 5: 48000/1001,
    /// 6: 48, 7: 50, 8: 60000/1001, 9: 60, 10: 100, 11: 120000/1001, 12: 120,
    /// 13: 375/16 = 23.4375 at 48 kHz, 44100/2048 at 44.1 kHz). Index must be 0…13.
    public static func frameRate(index: Int, fsIndex: Int = 1) -> (numerator: Int, denominator: Int) {
        if index == 13 { return fsIndex == 0 ? (44_100, 2048) : (375, 16) }
        return frameRates[index]
    }

    static let frameRates: [(Int, Int)] = [
        (24_000, 1001), (24, 1), (25, 1), (30_000, 1001), (30, 1), (48_000, 1001), (48, 1),
        (50, 1), (60_000, 1001), (60, 1), (100, 1), (120_000, 1001), (120, 1),
    ]

    /// Why a TOC could not be read.
    public enum ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The frame ends before the fields do.
        case truncated
        /// `frame_rate_index` 14 or 15.
        case reservedFrameRateIndex(Int)

        public var description: String {
            switch self {
            case .truncated: "raw_ac4_frame too short for its TOC"
            case .reservedFrameRateIndex(let i): "reserved frame_rate_index \(i)"
            }
        }
    }

    public init(bitstreamVersion: Int, sequenceCounter: Int, waitFrames: Int? = nil,
                fsIndex: Int, frameRateIndex: Int, isIFrame: Bool) {
        self.bitstreamVersion = bitstreamVersion
        self.sequenceCounter = sequenceCounter
        self.waitFrames = waitFrames
        self.fsIndex = fsIndex
        self.frameRateIndex = frameRateIndex
        self.isIFrame = isIFrame
    }

    /// Reads the TOC fields from the start of `rawFrame` (the bytes of
    /// `raw_ac4_frame`), with CFraming's reader (`agraph_ac4_toc_read`, the
    /// one the DAA plugin and its test double use).
    public static func parse<C: Collection>(_ rawFrame: C) -> Result<AC4TOC, ParseError> where C.Element == UInt8 {
        // The fields end within the first 16 bytes (the variable_bits escape
        // included: longer chains count as truncated).
        let head = Array(rawFrame.prefix(16))
        var t = agraph_ac4_toc_t()
        let rc = head.withUnsafeBufferPointer { agraph_ac4_toc_read($0.baseAddress, $0.count, &t) }
        switch rc {
        case Int32(AGRAPH_AC4_TOC_OK): break
        case Int32(AGRAPH_AC4_TOC_RESERVED_RATE): return .failure(.reservedFrameRateIndex(Int(t.frame_rate_index)))
        default: return .failure(.truncated)
        }
        return .success(AC4TOC(bitstreamVersion: Int(t.bitstream_version), sequenceCounter: Int(t.sequence_counter),
                               waitFrames: t.wait_frames < 0 ? nil : Int(t.wait_frames),
                               fsIndex: Int(t.fs_index), frameRateIndex: Int(t.frame_rate_index),
                               isIFrame: t.is_iframe != 0))
    }
}
