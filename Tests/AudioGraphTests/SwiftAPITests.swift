import XCTest
import Foundation
import Synchronization
import AudioGraph
import TestSupport

/// The public Swift API of `import AudioGraph` (issue #23): NodeRegistry.standard,
/// Graph (from a file, a text, a builder), render to a file and into memory,
/// progress, cancellation, typed errors. Judged by the signal and the files.
final class SwiftAPITests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws { dir = try TemporaryDirectory("agraph-swift-api") }
    override func tearDown() { dir = nil }

    let registry = NodeRegistry.builtIn

    /// A tone (`params`) into a null sink, as a graph file's text.
    func toneGraph(_ params: String, sinks: [String] = ["out"]) -> String {
        let nodes = sinks.map { #"{"id": "\#($0)", "type": "null"}"# }.joined(separator: ", ")
        let links = sinks.map { #"{"from": "tone", "to": "\#($0)"}"# }.joined(separator: ", ")
        return #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "tone", "type": "test-tone", "params": \#(params)}, \#(nodes)], "links": [\#(links)]}"#
    }

    /// Thread-safe list of what the progress closure saw.
    final class Seen: Sendable {
        let reports = Mutex<[RenderProgress]>([])
        func add(_ p: RenderProgress) { reports.withLock { $0.append(p) } }
        var all: [RenderProgress] { reports.withLock { $0 } }
    }

    // MARK: - Rendering into memory

    func testRenderSecondsOfA997HzToneHasItsFramesLevelAndFrequency() throws {
        for channels in [1, 2, 3] {
            let graph = try Graph(jsonText: toneGraph(#"{"frequency": 997, "level": -20, "channels": \#(channels)}"#), registry: registry)
            let audio = try graph.render(seconds: 2)
            XCTAssertEqual(audio.sampleRate, 48000)
            XCTAssertEqual(audio.channels.count, channels)
            for ch in audio.channels {
                XCTAssertEqual(ch.count, 2 * 48000)
                XCTAssertEqual(SignalAnalysis.rmsDBFS(ch), -20 - 10 * log10(2.0), accuracy: 0.05, "a sine's RMS is its peak less 3.01 dB")
                let crossings = SignalAnalysis.risingZeroCrossings(ch)
                let byCount = Double(crossings.count - 1) * 48000 / (crossings[crossings.count - 1] - crossings[0])
                XCTAssertEqual(byCount, 997, accuracy: 0.05, "frequency by zero crossings")
            }
            XCTAssertEqual(audio.frameCount, 96000)
        }
    }

    func testTheSinkIsChosenWhenThereAreSeveralAndMistakesAreTyped() throws {
        let graph = try Graph(jsonText: toneGraph(#"{"frequency": 1000, "level": -6, "channels": 2}"#, sinks: ["a", "b"]), registry: registry)
        XCTAssertEqual(graph.sinkIDs, ["a", "b"])
        XCTAssertThrowsError(try graph.render(seconds: 0.1)) { e in
            guard case RenderError.severalSinks(let sinks) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(sinks, ["a", "b"])
            XCTAssertTrue("\(e)".contains("RenderOptions(sink:)"), "\(e)")
        }
        XCTAssertThrowsError(try graph.render(seconds: 0.1, options: RenderOptions(sink: "c"))) { e in
            guard case RenderError.unknownSink("c", let sinks) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(sinks, ["a", "b"])
        }
        let b = try graph.render(seconds: 0.1, options: RenderOptions(sink: "b"))
        XCTAssertEqual(b.channels.count, 2)
        XCTAssertEqual(b.frameCount, 4800)
        XCTAssertEqual(SignalAnalysis.dBFS(SignalAnalysis.peak(b.channels[1])), -6, accuracy: 0.05)
        XCTAssertThrowsError(try graph.render(options: RenderOptions(sink: "a"))) { e in
            guard case RenderError.endlessSources(let ids) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(ids, ["tone"])
        }
        XCTAssertThrowsError(try graph.render(seconds: -1, options: RenderOptions(sink: "a"))) { e in
            guard case RenderError.invalidDuration(-1) = e else { return XCTFail("\(e)") }
        }
        XCTAssertThrowsError(try graph.render(seconds: 1, options: RenderOptions(sink: "a", blockFrames: 8))) { e in
            guard case RenderError.invalidBlockFrames(8) = e else { return XCTFail("\(e)") }
        }
    }

    // MARK: - Rendering to a file

    func testRenderToWAVWritesTheFramesAtTheGraphsRate() throws {
        for rate in [48000, 44100] {
            let text = toneGraph(#"{"frequency": 997, "level": -20, "channels": 2}"#)
                .replacingOccurrences(of: "\"sampleRate\": 48000", with: "\"sampleRate\": \(rate)")
            let path = dir.file("out-\(rate).wav")
            let graph = try Graph(jsonText: text, registry: registry)
            let summary = try graph.render(to: URL(fileURLWithPath: path), seconds: 1.5)
            XCTAssertEqual(summary.path, GraphPaths.resolve(path, against: "/"), "absolute, normalised")
            XCTAssertEqual(summary.ending, .durationReached)
            let file = try readSoundFile(path)
            XCTAssertEqual(file.channels, 2)
            XCTAssertEqual(file.sampleRate, Double(rate))
            XCTAssertEqual(file.samples.count, rate * 3 / 2 * 2, "1.5 s of frames")
            let memory = try graph.render(seconds: 1.5)
            let left = deinterleave(file.samples, channels: 2, channel: 0)
            XCTAssertEqual(left.count, memory.channels[0].count)
            let worst = zip(left, memory.channels[0]).map { abs($0 - $1) }.max() ?? 1
            XCTAssertLessThan(worst, 1.0 / 32768, "the file holds what the memory render captured (at the file's resolution)")
            XCTAssertEqual(SignalAnalysis.frequency(of: left, sampleRate: Double(rate)), 997, accuracy: 0.01)
        }
        // A format file-out cannot write is refused before anything runs.
        let graph = try Graph(jsonText: toneGraph(#"{"duration": 1}"#), registry: registry)
        XCTAssertThrowsError(try graph.render(to: URL(fileURLWithPath: dir.file("x.xyz")))) { e in
            guard case RenderError.output(let p, let reason) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(p, GraphPaths.resolve(dir.file("x.xyz"), against: "/"))
            XCTAssertTrue(reason.contains("xyz"), reason)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("x.xyz")))
    }

    // MARK: - Building in code

    func testABuiltGraphsTextReparsesToAGraphThatRendersTheSameSamples() throws {
        var b = GraphBuilder(name: "chain", sampleRate: 48000)
        let tone = b.node("test-tone", id: "tone", params: ["frequency": 997, "level": -20, "channels": 2, "duration": 1])
        let gain = b.node("gain", id: "g", params: ["gain": -6.5])
        let sink = b.node("null")
        b.link(tone, to: gain)
        b.link(gain, port: "out", to: sink, port: "in")
        XCTAssertEqual(sink.id, "null1")
        let built = try b.build(registry: registry)
        XCTAssertEqual(built.jsonText, b.jsonText)
        XCTAssertEqual(built.nodeIDs, ["tone", "g", "null1"])
        XCTAssertEqual(built.name, "chain")

        let fromText = try Graph(jsonText: built.jsonText, registry: registry)
        let path = dir.file("chain.json")
        try built.jsonText.write(toFile: path, atomically: true, encoding: .utf8)
        let fromFile = try Graph(contentsOf: URL(fileURLWithPath: path), registry: registry)
        XCTAssertEqual(fromFile.jsonText, built.jsonText)

        let a = try built.render()
        XCTAssertEqual(a.frameCount, 48000, "the tone's duration")
        XCTAssertEqual(SignalAnalysis.rmsDBFS(a.channels[0]), -20 - 6.5 - 10 * log10(2.0), accuracy: 0.05)
        for other in [fromText, fromFile] {
            let o = try other.render()
            XCTAssertEqual(o.channels.count, a.channels.count)
            for c in a.channels.indices { XCTAssertNil(firstMismatch(a.channels[c], o.channels[c])) }
        }
        // The issue's chain, no sink: one is added behind the gain, shown in jsonText.
        var issue = GraphBuilder(name: "chain", sampleRate: 48000)
        let issueTone = issue.node("test-tone", id: "tone", params: ["frequency": 997, "level": -20, "channels": 2, "duration": 1])
        let issueGain = issue.node("gain", id: "g", params: ["gain": -6])
        issue.link(issueTone, to: issueGain)
        let chain = try issue.build(registry: registry)
        XCTAssertEqual(chain.nodeIDs, ["tone", "g", "g-sink"])
        XCTAssertEqual(chain.sinkIDs, ["g-sink"])
        XCTAssertEqual(try Graph(jsonText: chain.jsonText, registry: registry).nodeIDs, chain.nodeIDs)
        let chainAudio = try chain.render()
        XCTAssertEqual(chainAudio.frameCount, 48000)
        XCTAssertEqual(SignalAnalysis.dBFS(SignalAnalysis.peak(chainAudio.channels[1])), -26, accuracy: 0.05)
        // Non-literal values and lists.
        var m = GraphBuilder(name: "mixed")
        let level = -12.0
        let t = m.node("test-tone", params: ["level": GraphValue(level), "channels": GraphValue(1), "duration": 0.5])
        let s = m.node("null")
        m.chain(t, s)
        let mixed = try m.build(registry: registry)
        XCTAssertEqual(mixed.sampleRate, 48000, "no sampleRate: the default")
        XCTAssertEqual(SignalAnalysis.dBFS(SignalAnalysis.peak(try mixed.render().channels[0])), -12, accuracy: 0.05)
    }

    /// Each builder mistake gets the diagnostic the same document gets from
    /// a file, pointing into `jsonText`.
    func testABuilderMistakeGetsTheFilesDiagnosticWithAPointerIntoItsText() throws {
        typealias Case = (make: (inout GraphBuilder) -> Void, pointer: String, words: String)
        let cases: [Case] = [
            ({ b in  // unknown parameter
                let t = b.node("test-tone", id: "tone", params: ["duration": 1])
                let g = b.node("gain", id: "g", params: ["gian": -6])
                let o = b.node("null", id: "out")
                b.chain(t, g, o)
            }, "/nodes/1/params/gian", "gain"),
            ({ b in  // out of range
                let t = b.node("test-tone", id: "tone", params: ["duration": 1])
                let g = b.node("gain", id: "g", params: ["gain": 1000])
                let o = b.node("null", id: "out")
                b.chain(t, g, o)
            }, "/nodes/1/params/gain", "48"),
            ({ b in  // unknown node type
                let t = b.node("test-tone", id: "tone", params: ["duration": 1])
                let g = b.node("gian", id: "g")
                let o = b.node("null", id: "out")
                b.chain(t, g, o)
            }, "/nodes/1/type", "gain"),
            ({ b in  // a link to a port that does not exist
                let t = b.node("test-tone", id: "tone", params: ["duration": 1])
                let g = b.node("gain", id: "g")
                b.link(t, to: g, port: "in9")
                let o = b.node("null", id: "out")
                b.link(g, to: o)
            }, "/links/0/to", "in9"),
        ]
        for (i, c) in cases.enumerated() {
            var b = GraphBuilder(name: "case\(i)", sampleRate: 48000)
            c.make(&b)
            let text = b.jsonText
            let fromBuilder: [Diagnostic]
            do { _ = try b.build(registry: registry); XCTFail("case \(i) built"); continue } catch {
                guard case .invalid(let file, let d) = error else { XCTFail("\(error)"); continue }
                XCTAssertEqual(file, "case\(i).json")
                fromBuilder = d
            }
            let path = dir.file("case\(i).json")
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let fromFile: [Diagnostic]
            do { _ = try Graph(contentsOf: URL(fileURLWithPath: path), registry: registry); XCTFail("case \(i) loaded"); continue } catch {
                fromFile = error.diagnostics
            }
            XCTAssertEqual(fromBuilder.map { var d = $0; d.file = path; return d }, fromFile, "case \(i): the same diagnostics")
            let first = try XCTUnwrap(fromBuilder.first(where: { $0.severity == .error }))
            XCTAssertEqual(first.pointer.description, c.pointer, "case \(i): \(first)")
            XCTAssertTrue(first.message.contains(c.words), "case \(i): \(first.message)")
            // The pointer's position is in jsonText, on the line holding its last key.
            let location = try XCTUnwrap(first.location, "case \(i)")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            XCTAssertLessThanOrEqual(location.line, lines.count)
            let line = lines[location.line - 1]
            XCTAssertTrue(line.contains("\"\(first.pointer.tokens.last ?? "")\""), "case \(i): line \(location.line) is \(line)")
        }
        // A number JSON cannot hold is refused at its pointer.
        var b = GraphBuilder(name: "nan", sampleRate: 48000)
        let nanTone = b.node("test-tone", params: ["level": GraphValue(Double.nan)])
        let nanSink = b.node("null")
        b.chain(nanTone, nanSink)
        XCTAssertThrowsError(try b.build(registry: registry)) { e in
            XCTAssertEqual((e as? GraphError)?.errors.map(\.pointer.description), ["/nodes/0/params/level"])
        }
    }

    // MARK: - Progress and cancellation

    func testProgressIsMonotonicAndReachesTheTotal() throws {
        let graph = try Graph(jsonText: toneGraph(#"{"duration": 1.25, "channels": 1}"#), registry: registry)
        let seen = Seen()
        let audio = try graph.render(options: RenderOptions(blockFrames: 1000, progress: { seen.add($0) }))
        XCTAssertEqual(audio.frameCount, 60000)
        let reports = seen.all
        XCTAssertTrue(reports.allSatisfy { $0.phase == .render && $0.totalFrames == 60000 })
        // One report a block; the end may be seen one (empty) block later.
        XCTAssertEqual(Array(reports.map(\.frames).prefix(60)), Array(stride(from: 1000, through: 60000, by: 1000)))
        XCTAssertTrue(reports.dropFirst(60).allSatisfy { $0.frames == 60000 }, "\(reports.count) reports")
        XCTAssertEqual(reports.last?.fraction, 1)
        // With a duration shorter than the source: that is the total.
        let seen2 = Seen()
        _ = try graph.render(to: URL(fileURLWithPath: dir.file("p.wav")), seconds: 0.5,
                             options: RenderOptions(progress: { seen2.add($0) }))
        let frames = seen2.all.map(\.frames)
        XCTAssertEqual(frames, frames.sorted())
        XCTAssertEqual(frames.last, 24000)
        XCTAssertTrue(seen2.all.allSatisfy { $0.totalFrames == 24000 })
    }

    func testCancellingStopsALongRenderEarlyAndLeavesNoFile() throws {
        // The graph writes a file of its own too; both are removed.
        let own = dir.file("own.flac")
        let text = #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [{"id": "tone", "type": "test-tone"}, {"id": "f", "type": "file-out", "params": {"path": "\#(own)"}}, {"id": "out", "type": "null"}], "links": [{"from": "tone", "to": "f"}, {"from": "tone", "to": "out"}]}"#
        let graph = try Graph(jsonText: text, registry: registry)
        let cancel = RenderCancellation()
        let seen = Seen()
        let target = dir.file("long.wav")
        let start = MonotonicClock.seconds()
        XCTAssertThrowsError(try graph.render(to: URL(fileURLWithPath: target), seconds: 3600, options: RenderOptions(
            sink: "out", cancellation: cancel,
            progress: { p in seen.add(p); if p.frames >= 96000 { cancel.cancel() } }))) { e in
            guard case RenderError.cancelled(let frames) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(frames, 96256, "stopped at the block after the one that asked")
        }
        XCTAssertLessThan(MonotonicClock.seconds() - start, 60, "an hour was not rendered")
        XCTAssertTrue(cancel.isCancelled)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [], "no output, not even a partial one")

        // Swift task cancellation stops a render into memory.
        let started = Seen()
        let task = Task.detached {
            try graph.render(seconds: 3600, options: RenderOptions(sink: "out", progress: { started.add($0) }))
        }
        let waitStart = MonotonicClock.seconds()
        while started.all.isEmpty && MonotonicClock.seconds() - waitStart < 30 { usleep(1000) }
        XCTAssertFalse(started.all.isEmpty, "the render started")
        task.cancel()
        let outcome = try XCTUnwrap(waitFor(task))
        guard case .failure(RenderError.cancelled(let frames)) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertLessThan(frames, 3600 * 48000)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [])
    }

    /// The task's result, waited for on this thread.
    func waitFor(_ task: Task<RenderedAudio, any Error>) -> Result<RenderedAudio, any Error>? {
        let box = Mutex<Result<RenderedAudio, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let r = await task.result
            box.withLock { $0 = r }
            done.signal()
        }
        guard done.wait(timeout: .now() + 60) == .success else { return nil }
        return box.withLock { $0 }
    }

    // MARK: - The standard registry

    func testTheStandardRegistryFindsTheShippedPluginsAndRendersAnM4A() throws {
        _ = try BuiltPlugins.path("libAGraphFFmpegPlugin.so")
        guard let ffmpeg = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        let environment = SavedEnvironment(["AGRAPH_PLUGIN_PATH"])
        setenv("AGRAPH_PLUGIN_PATH", BuiltPlugins.folder, 1)
        defer { withExtendedLifetime(environment) {} }

        let (registry, report) = try NodeRegistry.standardWithReport()
        XCTAssertNotNil(registry["ffmpeg"], report.note)
        XCTAssertTrue(report.searchedFolders.contains(BuiltPlugins.folder), report.note)
        XCTAssertTrue(report.plugins.contains { $0.typeIDs.contains("ffmpeg") }, report.note)
        XCTAssertNotNil(registry["gain"], "the built-ins")
        XCTAssertNotNil(registry["lv2"], "LV2 through the lv2 node")
        XCTAssertNotNil(try NodeRegistry.standard()["ffmpeg"])
        XCTAssertThrowsError(try NodeRegistry.standard(pluginFolders: [dir.file("missing")])) { e in
            XCTAssertEqual((e as? RegistryError)?.folder, dir.file("missing"))
        }

        let m4a = dir.file("tone.m4a")
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=2",
                                     "-ac", "2", "-c:a", "aac", "-b:a", "192k", m4a])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make an M4A: \(r.stderr)") }
        var b = GraphBuilder(name: "m4a", sampleRate: 48000)
        let media = b.node("media", params: ["path": GraphValue(m4a)])
        let decoder = b.node("ffmpeg")
        let sink = b.node("null")
        b.chain(media, decoder, sink)
        let audio = try b.build(registry: registry).render()
        XCTAssertEqual(audio.sampleRate, 48000)
        XCTAssertEqual(audio.channels.count, 2)
        XCTAssertEqual(Double(audio.frameCount), 96000, accuracy: 2048, "2 s, give or take the codec's priming")
        for ch in audio.channels {
            let middle = Array(ch[24000..<72000])
            XCTAssertEqual(SignalAnalysis.frequency(of: middle, sampleRate: 48000), 1000, accuracy: 0.5)
            XCTAssertEqual(SignalAnalysis.rmsDBFS(middle), 20 * log10(0.125) - 10 * log10(2.0) - 10 * log10(2.0), accuracy: 0.5,
                           "lavfi's sine is 1/8 of full scale, its RMS 3.01 dB under that, and -ac 2 puts the mono on each side at -3.01 dB")
        }
    }
}
