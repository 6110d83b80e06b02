import XCTest
import AudioGraph
import TestSupport

/// The render path allocates nothing: counted, not assumed.
final class RealtimeSafetyTests: XCTestCase {
    /// A graph with every realtime node type (`split` with one output
    /// unused; the processing nodes in a chain) and both background node
    /// types (their audio-thread halves run in the render call; their
    /// readers and writers run on the worker thread, which is not counted).
    func everyNodeGraph(directory: String) -> String {
        let waveforms = ["sine", "square", "saw", "white", "pink", "sweep", "impulse", "silence"]
        var nodes = waveforms.enumerated().map { i, w in
            #"{"id": "t\#(i)", "type": "test-tone", "params": {"waveform": "\#(w)", "frequency": \#(100 + 50 * i), "sweepTime": 1, "channels": \#(i % 2 + 1)}}"#
        }
        nodes += [
            #"{"id": "f", "type": "file", "params": {"path": "in.wav", "loop": true}}"#,
            #"{"id": "g", "type": "gain", "params": {"gain": -3}}"#,
            #"{"id": "m", "type": "mixer", "params": {"inputs": 9}}"#,
            #"{"id": "tag", "type": "format-tag", "params": {"layout": "binaural"}}"#,
            #"{"id": "out", "type": "file-out", "params": {"path": "out.wav"}}"#,
            #"{"id": "cap", "type": "capture"}"#,
            #"{"id": "nul", "type": "null"}"#,
            #"{"id": "sp", "type": "split", "params": {"groups": [1, 1]}}"#,
            #"{"id": "spg", "type": "gain"}"#,
            #"{"id": "nul2", "type": "null"}"#,
            // The processing nodes, in a chain off the mix: down to a
            // 44.1 kHz island and back, channel maps, time, tone, dynamics,
            // meters.
            #"{"id": "rsd", "type": "resample", "params": {"rate": 44100, "quality": "high"}}"#,
            #"{"id": "cm", "type": "channel-map", "params": {"channels": ["R", "L"]}}"#,
            #"{"id": "rsu", "type": "resample", "params": {"quality": "very-high"}}"#,
            #"{"id": "up", "type": "upmix", "params": {"layout": "5.1", "mode": "ltrt"}}"#,
            #"{"id": "dm", "type": "downmix", "params": {"layout": "stereo", "lfe": -10}}"#,
            #"{"id": "dl", "type": "delay", "params": {"ms": 3, "maxMs": 50}}"#,
            #"{"id": "fl", "type": "filter", "params": {"type": "peaking", "frequency": 1000, "q": 1, "gain": 3}}"#,
            #"{"id": "lim", "type": "limiter", "params": {"ceiling": -3}}"#,
            #"{"id": "met", "type": "meter"}"#,
            #"{"id": "loud", "type": "loudness", "params": {"target": -23, "normalize": "follow"}}"#,
            #"{"id": "nul3", "type": "null"}"#,
        ]
        var links = (0..<8).map { #"{"from": "t\#($0)", "to": "m:in\#($0)"}"# }
        links += [#"{"from": "f", "to": "g"}"#, #"{"from": "g", "to": "m:in8"}"#, #"{"from": "m", "to": "tag"}"#,
                  #"{"from": "tag", "to": "out"}"#, #"{"from": "tag", "to": "cap"}"#, #"{"from": "t0", "to": "nul"}"#,
                  #"{"from": "tag", "to": "sp"}"#, #"{"from": "sp:out1", "to": "spg"}"#, #"{"from": "spg", "to": "nul2"}"#,
                  #"{"from": "m", "to": "rsd"}"#, #"{"from": "rsd", "to": "cm"}"#, #"{"from": "cm", "to": "rsu"}"#,
                  #"{"from": "rsu", "to": "up"}"#, #"{"from": "up", "to": "dm"}"#, #"{"from": "dm", "to": "dl"}"#,
                  #"{"from": "dl", "to": "fl"}"#, #"{"from": "fl", "to": "lim"}"#, #"{"from": "lim", "to": "met"}"#,
                  #"{"from": "met", "to": "loud"}"#, #"{"from": "loud", "to": "nul3"}"#]
        return #"{"format": "agraph/1", "nodes": [\#(nodes.joined(separator: ",\n"))], "links": [\#(links.joined(separator: ",\n"))]}"#
    }

    func testRenderAllocatesNothingAcrossTenThousandBlocks() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let dir = try TemporaryDirectory()
        // A 0.3 s stereo file for the `file` node to loop over.
        let compiledSource = try GraphCompiler.compile(TestGraph.validate(
            #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"duration": 0.3}}, {"id": "o", "type": "file-out", "params": {"path": "in.wav"}}], "links": [{"from": "t", "to": "o"}]}"#,
            directory: dir.path), maxFrames: 512)
        XCTAssertTrue(OfflineRenderer(engine: compiledSource.engine).run().finishErrors.isEmpty)

        let store = CaptureStore(capacityFrames: 1024)
        let g = try TestGraph.validate(everyNodeGraph(directory: dir.path), stores: ["main": store], directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 256)
        let engine = compiled.engine
        engine.worker.start()
        // Warm-up: the Swift runtime instantiates metadata on first use.
        engine.worker.waitUntilReady(frames: 256)
        engine.render(frames: 256)

        let changes = try [("g.gain", -6.0), ("m.gains[3]", -1), ("m.mutes[2]", 1), ("t0.frequency", 300),
                           ("t1.level", -20), ("m.outputGain", -2), ("dl.ms", 7), ("fl.frequency", 2500), ("fl.gain", -4),
                           ("lim.ceiling", -6), ("lim.release", 300), ("loud.rate", 6), ("loud.ceiling", -2)]
            .map { try compiled.change($0.0, $0.1) }
        let sizes = [64, 256, 100, 1]    // block sizes vary, as after jack_bufsize
        let before = engine.framePosition
        let allocations = MallocCounter.countRendering(engine, sizes: sizes, changes: changes)
        engine.worker.stop()
        XCTAssertTrue(engine.worker.finishJobs().isEmpty)
        XCTAssertEqual(engine.framePosition - before, 2500 * sizes.reduce(0, +), "10,000 blocks rendered")
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks")
        XCTAssertGreaterThan(engine.framePosition, 1_000_000)
    }

    /// An allocation before a pause of the count (`endThread` …
    /// `beginThread`, as the tests do around posting changes) is still
    /// counted: the stretches add up.
    func testCounterSumsEveryCountedStretch() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let n = MallocCounter.count {
            let p = UnsafeMutablePointer<Int>.allocate(capacity: 16)
            p.deallocate()
            MallocCounter.endThread()
            MallocCounter.beginThread()
        }
        XCTAssertGreaterThanOrEqual(n, 1, "the allocation before the pause counts")
    }

