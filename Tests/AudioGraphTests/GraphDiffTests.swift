import AudioGraph
import AudioGraphCore
import TestSupport
import XCTest

/// `GraphDiff`: what a hot reload keeps, changes live, replaces, adds and
/// removes; `ReloadReport`'s line; the `reload` console command; and an
/// engine built around kept nodes renders them on from where they were.
final class GraphDiffTests: XCTestCase {
    func graph(_ nodes: String, _ links: String) throws -> ValidatedGraph {
        let json = #"{"format": "agraph/1", "name": "d", "sampleRate": 48000, "nodes": [\#(nodes)], "links": [\#(links)]}"#
        return try GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "d.json", directory: "/tmp").get()
    }

    let tone = #"{"id": "t", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}}"#
    let sink = #"{"id": "n", "type": "null"}"#

    func testLiveParameterChangesAreNotRebuilds() throws {
        let a = try graph(tone + #", {"id": "g", "type": "gain", "params": {"gain": 0}}, {"id": "m", "type": "mixer", "params": {"inputs": 2, "gains": [0, 0]}}, "# + sink,
                          #"{"from": "t", "to": "g"}, {"from": "g", "to": "m:in0"}, {"from": "t", "to": "m:in1"}, {"from": "m", "to": "n"}"#)
        let b = try graph(tone + #", {"id": "g", "type": "gain", "params": {"gain": -6, "mute": true}}, {"id": "m", "type": "mixer", "params": {"inputs": 2, "gains": [0, -3]}}, "# + sink,
                          #"{"from": "t", "to": "g"}, {"from": "g", "to": "m:in0"}, {"from": "t", "to": "m:in1"}, {"from": "m", "to": "n"}"#)
        let d = GraphDiff(from: a, to: b)
        XCTAssertTrue(d.isParameterOnly)
        XCTAssertEqual(d.kept, ["t", "g", "m", "n"])
        XCTAssertEqual(d.parameterChanges.map(\.address), ["g.gain", "g.mute", "m.gains[1]"])
        XCTAssertEqual(d.parameterChanges.map(\.value), [-6, 1, -3])
        XCTAssertEqual(ReloadReport(diff: d, swapped: false).description,
                       "reload: 3 parameters changed (g.gain, g.mute, m.gains), 4 kept")
    }

    func testANonLiveChangeReplacesTheNodeAndEverythingBelowIt() throws {
        let a = try graph(tone + #", {"id": "g", "type": "gain", "params": {"gain": 0}}, "# + sink,
                          #"{"from": "t", "to": "g"}, {"from": "g", "to": "n"}"#)
        // The tone's waveform is not live: t is made anew, and so are g and n below it.
        let b = try graph(tone.replacingOccurrences(of: #""frequency""#, with: #""waveform": "square", "frequency""#) + #", {"id": "g", "type": "gain", "params": {"gain": 0}}, "# + sink,
                          #"{"from": "t", "to": "g"}, {"from": "g", "to": "n"}"#)
        let d = GraphDiff(from: a, to: b)
        XCTAssertFalse(d.isParameterOnly)
        XCTAssertEqual(d.replaced, ["t", "g", "n"])
        XCTAssertEqual(d.kept, [])
    }

    func testAddedRemovedAndRewiredNodes() throws {
        let a = try graph(tone + #", {"id": "g", "type": "gain"}, "# + sink, #"{"from": "t", "to": "g"}, {"from": "g", "to": "n"}"#)
        let b = try graph(tone + #", {"id": "u", "type": "test-tone", "params": {"frequency": 300, "channels": 1}}, {"id": "m", "type": "mixer", "params": {"inputs": 2}}, "# + sink,
                          #"{"from": "t", "to": "m:in0"}, {"from": "u", "to": "m:in1"}, {"from": "m", "to": "n"}"#)
        let d = GraphDiff(from: a, to: b)
        XCTAssertEqual(d.kept, ["t"])
        XCTAssertEqual(d.added, ["u", "m"])
        XCTAssertEqual(d.replaced, ["n"], "its input changed")
        XCTAssertEqual(d.removed, ["g"])
        XCTAssertEqual(ReloadReport(diff: d, swapped: true).description,
                       "reload: 2 nodes added (u, m), 1 replaced (n), 1 removed (g), 1 kept")
    }

    func testTheReloadCommand() throws {
        XCTAssertEqual(try ControlLine.parse("reload"), .reload(file: nil))
        XCTAssertEqual(try ControlLine.parse(" reload other.json "), .reload(file: "other.json"))
        XCTAssertThrowsError(try ControlLine.parse("reload a b"))
    }

    /// An engine built with `EngineReuse` renders the kept tone on from its
    /// phase: the samples after the switch continue the sine exactly.
    func testAnEngineBuiltAroundKeptNodesContinuesThem() throws {
        let a = try graph(tone + ", " + sink, #"{"from": "t", "to": "n"}"#)
        let b = try graph(tone + #", {"id": "g", "type": "gain", "params": {"gain": -6.0206}}, "# + sink,
                          #"{"from": "t", "to": "g"}, {"from": "g", "to": "n"}"#)
        let first = try GraphCompiler.compile(a, maxFrames: 256)
        let d = GraphDiff(from: a, to: b)
        XCTAssertEqual(d.kept, ["t"])
        let second = try GraphCompiler.compile(b, maxFrames: 256, keeping: (first, d.kept))
        XCTAssertTrue(second.engine.node("t") === first.engine.node("t"), "the same object")
        XCTAssertFalse(second.engine.node("n") === first.engine.node("n"))
        var samples: [Float] = []
        for _ in 0..<10 {
            first.engine.render(frames: 256)
            let bus = first.engine.outputs[0]!
            samples += Array(UnsafeBufferPointer(start: bus.channel(0), count: 256))
        }
        for _ in 0..<10 {
            second.engine.render(frames: 256)
            let bus = second.engine.outputs[1]!
            samples += Array(UnsafeBufferPointer(start: bus.channel(0), count: 256)).map { $0 * 2 }
        }
        let c = 2 * cos(2 * Double.pi * 1000 / 48000)
        var worst = 0.0
        for n in 2..<samples.count {
            worst = max(worst, abs(Double(samples[n]) - c * Double(samples[n - 1]) + Double(samples[n - 2])))
        }
        XCTAssertLessThan(worst, 1e-3, "the kept tone's phase runs on across the engines")
        XCTAssertGreaterThan(SignalAnalysis.rms(samples.suffix(2560)), 0.1)
    }
}
