import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// Renders `json` (its `capture` node records into "main", another may
/// record into "ref") block by block for `frames` frames, posting each
/// change when its frame is reached.
func renderLive(_ json: String, frames: Int, block: Int,
                changes: [(frame: Int, address: String, value: Double)] = []) throws -> (samples: [[Float]], compiled: CompiledGraph, reference: [[Float]]) {
    let store = CaptureStore(capacityFrames: frames + block), ref = CaptureStore(capacityFrames: frames + block)
    let compiled = try GraphCompiler.compile(TestGraph.validate(json, stores: ["main": store, "ref": ref]), maxFrames: block)
    var pending = changes.sorted { $0.frame < $1.frame }
    var done = 0
    while done < frames {
        while let c = pending.first, c.frame <= done {
            XCTAssertTrue(compiled.engine.post(try compiled.change(c.address, c.value)))
            pending.removeFirst()
        }
        var n = min(block, frames - done)
        if let next = pending.first, next.frame > done { n = min(n, next.frame - done) }
        compiled.engine.render(frames: n)
        done += n
    }
    return ((0..<store.channels.count).map { store.samples($0) }, compiled, (0..<ref.channels.count).map { ref.samples($0) })
}

final class DelayTests: XCTestCase {
    static func impulseGraph(_ params: String, rate: Int = 48000, duration: Double? = nil) -> String {
        let d = duration.map { #", "duration": \#($0)"# } ?? ""
        return """
            {"format": "agraph/1", "sampleRate": \(rate), "nodes": [
              {"id": "src", "type": "test-tone", "params": {"waveform": "impulse", "interval": 0, "level": 0, "channels": 2\(d)}},
              {"id": "d", "type": "delay", "params": \(params)},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "d"}, {"from": "d", "to": "cap"}]}
            """
    }

    /// Where the single non-zero sample is, or nil when there is not exactly one.
    func impulsePosition(_ x: [Float]) -> Int? {
        let nonZero = x.indices.filter { x[$0] != 0 }
        return nonZero.count == 1 && x[nonZero[0]] == 1 ? nonZero[0] : nil
    }

    func testAnImpulseMovesByExactlyTheSetSamples() throws {
        for (delay, block) in [(0, 64), (1, 64), (1234, 256), (4800, 1000), (47_999, 512), (300, 1)] {
            let (out, compiled, _) = try renderLive(Self.impulseGraph(#"{"samples": \#(delay)}"#), frames: 50_000, block: block)
            XCTAssertEqual(out.count, 2)
            for c in 0..<2 { XCTAssertEqual(impulsePosition(out[c]), delay, "delay \(delay), block \(block), channel \(c)") }
            let latencies = Dictionary(uniqueKeysWithValues: zip(compiled.engine.ids, compiled.engine.latencies))
            XCTAssertEqual(latencies["d"], 0, "an intentional delay is not latency")
        }
    }

    func testMillisecondsRoundToTheNearestFrame() throws {
        for (ms, rate, expected) in [(12.5, 48000, 600), (12.5, 44100, 551), (0.01, 48000, 0), (100, 96000, 9600), (1.0 / 48, 48000, 1)] {
            let (out, _, _) = try renderLive(Self.impulseGraph(#"{"ms": \#(ms)}"#, rate: rate), frames: 12_000, block: 512)
            XCTAssertEqual(impulsePosition(out[0]), expected, "\(ms) ms at \(rate) Hz")
        }
    }

    func testTheStreamEndsWhenTheDelayedSignalHasComeOut() throws {
        let json = Self.impulseGraph(#"{"samples": 1000}"#, duration: 0.1)
        let out = try TestGraph.render(json, seconds: 2, blockFrames: 256)
        XCTAssertEqual(out[0].count, 4800 + 1000)
        XCTAssertEqual(impulsePosition(out[0]), 1000)
    }

    func testLiveChangesCrossfadeWithoutClicks() throws {
        // A 200 Hz sine at 0.5: a jump between two delays 300 frames apart
        // would step the output by up to 0.5·|sin(π·200·300/48000)|·2 ≈ 0.7.
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "src", "type": "test-tone", "params": {"frequency": 200, "level": -6.0206, "channels": 1}},
              {"id": "d", "type": "delay", "params": {"samples": 100, "maxMs": 100}},
              {"id": "cap", "type": "capture"},
              {"id": "ref", "type": "capture", "params": {"store": "ref"}}],
             "links": [{"from": "src", "to": "d"}, {"from": "d", "to": "cap"}, {"from": "src", "to": "ref"}]}
            """
        let changes: [(frame: Int, address: String, value: Double)] = [
            (10_000, "d.samples", 400), (10_300, "d.samples", 250), (20_000, "d.ms", 2), (30_000, "d.samples", 4800)]
        let (out, _, ref) = try renderLive(json, frames: 40_000, block: 128, changes: changes)
        let y = out[0], x = ref[0]
        XCTAssertEqual(SignalAnalysis.peak(x), 0.5, accuracy: 1e-3)
        // The largest step a 200 Hz sine at 0.5 makes, plus what a 20 ms
        // crossfade between two such sines can add.
        let bound = 0.5 * 2 * Double.pi * 200 / 48000 + 2 * 0.5 / 960 + 1e-4
        var largest = 0.0
        for i in 1..<y.count { largest = max(largest, Double(abs(y[i] - y[i - 1]))) }
        XCTAssertLessThanOrEqual(largest, bound, "no click: the largest step is \(largest)")
        // Between changes, the output is the input exactly that late.
        func assertDelay(_ d: Int, over range: Range<Int>, _ what: String) {
            for i in range where y[i] != x[i - d] {
                return XCTFail("\(what): frame \(i) is \(y[i]), the input \(d) frames earlier \(x[i - d])")
            }
        }
        assertDelay(100, over: 1000..<10_000, "before")
        // 400 then 250 during the first fade: the latest wins once it ends.
        assertDelay(250, over: 12_000..<20_000, "after two changes")
        assertDelay(96, over: 21_000..<30_000, "2 ms")
        assertDelay(4800, over: 31_000..<40_000, "at maxMs")
    }

    func testBadInputNamesTheJSONPointer() {
        let cases: [(String, String, String)] = [
            (#"{"samples": 10, "ms": 5}"#, "/nodes/1/params/ms", "not both"),
            (#"{}"#, "/nodes/1", "\"samples\" (frames) or \"ms\""),
            (#"{"ms": 500, "maxMs": 100}"#, "/nodes/1/params/ms", "raise maxMs"),
            (#"{"samples": 48000, "maxMs": 100}"#, "/nodes/1/params/samples", "raise maxMs"),
            (#"{"ms": -1}"#, "/nodes/1/params/ms", ""),
            (#"{"samples": 1.5}"#, "/nodes/1/params/samples", ""),
            (#"{"ms": 10, "maxMs": 70000}"#, "/nodes/1/params/maxMs", ""),
        ]
        for (params, pointer, words) in cases {
            let error = validationError(Self.impulseGraph(params))
            XCTAssertTrue(error.contains(pointer), "\(params): \(error)")
            XCTAssertTrue(words.isEmpty || error.contains(words), "\(params): \(error)")
        }
        XCTAssertEqual(validationError(Self.impulseGraph(#"{"ms": 3000}"#)), "", "maxMs defaults to the delay when it is longer than 1 s")
    }

    func testRenderAndLiveChangesAllocateNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone"}, {"id": "d", "type": "delay", "params": {"ms": 10, "maxMs": 200}}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "d"}, {"from": "d", "to": "o"}]}"#
        try assertRendersWithoutAllocating(json, changes: [("d.ms", 150), ("d.samples", 3), ("d.ms", 200), ("d.samples", 0)])
    }
}
