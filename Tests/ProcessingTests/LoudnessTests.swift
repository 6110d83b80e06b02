import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// The `loudness` node and its measurements, on signals generated here: the
/// EBU Tech 3341 (loudness, true peak) and Tech 3342 (loudness range) test
/// signals, with the values those documents give; ffmpeg's `ebur128` filter
/// on the same files when it is installed; offline two-pass normalization
/// checked with an independent BS.1770 measurement; the live (follow)
/// gain's rate; zero allocations while rendering.
final class LoudnessTests: XCTestCase {
    static let rate = 48_000.0

    // MARK: signals

    /// A 1 kHz sine program: each segment gives every channel's level in
    /// dBFS (peak; -inf: silent) and its length. Phase runs on across
    /// segments. Interleaved.
    static func sineProgram(_ segments: [(levels: [Double], seconds: Double)], frequency: Double = 1000,
                            phase: Double = 0, sampleRate: Double = rate) -> [Float] {
        let channels = segments.first?.levels.count ?? 1
        var out: [Float] = []
        var n = 0
        for s in segments {
            let frames = Int((s.seconds * sampleRate).rounded())
            let amps = s.levels.map { $0.isFinite ? pow(10, $0 / 20) : 0 }
            out.reserveCapacity(out.count + frames * channels)
            for _ in 0..<frames {
                let cycles = frequency / sampleRate * Double(n)
                let v = sin(2 * .pi * (cycles - cycles.rounded(.down)) + phase)
                for c in 0..<channels { out.append(Float(amps[c] * v)) }
                n += 1
            }
        }
        return out
    }

    /// Stereo segments with the same level in both channels.
    static func stereo(_ segments: [(Double, Double)]) -> [Float] {
        sineProgram(segments.map { (levels: [$0.0, $0.0], seconds: $0.1) })
    }

    /// EBU Tech 3341 test cases 1–6 (v4, 2016): signal and expected
    /// integrated loudness (±0.1 LU).
    static let tech3341: [(name: String, channels: Int, signal: @Sendable () -> [Float], integrated: Double)] = [
        ("3341-1", 2, { stereo([(-23, 20)]) }, -23),
        ("3341-2", 2, { stereo([(-33, 20)]) }, -33),
        ("3341-3", 2, { stereo([(-36, 10), (-23, 60), (-36, 10)]) }, -23),
        ("3341-4", 2, { stereo([(-72, 10), (-36, 10), (-23, 60), (-36, 10), (-72, 10)]) }, -23),
        ("3341-5", 2, { stereo([(-26, 20), (-20, 20.1), (-26, 20)]) }, -23),
        // 5.0 in a 5.1 file (L R C LFE Ls Rs; LFE silent).
        ("3341-6", 6, { sineProgram([(levels: [-28, -28, -24, -.infinity, -30, -30], seconds: 20)]) }, -23),
    ]

    /// EBU Tech 3342 test cases 1–4 (v3): expected loudness range (±1 LU).
    static let tech3342: [(name: String, signal: @Sendable () -> [Float], range: Double)] = [
        ("3342-1", { stereo([(-20, 20), (-30, 20)]) }, 10),
        ("3342-2", { stereo([(-20, 20), (-15, 20)]) }, 5),
        ("3342-3", { stereo([(-40, 20), (-20, 20)]) }, 20),
        ("3342-4", { stereo([(-50, 20), (-35, 20), (-20, 20), (-35, 20), (-50, 20)]) }, 15),
    ]

    /// EBU Tech 3341 true-peak cases 15–19 (48 kHz, stereo): a sine at
    /// fs/4, fs/6, fs/8 whose samples miss its peak by the start phase.
    /// Expected true peak, tolerance +0.2/−0.4 dB.
    static let truePeakCases: [(name: String, frequency: Double, phaseDegrees: Double, peakDBFS: Double, expected: Double)] = [
        ("3341-15", 12_000, 0, -6, -6),
        ("3341-16", 12_000, 45, -6, -6),
        ("3341-17", 8_000, 60, -6, -6),
        ("3341-18", 6_000, 67.5, -6, -6),
        // Samples at ±1.0 (0 dBFS), the sine between them at +3 dBTP.
        ("3341-19", 12_000, 45, 20 * log10(2.0.squareRoot()), 3),
    ]

