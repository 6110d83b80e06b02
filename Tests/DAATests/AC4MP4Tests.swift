import XCTest
import AC4
import AudioGraph
import AudioGraphCore
import AudioGraphMedia
import AudioGraphPlugins
import CAGraphPlugin
import GraphFile
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// AC-4 in MP4: the `media` source reads an MP4's `ac-4` track (made here
/// from ChannelCheck.ac4's frames by `AC4MP4Writer`) and emits raw AC-4
/// frames ("ac4-raw"); the `daa` node opens the DAA library for raw frames
/// (input type 1) for that stream, and the library gets the same frames,
/// timestamps and parameters as from the sync-frame file, so the output is
/// the same. The library is the interface's TEST DOUBLE (not a decoder: its
/// PCM encodes what it was told; see DAATests).
final class AC4MP4Tests: XCTestCase {
    var environment: SavedEnvironment?
    var config: TemporaryDirectory!
    var folder: TemporaryDirectory!
    var mp4: String!
    var double: TestDoubleLibrary!

    static let total = 846 * 2048
    static let ac4FourCC: UInt32 = 0x342D_6361   // "ac-4", first character in the low byte (FFmpeg's order)

    override func setUpWithError() throws {
        environment = SavedEnvironment(["TEST_DOUBLE_DAA_DELAY", "TEST_DOUBLE_DAA_REPORT_DELAY", "TEST_DOUBLE_DAA_FAIL", "DAA_LIBRARY",
                                        VendorLibraryLocations.environmentVariable, "XDG_CONFIG_HOME"])
        setenv(VendorLibraryLocations.environmentVariable, BuiltPlugins.folder, 1)
        config = try TemporaryDirectory("agraph-config")
        setenv("XDG_CONFIG_HOME", config.path, 1)
        try DAATests.requireFixtures()
        folder = try TemporaryDirectory("agraph-ac4-mp4")
        let (frames, toc) = try AC4MP4Writer.frames(ofSyncFrameFile: DAATests.channelCheckPath)
        mp4 = folder.file("ChannelCheck.mp4")
        try Data(AC4MP4Writer.file(frames: frames, toc: toc)).write(to: URL(fileURLWithPath: mp4))
        double = try TestDoubleLibrary(path: DAATests.doublePath)
        double.reset()
    }

    override func tearDown() {
        double = nil
        environment = nil
        config = nil
        folder = nil
    }

    // MARK: - The demuxer

    /// FFmpeg 5.1 has no AC-4 codec id: it demuxes the track as codec
    /// "none" with the sample entry's fourcc as its tag, and the `media`
    /// source names that "ac4-raw".
    func testMediaFindsTheAC4TrackAsRawFrames() throws {
        let file = try MediaFile(path: mp4)
        XCTAssertTrue(file.container.hasPrefix("mov,mp4"), file.container)
        XCTAssertEqual(file.streams.count, 1)
        let stream = try XCTUnwrap(file.streams.first)
        XCTAssertEqual(stream.kind, "audio")
        XCTAssertEqual(stream.codec, "ac4-raw")
        XCTAssertEqual(stream.info.codec, "ac4-raw", "what the decoder's open_stream is told")
        XCTAssertEqual(stream.info.codecTag, Self.ac4FourCC)
        XCTAssertEqual(stream.sampleRate, 48000)
        XCTAssertEqual(stream.channels, 2)
        XCTAssertEqual(try XCTUnwrap(stream.durationSeconds), Double(Self.total) / 48000, accuracy: 1e-9)
    }

