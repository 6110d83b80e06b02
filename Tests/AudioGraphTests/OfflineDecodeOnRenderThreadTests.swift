import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Issue 24: an offline render decodes on the thread that renders (the
/// decoder node pulls packets and decodes when its block needs frames,
/// straight into its output bus) and the file sink writes there too: no
/// worker thread, no ring. The output is sample for sample what the worker
/// path (live's: rings filled and drained by worker threads) gives, and
/// what the ffmpeg command-line tool decodes from the same file, made here.
final class OfflineDecodeOnRenderThreadTests: XCTestCase {
    var ffmpeg: String!
    var dir: TemporaryDirectory!
    var registry: NodeRegistry!

    override func setUpWithError() throws {
        guard let path = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        ffmpeg = path
        dir = try TemporaryDirectory("agraph-offline-decode")
        let (r, _) = TestGraph.pluginRegistry()
        guard r["ffmpeg"] != nil else { throw XCTSkip("the ffmpeg decoder plugin is not built (build with --build-tests)") }
        registry = r
    }

    /// 5.1 E-AC-3 (raw), a different sine in each channel, `seconds` long.
    func eac3(seconds: Int = 3) throws -> String {
        let out = dir.file("tone-5.1.ec3")
        let inputs = [500, 700, 900, 60, 1100, 1300].flatMap { ["-f", "lavfi", "-i", "sine=f=\($0):d=\(seconds):sample_rate=48000"] }
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y"] + inputs + [
            "-filter_complex", "[0][1][2][3][4][5]amerge=inputs=6,aformat=channel_layouts=5.1(side)",
            "-c:a", "eac3", "-b:a", "384k", "-f", "eac3", out])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make E-AC-3: \(r.stderr)") }
        return out
    }

    /// Stereo AAC in an M4A, `seconds` long (the container trims the
    /// encoder's delay and padding: exactly `seconds` of frames).
    func aac(seconds: Int = 2) throws -> String {
        let out = dir.file("tone-2.m4a")
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=1000:d=\(seconds):sample_rate=48000",
                                     "-f", "lavfi", "-i", "sine=f=1500:d=\(seconds):sample_rate=48000",
                                     "-filter_complex", "[0][1]amerge=inputs=2", "-c:a", "aac", "-b:a", "192k", out])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make an M4A: \(r.stderr)") }
        return out
    }

    /// ffmpeg's own decode of `media`: float, interleaved.
    func ffmpegDecode(_ media: String) throws -> [Float] {
        let raw = media + ".f32"
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", media, "-f", "f32le", raw])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not decode \(media): \(r.stderr)") }
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Threads of this process now.
    func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    struct Rendered {
        var channels: Int
        var samples: [Float]
        var frames: Int
        /// Most worker threads running, and most threads of the process
        /// above those before the render, seen between blocks.
        var workerThreads: Int
        var extraThreads: Int
    }

    /// Renders media → ffmpeg → file-out (float WAV) with `blockFrames`,
    /// on the render thread or (`onRenderThread` false) with worker threads.
    func render(_ media: String, blockFrames: Int, onRenderThread: Bool) throws -> Rendered {
        let out = dir.file("out-\(blockFrames)-\(onRenderThread).wav")
        let json = """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "src", "type": "media", "params": {"path": "\(media)"}},
                   {"id": "dec", "type": "ffmpeg"},
                   {"id": "out", "type": "file-out", "params": {"path": "\(out)"}}],
         "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}]}
        """
        let g = try TestGraph.validate(json, registry: registry, directory: dir.path).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        let before = threadCount()
        var renderer = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames)
        renderer.runsJobsOnRenderThread = onRenderThread
        var workers = 0, extra = 0
        let result = renderer.run(progress: { _ in
            workers = max(workers, compiled.engine.worker.runningThreads)
            extra = max(extra, self.threadCount() - before)
        })
        XCTAssertEqual(result.ending, .endOfStream)
        XCTAssertEqual(result.finishErrors, [])
        let read = try readSoundFile(out)
        return Rendered(channels: read.channels, samples: read.samples, frames: result.frames,
                        workerThreads: workers, extraThreads: extra)
    }

    /// The same samples as the worker path and as ffmpeg, at a block
    /// smaller than one decode (frames carried between blocks), the
    /// default block and a large one; exact frame counts; no thread.
    func check(_ media: String, channels: Int, frames expected: Int) throws {
        let theirs = try ffmpegDecode(media)
        let reference = try render(media, blockFrames: 1024, onRenderThread: false)
        XCTAssertEqual(reference.channels, channels)
        XCTAssertGreaterThanOrEqual(reference.workerThreads, 1, "the worker path runs its jobs on worker threads")
        XCTAssertGreaterThanOrEqual(reference.extraThreads, 1, "the worker path starts threads")
        for block in [64, 1024, 8192] {
            let direct = try render(media, blockFrames: block, onRenderThread: true)
            XCTAssertEqual(direct.channels, channels, "block \(block)")
            XCTAssertEqual(direct.frames, expected, "block \(block): frames rendered")
            XCTAssertEqual(direct.samples.count, expected * channels, "block \(block): frames in the file")
            XCTAssertEqual(direct.workerThreads, 0, "block \(block): no worker thread offline")
            XCTAssertEqual(direct.extraThreads, 0, "block \(block): the render started no thread")
            XCTAssertEqual(direct.samples.count, reference.samples.count, "block \(block): as long as the worker path's")
            var firstDifference: Int?
            for i in 0..<min(direct.samples.count, reference.samples.count) where direct.samples[i] != reference.samples[i] {
                firstDifference = i
                break
            }
            XCTAssertNil(firstDifference, "block \(block): differs from the worker path's render at sample \(firstDifference ?? -1)")
            let common = min(direct.samples.count, theirs.count)
            XCTAssertGreaterThan(common, expected * channels * 9 / 10)
            var largest: Float = 0
            for i in 0..<common { largest = max(largest, abs(direct.samples[i] - theirs[i])) }
            XCTAssertEqual(largest, 0, "block \(block): differs from ffmpeg's decode of the same file")
        }
    }

    func testEAC3DecodesOnTheRenderThreadToTheWorkerPathsSamples() throws {
        // A raw stream has no trim: whole frames of 1536, as ffmpeg decodes it.
        let media = try eac3(seconds: 3)
        let frames = try ffmpegDecode(media).count / 6
        XCTAssertEqual(frames % 1536, 0)
        XCTAssertGreaterThanOrEqual(frames, 3 * 48000)
        try check(media, channels: 6, frames: frames)
    }

    func testAACInMP4DecodesOnTheRenderThreadToTheWorkerPathsSamples() throws {
        // The MP4 trims the encoder's delay and padding: exactly 2 s.
        try check(try aac(seconds: 2), channels: 2, frames: 96000)
    }
}
