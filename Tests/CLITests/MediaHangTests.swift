import Foundation
import TestSupport
import XCTest

/// Issue 22 (B): media and playlist inputs that used to hang `agraph` (a
/// FIFO named as a `media` path, a looping list or window that gives no
/// frame), each run as a user runs it, with a time bound; a run still going
/// at the bound is sent SIGTERM, which must end it.
final class MediaHangTests: XCTestCase {
    struct Outcome {
        var status: Int32
        var stderr: String
        /// Still running at the time bound.
        var hung: Bool
        /// When it hung: whether SIGTERM then ended it within 5 s.
        var sigtermHonoured: Bool
    }

    var dir: TemporaryDirectory!
    var ffmpeg: String!

    override func setUpWithError() throws {
        guard let path = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        ffmpeg = path
        dir = try TemporaryDirectory("agraph-media-hang")
    }

    /// Runs `agraph arguments` in the test folder for at most `timeout`
    /// seconds; then SIGTERM, 5 s, SIGKILL.
    func agraph(_ arguments: [String], timeout: Double = 20, file: StaticString = #filePath, line: UInt = #line) throws -> Outcome {
        let errPath = dir.file("stderr-\(UUID().uuidString)")
        let child = try ChildProcess([try CLITests.agraphPath()] + arguments, directory: dir.path, stderr: .file(errPath))
        let exited = child.waitUntilExit(timeout: timeout)
        var honoured = false
        if !exited {
            child.send(SIGTERM)
            honoured = child.waitUntilExit(timeout: 5)
            if !honoured {
                child.send(SIGKILL)
                child.waitUntilExit()
            }
        }
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        XCTAssertTrue(exited, "agraph \(arguments.joined(separator: " ")) still ran after \(timeout) s (SIGTERM \(honoured ? "ended it" : "did not end it"))\n\(stderr)",
                      file: file, line: line)
        return Outcome(status: child.terminationStatus, stderr: stderr, hung: !exited, sigtermHonoured: honoured)
    }

