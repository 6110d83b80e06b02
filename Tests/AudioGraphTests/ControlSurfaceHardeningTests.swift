import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// Issue 22, item 15: the control surface (`set`/`get` at the prompt, the
/// API OSC and the console share) shows what the node uses and refuses
/// what it would not take, on a graph compiled offline.
final class ControlSurfaceHardeningTests: XCTestCase {
    static let graph = """
        {"format": "agraph/1", "name": "hardening", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": 0}},
          {"id": "f", "type": "filter", "params": {"type": "low-pass", "frequency": 2000}},
          {"id": "sh", "type": "filter", "params": {"type": "low-shelf", "frequency": 200, "slope": 1, "gain": 6}},
          {"id": "d", "type": "delay", "params": {"samples": 480}},
          {"id": "m", "type": "meter", "params": {"window": 100}},
          {"id": "sink", "type": "null"}],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "f"}, {"from": "f", "to": "sh"}, {"from": "sh", "to": "d"},
                   {"from": "d", "to": "m"}, {"from": "m", "to": "sink"}]}
        """

    var compiled: CompiledGraph!
    var surface: ControlSurface!

    override func setUpWithError() throws {
        compiled = try compileBuiltIn(Self.graph, file: "hardening.json", maxFrames: 256)
        surface = ControlSurface(compiled: compiled, host: OfflineHost())
    }

    func failure(_ line: String) -> String? {
        if case .failure(let e)? = surface.execute(line: line) { return e.message }
        return nil
    }

    /// `get f.q` of a filter whose q the graph leaves out: the 0.7071 it
    /// uses (it showed 0); a shelf given a slope: the Q the slope makes;
    /// a delay given in samples: its ms.
    func testGetShowsTheValueInEffectOfAnUnsetOptionalParameter() throws {
        XCTAssertEqual(try surface.get("f.q").value, 0.5.squareRoot(), accuracy: 1e-12)
        XCTAssertEqual(try surface.get("f.gain").value, 0)
        XCTAssertEqual(try surface.get("sh.q").value, BiquadCoefficients.shelfQ(slope: 1, gainDB: 6), accuracy: 1e-12)
        XCTAssertNotEqual(try surface.get("sh.q").value, 0)
        XCTAssertEqual(try surface.get("d.ms").value, 10, accuracy: 1e-12, "480 frames at 48 kHz")
        XCTAssertEqual(try surface.get("d.samples").value, 480)
        // A value set wins.
        try surface.set("f.q", 2)
        XCTAssertEqual(try surface.get("f.q").value, 2)
    }

    /// `set g.gain -3\0garbage` applied -3: Swift's Double(_:) stops at a NUL.
    func testANULInALineOrAValueIsRefusedAndNothingChanges() throws {
        let posted = compiled.engine.parameters.postedCount
        XCTAssertEqual(failure("set g.gain -3\0garbage"), "the line has a NUL byte at column 14; nothing was done")
        XCTAssertEqual(failure("set g.gain -3\0"), "the line has a NUL byte at column 14; nothing was done")
        XCTAssertEqual(failure("seek 1\0x"), "the line has a NUL byte at column 7; nothing was done")
        XCTAssertEqual(failure("set g.gain -3garbage"), "'-3garbage' is not a value of g.gain; give a number (or true/false)")
        // The API (and OSC's words) take the same path without the line.
        XCTAssertThrowsError(try surface.set("g.gain", word: "-3\0garbage")) { error in
            XCTAssertTrue("\(error)".contains("NUL"), "\(error)")
        }
        XCTAssertNil(ControlLine.number("-3\0garbage"))
        XCTAssertEqual(ControlLine.number("-3"), -3)
        XCTAssertEqual(compiled.engine.parameters.postedCount, posted, "nothing was queued")
        XCTAssertEqual(try surface.get("g.gain").value, 0)
    }

    /// `set d.ms 1000.0001` was taken (and held at 1000) when the delay
    /// can reach 1000 ms at most: refused, as by the API.
    func testALiveDelayBeyondItsMaximumIsRefused() throws {
        let posted = compiled.engine.parameters.postedCount
        let message = try XCTUnwrap(failure("set d.ms 1000.0001"))
        XCTAssertTrue(message.contains("1000.0001 ms is more than") && message.contains("1000 ms"), message)
        XCTAssertNotNil(failure("set d.samples 48001"))
        XCTAssertThrowsError(try surface.set("d.ms", 1000.0001))
        XCTAssertEqual(compiled.engine.parameters.postedCount, posted, "nothing was queued")
        // The maximum itself is taken.
        XCTAssertNil(failure("set d.ms 1000"))
        XCTAssertNil(failure("set d.samples 48000"))
        XCTAssertEqual(compiled.engine.parameters.postedCount, posted + 2)
    }

    /// `set m.nosuch 1` listed the node's readings, which `set` cannot
    /// change: it suggests parameters; `get` may suggest readings too.
    func testSetSuggestsParametersAndGetAlsoReadings() throws {
        let set = try XCTUnwrap(failure("set f.frequncy 1"))
        XCTAssertTrue(set.contains("did you mean 'frequency'?"), set)
        XCTAssertTrue(set.contains("live parameters (set): frequency, q, slope, gain"), set)
        let meterSet = try XCTUnwrap(failure("set m.peek 1"))
        XCTAssertFalse(meterSet.contains("peak"), "readings are not offered to set: \(meterSet)")
        XCTAssertFalse(meterSet.contains("readings"), meterSet)
        let meterGet = try XCTUnwrap(failure("get m.peek"))
        XCTAssertTrue(meterGet.contains("did you mean 'peak'?"), meterGet)
        XCTAssertTrue(meterGet.contains("readings (get): peak"), meterGet)
    }
}
