import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph render --each … --output-dir DIR [-j N] [--shard I/N]`: one
/// render per input, each output judged against its own input.
final class BatchTests: XCTestCase {
    /// An input: a sine of its own frequency, level and length.
    struct Input {
        var name: String
        var frequency: Double
        var level: Double
        var seconds: Double
        var frames: Int { Int(seconds * 48000) }
    }

    /// `file` src → `gain` g (-3 dB) → `file-out` out ("out.wav"). [test thread]
    static func graph(in dir: TemporaryDirectory, extra: String = "") throws -> String {
        let path = dir.file("batch.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [
           {"id": "src", "type": "file", "params": {"path": "placeholder.wav"}},
           {"id": "g", "type": "gain", "params": {"gain": -3}},
           {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}\(extra)
         ],
         "links": [{"from": "src", "to": "g"}, {"from": "g", "to": "out"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Writes each input as a float WAV in `folder`; returns their paths.
    static func write(_ inputs: [Input], in folder: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try inputs.map { input in
            let path = folder + "/" + input.name
            try writeSoundFile(path, format: .wavFloat32, channels: 1, sampleRate: 48000,
                               samples: Synth.sine(frequency: input.frequency, amplitude: SignalAnalysis.linear(fromDBFS: input.level),
                                                   sampleRate: 48000, frames: input.frames))
            return path
        }
    }

    /// Every name in `folder`, hidden ones included, sorted.
    static func names(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// The output rendered from `input`: its length, frequency and level (3 dB down).
    func check(_ output: String, from input: Input, file: StaticString = #filePath, line: UInt = #line) throws {
        let out = try readSoundFile(output)
        XCTAssertEqual(out.channels, 1, file: file, line: line)
        XCTAssertEqual(out.samples.count, input.frames, "\(output): the length of \(input.name)", file: file, line: line)
        let steady = Array(out.samples[(input.frames / 4)...])
        XCTAssertEqual(SignalAnalysis.frequency(of: steady, sampleRate: 48000), input.frequency, accuracy: input.frequency * 1e-4,
                       "\(output): the frequency of \(input.name)", file: file, line: line)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(steady), input.level - 3, accuracy: 0.05,
                       "\(output): the level of \(input.name) less 3 dB", file: file, line: line)
    }

    func testEachRendersEveryGoodInputAndReportsTheBadOne() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.graph(in: dir)
        let inputs = [Input(name: "low.wav", frequency: 300, level: -6, seconds: 0.5),
                      Input(name: "mid.wav", frequency: 750, level: -12, seconds: 0.75),
                      Input(name: "high.wav", frequency: 1800, level: -18, seconds: 1)]
        var paths = try Self.write(inputs, in: dir.file("music"))
        let bad = dir.file("music/broken.wav")
        try Data((0..<6000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(to: URL(fileURLWithPath: bad))
        paths.insert(bad, at: 1)
        let out = dir.file("rendered")

        let run = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=" + paths[0]] + paths.dropFirst()
                                      + ["--output-dir", out, "-j", "2"])
        XCTAssertEqual(run.status, 1, "a failed input fails the batch\n\(run.stderr)")
        XCTAssertEqual(Self.names(in: out), ["high.wav", "low.wav", "mid.wav"], "the three outputs and nothing else (no partial files)")
        for input in inputs { try check(out + "/" + input.name, from: input) }

        // One line per finished input; the failure listed at the end with its reason.
        let lines = run.stderrLines
        XCTAssertEqual(lines.filter { $0.hasPrefix("[") }.count, 4, run.stderr)
        XCTAssertTrue(lines.contains { $0.hasPrefix("[") && $0.hasSuffix("broken.wav: failed") }, run.stderr)
        guard let summary = lines.firstIndex(of: "agraph: 1 of 4 inputs failed:") else { return XCTFail(run.stderr) }
        let reason = lines[(summary + 1)...].joined(separator: "\n")
        XCTAssertTrue(reason.hasPrefix("  \(bad): "), reason)
        XCTAssertTrue(reason.contains("cannot read audio file"), reason)
        XCTAssertTrue(run.stderr.contains("rendered 3 of 4 inputs"), run.stderr)

        // --quiet: only the failure.
        let quiet = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=" + bad, "--output-dir", out, "--quiet"])
        XCTAssertEqual(quiet.status, 1)
        XCTAssertEqual(quiet.stderrLines.first, "agraph: 1 of 1 input failed:", quiet.stderr)
        XCTAssertEqual(Self.names(in: out), ["high.wav", "low.wav", "mid.wav"])
    }

    func testShardsRenderEveryInputExactlyOnce() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.graph(in: dir)
        let inputs = (0..<5).map { Input(name: "take\($0).wav", frequency: 200 * Double($0 + 1), level: -6 - 2 * Double($0), seconds: 0.25) }
        let paths = try Self.write(inputs, in: dir.file("takes"))
        var rendered: [[String]] = []
        for shard in 0..<2 {
            let out = dir.file("shard\(shard)")
            // As a job array runs it: the same list (here a pattern agraph expands), one index per task.
            let run = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=\(dir.file("takes"))/take*.wav",
                                                      "--output-dir", out, "--shard", "\(shard)/2"])
            XCTAssertEqual(run.status, 0, run.stderr)
            rendered.append(Self.names(in: out))
        }
        XCTAssertEqual(rendered[0], ["take0.wav", "take2.wav", "take4.wav"], "shard 0/2: inputs 0, 2, 4")
        XCTAssertEqual(rendered[1], ["take1.wav", "take3.wav"], "shard 1/2: inputs 1, 3")
        XCTAssertEqual(Set(rendered[0]).intersection(rendered[1]), [])
        XCTAssertEqual(Set(rendered[0] + rendered[1]), Set(inputs.map(\.name)))
        for (k, input) in inputs.enumerated() {
            try check(dir.file("shard\(k % 2)/\(input.name)"), from: input)
        }
        _ = paths
    }

    /// With several file sinks, each output is named INPUT.SINK.EXT.
    func testSeveralFileSinksAreNamedAfterTheirIds() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.graph(in: dir, extra: """
            ,
               {"id": "copy", "type": "file-out", "params": {"path": "elsewhere/copy.flac"}}
            """)
        var text = try String(contentsOfFile: graph, encoding: .utf8)
        text = text.replacingOccurrences(of: #"{"from": "g", "to": "out"}"#, with: #"{"from": "g", "to": "out"}, {"from": "g", "to": "copy"}"#)
        try text.write(toFile: graph, atomically: true, encoding: .utf8)
        let input = Input(name: "song.wav", frequency: 440, level: -6, seconds: 0.5)
        let paths = try Self.write([input], in: dir.file("in"))
        let run = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=" + paths[0], "--output-dir", dir.file("out")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(Self.names(in: dir.file("out")), ["song.copy.flac", "song.out.wav"])
        try check(dir.file("out/song.out.wav"), from: input)
        let flac = try readSoundFile(dir.file("out/song.copy.flac"))
        XCTAssertEqual(flac.samples.count, input.frames)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(flac.samples[6000...]), -9, accuracy: 0.05)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("elsewhere")), "the graph's own sink paths are not written")
    }

    func testMalformedShardIsRefused() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.graph(in: dir)
        let paths = try Self.write([Input(name: "a.wav", frequency: 440, level: -6, seconds: 0.1)], in: dir.file("in"))
        for (shard, words) in [("2/2", "I must be from 0 to 1"), ("x/3", "expected I/N"), ("1/0", "at least 1"), ("1", "expected I/N")] {
            let run = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=" + paths[0],
                                                      "--output-dir", dir.file("out"), "--shard", shard])
            XCTAssertEqual(run.status, 64, "--shard \(shard)\n\(run.stderr)")
            XCTAssertTrue(run.stderr.contains("--shard '\(shard)'") && run.stderr.contains(words), run.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out")))
        let alone = try CLITests.agraph(arguments: ["render", graph, "--shard", "0/2"])
        XCTAssertEqual(alone.status, 64)
        XCTAssertTrue(alone.stderr.contains("--shard goes with --each"), alone.stderr)
    }

    /// Two inputs named alike would write one output: refused before
    /// anything renders, naming both; so is an output onto an input.
    func testEachRefusesOutputsThatCollide() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.graph(in: dir)
        let a = try Self.write([Input(name: "song.wav", frequency: 440, level: -6, seconds: 0.1)], in: dir.file("a"))[0]
        let b = try Self.write([Input(name: "song.wav", frequency: 880, level: -6, seconds: 0.1)], in: dir.file("b"))[0]
        let run = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=" + a, b, "--output-dir", dir.file("out")])
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssertTrue(run.stderr.contains("\(a) and \(b) would both be written to \(dir.file("out"))/song.wav"), run.stderr)
        XCTAssertTrue(run.stderr.contains("nothing was rendered"), run.stderr)
        XCTAssertEqual(Self.names(in: dir.file("out")), [])

        let onto = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=" + a, "--output-dir", dir.file("a")])
        XCTAssertEqual(onto.status, 1, onto.stderr)
        XCTAssertTrue(onto.stderr.contains("is one of the inputs"), onto.stderr)
        XCTAssertEqual(try readSoundFile(a).samples.count, 4800, "the input is untouched")
    }

    /// SIGTERM to agraph alone (as a job scheduler sends it) stops every
    /// render: exit 130, and nothing partial is left in the output folder.
    func testTerminatedBatchLeavesNoPartialFiles() throws {
        let dir = try TemporaryDirectory()
        // An endless tone mixed in: each render lasts until stopped.
        let graph = dir.file("endless.json")
        try """
        {"format": "agraph/1", "sampleRate": 8000,
         "nodes": [
           {"id": "src", "type": "file", "params": {"path": "placeholder.wav"}},
           {"id": "tone", "type": "test-tone", "params": {"frequency": 100, "channels": 1}},
           {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
           {"id": "out", "type": "file-out", "params": {"path": "out.wav", "sampleFormat": "int16"}}
         ],
         "links": [{"from": "src", "to": "mix:in0"}, {"from": "tone", "to": "mix:in1"}, {"from": "mix", "to": "out"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let paths = try (0..<3).map { k in
            let path = dir.file("in\(k).wav")
            try writeSoundFile(path, format: .wavInt16, channels: 1, sampleRate: 8000,
                               samples: Synth.sine(frequency: 440, amplitude: 0.5, sampleRate: 8000, frames: 800))
            return path
        }
        let out = dir.file("out")
        let child = try ChildProcess([try CLITests.agraphPath(), "render", graph, "--each", "src.path=" + paths[0]] + paths.dropFirst()
                                     + ["--output-dir", out, "-j", "2", "--duration", "100000"],
                                     stderr: .file(dir.file("stderr")))
        let deadline = Date().addingTimeInterval(30)
        while !Self.names(in: out).contains(where: { $0.hasSuffix(".part") }), child.isRunning, Date() < deadline { usleep(20_000) }
        XCTAssertTrue(Self.names(in: out).contains { $0.hasPrefix(".in") && $0.contains(".wav.partial-") }, "a render under way: \(Self.names(in: out))")
        child.send(SIGTERM)
        XCTAssertTrue(child.waitUntilExit(timeout: 30), "agraph stopped")
        if child.isRunning { child.send(SIGKILL) }
        let stderr = (try? String(contentsOfFile: dir.file("stderr"), encoding: .utf8)) ?? ""
        XCTAssertEqual(child.terminationStatus, 130, stderr)
        XCTAssertEqual(Self.names(in: out), [], "nothing partial left\n\(stderr)")
        XCTAssertTrue(stderr.contains("interrupted"), stderr)
    }
}
