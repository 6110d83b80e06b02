import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest

/// The `binaural` node live: head rotation from the control surface while
/// JACK runs it.
final class BinauralLiveTests: LiveTestCase {
    /// A 5 kHz tone placed at 90° (left) through `binaural` with
    /// `interpolate: true` at 48 kHz (Debian's default set is 44.1 kHz: live,
    /// it is resampled whole in the background). `set phones.yaw 180`
    /// turns the head round: the source is then at the right ear. The left
    /// ear is louder before, the right one after, and the change is heard
    /// within a few periods of the `set` (the worker computes the new
    /// filters, the audio thread crossfades to them), not seconds later.
    func testYawTurnsTheHeadLive() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/libmysofa/default.sofa"),
                          "Debian's default SOFA set (libmysofa-dev; scripts/setup installs it)")
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            // Room for the 1.5 s before the set and the 1 s after it (scaled under TSan).
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: LiveTiming.seconds(4))
            defer { rec.close() }
            let live = try startGraph("""
                {"format": "agraph/1", "name": "head", "sampleRate": 48000, "nodes": [
                  {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 5000, "level": -12, "channels": 1}},
                  {"id": "phones", "type": "binaural", "params": {"interpolate": true, "positions": [{"azimuth": 90}]}},
                  {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
                 "links": [{"from": "tone", "to": "phones"}, {"from": "phones", "to": "out"}]}
                """, server: server.name)
            defer { live.stop() }

            XCTAssertTrue(rec.waitForFrames(Int(LiveTiming.seconds(1.5) * Self.rate), timeout: 20))
            let mark = rec.framesRecorded
            try live.set("phones.yaw", 180)
            XCTAssertTrue(rec.waitForFrames(mark + Int(LiveTiming.seconds(1) * Self.rate), timeout: 20))
            XCTAssertGreaterThanOrEqual(rec.samples(0).count, mark + Int(LiveTiming.seconds(1) * Self.rate), "the recording holds the second after the set")
            XCTAssertEqual(try live.value("phones.yaw"), 180)
            try checkNoXruns(rec, live, isLast: isLast)

            let left = rec.samples(0), right = rec.samples(1)
            func difference(from start: Int, count: Int) -> Double {
                SignalAnalysis.dBFS(SignalAnalysis.rms(left[start..<(start + count)]))
                    - SignalAnalysis.dBFS(SignalAnalysis.rms(right[start..<(start + count)]))
            }
            let before = difference(from: mark - 24_000, count: 12_000)
            let after = difference(from: left.count - 24_000, count: 24_000)
            XCTAssertGreaterThan(before, 6, "at 90° the left ear is louder (L − R \(before) dB)")
            XCTAssertLessThan(after, -6, "turned round, the right ear is (L − R \(after) dB)")
            XCTAssertEqual(before, -after, accuracy: 1.5, "the same source, mirrored")
            // When: the first 128-frame block from which the right ear stays
            // louder. The `set` was made when `mark` frames were recorded;
            // the recorder is one period behind at most.
            let block = 128
            var flipped: Int?
            var k = mark - LiveTiming.period
            while k + block <= left.count {
                if difference(from: k, count: block) < 0 {
                    if flipped == nil { flipped = k }
                } else {
                    flipped = nil
                }
                k += block
            }
            let at = try XCTUnwrap(flipped, "the right ear became louder and stayed so")
            XCTAssertLessThan(at - mark, 4 * LiveTiming.period + 2 * block,
                              "heard \(at - mark) frames after the set (period \(LiveTiming.period))")
        }
    }
}
