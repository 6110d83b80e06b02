import XCTest
import AudioGraph
import AudioGraphJACK
import AudioGraphProcessing
import TestSupport

/// A `meter` node while the graph plays: its windows reach the Swift API as
/// events, `get` reads them, and the status agrees.
final class MeterLiveTests: LiveTestCase {
    /// A 1 kHz sine at −12 dBFS peak: peak −12, RMS −15.01, true peak
    /// within 0.1 dB of the peak (1 kHz is far below Nyquist).
    func testMeterWindowsArriveAsEventsAndGetReadsThem() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let live = try startGraph("""
            {"format": "agraph/1", "name": "meter", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 2}},
              {"id": "m", "type": "meter", "params": {"window": 100}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "tone", "to": "m"}, {"from": "m", "to": "out"}]}
            """, server: server.name, clientName: "agraph-meter")
        defer { live.stop() }
        let log = EventLog(live.events)
        // Windows after the first (which may start mid-ramp) are steady.
        let event = log.wait(timeout: 10) { e in
            if case .meter(let r) = e { return r.node == "m" && r.window >= 3 }
            return false
        }
        guard case .meter(let reading)? = event else { return XCTFail("no meter event with 3 windows: \(log.all)") }
        XCTAssertEqual(reading.channels.count, 2)
        for c in reading.channels {
            XCTAssertEqual(c.peakDBFS, -12, accuracy: 0.05)
            XCTAssertEqual(c.rmsDBFS, -12 - 3.0103, accuracy: 0.05)
            XCTAssertEqual(c.truePeakDBTP, -12, accuracy: 0.1)
        }
        let peak = try live.control.get("m.peak[1]")
        XCTAssertEqual(peak.value, -12, accuracy: 0.05, "get m.peak[1]: \(peak)")
        let rms = try live.control.get("m.rms")
        XCTAssertEqual(rms.value, -15.01, accuracy: 0.05, "get m.rms: \(rms)")
        let status = live.status()
        let meter = try XCTUnwrap(status.meters.first { $0.node == "m" }, "the status carries the meter")
        XCTAssertTrue(meter.text.hasPrefix("m pk -12.0/-12.0 rms -15.0/-15.0"), meter.text)
    }
}
