import AudioGraph
@testable import AudioGraphBinaural
import CMySOFA
import Foundation
import TestSupport
import XCTest

/// With `interpolate: false` at the set's own rate, an impulse on one
/// channel comes out as exactly that channel's measurement: the left and
/// right impulse responses of the measurement nearest its BS.2051
/// direction, times the documented normalisation, all computed here from
/// the file (`ReferenceSet`), not from the product.
final class BinauralIdentityTests: XCTestCase {
    static let impulseAt = 1000
    static let frames = 4096

    /// BS.2051 azimuths as the standard tables give them (nil: the LFE).
    static let layouts: [(name: String, azimuths: [Double?])] = [
        ("5.1", [30, -30, 0, nil, 110, -110]),
        ("7.1", [30, -30, 0, nil, 90, -90, 135, -135]),
    ]

    /// Compares `output` (one ear) with `expected` placed at `at`: the
    /// response within `tolerance × peak`, and every other sample as small.
    func assertResponse(_ output: [Float], equals expected: [Float], at: Int, _ what: String,
                        file: StaticString = #filePath, line: UInt = #line) {
        let peak = Double(expected.map { abs($0) }.max() ?? 0)
        XCTAssertGreaterThan(peak, 0.01, "\(what): the reference is not silent", file: file, line: line)
        var worst = 0.0
        var worstAt = -1
        for (i, v) in output.enumerated() {
            let want = i >= at && i < at + expected.count ? Double(expected[i - at]) : 0
            let e = abs(Double(v) - want)
            if e > worst { worst = e; worstAt = i }
        }
        XCTAssertGreaterThanOrEqual(output.count, at + expected.count, "\(what): the whole response is there", file: file, line: line)
        XCTAssertLessThanOrEqual(worst, 1e-6 * peak, "\(what): largest error \(worst) at frame \(worstAt) (peak \(peak))",
                                 file: file, line: line)
    }

    func testEveryChannelOf51And71IsItsMeasurementExactly() throws {
        let set = try ReferenceSet()
        XCTAssertEqual(set.sampleRate, 44100, "the default set is MIT KEMAR at 44.1 kHz")
        for (layout, azimuths) in Self.layouts {
            for (c, azimuth) in azimuths.enumerated() {
                guard let azimuth else { continue }
                let input = impulse(channel: c, of: azimuths.count, at: Self.impulseAt, frames: Self.frames)
                let out = try BinauralGraph.render(layout: layout, input: input)
                let m = set.nearest(azimuth: azimuth, elevation: 0)
                XCTAssertEqual(set.positions[m].azimuth.truncatingRemainder(dividingBy: 360),
                               (azimuth + 360).truncatingRemainder(dividingBy: 360), accuracy: 1e-3,
                               "\(layout) channel \(c): the set measured \(azimuth)° itself")
                XCTAssertEqual(set.positions[m].elevation, 0, accuracy: 1e-3)
                for ear in 0..<2 {
                    assertResponse(out[ear], equals: set.response(m, ear: ear), at: Self.impulseAt,
                                   "\(layout) channel \(c) (\(azimuth)°) \(ear == 0 ? "left" : "right") ear")
                }
            }
        }
    }

    /// A set with `Data.Delay` per measurement and ear
    /// (`Tests/Media/sphere-head-delays.sofa`, made by
    /// `scripts/make-sphere-sofa.py --delays`: each ear's arrival time in
    /// whole samples is in Data.Delay, not in the response): at the set's
    /// rate, an impulse comes out at each ear as that ear's response,
    /// delayed by its own Data.Delay; the ear nearer the source first.
    func testDataDelayDelaysEachEarsResponseByItsOwnSamples() throws {
        let path = TestMedia.path("sphere-head-delays.sofa")
        let set = try ReferenceSet(path: path)
        XCTAssertEqual(set.sampleRate, 48000)
        for azimuth in [60.0, -90.0, 150.0] {
            let m = set.nearest(azimuth: azimuth, elevation: 0)
            XCTAssertEqual(set.positions[m].azimuth, (azimuth + 360).truncatingRemainder(dividingBy: 360), accuracy: 1e-3)
            let (left, right) = set.delays[m]
            XCTAssertNotEqual(left, right, "\(azimuth)°: the ears' delays differ")
            XCTAssertEqual(left > right, azimuth < 0, "\(azimuth)°: the ear on the source's side has the shorter delay")
            let out = try BinauralGraph.render(layout: "mono", params: #"{"sofa": "\#(path)", "positions": [{"azimuth": \#(azimuth)}]}"#,
                                               input: impulse(channel: 0, of: 1, at: 50, frames: 1024), rate: 48000)
            for (ear, delay) in [(0, left), (1, right)] {
                assertResponse(out[ear], equals: set.response(m, ear: ear), at: 50 + Int(delay.rounded()),
                               "\(azimuth)° \(ear == 0 ? "left" : "right") ear, Data.Delay \(delay)")
            }
        }
    }