    static func write(_ samples: [Float], channels: Int, to path: String) throws {
        try writeSoundFile(path, format: .wavFloat32, channels: channels, sampleRate: rate, samples: samples)
    }

    // MARK: rendering through the node

    /// A control host for `ControlSurface` after an offline render.
    final class StoppedHost: ControlHost, @unchecked Sendable {
        func pause() {}
        func play() {}
        func status() -> GraphStatus {
            GraphStatus(seconds: 0, frames: 0, peaks: [], xruns: 0, underruns: 0, cpuLoad: 0, bufferSize: 0,
                        paused: false, finished: true, serverGone: false)
        }
    }

    struct Rendered {
        var readings: [String: Double]
        var words: [String: String]
        var output: [[Float]]
        var notices: [String]
    }

    /// `file` → loudness (`params`) → capture, rendered offline the way
    /// `agraph render` does (analysis passes included); the readings are
    /// read through the control surface's `get`.
    func render(_ path: String, params: String = "{}", blockFrames: Int = 1024) throws -> Rendered {
        let frames = try soundFileInfo(path).frames
        let store = CaptureStore(capacityFrames: frames + 48_000)
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "src", "type": "file", "params": {"path": "\(path)"}},
                       {"id": "loud", "type": "loudness", "params": \(params)},
                       {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "loud"}, {"from": "loud", "to": "cap"}]}
            """
        let g = try TestGraph.validate(json, stores: ["main": store])
        let compiled = try XCTUnwrap(try OfflinePasses.compile(g, maxFrames: blockFrames))
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors, [])
        XCTAssertEqual(result.ending, .endOfStream)
        let host = StoppedHost()
        let surface = ControlSurface(compiled: compiled, host: host)
        var readings: [String: Double] = [:]
        var words: [String: String] = [:]
        for (name, _) in LoudnessType.readings {
            let r = try surface.get("loud.\(name)")
            readings[name] = r.value
            words[name] = r.word
        }
        return Rendered(readings: readings, words: words, output: (0..<store.channels.count).map { store.samples($0) },
                        notices: compiled.notices)
    }

    // MARK: EBU Tech 3341 and 3342

    func testTech3341IntegratedLoudnessCases1To6() throws {
        let dir = try TemporaryDirectory()
        for t in Self.tech3341 {
            let path = dir.file("\(t.name).wav")
            try Self.write(t.signal(), channels: t.channels, to: path)
            let r = try render(path)
            XCTAssertEqual(r.readings["integrated"] ?? .nan, t.integrated, accuracy: 0.1, "\(t.name) integrated")
            XCTAssertTrue(r.words["integrated"]?.hasSuffix("LUFS") == true, "\(t.name): \(r.words)")
            if t.name == "3341-1" || t.name == "3341-2" {
                // Steady tones: momentary and short-term read the same.
                XCTAssertEqual(r.readings["momentary"] ?? .nan, t.integrated, accuracy: 0.1, "\(t.name) momentary")
                XCTAssertEqual(r.readings["shortTerm"] ?? .nan, t.integrated, accuracy: 0.1, "\(t.name) short-term")
            }
            // Measuring only: the signal passes unchanged.
            let input = try readSoundFile(path)
            XCTAssertEqual(r.output[0].count, input.samples.count / t.channels, "\(t.name) length")
            XCTAssertNil(firstMismatch(r.output[0], deinterleave(input.samples, channels: t.channels, channel: 0)), t.name)
        }
    }

    /// A true-peak case's 5 s stereo sine, with 20 ms raised-cosine fades:
    /// an abrupt start or end would ring in any oversampling filter (Gibbs)
    /// above the steady peak.
    static func truePeakSignal(_ t: (name: String, frequency: Double, phaseDegrees: Double, peakDBFS: Double, expected: Double)) -> [Float] {
        var samples = sineProgram([(levels: [t.peakDBFS, t.peakDBFS], seconds: 5)], frequency: t.frequency,
                                  phase: t.phaseDegrees * .pi / 180)
        let fade = 960, frames = samples.count / 2
        for i in 0..<fade {
            let g = Float(0.5 - 0.5 * cos(Double.pi * Double(i) / Double(fade)))
            for c in 0..<2 {
                samples[2 * i + c] *= g
                samples[2 * (frames - 1 - i) + c] *= g
            }
        }
        return samples
    }

    func testTech3341TruePeakCases15To19() throws {
        let dir = try TemporaryDirectory()
        for t in Self.truePeakCases {
            let samples = Self.truePeakSignal(t)
            let path = dir.file("\(t.name).wav")
            try Self.write(samples, channels: 2, to: path)
            let r = try render(path)
            let tp = r.readings["truePeak"] ?? .nan
            XCTAssertLessThanOrEqual(tp, t.expected + 0.2, t.name)
            XCTAssertGreaterThanOrEqual(tp, t.expected - 0.4, t.name)
        }
    }

    func testTech3342LoudnessRangeCases1To4() throws {
        let dir = try TemporaryDirectory()
        for t in Self.tech3342 {
            let path = dir.file("\(t.name).wav")
            try Self.write(t.signal(), channels: 2, to: path)
            let r = try render(path)
            XCTAssertEqual(r.readings["loudnessRange"] ?? .nan, t.range, accuracy: 1, t.name)
        }
    }

    // MARK: against ffmpeg

    /// ffmpeg's `ebur128=peak=true` on the same files agrees within 0.1 LU
    /// (integrated), 0.1 LU (range) and 0.1 dB (true peak).
    func testAgreesWithFFmpegEBUR128() throws {
        guard let ffmpeg = FFmpegEBUR128.path else { throw XCTSkip("ffmpeg is not installed") }
        let dir = try TemporaryDirectory()
        var cases: [(String, Int, [Float])] = Self.tech3341.map { ($0.name, $0.channels, $0.signal()) }
        cases += Self.tech3342.map { ($0.name, 2, $0.signal()) }
        cases.append(("pink", 2, Self.pinkStereo(seconds: 30, rms: 0.1)))
        for (name, channels, samples) in cases {
            let path = dir.file("\(name).wav")
            try Self.write(samples, channels: channels, to: path)
            let ours = try render(path).readings
            let theirs = try FFmpegEBUR128.measure(path, ffmpeg: ffmpeg)
            XCTAssertEqual(ours["integrated"] ?? .nan, theirs.integrated, accuracy: 0.1, "\(name) integrated vs ffmpeg")
            XCTAssertEqual(ours["loudnessRange"] ?? .nan, theirs.range, accuracy: 0.1 + 0.05, "\(name) LRA vs ffmpeg (ffmpeg prints 0.1 LU steps)")
            if channels == 2 {
                XCTAssertEqual(ours["truePeak"] ?? .nan, theirs.truePeak, accuracy: 0.1 + 0.05, "\(name) true peak vs ffmpeg")
            }
        }
    }

    static func pinkStereo(seconds: Double, rms: Double, seed: UInt64 = 7) -> [Float] {
        let frames = Int(seconds * rate)
        let l = Synth.pinkNoise(frames: frames, seed: seed, rms: rms)
        let r = Synth.pinkNoise(frames: frames, seed: seed + 1, rms: rms)
        var out = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            out[2 * i] = l[i]
            out[2 * i + 1] = r[i]
        }
        return out
    }

    // MARK: normalization

    /// Offline, two passes: the output's integrated loudness, measured by
    /// an independent BS.1770 implementation, is the target within 0.1 LU.
    func testTwoPassNormalizationHitsTheTarget() throws {
        let dir = try TemporaryDirectory()
        // Pink noise then a quieter passage: integrated ≈ -31 LUFS.
        var samples = Self.pinkStereo(seconds: 12, rms: 0.03)
        samples += Self.pinkStereo(seconds: 8, rms: 0.01, seed: 11)
        let path = dir.file("program.wav")
        try Self.write(samples, channels: 2, to: path)
        let before = ReferenceLoudness.integrated([deinterleave(samples, channels: 2, channel: 0),
                                                   deinterleave(samples, channels: 2, channel: 1)])
        for target in [-23.0, -16.0] {
            let r = try render(path, params: #"{"target": \#(target)}"#)
            XCTAssertEqual(r.output[0].count, samples.count / 2, "one exact gain: no latency, same length")
            let after = ReferenceLoudness.integrated(r.output)
            XCTAssertEqual(after, target, accuracy: 0.1, "normalized to \(target) LUFS from \(before)")
            // One constant gain: every sample scaled alike.
            let loudest = (0..<48_000).max { abs(samples[2 * $0]) < abs(samples[2 * $1]) } ?? 0
            let gain = Double(r.output[0][loudest]) / Double(samples[2 * loudest])
            XCTAssertEqual(20 * log10(gain), target - before, accuracy: 0.1)
            XCTAssertTrue(r.notices.contains { $0.contains("'loud'") && $0.contains("gain") }, "\(r.notices)")
        }
    }

    /// Follow (the live behaviour, rendered offline): the gain heads for
    /// target − measured loudness and never moves faster than `rate`.
    func testFollowGainMovesAtTheBoundedRate() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("quiet.wav")
        try Self.write(Self.stereo([(-33, 12)]), channels: 2, to: path)   // -33 LUFS
        let rate = 2.0
        let r = try render(path, params: #"{"target": -23, "normalize": "follow", "rate": \#(rate), "ceiling": 0}"#)
        let out = r.output[0]
        let window = 2400       // 50 ms
        let inputLevel = -33.0  // the sine's peak, dBFS
        var gains: [Double] = []
        var start = 0
        while start + window <= out.count {
            gains.append(SignalAnalysis.sineLevelDBFS(out[start ..< start + window]) - inputLevel)
            start += window
        }
        let perWindow = rate * Double(window) / Self.rate
        for i in 1..<gains.count where gains[i - 1] > -100 && gains[i] > -100 {
            XCTAssertLessThanOrEqual(gains[i] - gains[i - 1], perWindow + 0.05, "window \(i): the gain rose faster than \(rate) dB/s")
        }
        // Rising from 0 dB after the first 400 ms gating block; at 2 dB/s
        // the 10 dB are reached about 5.4 s in.
        let at3s = gains[Int(3.0 * Self.rate) / window]
        XCTAssertEqual(at3s, rate * (3.0 - 0.4), accuracy: 0.5, "gain at 3 s")
        XCTAssertEqual(gains[gains.count - 2], 10, accuracy: 0.1, "the gain settles at target - loudness")
        XCTAssertEqual(r.readings["gain"] ?? .nan, 10, accuracy: 0.05)
    }

    /// Follow keeps the true peak under the ceiling through the limiter.
    func testFollowHoldsTheTruePeakCeiling() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("peaky.wav")
        // Loud enough to need no gain, but peaks at -0.5 dBFS and inter-sample peaks above.
        try Self.write(Self.sineProgram([(levels: [-0.5, -0.5], seconds: 4)], frequency: 12_000, phase: .pi / 4),
                       channels: 2, to: path)
        let r = try render(path, params: #"{"target": -10, "normalize": "follow", "ceiling": -3}"#)
        let dir2 = try TemporaryDirectory()
        let outPath = dir2.file("out.wav")
        var inter = [Float](repeating: 0, count: r.output[0].count * 2)
        for i in 0..<r.output[0].count {
            inter[2 * i] = r.output[0][i]
            inter[2 * i + 1] = r.output[1][i]
        }
        try Self.write(inter, channels: 2, to: outPath)
        let measured = try render(outPath).readings["truePeak"] ?? .nan
        XCTAssertLessThanOrEqual(measured, -3 + 0.1, "true peak after the limiter")
    }

    // MARK: bad input and hosts

    func testTargetOutOfRangeNamesThePointer() {
        let json = """
            {"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"duration": 1}},
             {"id": "loud", "type": "loudness", "params": {"target": -80}}, {"id": "n", "type": "null"}],
             "links": [{"from": "t", "to": "loud"}, {"from": "loud", "to": "n"}]}
            """
        XCTAssertThrowsError(try TestGraph.validate(json)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("/nodes/1/params/target"), text)
            XCTAssertTrue(text.contains("-70"), text)
        }
    }

    /// A source that cannot be played twice feeding a two-pass node is an
    /// error before anything renders.
    func testTwoPassRefusesLiveInput() throws {
        var registry = TestGraph.registry([:])
        registry.register(LiveSourceType())
        let json = """
            {"format": "agraph/1", "nodes": [{"id": "mic", "type": "live-src"},
             {"id": "loud", "type": "loudness", "params": {"target": -23}}, {"id": "n", "type": "null"}],
             "links": [{"from": "mic", "to": "loud"}, {"from": "loud", "to": "n"}]}
            """
        let g = try GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: "live.json", directory: "/tmp").get()
        XCTAssertEqual(OfflinePasses.passCount(g), 1)
        XCTAssertThrowsError(try OfflinePasses.compile(g, maxFrames: 256)) { error in
            XCTAssertTrue("\(error)".contains("'mic'") && "\(error)".contains("live input"), "\(error)")
        }
    }

    func testTwoPassIsRefusedLive() throws {
        let json = """
            {"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"duration": 1}},
             {"id": "loud", "type": "loudness", "params": {"target": -23, "normalize": "two-pass"}}, {"id": "n", "type": "null"}],
             "links": [{"from": "t", "to": "loud"}, {"from": "loud", "to": "n"}]}
            """
        let g = try TestGraph.validate(json)
        XCTAssertThrowsError(try GraphCompiler.compile(g, maxFrames: 256, live: true)) { error in
            XCTAssertTrue("\(error)".contains("follow"), "\(error)")
        }
    }

    // MARK: realtime safety

    /// Measuring, following (with the limiter) and the exact gain of a
    /// final pass allocate nothing across 10,000 blocks of varying size,
    /// parameter changes included.
    func testRenderAllocatesNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"waveform": "pink", "channels": 2, "level": -20}},
              {"id": "t6", "type": "test-tone", "params": {"waveform": "white", "channels": 6, "level": -30}},
              {"id": "measure", "type": "loudness"},
              {"id": "follow", "type": "loudness", "params": {"target": -16, "normalize": "follow", "rate": 6}},
              {"id": "exact", "type": "loudness", "params": {"target": -23}},
              {"id": "six", "type": "loudness", "params": {"target": -20, "normalize": "follow"}},
              {"id": "n1", "type": "null"}, {"id": "n2", "type": "null"}, {"id": "n3", "type": "null"}],
             "links": [{"from": "t", "to": "measure"}, {"from": "measure", "to": "follow"}, {"from": "follow", "to": "n1"},
                       {"from": "t", "to": "exact"}, {"from": "exact", "to": "n2"},
                       {"from": "t6", "to": "six"}, {"from": "six", "to": "n3"}]}
            """
        let g = try TestGraph.validate(json)
        // "exact" gets a final-pass gain, as after an analysis pass.
        let compiled = try GraphCompiler.compile(g, maxFrames: 256) { node, made in
            if node.id == "exact", let a = made as? AnalysisPassNode {
                _ = try a.useAnalysis(LoudnessAnalysis(integratedLUFS: -20, loudnessRangeLU: 3, truePeakDBTP: -6))
            }
        }
        let engine = compiled.engine
        engine.worker.start()
        engine.render(frames: 256)
        let changes = try [("follow.rate", 1.0), ("follow.ceiling", -2), ("six.ceiling", -0.5), ("exact.rate", 10)]
            .map { try compiled.change($0.0, $0.1) }
        let sizes = [64, 256, 100, 1]
        let allocations = MallocCounter.countRendering(engine, sizes: sizes, changes: changes)
        engine.worker.stop()
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks")
        let follow = try XCTUnwrap(engine.node("follow") as? MeasuringNode)
        XCTAssertTrue((follow.reading("integrated") ?? .nan).isFinite, "the readings were published")
        XCTAssertGreaterThan(engine.framePosition, 1_000_000)
    }
}

