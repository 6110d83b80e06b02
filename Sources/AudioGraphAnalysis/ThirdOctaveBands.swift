#if canImport(Glibc)
import Glibc
#endif

/// The one-third-octave bands of IEC 61260-1 (base-10 system) from 25 Hz to
/// 20 kHz, as far as a sample rate allows.
///
/// Band `x` has the exact mid-band frequency fm = 1000 · 10^(x/10) Hz
/// (x = −16 … 13: 25.1 Hz … 19.95 kHz) and edges fm · 10^(∓1/20); it is
/// named by its nominal frequency (25, 31.5, 40 … 20000). A band is kept
/// only when its upper edge is at or below half the sample rate (at
/// 44.1 kHz the 20 kHz band, which reaches 22.4 kHz, is left out).
public struct ThirdOctaveBands: Sendable, Equatable {
    public struct Band: Sendable, Equatable {
        /// The nominal frequency that names it (IEC 61260-1, Annex E).
        public var nominalHz: Double
        /// The exact mid-band frequency.
        public var centreHz: Double
        public var lowerHz: Double
        public var upperHz: Double
    }

    public static let nominal: [Double] = [
        25, 31.5, 40, 50, 63, 80, 100, 125, 160, 200, 250, 315, 400, 500, 630, 800, 1000,
        1250, 1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000, 10000, 12500, 16000, 20000,
    ]

    public let bands: [Band]

    /// [any-thread]
    public init(sampleRate: Double) {
        var out: [Band] = []
        for (i, nominal) in Self.nominal.enumerated() {
            let x = Double(i - 16)
            let centre = 1000 * pow(10, x / 10)
            let band = Band(nominalHz: nominal, centreHz: centre,
                            lowerHz: centre * pow(10, -1.0 / 20), upperHz: centre * pow(10, 1.0 / 20))
            if band.upperHz <= sampleRate / 2 { out.append(band) }
        }
        bands = out
    }

    public var count: Int { bands.count }

    /// A nominal frequency for people: "31.5", "1k", "12.5k".
    public static func label(_ hz: Double) -> String {
        func trim(_ v: Double) -> String {
            v == v.rounded() ? String(Int(v)) : String(v)
        }
        return hz >= 1000 ? trim(hz / 1000) + "k" : trim(hz)
    }
}
