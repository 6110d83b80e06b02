import XCTest
import AudioGraph
import AudioGraphSndFile
import TestSupport

/// `file` and `file-out`, checked against files made and read straight
/// through libsndfile.
final class FileNodeTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws { dir = try TemporaryDirectory() }
    override func tearDown() { dir = nil }

    func testFileSourceReadsFlacToTheExactSamples() throws {
        // Random 24-bit integers, full range: each must come out as k / 2^23.
        var rng = SplitMix64(seed: 42)
        let integers = (0..<30_001 * 2).map { _ in Int32.random(in: -8_388_608...8_388_607, using: &rng) }
        try writeSoundFileIntegers(dir.file("in.flac"), format: .flacInt24, channels: 2, sampleRate: 48000,
                                   samples: integers.map { $0 << 8 })
        let samples = integers.map { Float($0) / 8_388_608 }
        let out = try TestGraph.render(TestGraph.single("file", #"{"path": "in.flac"}"#), seconds: 10, directory: dir.path)
        XCTAssertEqual(out.count, 2)
        XCTAssertEqual(out[0].count, 30_001, "ends on the file's last frame")
        XCTAssertNil(firstMismatch(out[0], deinterleave(samples, channels: 2, channel: 0)))
        XCTAssertNil(firstMismatch(out[1], deinterleave(samples, channels: 2, channel: 1)))
    }

    func testStartAndLoop() throws {
        let ramp = (0..<4800).map { Float($0) / 8192 }     // exact in float and in 24 bits
        try writeSoundFile(dir.file("ramp.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000, samples: ramp)
        let started = try TestGraph.render(TestGraph.single("file", #"{"path": "ramp.wav", "start": 0.05}"#),
                                           seconds: 1, directory: dir.path)[0]
        XCTAssertNil(firstMismatch(started, Array(ramp[2400...])))
        let looped = try TestGraph.render(TestGraph.single("file", #"{"path": "ramp.wav", "loop": true}"#),
                                          seconds: 0.25, directory: dir.path)[0]
        XCTAssertEqual(looped.count, 12000)
        XCTAssertNil(firstMismatch(looped, Array((ramp + ramp + ramp)[0..<12000])), "loops seamlessly")
    }

    func testFloatWavIsWrittenBitExact() throws {
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "n", "type": "test-tone", "params": {"waveform": "white", "level": -1, "channels": 2, "duration": 1.3}},
              {"id": "g", "type": "gain", "params": {"gain": 2.5}},
              {"id": "out", "type": "file-out", "params": {"path": "out.wav"}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "n", "to": "g"}, {"from": "g", "to": "out"}, {"from": "g", "to": "cap"}]}
            """
        let captured = try TestGraph.render(json, seconds: 5, directory: dir.path)
        let file = try readSoundFile(dir.file("out.wav"))
        XCTAssertEqual(file.channels, 2)
        XCTAssertEqual(file.sampleRate, 48000)
        XCTAssertEqual(file.samples.count, 2 * 62400)
        for c in 0..<2 {
            let read = deinterleave(file.samples, channels: 2, channel: c)
            XCTAssertTrue(read.elementsEqual(captured[c]) { $0.bitPattern == $1.bitPattern }, "channel \(c) bit-exact")
        }
        XCTAssertGreaterThan(SignalAnalysis.peak(captured[0]), 1, "float keeps samples above full scale")
    }

    func testIntegerFormatsQuantiseAndClip() throws {
        for (name, params, step) in [("a.wav", #""sampleFormat": "int16""#, 1.0 / 32768),
                                     ("b.flac", "", 1.0 / 8_388_608),
                                     ("c.wav", #""format": "flac", "sampleFormat": "int16""#, 1.0 / 32768)] {
            let json = """
                {"format": "agraph/1", "nodes": [
                  {"id": "t", "type": "test-tone", "params": {"level": -3, "channels": 1, "duration": 0.5}},
                  {"id": "out", "type": "file-out", "params": {"path": "\(name)"\(params.isEmpty ? "" : ", " + params)}},
                  {"id": "cap", "type": "capture"}],
                 "links": [{"from": "t", "to": "out"}, {"from": "t", "to": "cap"}]}
                """
            let captured = try TestGraph.render(json, seconds: 1, directory: dir.path)[0]
            let file = try readSoundFile(dir.file(name))
            XCTAssertEqual(file.samples.count, 24000, name)
            let worst = zip(file.samples, captured).map { abs(Double($0) - Double($1)) }.max() ?? 1
            XCTAssertLessThanOrEqual(worst, step, "\(name): within one quantisation step")
        }
    }

    func testInterruptedRenderLeavesAValidFileWithEverythingRendered() throws {
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"channels": 2}},
              {"id": "out", "type": "file-out", "params": {"path": "cut.wav"}}],
             "links": [{"from": "t", "to": "out"}]}
            """
        let g = try TestGraph.validate(json, directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        var blocks = 0
        let result = OfflineRenderer(engine: compiled.engine).run(shouldStop: { blocks += 1; return blocks > 100 })
        XCTAssertEqual(result.ending, .interrupted)
        XCTAssertEqual(result.frames, 51200)
        // Not complete: the final name is not created; the work is kept
        // under the temporary name the notice gives.
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("cut.wav")))
        let kept = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix("cut.wav.agraph-") })
        XCTAssertEqual(result.notices.count, 1)
        XCTAssertTrue(result.notices.first?.contains(kept) ?? false, "\(result.notices)")
        let file = try readSoundFile(dir.file(kept))
        XCTAssertEqual(file.samples.count, 2 * 51200)
        XCTAssertEqual(SignalAnalysis.frequency(of: deinterleave(file.samples, channels: 2, channel: 1), sampleRate: 48000),
                       440, accuracy: 0.05)
    }

    /// SoundFile opens the file itself (an empty one is not truncated, so
    /// ext4 does not flush it at close): a file with data in it is still
    /// emptied first, and holds only what was written.
    func testWritingOverAFileWithDataLeavesOnlyTheNewFrames() throws {
        let path = dir.file("over.wav")
        try Data(repeating: 0xA5, count: 100_000).write(to: URL(fileURLWithPath: path))
        let ramp = (0..<480).map { Float($0) / 480 }
        let file = try SoundFile(writing: path, container: .wav, sampleFormat: .float32, channels: 1, sampleRate: 48000)
        try ramp.withUnsafeBufferPointer { try file.write($0.baseAddress!, frames: ramp.count) }
        try file.close()
        let back = try readSoundFile(path)
        XCTAssertEqual(back.samples, ramp)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        XCTAssertLessThan(size, 4 * 480 + 200, "old bytes left after the new data")
        // Offline, the header is rewritten every few chunks and on closing:
        // a render of many chunks reads whole.
        let long = dir.file("long.wav")
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"channels": 2, "duration": 10}},
              {"id": "out", "type": "file-out", "params": {"path": "\(long)"}}],
             "links": [{"from": "t", "to": "out"}]}
            """
        let g = try TestGraph.validate(json, directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 1024)
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.frames, 480_000)
        XCTAssertEqual(try readSoundFile(long).samples.count, 2 * 480_000)
    }

    func testTapRecordsTheSinkInputToAnotherFile() throws {
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"channels": 2, "duration": 0.2}},
              {"id": "n", "type": "null"}],
             "links": [{"from": "t", "to": "n"}]}
            """
        let g = try TestGraph.validate(json, directory: dir.path)
        // `render -o` adds a file-out node to the graph model, fed like the sink.
        let recorded = try g.recording(to: dir.file("tap.flac"))
        XCTAssertEqual(recorded.nodes.count, g.nodes.count + 1)
        XCTAssertEqual(recorded.nodes.last?.descriptor.typeID, "file-out")
        XCTAssertEqual(recorded.nodes.last?.inputs, recorded.node("n")?.inputs)
        XCTAssertThrowsError(try g.recording(to: dir.file("tap.xyz"))) { XCTAssertTrue("\($0)".contains(".wav, .w64"), "\($0)") }
        let compiled = try GraphCompiler.compile(recorded, maxFrames: 256)
        XCTAssertEqual(OfflineRenderer(engine: compiled.engine).run().frames, 9600)
        let file = try readSoundFile(dir.file("tap.flac"))
        XCTAssertEqual(file.samples.count, 2 * 9600)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(deinterleave(file.samples, channels: 2, channel: 0)), -12, accuracy: 0.05)
    }
}