/// An independent BS.1770-4 integrated loudness (48 kHz K-weighting with
/// the coefficients printed in the recommendation, 400 ms blocks every
/// 100 ms, absolute and relative gates), for checking the product.
enum ReferenceLoudness {
    static func integrated(_ channels: [[Float]], weights: [Double]? = nil) -> Double {
        let w = weights ?? Array(repeating: 1, count: channels.count)
        let filtered = channels.map(kWeight)
        let n = filtered.first?.count ?? 0
        let block = 19_200, step = 4_800
        var energies: [Double] = []
        var start = 0
        while start + block <= n {
            var sum = 0.0
            for (c, x) in filtered.enumerated() {
                var s = 0.0
                for i in start ..< start + block { s += x[i] * x[i] }
                sum += w[c] * s / Double(block)
            }
            energies.append(sum)
            start += step
        }
        let loudness = { (e: Double) in -0.691 + 10 * log10(e) }
        let absolute = energies.filter { loudness($0) > -70 }
        guard !absolute.isEmpty else { return -.infinity }
        let relative = loudness(absolute.reduce(0, +) / Double(absolute.count)) - 10
        let gated = absolute.filter { loudness($0) > relative }
        return loudness(gated.reduce(0, +) / Double(gated.count))
    }

    static func kWeight(_ x: [Float]) -> [Double] {
        func biquad(_ x: [Double], _ b: [Double], _ a: [Double]) -> [Double] {
            var y = [Double](repeating: 0, count: x.count)
            var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
            for i in 0..<x.count {
                let v = b[0] * x[i] + b[1] * x1 + b[2] * x2 - a[1] * y1 - a[2] * y2
                x2 = x1; x1 = x[i]; y2 = y1; y1 = v
                y[i] = v
            }
            return y
        }
        let shelf = biquad(x.map(Double.init), [1.53512485958697, -2.69169618940638, 1.19839281085285],
                           [1, -1.69065929318241, 0.73248077421585])
        return biquad(shelf, [1, -2, 1], [1, -1.99004745483398, 0.99007225036621])
    }
}

