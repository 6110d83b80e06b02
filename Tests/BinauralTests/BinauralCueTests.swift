import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Interaural time and level differences measured on the node's output,
/// and how head rotation moves them.
final class BinauralCueTests: XCTestCase {
    /// The interaural cues of a two-ear response.
    struct Cues {
        /// Samples by which the left ear leads the right (positive: the
        /// left ear hears it first): the lag of the cross-correlation's
        /// largest value, within ±1 ms.
        var itd: Int
        /// 10·log10(E_left / E_right), dB.
        var ild: Double
    }

    static func cues(_ left: [Float], _ right: [Float], rate: Double = 44100) -> Cues {
        let maxLag = Int(rate / 1000)
        var best = 0
        var bestValue = -Double.infinity
        for lag in -maxLag...maxLag {
            // Σ left[i] · right[i + lag]: largest where the right ear lags by `lag`.
            var s = 0.0
            for i in 0..<left.count where i + lag >= 0 && i + lag < right.count {
                s += Double(left[i]) * Double(right[i + lag])
            }
            if s > bestValue { bestValue = s; best = lag }
        }
        let el = left.reduce(0.0) { $0 + Double($1) * Double($1) }
        let er = right.reduce(0.0) { $0 + Double($1) * Double($1) }
        return Cues(itd: best, ild: 10 * log10(el / er))
    }

    /// The response of a mono channel placed at `azimuth`, with `params`
    /// added to the node's.
    func response(azimuth: Double, extra: String = "") throws -> Cues {
        let params = #"{"positions": [{"azimuth": \#(azimuth)}]\#(extra)}"#
        let out = try BinauralGraph.render(layout: "mono", params: params, input: impulse(channel: 0, of: 1, at: 0, frames: 1024))
        return Self.cues(out[0], out[1])
    }

    /// The tolerance for "no level difference" in front and behind. The
    /// default set (MIT KEMAR, "normal pinna") is left/right symmetric: its
    /// right-ear responses are the left ear's of the mirrored direction
    /// (±90° give +11.79 and −11.79 dB, ±32 samples), so in the median
    /// plane the two ears' energies are equal and any level difference
    /// would be the renderer's. 0.1 dB is far below the 11.8 dB of a side
    /// source and far above float rounding (10⁻⁶ dB).
    static let medianPlaneILD = 0.1

    func testLeftRightFrontAndBack() throws {
        let left = try response(azimuth: 90)
        let mirrored = try response(azimuth: -90)
        XCTAssertEqual(left.ild, -mirrored.ild, accuracy: 1e-6, "the set is left/right symmetric (see medianPlaneILD)")
        XCTAssertGreaterThan(left.itd, 10, "+90°: the left ear hears it first (by \(left.itd) samples)")
        XCTAssertGreaterThan(left.ild, 6, "+90°: louder at the left ear (\(left.ild) dB)")
        let right = try response(azimuth: -90)
        XCTAssertLessThan(right.itd, -10, "−90°: the right ear first (\(right.itd) samples)")
        XCTAssertLessThan(right.ild, -6, "−90°: louder at the right ear (\(right.ild) dB)")
        for azimuth in [0.0, 180] {
            let c = try response(azimuth: azimuth)
            XCTAssertLessThanOrEqual(abs(c.itd), 2, "\(azimuth)°: no time difference (\(c.itd) samples)")
            XCTAssertLessThanOrEqual(abs(c.ild), Self.medianPlaneILD, "\(azimuth)°: no level difference (\(c.ild) dB)")
        }
    }

    /// Yaw +90° turns the head left: a source in front is then heard at
    /// the right ear (the ITD changes sign from 0 to right-first), exactly
    /// as a source at −90° with the head straight. Yaw −90° does the
    /// opposite; pitch and roll leave a front source's left/right balance.
    func testYawMovesAFrontSourceToTheSide() throws {
        let front = try response(azimuth: 0)
        let turnedLeft = try response(azimuth: 0, extra: #", "yaw": 90"#)
        let atRight = try response(azimuth: -90)
        XCTAssertLessThan(turnedLeft.itd, -10, "yaw +90: right ear first (\(turnedLeft.itd) samples; straight ahead \(front.itd))")
        XCTAssertLessThan(turnedLeft.ild, -6)
        XCTAssertEqual(turnedLeft.itd, atRight.itd)
        XCTAssertEqual(turnedLeft.ild, atRight.ild, accuracy: 1e-9)
        let turnedRight = try response(azimuth: 0, extra: #", "yaw": -90"#)
        XCTAssertGreaterThan(turnedRight.itd, 10, "yaw −90: left ear first")
        // A source at the left with the head turned left by 90° is behind.
        let behind = try response(azimuth: 90, extra: #", "yaw": 90"#)
        XCTAssertLessThanOrEqual(abs(behind.itd), 2)
        // Pitch and roll keep a front source in the median plane.
        for extra in [#", "pitch": 30"#, #", "roll": 40"#] {
            let c = try response(azimuth: 0, extra: extra)
            XCTAssertLessThanOrEqual(abs(c.itd), 2, extra)
        }
        // Roll +90 (right ear down): a source at the left is heard from
        // below, in the median plane: no time difference any more.
        let rolled = try response(azimuth: 90, extra: #", "roll": 90"#)
        XCTAssertLessThanOrEqual(abs(rolled.itd), 2, "roll 90: the left source is below the head")
    }
}
