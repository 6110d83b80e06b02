import Foundation
import TestSupport
import XCTest

/// Issue 24, start-up: `agraph` starts without the heavy libraries and the
/// plugins, and loads each the first time a graph needs it. What the
/// dynamic loader loads is read from glibc's own trace (`LD_DEBUG=files`),
/// so these hold for the real process, not a model of it.
final class StartupTests: XCTestCase {
    var dir: TemporaryDirectory!
    override func setUpWithError() throws { dir = try TemporaryDirectory("agraph-startup") }
    override func tearDown() { dir = nil }

    /// The heavy libraries (FFmpeg's, lilv's, libmysofa, liblo, libjack,
    /// libsndfile). (The Swift runtime and Foundation are linked in by
    /// release builds only; the tests run the debug build.)
    static let heavy = ["libavformat", "libavcodec", "libavutil", "libswresample", "liblilv", "libserd", "libmysofa",
                        "liblo.", "libjack", "libsndfile"]

    /// Runs agraph with `arguments` under `LD_DEBUG=files`: its exit status
    /// and the file names of every shared object the loader opened
    /// (at start and by dlopen).
    func loaded(_ arguments: [String]) throws -> (status: Int32, files: Set<String>, stderr: String) {
        let trace = dir.file("trace-\(UUID().uuidString)")
        let child = try ChildProcess([try CLITests.agraphPath()] + arguments, environment: ["LD_DEBUG": "files"],
                                     stderr: .file(trace))
        XCTAssertTrue(child.waitUntilExit(timeout: 60), "agraph \(arguments) still runs after 60 s")
        let text = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        var files = Set<String>()
        for line in text.split(separator: "\n") {
            // "   1234:	file=libavformat.so.59 [0];  needed by …" / "… dynamically loaded by …"
            guard let at = line.range(of: "file=") else { continue }
            let rest = line[at.upperBound...]
            let name = rest.prefix { $0 != " " && $0 != "\t" && $0 != ";" }
            if !name.isEmpty { files.insert(String(name.split(separator: "/").last ?? name)) }
        }
        return (child.terminationStatus, files, text)
    }

    func heavyOnes(_ files: Set<String>, except needed: [String] = []) -> [String] {
        files.filter { f in Self.heavy.contains { f.hasPrefix($0) } && !needed.contains { f.hasPrefix($0) } }.sorted()
    }

