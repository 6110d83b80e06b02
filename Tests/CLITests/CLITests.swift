import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Runs the built `agraph` executable as a user would.
final class CLITests: XCTestCase {
    /// The repository: this file is `Tests/CLITests/CLITests.swift`.
    static let repoRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What one run printed and returned.
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// `agraph` from the same build folder as this test bundle (or `$AGRAPH`).
    static func agraphPath() throws -> String {
        let (path, searched) = locateAgraph()
        guard let path else {
            throw XCTSkip("agraph not found next to the test bundle (searched \(searched)); build it into the same scratch path first: swift build --product agraph")
        }
        return path
    }

    /// Runs agraph with `arguments` in the repository folder.
    func agraph(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        try Self.agraph(arguments: arguments, file: file, line: line)
    }

    func agraph(arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        try Self.agraph(arguments: arguments, file: file, line: line)
    }

    /// Runs the built `agraph` from the repository root, stdin closed;
    /// fails the calling test if it was killed or printed a crash report.
    /// [any test of the CLITests target]
    static func agraph(arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        let fm = FileManager.default
        let tmp = fm.temporaryDirectory.appendingPathComponent("agraph-cli-\(UUID().uuidString)")
        try fm.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: tmp) }
        let outURL = tmp.appendingPathComponent("stdout")
        let errURL = tmp.appendingPathComponent("stderr")
        _ = fm.createFile(atPath: outURL.path, contents: nil)
        _ = fm.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.agraphPath())
        process.arguments = arguments
        process.currentDirectoryURL = Self.repoRoot
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()

        let run = Run(status: process.terminationStatus,
                      stdout: try String(contentsOf: outURL, encoding: .utf8),
                      stderr: try String(contentsOf: errURL, encoding: .utf8))
        let command = "agraph " + arguments.joined(separator: " ")
        XCTAssertEqual(process.terminationReason, .exit, "\(command) was killed by a signal\n\(run.stderr)",
                       file: file, line: line)
        for marker in ["Fatal error", "Stack dump", "Current stack trace", "Crash", "💣"] {
            XCTAssertFalse(run.stdout.contains(marker) || run.stderr.contains(marker),
                           "\(command) crashed:\n\(run.stdout)\n\(run.stderr)", file: file, line: line)
        }
        return run
    }

    /// Graphs write to `../out/`: make sure the git-ignored folder exists.
    override func setUpWithError() throws {
        try FileManager.default.createDirectory(at: Self.repoRoot.appendingPathComponent("out"),
                                                withIntermediateDirectories: true)
    }

    /// `file:line:col: error: /pointer (node 'id'): message`
    static var diagnosticLine: Regex<AnyRegexOutput> { try! Regex(#"^([^:]+):(\d+):(\d+): (error|warning): (/[^ ]*)( \(node '[^']+'\))?: (.+)$"#) }

    // MARK: validate

    func testValidateInvalidGraphPrintsDiagnostics() throws {
        let run = try agraph("validate", "Graphs/invalid/mixer-gains-count.json")
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssertEqual(run.stdout, "")
        XCTAssertTrue(run.stderrLines.contains { line in
            line.hasPrefix("Graphs/invalid/mixer-gains-count.json:7:")
                && line.contains(": error: /nodes/2/params/gains (node 'mix'): 3 gains for 2 inputs")
                && line.wholeMatch(of: Self.diagnosticLine) != nil
        }, run.stderr)
    }

    func testValidateAllInvalidGraphs() throws {
        let folder = Self.repoRoot.appendingPathComponent("Graphs/invalid")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertFalse(names.isEmpty)
        let run = try agraph(arguments: ["validate"] + names.map { "Graphs/invalid/" + $0 })
        XCTAssertEqual(run.status, 1)
        var lines = run.stderrLines
        XCTAssertEqual(lines.popLast(), "\(names.count) of \(names.count) graphs invalid", run.stderr)
        for line in lines {
            XCTAssertNotNil(line.wholeMatch(of: Self.diagnosticLine), "not file:line:col: error: /pointer: message — \(line)")
        }
        for name in names {
            XCTAssertTrue(lines.contains { $0.hasPrefix("Graphs/invalid/\(name):") && $0.contains(": error: ") },
                          "no error line for \(name)")
        }
        XCTAssertTrue(lines.contains { $0.hasPrefix("Graphs/invalid/malformed-json.json:6:40: error: /: malformed JSON") },
                      run.stderr)
    }

    func testValidateValidGraph() throws {
        let run = try agraph("validate", "Graphs/demo.json")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stdout, "Graphs/demo.json: ok (5 nodes, 48000 Hz)\n")
        XCTAssertEqual(run.stderr, "")
    }

    func testValidateMissingFile() throws {
        let run = try agraph("validate", "Graphs/no-such-graph.json")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("Graphs/no-such-graph.json: error: /: cannot read the graph file"), run.stderr)
    }

    // MARK: nodes

    func testNodesListsEveryType() throws {
        let run = try agraph("nodes")
        XCTAssertEqual(run.status, 0, run.stderr)
        let listed = run.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        // Built-in types in registry order (the core nodes, then the
        // processing nodes), then JACK's; the built example plugin sits
        // next to agraph, so it is found too.
        let builtIn = NodeRegistry.builtIn.types.map(\.descriptor.typeID) + ["jack-in", "jack-out"]
        XCTAssertEqual(Array(builtIn.prefix(10)), ["test-tone", "file", "ac4", "media", "gain", "mixer", "split", "format-tag", "file-out", "null"])
        XCTAssertEqual(Array(listed.prefix(builtIn.count)), builtIn, run.stdout)
        XCTAssertTrue(listed.contains("com.example.ring-modulator"), run.stdout)
        XCTAssertTrue(listed.contains("ffmpeg"), run.stdout)
        XCTAssertTrue(run.stdout.contains("source") && run.stdout.contains("processor") && run.stdout.contains("sink"))
    }

    func testNodesDescribesMixer() throws {
        let run = try agraph("nodes", "mixer")
        XCTAssertEqual(run.status, 0, run.stderr)
        let text = run.stdout
        XCTAssertTrue(text.hasPrefix("mixer (processor"), text)
        XCTAssertTrue(text.contains("in0 … inN-1"), text)
        for fact in ["inputs: integer, 1…65536", "default 2",
                     "gains: array of numbers, -144…48, dB, optional, live",
                     "mutes: array of booleans, optional, live",
                     "outputGain: number, -144…48, dB, default 0, live"] {
            XCTAssertTrue(text.contains(fact), "missing \"\(fact)\" in:\n\(text)")
        }
    }

    func testNodesUnknownTypeListsKnownTypes() throws {
        let run = try agraph("nodes", "nosuch")
        XCTAssertEqual(run.status, 1)
        XCTAssertEqual(run.stdout, "")
        XCTAssertTrue(run.stderr.contains("unknown node type 'nosuch'"), run.stderr)
        XCTAssertTrue(run.stderr.contains("known types: test-tone, file, ac4, media, gain, mixer, split, format-tag, file-out, null"), run.stderr)
        let hint = try agraph("nodes", "mixr")
        XCTAssertEqual(hint.status, 1)
        XCTAssertTrue(hint.stderr.contains("did you mean 'mixer'?"), hint.stderr)
    }

    // MARK: render

    func testRenderDemoToFile() throws {
        let fm = FileManager.default
        let tmp = fm.temporaryDirectory.appendingPathComponent("agraph-render-\(UUID().uuidString)")
        try fm.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: tmp) }
        let wav = tmp.appendingPathComponent("x.wav").path
        let run = try agraph("render", "Graphs/demo.json", "-o", wav, "--quiet")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stderr, "")
        let file = try readSoundFile(wav)
        XCTAssertEqual(file.channels, 2)
        XCTAssertEqual(file.sampleRate, 48000)
        XCTAssertEqual(file.samples.count / file.channels, 480_000)
        let peak = file.samples.reduce(Float(0)) { max($0, abs($1)) }
        XCTAssertGreaterThan(peak, 0.1)
        XCTAssertLessThanOrEqual(peak, 1)
    }

    func testRenderEndlessGraphNeedsDuration() throws {
        let run = try agraph("render", "Graphs/surround-silence.json")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("never end"), run.stderr)
        XCTAssertTrue(run.stderr.contains("--duration"), run.stderr)

        let limited = try agraph("render", "Graphs/surround-silence.json", "--duration", "0.5")
        XCTAssertEqual(limited.status, 0, limited.stderr)
        XCTAssertTrue(limited.stderr.contains("rendered 24000 frames"), limited.stderr)
    }

    func testRenderInvalidGraphFails() throws {
        let run = try agraph("render", "Graphs/invalid/cycle.json")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("cycle"), run.stderr)
        XCTAssertTrue(run.stderr.contains("Graphs/invalid/cycle.json: 1 error"), run.stderr)
    }

    // MARK: dot, schema

    func testDotPrintsTheGraph() throws {
        let run = try agraph("dot", "Graphs/demo.json")
        XCTAssertEqual(run.status, 0, run.stderr)
        let text = run.stdout
        XCTAssertTrue(text.hasPrefix("digraph \"demo\" {"), text)
        XCTAssertTrue(text.hasSuffix("}\n"), text)
        for id in ["tone", "sweep", "mix", "tag", "out"] {
            XCTAssertTrue(text.contains("\"\(id)\" [label="), "node \(id) missing:\n\(text)")
        }
        XCTAssertEqual(text.components(separatedBy: " -> ").count - 1, 4, text)
        XCTAssertTrue(text.contains("\"mix\" -> \"tag\""), text)
    }

    func testSchemaMatchesPublishedFile() throws {
        let run = try agraph("schema")
        XCTAssertEqual(run.status, 0, run.stderr)
        let published = try String(contentsOf: Self.repoRoot.appendingPathComponent("docs/graph.schema.json"), encoding: .utf8)
        XCTAssertTrue(run.stdout == published,
                      "docs/graph.schema.json differs from `agraph schema`; regenerate: .build/debug/agraph schema > docs/graph.schema.json")
    }

    // MARK: Ctrl-C
    // See HardeningTests.testInterruptedRenderKeepsItsWorkAndTheFinalNamesUntouched.

    // MARK: probe and the DAA node

    static var channelCheck: String { TestMedia.channelCheck }

    func testProbeReportsTheFactsOfChannelCheck() throws {
        guard FileManager.default.fileExists(atPath: Self.channelCheck) else {
            return XCTFail("missing test media \(Self.channelCheck) (see Tests/Media/README.md)")
        }
        let run = try agraph("probe", Self.channelCheck)
        XCTAssertEqual(run.status, 0, run.stderr)
        for fact in ["frames:            846", "duration:          36.096 s (1732608 samples)", "sample rate:       48000 Hz",
                     "23.4375 fps (index 13), 2048 samples per frame", "bitstream version: 2",
                     "I-frames:          36, every 24 frames", "CRC errors:        0", "skipped bytes:     0", "decoder:"] {
            XCTAssertTrue(run.stdout.contains(fact), "missing \"\(fact)\" in:\n\(run.stdout)")
        }
        let json = try agraph("probe", Self.channelCheck, "--json")
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(object?["frames"] as? Int, 846)
        XCTAssertEqual(object?["samples"] as? Int, 1_732_608)
        XCTAssertEqual(object?["crcErrors"] as? Int, 0)
        let missing = try agraph("probe", "/nonexistent.ac4")
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("/nonexistent.ac4"), missing.stderr)
    }

    /// The renderer-lab example: DAA's own headphone virtualizer against
    /// DAA's speaker output through the open `binaural` renderer, in an
    /// `ab` node matching their loudness (here with the test double of the
    /// DAA interface). Rendered with either input selected, the two outputs
    /// have the same integrated loudness. The double's PCM is not audio but
    /// held levels with steps, whose K-weighted loudness comes from the
    /// steps alone, so the renders stop at 36 s, before the stream's last
    /// step (and the binaural tail's response to it), and the bound is
    /// 0.2 LU: libebur128's histogram in the first pass against agraph
    /// analyze's exact gating. ABTests checks 0.1 LU on real signals.
    func testDAAAgainstBinauralExampleIsLoudnessMatched() throws {
        let double = URL(fileURLWithPath: try Self.agraphPath()).deletingLastPathComponent().appendingPathComponent("libTestDoubleDAA.so").path
        try XCTSkipUnless(FileManager.default.fileExists(atPath: double), "libTestDoubleDAA.so not built")
        setenv("DAA_LIBRARY", double, 1)
        defer { unsetenv("DAA_LIBRARY") }
        let graph = "Graphs/daa/ac4-daa-vs-binaural.json"
        XCTAssertEqual(try agraph("validate", graph).status, 0)
        let dir = try TemporaryDirectory()
        var loudness: [Double] = []
        for select in [0, 1] {
            let out = dir.file("ab\(select).wav")
            let render = try agraph("render", graph, "--set", "ab.select=\(select)", "--duration", "36", "-o", out, "--quiet")
            XCTAssertEqual(render.status, 0, render.stderr)
            let file = try readSoundFile(out)
            XCTAssertEqual(file.channels, 2)
            let analysis = try agraph("analyze", out, "--json")
            XCTAssertEqual(analysis.status, 0, analysis.stderr)
            let object = try JSONSerialization.jsonObject(with: Data(analysis.stdout.utf8)) as? [String: Any]
            let integrated = try XCTUnwrap(object?["integratedLUFS"] as? Double, analysis.stdout)
            XCTAssertGreaterThan(integrated, -40, "select \(select) plays audio")
            loudness.append(integrated)
        }
        XCTAssertEqual(loudness[0], loudness[1], accuracy: 0.2, "DAA headphones and DAA speakers → binaural, matched")
    }

    /// `agraph nodes daa` and `agraph probe` show the DAA library's version
    /// strings when one is given (here the test double of its interface).
    func testDAALibraryVersionsAreShownWhenPresent() throws {
        let double = URL(fileURLWithPath: try Self.agraphPath()).deletingLastPathComponent().appendingPathComponent("libTestDoubleDAA.so").path
        try XCTSkipUnless(FileManager.default.fileExists(atPath: double), "libTestDoubleDAA.so not built")
        setenv("DAA_LIBRARY", double, 1)
        defer { unsetenv("DAA_LIBRARY") }
        let nodes = try agraph("nodes", "daa")
        XCTAssertEqual(nodes.status, 0, nodes.stderr)
        XCTAssertTrue(nodes.stdout.contains("DAA library: \(double)"), nodes.stdout)
        XCTAssertTrue(nodes.stdout.contains("DAA TEST DOUBLE"), nodes.stdout)
        XCTAssertTrue(nodes.stdout.contains("endpoint: one of \"headphones\", \"speakers\", \"auto\""), nodes.stdout)
        if FileManager.default.fileExists(atPath: Self.channelCheck) {
            XCTAssertTrue(try agraph("probe", Self.channelCheck).stdout.contains("DAA TEST DOUBLE"))
        }
        // The example graph validates with a library and renders offline
        // (jack-out discards offline; -o records what reaches it).
        let dir = try TemporaryDirectory()
        XCTAssertEqual(try agraph("validate", "Graphs/daa/ac4-daa-headphones.json").status, 0)
        let render = try agraph("render", "Graphs/daa/ac4-daa-headphones.json", "--duration", "2", "-o", dir.file("daa.wav"), "--quiet")
        XCTAssertEqual(render.status, 0, render.stderr)
        let file = try readSoundFile(dir.file("daa.wav"))
        XCTAssertEqual(file.channels, 2)
        XCTAssertEqual(file.samples.count, 2 * 96000)
        XCTAssertGreaterThan(SignalAnalysis.peak(deinterleave(file.samples, channels: 2, channel: 0)), 0.01,
                            "decoded audio (the double's PCM) mixed with the -40 dBFS tone")

        unsetenv("DAA_LIBRARY")
        let without = try agraph("validate", "Graphs/daa/ac4-daa-headphones.json")
        XCTAssertEqual(without.status, 1)
        XCTAssertTrue(without.stderr.contains("DAA_LIBRARY"), without.stderr)
    }
}
