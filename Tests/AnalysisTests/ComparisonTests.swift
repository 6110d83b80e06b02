import AudioGraph
@testable import AudioGraphAnalysis
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// `RendererComparison`: a whole comparison through the library, its
/// numbers checked against measurements the test makes itself on signals
/// it knows (libebur128 for loudness, TestSupport's own FFT for spectra,
/// a direct Pearson sum, nodes whose ear delays and gains are set).
final class ComparisonTests: XCTestCase {
    static let rate = 48000.0

    func graph(_ json: String, types: [any NodeType] = [], directory: String = "/tmp") throws -> ValidatedGraph {
        var registry = NodeRegistry.builtIn
        for t in types { registry.register(t) }
        return try GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: "inline.json", directory: directory).get()
    }

    /// A graph of `source` feeding each of `branches` (id, type, params JSON), each into a null sink.
    func fanOut(source: String, _ branches: [(String, String, String)]) -> String {
        let nodes = [#"{"id": "src", \#(source)}"#] + branches.flatMap { id, type, params in
            [#"{"id": "\#(id)", "type": "\#(type)", "params": \#(params)}"#, #"{"id": "\#(id)-sink", "type": "null"}"#]
        }
        let links = branches.flatMap { id, _, _ in
            [#"{"from": "src", "to": "\#(id)"}"#, #"{"from": "\#(id)", "to": "\#(id)-sink"}"#]
        }
        return #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [\#(nodes.joined(separator: ", "))], "links": [\#(links.joined(separator: ", "))]}"#
    }

    /// 10 s of independent noise in L and R, as a float WAV: white (peak
    /// 0.3), or pink (RMS 0.1).
    func noiseFile(_ dir: TemporaryDirectory, pink: Bool = false) throws -> (path: String, left: [Float], right: [Float]) {
        let n = Int(Self.rate) * 10
        let l = pink ? Synth.pinkNoise(frames: n, seed: 1, rms: 0.1) : Synth.whiteNoise(frames: n, seed: 1).map { $0 * 0.3 }
        let r = pink ? Synth.pinkNoise(frames: n, seed: 2, rms: 0.1) : Synth.whiteNoise(frames: n, seed: 2).map { $0 * 0.3 }
        let path = dir.file("noise.wav")
        try writeSoundFile(path, format: .wavFloat32, channels: 2, sampleRate: Self.rate, samples: zip(l, r).flatMap { [$0, $1] })
        return (path, l, r)
    }

    /// libebur128's integrated loudness, loudness range and true peak of a stereo signal.
    func libebur128(_ l: [Float], _ r: [Float], gain: Float = 1) throws -> (lufs: Double, lra: Double, tp: Double) {
        let meter = try EBUR128Meter(channels: 2, sampleRate: Self.rate, layout: .stereo)
        let interleaved = zip(l, r).flatMap { [$0 * gain, $1 * gain] }
        interleaved.withUnsafeBufferPointer { meter.add(interleaved: $0.baseAddress!, frames: l.count) }
        return (meter.integrated, meter.loudnessRange, meter.truePeakDBTP)
    }

    func pearson(_ x: [Float], _ y: [Float]) -> Double {
        let n = Double(x.count)
        var sx = 0.0, sy = 0.0, sxx = 0.0, syy = 0.0, sxy = 0.0
        for (a, b) in zip(x, y) {
            let u = Double(a), v = Double(b)
            sx += u; sy += v; sxx += u * u; syy += v * v; sxy += u * v
        }
        return (n * sxy - sx * sy) / ((n * sxx - sx * sx) * (n * syy - sy * sy)).squareRoot()
    }

    func testLoudnessMatchingAndSpectraMatchIndependentMeasurements() throws {
        let dir = try TemporaryDirectory()
        // Pink: true-peak estimators differ on white noise's inter-sample
        // peaks near Nyquist, less on programme-like spectra.
        let (path, l, r) = try noiseFile(dir, pink: true)
        let g = try graph(fanOut(source: #""type": "file", "params": {"path": "\#(path)"}"#,
                                 [("ref", "gain", #"{"gain": 0}"#), ("quiet", "gain", #"{"gain": -6}"#)]))
        let result = try RendererComparison.compare(g, options: ComparisonOptions(a: "ref", b: "quiet"))
        XCTAssertEqual(result.frames, l.count)
        XCTAssertEqual(result.ending, .endOfStream)
        XCTAssertEqual(result.notes, [])
        let a = result.a.measurements, b = result.b.measurements
        XCTAssertEqual(a.frames, l.count)
        XCTAssertEqual(b.frames, l.count)

        // Loudness, range and true peak: libebur128 over the samples the test wrote.
        let gain = Float(pow(10, -6.0 / 20))
        let ea = try libebur128(l, r), eb = try libebur128(l, r, gain: gain)
        XCTAssertEqual(a.integratedLUFS, ea.lufs, accuracy: 0.05)
        XCTAssertEqual(b.integratedLUFS, eb.lufs, accuracy: 0.05)
        XCTAssertEqual(a.loudnessRangeLU, ea.lra, accuracy: 0.3)
        XCTAssertEqual(a.truePeakDBTP, ea.tp, accuracy: 0.2)
        XCTAssertEqual(b.truePeakDBTP, eb.tp, accuracy: 0.2)
        let peak = max(l.map(abs).max() ?? 0, r.map(abs).max() ?? 0)
        XCTAssertEqual(a.samplePeakDBFS, 20 * log10(Double(peak)), accuracy: 1e-4)
        XCTAssertEqual(b.samplePeakDBFS, 20 * log10(Double(peak * gain)), accuracy: 1e-4)
        // The offset brings B up by the 6 dB the gain took away.
        let offset = try XCTUnwrap(result.matchingOffsetDB)
        XCTAssertEqual(offset, 6, accuracy: 0.01)
        XCTAssertEqual(offset, ea.lufs - eb.lufs, accuracy: 0.05)
        XCTAssertEqual(result.b.gainDB, offset)
        XCTAssertEqual(result.b.matchedTruePeakDBTP, a.truePeakDBTP, accuracy: 0.01)

        // Spectra: A's band levels against the test's own double-precision
        // Welch estimate (TestSupport's FFT) of the samples; matched B equals A.
        XCTAssertEqual(a.fftSize, 32768)
        let reference = [l, r].map { SignalAnalysis.powerSpectrum($0, fftSize: a.fftSize) }
        let delta = Self.rate / Double(a.fftSize)
        for (k, band) in result.bands.bands.enumerated() {
            for c in 0..<2 {
                var sum = 0.0
                for (i, v) in reference[c].enumerated() {
                    let f = Double(i) * delta
                    sum += v * max(0, min(band.upperHz, f + delta / 2) - max(band.lowerHz, f - delta / 2)) / delta
                }
                XCTAssertEqual(result.a.matchedBandLevelsDB[c][k], 10 * log10(sum), accuracy: 0.01, "\(band.nominalHz) Hz, channel \(c)")
                XCTAssertEqual(result.differenceDB[c][k], 0, accuracy: 0.01, "\(band.nominalHz) Hz, channel \(c)")
                XCTAssertEqual(result.b.matchedBandLevelsDB[c][k] - offset, b.bandLevelsDB[c][k], accuracy: 1e-9)
            }
        }

        // Correlation of independent noise: what the test's own sum gives, about 0.
        let expected = pearson(l, r)
        XCTAssertEqual(a.correlations.count, 1)
        XCTAssertEqual(a.correlations[0].labels.0, "L")
        XCTAssertEqual(try XCTUnwrap(a.correlations[0].coefficient), expected, accuracy: 1e-6)
        // (Pink noise's slow low end leaves fewer independent samples than
        // white's: a wider spread around 0.)
        XCTAssertEqual(expected, 0, accuracy: 0.05)

        // `gain` passes L to L only: no ILD, no ITD; the response's energy is the gain's.
        let dirs = result.b.impulses.directions
        XCTAssertEqual(dirs.map(\.label), ["L", "R"])
        XCTAssertNil(dirs[0].interaural.ildDB)
        XCTAssertEqual(dirs[0].interaural.leftEnergyDB, -6, accuracy: 1e-4)
        XCTAssertEqual(dirs[0].interaural.rightEnergyDB, -.infinity)
        XCTAssertEqual(result.a.impulses.directions[1].interaural.rightEnergyDB, 0, accuracy: 1e-5)
    }

    func testALowPassBranchDiffersByItsFilterResponse() throws {
        let dir = try TemporaryDirectory()
        let (path, _, _) = try noiseFile(dir)
        let g = try graph(fanOut(source: #""type": "file", "params": {"path": "\#(path)"}"#,
                                 [("ref", "gain", #"{"gain": 0}"#), ("lp", "filter", #"{"type": "low-pass", "frequency": 1000}"#)]))
        let result = try RendererComparison.compare(g, options: ComparisonOptions(a: "ref", b: "lp"))
        let offset = try XCTUnwrap(result.matchingOffsetDB)
        XCTAssertGreaterThan(offset, 3, "a low-pass at 1 kHz takes away loudness: B is turned up")
        // The filter's own response |H(f)|², averaged over each band (the
        // input is white: flat), is what B − A shows before matching.
        let h = BiquadCoefficients.design(.lowPass, frequency: 1000, q: FilterType.defaultQ, gainDB: 0, sampleRate: Self.rate)
        func power(_ f: Double) -> Double {
            let w = 2 * Double.pi * f / Self.rate
            func mag2(_ c0: Double, _ c1: Double, _ c2: Double) -> Double {
                let re = c0 + c1 * cos(w) + c2 * cos(2 * w), im = -(c1 * sin(w) + c2 * sin(2 * w))
                return re * re + im * im
            }
            return mag2(h.b0, h.b1, h.b2) / mag2(1, h.a1, h.a2)
        }
        for (k, band) in result.bands.bands.enumerated() where band.nominalHz >= 50 {
            let steps = 400
            var sum = 0.0
            for i in 0..<steps { sum += power(band.lowerHz + (band.upperHz - band.lowerHz) * (Double(i) + 0.5) / Double(steps)) }
            let expected = 10 * log10(sum / Double(steps))
            for c in 0..<2 where expected > -50 {
                XCTAssertEqual(result.differenceDB[c][k] - offset, expected, accuracy: 0.25, "\(band.nominalHz) Hz, channel \(c)")
            }
            // Below the cut-off B − A is the offset alone; far above, far below 0.
            if band.nominalHz <= 250 { XCTAssertEqual(result.differenceDB[0][k] - offset, 0, accuracy: 0.1, "\(band.nominalHz) Hz") }
            if band.nominalHz >= 8000 { XCTAssertLessThan(result.differenceDB[0][k] - offset, -30, "\(band.nominalHz) Hz") }
        }
    }

    /// Known ears: every input channel of 5.1 reaches each ear with a set
    /// gain and delay, so ILD and ITD are known exactly.
    func testImpulsesFromEachDirectionGiveTheNodesExactInterauralDifferences() throws {
        typealias R = EarTestType.Route
        let a = EarTestType(typeID: "ears-a", routes: [
            R(leftGain: 1, leftDelay: 0, rightGain: 0.5, rightDelay: 12),      // L: left louder by 6.02 dB, leads by 12
            R(leftGain: 0.5, leftDelay: 12, rightGain: 1, rightDelay: 0),      // R: mirrored
            R(leftGain: 0.7071, leftDelay: 3, rightGain: 0.7071, rightDelay: 3), // C: centred
            R(leftGain: 0.1, leftDelay: 0, rightGain: 0.1, rightDelay: 0),     // LFE
            R(leftGain: 1, leftDelay: 0, rightGain: 0.25, rightDelay: 40),     // Ls: 12.04 dB, 40 samples
            R(leftGain: 0.25, leftDelay: 40, rightGain: 1, rightDelay: 0),     // Rs
        ])
        let b = EarTestType(typeID: "ears-b", routes: (0..<6).map { k in
            R(leftGain: 1, leftDelay: 0, rightGain: k == 3 ? 0 : 1, rightDelay: k)  // right lags by k; LFE left only
        })
        let g = try graph(fanOut(source: #""type": "test-tone", "params": {"waveform": "pink", "channels": 6, "duration": 3}"#,
                                 [("a", "ears-a", "{}"), ("b", "ears-b", "{}")]), types: [a, b])
        let result = try RendererComparison.compare(g, options: ComparisonOptions(a: "a", b: "b"))
        let da = result.a.impulses.directions, db = result.b.impulses.directions
        XCTAssertEqual(da.map(\.label), ["L", "R", "C", "LFE", "Ls", "Rs"])
        XCTAssertEqual(da.map(\.channel), [0, 1, 2, 3, 4, 5])
        let expectedA: [(ild: Double, itd: Double)] = [(6.0206, 12), (-6.0206, -12), (0, 0), (0, 0), (12.0412, 40), (-12.0412, -40)]
        for (d, e) in zip(da, expectedA) {
            XCTAssertEqual(d.interaural.ildDB ?? .nan, e.ild, accuracy: 1e-3, d.label)
            XCTAssertEqual(d.interaural.itdSamples ?? .nan, e.itd, accuracy: 1e-6, d.label)
            XCTAssertEqual(d.interaural.itdMicroseconds ?? .nan, e.itd / Self.rate * 1e6, accuracy: 1e-3, d.label)
        }
        XCTAssertEqual(da[2].interaural.leftEnergyDB, 20 * log10(0.7071), accuracy: 1e-4)
        for (k, d) in db.enumerated() where k != 3 {
            XCTAssertEqual(d.interaural.ildDB ?? .nan, 0, accuracy: 1e-6, d.label)
            XCTAssertEqual(d.interaural.itdSamples ?? .nan, Double(k), accuracy: 1e-6, d.label)
        }
        XCTAssertNil(db[3].interaural.ildDB, "LFE reaches the left ear only")
        XCTAssertEqual(result.a.measurements.format.layout, .binaural)
        XCTAssertEqual(result.a.measurements.labels, ["L", "R"])
        XCTAssertEqual(result.notes, [])
    }

    func testEndlessGraphsDurationsAndIdenticalChannels() throws {
        // test-tone without duration: endless; every channel the same signal.
        let json = fanOut(source: #""type": "test-tone", "params": {"waveform": "pink", "channels": 2}"#,
                          [("ref", "gain", #"{"gain": 0}"#), ("quiet", "gain", #"{"gain": -6}"#)])
        let g = try graph(json)
        var options = ComparisonOptions(a: "ref", b: "quiet")
        options.endlessSeconds = 1.5
        let capped = try RendererComparison.compare(g, options: options)
        XCTAssertEqual(capped.frames, 72000)
        XCTAssertEqual(capped.ending, .durationReached)
        XCTAssertTrue(capped.notes.contains { $0.contains("src never ends") && $0.contains("1.5 s") }, "\(capped.notes)")
        XCTAssertEqual(try XCTUnwrap(capped.a.measurements.correlations[0].coefficient), 1, accuracy: 1e-9, "identical channels")
        XCTAssertEqual(try XCTUnwrap(capped.matchingOffsetDB), 6, accuracy: 0.01)

        // 0.25 s: too short for integrated loudness (400 ms blocks): no
        // matching, so B − A is the gain's −6 dB in every band.
        options.duration = 0.25
        let short = try RendererComparison.compare(g, options: options)
        XCTAssertEqual(short.frames, 12000)
        XCTAssertNil(short.matchingOffsetDB)
        XCTAssertEqual(short.b.gainDB, 0)
        XCTAssertTrue(short.notes.contains { $0.contains("could not be measured") }, "\(short.notes)")
        for d in short.differenceDB[0] where d.isFinite { XCTAssertEqual(d, -6, accuracy: 0.001) }
        XCTAssertEqual(short.differenceDB[0].filter(\.isFinite).count, short.bands.count)
    }

    func testClearErrorsAndSkippedImpulses() throws {
        let json = """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "src", "type": "test-tone", "params": {"channels": 2, "duration": 1}},
              {"id": "stereo", "type": "gain"},
              {"id": "mono", "type": "downmix", "params": {"layout": "mono"}},
              {"id": "parts", "type": "split", "params": {"groups": [1, 1]}},
              {"id": "out", "type": "null"}, {"id": "out2", "type": "null"}, {"id": "p0", "type": "null"}, {"id": "p1", "type": "null"}],
             "links": [{"from": "src", "to": "stereo"}, {"from": "src", "to": "mono"}, {"from": "src", "to": "parts"},
                       {"from": "stereo", "to": "out"}, {"from": "mono", "to": "out2"},
                       {"from": "parts:out0", "to": "p0"}, {"from": "parts:out1", "to": "p1"}]}
            """
        let g = try graph(json)
        func error(_ a: String, _ b: String) -> String {
            do {
                _ = try RendererComparison.compare(g, options: ComparisonOptions(a: a, b: b))
                return "no error"
            } catch {
                return error.description
            }
        }
        XCTAssertTrue(error("stereoo", "mono").contains("no node 'stereoo'"), error("stereoo", "mono"))
        XCTAssertTrue(error("stereoo", "mono").contains("did you mean 'stereo'"))
        XCTAssertTrue(error("stereo", "out2").contains("--b: 'out2' (null) is a sink"), error("stereo", "out2"))
        XCTAssertTrue(error("stereo", "out2").contains("'mono'"), "names the node feeding the sink")
        XCTAssertTrue(error("stereo", "mono").contains("2 channels (stereo) but 'mono' has 1"), error("stereo", "mono"))
        XCTAssertTrue(error("parts:out9", "mono").contains("no output port 'out9'"), error("parts:out9", "mono"))
        // A second output port by name; a source has no input for impulses.
        let ports = try RendererComparison.compare(g, options: ComparisonOptions(a: "parts:out1", b: "mono"))
        XCTAssertEqual(ports.a.port, "out1")
        let source = try RendererComparison.compare(g, options: ComparisonOptions(a: "src", b: "stereo"))
        guard case .skipped(let why) = source.a.impulses else { return XCTFail("a source cannot be fed impulses") }
        XCTAssertTrue(why.contains("is a source"), why)
        XCTAssertTrue(source.notes.contains { $0.contains("no ILD/ITD for 'src'") })
        // A 1-channel output has no ears.
        guard case .skipped(let mono) = ports.b.impulses else { return XCTFail("mono output: no ILD/ITD") }
        XCTAssertTrue(mono.contains("2 output channels"), mono)
        // Compressed input: the impulse test is refused, saying why.
        var compressed = g
        let i = try XCTUnwrap(g.nodes.firstIndex { $0.id == "stereo" })
        compressed.nodes[i].inputFormats = [.frames(codec: "ac4-sync", sampleRate: 48000)]
        guard case .skipped(let frames) = RendererComparison.impulseTest(compressed, node: i, port: 0, options: ComparisonOptions(a: "", b: "")) else {
            return XCTFail("compressed input cannot take impulses")
        }
        XCTAssertTrue(frames.contains("compressed"), frames)
    }

    /// The capture sink and the impulse source run on the audio thread:
    /// no allocation across 10,000 blocks of changing sizes.
    func testCaptureAndImpulseNodesAllocateNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let g = try graph(fanOut(source: #""type": "test-tone", "params": {"channels": 2}"#, [("gain", "gain", "{}")]))
        let capture = BlockCapture(channels: 2)
        let format = StreamFormat(channels: 2, sampleRate: Self.rate)
        var sub = g
        sub.nodes = [
            ValidatedGraph.Node(id: "imp", type: ImpulseSourceType(format: format, channel: 1), parameters: NodeParameters(),
                                inputs: [], inputSourcePorts: [], inputFormats: [], inputPorts: [], outputPorts: ["out"], outputFormats: [format]),
            ValidatedGraph.Node(id: "cap", type: CaptureSinkType(capture: capture), parameters: NodeParameters(),
                                inputs: [0], inputSourcePorts: [0], inputFormats: [format], inputPorts: ["in"]),
        ]
        let compiled = try GraphCompiler.compile(sub, maxFrames: 1024)
        compiled.engine.render(frames: 64)   // warm up (the Swift runtime's first-use metadata)
        let impulse = try XCTUnwrap(capture.take())
        XCTAssertEqual(impulse.frames, 64)
        XCTAssertEqual(impulse.samples[0], 0, "channel 0 is silent")
        XCTAssertEqual(impulse.samples[1], 1, "the impulse on channel 1, frame 0")
        XCTAssertEqual(MallocCounter.countRendering(compiled.engine, sizes: [64, 1024, 77, 256]), 0)
        XCTAssertEqual(capture.total, 64 + 2500 * (64 + 1024 + 77 + 256))
        // Behind a node of the graph, as compare builds it.
        let tap = RendererComparison.measurementGraph(g, taps: [(1, 0, capture)])
        XCTAssertEqual(tap.nodes.map(\.id), ["src", "gain", "compare.a"])
        let tapped = try GraphCompiler.compile(tap, maxFrames: 1024)
        tapped.engine.render(frames: 64)
        XCTAssertEqual(MallocCounter.countRendering(tapped.engine, sizes: [64, 1024, 77, 256]), 0)
    }
}