    func toneGraph() throws -> String {
        let path = dir.file("tone.json")
        try #"""
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "t", "type": "test-tone", "params": {"channels": 2, "duration": 0.5}},
              {"id": "o", "type": "file-out", "params": {"path": "out.wav"}}],
             "links": [{"from": "t", "to": "o"}]}
            """#.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `agraph --version` loads none of the heavy libraries, and the trace
    /// does see the loader work
    /// (libc), so an empty result is not a broken trace.
    func testVersionLoadsNoHeavyLibrary() throws {
        let r = try loaded(["--version"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.files.contains { $0.hasPrefix("libc.so") }, "the trace lists what the loader opened:\n\(r.stderr.prefix(2000))")
        XCTAssertEqual(heavyOnes(r.files), [], "loaded at start: \(r.files.sorted())")
    }

    /// Validating a graph of built-in nodes loads no plugin and no heavy
    /// library (not even libsndfile for its WAV output); rendering it loads
    /// libsndfile alone; the render is whole (0.5 s at 48 kHz).
    func testABuiltInGraphLoadsNoPluginAndNoHeavyLibrary() throws {
        let graph = try toneGraph()
        let v = try loaded(["validate", graph])
        XCTAssertEqual(v.status, 0, v.stderr)
        XCTAssertEqual(heavyOnes(v.files), [])
        XCTAssertEqual(v.files.filter { $0.hasPrefix("libAGraph") }.sorted(), [], "no plugin is opened for built-in nodes")
        let r = try loaded(["render", graph, "--quiet"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // Writing the WAV loads libsndfile, when the render starts; nothing else.
        XCTAssertTrue(r.files.contains { $0.hasPrefix("libsndfile") }, "\(r.files.sorted())")
        XCTAssertEqual(heavyOnes(r.files, except: ["libsndfile"]), [])
        let out = try readSoundFile(dir.file("out.wav"))
        XCTAssertEqual(out.channels, 2)
        XCTAssertEqual(out.samples.count, 2 * 24000)
    }

    /// Every function agraph calls in a library it loads on first use has
    /// a stub (scripts/lazy-stubs): none is left an unresolved weak symbol
    /// (libjack declares its newer functions weak; unresolved, a call
    /// jumped to address 0 when a live graph started).
    func testNoFunctionOfALazyLibraryIsLeftUnresolved() throws {
        let listing = dir.file("nm.txt")
        let nm = try ChildProcess(["nm", "-u", try CLITests.agraphPath()], stdout: .file(listing))
        XCTAssertTrue(nm.waitUntilExit(timeout: 60))
        XCTAssertEqual(nm.terminationStatus, 0)
        let text = try String(contentsOfFile: listing, encoding: .utf8)
        let prefixes = ["av_", "avformat_", "avcodec_", "avio_", "swr_", "lilv_", "serd_", "mysofa_", "lo_", "jack_", "sf_"]
        let unresolved = text.split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { return nil }
            let name = String(parts[1])
            return prefixes.contains { name.hasPrefix($0) } ? name : nil
        }
        XCTAssertFalse(text.isEmpty)
        XCTAssertEqual(unresolved, [], "called but neither linked nor given a stub")
    }

    /// A graph that names a plugin's type loads the plugins; one with a
    /// `media` source loads FFmpeg, when it validates it, and renders.
    func testAMediaGraphLoadsFFmpegAndThePluginWhenItNeedsThem() throws {
        let m4a = dir.file("a.m4a")
        let made = try ChildProcess(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=f=440:d=1",
                                     "-ac", "2", "-c:a", "aac", m4a])
        XCTAssertTrue(made.waitUntilExit(timeout: 60))
        XCTAssertEqual(made.terminationStatus, 0)
        let graph = dir.file("media.json")
        try #"""
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "m", "type": "media", "params": {"path": "a.m4a"}},
              {"id": "d", "type": "ffmpeg"},
              {"id": "o", "type": "file-out", "params": {"path": "media.wav"}}],
             "links": [{"from": "m", "to": "d"}, {"from": "d", "to": "o"}]}
            """#.write(toFile: graph, atomically: true, encoding: .utf8)
        let r = try loaded(["render", graph, "--quiet"])
        if r.status != 0, r.stderr.contains("AGraphFFmpegPlugin") {
            throw XCTSkip("the ffmpeg decoder plugin is not built beside agraph")
        }
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.files.contains { $0.hasPrefix("libavformat.so") }, "\(r.files.sorted())")
        XCTAssertTrue(r.files.contains { $0.hasPrefix("libAGraphFFmpegPlugin") }, "\(r.files.sorted())")
        let out = try readSoundFile(dir.file("media.wav"))
        XCTAssertEqual(out.channels, 2)
        // AAC's priming is trimmed: one second, within a frame.
        XCTAssertEqual(Double(out.samples.count / 2), 48000, accuracy: 1024)
    }

    /// `main` parses without ArgumentParser's completion-script check when
    /// nothing asks for it: usage errors read as ArgumentParser prints them
    /// (the standard parse runs again), and completions, help and the
    /// version still work.
    func testTheQuickParseKeepsUsageErrorsHelpVersionAndCompletions() throws {
        let graph = try toneGraph()
        let ok = try CLITests.agraph(arguments: ["validate", graph])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        let missing = try CLITests.agraph(arguments: ["validate"])
        XCTAssertEqual(missing.status, 64)
        XCTAssertTrue(missing.stderr.contains("Error: Missing expected argument '<graphs> ...'"), missing.stderr)
        XCTAssertTrue(missing.stderr.contains("Usage: agraph validate <graphs> ..."), missing.stderr)
        let unknown = try CLITests.agraph(arguments: ["validate", graph, "--bogus"])
        XCTAssertEqual(unknown.status, 64)
        XCTAssertTrue(unknown.stderr.contains("Error: Unknown option '--bogus'"), unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("See 'agraph validate --help'"), unknown.stderr)
        let version = try CLITests.agraph(arguments: ["--version"])
        XCTAssertEqual(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "0.1.0")
        let help = try CLITests.agraph(arguments: ["validate", "--help"])
        XCTAssertTrue(help.stdout.contains("USAGE: agraph validate <graphs> ..."), help.stdout)
        let completions = try CLITests.agraph(arguments: ["--generate-completion-script", "bash"])
        XCTAssertEqual(completions.status, 0, completions.stderr)
        XCTAssertTrue(completions.stdout.contains("validate") && completions.stdout.contains("render"), String(completions.stdout.prefix(300)))
        // A graph's own error still exits 1 with its message.
        let bad = try CLITests.agraph(arguments: ["validate", dir.file("missing.json")])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stderr.contains("cannot read the graph file"), bad.stderr)
    }
}
