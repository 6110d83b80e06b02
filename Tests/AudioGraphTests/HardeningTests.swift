import XCTest
import AudioGraph
@testable import AudioGraphSndFile
import TestSupport

/// Issue 7's defects at the library level: time conversions, allocation
/// bounds, output files, damaged inputs.
final class HardeningTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws { dir = try TemporaryDirectory() }
    override func tearDown() { dir = nil }

    func testSecondsToFramesRefusesWhatDoesNotFit() {
        XCTAssertEqual(try FrameTime.frames(seconds: 1.5, sampleRate: 48000), 72000)
        XCTAssertEqual(try FrameTime.frames(seconds: FrameTime.maximumSeconds, sampleRate: 384_000), 12_109_824_000_000)
        for bad in [1e308, 1e15, .infinity, -.infinity, .nan, -1, 99999999999999999999.0] {
            XCTAssertThrowsError(try FrameTime.frames(seconds: bad, sampleRate: 48000), "\(bad)") { error in
                XCTAssertTrue("\(error)".contains("out of range"), "\(error)")
            }
            XCTAssertNil(FrameTime.parseSeconds(String(bad)))
        }
        XCTAssertEqual(FrameTime.parseSeconds("12.5"), 12.5)
        XCTAssertNil(FrameTime.parseSeconds("twelve"))
    }

    /// 64 channels at 384 kHz with a 60 s ring would allocate 8 GiB: refused
    /// at validation, with the numbers and what would fit.
    func testRingAllocationIsBoundedAtValidation() throws {
        let json = """
            {"format": "agraph/1", "sampleRate": 384000,
             "nodes": [{"id": "t", "type": "test-tone", "params": {"channels": 64, "frequency": 1000}},
                       {"id": "o", "type": "file-out", "params": {"path": "big.wav", "bufferTime": 60}}],
             "links": [{"from": "t", "to": "o"}]}
            """
        XCTAssertThrowsError(try TestGraph.validate(json, directory: dir.path)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("/nodes/1/params/bufferTime"), text)
            XCTAssertTrue(text.contains("384000 Hz × 64 channels"), text)
            XCTAssertTrue(text.contains("8192 MiB"), text)
            XCTAssertTrue(text.contains("at most 256 MiB"), text)
        }
        // The largest time the message offers is accepted.
        let fits = json.replacingOccurrences(of: "\"bufferTime\": 60", with: "\"bufferTime\": 2.73")
        XCTAssertNoThrow(try TestGraph.validate(fits, directory: dir.path))
        XCTAssertEqual(RingBudget.bytes(frames: Int.max / 2, channels: 64), nil, "overflow is refused, not wrapped")
    }

    /// A `file` source's ring is bounded the same way.
    func testFileSourceRingIsBounded() throws {
        try writeSoundFile(dir.file("wide.wav"), format: .wavFloat32, channels: 64, sampleRate: 192_000,
                           samples: [Float](repeating: 0, count: 64 * 100))
        let json = TestGraph.single("file", #"{"path": "wide.wav", "bufferTime": 60}"#, sampleRate: 192_000)
        XCTAssertThrowsError(try TestGraph.validate(json, directory: dir.path)) { error in
            XCTAssertTrue("\(error)".contains("/nodes/0/params/bufferTime"), "\(error)")
        }
    }

    /// A FLAC cut mid-frame with no sample count (what a full disk leaves):
    /// the repair keeps every whole frame, cuts the rest, and writes the count.
    func testFLACRepairKeepsEveryCompleteFrame() throws {
        let path = dir.file("cut.flac")
        let tone = Synth.sine(frequency: 1000, amplitude: 0.5, sampleRate: 48000, frames: 48000 * 3)
        try writeSoundFile(path, format: .flacInt24, channels: 1, sampleRate: 48000, samples: tone)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes = Array(bytes.prefix(bytes.count * 2 / 3))
        // Zero the total samples (36 bits) as an unfinished encoder leaves it.
        bytes[21] &= 0xF0
        for i in 22...25 { bytes[i] = 0 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let kept = try XCTUnwrap(FLACRepair.repair(path: path))
        XCTAssertGreaterThan(kept, 48000)
        XCTAssertLessThan(kept, 48000 * 3)
        XCTAssertEqual(kept % 4096, 0, "whole frames of the encoder's block size")
        let info = try soundFileInfo(path)
        XCTAssertEqual(info.frames, kept)
        let decoded = try readSoundFile(path)
        XCTAssertEqual(decoded.samples.count, kept, "decodes to the end without error")
        let error = zip(decoded.samples, tone.prefix(kept)).map { abs($0 - $1) }.max() ?? 1
        XCTAssertLessThan(error, 1.0 / 4_000_000, "the kept samples are the tone (24-bit)")
        // Not FLAC: left alone.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir.file("x.flac")))
        XCTAssertNil(FLACRepair.repair(path: dir.file("x.flac")))
    }

    /// A truncated WAV: libsndfile plays what is there and says nothing; the
    /// `file` source reads its header and reports the truncation.
    func testTruncatedWAVIsReportedWithThePosition() throws {
        try writeSoundFile(dir.file("t.wav"), format: .wavInt16, channels: 2, sampleRate: 48000,
                           samples: [Float](repeating: 0.25, count: 48000 * 2))
        let whole = try Data(contentsOf: URL(fileURLWithPath: dir.file("t.wav")))
        try whole.prefix(44 + 4 * 10_000).write(to: URL(fileURLWithPath: dir.file("t.wav")))
        let file = try SoundFile(reading: dir.file("t.wav"))
        XCTAssertEqual(file.declaredFrames, 48000)
        XCTAssertThrowsError(try TestGraph.render(TestGraph.single("file", #"{"path": "t.wav"}"#), seconds: 2, directory: dir.path)) { error in
            XCTAssertTrue("\(error)".contains("ends at frame 10000"), "\(error)")
        }
        let skipped = try TestGraph.render(TestGraph.single("file", #"{"path": "t.wav", "onError": "skip"}"#), seconds: 2, directory: dir.path)
        XCTAssertEqual(skipped[0].count, 10_000, "what is there plays, then the stream ends")
    }

    /// Offline file-out writes a temporary file and renames it when done;
    /// live (in place) writes the final name from the start.
    func testOfflineOutputAppearsOnlyWhenComplete() throws {
        let json = """
            {"format": "agraph/1",
             "nodes": [{"id": "t", "type": "test-tone", "params": {"duration": 0.5}},
                       {"id": "o", "type": "file-out", "params": {"path": "out.wav"}}],
             "links": [{"from": "t", "to": "o"}]}
            """
        let g = try TestGraph.validate(json, directory: dir.path)
        let offline = try GraphCompiler.compile(g, maxFrames: 512)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.wav")), "not under its name while rendering")
        let result = OfflineRenderer(engine: offline.engine).run()
        XCTAssertEqual(result.finishErrors, [])
        XCTAssertEqual(try readSoundFile(dir.file("out.wav")).samples.count, 48000)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["out.wav"], "no temporary file left")

        let live = try GraphCompiler.compile(g, maxFrames: 512, live: true)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("out.wav")))
        XCTAssertEqual(try readSoundFile(dir.file("out.wav")).samples.count, 0, "recorded in place from the start")
        _ = OfflineRenderer(engine: live.engine).run()
    }
}

/// Threads mark their role; the offline renderer's thread is the audio
/// thread while it renders, the worker marks itself.
final class ThreadRoleTests: XCTestCase {
    func testRolesFollowTheThreads() throws {
        XCTAssertEqual(ThreadRole.current, .main)
        final class Probe: RenderNode, BackgroundJob, @unchecked Sendable {
            var renderRole: ThreadRole?
            var serviceRole: ThreadRole?
            func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {}
            func render(frames: Int) { if renderRole == nil { renderRole = ThreadRole.current } }
            var backgroundJob: (any BackgroundJob)? { self }
            func service() -> Bool { if serviceRole == nil { serviceRole = ThreadRole.current }; return false }
            func isReady(forFrames frames: Int) -> Bool { serviceRole != nil }
            func finish() throws {}
        }
        let probe = Probe()
        let engine = try Engine(steps: [.init(id: "p", node: probe, inputs: [], outputChannels: nil)], sampleRate: 48000, maxFrames: 64)
        _ = OfflineRenderer(engine: engine).run(maxFrames: 256)
        XCTAssertEqual(probe.renderRole, .audio)
        XCTAssertEqual(probe.serviceRole, .worker)
        XCTAssertEqual(ThreadRole.current, .main, "the mark is cleared after rendering")
    }
}
