import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// The true peak of `x` measured independently of the product: 8×
/// oversampling by windowed-sinc interpolation (±64 taps, Kaiser β = 9),
/// evaluated between every pair of samples that could hold the peak.
func independentTruePeak(_ x: [Float]) -> Double {
    let half = 64, factor = 8, taps = 2 * half
    // kernel[(k − 1)·taps + j]: weight of x[i + j − half + 1] for the point i + k/8.
    var kernel = [Double](repeating: 0, count: (factor - 1) * taps)
    for k in 1..<factor {
        let frac = Double(k) / Double(factor)
        for j in 0..<taps {
            let t = Double(j - half + 1) - frac
            let sinc = t == 0 ? 1 : sin(Double.pi * t) / (Double.pi * t)
            let r = t / Double(half)
            let w = r.magnitude >= 1 ? 0 : besselI0(9 * (1 - r * r).squareRoot()) / besselI0(9)
            kernel[(k - 1) * taps + j] = sinc * w
        }
    }
    // Zero-padded copy: every window is in range.
    let padded = [Double](repeating: 0, count: half) + x.map(Double.init) + [Double](repeating: 0, count: half)
    let samplePeak = x.reduce(0) { max($0, Double(abs($1))) }
    var peak = samplePeak
    // An inter-sample peak of a band-limited signal sits next to large samples.
    let threshold = Float(samplePeak * 0.3)
    kernel.withUnsafeBufferPointer { h in
        padded.withUnsafeBufferPointer { p in
            for i in 0..<max(x.count - 1, 0) where abs(x[i]) >= threshold || abs(x[i + 1]) >= threshold {
                // x[i + j − half + 1] is p[i + j + 1].
                let window = p.baseAddress! + i + 1
                for k in 0..<(factor - 1) {
                    let row = h.baseAddress! + k * taps
                    var s = 0.0
                    for j in 0..<taps { s += row[j] * window[j] }
                    if abs(s) > peak { peak = abs(s) }
                }
            }
        }
    }
    return peak
}

/// The modified Bessel function of the first kind, order 0 (power series).
func besselI0(_ x: Double) -> Double {
    var sum = 1.0, term = 1.0
    var k = 1.0
    while term > 1e-12 * sum {
        term *= (x / (2 * k)) * (x / (2 * k))
        sum += term
        k += 1
    }
    return sum
}

func dB(_ x: Double) -> Double { 20 * log10(x) }

/// Runs `limiter` over `channels` in blocks of `block` frames; returns the output.
func limit(_ channels: [[Float]], with limiter: TruePeakLimiter, block: Int) -> [[Float]] {
    var out = channels
    let frames = channels[0].count
    let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels.count)
    defer { pointers.deallocate() }
    let buffers = channels.map { _ in UnsafeMutablePointer<Float>.allocate(capacity: block) }
    defer { buffers.forEach { $0.deallocate() } }
    var start = 0
    while start < frames {
        let n = min(block, frames - start)
        for c in channels.indices {
            for i in 0..<n { buffers[c][i] = channels[c][start + i] }
            pointers[c] = buffers[c]
        }
        limiter.process(pointers, frames: n)
        for c in channels.indices {
            for i in 0..<n { out[c][start + i] = buffers[c][i] }
        }
        start += n
    }
    return out
}

/// Writes a float WAV of `channels` (same length) and returns its path.
func writeWAV(_ channels: [[Float]], in dir: TemporaryDirectory, name: String, sampleRate: Double = 48000) throws -> String {
    var interleaved: [Float] = []
    interleaved.reserveCapacity(channels.count * channels[0].count)
    for i in 0..<channels[0].count { for c in channels.indices { interleaved.append(channels[c][i]) } }
    let path = dir.file(name)
    try writeSoundFile(path, format: .wavFloat32, channels: channels.count, sampleRate: sampleRate, samples: interleaved)
    return path
}

/// The first error of validating `json`, as text ("" when it validates).
func validationError(_ json: String) -> String {
    do {
        let stores = ["main": CaptureStore(capacityFrames: 1), "ref": CaptureStore(capacityFrames: 1)]
        _ = try TestGraph.validate(json, stores: stores)
        return ""
    } catch {
        return "\(error)"
    }
}