    func write(_ text: String, to name: String) throws -> String {
        let path = dir.file(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `seconds` of a 440 Hz sine, stereo, 48 kHz, as a WAV made by ffmpeg;
    /// 0 s gives a WAV with a header and no frame.
    func tone(_ name: String, seconds: Double) throws -> String {
        let out = dir.file(name)
        var args = ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=\(seconds > 0 ? seconds : 1)", "-ac", "2", "-ar", "48000"]
        args += seconds == 0 ? ["-frames:a", "0"] : ["-t", "\(seconds)"]
        let r = try runTool(ffmpeg, args + [out])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make \(name): \(r.stderr)") }
        return out
    }

    func mediaGraph(_ params: String, name: String) throws -> String {
        try write(#"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "m", "type": "media", "params": {\#(params)}}, {"id": "dec", "type": "ffmpeg"}, {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}], "links": [{"from": "m", "to": "dec"}, {"from": "dec", "to": "out"}]}"#,
                  to: name)
    }

    func playlistGraph(items: String, name: String) throws -> String {
        try write(#"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "pl", "type": "playlist", "params": {"layout": "stereo", "loop": true, "items": [\#(items)]}}, {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}], "links": [{"from": "pl", "to": "out"}]}"#,
                  to: name)
    }

    // MARK: 4. a FIFO as a media path

    func testAFIFOAsAMediaPathIsRefusedByValidateRenderAndProbeWithoutBlocking() throws {
        XCTAssertEqual(mkfifo(dir.file("pipe.m4a"), 0o644), 0)
        XCTAssertEqual(mkfifo(dir.file("pipe.ac4"), 0o644), 0)
        let graph = try mediaGraph(#""path": "pipe.m4a""#, name: "fifo.json")
        for verb in ["validate", "render"] {
            let r = try agraph([verb, graph])
            XCTAssertEqual(r.status, 1, "\(verb): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("/nodes/0/params/path"), "\(verb): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("FIFO"), "\(verb): \(r.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.wav")), "nothing rendered")
        for name in ["pipe.m4a", "pipe.ac4"] {
            let r = try agraph(["probe", name])
            XCTAssertEqual(r.status, 1, "probe \(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(name) && r.stderr.contains("FIFO"), "probe \(name): \(r.stderr)")
        }
    }

    func testAMediaPathIsNeverReadThroughAnotherFFmpegProtocol() throws {
        // "pipe:0" names FFmpeg's stdin protocol; as a path it is a file
        // that does not exist here.
        let r = try agraph(["probe", "pipe:0"])
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("pipe:0"), r.stderr)
    }

    // MARK: 3. loops that give no frame

    func testALoopingPlaylistOfAZeroFrameItemEndsWithAReason() throws {
        _ = try tone("empty.wav", seconds: 0)
        let graph = try playlistGraph(items: #"{"path": "empty.wav"}"#, name: "empty-loop.json")
        let r = try agraph(["render", graph, "--duration", "2"])
        XCTAssertFalse(r.hung)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("no item of the looping playlist gave a frame"), r.stderr)
        let out = try readSoundFile(dir.file("out.wav"))
        XCTAssertEqual(out.samples.count, 0, "nothing to play: no frame")
    }

    func testALoopingPlaylistWithOneItemThatPlaysKeepsLoopingPastAnEmptyOne() throws {
        _ = try tone("empty.wav", seconds: 0)
        _ = try tone("tone.wav", seconds: 0.25)
        let graph = try playlistGraph(items: #"{"path": "empty.wav"}, {"path": "tone.wav"}"#, name: "mixed-loop.json")
        let r = try agraph(["render", graph, "--duration", "1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("no item of the looping playlist"), r.stderr)
        let out = try readSoundFile(dir.file("out.wav"))
        XCTAssertEqual(out.samples.count / out.channels, 48_000, "the tone loops up to --duration")
    }

    func testAWindowShorterThanOneFrameIsRefusedAtItsEnd() throws {
        _ = try tone("tone.wav", seconds: 2)
        let list = try playlistGraph(items: #"{"path": "tone.wav", "start": 1.0, "end": 1.00001}"#, name: "tiny-item.json")
        let media = try mediaGraph(#""path": "tone.wav", "start": 1.0, "end": 1.00001, "loop": true"#, name: "tiny-media.json")
        for (graph, pointer) in [(list, "/nodes/0/params/items/0/end"), (media, "/nodes/0/params/end")] {
            for verb in ["validate", "render"] {
                let r = try agraph([verb, graph] + (verb == "render" ? ["--duration", "2"] : []))
                XCTAssertEqual(r.status, 1, "\(verb) \(graph): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains(pointer), "\(verb) \(graph): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("less than one frame after start"), r.stderr)
            }
        }
    }

    func testAMediaLoopOverAStreamWithNoFrameFailsWithAReason() throws {
        _ = try tone("empty.wav", seconds: 0)
        let graph = try mediaGraph(#""path": "empty.wav", "loop": true"#, name: "media-empty-loop.json")
        let r = try agraph(["render", graph, "--duration", "2"])
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("nothing to loop"), r.stderr)
    }

    // MARK: 15. a damaged channel count

    func testAnMKVWithACorruptChannelCountIsReportedAtTheMediaNodeNamingTheFile() throws {
        let good = dir.file("good.mkv")
        let made = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=1",
                                        "-ac", "2", "-ar", "48000", "-c:a", "pcm_s16le", good])
        guard made.status == 0 else { throw XCTSkip("ffmpeg could not make an MKV: \(made.stderr)") }
        // Matroska's Channels element: ID 0x9F, size 1, value 2; made 0.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        guard let at = (0..<(bytes.count - 2)).first(where: { bytes[$0] == 0x9F && bytes[$0 + 1] == 0x81 && bytes[$0 + 2] == 2 }) else {
            return XCTFail("no Channels element in the MKV ffmpeg made")
        }
        bytes[at + 2] = 0
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("bad.mkv")))
        let graph = try mediaGraph(#""path": "bad.mkv""#, name: "bad-mkv.json")
        for verb in ["validate", "render"] {
            let r = try agraph([verb, graph])
            XCTAssertEqual(r.status, 1, "\(verb): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("/nodes/0/params/path (node 'm')"), "\(verb): at the media node: \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("bad.mkv") && r.stderr.contains("no channels"), "\(verb): names the file: \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("/links/0"), "\(verb): not at the link: \(r.stderr)")
        }
    }
}
