/// Seconds to frames, checked. Every conversion of a user-given time (a
/// seek, `--duration`, a node's start or buffer time) goes through here, so
/// that `1e308`, `inf` or `nan` is a clear error, never a trap in `Int(_:)`.
/// [main-thread | worker-thread | owner-thread | control-thread; the error allocates]
public enum FrameTime {
    /// The longest time accepted anywhere: one year (31,536,000 s). At
    /// 384 kHz that is about 1.2e13 frames, far inside `Int`.
    public static let maximumSeconds: Double = 31_536_000

    /// A time that does not convert to frames.
    public struct OutOfRange: Error, Sendable, Equatable, CustomStringConvertible {
        /// The value as given.
        public var seconds: Double
        public init(seconds: Double) { self.seconds = seconds }
        public var description: String {
            let shown = seconds.isNaN ? "nan" : seconds.isInfinite ? (seconds < 0 ? "-inf" : "inf") : "\(seconds)"
            return "\(shown) s is out of range: a time is from 0 to \(Int(FrameTime.maximumSeconds)) s (one year)"
        }
    }

    /// `seconds × sampleRate`, rounded to the nearest frame; throws when
    /// `seconds` is not finite, negative, or over `maximumSeconds`.
    public static func frames(seconds: Double, sampleRate: Double) throws(OutOfRange) -> Int {
        guard seconds.isFinite, seconds >= 0, seconds <= maximumSeconds,
              sampleRate.isFinite, sampleRate > 0, sampleRate <= 1e7 else {
            throw OutOfRange(seconds: seconds)
        }
        return Int((seconds * sampleRate).rounded())
    }

    /// Parses a time in seconds as a user writes it ("12.5", "90"): a
    /// finite number from 0 to `maximumSeconds`. nil for anything else
    /// (text, `inf`, `nan`, `1e308`, negatives).
    public static func parseSeconds(_ text: some StringProtocol) -> Double? {
        guard let v = Double(String(text)), v.isFinite, v >= 0, v <= maximumSeconds else { return nil }
        return v
    }
}

/// What a ring between the audio thread and a worker may take: checked at
/// validation, so that no parameter combination (64 channels at 384 kHz
/// with a 60 s buffer is 5.9 GB) allocates without bound. [any-thread]
public enum RingBudget {
    /// The most one node's ring may allocate: 256 MiB.
    public static let maximumBytes = 256 << 20

    /// Bytes an `SPSCRing<Float>` of `frames` frames of `channels` channels
    /// allocates (the capacity rounds up to a power of two); nil when it
    /// overflows.
    public static func bytes(frames: Int, channels: Int) -> Int? {
        let (samples, o1) = max(frames, 1).multipliedReportingOverflow(by: max(channels, 1))
        guard !o1, samples <= Int.max / 8 else { return nil }
        var capacity = 1
        while capacity < samples { capacity <<= 1 }
        return capacity * MemoryLayout<Float>.stride
    }

    /// nil when a ring holding `seconds` of `channels` channels at
    /// `sampleRate` fits the budget; else a message with the numbers and
    /// the largest time that fits, for a validation error on `parameter`.
    public static func check(seconds: Double, sampleRate: Double, channels: Int, parameter: String) -> String? {
        guard let frames = try? FrameTime.frames(seconds: seconds, sampleRate: sampleRate) else {
            return "\(parameter) \(FrameTime.OutOfRange(seconds: seconds))"
        }
        if let b = bytes(frames: frames, channels: channels), b <= maximumBytes { return nil }
        let need = bytes(frames: frames, channels: channels).map { "\(mebibytes($0)) MiB" } ?? "more memory than exists"
        // The largest power-of-two ring within budget, in seconds.
        let fitFrames = maximumBytes / MemoryLayout<Float>.stride / max(channels, 1)
        let fitSeconds = (Double(fitFrames) / sampleRate * 100).rounded(.down) / 100
        return "\(parameter) \(formatFixed(seconds, 2)) s × \(Int(sampleRate)) Hz × \(channels) channels needs a \(need) ring buffer; "
            + "a node's ring may take at most \(mebibytes(maximumBytes)) MiB: use \(parameter) ≤ \(formatFixed(fitSeconds, 2)) s"
    }

    private static func mebibytes(_ bytes: Int) -> Int { (bytes + (1 << 20) - 1) >> 20 }
}
