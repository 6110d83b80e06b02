// A capability of the node API: a node that publishes meter readings
// (peak, RMS, true peak per window). Front ends (the console's status line,
// OSC, the live event stream) read it through `MeterReporting` and name no
// node module.

/// A node that measures levels per window and publishes them for control
/// threads to read. [control-thread]
public protocol MeterReporting: AnyObject {
    /// The node's id.
    var nodeID: String { get }
    /// Windows completed so far: a reader polls it and reads `reading()`
    /// when it moved.
    var windowCount: Int { get }
    /// The last complete window's levels and the maxima since the start.
    func reading() -> MeterReading
}

/// The levels of one channel over one metering window.
public struct MeterLevels: Sendable, Equatable {
    /// Largest absolute sample, dBFS.
    public var peakDBFS: Double
    /// Root mean square, dBFS (`20·log10(rms)`: a full-scale sine reads −3.01).
    public var rmsDBFS: Double
    /// True peak (ITU-R BS.1770-4, 4× oversampled), dBTP.
    public var truePeakDBTP: Double

    public init(peakDBFS: Double, rmsDBFS: Double, truePeakDBTP: Double) {
        self.peakDBFS = peakDBFS
        self.rmsDBFS = rmsDBFS
        self.truePeakDBTP = truePeakDBTP
    }
}

/// What a `meter` node measured: the last complete window, per channel,
/// and the highest peaks since the start.
public struct MeterReading: Sendable, Equatable {
    /// The meter node's id.
    public var node: String
    /// Windows completed so far (0: none yet; the levels are then -inf).
    public var window: Int
    public var channels: [MeterLevels]
    /// Highest sample peak and true peak of any channel since the start.
    public var maxPeakDBFS: Double
    public var maxTruePeakDBTP: Double

    public init(node: String, window: Int, channels: [MeterLevels], maxPeakDBFS: Double, maxTruePeakDBTP: Double) {
        self.node = node
        self.window = window
        self.channels = channels
        self.maxPeakDBFS = maxPeakDBFS
        self.maxTruePeakDBTP = maxTruePeakDBTP
    }

    /// `m pk -3.0/-3.1 rms -12.0/-12.2 tp -2.9/-3.0`: the status line's words.
    public var text: String {
        func levels(_ f: (MeterLevels) -> Double) -> String {
            channels.map { v in
                let x = f(v)
                return x.isFinite ? formatDecibels(x) : "-inf"
            }.joined(separator: "/")
        }
        return "\(node) pk \(levels(\.peakDBFS)) rms \(levels(\.rmsDBFS)) tp \(levels(\.truePeakDBTP))"
    }
}

/// One decimal, "-0.0" shown as "0.0". [any-thread]
func formatDecibels(_ x: Double) -> String {
    let r = (x * 10).rounded() / 10
    let v = r == 0 ? 0 : r
    let whole = Int(v.magnitude)
    let tenth = Int((v.magnitude * 10).rounded()) % 10
    return (v < 0 ? "-" : "") + "\(whole).\(tenth)"
}

