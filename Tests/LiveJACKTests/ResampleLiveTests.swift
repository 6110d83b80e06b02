import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A 44.1 kHz file plays live in a 48 kHz graph on a private JACK server:
/// converted in the file source (`resample: "auto"`) on one port, and by a
/// `resample` node from a rate island on the other. The recording holds
/// the right frequency and length on both, and the node's path is late by
/// exactly the latency it reports.
final class ResampleLiveTests: LiveTestCase {
    func testA44k1FilePlaysLiveInA48kGraph() throws {
        let seconds = 3.0
        let frames = Int(seconds * 44100)
        let tone = Synth.sine(frequency: 997, amplitude: 0.5, sampleRate: 44100, frames: frames)
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 1, sampleRate: 44100, samples: tone)
        let json = """
            {"format": "agraph/1", "name": "resample-live", "sampleRate": 48000, "nodes": [
              {"id": "a", "type": "file", "params": {"path": "in.wav", "quality": "very-high"}},
              {"id": "oa", "type": "jack-out", "params": {"ports": ["source"], "connect": ["agraph-rec:in_1"]}},
              {"id": "b", "type": "file", "params": {"path": "in.wav", "resample": "native"}},
              {"id": "rs", "type": "resample", "params": {"quality": "very-high"}},
              {"id": "ob", "type": "jack-out", "params": {"ports": ["node"], "connect": ["agraph-rec:in_2"]}}],
             "links": [{"from": "a", "to": "oa"}, {"from": "b", "to": "rs"}, {"from": "rs", "to": "ob"}]}
            """
        let expected = (frames * 48000 + 22050) / 44100
        var attempt = 0
        while true {
            attempt += 1
            // A longer period than the other live tests: fewer wake-ups for a
            // loaded machine to miss; the node's blocks are as live as any.
            let server = try TestJACKServer(sampleRate: 48000, period: max(LiveTiming.period, 1024))
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: seconds + 4)
            defer { rec.close() }
            let live = try startGraph(json, server: server.name) { $0.period = server.period }
            let latency = try XCTUnwrap(live.engine.node("rs")).latency
            XCTAssertGreaterThan(latency, 0)
            // Wait until the graph has played it all, then a little more.
            let deadline = Date().addingTimeInterval(LiveTiming.seconds(seconds + 10))
            while !live.status().finished && Date() < deadline { usleep(20_000) }
            XCTAssertTrue(live.status().finished, "the streams ended")
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + 8192, timeout: LiveTiming.seconds(5)))
            let status = live.status()
            _ = live.stop()
            if (rec.xruns > 0 || status.xruns > 0 || status.underruns > 0) && attempt < 6 {
                // A loaded machine dropped cycles: the recording has gaps; try again.
                continue
            }
            if rec.xruns > 0 || status.xruns > 0 {
                throw XCTSkip("the machine keeps dropping JACK cycles (\(rec.xruns) xruns); the recording cannot be judged")
            }
            XCTAssertEqual(status.underruns, 0, "the reader kept up")
            let recorded = rec.framesRecorded
            let left = rec.samples(0, 0 ..< recorded), right = rec.samples(1, 0 ..< recorded)
            // The sine starts at phase 0: its first sample is 0, the next is not.
            let firstA = try XCTUnwrap(left.firstIndex { $0 != 0 }) - 1
            let lastA = try XCTUnwrap(left.lastIndex { $0 != 0 })
            // Length exact to the frame on the source's own conversion.
            XCTAssertEqual(Double(lastA + 1 - firstA), Double(expected), accuracy: 1, "3 s at 44.1 kHz are 144 000 frames at 48 kHz")
            XCTAssertGreaterThan(right.count, firstA + latency + expected)
            for (name, channel, first) in [("source", left, firstA), ("node", right, firstA + latency)] {
                let steady = Array(channel[(first + 4800) ..< (first + expected - 4800)])
                XCTAssertEqual(SignalAnalysis.frequency(of: steady, sampleRate: 48000), 997, accuracy: 997 * 1e-4, "\(name): frequency within 0.01 %")
                XCTAssertEqual(SignalAnalysis.sineLevelDBFS(steady), SignalAnalysis.dBFS(0.5), accuracy: 0.05, "\(name): level")
            }
            // Both ports carry the same converted signal, the node's late by
            // exactly the latency it reports: aligned there they agree to
            // −90 dB, one frame either way they do not (a 997 Hz sine moves
            // by 7.5° a frame: −24 dB).
            func mismatchDB(_ shift: Int) -> Double {
                let a = Array(left[(firstA + 4800) ..< (firstA + 9600)])
                let b = Array(right[(firstA + shift + 4800) ..< (firstA + shift + 9600)])
                let mean = zip(a, b).map { Double($0 - $1) * Double($0 - $1) }.reduce(0, +) / Double(a.count)
                return 10 * log10(mean + 1e-30)
            }
            XCTAssertLessThan(mismatchDB(latency), -90, "aligned at the reported latency")
            XCTAssertGreaterThan(mismatchDB(latency - 1), -40, "not one frame earlier")
            XCTAssertGreaterThan(mismatchDB(latency + 1), -40, "not one frame later")
            return
        }
    }
}