final class LimiterTests: XCTestCase {
    let fs = 48000.0

    /// Signals that go over the ceiling, in ways a sample-peak limiter misses.
    /// Each fades in and out over 10 ms and is followed by silence, so that
    /// the limited output also starts and ends in silence: a signal cut off
    /// mid-swing has inter-sample overshoot of its own at the cut.
    func loudSignals() -> [(String, [[Float]])] {
        let fade = 480, tail = 1000
        func shaped(_ x: [Float]) -> [Float] {
            x.enumerated().map { i, v in
                let edge = min(i, x.count - 1 - i)
                return edge >= fade ? v : v * Float(0.5 - 0.5 * cos(Double.pi * Double(edge) / Double(fade)))
            } + [Float](repeating: 0, count: tail)
        }
        return rawLoudSignals().map { name, channels in (name, channels.map(shaped)) }
    }

    func rawLoudSignals() -> [(String, [[Float]])] {
        let n = 24000
        let tone = Synth.sine(frequency: 997, amplitude: 1.6, sampleRate: fs, frames: n)
        let high = Synth.sine(frequency: 5013, amplitude: 0.6, sampleRate: fs, frames: n)
        // A burst: quiet, then +10 dB over the ceiling for 0.25 s, then quiet.
        let burst = (0..<n).map { i -> Float in
            let a: Float = (8000..<16000).contains(i) ? 2.8 : 0.2
            return a * Float(sin(2 * Double.pi * 440 * Double(i) / fs))
        }
        // fs/4 at 45°: every sample at 0.707 of the true peak.
        let quarter = Synth.sine(frequency: fs / 4, amplitude: 1.5, sampleRate: fs, frames: n, phase: Double.pi / 4)
        // Noise as program material has it: loud, most of it below 10 kHz.
        let noise = lowPassedNoise(frames: n, seed: 7, poles: 8, cutoff: 10_000, gain: 12)
        let clicks = (0..<n).map { i -> Float in i % 4800 == 600 ? (i % 9600 == 600 ? 3 : -3) : 0 }
        return [
            ("997 Hz + 5 kHz", [zip(tone, high).map { $0 + $1 }, tone]),
            ("burst", [burst, burst.map { -$0 * 0.5 }]),
            ("fs/4 at 45°", [quarter]),
            ("noise", [noise, lowPassedNoise(frames: n, seed: 9, poles: 8, cutoff: 10_000, gain: 6)]),
            ("clicks", [clicks]),
        ]
    }

    func testNoTruePeakAboveTheCeilingOnSignalsThatExceedIt() {
        for ceiling in [-1.0, -6.0] {
            for (name, signal) in loudSignals() {
                let inputPeak = signal.map(independentTruePeak).max() ?? 0
                XCTAssertGreaterThan(dB(inputPeak), ceiling + 3, "\(name): the test signal must exceed the ceiling")
                let limiter = TruePeakLimiter(channels: signal.count, sampleRate: fs, maxFrames: 512,
                                              ceilingDBTP: ceiling, releaseMs: 50, lookaheadMs: 5)
                let out = limit(signal, with: limiter, block: 300)
                for (c, channel) in out.enumerated() {
                    let tp = dB(independentTruePeak(channel))
                    XCTAssertLessThanOrEqual(tp, ceiling + 0.1, "\(name) channel \(c): true peak \(tp) dBTP, ceiling \(ceiling)")
                }
                // It limits, it does not mute: the loudest channel comes close to the ceiling.
                let loudest = out.map(independentTruePeak).max() ?? 0
                XCTAssertGreaterThan(dB(loudest), ceiling - 1.5, "\(name): the output reaches near the ceiling")
            }
        }
    }

    /// White noise through `poles` one-pole low-passes at `cutoff`, times `gain`.
    func lowPassedNoise(frames n: Int, seed: UInt64, poles: Int, cutoff: Double, gain: Double) -> [Float] {
        var x = Synth.whiteNoise(frames: n, seed: seed).map(Double.init)
        let a = exp(-2 * Double.pi * cutoff / fs)
        for _ in 0..<poles {
            var y = 0.0
            for i in 0..<n { y = (1 - a) * x[i] + a * y; x[i] = y }
        }
        return x.map { Float(gain * $0) }
    }

