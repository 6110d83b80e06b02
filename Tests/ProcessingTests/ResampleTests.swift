import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// Rate conversion (libsoxr): the `resample` node and the `file` source's
/// own conversion, measured on the signal: frequency, length, passband,
/// stopband, latency, alignment, allocations, errors.
final class ResampleTests: XCTestCase {
    /// How a test converts: the `file` source converting by itself
    /// (`resample: "auto"`), or a `resample` node (from a `file` at its own
    /// rate, `resample: "native"`, or to a rate island below the graph's).
    enum Path: String, CaseIterable { case file, node }

    /// Converts `samples` (mono, at `from` Hz) to `to` Hz through a graph.
    /// Returns the output from the signal's first frame on (the node's
    /// leading latency removed), the frames that were removed, the node's
    /// reported latency (graph frames), and whether the stream ended.
    func convert(_ samples: [Float], from: Int, to: Int, quality: String = "high", path: Path,
                 blockFrames: Int = 256) throws -> (output: [Float], lead: Int, latency: Int) {
        let dir = try TemporaryDirectory()
        let input = dir.file("in.wav")
        try writeSoundFile(input, format: .wavFloat32, channels: 1, sampleRate: Double(from), samples: samples)
        let graphRate: Int
        let nodes: String
        let links: String
        switch path {
        case .file:
            graphRate = to
            nodes = #"{"id": "src", "type": "file", "params": {"path": "in.wav", "quality": "\#(quality)"}}, {"id": "cap", "type": "capture"}"#
            links = #"{"from": "src", "to": "cap"}"#
        case .node:
            // Up: the file plays at its own (lower) rate, the node brings it
            // to the graph's. Down: the graph runs at the input's rate and
            // the node's output is a rate island.
            graphRate = max(from, to)
            let rateParam = to < graphRate ? #", "rate": \#(to)"# : ""
            let mode = from < graphRate ? "native" : "off"
            nodes = #"{"id": "src", "type": "file", "params": {"path": "in.wav", "resample": "\#(mode)"}}, {"id": "rs", "type": "resample", "params": {"quality": "\#(quality)"\#(rateParam)}}, {"id": "cap", "type": "capture"}"#
            links = #"{"from": "src", "to": "rs"}, {"from": "rs", "to": "cap"}"#
        }
        let json = #"{"format": "agraph/1", "sampleRate": \#(graphRate), "nodes": [\#(nodes)], "links": [\#(links)]}"#
        let store = CaptureStore(capacityFrames: samples.count * 2 + 200_000)
        let g = try TestGraph.validate(json, stores: ["main": store], directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        let latency = compiled.engine.node("rs")?.latency ?? 0
        let result = OfflineRenderer(engine: compiled.engine).run(maxFrames: samples.count * 4 + 200_000)
        XCTAssertTrue(result.finishErrors.isEmpty, "\(result.finishErrors)")
        XCTAssertTrue(store.ended, "the stream ends")
        let all = store.samples(0)
        let expected = Self.expectedLength(samples.count, from: from, to: to)
        let lead = all.count - expected
        return (Array(all[max(lead, 0)...]), lead, latency)
    }

    /// `round(frames × to / from)`, the length libsoxr's flushed output has.
    static func expectedLength(_ frames: Int, from: Int, to: Int) -> Int {
        (frames * to + from / 2) / from
    }

    // MARK: frequency and length

    func testFrequencyAndLengthAreExact() throws {
        for (from, to, frames) in [(44100, 48000, 88_213), (48000, 44100, 96_011)] {
            for path in Path.allCases {
                let tone = Synth.sine(frequency: 997, amplitude: 0.5, sampleRate: Double(from), frames: frames)
                let (out, lead, latency) = try convert(tone, from: from, to: to, path: path)
                let label = "\(from) → \(to) Hz via \(path)"
                // Length exact to the frame: after the leading latency, the
                // output holds exactly round(frames × to / from) frames.
                XCTAssertEqual(out.count, Self.expectedLength(frames, from: from, to: to), label)
                if path == .file {
                    XCTAssertEqual(lead, 0, "\(label): the file source adds no latency")
                } else {
                    XCTAssertGreaterThan(latency, 0, label)
                    // The lead is the reported latency (in output frames).
                    let graphRate = max(from, to)
                    XCTAssertEqual(Double(lead) * Double(graphRate) / Double(to), Double(latency), accuracy: 0.5, label)
                }
                // Frequency preserved to 0.01 % (measured away from the edges).
                let middle = Array(out[out.count / 8 ..< out.count * 7 / 8])
                let f = SignalAnalysis.frequency(of: middle, sampleRate: Double(to))
                XCTAssertEqual(f, 997, accuracy: 997 * 1e-4, label)
                // Level kept: a 0.5 sine stays 0.5 (−6.02 dBFS) to 0.01 dB.
                XCTAssertEqual(SignalAnalysis.sineLevelDBFS(middle), SignalAnalysis.dBFS(0.5), accuracy: 0.01, label)
            }
        }
    }

    /// The node's output starts exactly `latency` frames late: an impulse
    /// at input frame 14 700 (44.1 kHz) comes out at 16 000 + latency (48 kHz).
    func testNodeReportsItsDelayAsLatency() throws {
        for quality in ResampleQuality.names where quality != "quick" {
            var impulse = [Float](repeating: 0, count: 44100)
            impulse[14_700] = 1
            let (out, lead, latency) = try convert(impulse, from: 44100, to: 48000, quality: quality, path: .node)
            XCTAssertEqual(lead, latency, quality)
            let peak = out.indices.max { abs(out[$0]) < abs(out[$1]) } ?? -1
            XCTAssertEqual(peak, 16_000, "\(quality): the impulse lands at its time × 48000/44100 after the latency")
        }
    }

    /// Where paths meet, the engine aligns them with the reported latency:
    /// a 15 kHz tone converted in the file source (no latency) and by the
    /// node (latency L) adds up to +6.02 dB; one frame off would lose 5 dB.
    func testLatencyIsCompensatedWhereConvertedPathsMeet() throws {
        let dir = try TemporaryDirectory()
        let tone = Synth.sine(frequency: 15_000, amplitude: 0.25, sampleRate: 44100, frames: 44100)
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 1, sampleRate: 44100, samples: tone)
        let json = """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "a", "type": "file", "params": {"path": "in.wav"}},
              {"id": "b", "type": "file", "params": {"path": "in.wav", "resample": "native"}},
              {"id": "rs", "type": "resample"},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "mix:in0"}, {"from": "b", "to": "rs"}, {"from": "rs", "to": "mix:in1"},
                       {"from": "mix", "to": "cap"}]}
            """
        let store = CaptureStore(capacityFrames: 100_000)
        let compiled = try GraphCompiler.compile(TestGraph.validate(json, stores: ["main": store], directory: dir.path), maxFrames: 512)
        let latency = try XCTUnwrap(compiled.engine.node("rs")).latency
        XCTAssertGreaterThan(latency, 0)
        XCTAssertEqual(compiled.engine.compensationDelays.first?.frames, latency, "the file path is delayed by the node's latency")
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 200_000)
        let out = store.samples(0)
        XCTAssertEqual(out.count, latency + 48000)
        let middle = Array(out[(latency + 8000) ..< (latency + 40000)])
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(middle), SignalAnalysis.dBFS(0.5), accuracy: 0.05,
                       "the two converted paths are aligned to the frame")
    }

    // MARK: passband and stopband

    /// Sines at whole hertz, each an exact bin of a 1 s window at either rate.
    static let passbandTones: [Double] = [50, 100, 1000, 5000, 10_000, 15_000, 18_000, 19_000, 19_800]

    func testPassbandIsFlatBelowNineTenthsOfNyquist() throws {
        // 0.9 × Nyquist of the lower rate: 19 845 Hz.
        XCTAssertLessThan(Self.passbandTones.max() ?? 0, 0.9 * 22050)
        for (from, to) in [(44100, 48000), (48000, 44100)] {
            var input = [Float](repeating: 0, count: 3 * from)
            for f in Self.passbandTones {
                let s = Synth.sine(frequency: f, amplitude: 0.1, sampleRate: Double(from), frames: input.count)
                for i in input.indices { input[i] += s[i] }
            }
            for path in Path.allCases {
                for quality in ["high", "very-high"] {
                    let (out, _, _) = try convert(input, from: from, to: to, quality: quality, path: path)
                    let window = Array(out[to ..< 2 * to])   // the middle second
                    for f in Self.passbandTones {
                        let level = SignalAnalysis.dBFS(SignalAnalysis.goertzelMagnitude(window, sampleRate: Double(to), frequency: f))
                        XCTAssertEqual(level, SignalAnalysis.dBFS(0.1), accuracy: 0.1,
                                       "\(from) → \(to) Hz via \(path), \(quality): \(f) Hz")
                    }
                }
            }
        }
    }

    /// At `very-high`, what lies beyond the lower rate's Nyquist frequency
    /// stays below −100 dB: the images of a 20 kHz tone going up, the
    /// aliases of a 23 kHz tone going down.
    func testStopbandIsBelowMinus100dBAtVeryHigh() throws {
        let fft = 32768
        // Up: the tone's images would fall between 22.05 and 24 kHz.
        let up = Synth.sine(frequency: 20_000, amplitude: 0.5, sampleRate: 44100, frames: 3 * 44100)
        for path in Path.allCases {
            let (out, _, _) = try convert(up, from: 44100, to: 48000, quality: "very-high", path: path)
            let spectrum = SignalAnalysis.powerSpectrum(Array(out[24000 ..< 24000 + 3 * fft]), fftSize: fft)
            let reference = Self.bandMax(spectrum, 19_900 ... 20_100, fft: fft, rate: 48000)
            let images = Self.bandMax(spectrum, 22_100 ... 23_990, fft: fft, rate: 48000)
            XCTAssertLessThan(10 * log10(images / reference), -100, "images of 20 kHz, 44.1 → 48 kHz via \(path)")
        }
        // Down: a 1 kHz reference and a 23 kHz tone, which would alias to 21.1 kHz.
        let ref = Synth.sine(frequency: 1000, amplitude: 0.4, sampleRate: 48000, frames: 3 * 48000)
        let high = Synth.sine(frequency: 23_000, amplitude: 0.4, sampleRate: 48000, frames: 3 * 48000)
        let down = zip(ref, high).map { $0 + $1 }
        for path in Path.allCases {
            let (out, _, _) = try convert(down, from: 48000, to: 44100, quality: "very-high", path: path)
            let spectrum = SignalAnalysis.powerSpectrum(Array(out[22050 ..< 22050 + 3 * fft]), fftSize: fft)
            let reference = Self.bandMax(spectrum, 990 ... 1010, fft: fft, rate: 44100)
            let alias = Self.bandMax(spectrum, 20_900 ... 21_300, fft: fft, rate: 44100)
            XCTAssertLessThan(10 * log10(alias / reference), -100, "alias of 23 kHz, 48 → 44.1 kHz via \(path)")
            // And the 1 kHz tone came through at its level.
            XCTAssertEqual(SignalAnalysis.dBFS(SignalAnalysis.goertzelMagnitude(Array(out[44100 ..< 88200]), sampleRate: 44100, frequency: 1000)),
                           SignalAnalysis.dBFS(0.4), accuracy: 0.05, "via \(path)")
        }
    }

    static func bandMax(_ spectrum: [Double], _ band: ClosedRange<Double>, fft: Int, rate: Double) -> Double {
        let lo = Int((band.lowerBound / rate * Double(fft)).rounded(.up))
        let hi = min(Int((band.upperBound / rate * Double(fft)).rounded(.down)), spectrum.count - 1)
        return spectrum[lo ... hi].max() ?? 0
    }

    // MARK: sources convert by themselves

    /// The committed 44.1 kHz example file plays in a 48 kHz graph: 0.5 s
    /// of a 1 kHz tone become exactly 24 000 frames at 1 kHz.
    func testA44k1FilePlaysInA48kGraph() throws {
        let media = TestMedia.packageRoot + "/Graphs/media/tone-44k1.flac"
        let info = try soundFileInfo(media)
        XCTAssertEqual(info.sampleRate, 44100)
        let out = try TestGraph.render(TestGraph.single("file", #"{"path": "\#(media)"}"#), seconds: 2)
        XCTAssertEqual(out[0].count, Self.expectedLength(info.frames, from: 44100, to: 48000))
        let f = SignalAnalysis.frequency(of: Array(out[0][2400 ..< out[0].count - 2400]), sampleRate: 48000)
        let source = try readSoundFile(media)
        let fIn = SignalAnalysis.frequency(of: Array(source.samples[2205 ..< source.samples.count - 2205]), sampleRate: 44100)
        XCTAssertEqual(f, fIn, accuracy: fIn * 1e-4)
    }

    /// Seeking a converted file lands at the same time: a 1 kHz tone whose
    /// second half is 2 kHz, sought to 1.5 s, plays 2 kHz from the start.
    func testSeekInAConvertedFileLandsAtTheSameTime() throws {
        let dir = try TemporaryDirectory()
        let a = Synth.sine(frequency: 1000, amplitude: 0.5, sampleRate: 44100, frames: 44100)
        let b = Synth.sine(frequency: 2000, amplitude: 0.5, sampleRate: 44100, frames: 44100)
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 1, sampleRate: 44100, samples: a + b)
        let store = CaptureStore(capacityFrames: 200_000)
        let g = try TestGraph.validate(TestGraph.single("file", #"{"path": "in.wav"}"#), stores: ["main": store], directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 256)
        let node = try XCTUnwrap(compiled.engine.node("src") as? any SeekableNode)
        XCTAssertEqual(node.lengthFrames, 96000)
        XCTAssertTrue(node.seek(toFrame: 72000))
        XCTAssertFalse(node.seek(toFrame: 96000), "past the end")
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 200_000)
        let out = store.samples(0)
        XCTAssertEqual(out.count, 24000, "1.5 s of 2 s remain")
        XCTAssertEqual(SignalAnalysis.frequency(of: Array(out[1000 ..< 23000]), sampleRate: 48000), 2000, accuracy: 0.2)
    }

    // MARK: bad input

    func testBadInputNamesThePointer() throws {
        let dir = try TemporaryDirectory()
        try writeSoundFile(dir.file("in44.wav"), format: .wavFloat32, channels: 1, sampleRate: 44100,
                           samples: Synth.sine(frequency: 440, sampleRate: 44100, frames: 4410))
        try writeSoundFile(dir.file("in96.wav"), format: .wavFloat32, channels: 1, sampleRate: 96000,
                           samples: Synth.sine(frequency: 440, sampleRate: 96000, frames: 9600))
        func errors(_ nodes: String, _ links: String, rate: Int = 48000) -> [Diagnostic] {
            let json = #"{"format": "agraph/1", "sampleRate": \#(rate), "nodes": [\#(nodes)], "links": [\#(links)]}"#
            switch GraphValidator(registry: TestGraph.registry(["main": CaptureStore(capacityFrames: 1)]))
                .validate(bytes: Array(json.utf8), file: "bad.json", directory: dir.path) {
            case .success: return []
            case .failure(let e): return e.errors
            }
        }
        func expect(_ diagnostics: [Diagnostic], _ pointer: String, _ phrases: [String], line: UInt = #line) {
            let found = diagnostics.contains { d in d.pointer.description == pointer && phrases.allSatisfy { d.message.contains($0) } }
            XCTAssertTrue(found, "expected an error at \(pointer) with \(phrases); got \(diagnostics.map(\.description))", line: line)
        }
        let tone = #"{"id": "t", "type": "test-tone"}"#
        let cap = #"{"id": "cap", "type": "capture"}"#
        let chain = #"{"from": "t", "to": "rs"}, {"from": "rs", "to": "cap"}"#
        // Rates out of range, above the graph's, unknown quality.
        expect(errors(tone + #", {"id": "rs", "type": "resample", "params": {"rate": 500}}, "# + cap, chain), "/nodes/1/params/rate", ["out of range"])
        expect(errors(tone + #", {"id": "rs", "type": "resample", "params": {"rate": 1000000}}, "# + cap, chain), "/nodes/1/params/rate", ["out of range"])
        expect(errors(tone + #", {"id": "rs", "type": "resample", "params": {"rate": 96000}}, "# + cap, chain),
               "/nodes/1/params/rate", ["96000 Hz is above the graph's 48000 Hz"])
        expect(errors(tone + #", {"id": "rs", "type": "resample", "params": {"rate": 44100.5}}, "# + cap, chain), "/nodes/1/params/rate", ["whole number"])
        expect(errors(tone + #", {"id": "rs", "type": "resample", "params": {"quality": "ultra"}}, "# + cap, chain),
               "/nodes/1/params/quality", ["\"ultra\" is not allowed", "very-high"])
        // `off` keeps the mismatch an error; `native` refuses a rate above the graph's.
        let src44off = #"{"id": "f", "type": "file", "params": {"path": "in44.wav", "resample": "off"}}"#
        expect(errors(src44off + ", " + cap, #"{"from": "f", "to": "cap"}"#), "/nodes/0/params/path",
               ["44100 Hz", "48000 Hz", "\"resample\": \"auto\""])
        let src96native = #"{"id": "f", "type": "file", "params": {"path": "in96.wav", "resample": "native"}}"#
        expect(errors(src96native + ", " + cap, #"{"from": "f", "to": "cap"}"#), "/nodes/0/params/resample", ["96000 Hz", "above the graph's"])
        expect(errors(#"{"id": "f", "type": "file", "params": {"path": "in44.wav", "quality": "best"}}, "# + cap, #"{"from": "f", "to": "cap"}"#),
               "/nodes/0/params/quality", ["\"best\" is not allowed"])
        // A rate island may not be mixed with streams at the graph's rate.
        let island = #"{"id": "f", "type": "file", "params": {"path": "in44.wav", "resample": "native"}}, "# + tone
            + #", {"id": "m", "type": "mixer", "params": {"inputs": 2}}, "# + cap
        expect(errors(island, #"{"from": "f", "to": "m:in0"}, {"from": "t", "to": "m:in1"}, {"from": "m", "to": "cap"}"#),
               "/links/0", ["44100 Hz", "48000 Hz"])
        // The same files are fine with the defaults.
        XCTAssertEqual(errors(#"{"id": "f", "type": "file", "params": {"path": "in96.wav"}}, "# + cap, #"{"from": "f", "to": "cap"}"#).count, 0)
        XCTAssertNotNil(Resampler.problem(from: 0, to: 48000), "a zero rate is refused")
        XCTAssertNil(Resampler.problem(from: 44100, to: 48000, channels: 2, quality: .veryHigh))
    }

    // MARK: realtime safety

    /// Rendering with resample nodes (up from a rate island, down into one
    /// and back, a stream that ends and is flushed) allocates nothing,
    /// across block sizes and parameter changes. `resample`'s own
    /// parameters are fixed at build time; the changes go to a gain in
    /// the converted path.
    func testResampleRenderAllocatesNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let dir = try TemporaryDirectory()
        try writeSoundFile(dir.file("loop.wav"), format: .wavFloat32, channels: 2, sampleRate: 44100,
                           samples: Synth.sine(frequency: 440, amplitude: 0.3, sampleRate: 44100, frames: 2 * 13230))
        try writeSoundFile(dir.file("short.wav"), format: .wavFloat32, channels: 1, sampleRate: 32000,
                           samples: Synth.sine(frequency: 440, amplitude: 0.3, sampleRate: 32000, frames: 16000))
        let json = """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "f", "type": "file", "params": {"path": "loop.wav", "loop": true, "resample": "native"}},
              {"id": "up", "type": "resample", "params": {"quality": "very-high"}},
              {"id": "g", "type": "gain"},
              {"id": "cap", "type": "capture"},
              {"id": "auto", "type": "file", "params": {"path": "loop.wav", "loop": true}},
              {"id": "n0", "type": "null"},
              {"id": "t", "type": "test-tone", "params": {"channels": 2}},
              {"id": "down", "type": "resample", "params": {"rate": 22050, "quality": "medium"}},
              {"id": "back", "type": "resample", "params": {"quality": "quick"}},
              {"id": "n1", "type": "null"},
              {"id": "s", "type": "file", "params": {"path": "short.wav", "resample": "native"}},
              {"id": "ends", "type": "resample", "params": {"quality": "low"}},
              {"id": "n2", "type": "null"}],
             "links": [{"from": "f", "to": "up"}, {"from": "up", "to": "g"}, {"from": "g", "to": "cap"},
                       {"from": "auto", "to": "n0"},
                       {"from": "t", "to": "down"}, {"from": "down", "to": "back"}, {"from": "back", "to": "n1"},
                       {"from": "s", "to": "ends"}, {"from": "ends", "to": "n2"}]}
            """
        let store = CaptureStore(capacityFrames: 8192)
        // Blocks up to 4096 frames: libsoxr grows its buffers for larger
        // blocks than it has seen, so the node must have warmed up with the
        // largest (the first render here is a small one).
        let compiled = try GraphCompiler.compile(TestGraph.validate(json, stores: ["main": store], directory: dir.path), maxFrames: 4096)
        let engine = compiled.engine
        engine.worker.start()
        engine.worker.waitUntilReady(frames: 4096)
        engine.render(frames: 64)
        let changes = try [("g.gain", -6.0), ("g.mute", 1), ("g.gain", 0), ("g.mute", 0)].map { try compiled.change($0.0, $0.1) }
        let sizes = [64, 4096, 100, 1, 512]
        // Waiting for the reader is outside the count, as posting is.
        let allocations = MallocCounter.countRendering(engine, sizes: sizes, changes: changes) {
            engine.worker.waitUntilReady(frames: 4096)
        }
        engine.worker.stop()
        XCTAssertTrue(engine.worker.finishJobs().isEmpty)
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks")
        XCTAssertGreaterThan(engine.framePosition, 1_000_000)
        // The short file ended and its resampler was flushed inside the count.
        XCTAssertTrue(Self.ended(engine, "n2"))
    }

    /// Whether the stream into sink `id` has ended (read from the engine's
    /// buses after rendering).
    static func ended(_ engine: Engine, _ id: String) -> Bool {
        guard let i = engine.stepIndex(of: id), let src = engine.inputIndices[i].first, let bus = engine.outputs[src] else { return false }
        return bus.state.ended
    }

    // MARK: agraph validate --verbose

    func testValidateVerboseReportsTheConversion() throws {
        guard let agraph = locateAgraph().path else { throw XCTSkip("agraph is not built next to the tests") }
        let graph = TestMedia.packageRoot + "/Graphs/resample.json"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: agraph)
        process.arguments = ["validate", "--verbose", graph]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("converts media/tone-44k1.flac 44100 → 48000 Hz (libsoxr, quality high, on the reader thread)"), text)
        XCTAssertTrue(text.contains("converts 44100 → 48000 Hz (libsoxr, quality very-high, on the audio thread)"), text)
        XCTAssertTrue(text.contains("rate island"), text)
    }
}
