import XCTest
import AudioGraph
import AudioGraphPlugins
import CAGraphPlugin
import TestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The decoder plugin written on AGraphPluginKit (Plugins/PCMFramesPlugin),
/// through the host like the DAA plugin: a test-only `pcm-frame-source`
/// feeds it frames whose PCM encodes each sample's position, so every
/// output sample can be checked. Decode, priming and drain, seek, bad and
/// fatal frames, the output route and latency (host extensions),
/// the log, and the host's realtime log queue.
final class PCMFramesTests: XCTestCase {
    static let typeID = "com.audiograph.pcm-frames"
    /// A folder for the graphs; AGRAPH_PLUGIN_PATH unset: the plugin comes from the build folder.
    var folder: PluginFolder!

    override func setUpWithError() throws {
        folder = try PluginFolder("agraph-pcm-frames", asPluginPath: false)
        _ = try BuiltPlugins.path("libAGraphPCMFramesPlugin.so")
        _ = PluginLog.drain()
    }

    override func tearDown() {
        folder = nil
    }

    /// The sample at position `n` of the source's stream (left; right is its negation).
    static func expected(_ n: Int) -> Float { Float((n % 20_000) - 10_000) / 32768 }

    func graph(source: String = "", decoder: String = "") -> String {
        #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "src", "type": "pcm-frame-source", "params": {\#(source)}},
                   {"id": "dec", "type": "\#(Self.typeID)", "params": {\#(decoder)}},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "cap"}]}
        """#
    }

    func compile(_ json: String, _ store: CaptureStore, maxFrames: Int = 256) throws -> CompiledGraph {
        let (registry, report) = TestGraph.pluginRegistry(["main": store], adding: [PCMFrameSourceType()])
        XCTAssertNotNil(registry[Self.typeID], report.note)
        let g = try folder.validate(json, registry).get()
        return try GraphCompiler.compile(g, maxFrames: maxFrames)
    }

    func checkSamples(_ store: CaptureStore, from start: Int, offset: Int = 0, count: Int, file: StaticString = #filePath, line: UInt = #line) {
        let left = store.samples(0), right = store.samples(1)
        for i in 0..<count {
            let n = start + i
            guard left[offset + i] == Self.expected(n), right[offset + i] == -Self.expected(n) else {
                return XCTFail("output \(offset + i): \(left[offset + i]), \(right[offset + i]); expected sample \(n) = \(Self.expected(n))", file: file, line: line)
            }
        }
    }

    // MARK: - Decoding

    func testDecodesEverySampleExactlyAndDrainsWhatThePrimingHeldBack() throws {
        for priming in [0, 1500, 8192] {
            let store = CaptureStore(capacityFrames: 40_000)
            let compiled = try compile(graph(source: #""frames": 20, "samplesPerFrame": 1000"#, decoder: #""priming": \#(priming)"#), store)
            let result = OfflineRenderer(engine: compiled.engine).run()
            XCTAssertEqual(result.finishErrors, [])
            XCTAssertEqual(store.frames, 20_000, "priming \(priming): every sample, the held-back ones given back by the drain")
            checkSamples(store, from: 0, count: 20_000)
        }
    }

    func testMonoFramesAreDoubledAndTheLayoutComesFromTheParameter() throws {
        let registry = TestGraph.pluginRegistry(["main": CaptureStore(capacityFrames: 16)], adding: [PCMFrameSourceType()]).registry
        let g = try folder.validate(graph(decoder: #""layout": "binaural""#), registry).get()
        XCTAssertEqual(g.node("dec")?.outputFormat, StreamFormat(channels: 2, sampleRate: 48000, layout: .binaural))
        let store = CaptureStore(capacityFrames: 8000)
        _ = OfflineRenderer(engine: try compile(graph(source: #""frames": 4, "channels": 1"#), store).engine).run()
        XCTAssertEqual(store.frames, 4000)
        XCTAssertEqual(store.samples(0), store.samples(1), "mono on both channels")
    }

    func testSeekLandsOnTheExactSample() throws {
        let store = CaptureStore(capacityFrames: 40_000)
        let compiled = try compile(graph(source: #""frames": 20, "samplesPerFrame": 1000, "independentEvery": 4"#,
                                         decoder: #""priming": 700"#), store)
        let node = try XCTUnwrap(compiled.engine.node("dec") as? SeekableNode)
        XCTAssertTrue(node.seek(toFrame: 5500), "from frame 4 (independent), 1500 samples discarded")
        _ = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(store.frames, 20_000 - 5500)
        checkSamples(store, from: 5500, count: 20_000 - 5500)
    }

    // MARK: - Errors

    func testACorruptFrameIsCountedPlayedAsSilenceAndLoggedInTheDecodersWords() throws {
        let store = CaptureStore(capacityFrames: 40_000)
        let compiled = try compile(graph(source: #""frames": 10, "samplesPerFrame": 1000, "badFrame": 3"#), store)
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors, [], "a bad frame is not an error")
        XCTAssertEqual(store.frames, 10_000, "the stream keeps its length")
        checkSamples(store, from: 0, count: 3000)
        XCTAssertEqual(Array(store.samples(0)[3000..<4000]), [Float](repeating: 0, count: 1000), "silence for the bad frame")
        checkSamples(store, from: 4000, offset: 4000, count: 6000)
        let log = PluginLog.drain()
        XCTAssertTrue(log.contains("node 'dec' (\(Self.typeID)): warning: frame 4: 12 bytes for 1000 samples × 2 channels"), "\(log)")
    }

    func testAStreamWithMoreChannelsThanTheOutputStopsTheNodeWithTheReason() throws {
        let store = CaptureStore(capacityFrames: 40_000)
        let compiled = try compile(graph(source: #""frames": 10, "channels": 3"#), store)
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors.count, 1)
        let message = result.finishErrors.first ?? ""
        XCTAssertTrue(message.contains("node 'dec'") && message.contains("the stream changed to 3 channels; this node outputs 2"), message)
    }

    // MARK: - Output route and latency (host extensions)

    /// The host tells the node the route (`OutputRouteAware`, main thread);
    /// the plugin delays the speakers route, reports the new latency through
    /// agraph.latency/1 (the host's `onLatencyChange`) and applies the
    /// change from the next frame.
    func testTheRouteReachesThePluginWhichReportsItsLatencyChange() throws {
        let store = CaptureStore(capacityFrames: 40_000)
        let compiled = try compile(graph(source: #""frames": 10, "samplesPerFrame": 1000"#, decoder: #""speakerDelay": 480"#), store)
        let node = try XCTUnwrap(compiled.engine.node("dec"))
        let aware = try XCTUnwrap(node as? OutputRouteAware, "plugin decoder nodes are OutputRouteAware")
        let notifying = try XCTUnwrap(node as? LatencyChangeNotifying, "and LatencyChangeNotifying")
        var changes = 0
        notifying.onLatencyChange = { changes += 1 }
        XCTAssertEqual(node.latency, 0)
        aware.outputRouteChanged(.speakers)
        XCTAssertEqual(changes, 1, "the plugin said its latency changed")
        XCTAssertEqual(node.latency, 480)
        aware.outputRouteChanged(.unknown)
        XCTAssertEqual(changes, 2)
        XCTAssertEqual(node.latency, 0)
        aware.outputRouteChanged(.headphones)
        XCTAssertEqual(changes, 2, "no delay on headphones either: nothing changed")
        aware.outputRouteChanged(.speakers)
        _ = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(store.frames, 10_000 + 480, "480 samples of delay, then the whole stream")
        XCTAssertEqual(Array(store.samples(0)[0..<480]), [Float](repeating: 0, count: 480))
        checkSamples(store, from: 0, offset: 480, count: 10_000)
    }

    func testPluginRenderNodesAreRouteAwareToo() throws {
        let catalog = PluginCatalog.load(pluginPath: [], buildFolders: [BuiltPlugins.folder])
        let type = try XCTUnwrap(catalog.types.first { $0.descriptor.typeID == "com.example.ring-modulator" })
        var registry = TestGraph.registry(["main": CaptureStore(capacityFrames: 16)])
        registry.register(type)
        let json = #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "tone", "type": "test-tone"}, {"id": "rm", "type": "com.example.ring-modulator"}, {"id": "cap", "type": "capture"}],
         "links": [{"from": "tone", "to": "rm"}, {"from": "rm", "to": "cap"}]}
        """#
        let g = try TestGraph.validate(json, registry: registry, directory: "/tmp").get()
        let node = try XCTUnwrap(try GraphCompiler.compile(g, maxFrames: 64).engine.node("rm"))
        XCTAssertNotNil(node as? OutputRouteAware)
        XCTAssertNotNil(node as? LatencyChangeNotifying)
        (node as? OutputRouteAware)?.outputRouteChanged(.speakers)   // the kit forwards it; the example ignores it
    }

    // MARK: - The host table

    /// agraph.log/1's `log_rt` from a thread marked audio: no allocation,
    /// messages kept in order, the overflow counted; `log` from the audio
    /// thread is a violation, counted and queued instead.
    func testTheRealtimeLogQueuesWithoutAllocatingAndTheHostDrainsIt() throws {
        let host = PluginHost(nodeID: "n", typeID: "t")
        nonisolated(unsafe) let table = UnsafePointer(host.table)
        let ext = try XCTUnwrap(table.pointee.get_extension?(table, AGRAPH_HOST_EXT_LOG) ?? nil)
            .assumingMemoryBound(to: agraph_host_log_t.self).pointee
        nonisolated(unsafe) let check = try XCTUnwrap(table.pointee.get_extension?(table, AGRAPH_HOST_EXT_THREAD_CHECK) ?? nil)
            .assumingMemoryBound(to: agraph_host_thread_check_t.self).pointee
        XCTAssertNil(table.pointee.get_extension?(table, "agraph.unknown/1") ?? nil)
        XCTAssertEqual(check.is_main_thread?(table), 1)
        nonisolated(unsafe) let message = strdup("clipped")!
        defer { free(message) }
        nonisolated(unsafe) let logRT = ext.log_rt!, log = ext.log!
        nonisolated(unsafe) var allocations = -1
        nonisolated(unsafe) var audio: Int32 = 0
        let thread = Thread {
            ThreadRole.mark(.audio)
            audio = check.is_audio_thread!(table)
            logRT(table, Int32(AGRAPH_LOG_WARNING.rawValue), message)   // warm-up
            allocations = MallocCounter.isAvailable ? MallocCounter.count {
                var i = 0
                while i < 100 { logRT(table, Int32(AGRAPH_LOG_WARNING.rawValue), message); i += 1 }
            } : 0
            log(table, Int32(AGRAPH_LOG_INFO.rawValue), message)
            ThreadRole.mark(nil)
        }
        thread.start()
        while !thread.isFinished { usleep(1000) }
        XCTAssertEqual(audio, 1, "thread-check answers from ThreadRole")
        XCTAssertEqual(allocations, 0, "log_rt allocates nothing")
        let lines = PluginLog.drain()
        XCTAssertEqual(lines.filter { $0 == "node 'n' (t): warning: clipped" }.count, 64, "the queue holds 64 messages")
        XCTAssertTrue(lines.contains("node 'n' (t): 38 audio-thread messages dropped (queue full)"), "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("called agraph.log/1 `log` on the audio thread 1 time") }, "\(lines)")
    }
}

// MARK: - A test-only source of pcm-frames

/// `pcm-frame-source`: emits `frames` frames of codec "pcm-frames" whose
/// PCM encodes each sample's position (`PCMFramesTests.expected`); frame
/// `badFrame` is cut short; every `independentEvery`-th frame is a seek point.
struct PCMFrameSourceType: NodeType {
    let descriptor = NodeDescriptor(
        typeID: "pcm-frame-source", role: .source, summary: "pcm-frames for tests.", inputs: .none,
        parameters: [
            .init("frames", .integer, range: 1...10_000, default: .number(20), "Frames."),
            .init("samplesPerFrame", .integer, range: 1...8192, default: .number(1000), "Samples per frame."),
            .init("channels", .integer, range: 1...8, default: .number(2), "Channels in each frame."),
            .init("badFrame", .integer, range: -1...10_000, default: .number(-1), "A frame cut short (-1: none)."),
            .init("independentEvery", .integer, range: 1...100, default: .number(1), "Seek points."),
        ],
        domain: .background, origin: "PCMFramesTests")

    func resolve(_ c: ResolveContext) -> StreamFormat? { .frames(codec: "pcm-frames", sampleRate: c.sampleRate) }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        let p = c.parameters
        return PCMFrameSourceNode(frames: p.integer("frames") ?? 20, samplesPerFrame: p.integer("samplesPerFrame") ?? 1000,
                                  channels: p.integer("channels") ?? 2, badFrame: p.integer("badFrame") ?? -1,
                                  independentEvery: p.integer("independentEvery") ?? 1, sampleRate: c.sampleRate)
    }
}

final class PCMFrameSourceNode: RenderNode, CompressedFrameSource, @unchecked Sendable {
    let frames: [[UInt8]]
    let samplesPerFrame: Int
    let independentEvery: Int
    let sampleRate: Double
    var output: AudioBus?

    init(frames count: Int, samplesPerFrame: Int, channels: Int, badFrame: Int, independentEvery: Int, sampleRate: Double) {
        self.samplesPerFrame = samplesPerFrame
        self.independentEvery = independentEvery
        self.sampleRate = sampleRate
        frames = (0..<count).map { f in
            var bytes: [UInt8] = [0x50, 0x43, 0x4D, 0x46, UInt8(channels), 0,
                                  UInt8(samplesPerFrame & 0xFF), UInt8(samplesPerFrame >> 8)]
            for i in 0..<samplesPerFrame {
                let v = Int16((f * samplesPerFrame + i) % 20_000 - 10_000)
                for c in 0..<channels {
                    let s = UInt16(bitPattern: c % 2 == 0 ? v : -v)
                    bytes += [UInt8(s & 0xFF), UInt8(s >> 8)]
                }
            }
            return f == badFrame ? Array(bytes.prefix(12)) : bytes
        }
    }

    var codec: String { "pcm-frames" }
    func makeCursor() throws -> any CompressedFrameCursor { Cursor(self) }
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }
    func render(frames: Int) { output?.state = BusState(validFrames: frames, ended: false) }

    final class Cursor: CompressedFrameCursor {
        let source: PCMFrameSourceNode
        var position = 0
        init(_ source: PCMFrameSourceNode) { self.source = source }
        func next() -> CompressedFrame? {
            guard position < source.frames.count else { return nil }
            defer { position += 1 }
            return CompressedFrame(bytes: source.frames[position][...], index: position,
                                   timestamp: position * source.samplesPerFrame, samplesPerFrame: source.samplesPerFrame,
                                   sampleRate: source.sampleRate, isIndependent: position % source.independentEvery == 0)
        }
        func seek(toSample sample: Int) -> Int? {
            let frame = sample / source.samplesPerFrame
            guard sample >= 0, frame < source.frames.count else { return nil }
            position = frame - frame % source.independentEvery
            return position * source.samplesPerFrame
        }
    }
}