    /// Noise with much of its energy near Nyquist is where any 4×
    /// interpolator (BS.1770's included) reads low. The ceiling holds as
    /// BS.1770 measures it; a finer measure may find up to about 0.5 dB more.
    func testNoiseRichInHighFrequenciesStaysUnderTheCeilingAsBS1770MeasuresIt() {
        let signal = lowPassedNoise(frames: 24000, seed: 7, poles: 4, cutoff: 8000, gain: 8)
        XCTAssertGreaterThan(dB(independentTruePeak(signal)), 10)
        let limiter = TruePeakLimiter(channels: 1, sampleRate: fs, maxFrames: 512, ceilingDBTP: -1, releaseMs: 50, lookaheadMs: 5)
        let out = limit([signal + [Float](repeating: 0, count: 1000)], with: limiter, block: 512)[0]
        let meter = TruePeakMeter(channels: 1)
        let bs1770 = out.withUnsafeBufferPointer { dB(Double(meter.blockPeak(channel: 0, $0.baseAddress!, count: out.count))) }
        XCTAssertLessThanOrEqual(bs1770, -1 + 0.01, "as BS.1770-4 reads it")
        XCTAssertLessThanOrEqual(dB(independentTruePeak(out)), -1 + 0.5, "8× oversampled")
    }

    func testBelowTheCeilingTheSignalPassesUnchangedButLate() {
        let limiter = TruePeakLimiter(channels: 2, sampleRate: fs, maxFrames: 256, ceilingDBTP: -1, releaseMs: 100, lookaheadMs: 5)
        XCTAssertEqual(limiter.latencyFrames, 240)
        let left = Synth.sine(frequency: 440, amplitude: 0.5, sampleRate: fs, frames: 9000)
        let right = Synth.whiteNoise(frames: 9000, seed: 3).map { $0 * 0.3 }
        let out = limit([left, right], with: limiter, block: 1000)    // blocks larger than maxFrames are split
        for (c, input) in [left, right].enumerated() {
            for i in 0..<9000 {
                let expected: Float = i < 240 ? 0 : input[i - 240]
                if out[c][i] != expected { return XCTFail("channel \(c) frame \(i): \(out[c][i]) instead of \(expected)") }
            }
        }
    }

    func testLatencyFollowsTheLookaheadAndHasAFloor() {
        XCTAssertEqual(TruePeakLimiter(channels: 1, sampleRate: 48000, maxFrames: 64, ceilingDBTP: -1, releaseMs: 50, lookaheadMs: 1.5).latencyFrames, 72)
        XCTAssertEqual(TruePeakLimiter(channels: 1, sampleRate: 44100, maxFrames: 64, ceilingDBTP: -1, releaseMs: 50, lookaheadMs: 10).latencyFrames, 441)
        XCTAssertEqual(TruePeakLimiter(channels: 1, sampleRate: 8000, maxFrames: 64, ceilingDBTP: -1, releaseMs: 50, lookaheadMs: 0.5).latencyFrames,
                       TruePeakLimiter.minimumLatencyFrames)
    }

    func testGainRecoversWithTheReleaseTimeConstant() {
        // A loud burst, then a steady tone under the ceiling: the gain
        // reduction decays by 1/e per release time after the hold.
        let release = 50.0
        let limiter = TruePeakLimiter(channels: 1, sampleRate: fs, maxFrames: 512, ceilingDBTP: -6, releaseMs: release, lookaheadMs: 2)
        let n = 48000
        let x = (0..<n).map { i -> Float in (i < 4800 ? 2 : 0.25) * Float(sin(2 * Double.pi * 1000 * Double(i) / fs)) }
        let y = limit([x], with: limiter, block: 256)[0]
        let L = limiter.latencyFrames
        // Gain seen on the tone: output peak / input peak over one cycle (48 frames).
        func gain(at i: Int) -> Double {
            let a = (i..<(i + 48)).map { abs(Double(y[$0])) }.max() ?? 0
            let b = (i..<(i + 48)).map { abs(Double(x[$0 - L])) }.max() ?? 1
            return a / b
        }
        let reduction1 = 1 - gain(at: 4800 + L + 960)             // 20 ms after the burst left
        let reduction2 = 1 - gain(at: 4800 + L + 960 + 2400)      // one release time later
        XCTAssertGreaterThan(reduction1, 0.05)
        XCTAssertEqual(reduction2 / reduction1, exp(-1), accuracy: 0.05, "1/e per \(release) ms")
        XCTAssertEqual(gain(at: n - 100), 1, accuracy: 1e-4, "recovered")
    }