    /// `agraph probe` (run as a user runs it) lists the track as raw AC-4
    /// frames that `daa` decodes.
    func testProbeListsTheAC4TrackForDAA() throws {
        guard let agraph = locateAgraph().path else { throw XCTSkip("the agraph executable is not built") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: agraph)
        process.arguments = ["probe", mp4, "--json"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        let facts = try XCTUnwrap(JSONSerialization.jsonObject(with: stdout) as? [String: Any], stderr)
        XCTAssertEqual(facts["format"] as? String, "media")
        let streams = try XCTUnwrap(facts["streams"] as? [[String: Any]])
        XCTAssertEqual(streams.count, 1)
        let stream = try XCTUnwrap(streams.first)
        XCTAssertEqual(stream["kind"] as? String, "audio")
        XCTAssertEqual(stream["codec"] as? String, "ac4-raw")
        XCTAssertEqual(stream["sampleRate"] as? Int, 48000)
        XCTAssertEqual(stream["durationSeconds"] as? Double ?? 0, Double(Self.total) / 48000, accuracy: 1e-6)
        XCTAssertEqual((stream["decoder"] as? String)?.hasPrefix("daa ("), true, "\(stream)")
    }

    // MARK: - The same frames, the same output

    func graph(_ source: String) -> String {
        let node = source == "ac4"
            ? #"{"id": "stream", "type": "ac4", "params": {"path": "\#(DAATests.channelCheckPath)"}}"#
            : #"{"id": "stream", "type": "media", "params": {"path": "\#(mp4!)"}}"#
        return #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [\#(node),
                   {"id": "dec", "type": "daa", "params": {"library": "\#(DAATests.doublePath)"}},
                   {"id": "cap", "type": "capture", "params": {"store": "main"}}],
         "links": [{"from": "stream", "to": "dec"}, {"from": "dec", "to": "cap"}]}
        """#
    }

    /// Renders `source` → daa → capture; returns the output and what the
    /// double received.
    func render(_ source: String, seekTo target: Int? = nil, file: StaticString = #filePath, line: UInt = #line) throws
        -> (left: [Float], right: [Float], frames: [TestDoubleLibrary.ReceivedFrame], log: [String]) {
        double.reset()
        let store = CaptureStore(capacityFrames: Self.total + 48_000)
        let registry = TestGraph.pluginRegistry(["main": store]).registry
        let g = try TestGraph.validate(graph(source), registry: registry, directory: "/tmp").get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        if let target {
            XCTAssertTrue(try XCTUnwrap(compiled.engine.node("dec") as? SeekableNode).seek(toFrame: target), file: file, line: line)
        }
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.ending, .endOfStream, file: file, line: line)
        XCTAssertEqual(result.finishErrors, [], file: file, line: line)
        return (store.samples(0), store.samples(1), try double.frames(), double.log())
    }

    func testTheSameFramesReachTheLibraryFromMP4AsFromTheSyncFrameFile() throws {
        let sync = try render("ac4")
        let mp4 = try render("media")

        // The file's 846 frames, then the drain's copy of the last one (the
        // double's delay, 1000 samples, is less than a frame).
        let file = try rawFrames()
        XCTAssertEqual(sync.frames.count, 847)
        XCTAssertEqual(mp4.frames.count, sync.frames.count, "every sample of the track reached the library once, then the drain")
        XCTAssertEqual(Set(sync.frames.map(\.type)), [0], "sync frames from the .ac4 file (input type 0)")
        XCTAssertEqual(Set(mp4.frames.map(\.type)), [1], "raw frames from the MP4 (input type 1)")
        for i in 0..<min(sync.frames.count, mp4.frames.count) {
            guard sync.frames[i].bytes == mp4.frames[i].bytes, sync.frames[i].timestamp == mp4.frames[i].timestamp else {
                return XCTFail("frame \(i): \(mp4.frames[i].bytes.count) bytes at \(mp4.frames[i].timestamp) from the MP4, "
                               + "\(sync.frames[i].bytes.count) bytes at \(sync.frames[i].timestamp) from the .ac4 file")
            }
        }
        XCTAssertTrue(mp4.frames.prefix(846).map(\.bytes) == file, "the frames are the file's, in order")
        XCTAssertTrue(mp4.frames.map(\.timestamp) == (0..<847).map { Int64($0 * 2048) }, "timestamps 0, 2048, …")

        XCTAssertTrue(mp4.log.contains { $0.hasPrefix("open datatype=7 format=1 type=1 timescale=48000 -> 0") }, "opened for raw frames")
        XCTAssertFalse(sync.log.contains { $0.contains("type=1") }, "the ac4 source never asks for raw frames")

        XCTAssertEqual(mp4.left.count, Self.total)
        XCTAssertEqual(mp4.left, sync.left, "the same sequence counters and presentation, sample for sample")
        XCTAssertEqual(mp4.right, sync.right, "the same parameters, sample for sample")
        XCTAssertEqual(DAATests.sequence(mp4.left[0]), 1020, "sample 0 is the first frame's sample 0")
        XCTAssertFalse(mp4.left.contains(-0.25), "no priming sample")
    }

    func testSeekInTheMP4LandsOnTheExactSample() throws {
        let target = 100_000   // frame 48 starts at 98304: 1696 samples in
        let out = try render("media", seekTo: target)
        XCTAssertEqual(out.left.count, Self.total - target)
        let frame48 = DAATests.frames[48].sequence, frame49 = DAATests.frames[49].sequence
        XCTAssertEqual(DAATests.sequence(out.left[0]), frame48)
        XCTAssertEqual(DAATests.sequence(out.left[2048 - 1696 - 1]), frame48, "the last sample of frame 48")
        XCTAssertEqual(DAATests.sequence(out.left[2048 - 1696]), frame49, "frame 49 starts exactly 352 samples in")
        XCTAssertFalse(out.left.contains(-0.25), "no priming sample")
        let first = try XCTUnwrap(out.frames.first)
        XCTAssertTrue(DAATests.frames[Int(first.timestamp) / 2048].isIFrame, "decoding restarted at an I-frame (the MP4's stss)")
    }

    // MARK: - The plugin's decoder-stream extension

    /// ChannelCheck.ac4's raw frames (sync frames' payloads).
    func rawFrames() throws -> [[UInt8]] {
        try AC4MP4Writer.frames(ofSyncFrameFile: DAATests.channelCheckPath).frames.map(\.raw)
    }

    func testOpenStreamOpensTheLibraryForRawFrames() throws {
        let plugin = try ABIPlugin(path: DAATests.pluginPath, nodeID: "test-daa", inputChannels: 0, outputChannels: 2, sampleRate: 48000)
        XCTAssertEqual(plugin.typeInputCodec, "ac4-sync ac4-raw")
        let node = try plugin.create(["library": .string(DAATests.doublePath)])
        try node.activate()
        double.reset()
        XCTAssertNil(node.openStream(codec: "ac4-raw"))
        let log = double.log().map { $0.replacingOccurrences(of: #" decoder_size=\d+ output_buffer_size=\d+"#, with: "", options: .regularExpression) }
        XCTAssertEqual(Array(log.prefix(3)), ["close -> 0", "query_memory datatype=7 format=1 type=1 timescale=48000 -> 0",
                                              "open datatype=7 format=1 type=1 timescale=48000 -> 0"])
        XCTAssertEqual(log.filter { $0.hasPrefix("setparam") }.count, 6, "every parameter set again")
        let raw = try rawFrames()
        var left: [Float] = []
        for i in 0..<5 {
            let out = try node.decode(raw[i], timestamp: i * 2048)
            XCTAssertEqual(out.status, 0, node.lastError)
            left += out.left
        }
        left += try node.drain().left
        XCTAssertEqual(left.count, 5 * 2048)
        for i in 0..<5 {
            XCTAssertEqual(DAATests.sequence(left[i * 2048]), DAATests.frames[i].sequence)
            XCTAssertEqual(DAATests.sequence(left[i * 2048 + 2047]), DAATests.frames[i].sequence)
        }
        XCTAssertTrue(double.log().contains("addbytes length=\(raw[0].count) consumed=\(raw[0].count) complete=1 ts=0 -> 0"),
                      "a raw frame goes to the library whole")
        XCTAssertTrue(double.log().contains { $0.hasPrefix("process sequence=\(DAATests.frames[4].sequence + 1) samples=2048") },
                      "the drain feeds a copy of the last raw frame with the sequence counter advanced")
        XCTAssertEqual(node.concealedFrames, 0, "the DAA interface reports no concealment of its own")

        double.reset()
        XCTAssertNil(node.openStream(codec: "ac4-raw"), "the same type again")
        XCTAssertFalse(double.log().contains { $0.hasPrefix("open") }, "needs no reopening")
        node.deactivate(); node.destroy()
    }

    func testOpenStreamRefusesOtherCodecsAndALibraryWithoutRawFrames() throws {
        let plugin = try ABIPlugin(path: DAATests.pluginPath, nodeID: "test-daa", inputChannels: 0, outputChannels: 2, sampleRate: 48000)
        let node = try plugin.create(["library": .string(DAATests.doublePath)])
        try node.activate()
        XCTAssertEqual(node.openStream(codec: "aac"), "the daa node decodes AC-4 (ac4-sync, ac4-raw), not aac")
        node.deactivate(); node.destroy()

        setenv("TEST_DOUBLE_DAA_FAIL", "dlb_decode_query_memory:1010:2", 1)   // activate's query is the 1st
        double.reset()
        let other = try plugin.create(["library": .string(DAATests.doublePath)])
        try other.activate()
        let why = try XCTUnwrap(other.openStream(codec: "ac4-raw"))
        XCTAssertTrue(why.hasPrefix("DAA error 1010: unsupported AC-4 bitstream type (dlb_decode_query_memory, AC-4 raw frames (MP4)"), why)
        XCTAssertEqual(try other.decode(try rawFrames()[0], timestamp: 0).status, 2, "the node stops")
        other.deactivate(); other.destroy()
    }

    /// The container's trim (an edit list's start, the last frame's
    /// padding) is left out of the output, wherever the library's delay
    /// puts those samples.
    func testTrimNextFrameLeavesOutWhatTheContainerSays() throws {
        for delay in [1000, 3168] {
            setenv("TEST_DOUBLE_DAA_DELAY", String(delay), 1)
            let plugin = try ABIPlugin(path: DAATests.pluginPath, nodeID: "test-daa", inputChannels: 0, outputChannels: 2, sampleRate: 48000)
            let node = try plugin.create(["library": .string(DAATests.doublePath)])
            try node.activate()
            XCTAssertNil(node.openStream(codec: "ac4-raw"))
            let raw = try rawFrames()
            var left: [Float] = []
            for i in 0..<5 {
                if i == 0 { node.trimNextFrame(skip: 100, discard: 0) }
                if i == 4 { node.trimNextFrame(skip: 0, discard: 48) }
                left += try node.decode(raw[i], timestamp: i * 2048).left
            }
            left += try node.drain().left
            XCTAssertEqual(left.count, 5 * 2048 - 148, "delay \(delay)")
            XCTAssertEqual(DAATests.sequence(left[2048 - 100 - 1]), DAATests.frames[0].sequence, "delay \(delay)")
            XCTAssertEqual(DAATests.sequence(left[2048 - 100]), DAATests.frames[1].sequence, "frame 1 follows 100 samples early")
            XCTAssertEqual(DAATests.sequence(left[left.count - 1]), DAATests.frames[4].sequence, "the end is frame 4's, 48 samples short")
            XCTAssertEqual(left.count - (4 * 2048 - 100), 2048 - 48)
            node.deactivate(); node.destroy()
        }
    }
}

// MARK: - Helpers

extension TestDoubleLibrary {
    /// A frame the double's addbytes completed: raw_ac4_frame's bytes, the
    /// input timestamp and the input type (0 sync, 1 raw).
    struct ReceivedFrame: Equatable {
        var bytes: [UInt8]
        var timestamp: Int64
        var type: Int32
    }

    /// Every frame received since the last reset, in order.
    func frames() throws -> [ReceivedFrame] {
        typealias Count = @convention(c) () -> Int
        typealias Frame = @convention(c) (Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int64>?,
                                          UnsafeMutablePointer<Int32>?) -> UnsafePointer<UInt8>?
        let count = try symbol("test_double_daa_frame_count", Count.self)
        let frame = try symbol("test_double_daa_frame", Frame.self)
        return (0..<count()).compactMap { i in
            var size = 0, timestamp: Int64 = 0, type: Int32 = 0
            guard let bytes = frame(i, &size, &timestamp, &type) else { return nil }
            return ReceivedFrame(bytes: Array(UnsafeBufferPointer(start: bytes, count: size)), timestamp: timestamp, type: type)
        }
    }
}

/// The decoder-stream extension (AGRAPH_EXT_DECODER_STREAM) of an
/// instance, called as the host's decoder job calls it. [the worker's
/// calls, made from the test's thread]
extension ABIPluginInstance {
    private var streamExtension: agraph_decoder_stream_ext_t? {
        pluginExtension(AGRAPH_EXT_DECODER_STREAM).map { $0.assumingMemoryBound(to: agraph_decoder_stream_ext_t.self).pointee }
    }

    /// `open_stream` for `codec` at 48 kHz, stereo: nil when accepted, else the plugin's reason.
    func openStream(codec: String, extradata: [UInt8] = []) -> String? {
        guard let open = streamExtension?.open_stream else { return "no \(AGRAPH_EXT_DECODER_STREAM)" }
        var error = [CChar](repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        let ok = codec.withCString { name in
            extradata.withUnsafeBufferPointer { extra in
                var info = agraph_stream_info_t(
                    codec: name, sample_rate: 48000, channels: 2, channel_mask: 0, codec_tag: AC4MP4Tests.ac4FourCC,
                    bits_per_coded_sample: 0, bits_per_raw_sample: 0, block_align: 0, frame_size: 0, profile: -1,
                    bit_rate: 0, extradata: extra.baseAddress, extradata_size: UInt32(extra.count), reserved0: 0)
                return open(instance, &info, &error, UInt32(error.count))
            }
        }
        return ok == 1 ? nil : String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func trimNextFrame(skip: UInt32, discard: UInt32) {
        streamExtension?.trim_next_frame?(instance, skip, discard)
    }

    var concealedFrames: UInt64 { streamExtension?.concealed_frames?(instance) ?? UInt64.max }
}
