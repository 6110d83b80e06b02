/// The bounds a SOFA set must keep before the `binaural` node does any work
/// on it: every cost of a set (resampling, normalising, the convolution in
/// the process callback) grows with what the file declares, so a file that
/// declares too much is refused with the limit it passed and its own value
/// (docs/binaural.md, "Limits"). libmysofa has read the file by then,
/// first in a bounded process of its own (`SOFACheck`: 5 s, 1 GiB), then
/// in this one.
public enum HRTFLimits {
    /// `Data.SamplingRate`, in Hz: the lowest and highest taken.
    public static let fileRates: ClosedRange<Double> = 8000...384_000
    /// Samples per impulse response (`N`), at the file's rate and at the
    /// graph's (after resampling): 341 ms at 48 kHz, far past any
    /// free-field HRIR (MIT KEMAR: 512 at 44.1 kHz).
    public static let maximumTaps = 16384
    /// Measurements (`M`).
    public static let maximumMeasurements = 65536
    /// Samples of the whole set (2 ears × `M` × `N`), at the file's rate and
    /// at the graph's (the whole set resampled): 2^25, 128 MiB of floats.
    public static let maximumValues = 1 << 25
    /// The largest `Data.Delay` taken, in samples at the graph's rate
    /// (larger ones are taken as this).
    public static let maximumDelay = 1 << 16

    /// Why a set declaring `fileRate` Hz, `taps` samples per response and
    /// `measurements` measurements cannot be used at `graphRate` Hz (the
    /// limit passed, the file's value), or nil when it can. [any-thread]
    public static func problem(fileRate: Double, taps: Int, measurements: Int, graphRate: Double) -> String? {
        guard fileRate.isFinite, fileRates.contains(fileRate) else {
            return "its Data.SamplingRate is \(hertz(fileRate)); sets measured at \(hertz(fileRates.lowerBound)) "
                + "to \(hertz(fileRates.upperBound)) are taken"
        }
        guard taps <= maximumTaps else {
            return "its impulse responses have \(taps) samples (N) at \(hertz(fileRate)); at most \(maximumTaps) are taken"
        }
        guard measurements <= maximumMeasurements else {
            return "it has \(measurements) measurements (M); at most \(maximumMeasurements) are taken"
        }
        guard 2 * measurements * taps <= maximumValues else {
            return "it holds \(2 * measurements * taps) samples (2 × M \(measurements) × N \(taps)); "
                + "at most \(maximumValues) are taken"
        }
        // At the graph's rate: what resampling makes of N (libmysofa's
        // length, rounded up here), bounded before anything is resampled.
        let atGraph = (Double(taps) * graphRate / fileRate).rounded(.up)
        guard atGraph.isFinite, atGraph <= Double(maximumTaps) else {
            return "its \(taps)-sample responses at \(hertz(fileRate)) become \(atGraph.isFinite ? String(Int(atGraph)) : "unbounded") "
                + "samples at the graph's \(hertz(graphRate)); at most \(maximumTaps) are taken"
        }
        guard 2 * Double(measurements) * atGraph <= Double(maximumValues) else {
            return "resampled to the graph's \(hertz(graphRate)) it would hold \(Int(2 * Double(measurements) * atGraph)) samples "
                + "(2 × M \(measurements) × \(Int(atGraph))); at most \(maximumValues) are taken"
        }
        return nil
    }

    /// A rate as the messages give it: whole hertz when it is one, else as
    /// the file has it ("nan Hz", "-1.5 Hz", "1e+09 Hz"). [any-thread]
    static func hertz(_ rate: Double) -> String {
        if rate.isFinite, rate == rate.rounded(), abs(rate) < 1e7 { return "\(Int(rate)) Hz" }
        return "\(rate) Hz"
    }
}
