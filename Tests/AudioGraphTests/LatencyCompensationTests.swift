import AudioGraph
import TestSupport
import XCTest

/// Paths of different latency meet in a mixer: the engine delays the
/// shorter one so that they come out aligned sample for sample, unless the
/// graph says `"latencyCompensation": false`.
final class LatencyCompensationTests: XCTestCase {
    static func graph(delay: Int, compensation: Bool?) -> String {
        let key = compensation.map { #""latencyCompensation": \#($0), "# } ?? ""
        return """
            {"format": "agraph/1", \(key)"nodes": [
              {"id": "src", "type": "test-tone", "params": {"waveform": "white", "channels": 1, "level": -6}},
              {"id": "late", "type": "fixed-latency", "params": {"frames": \(delay)}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "cap", "type": "capture", "params": {"store": "mix"}},
              {"id": "ref", "type": "capture", "params": {"store": "ref"}}],
             "links": [{"from": "src", "to": "late"}, {"from": "late", "to": "mix:in0"},
                       {"from": "src", "to": "mix:in1"}, {"from": "mix", "to": "cap"}, {"from": "src", "to": "ref"}]}
            """
    }

    /// Renders `frames` frames in blocks of `block`; returns the mix, the
    /// source and the engine.
    func render(_ json: String, frames: Int, block: Int) throws -> (mix: [Float], ref: [Float], engine: Engine) {
        let mix = CaptureStore(capacityFrames: frames + block), ref = CaptureStore(capacityFrames: frames + block)
        let g = try GraphValidator(registry: TestGraph.registryWithLatency(["mix": mix, "ref": ref]))
            .validate(bytes: Array(json.utf8), file: "inline.json", directory: "/tmp").get()
        let compiled = try GraphCompiler.compile(g, maxFrames: block)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: frames)
        return (mix.samples(0), ref.samples(0), compiled.engine)
    }

    func testShorterPathIsDelayedSoBothArriveAlignedSampleForSample() throws {
        for (delay, block) in [(100, 64), (100, 1024), (1, 7), (3000, 256)] {
            let (mix, ref, engine) = try render(Self.graph(delay: delay, compensation: nil), frames: 12_000, block: block)
            XCTAssertEqual(mix.count, 12_000)
            // Both inputs carry the source `delay` frames late: the sum is twice it.
            for t in 0..<mix.count {
                let expected: Float = t < delay ? 0 : 2 * ref[t - delay]
                if mix[t] != expected {
                    return XCTFail("delay \(delay), block \(block): frame \(t) is \(mix[t]), expected \(expected)")
                }
            }
            XCTAssertTrue(engine.latencyCompensation)
            let latencies = Dictionary(uniqueKeysWithValues: zip(engine.ids, engine.latencies))
            XCTAssertEqual(latencies["mix"], delay, "the aligned total")
            XCTAssertEqual(latencies["src"], 0)
            XCTAssertEqual(engine.compensationDelays.map { "\($0.node):\($0.port)=\($0.frames)" }, ["mix:1=\(delay)"])
        }
    }

    /// The delay lines allocate nothing on the render path.
    func testDelayLinesAllocateNothingWhenRendering() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let mix = CaptureStore(capacityFrames: 1024), ref = CaptureStore(capacityFrames: 1024)
        let g = try GraphValidator(registry: TestGraph.registryWithLatency(["mix": mix, "ref": ref]))
            .validate(bytes: Array(Self.graph(delay: 300, compensation: nil).utf8),
                      file: "inline.json", directory: "/tmp").get()
        let engine = try GraphCompiler.compile(g, maxFrames: 256).engine
        XCTAssertEqual(engine.compensationDelays.count, 1)
        engine.render(frames: 256)
        let sizes = [64, 256, 100, 1]
        let allocations = MallocCounter.count {
            for i in 0..<10_000 { engine.render(frames: sizes[i % 4]) }
        }
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks")
    }

    func testWithoutCompensationThePathsStayMisaligned() throws {
        let (mix, ref, engine) = try render(Self.graph(delay: 100, compensation: false), frames: 4800, block: 64)
        XCTAssertFalse(engine.latencyCompensation)
        XCTAssertTrue(engine.compensationDelays.isEmpty)
        // The direct path arrives at once, the other 100 frames late.
        for t in 0..<mix.count {
            let expected = ref[t] + (t < 100 ? 0 : ref[t - 100])
            if mix[t] != expected { return XCTFail("frame \(t) is \(mix[t]), expected \(expected)") }
        }
        XCTAssertNotEqual(Array(mix[100..<4800]), (100..<4800).map { 2 * ref[$0 - 100] })
    }

    func testEqualPathsGetNoDelayLine() throws {
        let (mix, ref, engine) = try render(Self.graph(delay: 0, compensation: true), frames: 2048, block: 256)
        XCTAssertTrue(engine.compensationDelays.isEmpty, "nothing to align")
        XCTAssertEqual(mix, ref.map { 2 * $0 })
    }

    func testAStreamThatEndsKeepsItsDelayedTail() throws {
        let store = CaptureStore(capacityFrames: 8192)
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": {"waveform": "sine", "channels": 1, "duration": 0.01}},
              {"id": "b", "type": "test-tone", "params": {"waveform": "sine", "channels": 1, "duration": 0.01}},
              {"id": "late", "type": "fixed-latency", "params": {"frames": 100}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "late"}, {"from": "late", "to": "mix:in0"},
                       {"from": "b", "to": "mix:in1"}, {"from": "mix", "to": "cap"}]}
            """
        let g = try GraphValidator(registry: TestGraph.registryWithLatency(["main": store]))
            .validate(bytes: Array(json.utf8), file: "inline.json", directory: "/tmp").get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 64)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 4800)
        // b (480 frames) is delayed by 100: its last frames reach the mix.
        let s = store.samples(0)
        XCTAssertGreaterThanOrEqual(s.count, 580, "the delayed tail is rendered")
        XCTAssertTrue(store.ended)
    }

    func testTheKeyIsValidated() throws {
        let bad = #"{"format": "agraph/1", "latencyCompensation": "yes", "nodes": [{"id": "t", "type": "test-tone"}, {"id": "c", "type": "capture"}], "links": [{"from": "t", "to": "c"}]}"#
        let stores = ["main": CaptureStore(capacityFrames: 16)]
        XCTAssertThrowsError(try TestGraph.validate(bad, stores: stores)) { error in
            XCTAssertTrue("\(error)".contains("\"latencyCompensation\" must be true"), "\(error)")
        }
        let off = try TestGraph.validate(bad.replacingOccurrences(of: "\"yes\"", with: "false"), stores: stores)
        XCTAssertFalse(off.latencyCompensation)
        let byDefault = try TestGraph.validate(bad.replacingOccurrences(of: #""latencyCompensation": "yes", "#, with: ""), stores: stores)
        XCTAssertTrue(byDefault.latencyCompensation)
    }

    /// A file source's ring is prefetch: it adds no latency.
    func testAFileSourceReportsNoLatency() throws {
        let dir = try TemporaryDirectory()
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: [Float](repeating: 0.5, count: 4800))
        let g = try TestGraph.validate(TestGraph.single("file", #"{"path": "in.wav"}"#), stores: ["main": CaptureStore(capacityFrames: 16)],
                                       directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 256, live: true)
        if let job = compiled.engine.node("src")?.backgroundJob as? FillTargeting { job.setTargetFill(frames: 512) }
        XCTAssertEqual(compiled.engine.latencies, [0, 0])
    }
}