    /// The counter itself works: a render path that allocated would be caught.
    func testCounterCatchesAnAllocation() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        final class Allocating: RenderNode {
            var kept: [[Float]] = []
            func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {}
            func render(frames: Int) { kept.append([Float](repeating: 0, count: frames)) }
        }
        let engine = try Engine(steps: [.init(id: "a", node: Allocating(), inputs: [], outputChannels: nil)],
                                sampleRate: 48000, maxFrames: 64)
        engine.render(frames: 64)
        XCTAssertGreaterThan(MallocCounter.count { engine.render(frames: 64) }, 0)
    }

    /// The live cycle's prefetch lists one address per cache line of each
    /// region, in order, each line once, a long region only up to its limit.
    func testHotLinesAreEachLineOnceInOrder() throws {
        let a = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 64)
        let b = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 64)
        defer { a.deallocate(); b.deallocate() }
        let lines = Engine.lineAddresses([
            UnsafeRawBufferPointer(start: a + 8, count: 100),   // lines 0 and 1 of a
            UnsafeRawBufferPointer(start: a, count: 512),       // lines 0…7 of a: 2…7 are new
            UnsafeRawBufferPointer(start: b, count: 4096),      // the first hotRegionLimit bytes
        ]).map { UInt(bitPattern: $0) }
        let base = UInt(bitPattern: a), other = UInt(bitPattern: b)
        XCTAssertEqual(lines, (0..<8).map { base + UInt($0) * 64 } + (0..<Engine.hotRegionLimit / 64).map { other + UInt($0) * 64 })
    }

    /// A node's declared hot memory and its object are in the engine's
    /// prefetch list; prefetching allocates nothing and changes nothing.
    func testPrefetchCoversTheNodesHotMemoryAndAllocatesNothing() throws {
        final class Plain: RenderNode {
            func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {}
            func render(frames: Int) {}
        }
        final class Hot: RenderNode {
            let table = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 64)
            deinit { table.deallocate() }
            func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {}
            func render(frames: Int) {}
            var hotMemory: [UnsafeRawBufferPointer] { [UnsafeRawBufferPointer(start: table, count: 1024)] }
        }
        let plain = try Engine(steps: [.init(id: "a", node: Plain(), inputs: [], outputChannels: nil)], sampleRate: 48000, maxFrames: 64)
        let hot = try Engine(steps: [.init(id: "a", node: Hot(), inputs: [], outputChannels: nil)], sampleRate: 48000, maxFrames: 64)
        // The schedule, the (empty) pool's layouts and states, the object:
        // the same for both, give or take the object straddling a line.
        XCTAssertGreaterThanOrEqual(plain.hotLineTotal, 2)
        XCTAssertTrue((15...17).contains(hot.hotLineTotal - plain.hotLineTotal),
                      "the node's 1 KiB table: 16 lines (got \(hot.hotLineTotal - plain.hotLineTotal))")
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        hot.prefetchHotMemory()
        XCTAssertEqual(MallocCounter.count { for _ in 0..<10_000 { hot.prefetchHotMemory() } }, 0)
    }

    /// Prefetching ahead while rendering (as live) changes no sample and
    /// allocates nothing: the 8-tone graph renders the same with a
    /// prefetch distance of 0, 1 and more steps than the schedule has.
    func testRenderingWithPrefetchAheadGivesTheSameSamples() throws {
        let tones = (0..<8).map { #"{"id": "t\#($0)", "type": "test-tone", "params": {"frequency": \#(200 + 100 * $0), "channels": 2}}"# }
        let links = (0..<8).map { #"{"from": "t\#($0)", "to": "m:in\#($0)"}"# } + [#"{"from": "m", "to": "cap"}"#]
        let json = #"{"format": "agraph/1", "nodes": [\#(tones.joined(separator: ",")), {"id": "m", "type": "mixer", "params": {"inputs": 8}}, {"id": "cap", "type": "capture"}], "links": [\#(links.joined(separator: ","))]}"#
        func render(distance: Int) throws -> [[Float]] {
            let store = CaptureStore(capacityFrames: 48000)
            let compiled = try GraphCompiler.compile(TestGraph.validate(json, stores: ["main": store]), maxFrames: 256)
            compiled.engine.prefetchDistance = distance
            for size in [128, 256, 7, 128] {
                compiled.engine.prefetchHotMemory()
                compiled.engine.render(frames: size)
            }
            if distance == 1 && MallocCounter.isAvailable {
                let n = MallocCounter.count {
                    for _ in 0..<2000 {
                        compiled.engine.prefetchHotMemory()
                        compiled.engine.render(frames: 128)
                    }
                }
                XCTAssertEqual(n, 0, "allocations while prefetching ahead")
            }
            return (0..<2).map { Array(store.samples($0).prefix(519)) }
        }
        let plain = try render(distance: 0)
        XCTAssertEqual(plain.map(\.count), [519, 519])
        XCTAssertGreaterThan(plain[0].map(abs).max() ?? 0, 0.1, "the tones reach the capture")
        XCTAssertEqual(try render(distance: 1), plain)
        XCTAssertEqual(try render(distance: 50), plain)
    }
}
