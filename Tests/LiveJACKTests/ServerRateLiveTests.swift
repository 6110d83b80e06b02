import XCTest
import AudioGraph
import AudioGraphJACK
import TestSupport

/// A graph without `"sampleRate"` runs at the server's rate; one that names
/// another rate is refused before activation, with the fix named.
final class ServerRateLiveTests: LiveTestCase {
    func start(_ json: String, server: TestJACKServer) throws -> RunningGraph {
        try startGraph(json, server: server.name, clientName: "agraph-rate")
    }

    /// At 44 100 Hz on the server, a 1 kHz tone of a graph without a rate
    /// is validated and rendered at 44 100 Hz: the recording (at the
    /// server's rate) measures 1 kHz, not 1 kHz × 48/44.1.
    func testAGraphWithoutARateRunsAtTheServersRate() throws {
        let server = try TestJACKServer(sampleRate: 44100)
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 3)
        defer { rec.close() }
        let live = try start("""
            {"format": "agraph/1", "name": "norate", "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -6, "channels": 1}},
              {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_1"]}}],
             "links": [{"from": "tone", "to": "out"}]}
            """, server: server)
        defer { live.stop() }
        XCTAssertEqual(live.graph.sampleRate, 44100)
        XCTAssertFalse(live.graph.sampleRateIsExplicit)
        XCTAssertEqual(live.graph.node("tone")?.outputFormat?.sampleRate, 44100, "nodes resolved at the server's rate")
        XCTAssertTrue(rec.waitForFrames(Int(1.5 * 44100), timeout: 20), "recorded 1.5 s")
        let n = rec.framesRecorded
        let tail = Array(rec.samples(0, (n - 44100)..<n))
        XCTAssertEqual(SignalAnalysis.frequency(of: tail, sampleRate: 44100), 1000, accuracy: 0.5)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(tail), -6, accuracy: 0.1)
    }

    /// Such a graph that does not validate at the server's rate (a tone
    /// above its Nyquist) is refused before activation, with the reason.
    func testAGraphWithoutARateThatFailsAtTheServersRateIsRefused() throws {
        let server = try TestJACKServer(sampleRate: 44100)
        defer { server.stop() }
        XCTAssertThrowsError(try start("""
            {"format": "agraph/1", "name": "norate", "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 23000, "channels": 1}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "tone", "to": "out"}]}
            """, server: server)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("at the JACK server's rate of 44100 Hz"), text)
            XCTAssertTrue(text.contains("/nodes/0/params/frequency"), text)
        }
    }
}
