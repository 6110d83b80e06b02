import AudioGraph
import AudioGraphProcessing
import TestSupport
import XCTest

/// `ProgrammeLoudness` (`agraph analyze`'s integrated loudness and loudness
/// range): the K-weighting is the recommendation's filter, the EBU test
/// signals measure what Tech 3341 and 3342 say, and the values agree with
/// libebur128 (`EBUR128Meter`) and with the tests' own slow BS.1770
/// measurement.
final class ProgrammeLoudnessTests: XCTestCase {
    /// At 48 kHz the bilinear design gives the coefficients printed in
    /// ITU-R BS.1770-4 (table 1 and 2), to the digits printed there.
    func testKWeightingAt48kHzIsTheRecommendationsFilter() {
        let k = KWeighting(sampleRate: 48_000)
        XCTAssertEqual(k.b0, 1.53512485958697, accuracy: 1e-9)
        XCTAssertEqual(k.b1, -2.69169618940638, accuracy: 1e-9)
        XCTAssertEqual(k.b2, 1.19839281085285, accuracy: 1e-9)
        XCTAssertEqual(k.a1, -1.69065929318241, accuracy: 1e-9)
        XCTAssertEqual(k.a2, 0.73248077421585, accuracy: 1e-9)
        XCTAssertEqual(k.c1, -1.99004745483398, accuracy: 1e-9)
        XCTAssertEqual(k.c2, 0.99007225036621, accuracy: 1e-9)
    }

    static func measure(_ samples: [Float], channels: Int, layout: ChannelLayout,
                        chunk: Int = 16_384) throws -> ProgrammeLoudness {
        let m = try ProgrammeLoudness(channels: channels, sampleRate: LoudnessTests.rate,
                                      weights: ProgrammeLoudness.weights(layout: layout, channels: channels))
        samples.withUnsafeBufferPointer { p in
            let frames = samples.count / channels
            var at = 0
            while at < frames {
                let n = min(chunk, frames - at)
                m.add(interleaved: p.baseAddress! + at * channels, frames: n)
                at += n
            }
        }
        return m
    }

    static func libebur128(_ samples: [Float], channels: Int, layout: ChannelLayout) throws -> EBUR128Meter {
        let m = try EBUR128Meter(channels: channels, sampleRate: LoudnessTests.rate, layout: layout,
                                 truePeak: false, samplePeak: false)
        samples.withUnsafeBufferPointer { m.add(interleaved: $0.baseAddress!, frames: samples.count / channels) }
        return m
    }

    func testTech3341CasesMeasureTheirIntegratedLoudnessLikeLibebur128() throws {
        for t in LoudnessTests.tech3341 {
            let layout: ChannelLayout = t.channels == 6 ? .surround51 : .stereo
            let samples = t.signal()
            let ours = try Self.measure(samples, channels: t.channels, layout: layout)
            XCTAssertEqual(ours.integrated, t.integrated, accuracy: 0.1, t.name)
            // libebur128's histogram rounds each block to 0.1 LU bins.
            let lib = try Self.libebur128(samples, channels: t.channels, layout: layout)
            XCTAssertEqual(ours.integrated, lib.integrated, accuracy: 0.05, "\(t.name) vs libebur128")
            let channels = (0..<t.channels).map { deinterleave(samples, channels: t.channels, channel: $0) }
            let reference = ReferenceLoudness.integrated(channels, weights: ProgrammeLoudness.weights(layout: layout, channels: t.channels))
            XCTAssertEqual(ours.integrated, reference, accuracy: 0.001, "\(t.name) vs the tests' own BS.1770")
        }
    }

    func testTech3342CasesMeasureTheirLoudnessRange() throws {
        for t in LoudnessTests.tech3342 {
            let samples = t.signal()
            let ours = try Self.measure(samples, channels: 2, layout: .stereo)
            XCTAssertEqual(ours.loudnessRange, t.range, accuracy: 1, t.name)
            // libebur128 takes a short-term block every second, this type
            // every 100 ms, and rounds to 0.1 LU bins.
            let lib = try Self.libebur128(samples, channels: 2, layout: .stereo)
            XCTAssertEqual(ours.loudnessRange, lib.loudnessRange, accuracy: 0.2, "\(t.name) vs libebur128")
        }
    }

    /// However the frames are cut into calls, the result is the same to the
    /// last bit; mono and three channels (an odd channel in a lane pair)
    /// agree with the reference measurement.
    func testChunkingAndOddChannelCountsDoNotChangeTheResult() throws {
        let pink = LoudnessTests.pinkStereo(seconds: 12, rms: 0.1)
        let whole = try Self.measure(pink, channels: 2, layout: .stereo, chunk: 1 << 30)
        for chunk in [1, 7, 4_799, 4_800, 4_801, 65_536] {
            let cut = try Self.measure(pink, channels: 2, layout: .stereo, chunk: chunk)
            XCTAssertEqual(cut.integrated, whole.integrated, "chunks of \(chunk)")
            XCTAssertEqual(cut.loudnessRange, whole.loudnessRange, "chunks of \(chunk)")
            XCTAssertEqual(cut.subBlockEnergies, whole.subBlockEnergies, "chunks of \(chunk)")
        }
        let left = deinterleave(pink, channels: 2, channel: 0)
        let right = deinterleave(pink, channels: 2, channel: 1)
        let mono = try Self.measure(left, channels: 1, layout: .mono, chunk: 1_000)
        XCTAssertEqual(mono.integrated, ReferenceLoudness.integrated([left]), accuracy: 0.001, "mono")
        var three: [Float] = []
        for i in 0..<left.count { three += [left[i], right[i], 0.5 * left[i]] }
        let m3 = try Self.measure(three, channels: 3, layout: .discrete, chunk: 3_333)
        XCTAssertEqual(m3.integrated, ReferenceLoudness.integrated([left, right, left.map { 0.5 * $0 }]),
                       accuracy: 0.001, "three channels")
    }

    func testSilenceAndTooShortAProgrammeHaveNoLoudness() throws {
        let silence = [Float](repeating: 0, count: 2 * 48_000 * 5)
        let s = try Self.measure(silence, channels: 2, layout: .stereo)
        XCTAssertEqual(s.integrated, -.infinity)
        XCTAssertEqual(s.loudnessRange, 0)
        // 300 ms: no 400 ms block is complete.
        let short = LoudnessTests.stereo([(-23, 0.3)])
        XCTAssertEqual(try Self.measure(short, channels: 2, layout: .stereo).integrated, -.infinity)
    }

    func testRatesAndChannelCountsOutOfRangeAreRefused() {
        XCTAssertThrowsError(try ProgrammeLoudness(channels: 0, sampleRate: 48_000, weights: []))
        XCTAssertThrowsError(try ProgrammeLoudness(channels: 1, sampleRate: 44_100.5, weights: [1]))
        XCTAssertThrowsError(try ProgrammeLoudness(channels: 2, sampleRate: 48_000, weights: [1]))
    }
}