    /// The LFE bypasses the HRTFs: the impulse reaches both ears once, at
    /// the `lfe` gain (0 dB by default), and nothing else.
    func testLFEGoesToBothEarsAtItsGain() throws {
        for (layout, azimuths) in Self.layouts {
            let lfe = try XCTUnwrap(azimuths.firstIndex { $0 == nil })
            for (params, gain) in [("{}", 1.0), (#"{"lfe": -6}"#, pow(10, -6.0 / 20))] {
                let input = impulse(channel: lfe, of: azimuths.count, at: Self.impulseAt, frames: Self.frames)
                let out = try BinauralGraph.render(layout: layout, params: params, input: input)
                for ear in 0..<2 {
                    assertResponse(out[ear], equals: [Float(gain)], at: Self.impulseAt, "\(layout) LFE \(params) ear \(ear)")
                }
            }
        }
    }

    /// Render calls of any size, smaller or larger than the partition and
    /// not aligned to it, give the same samples (no latency, no seams).
    func testOddRenderSizesGiveTheSameResponses() throws {
        let set = try ReferenceSet()
        let input = impulse(channel: 4, of: 6, at: 333, frames: 3000)
        let m = set.nearest(azimuth: 110, elevation: 0)
        for sizes in [[1], [37, 5, 128, 64, 300, 1], [1024], [127, 129]] {
            let out = try BinauralGraph.render(layout: "5.1", input: input, sizes: sizes)
            for ear in 0..<2 {
                assertResponse(out[ear], equals: set.response(m, ear: ear), at: 333, "sizes \(sizes) ear \(ear)")
            }
        }
        // A partition larger than the default, and one clamped by the block.
        for (params, block) in [(#"{"partition": 512}"#, 1024), (#"{"partition": 4096}"#, 256), (#"{"partition": 16}"#, 1024)] {
            let out = try BinauralGraph.render(layout: "5.1", params: params, input: input, blockFrames: block, sizes: [block, 100])
            for ear in 0..<2 {
                assertResponse(out[ear], equals: set.response(m, ear: ear), at: 333, "\(params) block \(block) ear \(ear)")
            }
        }
    }

    /// `positions` moves a channel: a mono channel placed at 40° left and
    /// 20° up is the measurement nearest there.
    func testPositionsPlaceAChannel() throws {
        let set = try ReferenceSet()
        let out = try BinauralGraph.render(layout: "mono", params: #"{"positions": [{"azimuth": 40, "elevation": 20}]}"#,
                                           input: impulse(channel: 0, of: 1, at: 50, frames: 1024))
        let m = set.nearest(azimuth: 40, elevation: 20)
        XCTAssertEqual(set.positions[m].elevation, 20, accuracy: 1e-3, "KEMAR measured 20° up")
        for ear in 0..<2 { assertResponse(out[ear], equals: set.response(m, ear: ear), at: 50, "40°/20° ear \(ear)") }
    }

    /// `interpolate: true` gives libmysofa's interpolation (asked of
    /// libmysofa here, with its own normalisation off, times the documented
    /// gain): between measurements it differs from the nearest one.
    func testInterpolationIsLibmysofasOwn() throws {
        let set = try ReferenceSet()
        var err: Int32 = 0
        var length: Int32 = 0
        let easy = try XCTUnwrap(mysofa_open_advanced(defaultSOFA, 44100, &length, &err, false, 0.5, 0.01))
        defer { mysofa_close(easy) }
        let radius = easy.pointee.lookup.pointee.radius_max
        for azimuth in [32.0, -77.5, 181.0] {
            var c: [Float] = [Float(azimuth), 0, radius]
            mysofa_s2c(&c)
            var left = [Float](repeating: 0, count: Int(length)), right = left
            var dl: Float = 0, dr: Float = 0
            mysofa_getfilter_float(easy, c[0], c[1], c[2], &left, &right, &dl, &dr)
            XCTAssertEqual(dl, 0)
            let g = Float(set.gain)
            let out = try BinauralGraph.render(layout: "mono", params: #"{"interpolate": true, "positions": [{"azimuth": \#(azimuth)}]}"#,
                                               input: impulse(channel: 0, of: 1, at: 10, frames: 1024))
            assertResponse(out[0], equals: left.map { $0 * g }, at: 10, "interpolated \(azimuth)° left")
            assertResponse(out[1], equals: right.map { $0 * g }, at: 10, "interpolated \(azimuth)° right")
            let nearest = set.response(set.nearest(azimuth: azimuth, elevation: 0), ear: 0)
            let difference = zip(left, nearest).map { abs(Double($0 * g) - Double($1)) }.max() ?? 0
            XCTAssertGreaterThan(difference, 1e-3, "\(azimuth)° lies between measurements: interpolation changes the response")
        }
    }

    /// A rotation's rebuild takes every channel's responses in one call
    /// (`filters(for:interpolate:)`, one resampling for all of them at
    /// another rate): each direction's responses, delays and nearest
    /// measurement are the ones `filter` gives for it alone, which the
    /// tests above hold to libmysofa's.
    func testAllChannelsAtOnceAreEachChannelsOwnResponses() throws {
        let set = try HRTFSet(path: defaultSOFA, sampleRate: 48000)  // not the shared one: never resampled whole
        let directions: [(azimuth: Double, elevation: Double)] = [(30, 0), (-30, 0), (0, 0), (110, 0), (-110, 0), (32, 10), (-77.5, -5), (181, 0)]
        let n = set.filterLength
        var left = [Float](repeating: 0, count: n), right = left
        for interpolate in [true, false] {
            let all = set.filters(for: directions, interpolate: interpolate)
            XCTAssertEqual(all.count, directions.count)
            for (i, d) in directions.enumerated() {
                let one = set.filter(azimuth: d.azimuth, elevation: d.elevation, interpolate: interpolate, left: &left, right: &right)
                let label = "\(d.azimuth)°, \(d.elevation)°, interpolate \(interpolate)"
                XCTAssertEqual(all[i].measurement, one.measurement, label)
                XCTAssertEqual(all[i].delays.left, one.left, label)
                XCTAssertEqual(all[i].delays.right, one.right, label)
                let peak = max(left.map(abs).max() ?? 0, right.map(abs).max() ?? 0)
                XCTAssertGreaterThan(peak, 0, label)
                let difference = max(zip(all[i].left, left).map { abs($0 - $1) }.max() ?? .infinity,
                                     zip(all[i].right, right).map { abs($0 - $1) }.max() ?? .infinity)
                XCTAssertLessThanOrEqual(difference, 1e-6 * peak, label)
            }
        }
    }

    /// Resampled whole (live, interpolating: `startResamplingWholeSet`),
    /// a set interpolates at the graph's rate as libmysofa's own API does
    /// on the set opened at that rate (`mysofa_open_advanced(…, 48000, …)`
    /// then `mysofa_getfilter_float`), times the gain; the nearest
    /// measurements' responses are the same bits as before, and the
    /// interpolated ones differ from before only by rounding (interpolating
    /// then resampling, or resampling then interpolating).
    func testTheWholeSetResampledInterpolatesAsLibmysofaDoesAtThatRate() throws {
        let set = try HRTFSet(path: defaultSOFA, sampleRate: 48000)  // not the shared one
        let n = set.filterLength
        let directions: [(azimuth: Double, elevation: Double)] = [(30, 0), (-77.5, -5), (181, 0), (32, 10), (110, 0)]
        var left = [Float](repeating: 0, count: n), right = left
        func responses(_ d: (azimuth: Double, elevation: Double), interpolate: Bool) -> ([Float], [Float], Int) {
            let r = set.filter(azimuth: d.azimuth, elevation: d.elevation, interpolate: interpolate, left: &left, right: &right)
            return (left, right, r.measurement)
        }
        let nearestBefore = directions.map { responses($0, interpolate: false) }
        let interpolatedBefore = directions.map { responses($0, interpolate: true) }
        XCTAssertFalse(set.isResampledWhole)
        set.resampleWholeSet()
        XCTAssertTrue(set.isResampledWhole)

        var err: Int32 = 0
        var length: Int32 = 0
        let easy = try XCTUnwrap(mysofa_open_advanced(defaultSOFA, 48000, &length, &err, false, 0.5, 0.01))
        defer { mysofa_close(easy) }
        XCTAssertEqual(Int(length), n)
        let radius = easy.pointee.lookup.pointee.radius_max
        for (i, d) in directions.enumerated() {
            let label = "\(d.azimuth)°, \(d.elevation)°"
            let nearest = responses(d, interpolate: false)
            XCTAssertEqual(nearest.2, nearestBefore[i].2, label)
            XCTAssertEqual(nearest.0, nearestBefore[i].0, "\(label): the nearest measurement's left response, bit for bit")
            XCTAssertEqual(nearest.1, nearestBefore[i].1, "\(label): the nearest measurement's right response, bit for bit")

            let now = responses(d, interpolate: true)
            var c: [Float] = [Float(d.azimuth), Float(d.elevation), radius]
            mysofa_s2c(&c)
            var theirs = ([Float](repeating: 0, count: n), [Float](repeating: 0, count: n))
            var dl: Float = 0, dr: Float = 0
            mysofa_getfilter_float(easy, c[0], c[1], c[2], &theirs.0, &theirs.1, &dl, &dr)
            let peak = max(now.0.map(abs).max() ?? 0, now.1.map(abs).max() ?? 0)
            XCTAssertGreaterThan(peak, 0, label)
            for (ours, reference, what) in [(now.0, theirs.0.map { $0 * set.gain }, "left"), (now.1, theirs.1.map { $0 * set.gain }, "right"),
                                            (now.0, interpolatedBefore[i].0, "left before"), (now.1, interpolatedBefore[i].1, "right before")] {
                let difference = zip(ours, reference).map { abs($0 - $1) }.max() ?? .infinity
                XCTAssertLessThanOrEqual(difference, 1e-5 * peak, "\(label): interpolated \(what)")
            }
        }
    }

    /// At another rate than the set's, libmysofa resamples the responses:
    /// each channel's are what libmysofa gives when it opens the whole set
    /// at that rate (`mysofa_open_advanced(…, 48000, …, norm: false)`,
    /// asked here), times the normalisation computed at that rate; the
    /// front has unit energy on average per ear.
    func testAnotherRateIsLibmysofasResamplingNormalisedThere() throws {
        var err: Int32 = 0
        var length: Int32 = 0
        let easy = try XCTUnwrap(mysofa_open_advanced(defaultSOFA, 48000, &length, &err, false, 0.5, 0.01))
        defer { mysofa_close(easy) }
        XCTAssertEqual(length, 558, "⌈512 · 48000 / 44100⌉")
        let radius = easy.pointee.lookup.pointee.radius_max
        func responses(_ azimuth: Float) -> ([Float], [Float]) {
            var c: [Float] = [azimuth, 0, radius]
            mysofa_s2c(&c)
            var left = [Float](repeating: 0, count: Int(length)), right = left
            var dl: Float = 0, dr: Float = 0
            mysofa_getfilter_float_nointerp(easy, c[0], c[1], c[2], &left, &right, &dl, &dr)
            return (left, right)
        }
        let front = responses(0)
        let energy = (front.0 + front.1).reduce(0.0) { $0 + Double($1) * Double($1) }
        let g = Float(1 / (energy / 2).squareRoot())
        for (c, azimuth) in [(0, Float(30)), (2, 0), (4, 110), (5, -110)] {
            let out = try BinauralGraph.render(layout: "5.1", input: impulse(channel: c, of: 6, at: 100, frames: 2048), rate: 48000)
            let (left, right) = responses(azimuth)
            assertResponse(out[0], equals: left.map { $0 * g }, at: 100, "48 kHz channel \(c) left")
            assertResponse(out[1], equals: right.map { $0 * g }, at: 100, "48 kHz channel \(c) right")
            XCTAssertEqual(out[0].count, 2048 + 557, "the input plus the 558-sample response's ring-out")
        }
        let centre = try BinauralGraph.render(layout: "mono", input: impulse(channel: 0, of: 1, at: 0, frames: 2048), rate: 48000)
        let energies = centre.map { ear in ear.reduce(0.0) { $0 + Double($1) * Double($1) } }
        XCTAssertEqual((energies[0] + energies[1]) / 2, 1, accuracy: 1e-4, "front energy at 48 kHz")
    }
}
