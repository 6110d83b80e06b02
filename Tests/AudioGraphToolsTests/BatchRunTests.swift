import AudioGraph
import AudioGraphTools
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `render --each`'s runner in-process: `BatchRun` plans, starts the
/// renders (children of the built `agraph`), moves the outputs into place
/// and reports every input that failed, through its message sink and its
/// report.
final class BatchRunTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws { dir = try TemporaryDirectory("agraph-batchrun") }
    override func tearDown() { dir = nil }

    /// `file` src → `gain` g (-6 dB) → `file-out` out ("out.wav"). [main-thread]
    func graph(sampleRate: Int = 48000, endless: Bool = false) throws -> String {
        let path = dir.file("batch.json")
        let tone = endless ? #", {"id": "tone", "type": "test-tone", "params": {"frequency": 100, "channels": 1}}, {"id": "mix", "type": "mixer", "params": {"inputs": 2}}"# : ""
        let links = endless
            ? #"[{"from": "src", "to": "mix:in0"}, {"from": "tone", "to": "mix:in1"}, {"from": "mix", "to": "g"}, {"from": "g", "to": "out"}]"#
            : #"[{"from": "src", "to": "g"}, {"from": "g", "to": "out"}]"#
        try """
        {"format": "agraph/1", "sampleRate": \(sampleRate),
         "nodes": [
           {"id": "src", "type": "file", "params": {"path": "placeholder.wav"}},
           {"id": "g", "type": "gain", "params": {"gain": -6}},
           {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}\(tone)
         ],
         "links": \(links)}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A mono float WAV of a sine, `frames` long, in `music/`. [main-thread]
    func sine(_ name: String, frequency: Double, frames: Int, sampleRate: Int = 48000) throws -> String {
        try FileManager.default.createDirectory(atPath: dir.file("music"), withIntermediateDirectories: true)
        let path = dir.file("music/" + name)
        try writeSoundFile(path, format: .wavFloat32, channels: 1, sampleRate: Double(sampleRate),
                           samples: Synth.sine(frequency: frequency, amplitude: 0.5, sampleRate: Double(sampleRate), frames: frames))
        return path
    }

    func options(graph: String, inputs: [String], outputDir: String, jobs: Int = 2, duration: Double? = nil,
                 executable: String) -> BatchRun.Options {
        BatchRun.Options(graph: graph, settings: [], overrides: [], address: ParameterAddress(node: "src", parameter: "path"),
                         inputs: inputs, outputDir: outputDir, jobs: jobs, duration: duration, executable: executable,
                         registry: .builtIn)
    }

    static func names(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    func testEveryGoodInputIsRenderedAndEveryBadOneReportedWithItsReason() throws {
        let agraph = try CLIExecutable.path()
        let graph = try graph()
        let good = [("low.wav", 300.0, 24000), ("high.wav", 1800.0, 36000)]
        var inputs = try good.map { try sine($0.0, frequency: $0.1, frames: $0.2) }
        let damaged = dir.file("music/broken.wav")
        try Data((0..<6000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(to: URL(fileURLWithPath: damaged))
        let unreadable = dir.file("music/missing.wav")   // never written
        inputs.insert(damaged, at: 1)
        inputs.append(unreadable)
        // As the runner names it (TemporaryDirectory's path may hold "//").
        let out = dir.file("rendered").replacingOccurrences(of: "//", with: "/")

        let batch = BatchRun(options(graph: graph, inputs: inputs, outputDir: out, executable: agraph))
        var events: [BatchRun.Event] = []
        let prepared = try batch.prepare { events.append($0) }
        XCTAssertEqual(prepared.items.map(\.input), inputs)
        XCTAssertEqual(prepared.items.map { $0.outputs.map(\.final) },
                       [[out + "/low.wav"], [out + "/broken.wav"], [out + "/high.wav"], [out + "/missing.wav"]])
        XCTAssertEqual(events, [], "nothing to say before rendering")
        let report = batch.render(prepared, cancelled: { false }) { events.append($0) }

        XCTAssertEqual(report.count, 4)
        XCTAssertEqual(report.started, 4)
        XCTAssertEqual(report.finished, 4)
        XCTAssertEqual(report.rendered, 2)
        XCTAssertFalse(report.interrupted)
        XCTAssertEqual(Set(report.outputs), [out + "/low.wav", out + "/high.wav"])
        XCTAssertEqual(report.failures.map(\.input).sorted(), [damaged, unreadable].sorted(), "every failed input, and only those")
        for failure in report.failures {
            XCTAssertFalse(failure.reasons.isEmpty, failure.input)
            XCTAssertTrue(failure.reasons.contains { $0.contains(failure.input) || $0.contains("cannot read audio file") },
                          "\(failure.input): \(failure.reasons)")
        }
        let brokenReasons = report.failures.first { $0.input == damaged }?.reasons ?? []
        XCTAssertTrue(brokenReasons.contains { $0.contains("cannot read audio file") }, "\(brokenReasons)")
        XCTAssertFalse(brokenReasons.contains { $0.contains(".partial-") }, "no temporary name shown: \(brokenReasons)")

        // One event per input as it finished, numbered 1…4 in that order.
        var rendered: [String] = [], failed: [String] = [], order: [Int] = []
        for event in events {
            switch event {
            case .rendered(let k, let n, let input, let outputs, _, _):
                XCTAssertEqual(n, 4)
                order.append(k)
                rendered.append(input)
                XCTAssertEqual(outputs, ["\(out)/\(BatchPlan.stem(of: input)).wav"])
            case .failed(let k, let n, let input):
                XCTAssertEqual(n, 4)
                order.append(k)
                failed.append(input)
            default: XCTFail("unexpected \(event)")
            }
        }
        XCTAssertEqual(order, [1, 2, 3, 4])
        XCTAssertEqual(Set(rendered), Set(inputs[0...2].filter { $0 != damaged }))
        XCTAssertEqual(Set(failed), [damaged, unreadable])

        // The outputs, and nothing else (no partial file): each as long as its input, 6 dB down.
        XCTAssertEqual(Self.names(in: out), ["high.wav", "low.wav"])
        for (name, frequency, frames) in good {
            let sound = try readSoundFile(out + "/" + name)
            XCTAssertEqual(sound.channels, 1)
            XCTAssertEqual(sound.samples.count, frames, name)
            let steady = Array(sound.samples[(frames / 4)...])
            XCTAssertEqual(SignalAnalysis.frequency(of: steady, sampleRate: 48000), frequency, accuracy: frequency * 1e-4, name)
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(steady), SignalAnalysis.dBFS(0.5) - 6, accuracy: 0.05, name)
        }

        // The summary agraph prints: the failures are listed with --quiet too.
        let quiet = report.lines(quiet: true)
        XCTAssertEqual(quiet.first, "agraph: 2 of 4 inputs failed:")
        XCTAssertEqual(quiet.filter { $0.hasPrefix("  /") }.count, 2, "\(quiet)")
        XCTAssertTrue(report.lines(quiet: false).first?.hasPrefix("agraph: rendered 2 of 4 inputs into \(out) in ") == true)
    }

    /// The runner's side of the render-child protocol, apart from the
    /// renderer: a stand-in child (a shell script) that copies the input
    /// given with `--set src.path=` to the temporary `out.path`, only when
    /// started by a batch (`AGRAPH_BATCH_PARENT`), and fails an input named
    /// broken with a line naming the temporary file, as FileSink's does.
    func testOutputsAreMovedIntoPlaceAndAFailedRenderIsReportedUnderTheOutputsName() throws {
        let child = dir.file("copy-render")
        try #"""
        #!/bin/sh
        src=""; out=""
        while [ $# -gt 0 ]; do
          if [ "$1" = --set ]; then
            case "$2" in src.path=*) src="${2#src.path=}";; out.path=*) out="${2#out.path=}";; esac
            shift
          fi
          shift
        done
        src="${src%\"}"; src="${src#\"}"; out="${out%\"}"; out="${out#\"}"
        [ "$AGRAPH_BATCH_PARENT" = "$PPID" ] || { echo "not started by the batch" >&2; exit 3; }
        case "$src" in *broken*)
          echo "agraph: $src: cannot read audio file; 480 frames (0.01 s) were written and kept in $out; it is unchanged" >&2
          exit 1;;
        esac
        cp "$src" "$out"
        """#.write(toFile: child, atomically: true, encoding: .utf8)
        chmod(child, 0o755)
        let graph = try graph()
        let a = try sine("a.wav", frequency: 440, frames: 4800)
        let broken = try sine("broken.wav", frequency: 440, frames: 4800)
        let c = try sine("c.wav", frequency: 880, frames: 9600)
        let out = dir.file("out")
        let batch = BatchRun(options(graph: graph, inputs: [a, broken, c], outputDir: out, jobs: 3, executable: child))
        let prepared = try batch.prepare { _ in }
        let report = batch.render(prepared, cancelled: { false }) { _ in }
        XCTAssertEqual(report.rendered, 2)
        XCTAssertEqual(report.failures, [BatchRun.Failure(input: broken, reasons: [
            "agraph: \(prepared.items[1].path): cannot read audio file; the 0.01 s rendered were deleted; \(out)/broken.wav was not written"])])
        XCTAssertEqual(Self.names(in: out), ["a.wav", "c.wav"], "the outputs and nothing else")
        XCTAssertEqual(try readSoundFile(out + "/a.wav").samples.count, 4800)
        XCTAssertEqual(try readSoundFile(out + "/c.wav").samples.count, 9600)
    }

    func testARenderThatCannotStartFailsItsInputWithTheReason() throws {
        let graph = try graph()
        let inputs = [try sine("a.wav", frequency: 440, frames: 4800), try sine("b.wav", frequency: 880, frames: 4800)]
        let out = dir.file("out")
        let missing = dir.file("no-such-agraph")
        let batch = BatchRun(options(graph: graph, inputs: inputs, outputDir: out, jobs: 1, executable: missing))
        let prepared = try batch.prepare { _ in }
        var events: [BatchRun.Event] = []
        let report = batch.render(prepared, cancelled: { false }) { events.append($0) }
        XCTAssertEqual(report.rendered, 0)
        XCTAssertEqual(report.failures, inputs.map {
            BatchRun.Failure(input: $0, reasons: ["cannot start \(missing): \(FileChecks.errorText(ENOENT))"])
        })
        XCTAssertEqual(events, [.failed(index: 1, count: 2, input: inputs[0]), .failed(index: 2, count: 2, input: inputs[1])])
        XCTAssertEqual(Self.names(in: out), [])
    }

    func testCollidingOutputsAreRefusedBeforeAnythingIsMade() throws {
        let graph = try graph()
        let a = try sine("song.wav", frequency: 440, frames: 480)
        try FileManager.default.createDirectory(atPath: dir.file("other"), withIntermediateDirectories: true)
        let b = dir.file("other/song.wav")
        try FileManager.default.copyItem(atPath: a, toPath: b)
        let out = dir.file("out")
        let batch = BatchRun(options(graph: graph, inputs: [a, b], outputDir: out, executable: "/nonexistent"))
        XCTAssertThrowsError(try batch.prepare { _ in XCTFail("no event") }) { error in
            guard case .refused(let lines) = error as? BatchRunError else { return XCTFail("\(error)") }
            XCTAssertEqual(lines.last, "agraph: nothing was rendered")
            XCTAssertEqual(lines.first, "agraph: --each: \(a) and \(b) would both be written to \(out)/song.wav; give the inputs distinct file names, or render them in separate runs with different --output-dir")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "the output folder is not even made")
    }

    func testCancellingStopsEveryRenderAndLeavesNothingPartial() throws {
        let agraph = try CLIExecutable.path()
        let graph = try graph(sampleRate: 8000, endless: true)
        let inputs = try (0..<3).map { try sine("in\($0).wav", frequency: 440, frames: 800, sampleRate: 8000) }
        let out = dir.file("out")
        let batch = BatchRun(options(graph: graph, inputs: inputs, outputDir: out, jobs: 2, duration: 100_000, executable: agraph))
        let prepared = try batch.prepare { _ in }
        let deadline = Date().addingTimeInterval(30)
        var sawPartial = false
        var events: [BatchRun.Event] = []
        // Cancelled once a render has its file under way (or after 30 s).
        let report = batch.render(prepared, cancelled: {
            if !sawPartial { sawPartial = Self.names(in: out).contains { $0.hasPrefix(".in") && $0.contains(".wav.partial-") } }
            return sawPartial || Date() > deadline
        }) { events.append($0) }
        XCTAssertTrue(sawPartial, "a render was under way")
        XCTAssertTrue(report.interrupted)
        XCTAssertEqual(report.started, 2, "-j 2: the third never started")
        XCTAssertEqual(report.stopped, 2, "both renders stopped by the cancellation: \(report.failures)")
        XCTAssertEqual(report.rendered, 0)
        XCTAssertEqual(report.failures, [])
        XCTAssertEqual(events, [])
        XCTAssertEqual(Self.names(in: out), [], "nothing partial left")
        XCTAssertEqual(report.lines(quiet: true),
                       ["agraph: interrupted: 0 rendered, 2 stopped, 1 not started; nothing partial is left in \(out)"])
    }
}

/// The built `agraph`, found beside the test bundle (`locateAgraph`).
enum CLIExecutable {
    static func path() throws -> String {
        let (path, searched) = locateAgraph()
        guard let path else {
            throw XCTSkip("agraph not found next to the test bundle (searched \(searched)); build it first: swift build --product agraph")
        }
        return path
    }
}
