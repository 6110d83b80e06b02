@testable import AudioGraphMedia
import XCTest

/// The `media` source's timestamp conversions (`MediaCursor`) on any
/// values a file can carry: no trap converting to an integer.
final class MediaTimingTests: XCTestCase {
    /// A time base numerator of 0 made `ticks` trap (Double to Int64 of
    /// ±∞ or NaN), a coded sample rate of 0 `graphSamples`; timestamps
    /// near Int64's ends overflowed. Now each gives a bounded number.
    func testZeroTimeBasesRatesAndExtremeTimestampsDoNotTrap() {
        let bound = Int64(1) << 62
        for (num, den) in [(Int32(0), Int32(1)), (1, 0), (0, 0), (-1, 1), (1, 48000), (Int32.max, 1)] {
            for samples in [0, 1, -1, Int.max, Int.min] {
                let t = MediaCursor.ticks(samples: samples, start: 0, num: num, den: den, graphRate: 48000)
                XCTAssertTrue(abs(t) <= bound, "\(num)/\(den), \(samples): \(t)")
            }
            for (ticks, start) in [(Int64.max, Int64.min), (Int64.min, Int64.max), (0, 0), (5, 0)] {
                let s = MediaCursor.samples(ticks: ticks, start: start, num: num, den: den, graphRate: 48000)
                XCTAssertTrue(abs(Int64(s)) <= bound)
            }
        }
        for rate in [0, -1, 1, Int.max] {
            for n in [0, 1024, Int.max] {
                let s = MediaCursor.graphSamples(coded: n, codedRate: rate, graphRate: 48000)
                XCTAssertTrue(abs(Int64(s)) <= bound)
            }
        }
        // Ordinary values convert as before.
        XCTAssertEqual(MediaCursor.samples(ticks: 44100, start: 0, num: 1, den: 44100, graphRate: 48000), 48000)
        XCTAssertEqual(MediaCursor.ticks(samples: 48000, start: 10, num: 1, den: 44100, graphRate: 48000), 44110)
        XCTAssertEqual(MediaCursor.graphSamples(coded: 1024, codedRate: 44100, graphRate: 48000), 1115)
    }
}
