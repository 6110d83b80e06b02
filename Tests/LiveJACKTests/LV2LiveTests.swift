import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest

/// An LV2 plugin's reported latency is part of the path's latency live:
/// `jack_lsp -l` shows it on the graph's ports, and a dry path meeting the
/// plugin's is delayed to match (the recording has one impulse, not two).
final class LV2LiveTests: LiveTestCase {
    static let nodelay = "http://gareus.org/oss/lv2/nodelay"

    override func setUpWithError() throws {
        try super.setUpWithError()
        try XCTSkipUnless(LV2World.shared.uris.contains(Self.nodelay),
                          "x42's nodelay LV2 plugin is not installed (scripts/setup installs x42-plugins with AGRAPH_SETUP_TESTS=1)")
    }

    func testAPluginsLatencyShowsInJackLspAndIsCompensatedAgainstADryPath() throws {
        var impulses = [Float](repeating: 0, count: 48000)
        for k in stride(from: 2400, to: 48000, by: 4800) { impulses[k] = 0.25 }
        try writeSoundFile(dir.file("impulses.wav"), format: .wavFloat32, channels: 1, sampleRate: Self.rate, samples: impulses)
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 10)
            defer { rec.close() }
            let live = try startGraph("""
                {"format": "agraph/1", "name": "lv2live", "sampleRate": 48000, "nodes": [
                  {"id": "in", "type": "jack-in", "params": {"channels": 1}},
                  {"id": "dly", "type": "lv2", "params": {"uri": "\(Self.nodelay)", "delay": 1000}},
                  {"id": "mon", "type": "jack-out", "params": {"ports": ["mon_1"]}},
                  {"id": "src", "type": "file", "params": {"path": "impulses.wav", "loop": true}},
                  {"id": "fx", "type": "lv2", "params": {"uri": "\(Self.nodelay)", "delay": 1000}},
                  {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
                  {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_1"]}}],
                 "links": [{"from": "in", "to": "dly"}, {"from": "dly", "to": "mon"},
                           {"from": "src", "to": "fx"}, {"from": "fx", "to": "mix:in0"}, {"from": "src", "to": "mix:in1"},
                           {"from": "mix", "to": "out"}]}
                """, server: server.name, clientName: "agraph-lv2")
            defer { live.stop() }
            let events = EventLog(live.events)
            XCTAssertEqual(live.engine.node("dly")?.latency, 1000)
            // The plugin's control output, published as an event and read with get.
            XCTAssertNotNil(events.wait(timeout: 5) { $0 == .reading(node: "fx", name: "latency", value: 1000) }, "\(events.all)")
            XCTAssertEqual(try live.control.get("fx.latency").value, 1000)

            // jack_lsp -l: the graph's 1000 frames on both sides of the in → mon path.
            let (latencies, lsp) = try Self.portLatencies(server: server)
            let monCapture = try XCTUnwrap(latencies["agraph-lv2:mon_1"]?.capture, lsp.stdout)
            let inPlayback = try XCTUnwrap(latencies["agraph-lv2:in_1"]?.playback, lsp.stdout)
            XCTAssertEqual(monCapture.first, 1000, "capture latency at the output: the plugin's 1000 frames: \(lsp.stdout)")
            XCTAssertEqual(inPlayback.first, 1000, "playback latency at the input: \(lsp.stdout)")

            // A live change of the plugin's delay: its latency port follows,
            // and JACK is told the new latency.
            try live.set("dly.delay", 2000)
            var changed: [Int]?
            XCTAssertTrue(waitUntil(timeout: 10) {
                changed = try? Self.portLatencies(server: server).ports["agraph-lv2:mon_1"]?.capture
                return changed?.first == 2000
            }, "jack_lsp after the plugin's latency changed: \(String(describing: changed))")
            XCTAssertEqual(live.engine.node("dly")?.latency, 2000)

            // The dry path is delayed to meet the plugin's: one impulse of 0.5 every 4800 frames.
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + 96000, timeout: 10))
            try checkNoXruns(rec, live, isLast: isLast)
            let s = rec.samples(0)
            let peaks = s.indices.filter { abs(s[$0]) > 1e-6 }
            XCTAssertGreaterThan(peaks.count, 10, "impulses recorded")
            for p in peaks { XCTAssertEqual(s[p], 0.5, accuracy: 1e-6, "at \(p): dry and wet together") }
            for (a, b) in zip(peaks, peaks.dropFirst()) { XCTAssertEqual(b - a, 4800, "one impulse per 4800 frames") }
        }
    }
}
