import XCTest
import AC4
import AudioGraph
import AudioGraphCore
import GraphFile
import AudioGraphPlugins
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// ac4 → daa → capture through the host (validation, compile, the worker
/// thread's decoder job, offline rendering), with the interface's test
/// double as the library. See DAATests for the PCM the double writes.
final class DAAGraphTests: XCTestCase {
    var environment: SavedEnvironment?
    var config: TemporaryDirectory!

    override func setUpWithError() throws {
        environment = SavedEnvironment(["TEST_DOUBLE_DAA_DELAY", "TEST_DOUBLE_DAA_REPORT_DELAY", "TEST_DOUBLE_DAA_FAIL", "DAA_LIBRARY",
                                        VendorLibraryLocations.environmentVariable, "XDG_CONFIG_HOME"])
        // The graphs name the double by its path in the build folder: trust
        // that folder for vendor libraries (and no user's config file).
        setenv(VendorLibraryLocations.environmentVariable, BuiltPlugins.folder, 1)
        config = try TemporaryDirectory("agraph-config")
        setenv("XDG_CONFIG_HOME", config.path, 1)
        try DAATests.requireFixtures()
        // The plugin keeps the library open for the process (one load per
        // path): start the double's call counts (which its injected failures
        // count on) from zero, as a fresh load would.
        try TestDoubleLibrary.ifLoaded(DAATests.doublePath)?.reset()
    }

    override func tearDown() {
        environment = nil
        config = nil
    }