    func testCeilingAndReleaseChangeLiveWithoutAllocating() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let limiter = TruePeakLimiter(channels: 2, sampleRate: fs, maxFrames: 256, ceilingDBTP: -1, releaseMs: 100, lookaheadMs: 5)
        let a = UnsafeMutablePointer<Float>.allocate(capacity: 512), b = UnsafeMutablePointer<Float>.allocate(capacity: 512)
        let ptrs = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
        defer { a.deallocate(); b.deallocate(); ptrs.deallocate() }
        ptrs[0] = a; ptrs[1] = b
        var phase = 0.0
        func fill() {
            for i in 0..<512 { a[i] = Float(2 * sin(phase)); b[i] = a[i]; phase += 0.05 }
        }
        fill(); limiter.process(ptrs, frames: 512)
        var peak: Float = 0
        let sizes = [512, 64, 1, 300]
        let allocations = MallocCounter.count {
            for k in 0..<2000 {
                if k % 50 == 0 { limiter.setCeiling(dBTP: k % 100 == 0 ? -3 : -6); limiter.setRelease(ms: Double(20 + k % 300)) }
                fill()
                let n = sizes[k % 4]
                limiter.process(ptrs, frames: n)
                // The last blocks run at -6 dBTP, after -3: never above -3.
                if k > 1960 { for i in 0..<n { peak = max(peak, abs(a[i])) } }
            }
        }
        XCTAssertEqual(allocations, 0)
        XCTAssertLessThanOrEqual(dB(Double(peak)), -3 + 0.1)
    }

    // MARK: the node

    static func parallelGraph(path: String, lookahead: Double) -> String {
        """
        {"format": "agraph/1", "nodes": [
          {"id": "src", "type": "file", "params": {"path": "\(path)"}},
          {"id": "lim", "type": "limiter", "params": {"ceiling": -1, "lookahead": \(lookahead)}},
          {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
          {"id": "cap", "type": "capture", "params": {"store": "mix"}},
          {"id": "limcap", "type": "capture", "params": {"store": "lim"}}],
         "links": [{"from": "src", "to": "lim"}, {"from": "lim", "to": "mix:in0"}, {"from": "src", "to": "mix:in1"},
                   {"from": "mix", "to": "cap"}, {"from": "lim", "to": "limcap"}]}
        """
    }

    func testLatencyIsReportedAndCompensatedOnAParallelPath() throws {
        let dir = try TemporaryDirectory()
        // Quiet (the limiter passes it unchanged), then loud (it limits).
        let n = 24000
        let x = (0..<n).map { i -> Float in
            let a: Float = i < 12000 ? 0.3 : 1.8
            return a * Float(sin(2 * Double.pi * 700 * Double(i) / 48000))
        }
        let path = try writeWAV([x], in: dir, name: "in.wav")
        for block in [64, 1000] {
            let mix = CaptureStore(capacityFrames: 2 * n), lim = CaptureStore(capacityFrames: 2 * n)
            let g = try GraphValidator(registry: TestGraph.registry(["mix": mix, "lim": lim]))
                .validate(bytes: Array(Self.parallelGraph(path: path, lookahead: 4).utf8), file: "inline.json", directory: dir.path).get()
            let compiled = try GraphCompiler.compile(g, maxFrames: block)
            let result = OfflineRenderer(engine: compiled.engine).run()
            XCTAssertTrue(result.finishErrors.isEmpty)
            let engine = compiled.engine
            let latencies = Dictionary(uniqueKeysWithValues: zip(engine.ids, engine.latencies))
            XCTAssertEqual(latencies["lim"], 192, "4 ms at 48 kHz")
            XCTAssertEqual(latencies["mix"], 192)
            XCTAssertEqual(engine.compensationDelays.map { "\($0.node):\($0.port)=\($0.frames)" }, ["mix:1=192"])
            let m = mix.samples(0), l = lim.samples(0)
            // The stream ends when the delayed signal has come out.
            XCTAssertEqual(m.count, n + 192, "block \(block)")
            XCTAssertEqual(l.count, n + 192, "block \(block)")
            // Quiet part: both paths identical and aligned, so the mix is twice the source.
            for t in 0..<11000 {
                let expected: Float = t < 192 ? 0 : 2 * x[t - 192]
                if abs(m[t] - expected) > 1e-6 { return XCTFail("block \(block) frame \(t): \(m[t]) vs \(expected)") }
            }
            // Throughout, the mix is the limited path plus the source delayed
            // by the lookahead: the two paths are aligned sample for sample.
            for t in 0..<m.count {
                let expected = l[t] + (t < 192 ? 0 : x[t - 192])
                if abs(m[t] - expected) > 1e-6 { return XCTFail("block \(block) frame \(t): mix \(m[t]), paths \(expected)") }
            }
            // And the loud part was limited, with a positive gain (in phase).
            let loud = (13000..<n).filter { abs(x[$0 - 192]) > 1 }
            XCTAssertFalse(loud.isEmpty)
            for t in loud {
                let g = l[t] / x[t - 192]
                if !(g > 0.3 && g < 0.9) { return XCTFail("block \(block) frame \(t): gain \(g)") }
            }
            XCTAssertLessThanOrEqual(dB(independentTruePeak(l)), -1 + 0.1)
        }
    }

    func testBadParametersNameTheirPointer() {
        func graph(_ params: String) -> String {
            #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone"}, {"id": "l", "type": "limiter", "params": \#(params)}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "l"}, {"from": "l", "to": "o"}]}"#
        }
        for (params, pointer) in [(#"{"ceiling": 3}"#, "/nodes/1/params/ceiling"), (#"{"ceiling": -100}"#, "/nodes/1/params/ceiling"),
                                  (#"{"release": 0}"#, "/nodes/1/params/release"), (#"{"lookahead": 500}"#, "/nodes/1/params/lookahead"),
                                  (#"{"threshold": -3}"#, "/nodes/1/params/threshold")] {
            let error = validationError(graph(params))
            XCTAssertTrue(error.contains(pointer), "\(params): \(error)")
        }
        XCTAssertEqual(validationError(graph(#"{"ceiling": -0.5, "release": 20, "lookahead": 2}"#)), "")
    }

    func testRenderAndParameterChangesAllocateNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"waveform": "white", "level": 0}}, {"id": "l", "type": "limiter"}, {"id": "m", "type": "meter", "params": {"window": 10}}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "l"}, {"from": "l", "to": "m"}, {"from": "m", "to": "o"}]}"#
        try assertRendersWithoutAllocating(json, changes: [("l.ceiling", -6), ("l.release", 20), ("l.ceiling", -0.5), ("l.release", 500)])
    }
}

/// Renders `json` 10,000 blocks of varying size, posting `changes` in turn
/// every 100 blocks, and asserts that rendering (changes applied included)
/// allocated nothing.
func assertRendersWithoutAllocating(_ json: String, changes: [(String, Double)],
                                    file: StaticString = #filePath, line: UInt = #line) throws {
    let compiled = try GraphCompiler.compile(TestGraph.validate(json), maxFrames: 512)
    let engine = compiled.engine
    let posted = try changes.map { try compiled.change($0.0, $0.1) }
    // Warm-up: the Swift runtime instantiates metadata on first use.
    engine.render(frames: 512)
    for c in posted { engine.post(c) }
    engine.render(frames: 512)
    let sizes = [64, 512, 100, 1]
    let allocations = MallocCounter.countRendering(engine, sizes: sizes, changes: posted)
    XCTAssertEqual(allocations, 0, "allocations across 10,000 blocks", file: file, line: line)
}
