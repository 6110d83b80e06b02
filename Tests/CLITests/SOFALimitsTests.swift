import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Hostile SOFA files (issue 22, items 1 and 2), made at test time from
/// `Tests/Media/sphere-head-delays.sofa` (48 kHz, 37 measurements, 256
/// taps) by `SOFAPatch`, through `agraph validate` as a user meets them:
/// a clear error naming the file, the limit and the file's value; no
/// crash; bounded time.
final class SOFALimitsTests: XCTestCase {
    var dir: TemporaryDirectory!
    override func setUpWithError() throws { dir = try TemporaryDirectory("agraph-sofa-limits") }
    override func tearDown() { dir = nil }

    struct Outcome {
        var status: Int32
        var signalled: Bool
        var stderr: String
        var seconds: Double
    }

    /// The real set, patched by `change`, written as NAME.sofa.
    func sofa(_ name: String, _ change: (inout SOFAPatch) throws -> Void) throws -> String {
        var patch = try SOFAPatch(path: TestMedia.path("sphere-head-delays.sofa"))
        try change(&patch)
        let path = dir.file(name + ".sofa")
        try patch.write(to: path)
        return path
    }

    /// `agraph validate` on a mono tone into `binaural` with the set at
    /// `sofa`, the graph at `rate` Hz; killed (and the test failed) after
    /// `timeout` seconds.
    func validate(_ sofa: String, rate: Int = 48000, timeout: Double = 20, environment: [String: String] = [:],
                  file: StaticString = #filePath, line: UInt = #line) throws -> Outcome {
        let graph = dir.file("g-\((sofa as NSString).lastPathComponent)-\(rate).json")
        try #"""
            {"format": "agraph/1", "sampleRate": \#(rate), "nodes": [
              {"id": "t", "type": "test-tone", "params": {"channels": 1, "duration": 0.5}},
              {"id": "b", "type": "binaural", "params": {"sofa": "\#(sofa)", "positions": [{"azimuth": 30}]}},
              {"id": "n", "type": "null"}],
             "links": [{"from": "t", "to": "b"}, {"from": "b", "to": "n"}]}
            """#.write(toFile: graph, atomically: true, encoding: .utf8)
        let errPath = dir.file("stderr-\(UUID().uuidString)")
        let started = Date()
        let child = try ChildProcess([try CLITests.agraphPath(), "validate", graph], environment: environment, stderr: .file(errPath))
        let finished = child.waitUntilExit(timeout: timeout)
        if !finished {
            child.send(SIGKILL)
            child.waitUntilExit()
        }
        let seconds = Date().timeIntervalSince(started)
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        XCTAssertTrue(finished, "agraph validate still ran after \(timeout) s\n\(stderr)", file: file, line: line)
        // A crash (SIGILL from a trap, SIGSEGV) leaves a backtrace or nothing;
        // an exit status of 1 comes with the diagnostics.
        let signalled = stderr.contains("Fatal error") || stderr.contains("Crash") || (child.terminationStatus != 0 && child.terminationStatus != 1)
        return Outcome(status: child.terminationStatus, signalled: signalled, stderr: stderr, seconds: seconds)
    }

    func assertRefused(_ o: Outcome, path: String, saying words: [String], within seconds: Double = 10,
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(o.signalled, "agraph validate crashed (status \(o.status)):\n\(o.stderr)", file: file, line: line)
        XCTAssertEqual(o.status, 1, o.stderr, file: file, line: line)
        // The node shows the path normalised (the temporary folder's "//" as "/").
        let shown = path.replacingOccurrences(of: "//", with: "/")
        XCTAssertTrue(o.stderr.contains(shown), "the error names the file:\n\(o.stderr)", file: file, line: line)
        XCTAssertTrue(o.stderr.contains("/nodes/1/params/sofa"), "the error names the parameter:\n\(o.stderr)", file: file, line: line)
        for w in words { XCTAssertTrue(o.stderr.contains(w), "missing \"\(w)\" in:\n\(o.stderr)", file: file, line: line) }
        XCTAssertLessThan(o.seconds, seconds, "took \(o.seconds) s", file: file, line: line)
    }

    /// The patching itself gives a set that works: the real rate written
    /// back, and a few more taps than the file has, validate.
    func testThePatchedSetsWithinTheLimitsValidate() throws {
        let same = try sofa("same", { try $0.setValues("Data.SamplingRate", [48000]) })
        let o = try validate(same)
        XCTAssertEqual(o.status, 0, o.stderr)
        let longer = try sofa("longer", { try $0.setTaps(1000) })
        XCTAssertEqual(try validate(longer).status, 0)
        let other = try sofa("rate44k", { try $0.setValues("Data.SamplingRate", [44100]) })
        XCTAssertEqual(try validate(other).status, 0)
    }

    /// Item 1: a rate of 0 or NaN trapped (SIGILL, rc 132) converting a
    /// delay to Int; a negative or infinite one was read after the set was
    /// freed, so the message changed from run to run. Now each is the same
    /// clear error on every run.
    func testAZeroNaNNegativeOrInfiniteSamplingRateIsAClearErrorEveryRun() throws {
        for (name, rate, shown) in [("zero", 0.0, "0 Hz"), ("nan", Double.nan, "nan Hz"), ("negative", -48000, "-48000 Hz"),
                                    ("infinite", Double.infinity, "inf Hz"), ("minus-infinite", -Double.infinity, "-inf Hz")] {
            let path = try sofa(name, { try $0.setValues("Data.SamplingRate", [rate]) })
            let first = try validate(path)
            assertRefused(first, path: path, saying: ["Data.SamplingRate is \(shown)", "8000 Hz to 384000 Hz"])
            let second = try validate(path)
            XCTAssertEqual(second.stderr, first.stderr, "the same message on every run")
        }
    }

    /// Item 2: 1e9 Hz kept validate busy past 2 minutes; 1 Hz took 25 s
    /// and 243 MB. Rates outside 8000–384000 Hz are refused at once.
    func testAnAbsurdSamplingRateIsRefusedAtOnce() throws {
        for (name, rate, shown) in [("giga", 1e9, "1000000000.0 Hz"), ("one", 1.0, "1 Hz"), ("low", 7999, "7999 Hz"),
                                    ("high", 400_000, "400000 Hz")] {
            let path = try sofa(name, { try $0.setValues("Data.SamplingRate", [rate]) })
            assertRefused(try validate(path), path: path, saying: ["Data.SamplingRate is \(shown)", "384000 Hz"], within: 5)
        }
    }

    /// Item 2: a set of 1M-tap responses turned a 0.5 s render into more
    /// than a minute. More than 16384 taps at the file's rate are refused,
    /// before any work on them.
    func testTooManyTapsAreRefusedAtOnce() throws {
        let path = try sofa("long", { try $0.setTaps(20000) })
        assertRefused(try validate(path), path: path, saying: ["20000 samples (N) at 48000 Hz", "at most 16384"], within: 5)
    }

    /// Item 2: the taps at the graph's rate are bounded too: 4096 taps at
    /// 8000 Hz would be 24576 at 48 kHz.
    func testTapsAtTheGraphsRateAreBounded() throws {
        let path = try sofa("upsampled", {
            try $0.setTaps(4096)
            try $0.setValues("Data.SamplingRate", [8000])
        })
        assertRefused(try validate(path), path: path, saying: ["4096-sample responses at 8000 Hz", "24576", "graph's 48000 Hz",
                                                               "at most 16384"], within: 5)
        // The same set at 16 kHz stays within the limit (8192 taps).
        XCTAssertEqual(try validate(path, rate: 16000).status, 0)
    }

    /// A finite but absurd `Data.Delay` (1e30 samples) trapped converting
    /// it to Int; it is taken as the largest delay, 65536 samples.
    func testAnAbsurdDelayIsClampedNotATrap() throws {
        let path = try sofa("delay", { try $0.setValues("Data.Delay", [Double](repeating: 1e30, count: 37 * 2)) })
        let o = try validate(path)
        XCTAssertFalse(o.signalled, o.stderr)
        XCTAssertEqual(o.status, 0, o.stderr)
    }

    /// A set without `Data.Delay` (mysofa_check lets it through; its
    /// interpolation then reads the missing delays at address 0: the fuzz
    /// target's crash) is refused, naming what is missing.
    func testASetWithoutDelaysIsRefusedNotACrash() throws {
        let path = try sofa("no-delay", { try $0.renameVariable("Data.Delay", to: "Data.Delaz") })
        assertRefused(try validate(path), path: path, saying: ["it has no Data.Delay", "SimpleFreeFieldHRIR requires one"])
    }

    /// The real set with 2 bytes changed: at 0x57dc an attribute's
    /// dataspace of 1 element (`00 00 00 01`) declares 0x20000001
    /// (`20 00 00 01`), and libmysofa 1.3.1's `readDataDim` reads the
    /// global heap once per element: `mysofa_load` is busy for minutes.
    func sofaKeepingLibmysofaBusy() throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestMedia.path("sphere-head-delays.sofa"))))
        let at = 0x57dc
        XCTAssertEqual(Array(bytes[at..<(at + 4)]), [0, 0, 0, 1], "the dataspace's element count is where it was")
        bytes[at] = 0x20
        let path = dir.file("busy.sofa")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Issue 22 item 2: the 2-byte change above kept `agraph validate`
    /// busy for minutes inside libmysofa, before any limit of ours could
    /// be checked. libmysofa now reads it first in `agraph-sofa-check`,
    /// killed after 5 s: a clear error naming the file, within 10 s.
    func testAFileKeepingLibmysofaBusyIsRefusedWithinSeconds() throws {
        let path = try sofaKeepingLibmysofaBusy()
        assertRefused(try validate(path, timeout: 15), path: path,
                      saying: ["libmysofa did not finish reading it within 5 s", "declare far more than the file holds"])
    }

    /// The checker is built beside agraph, reads the real sets, and the
    /// real file still validates through it.
    func testTheSOFACheckerIsBesideAgraphAndTheRealSetValidates() throws {
        let checker = (try CLITests.agraphPath() as NSString).deletingLastPathComponent + "/agraph-sofa-check"
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: checker), "\(checker) is built with agraph")
        for sofa in [TestMedia.path("sphere-head-delays.sofa"), "/usr/share/libmysofa/default.sofa"]
        where FileManager.default.fileExists(atPath: sofa) {
            let child = try ChildProcess([checker, sofa])
            XCTAssertTrue(child.waitUntilExit(timeout: 10))
            XCTAssertEqual(child.terminationStatus, 0, sofa)
        }
        let o = try validate(TestMedia.path("sphere-head-delays.sofa"))
        XCTAssertEqual(o.status, 0, o.stderr)
        // Not a SOFA file: libmysofa's reason, from the checker.
        let text = dir.file("text.sofa")
        try "not HDF5".write(toFile: text, atomically: true, encoding: .utf8)
        assertRefused(try validate(text), path: text, saying: ["not a SOFA file it can read (MYSOFA_INVALID_FORMAT)"])
    }

    /// A checker that crashes (here a script standing in for it, killed by
    /// SIGSEGV, through `AGRAPH_SOFA_CHECK`) is an error naming the file,
    /// and agraph itself lives on.
    func testACrashInTheCheckerIsAClearError() throws {
        let script = dir.file("crashing-check")
        try "#!/bin/sh\nkill -SEGV $$\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let path = try sofa("crash", { _ in })
        assertRefused(try validate(path, environment: ["AGRAPH_SOFA_CHECK": script]), path: path,
                      saying: ["libmysofa crashed (signal 11) or ran out of its memory limit reading it"])
    }
}
