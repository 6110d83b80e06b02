import Foundation
import TestSupport
import XCTest

/// `--set NODE.PARAM=VALUE` on `render`, `validate` and `run`: the value
/// reaches the signal, is checked like the file's own, and its problems
/// say they came from `--set`.
final class ParameterOverrideTests: XCTestCase {
    /// A 1 kHz sine at -6 dBFS for 0.5 s → gain `g` → `file-out` `out`
    /// ("out.wav", beside the graph). [test thread]
    static func toneGraph(in dir: TemporaryDirectory) throws -> String {
        let path = dir.file("tone.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [
           {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -6, "channels": 1, "duration": 0.5}},
           {"id": "g", "type": "gain", "params": {"gain": 0}},
           {"id": "mix", "type": "mixer", "params": {"inputs": 1, "gains": [0]}},
           {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}
         ],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "mix:in0"}, {"from": "mix", "to": "out"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The sine level of the second half of a file (past any gain ramp).
    func level(_ path: String) throws -> Double {
        let file = try readSoundFile(path)
        XCTAssertEqual(file.samples.count, 24000, path)
        return SignalAnalysis.sineLevelDBFS(file.samples[12000...])
    }

    func testSetChangesAGainByItsDecibels() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.toneGraph(in: dir)
        let plain = try CLITests.agraph(arguments: ["render", graph, "--quiet"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        let before = try level(dir.file("out.wav"))
        XCTAssertEqual(before, -6, accuracy: 0.05)

        let quieter = try CLITests.agraph(arguments: ["render", graph, "--quiet", "--set", "g.gain=-6"])
        XCTAssertEqual(quieter.status, 0, quieter.stderr)
        XCTAssertEqual(try level(dir.file("out.wav")) - before, -6, accuracy: 0.05, "--set g.gain=-6 lowers the level by 6 dB")

        // The last --set wins; an element of a list the graph gives.
        let element = try CLITests.agraph(arguments: ["render", graph, "--quiet", "--set", "g.gain=-20", "--set", "g.gain=-3",
                                                      "--set", "mix.gains[0]=-9"])
        XCTAssertEqual(element.status, 0, element.stderr)
        XCTAssertEqual(try level(dir.file("out.wav")) - before, -12, accuracy: 0.05, "-3 dB, then -9 dB at the mixer")
    }

    /// A path given with --set resolves against the working directory (the
    /// runner's: the repository root); the graph file's own paths keep
    /// resolving against its folder.
    func testSetPathResolvesAgainstTheWorkingDirectory() throws {
        let dir = try TemporaryDirectory()
        let graph = dir.file("file.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [
           {"id": "src", "type": "file", "params": {"path": "in.wav"}},
           {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}
         ],
         "links": [{"from": "src", "to": "out"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 500, amplitude: 0.5, sampleRate: 48000, frames: 24000))
        // A folder of its own under the repository's (git-ignored) out/.
        let relative = "out/set-path-\(UUID().uuidString)"
        let folder = CLITests.repoRoot.appendingPathComponent(relative).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try writeSoundFile(folder + "/other.wav", format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 2000, amplitude: 0.25, sampleRate: 48000, frames: 12000))

        let asWritten = try CLITests.agraph(arguments: ["render", graph, "--quiet"])
        XCTAssertEqual(asWritten.status, 0, asWritten.stderr)
        let first = try readSoundFile(dir.file("out.wav"))
        XCTAssertEqual(SignalAnalysis.frequency(of: first.samples, sampleRate: 48000), 500, accuracy: 0.05)

        let run = try CLITests.agraph(arguments: ["render", graph, "--quiet",
                                                  "--set", "src.path=\(relative)/other.wav", "--set", "out.path=\(relative)/result.wav"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let result = try readSoundFile(folder + "/result.wav")
        XCTAssertEqual(result.samples.count, 12000, "the file given with --set, not the graph's in.wav")
        XCTAssertEqual(SignalAnalysis.frequency(of: result.samples, sampleRate: 48000), 2000, accuracy: 0.2)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(result.samples), SignalAnalysis.dBFS(0.25), accuracy: 0.05)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file(relative + "/result.wav")), "not under the graph's folder")
    }

    func testSetProblemsNameTheirOrigin() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.toneGraph(in: dir)

        let node = try CLITests.agraph(arguments: ["render", graph, "--set", "gg.gain=-6"])
        XCTAssertEqual(node.status, 1, node.stderr)
        XCTAssertTrue(node.stderr.contains("no node \"gg\"; did you mean \"g\"?"), node.stderr)
        XCTAssertTrue(node.stderr.contains("(from --set gg.gain=-6)"), node.stderr)

        let parameter = try CLITests.agraph(arguments: ["render", graph, "--set", "g.gian=-6"])
        XCTAssertEqual(parameter.status, 1, parameter.stderr)
        XCTAssertTrue(parameter.stderr.contains("/nodes/1/params/gian (node 'g'): 'gain' has no parameter \"gian\"; did you mean \"gain\"?"),
                      parameter.stderr)
        XCTAssertTrue(parameter.stderr.contains("(from --set g.gian=-6)"), parameter.stderr)

        let value = try CLITests.agraph(arguments: ["render", graph, "--set", "g.gain=loud"])
        XCTAssertEqual(value.status, 1, value.stderr)
        XCTAssertTrue(value.stderr.contains("\"gain\" must be a number; found string \"loud\" (from --set g.gain=loud)"), value.stderr)
        XCTAssertTrue(value.stderr.contains("tone.json: error: /nodes/1/params/gain"),
                      "located at the command line, not at a line:column of the file: \(value.stderr)")

        let element = try CLITests.agraph(arguments: ["render", graph, "--set", "mix.gains[3]=0"])
        XCTAssertEqual(element.status, 1, element.stderr)
        XCTAssertTrue(element.stderr.contains("the list has 1 element"), element.stderr)

        for bad in ["g.gain", "gain=-6", "=-6", "g.=1", "g.gain[x]=1"] {
            let run = try CLITests.agraph(arguments: ["render", graph, "--set", bad])
            XCTAssertEqual(run.status, 64, "--set \(bad): a usage error\n\(run.stderr)")
            XCTAssertTrue(run.stderr.contains("--set '\(bad)'"), run.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.wav")), "nothing rendered")
    }

    func testValidateAndRunTakeSet() throws {
        let dir = try TemporaryDirectory()
        let graph = try Self.toneGraph(in: dir)
        let ok = try CLITests.agraph(arguments: ["validate", graph, "--set", "g.gain=-6", "--set", "tone.waveform=square"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("ok (4 nodes, 48000 Hz)"), ok.stdout)

        let range = try CLITests.agraph(arguments: ["validate", graph, "--set", "tone.level=-200"])
        XCTAssertEqual(range.status, 1, range.stderr)
        XCTAssertTrue(range.stderr.contains("/nodes/0/params/level (node 'tone'): \"level\" = -200 is out of range"), range.stderr)
        XCTAssertTrue(range.stderr.contains("(from --set tone.level=-200)"), range.stderr)

        // run validates before anything touches JACK.
        let live = try CLITests.agraph(arguments: ["run", graph, "--server", "external", "--set", "nosuch.gain=1"])
        XCTAssertEqual(live.status, 1, live.stderr)
        XCTAssertTrue(live.stderr.contains("no node \"nosuch\""), live.stderr)
        XCTAssertTrue(live.stderr.contains("(from --set nosuch.gain=1)"), live.stderr)
    }
}
