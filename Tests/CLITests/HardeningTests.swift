import Foundation
import TestSupport
import XCTest

/// The defects found by attacking the build (issue 7), each reproduced as a
/// user would meet it, through the `agraph` executable.
final class HardeningTests: XCTestCase {
    struct Outcome {
        var status: Int32
        var stderr: String
        var seconds: Double
    }

    /// Runs `agraph` (through `/bin/sh -c` when `shell` is given, with the
    /// agraph path as `$0`), killing it after `timeout` seconds: a hang
    /// fails the test instead of stalling the suite.
    func run(_ arguments: [String], timeout: Double = 60, shell: String? = nil, in directory: String? = nil,
             file: StaticString = #filePath, line: UInt = #line) throws -> Outcome {
        let agraph = try CLITests.agraphPath()
        let dir = try TemporaryDirectory("agraph-hardening-io")
        let errPath = dir.file("stderr")
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let process = Process()
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", shell + "; exec \"$0\" \"$@\"", agraph] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: agraph)
            process.arguments = arguments
        }
        process.currentDirectoryURL = URL(fileURLWithPath: directory ?? CLITests.repoRoot.path)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        let started = Date()
        try process.run()
        let deadline = started.addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        let hung = process.isRunning
        if hung { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try err.close()
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        XCTAssertFalse(hung, "agraph \(arguments.joined(separator: " ")) still ran after \(timeout) s\n\(stderr)", file: file, line: line)
        XCTAssertEqual(process.terminationReason, .exit, "agraph \(arguments.joined(separator: " ")) died of a signal\n\(stderr)",
                       file: file, line: line)
        return Outcome(status: process.terminationStatus, stderr: stderr, seconds: Date().timeIntervalSince(started))
    }

    func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// A graph: a tone of `seconds` into a file-out at `output`.
    func toneGraph(seconds: Double, output: String, channels: Int = 2, extra: String = "") -> String {
        #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"channels": \#(channels), "duration": \#(seconds)}}, {"id": "o", "type": "file-out", "params": {"path": "\#(output)"\#(extra)}}], "links": [{"from": "t", "to": "o"}]}"#
    }

    /// A sine at half scale in both channels of interleaved stereo, 48 kHz.
    func stereoSine(frequency: Double, seconds: Double) -> [Float] {
        Synth.sine(frequency: frequency, amplitude: 0.5, sampleRate: 48000, frames: Int(seconds * 48000)).flatMap { [$0, $0] }
    }

    // MARK: 1. seconds out of range

    func testRenderDurationOutOfRangeIsAUsageError() throws {
        let dir = try TemporaryDirectory()
        try write(toneGraph(seconds: 1, output: "x.wav"), to: dir.file("g.json"))
        for value in ["1e308", "1e15", "inf", "99999999999999999999", "nan"] {
            let r = try run(["render", dir.file("g.json"), "--duration", value, "--quiet"])
            XCTAssertEqual(r.status, 64, "--duration \(value): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--duration"), r.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("x.wav")), "nothing rendered")
    }

    // MARK: 5. non-regular files

    func testFIFOAsInputIsRefusedAtValidationWithoutBlocking() throws {
        let dir = try TemporaryDirectory()
        XCTAssertEqual(mkfifo(dir.file("pipe.wav"), 0o644), 0)
        try write(#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "pipe.wav"}}, {"id": "n", "type": "null"}], "links": [{"from": "f", "to": "n"}]}"#,
                  to: dir.file("g.json"))
        let r = try run(["validate", dir.file("g.json")], timeout: 20)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("/nodes/0/params/path"), r.stderr)
        XCTAssertTrue(r.stderr.contains("FIFO"), r.stderr)
    }

    func testGraphPathThatIsNotARegularFileOrTooLargeIsRefused() throws {
        let dir = try TemporaryDirectory()
        XCTAssertEqual(mkfifo(dir.file("graph.json"), 0o644), 0)
        for path in ["/dev/zero", dir.file("graph.json"), dir.path] {
            let r = try run(["validate", path], timeout: 20)
            XCTAssertEqual(r.status, 1, path)
            XCTAssertTrue(r.stderr.contains("not a regular file"), "\(path): \(r.stderr)")
        }
        // A regular file over the limit (16 MiB): refused by its size.
        let big = dir.file("big.json")
        FileManager.default.createFile(atPath: big, contents: Data(count: 17 << 20))
        let r = try run(["validate", big], timeout: 20)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("16 MiB"), r.stderr)
    }

    // MARK: 7. outputs that would destroy inputs

    func testOutputOverAnInputTheGraphFileOrAnotherOutputIsRefused() throws {
        let dir = try TemporaryDirectory()
        let input = dir.file("in.wav")
        try writeSoundFile(input, format: .wavFloat32, channels: 2, sampleRate: 48000, samples: [Float](repeating: 0.25, count: 96_000))
        let before = try Data(contentsOf: URL(fileURLWithPath: input))
        try FileManager.default.createSymbolicLink(atPath: dir.file("alias.wav"), withDestinationPath: input)
        let cases: [(String, String)] = [
            // A file-out onto the file the source reads (directly, and through a symlink and `..`).
            (#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.wav"}}, {"id": "o", "type": "file-out", "params": {"path": "in.wav"}}], "links": [{"from": "f", "to": "o"}]}"#, "which 'f' reads"),
            (#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.wav"}}, {"id": "o", "type": "file-out", "params": {"path": "alias.wav"}}], "links": [{"from": "f", "to": "o"}]}"#, "which 'f' reads"),
            (#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.wav"}}, {"id": "o", "type": "file-out", "params": {"path": "../\#((dir.path as NSString).lastPathComponent)/in.wav"}}], "links": [{"from": "f", "to": "o"}]}"#, "which 'f' reads"),
            // Two outputs on one path.
            (#"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"duration": 1}}, {"id": "m", "type": "mixer", "params": {"inputs": 1}}, {"id": "a", "type": "file-out", "params": {"path": "same.wav"}}, {"id": "b", "type": "file-out", "params": {"path": "./same.wav"}}], "links": [{"from": "t", "to": "m:in0"}, {"from": "m", "to": "a"}, {"from": "t", "to": "b"}]}"#, "both write"),
            // The graph file itself.
            (toneGraph(seconds: 1, output: "g.json"), "the graph file itself"),
        ]
        for (text, expected) in cases {
            try write(text, to: dir.file("g.json"))
            let r = try run(["render", dir.file("g.json"), "--quiet"])
            XCTAssertEqual(r.status, 1, text)
            XCTAssertTrue(r.stderr.contains(expected), "\(expected): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("/params/path"), r.stderr)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: input)), before, "the input is untouched")
            XCTAssertTrue(try String(contentsOfFile: dir.file("g.json"), encoding: .utf8).hasPrefix("{"), "the graph is untouched")
        }
        // `render -o` onto the input is refused too.
        try write(#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.wav"}}, {"id": "n", "type": "null"}], "links": [{"from": "f", "to": "n"}]}"#,
                  to: dir.file("g.json"))
        let r = try run(["render", dir.file("g.json"), "-o", input, "--quiet"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("is read by 'f'"), r.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: input)), before)
    }

    // MARK: 8. temporary name, rename when complete

    func testAFailedOrInterruptedRenderLeavesTheExistingFileUntouched() throws {
        let dir = try TemporaryDirectory()
        let output = dir.file("out.wav")
        try writeSoundFile(output, format: .wavFloat32, channels: 2, sampleRate: 48000, samples: [Float](repeating: 0.5, count: 2000))
        let before = try Data(contentsOf: URL(fileURLWithPath: output))
        // A truncated input makes the render fail part way.
        let input = dir.file("in.flac")
        try writeSoundFile(input, format: .flacInt24, channels: 2, sampleRate: 48000,
                           samples: stereoSine(frequency: 440, seconds: 4))
        let whole = try Data(contentsOf: URL(fileURLWithPath: input))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: input))
        try write(#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.flac"}}, {"id": "o", "type": "file-out", "params": {"path": "out.wav"}}], "links": [{"from": "f", "to": "o"}]}"#,
                  to: dir.file("g.json"))
        let r = try run(["render", dir.file("g.json"), "--quiet"])
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: output)), before, "the old file is still there, whole")
        XCTAssertTrue(r.stderr.contains("is unchanged"), r.stderr)

        // The same render of a whole input replaces it, and leaves no temporary file.
        try whole.write(to: URL(fileURLWithPath: input))
        let ok = try run(["render", dir.file("g.json"), "--quiet"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        let result = try readSoundFile(output)
        XCTAssertEqual(result.samples.count, 4 * 48000 * 2)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".part") }
        XCTAssertEqual(leftovers.count, 1, "only the failed render's partial file: \(leftovers)")
    }

    /// Ctrl-C: agraph stops at the next block and exits 130; the files the
    /// graph names are not touched, and what was rendered is kept under the
    /// temporary names it reports, valid and holding every frame.
    func testInterruptedRenderKeepsItsWorkAndTheFinalNamesUntouched() throws {
        let dir = try TemporaryDirectory()
        let graph = dir.file("endless.json")
        try #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"channels": 2}}, {"id": "o", "type": "file-out", "params": {"path": "graph-out.wav"}}], "links": [{"from": "t", "to": "o"}]}"#
            .write(toFile: graph, atomically: true, encoding: .utf8)
        try "old".write(toFile: dir.file("graph-out.wav"), atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try CLITests.agraphPath())
        process.arguments = ["render", graph, "--duration", "36000", "-o", dir.file("tap.flac"), "--quiet"]
        process.standardInput = FileHandle.nullDevice
        let errPipe = Pipe()
        process.standardError = errPipe
        try process.run()
        func partials() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".part") }.sorted()
        }
        // Wait until rendering is under way, then press Ctrl-C.
        let deadline = Date().addingTimeInterval(20)
        while partials().allSatisfy({ ((try? FileManager.default.attributesOfItem(atPath: dir.file($0))[.size] as? Int) ?? 0) < 1_000_000 }),
              Date() < deadline, process.isRunning {
            usleep(20_000)
        }
        process.interrupt()
        let stderr = String(decoding: errPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 130)
        XCTAssertEqual(try String(contentsOfFile: dir.file("graph-out.wav"), encoding: .utf8), "old")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("tap.flac")))
        let kept = partials()
        XCTAssertEqual(kept.count, 2, "\(kept)")
        for name in kept {
            XCTAssertTrue(stderr.contains(name), "the kept file is named: \(stderr)")
        }
        let files = try kept.map { try readSoundFile(dir.file($0)) }
        XCTAssertEqual(files.first?.samples.count, files.last?.samples.count, "both sinks hold every frame rendered")
        for (name, file) in zip(kept, files) {
            XCTAssertEqual(file.channels, 2, name)
            XCTAssertGreaterThan(file.samples.count, 100_000, name)
            let left = deinterleave(file.samples, channels: 2, channel: 0)
            XCTAssertEqual(SignalAnalysis.frequency(of: left, sampleRate: 48000), 440, accuracy: 0.05, name)
        }
    }

    // MARK: 9. WAV over 4 GiB

    /// 64 channels of float silence at 8 kHz for 2,100 s: 4.3 GB, past the
    /// RIFF limit. The file is RF64 and reads back with every frame.
    func testWAVOverFourGiBKeepsItsLength() throws {
        let dir = try TemporaryDirectory()
        var fs = statvfs()
        guard statvfs(dir.path, &fs) == 0, Double(fs.f_bavail) * Double(fs.f_frsize) > 12e9 else {
            throw XCTSkip("needs 12 GB free in \(dir.path) to write a 4.3 GB file")
        }
        let seconds = 2100.0
        try write(#"{"format": "agraph/1", "sampleRate": 8000, "nodes": [{"id": "t", "type": "test-tone", "params": {"waveform": "silence", "channels": 64, "duration": \#(seconds)}}, {"id": "o", "type": "file-out", "params": {"path": "big.wav"}}], "links": [{"from": "t", "to": "o"}]}"#,
                  to: dir.file("g.json"))
        let r = try run(["render", dir.file("g.json"), "--quiet", "--block-frames", "8192"], timeout: 600)
        XCTAssertEqual(r.status, 0, r.stderr)
        let big = dir.file("big.wav")
        let size = (try FileManager.default.attributesOfItem(atPath: big)[.size] as? Int) ?? 0
        XCTAssertGreaterThan(size, 1 << 32, "over 4 GiB")
        var head = [UInt8](repeating: 0, count: 4)
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: big))
        head = [UInt8](try handle.read(upToCount: 4) ?? Data())
        try handle.close()
        XCTAssertEqual(String(decoding: head, as: UTF8.self), "RF64")
        let info = try soundFileInfo(big)
        XCTAssertEqual(info.frames, Int(seconds * 8000), "every frame, no wrapped length")
        XCTAssertEqual(info.channels, 64)
    }

    // MARK: 10. FLAC after a write error

    /// A render to FLAC that hits the file-size limit (as a full disk
    /// would): agraph says how much it kept, and what it kept decodes to
    /// exactly that many frames.
    func testFLACCutByAWriteErrorStillDecodes() throws {
        let dir = try TemporaryDirectory()
        try write(toneGraph(seconds: 60, output: "out.flac"), to: dir.file("g.json"))
        // 400 KiB: a few seconds of FLAC. SIGXFSZ ignored, so the write fails with EFBIG.
        let r = try run(["render", dir.file("g.json"), "--quiet"], shell: "trap '' XFSZ; ulimit -f 800")
        XCTAssertEqual(r.status, 1, r.stderr)
        guard let match = r.stderr.firstMatch(of: #/(\d+) frames \(([\d.]+) s\) were written and kept in (\S+);/#) else {
            return XCTFail("says what was kept: \(r.stderr)")
        }
        let kept = Int(match.1) ?? -1
        XCTAssertGreaterThan(kept, 48000, "more than a second was kept")
        let partial = String(match.3)
        let info = try soundFileInfo(partial)
        XCTAssertEqual(info.frames, kept, "STREAMINFO holds the frames kept")
        let decoded = try readSoundFile(partial)
        XCTAssertEqual(decoded.samples.count, kept * 2, "every kept frame decodes")
        let left = deinterleave(decoded.samples, channels: 2, channel: 0)
        XCTAssertEqual(SignalAnalysis.frequency(of: left, sampleRate: 48000), 440, accuracy: 0.05)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.flac")))
    }

    // MARK: 11. corrupt or truncated inputs

    func testCorruptOrTruncatedInputsFailWithFileAndPositionUnlessSkipped() throws {
        let dir = try TemporaryDirectory()
        let tone = stereoSine(frequency: 1000, seconds: 2)
        try writeSoundFile(dir.file("t.flac"), format: .flacInt24, channels: 2, sampleRate: 48000, samples: tone)
        try writeSoundFile(dir.file("t.wav"), format: .wavInt16, channels: 2, sampleRate: 48000, samples: tone)
        var flac = try Data(contentsOf: URL(fileURLWithPath: dir.file("t.flac")))
        try flac.prefix(flac.count / 2).write(to: URL(fileURLWithPath: dir.file("cut.flac")))
        for i in (flac.count / 2)..<(flac.count / 2 + 400) { flac[i] ^= 0x5A }
        try flac.write(to: URL(fileURLWithPath: dir.file("bad.flac")))
        let wav = try Data(contentsOf: URL(fileURLWithPath: dir.file("t.wav")))
        try wav.prefix(wav.count / 2).write(to: URL(fileURLWithPath: dir.file("cut.wav")))
        for name in ["cut.flac", "bad.flac", "cut.wav"] {
            for onError in ["fail", "skip"] {
                try write(#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "\#(name)", "onError": "\#(onError)"}}, {"id": "o", "type": "file-out", "params": {"path": "out.wav"}}], "links": [{"from": "f", "to": "o"}]}"#,
                          to: dir.file("g.json"))
                let r = try run(["render", dir.file("g.json"), "--quiet"])
                XCTAssertTrue(r.stderr.contains(name), "\(name): names the file: \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("at frame"), "\(name): gives the position: \(r.stderr)")
                if onError == "fail" {
                    XCTAssertEqual(r.status, 1, "\(name): \(r.stderr)")
                } else {
                    XCTAssertEqual(r.status, 0, "\(name): \(r.stderr)")
                    XCTAssertTrue(r.stderr.contains("warning"), r.stderr)
                    let out = try readSoundFile(dir.file("out.wav"))
                    XCTAssertGreaterThan(out.samples.count, 2 * 4800, "\(name): what decoded was played")
                    XCTAssertLessThan(out.samples.count, tone.count, "\(name): the stream ended at the damage")
                }
            }
        }
    }

    // MARK: 12. paths

    func testNULInAPathAndADirectoryAsOutputAreValidationErrors() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.file("folder"), withIntermediateDirectories: true)
        let cases: [(String, String)] = [
            (toneGraph(seconds: 1, output: #"x.wav\u0000.txt"#), "NUL"),
            (toneGraph(seconds: 1, output: "folder"), "a directory"),
            (toneGraph(seconds: 1, output: "folder/"), "folder"),
            (#"{"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "a\u0000b.wav"}}, {"id": "n", "type": "null"}], "links": [{"from": "f", "to": "n"}]}"#, "NUL"),
        ]
        for (text, expected) in cases {
            try write(text, to: dir.file("g.json"))
            let r = try run(["validate", dir.file("g.json")])
            XCTAssertEqual(r.status, 1, text)
            XCTAssertTrue(r.stderr.contains(expected), "\(expected): \(r.stderr)")
            XCTAssertNotNil(r.stderr.firstMatch(of: #/g\.json:\d+:\d+: error: /nodes/\d/params/path/#), "line:col and pointer: \(r.stderr)")
        }
    }

    // MARK: 13. foreign code

    /// A graph naming a library outside the vendor-library folders: no
    /// command loads it (its constructor would leave a marker file).
    func testAGraphCannotMakeAgraphLoadALibrary() throws {
        let dir = try TemporaryDirectory()
        let marker = dir.file("constructor-ran")
        try write("#include <stdio.h>\n__attribute__((constructor)) static void evil(void) { FILE *f = fopen(\"\(marker)\", \"w\"); if (f) fclose(f); }\n",
                  to: dir.file("evil.c"))
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
        cc.arguments = ["-shared", "-fPIC", "-o", dir.file("evil.so"), dir.file("evil.c")]
        try cc.run()
        cc.waitUntilExit()
        try XCTSkipUnless(cc.terminationStatus == 0, "no C compiler to build the fixture")
        for library in [dir.file("evil.so"), "evil.so", "./evil.so"] {
            try write(#"{"format": "agraph/1", "nodes": [{"id": "s", "type": "ac4", "params": {"path": "x.ac4"}}, {"id": "d", "type": "daa", "params": {"library": "\#(library)"}}, {"id": "n", "type": "null"}], "links": [{"from": "s", "to": "d"}, {"from": "d", "to": "n"}]}"#,
                      to: dir.file("g.json"))
            for command in ["validate", "dot", "render"] {
                let r = try run([command, dir.file("g.json")])
                XCTAssertEqual(r.status, 1, "\(command) with library \(library): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("/nodes/1/params/library"), r.stderr)
                XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "\(command) ran the library's code")
            }
        }
    }

    // MARK: issue 8: what a new user tripped on

    /// A graph whose only sink is a JACK port, rendered offline, says that
    /// nothing was written and suggests -o.
    func testRenderingAJACKOnlyGraphSaysNothingWasWritten() throws {
        let dir = try TemporaryDirectory()
        try write(#"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"duration": 0.1}}, {"id": "out", "type": "jack-out"}], "links": [{"from": "t", "to": "out"}]}"#,
                  to: dir.file("g.json"))
        let r = try run(["render", dir.file("g.json")])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("nothing was written"), r.stderr)
        XCTAssertTrue(r.stderr.contains("-o FILE"), r.stderr)
        let recorded = try run(["render", dir.file("g.json"), "-o", dir.file("x.wav")])
        XCTAssertFalse(recorded.stderr.contains("nothing was written"), recorded.stderr)
    }

    /// Rendering creates an output's missing folders and says so; validate
    /// and dot accept a folder that rendering would create.
    func testMissingOutputFoldersAreCreatedWhenRendering() throws {
        let dir = try TemporaryDirectory()
        try write(toneGraph(seconds: 0.1, output: "out/deeper/tone.wav"), to: dir.file("g.json"))
        XCTAssertEqual(try run(["validate", dir.file("g.json")]).status, 0)
        XCTAssertEqual(try run(["dot", dir.file("g.json")]).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out")), "validation creates nothing")
        let r = try run(["render", dir.file("g.json"), "-o", dir.file("taps/tap.flac")])
        XCTAssertEqual(r.status, 0, r.stderr)
        let base = dir.path.replacingOccurrences(of: "//", with: "/")
        XCTAssertTrue(r.stderr.contains("created the folder \(base)/out for 'o'"), r.stderr)
        XCTAssertTrue(r.stderr.contains("created the folder \(base)/taps for"), r.stderr)
        XCTAssertEqual(try readSoundFile(dir.file("out/deeper/tone.wav")).samples.count, 9600)
        XCTAssertEqual(try readSoundFile(dir.file("taps/tap.flac")).samples.count, 9600)
    }
}