    func graph(_ daaParams: String = "") -> String {
        let library = #""library": "\#(DAATests.doublePath)""#
        return #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "stream", "type": "ac4", "params": {"path": "\#(DAATests.channelCheckPath)"}},
                   {"id": "dec", "type": "daa", "params": {\#(library)\#(daaParams.isEmpty ? "" : ", " + daaParams)}},
                   {"id": "cap", "type": "capture", "params": {"store": "main"}}],
         "links": [{"from": "stream", "to": "dec"}, {"from": "dec", "to": "cap"}]}
        """#
    }

    func validate(_ json: String, _ store: CaptureStore) -> Result<ValidatedGraph, GraphErrors> {
        TestGraph.validate(json, registry: TestGraph.pluginRegistry(["main": store]).registry, directory: "/tmp")
    }

    static let total = 846 * 2048

    func testWholeFileDecodesSampleExactWithTheLatencyDropped() throws {
        let store = CaptureStore(capacityFrames: Self.total + 48_000)
        let g = try validate(graph(), store).get()
        XCTAssertEqual(g.node("dec")?.outputFormat, StreamFormat(channels: 2, sampleRate: 48000, layout: .binaural),
                       "auto → headphones with the virtualizer: binaural")
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.ending, .endOfStream)
        XCTAssertEqual(result.finishErrors, [])
        XCTAssertEqual(store.frames, Self.total, "846 frames × 2048 samples, drained at the end")
        let left = store.samples(0), right = store.samples(1)
        XCTAssertEqual(left.first, 1020.0 / 1024.0 + 511.0 / 1_048_576.0, "sample 0 = the first frame's sample 0")
        for (i, f) in DAATests.frames.enumerated() {
            let a = i * 2048, b = a + 2047
            guard b < left.count else { return XCTFail("output ends in frame \(i)") }
            if DAATests.sequence(left[a]) != f.sequence || DAATests.sequence(left[b]) != f.sequence {
                return XCTFail("frame \(i): samples \(a)…\(b) encode \(DAATests.sequence(left[a]))…\(DAATests.sequence(left[b])), expected \(f.sequence)")
            }
        }
        XCTAssertEqual(DAATests.parameters(right[0]), DAATests.Parameters())
    }

    /// A library error that stops decoding reaches the user in the decoder's
    /// words through the host, with the node and the frame; corrupt frames
    /// are counted and played as silence, and rendering goes on.
    func testDecoderErrorsReachTheUserThroughTheHost() throws {
        setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_process:1004:5", 1)   // 1004 internal buffer: fatal
        let store = CaptureStore(capacityFrames: Self.total + 48_000)
        var compiled = try GraphCompiler.compile(try validate(graph(), store).get(), maxFrames: 512)
        var result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors.count, 1)
        let message = result.finishErrors.first ?? ""
        XCTAssertTrue(message.contains("node 'dec'") && message.contains("DAA error 1004"), message)
        XCTAssertLessThan(store.frames, 10 * 2048, "decoding stopped at the failing frame")

        setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_process:1005:5", 1)   // 1005 frame not valid: a bad frame
        let store2 = CaptureStore(capacityFrames: Self.total + 48_000)
        compiled = try GraphCompiler.compile(try validate(graph(), store2).get(), maxFrames: 512)
        result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors, [], "a corrupt frame is counted, not an error")
        XCTAssertEqual(store2.frames, Self.total, "the stream keeps its length: silence for the bad frame")
    }

    func testSeekLandsOnTheExactSample() throws {
        let target = 100_000 // inside frame 48 (48 × 2048 = 98304), 1696 samples in
        let store = CaptureStore(capacityFrames: Self.total)
        let compiled = try GraphCompiler.compile(try validate(graph(), store).get(), maxFrames: 256)
        let node = try XCTUnwrap(compiled.engine.node("dec") as? SeekableNode)
        XCTAssertTrue(node.seek(toFrame: target))
        _ = OfflineRenderer(engine: compiled.engine).run()
        let left = store.samples(0)
        XCTAssertEqual(left.count, Self.total - target)
        let frame48 = DAATests.frames[48].sequence, frame49 = DAATests.frames[49].sequence
        XCTAssertEqual(DAATests.sequence(left[0]), frame48)
        XCTAssertEqual(DAATests.sequence(left[2048 - 1696 - 1]), frame48, "the last sample of frame 48")
        XCTAssertEqual(DAATests.sequence(left[2048 - 1696]), frame49, "frame 49 starts exactly 352 samples in")
        XCTAssertFalse(left.contains(-0.25), "no priming sample")
    }

    /// `ac4` with `transport: "follow"`: its decoder follows the transport
    /// for it, and transport frame F plays the stream's sample F exactly.
    func testAnAC4SourceFollowingTheTransportHasItsDecoderLocateToTheExactSample() throws {
        let store = CaptureStore(capacityFrames: Self.total)
        let json = graph().replacingOccurrences(of: #""type": "ac4", "params": {"#, with: #""type": "ac4", "params": {"transport": "follow", "#)
        let compiled = try GraphCompiler.compile(try validate(json, store).get(), maxFrames: 256)
        let node = try XCTUnwrap(compiled.engine.node("dec") as? TransportFollowing)
        XCTAssertEqual(node.transportMode, .follow, "the decoder follows for its ac4 source")
        node.locate(toTransportFrame: 100_000)
        _ = OfflineRenderer(engine: compiled.engine).run()
        let left = store.samples(0)
        XCTAssertEqual(left.count, Self.total - 100_000)
        XCTAssertEqual(DAATests.sequence(left[2048 - 1696 - 1]), DAATests.frames[48].sequence, "the last sample of frame 48")
        XCTAssertEqual(DAATests.sequence(left[2048 - 1696]), DAATests.frames[49].sequence, "frame 49 starts exactly 352 samples in")

        let free = try GraphCompiler.compile(try validate(graph(), CaptureStore(capacityFrames: 16)).get(), maxFrames: 256)
        XCTAssertEqual((free.engine.node("dec") as? TransportFollowing)?.transportMode, .free, "free by default")
    }

    func testSpeakersEndpointIsStereoAndReachesTheLibrary() throws {
        let store = CaptureStore(capacityFrames: Self.total)
        let g = try validate(graph(#""endpoint": "speakers""#), store).get()
        XCTAssertEqual(g.node("dec")?.outputFormat?.layout, .stereo)
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 48_000)
        XCTAssertEqual(DAATests.parameters(store.samples(1)[0]).endpoint, 1)
        let noVirtualizer = try validate(graph(#""endpoint": "headphones", "virtualizer": false"#), CaptureStore(capacityFrames: 16)).get()
        XCTAssertEqual(noVirtualizer.node("dec")?.outputFormat?.layout, .stereo)
    }

    func testLiveParameterChangesLandOnFrameBoundaries() throws {
        let store = CaptureStore(capacityFrames: Self.total)
        let compiled = try GraphCompiler.compile(try validate(graph(), store).get(), maxFrames: 512)
        var changed = false
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 40 * 2048, progress: { done in
            if !changed && done >= 10 * 2048 {
                changed = true
                try? compiled.set("dec.dialogueEnhancement", 7)
            }
        })
        let right = store.samples(1)
        XCTAssertEqual(DAATests.parameters(right[0]).de, 0)
        XCTAssertEqual(DAATests.parameters(right[right.count - 1]).de, 7, "the change reached the library")
        for k in 0..<(right.count / 2048) {
            let block = right[(k * 2048)..<((k + 1) * 2048)]
            XCTAssertTrue(block.allSatisfy { $0 == block.first }, "frame \(k) decoded with one parameter set")
        }
    }

    func testMissingLibraryIsAGraphErrorThatSaysHowToProvideIt() throws {
        let json = graph().replacingOccurrences(of: DAATests.doublePath, with: "/nonexistent/libdlb_decode.so")
        guard case .failure(let errors) = validate(json, CaptureStore(capacityFrames: 16)) else {
            return XCTFail("a missing DAA library must not validate")
        }
        let e = try XCTUnwrap(errors.errors.first { $0.nodeID == "dec" }, errors.description)
        XCTAssertTrue(e.message.hasPrefix("library \"/nonexistent/libdlb_decode.so\" (/nonexistent/libdlb_decode.so) does not exist"), e.message)
        XCTAssertTrue(e.message.contains(VendorLibraryLocations.environmentVariable), e.message)
        XCTAssertTrue("\(e.pointer)".hasSuffix("/params/library"), "\(e.pointer)")

        // Without a `library`, the plugin's own default: DAA_LIBRARY, else the usual names.
        let without = graph().replacingOccurrences(of: #""library": "\#(DAATests.doublePath)""#, with: #""endpoint": "auto""#)
        guard case .failure(let missing) = validate(without, CaptureStore(capacityFrames: 16)) else {
            return XCTFail("no DAA library is installed on the test machine")
        }
        let m = try XCTUnwrap(missing.errors.first { $0.nodeID == "dec" }, missing.description)
        XCTAssertTrue(m.message.hasPrefix("no DAA decoder library found"), m.message)
        XCTAssertTrue(m.message.contains("DAA_LIBRARY"), m.message)
        setenv("DAA_LIBRARY", DAATests.doublePath, 1)
        XCTAssertNoThrow(try validate(without, CaptureStore(capacityFrames: 16)).get(), "DAA_LIBRARY, set outside the graph, is trusted")
    }
}