/// ffmpeg's `ebur128` filter, run on a file.
enum FFmpegEBUR128 {
    static var path: String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let p = "\(dir)/ffmpeg"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    struct Measurement {
        var integrated: Double
        var range: Double
        var truePeak: Double
    }

    /// Runs `ffmpeg -af ebur128=peak=true:metadata=1` and reads the last
    /// frame's metadata (full precision) for I and LRA, and the summary's
    /// true peak.
    static func measure(_ file: String, ffmpeg: String) throws -> Measurement {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ffmpeg)
        p.arguments = ["-hide_banner", "-nostats", "-i", file, "-af",
                       "ebur128=peak=true:metadata=1,ametadata=mode=print:file=-", "-f", "null", "-"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let meta = String(decoding: stdout, as: UTF8.self)
        let summary = String(decoding: stderr, as: UTF8.self)
        func last(_ key: String) -> Double? {
            meta.split(separator: "\n").reversed().first { $0.hasPrefix(key + "=") }
                .flatMap { Double($0.dropFirst(key.count + 1)) }
        }
        func summaryValue(_ label: String) -> Double? {
            // "    Peak:        3.0 dBFS" in the "True peak:" section.
            guard let section = summary.range(of: "True peak:", options: .backwards) else { return nil }
            let rest = summary[section.upperBound...]
            guard let r = rest.range(of: label) else { return nil }
            return Double(rest[r.upperBound...].split(separator: " ").first ?? "")
        }
        guard let i = last("lavfi.r128.I"), let lra = last("lavfi.r128.LRA") else {
            throw EngineError("ffmpeg gave no lavfi.r128 metadata for \(file): \(summary.suffix(500))")
        }
        let tp = summaryValue("Peak:") ?? .nan
        return Measurement(integrated: i, range: lra, truePeak: tp)
    }
}
