import XCTest
import AC4
import AudioGraph
import AudioGraphPlugins
import CAGraphPlugin
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The `daa` node plugin driven through the C ABI directly (no host; the
/// `ABIPlugin` harness of TestSupport): the built libAGraphDAAPlugin.so with
/// the interface's test double, libTestDoubleDAA.so (TEST DOUBLE — NOT A
/// DECODER), fed the real frames of ChannelCheck.ac4. The double's PCM
/// encodes what it was told (see Tests/DAATestDouble/include/test_double_daa.h):
/// left = sequence counter / 1024 (+ presentation / 2^20), right = a code of
/// the parameters in force.
final class DAATests: XCTestCase {
    // MARK: - Fixtures

    static let samplesPerFrame = 2048

    static var pluginPath: String { BuiltPlugins.folder + "/libAGraphDAAPlugin.so" }
    static var doublePath: String { BuiltPlugins.folder + "/libTestDoubleDAA.so" }

    /// `Tests/Media/ChannelCheck.ac4`, found from the package root.
    static let channelCheckPath: String = TestMedia.channelCheck

    /// Whole sync frames (sync word through CRC) of ChannelCheck.ac4, with their TOCs.
    static let frames: [(bytes: [UInt8], sequence: Int, isIFrame: Bool)] = {
        guard let reader = try? AC4FileReader(path: channelCheckPath) else { return [] }
        return reader.readAll().frames.map { (Array(reader.bytes[$0.wholeFrame]), $0.toc.sequenceCounter, $0.toc.isIFrame) }
    }()

    /// What every DAA test needs: the plugin and the test double built (a
    /// skip without them) and the frames of ChannelCheck.ac4 (a failure
    /// without them: the file is in the repository).
    static func requireFixtures(file: StaticString = #filePath, line: UInt = #line) throws {
        _ = try BuiltPlugins.path("libAGraphDAAPlugin.so")
        _ = try BuiltPlugins.path("libTestDoubleDAA.so")
        guard frames.count == 846 else {
            XCTFail("ChannelCheck.ac4 missing or unreadable at \(channelCheckPath)", file: file, line: line)
            throw XCTSkip("no media")
        }
    }

    var plugin: ABIPlugin!
    var double: TestDoubleLibrary!
    var environment: SavedEnvironment?

    override func setUpWithError() throws {
        environment = SavedEnvironment(["TEST_DOUBLE_DAA_DELAY", "TEST_DOUBLE_DAA_REPORT_DELAY", "TEST_DOUBLE_DAA_FAIL", "DAA_LIBRARY"])
        try Self.requireFixtures()
        plugin = try ABIPlugin(path: Self.pluginPath, nodeID: "test-daa", inputChannels: 0, outputChannels: 2, sampleRate: 48000)
        double = try TestDoubleLibrary(path: Self.doublePath)
        double.reset()
    }

    override func tearDown() {
        plugin = nil
        double = nil
        environment = nil
    }

    // MARK: - Decoding the double's PCM

    struct Parameters: Equatable {
        var dap = 1, virtualizer = 1, endpoint = 2, de = 0, orl = -16, mix = 0
    }

    static func sequence(_ left: Float) -> Int { Int((left * 1024).rounded(.down)) }
    static func presentation(_ left: Float) -> Int { Int((left * 1_048_576).rounded()) % 1024 }
    static func parameters(_ right: Float) -> Parameters {
        var code = Int((right * 131_072).rounded())
        var p = Parameters()
        p.mix = code % 65 - 32; code /= 65
        p.orl = code % 13 - 23; code /= 13
        p.de = code % 10; code /= 10
        p.endpoint = code % 3; code /= 3
        p.virtualizer = code % 2; p.dap = code / 2
        return p
    }

    // MARK: - The calling sequence

    func testCallingSequenceIsInOrderWithCorrectSizes() throws {
        let node = try plugin.create(["library": .string(Self.doublePath), "endpoint": .choice("speakers"), "virtualizer": .bool(false)])
        try node.activate()
        for i in 0..<3 { _ = try node.decode(Self.frames[i].bytes, timestamp: i * Self.samplesPerFrame) }
        node.deactivate()
        node.destroy()

        let log = double.log()
        XCTAssertEqual(log.first, "query_info -> 0", "create asks the library's versions first")
        let expectedStart = [
            "query_info -> 0",
            "query_memory datatype=7 format=1 type=0 timescale=48000 -> 0",
            "open datatype=7 format=1 type=0 timescale=48000 -> 0",
            "setparam id=101 value=0 size=4 -> 0",     // dialogue enhancement 0 (DAAPlay)
            "setparam id=102 value=-16 size=4 -> 0",   // output reference level -16 LKFS
            "setparam id=200 value=65535 size=4 -> 0", // presentation: first decodable
            "setparam id=201 value=0 size=4 -> 0",     // main/associated: neutral
            "setparam id=1 value=1 size=4 -> 0",       // endpoint: speakers
            "setparam id=100 value=0 size=4 -> 0",     // virtualizer off
        ]
        XCTAssertEqual(log.prefix(expectedStart.count).map { $0.replacingOccurrences(of: #" decoder_size=\d+ output_buffer_size=\d+"#, with: "", options: .regularExpression) },
                       expectedStart)
        // Per frame: addbytes until the whole frame is consumed (≤ 1000 bytes per call), then process.
        var rest = Array(log.dropFirst(expectedStart.count))
        for i in 0..<3 {
            let size = Self.frames[i].bytes.count
            XCTAssertGreaterThan(size, 1000, "the frames are longer than the double takes per call")
            var remaining = size
            while remaining > 0 {
                guard !rest.isEmpty else { return XCTFail("log ends inside frame \(i)") }
                let line = rest.removeFirst()
                let take = min(remaining, 1000)
                remaining -= take
                XCTAssertEqual(line, "addbytes length=\(remaining + take) consumed=\(take) complete=\(remaining == 0 ? 1 : 0) ts=\(i * 2048) -> 0")
            }
            XCTAssertEqual(rest.first?.hasPrefix("process sequence=\(Self.frames[i].sequence) samples=2048 "), true, rest.first ?? "")
            rest.removeFirst()
        }
        XCTAssertEqual(rest, ["close -> 0"])
    }

    // MARK: - Latency

    /// Feeds every frame, drains, and checks that the output is exactly the
    /// frames' samples: first sample = first frame's, 846 × 2048 in all.
    func checkWholeFile(delay: Int?, report: Bool = true, expectedSource: String, file: StaticString = #filePath, line: UInt = #line) throws {
        if let delay { setenv("TEST_DOUBLE_DAA_DELAY", String(delay), 1) }
        if !report { setenv("TEST_DOUBLE_DAA_REPORT_DELAY", "0", 1) }
        let node = try plugin.create(["library": .string(Self.doublePath)])
        try node.activate()
        var left: [Float] = [], right: [Float] = []
        for (i, f) in Self.frames.enumerated() {
            let out = try node.decode(f.bytes, timestamp: i * Self.samplesPerFrame)
            XCTAssertEqual(out.status, 0, node.lastError, file: file, line: line)
            left += out.left; right += out.right
        }
        let drained = try node.drain()
        left += drained.left; right += drained.right
        XCTAssertEqual(node.measuredLatency, UInt32(delay ?? 1000), file: file, line: line)
        XCTAssertEqual(node.latencySource.hasPrefix(expectedSource), true, node.latencySource, file: file, line: line)
        XCTAssertEqual(left.count, 846 * 2048, "every sample of every frame, none of the priming", file: file, line: line)
        XCTAssertEqual(left.first, 1020.0 / 1024.0 + 511.0 / 1_048_576.0, "sample 0 is sample 0 of the first frame (sequence 1020)", file: file, line: line)
        XCTAssertFalse(left.contains(-0.25), "no priming sample left", file: file, line: line)
        for (i, f) in Self.frames.enumerated() where i * 2048 < left.count {
            let a = i * 2048, b = min(left.count, a + 2048) - 1
            if Self.sequence(left[a]) != f.sequence || Self.sequence(left[b]) != f.sequence {
                XCTFail("frame \(i): samples \(a)…\(b) encode sequence \(Self.sequence(left[a]))…\(Self.sequence(left[b])), expected \(f.sequence)", file: file, line: line)
                break
            }
        }
        XCTAssertEqual(Self.parameters(right[0]), Parameters(), "DAAPlay's defaults: DE 0, ORL -16, headphones (auto → fallback), virtualizer on", file: file, line: line)
        node.deactivate()
        node.destroy()
    }

    func testLatencyIsMeasuredFromOutputTimestampAndTrimmed() throws {
        try checkWholeFile(delay: nil, expectedSource: "output_timestamp")
    }

    func testLatencyLongerThanAFrame() throws {
        try checkWholeFile(delay: 3168, expectedSource: "output_timestamp")
        double.reset()
        try checkWholeFile(delay: 5000, expectedSource: "output_timestamp")
    }

    func testLatencyFallsBackToTheEstimateWhenTheLibraryReportsNothing() throws {
        try checkWholeFile(delay: 3168, report: false, expectedSource: "estimate")
    }

    func testDrainFeedsContinuingFramesAndTakesOnlyTheTail() throws {
        let node = try plugin.create(["library": .string(Self.doublePath)])
        try node.activate()
        var left: [Float] = []
        for i in 0..<5 { left += try node.decode(Self.frames[i].bytes, timestamp: i * 2048).left }
        XCTAssertEqual(left.count, 5 * 2048 - 1000)
        left += try node.drain().left
        XCTAssertEqual(left.count, 5 * 2048)
        XCTAssertEqual(Self.sequence(left.last!), Self.frames[4].sequence)
        // The drain frame continues the sequence (4 → 5) with a valid CRC: the double accepted it.
        XCTAssertTrue(double.log().contains { $0.hasPrefix("process sequence=\(Self.frames[4].sequence + 1) samples=2048") }, double.log().joined(separator: "\n"))
        XCTAssertEqual(try node.drain().left.count, 0, "drained: 0 frames means done")
        node.deactivate(); node.destroy()
    }

    func testFlushRestartsTheLatencyTrimAtTheNewPosition() throws {
        let node = try plugin.create(["library": .string(Self.doublePath)])
        try node.activate()
        for i in 0..<10 { _ = try node.decode(Self.frames[i].bytes, timestamp: i * 2048) }
        let iFrame = try XCTUnwrap((24..<846).first { Self.frames[$0].isIFrame })
        try node.flush()
        var left: [Float] = []
        for i in iFrame..<(iFrame + 4) { left += try node.decode(Self.frames[i].bytes, timestamp: i * 2048).left }
        XCTAssertEqual(left.count, 4 * 2048 - 1000)
        XCTAssertEqual(Self.sequence(left[0]), Self.frames[iFrame].sequence, "first sample after the flush = the I-frame's sample 0")
        XCTAssertTrue(double.log().contains("close -> 0"))
        node.deactivate(); node.destroy()
    }

    // MARK: - Parameters

    func testParameterChangesTakeEffectOnTheNextFrame() throws {
        let node = try plugin.create(["library": .string(Self.doublePath)])
        try node.activate()
        var right: [Float] = [], left: [Float] = []
        for i in 0..<12 {
            switch i {
            case 4: try node.setParameter("dialogueEnhancement", 5)
            case 6: try node.setParameter("outputReferenceLevel", -23); try node.setParameter("virtualizer", 0)
            case 8: try node.setParameter("presentation", 3); try node.setParameter("mainAssociatedMix", -32)
            default: break
            }
            let out = try node.decode(Self.frames[i].bytes, timestamp: i * 2048)
            right += out.right; left += out.left
        }
        right += try node.drain().right
        XCTAssertEqual(right.count, 12 * 2048)
        for i in 0..<12 {
            var expected = Parameters()
            if i >= 4 { expected.de = 5 }
            if i >= 6 { expected.orl = -23; expected.virtualizer = 0 }
            if i >= 8 { expected.mix = -32 }
            XCTAssertEqual(Self.parameters(right[i * 2048]), expected, "first sample of frame \(i)")
            XCTAssertEqual(Self.parameters(right[i * 2048 + 2047]), expected, "last sample of frame \(i)")
        }
        XCTAssertEqual(Self.presentation(left[7 * 2048]), 511, "default presentation (0xFFFF)")
        XCTAssertEqual(Self.presentation(left[8 * 2048]), 3)
        node.deactivate(); node.destroy()
    }

    /// With endpoint auto, the output route the host reports (
    /// `agraph.output-route/1`: the plugin side's `changed`, on the main
    /// thread) picks the endpoint from the next frame, as DAAPlay follows
    /// route changes; unknown falls back; an explicit endpoint ignores the
    /// route; and the endpoint itself is live.
    func testEndpointAutoFollowsTheRouteAndEndpointIsLive() throws {
        let node = try plugin.create(["library": .string(Self.doublePath), "endpoint": .choice("auto"),
                                      "fallbackEndpoint": .choice("speakers")])
        try node.activate()
        var right: [Float] = []
        for i in 0..<10 {
            switch i {
            case 2: node.routeChanged(.headphones)
            case 4: node.routeChanged(.speakers)
            case 6: try node.setParameter("endpoint", 0)            // headphones, whatever the route
            case 8: try node.setParameter("endpoint", 2); node.routeChanged(.unknown)
            default: break
            }
            right += try node.decode(Self.frames[i].bytes, timestamp: i * 2048).right
        }
        right += try node.drain().right
        XCTAssertEqual(right.count, 10 * 2048)
        let expected = [1, 1, 2, 2, 1, 1, 2, 2, 1, 1]   // 1 speakers, 2 headphones
        for i in 0..<10 {
            XCTAssertEqual(Self.parameters(right[i * 2048]).endpoint, expected[i], "frame \(i)")
        }
        node.deactivate(); node.destroy()
    }

    /// The route known before activation (the live host tells every node
    /// before it activates) is in force from the first frame: nothing plays
    /// on the fallback endpoint first. Read through the host table at
    /// create and at activate.
    func testTheRouteKnownBeforeActivationAppliesFromTheFirstFrame() throws {
        for (route, endpoint) in [(OutputRoute.speakers, 1), (.headphones, 2)] {
            let host = PluginHost(nodeID: "dec", typeID: "daa")
            host.outputRoute = route
            let fallback = route == .speakers ? "headphones" : "speakers"
            let node = try plugin.create(["library": .string(Self.doublePath), "fallbackEndpoint": .choice(fallback)], host: host)
            try node.activate()
            let out = try node.decode(Self.frames[0].bytes, timestamp: 0)
            XCTAssertEqual(Self.parameters(out.right[0]).endpoint, endpoint, "\(route)")
            node.deactivate(); node.destroy()
        }
        // Told after create, before activate: activate reads it again.
        let host = PluginHost(nodeID: "dec", typeID: "daa")
        let node = try plugin.create(["library": .string(Self.doublePath), "fallbackEndpoint": .choice("headphones")], host: host)
        host.outputRoute = .speakers
        try node.activate()
        XCTAssertEqual(Self.parameters(try node.decode(Self.frames[0].bytes, timestamp: 0).right[0]).endpoint, 1)
        node.deactivate(); node.destroy()
    }

    /// The library is opened once per process per path (check,
    /// create and details share it), and deinit closes it.
    func testTheLibraryIsOpenedOncePerProcess() throws {
        let folder = try TemporaryDirectory("agraph-daa-once")
        let copy = folder.file("libOnceDAA.so")
        try FileManager.default.copyItem(atPath: Self.doublePath, toPath: copy)
        let copied = try TestDoubleLibrary(path: copy)
        func opens() -> Int { copied.log().filter { $0.hasPrefix("query_info") }.count }
        XCTAssertNil(try plugin.check(["library": .string(copy)]))
        XCTAssertNil(try plugin.check(["library": .string(copy)]))
        for _ in 0..<3 {
            let node = try plugin.create(["library": .string(copy)])
            try node.activate(); node.deactivate(); node.destroy()
        }
        XCTAssertEqual(opens(), 1, "two checks and three creates: one query_info")
        setenv("DAA_LIBRARY", copy, 1)
        _ = plugin.details; _ = plugin.details
        XCTAssertEqual(opens(), 2, "DAA_LIBRARY is another key, opened once for every details call")
        plugin.deinitLibrary()
        XCTAssertNil(try plugin.check(["library": .string(copy)]))
        XCTAssertEqual(opens(), 3, "after deinit, the next use opens it again")
    }

    func testOutputLayoutIsBinauralOnlyWhenVirtualizingForHeadphones() throws {
        XCTAssertEqual(try plugin.outputLayout([:]), "binaural", "auto → fallback headphones, virtualizer on")
        XCTAssertEqual(try plugin.outputLayout(["endpoint": .choice("headphones")]), "binaural")
        XCTAssertEqual(try plugin.outputLayout(["endpoint": .choice("speakers")]), "stereo")
        XCTAssertEqual(try plugin.outputLayout(["endpoint": .choice("auto"), "fallbackEndpoint": .choice("speakers")]), "stereo")
        XCTAssertEqual(try plugin.outputLayout(["endpoint": .choice("headphones"), "virtualizer": .bool(false)]), "stereo")
        XCTAssertEqual(plugin.typeInputCodec, "ac4-sync ac4-raw", "sync frames (ac4) and raw frames (media over MP4)")
    }

    func testSpeakersEndpointReachesTheLibrary() throws {
        let node = try plugin.create(["library": .string(Self.doublePath), "endpoint": .choice("auto"), "fallbackEndpoint": .choice("speakers")])
        try node.activate()
        let out = try node.decode(Self.frames[0].bytes, timestamp: 0)
        XCTAssertEqual(Self.parameters(out.right[0]).endpoint, 1)
        node.deactivate(); node.destroy()
    }

    // MARK: - Errors

    static let meanings = [
        1000: "generic error", 1001: "invalid parameter value", 1002: "invalid parameter size",
        1003: "unsupported parameter", 1004: "internal buffer error", 1005: "frame not valid",
        1006: "frame needs more data", 1007: "processing error", 1008: "unsupported output data type",
        1009: "unsupported bitstream format", 1010: "unsupported AC-4 bitstream type", 1011: "program change",
        1012: "program mixing error",
    ]

    func testEveryErrorCodeReachesTheUserAsAReadableMessage() throws {
        for (code, meaning) in Self.meanings.sorted(by: { $0.key < $1.key }) {
            // From decode (process), through the diagnostics extension.
            setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_process:\(code)", 1)
            let node = try plugin.create(["library": .string(Self.doublePath)])
            try node.activate()
            let out = try node.decode(Self.frames[0].bytes, timestamp: 0)
            let perFrame = [1005, 1006, 1007, 1011, 1012].contains(code)
            XCTAssertEqual(out.status, perFrame ? 1 : 2, "\(code): BAD_FRAME for a frame's error, else FATAL")
            XCTAssertTrue(node.lastError.hasPrefix("DAA error \(code): \(meaning) (dlb_decode_process"), node.lastError)
            node.deactivate(); node.destroy()

            // From open, through activate's error.
            setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_open:\(code)", 1)
            let other = try plugin.create(["library": .string(Self.doublePath)])
            XCTAssertThrowsError(try other.activate()) { error in
                XCTAssertTrue("\(error)".hasPrefix("DAA error \(code): \(meaning) (dlb_decode_open"), "\(error)")
            }
            other.destroy()

            // From query_info, through create's (and check's) error. The
            // library is opened once per process: close it (deinit) so that
            // the next use opens it afresh.
            plugin.deinitLibrary()
            setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_query_info:\(code)", 1)
            XCTAssertTrue(try plugin.check(["library": .string(Self.doublePath)])?.hasPrefix("DAA error \(code): \(meaning) (dlb_decode_query_info") == true)
        }
    }

    func testSetparamAndAddbytesErrorsAreReported() throws {
        setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_setparam:1001:7", 1) // the 7th setparam: the first live change
        let node = try plugin.create(["library": .string(Self.doublePath)])
        try node.activate()
        try node.setParameter("dialogueEnhancement", 9)
        let out = try node.decode(Self.frames[0].bytes, timestamp: 0)
        XCTAssertEqual(out.status, 2)
        XCTAssertTrue(node.lastError.hasPrefix("DAA error 1001: invalid parameter value (dlb_decode_setparam id 101 = 9, dialogueEnhancement)"), node.lastError)
        node.deactivate(); node.destroy()

        setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_addbytes:1004", 1)
        let other = try plugin.create(["library": .string(Self.doublePath)])
        try other.activate()
        let failed = try other.decode(Self.frames[0].bytes, timestamp: 0)
        XCTAssertEqual(failed.status, 2)
        XCTAssertTrue(other.lastError.hasPrefix("DAA error 1004: internal buffer error (dlb_decode_addbytes, frame 1)"), other.lastError)
        other.deactivate(); other.destroy()
    }

    func testACorruptFrameIsABadFrameAndDecodingGoesOn() throws {
        let node = try plugin.create(["library": .string(Self.doublePath)])
        try node.activate()
        var damaged = Self.frames[1].bytes
        damaged[100] ^= 0x40
        XCTAssertEqual(try node.decode(Self.frames[0].bytes, timestamp: 0).status, 0)
        let bad = try node.decode(damaged, timestamp: 2048)
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(node.lastError.hasPrefix("DAA error 1005: frame not valid (dlb_decode_process, frame 2)"), node.lastError)
        let next = try node.decode(Self.frames[2].bytes, timestamp: 4096)
        XCTAssertEqual(next.status, 0, node.lastError)
        XCTAssertEqual(node.lastError, "")
        node.deactivate(); node.destroy()
    }

    // MARK: - Finding the library

    func testAMissingLibraryTellsHowToProvideIt() throws {
        let missing = "/nonexistent/libdlb_decode.so"
        let message = try XCTUnwrap(plugin.check(["library": .string(missing)]))
        XCTAssertTrue(message.contains("cannot load the DAA library '\(missing)' (the node's `library` parameter)"), message)
        XCTAssertTrue(message.contains("DAA_LIBRARY"), message)
        XCTAssertThrowsError(try plugin.create(["library": .string(missing)]))

        setenv("DAA_LIBRARY", missing, 1)
        let fromEnvironment = try XCTUnwrap(plugin.check([:]))
        XCTAssertTrue(fromEnvironment.contains("(the DAA_LIBRARY environment variable)"), fromEnvironment)
        unsetenv("DAA_LIBRARY")

        let nothing = try XCTUnwrap(plugin.check([:]), "no DAA library is installed on the test machine")
        XCTAssertTrue(nothing.hasPrefix("no DAA decoder library found"), nothing)
        for part in ["`library` parameter", "DAA_LIBRARY", "libdlb_decode.so", "libdlbdecode.so", "libdaa.so", "loader path"] {
            XCTAssertTrue(nothing.contains(part), "\(part) in: \(nothing)")
        }
        XCTAssertTrue(plugin.details.hasPrefix("DAA library: none (no DAA decoder library found"), plugin.details)
    }

    func testDAALibraryEnvironmentVariableIsUsedAndVersionsShown() throws {
        setenv("DAA_LIBRARY", Self.doublePath, 1)
        XCTAssertNil(try plugin.check([:]))
        let node = try plugin.create([:])
        XCTAssertTrue(node.library.hasSuffix("libTestDoubleDAA.so: DAA TEST DOUBLE 1.0 (API 1), core decoder NOT A, DAP DECODER"), node.library)
        node.destroy()
        XCTAssertTrue(plugin.details.contains("DAA TEST DOUBLE 1.0 (API 1), core decoder NOT A, DAP DECODER"), plugin.details)
    }

    func testALibraryMissingSymbolsIsNamedWithThem() throws {
        // libm has none of the interface's symbols.
        let message = try XCTUnwrap(plugin.check(["library": .string("libm.so.6")]))
        XCTAssertTrue(message.contains("is not a DAA decoder library: it lacks the symbols dlb_decode_query_info, dlb_decode_query_memory"), message)
        XCTAssertTrue(message.contains("dlb_decode_close"), message)
        // A library with all but one: the example plugin? No — build one lacking only dlb_decode_getparam.
        let folder = try TemporaryDirectory("daa-partial")
        let source = folder.file("partial.c"), library = folder.file("libpartial.so")
        let names = ["query_info", "query_memory", "open", "addbytes", "process", "setparam", "close"]
        try names.map { "int dlb_decode_\($0)(void) { return 0; }\n" }.joined().write(toFile: source, atomically: true, encoding: .utf8)
        try CCompiler.sharedLibrary(library, [source])
        let partial = try XCTUnwrap(plugin.check(["library": .string(library)]))
        XCTAssertTrue(partial.hasSuffix("is not a DAA decoder library: it lacks the symbol dlb_decode_getparam"), partial)
    }

    /// The double itself checks what it is given like the real library (raw frames, type 1, too).
    func testTheDoubleChecksItsInputsAndAcceptsRawFrames() throws {
        struct QueryIn { var datatype: Int32; var format: Int32; var type: Int32; var timescale: UInt }
        struct Memory { var decoderSize: Int; var outputBufferSize: Int }
        struct Buffer { var channels: UInt32; var stride: Int; var dataType: Int32; var data: UnsafeMutablePointer<UnsafeMutableRawPointer?>? }
        struct IO { var buffer: UnsafeMutablePointer<Buffer>?; var rate: UInt = 0; var channels: UInt32 = 0; var samples: UInt32 = 0
                    var delay: UInt32 = 0; var timestamp: Int64 = 0 }
        func symbol<T>(_ name: String, _: T.Type) throws -> T { try double.symbol(name, T.self) }
        let queryMemory = try symbol("dlb_decode_query_memory", (@convention(c) (UnsafeRawPointer, UnsafeMutableRawPointer) -> Int32).self)
        let open = try symbol("dlb_decode_open", (@convention(c) (UnsafeRawPointer, UnsafeMutableRawPointer) -> Int32).self)
        let addbytes = try symbol("dlb_decode_addbytes", (@convention(c) (UnsafeMutableRawPointer, UnsafePointer<CChar>?, UInt32, Int64, UnsafeMutablePointer<UInt32>, UnsafeMutablePointer<Int32>) -> Int32).self)
        let process = try symbol("dlb_decode_process", (@convention(c) (UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Int32).self)
        let setparam = try symbol("dlb_decode_setparam", (@convention(c) (UnsafeMutableRawPointer, Int32, UnsafeMutableRawPointer?, Int32) -> Int32).self)
        let getparam = try symbol("dlb_decode_getparam", (@convention(c) (UnsafeRawPointer, Int32, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>) -> Int32).self)
        let close = try symbol("dlb_decode_close", (@convention(c) (UnsafeMutableRawPointer) -> Int32).self)

        var memory = Memory(decoderSize: 0, outputBufferSize: 0)
        for (query, code) in [(QueryIn(datatype: 4, format: 1, type: 1, timescale: 48000), 1008),
                              (QueryIn(datatype: 7, format: 0, type: 1, timescale: 48000), 1009),
                              (QueryIn(datatype: 7, format: 1, type: 2, timescale: 48000), 1010),
                              (QueryIn(datatype: 7, format: 1, type: 1, timescale: 0), 1001),
                              (QueryIn(datatype: 7, format: 1, type: 1, timescale: 48000), 0)] {
            var q = query
            XCTAssertEqual(queryMemory(&q, &memory), Int32(code), "\(query)")
        }
        var q = QueryIn(datatype: 7, format: 1, type: 1, timescale: 48000)
        let handle = UnsafeMutableRawPointer.allocate(byteCount: memory.decoderSize, alignment: 16)
        handle.initializeMemory(as: UInt8.self, repeating: 0, count: memory.decoderSize)
        defer { handle.deallocate() }
        XCTAssertEqual(open(&q, handle), 0)

        var value: Int32 = 10, size: Int32 = 2
        XCTAssertEqual(setparam(handle, 101, &value, 4), 1001, "DE 10 is out of range")
        XCTAssertEqual(setparam(handle, 101, &value, 2), 1002, "wrong size")
        XCTAssertEqual(setparam(handle, 999, &value, 4), 1003, "unknown id")
        XCTAssertEqual(getparam(handle, 101, &value, &size), 1002)
        size = 4
        XCTAssertEqual(getparam(handle, 102, &value, &size), 0)
        XCTAssertEqual(value, -14, "the library's default ORL")

        let left = UnsafeMutablePointer<Float>.allocate(capacity: 4096), right = UnsafeMutablePointer<Float>.allocate(capacity: 4096)
        defer { left.deallocate(); right.deallocate() }
        var channels: [UnsafeMutableRawPointer?] = [UnsafeMutableRawPointer(left), UnsafeMutableRawPointer(right)]
        try channels.withUnsafeMutableBufferPointer { ch in
            var buffer = Buffer(channels: 2, stride: 1, dataType: 7, data: ch.baseAddress)
            var io = IO(buffer: &buffer)
            XCTAssertEqual(process(handle, &io), 1006, "no frame yet")
            // Type 1: one raw frame (the payload of a sync frame) in one call.
            let reader = try AC4FileReader(path: Self.channelCheckPath)
            let first = try XCTUnwrap(reader.readAll().frames.first)
            let raw = Array(first.payload)
            var consumed: UInt32 = 0, complete: Int32 = 0
            let rc = raw.withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { addbytes(handle, $0.baseAddress, UInt32(b.count), 0, &consumed, &complete) }
            }
            XCTAssertEqual(rc, 0)
            XCTAssertEqual(consumed, UInt32(raw.count))
            XCTAssertEqual(complete, 1)
            buffer.dataType = 4
            XCTAssertEqual(process(handle, &io), 1008, "int16 output is not supported")
            buffer.dataType = 7
            XCTAssertEqual(process(handle, &io), 0)
            XCTAssertEqual(io.samples, 2048)
            XCTAssertEqual(io.timestamp, -1000)
            XCTAssertEqual(io.delay, 1000)
            XCTAssertEqual(left[999], -0.25, "priming")
            XCTAssertEqual(Self.sequence(left[1000]), 1020)
            XCTAssertEqual(Self.parameters(right[1000]), Parameters(dap: 1, virtualizer: 1, endpoint: 2, de: 6, orl: -14, mix: 0), "library defaults")
        }
        XCTAssertEqual(close(handle), 0)
    }

    func testNodeTypeDescription() throws {
        let t = plugin.type.pointee
        XCTAssertEqual(String(cString: t.type_id), "daa")
        XCTAssertEqual(t.domain, AGRAPH_DOMAIN_WORKER.rawValue)
        XCTAssertNil(t.process)
        XCTAssertEqual(t.outputs.pointee.channels, 2)
        XCTAssertEqual(plugin.descriptor.pointee.abi.major, 2)
        XCTAssertEqual(plugin.descriptor.pointee.abi.minor, UInt32(AGRAPH_PLUGIN_ABI_MINOR))
        XCTAssertNotEqual(t.params[0].flags & UInt32(AGRAPH_PARAM_VENDOR_LIBRARY), 0,
                          "library names a vendor library: the host resolves it in the trusted folders")
        XCTAssertEqual((1..<Int(t.param_count)).filter { t.params[$0].flags & UInt32(AGRAPH_PARAM_VENDOR_LIBRARY) != 0 }, [])
        let names = (0..<Int(t.param_count)).map { String(cString: t.params[$0].name) }
        XCTAssertEqual(names, ["library", "endpoint", "fallbackEndpoint", "virtualizer", "dialogueEnhancement",
                               "outputReferenceLevel", "presentation", "mainAssociatedMix"],
                       "no outputIsHeadphones: the route comes through agraph.output-route/1")
        XCTAssertNotNil(plugin.descriptor.pointee.`init`, "init")
        XCTAssertNotNil(plugin.descriptor.pointee.`deinit`, "deinit")
        let live = (0..<Int(t.param_count)).filter { t.params[$0].flags & UInt32(AGRAPH_PARAM_LIVE) != 0 }
            .map { String(cString: t.params[$0].name) }
        XCTAssertEqual(live, Array(names.dropFirst()), "every parameter but library is live, the endpoint choices included")
    }
}

// MARK: - The test double and the plugin's diagnostics

/// libTestDoubleDAA.so (or a copy) opened by the test: the calls it logged,
/// and its symbols. Opening the path the plugin opens gives the same
/// library, so the test reads what the plugin did; it stays loaded while
/// the test holds it. [main-thread]
final class TestDoubleLibrary {
    typealias Log = @convention(c) () -> UnsafePointer<CChar>
    typealias Reset = @convention(c) () -> Void
    let handle: UnsafeMutableRawPointer
    private let callLog: Log
    private let resetCalls: Reset

    /// Opens `path`.
    convenience init(path: String) throws {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw ABIPluginError(dlerror().map { String(cString: $0) } ?? "cannot open \(path)")
        }
        try self.init(handle: handle)
    }

    /// The library at `path` if something loaded it already (RTLD_NOLOAD), else nil.
    static func ifLoaded(_ path: String) throws -> TestDoubleLibrary? {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD) else { return nil }
        return try TestDoubleLibrary(handle: handle)
    }

    /// Takes over `handle` (closed on deinit, or now if a symbol is missing).
    private init(handle: UnsafeMutableRawPointer) throws {
        self.handle = handle
        do {
            callLog = try Self.symbol(handle, "test_double_daa_call_log", Log.self)
            resetCalls = try Self.symbol(handle, "test_double_daa_reset", Reset.self)
        } catch {
            dlclose(handle)
            throw error
        }
    }

    deinit { dlclose(handle) }

    /// The calls logged since the last reset, one a line.
    func log() -> [String] { String(cString: callLog()).split(separator: "\n").map(String.init) }

    /// Clears the log and the call counts (which injected failures count on).
    func reset() { resetCalls() }

    /// The symbol `name` as a `T` (a @convention(c) function type).
    func symbol<T>(_ name: String, _ type: T.Type) throws -> T { try Self.symbol(handle, name, type) }

    private static func symbol<T>(_ handle: UnsafeMutableRawPointer, _ name: String, _: T.Type) throws -> T {
        guard let address = dlsym(handle, name) else { throw ABIPluginError("the test double lacks \(name)") }
        return unsafeBitCast(address, to: T.self)
    }
}

/// The DAA plugin's own instance extension, org.audiograph.daa.diagnostics/1
/// (Plugins/DAAPlugin/include/daa_plugin.h): the last error, the measured
/// latency, where that latency came from, and the library in use ("" or 0
/// without it).
extension ABIPluginInstance {
    private func diagnostic<F>(_ index: Int, _: F.Type) -> F? {
        guard let d = pluginExtension("org.audiograph.daa.diagnostics/1") else { return nil }
        return d.load(fromByteOffset: index * MemoryLayout<UnsafeRawPointer>.stride, as: Optional<F>.self)
    }
    private func diagnosticString(_ index: Int) -> String {
        typealias F = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
        return diagnostic(index, F.self)?(instance).map { String(cString: $0) } ?? ""
    }
    var lastError: String { diagnosticString(0) }
    var latencySource: String { diagnosticString(2) }
    var library: String { diagnosticString(3) }
    var measuredLatency: UInt32 {
        typealias F = @convention(c) (OpaquePointer?) -> UInt32
        return diagnostic(1, F.self)?(instance) ?? 0
    }
}
