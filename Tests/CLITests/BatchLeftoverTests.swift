import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A batch that dies outright (issue #22, items 8 and 15): its renders die
/// with it, the next batch over the same folder removes the partial files
/// it left and says so, and a render cut by a full disk is reported as
/// what is on disk (deleted), under the output's own name.
final class BatchLeftoverTests: XCTestCase {
    /// `file` src (looping) → `file-out` out (FLAC): with a long --duration
    /// a render that goes on for minutes while writing little (silence).
    static func loopingGraph(in dir: TemporaryDirectory) throws -> String {
        let path = dir.file("loop.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "src", "type": "file", "params": {"path": "placeholder.wav", "loop": true}},
          {"id": "out", "type": "file-out", "params": {"path": "out.flac"}}],
         "links": [{"from": "src", "to": "out"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The pids of the processes whose parent is `parent` (from /proc).
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && pid_t(fields[1]) == parent
        }
    }

    /// Whether `pid` is a live process (a zombie, dead but not yet reaped
    /// by whoever adopted it, is not).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }

    func testRendersDieWithAKilledBatchAndTheNextBatchRemovesWhatItLeft() throws {
        let dir = try TemporaryDirectory("agraph-batch-kill")
        let graph = try Self.loopingGraph(in: dir)
        let inputs = [dir.file("a.wav"), dir.file("b.wav")]
        for input in inputs {
            try writeSoundFile(input, format: .wavFloat32, channels: 1, sampleRate: 48000, samples: [Float](repeating: 0, count: 48000))
        }
        let out = dir.file("out")
        let batch = try ChildProcess([try CLITests.agraphPath(), "render", graph, "--each", "src.path=\(inputs[0])", inputs[1],
                                      "--output-dir", out, "-j", "2", "--duration", "100000", "--quiet"])
        var renders: [pid_t] = []
        defer {
            // Whatever happens, nothing of this test keeps running.
            for pid in renders where Self.isAlive(pid) { kill(pid, SIGKILL) }
            batch.send(SIGKILL)
            batch.waitUntilExit(timeout: 10)
        }
        // Both renders under way, each writing its partial file.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            renders = Self.children(of: batch.pid)
            if renders.count == 2, BatchTests.names(in: out).filter({ $0.contains(".partial-") }).count >= 2 { break }
            usleep(20_000)
        }
        XCTAssertEqual(renders.count, 2, "two renders started: \(BatchTests.names(in: out))")
        let partial = BatchTests.names(in: out).filter { $0.contains(".partial-") }
        XCTAssertFalse(partial.isEmpty)

        batch.send(SIGKILL)
        XCTAssertTrue(batch.waitUntilExit(timeout: 10))
        let gone = Date().addingTimeInterval(5)
        while Date() < gone, renders.contains(where: Self.isAlive) { usleep(20_000) }
        XCTAssertEqual(renders.filter(Self.isAlive), [], "no render outlives the batch killed with SIGKILL (within 5 s)")

        // What the killed batch left: hidden files naming the batch's pid.
        let left = BatchTests.names(in: out).filter { $0.contains(".partial-") }
        XCTAssertFalse(left.isEmpty, "a batch killed outright cannot clean up")
        XCTAssertTrue(left.allSatisfy { $0.contains("-\(batch.pid)") }, "\(left)")

        // A foreign leftover (another machine's batch, a name alike) stays.
        let foreign = ".c.flac.partial-some-other-host-\(batch.pid)"
        try Data("another machine's render".utf8).write(to: URL(fileURLWithPath: out + "/" + foreign))

        // The next batch over the same folder removes them and says so.
        let next = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=\(inputs[0])", inputs[1],
                                                   "--output-dir", out, "--duration", "0.5", "--quiet"])
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.stderr.contains("agraph: removed \(left.count) partial render\(left.count == 1 ? "" : "s") left in \(out) by an earlier batch that no longer runs: "),
                      next.stderr)
        for name in left { XCTAssertTrue(next.stderr.contains(name), "\(name) is named: \(next.stderr)") }
        XCTAssertEqual(BatchTests.names(in: out), [foreign, "a.flac", "b.flac"].sorted())
        for name in ["a.flac", "b.flac"] {
            XCTAssertEqual(try readSoundFile(out + "/" + name).samples.count, 24000, "\(name): the new render, 0.5 s")
        }
    }

    /// A render cut by a full disk (a 2 MiB tmpfs): the batch says the
    /// partial render was deleted and names the output, not the internal
    /// `.NAME.partial-…` file; nothing is left on the disk.
    func testAFullDiskIsReportedAsWhatIsOnDisk() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a small tmpfs needs root") }
        let dir = try TemporaryDirectory("agraph-batch-full")
        let out = dir.file("small")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let mount = try runTool("/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", out], timeout: 30)
        guard mount.status == 0 else { throw XCTSkip("cannot mount a tmpfs here: \(mount.stderr)") }
        defer { _ = try? runTool("/bin/umount", [out], timeout: 30) }
        // A 2 s float WAV input; the graph writes 32-bit float WAV: 2 s is 384 kB,
        // so 20 s (looped) of it needs 3.84 MB.
        let input = dir.file("song.wav")
        try writeSoundFile(input, format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 440, amplitude: 0.25, sampleRate: 48000, frames: 96000))
        let graph = dir.file("full.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "src", "type": "file", "params": {"path": "placeholder.wav", "loop": true}},
          {"id": "out", "type": "file-out", "params": {"path": "out.wav", "format": "wav", "sampleFormat": "float32"}}],
         "links": [{"from": "src", "to": "out"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try CLITests.agraph(arguments: ["render", graph, "--each", "src.path=\(input)", "--output-dir", out, "--duration", "20", "--quiet"])
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssertTrue(run.stderr.contains("1 of 1 input failed:"), run.stderr)
        XCTAssertTrue(run.stderr.contains(out + "/song.wav: ") && run.stderr.contains("were deleted; \(out)/song.wav was not written"), run.stderr)
        XCTAssertFalse(run.stderr.contains("kept in"), "nothing is kept: \(run.stderr)")
        XCTAssertFalse(run.stderr.contains(".partial-"), "the internal name is not shown: \(run.stderr)")
        XCTAssertEqual(BatchTests.names(in: out), [], "nothing is left on the full disk")
    }
}
