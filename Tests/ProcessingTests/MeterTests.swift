import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

final class MeterTests: XCTestCase {
    let fs = 48000.0

    /// The true-peak kernel alone, fed `x` in blocks of `block`.
    func kernelTruePeak(_ x: [Float], block: Int = 100) -> Double {
        let meter = TruePeakMeter(channels: 1)
        var peak: Float = 0
        x.withUnsafeBufferPointer { b in
            var i = 0
            while i < x.count {
                let n = min(block, x.count - i)
                peak = max(peak, meter.blockPeak(channel: 0, b.baseAddress! + i, count: n))
                i += n
            }
            // Flush the filter's delay: the last samples' spans.
            var zeros = [Float](repeating: 0, count: 12)
            zeros.withUnsafeMutableBufferPointer { z in peak = max(peak, meter.blockPeak(channel: 0, z.baseAddress!, count: 12)) }
        }
        return Double(peak)
    }

    func testQuarterRateSineAt45DegreesReadsThreeDecibelsAboveItsSamplePeak() {
        // The classic check: every sample sits at sin(45°) of the peak.
        let x = Synth.sine(frequency: fs / 4, amplitude: 0.5, sampleRate: fs, frames: 4800, phase: Double.pi / 4)
        let samplePeak = dB(SignalAnalysis.peak(x))
        let truePeak = dB(kernelTruePeak(x))
        XCTAssertEqual(samplePeak, dB(0.5) - 3.01, accuracy: 0.01)
        XCTAssertEqual(truePeak - samplePeak, 3.01, accuracy: 0.1, "true peak \(truePeak), sample peak \(samplePeak)")
        XCTAssertEqual(truePeak, dB(0.5), accuracy: 0.1)
    }

    func testTruePeakKernelAgreesWithEightTimesOversampling() {
        // Sines of several frequencies and phases, and noise: BS.1770's 4×
        // interpolator reads within the standard's tolerance of the 8×
        // reference below 10 kHz (its error grows towards Nyquist).
        var signals: [(String, [Float])] = []
        for f in [997.0, 3000, 7000, 9500] {
            for phase in [0.0, 0.3, 1.1] {
                signals.append(("\(f) Hz @\(phase)", Synth.sine(frequency: f, amplitude: 0.7, sampleRate: fs, frames: 2400, phase: phase)))
            }
        }
        signals.append(("clicks", (0..<2400).map { $0 % 600 == 0 ? 0.9 : 0 }))
        for (name, x) in signals {
            let reference = dB(independentTruePeak(x))
            let measured = dB(kernelTruePeak(x, block: 37))
            XCTAssertEqual(measured, reference, accuracy: 0.25, name)
            XCTAssertGreaterThanOrEqual(measured, dB(SignalAnalysis.peak(x)) - 1e-9, "\(name): never below the sample peak")
        }
    }

    /// A stereo file with a distinct signal in each channel, metered.
    func meterGraph(path: String, window: Double = 100) -> String {
        """
        {"format": "agraph/1", "nodes": [
          {"id": "src", "type": "file", "params": {"path": "\(path)"}},
          {"id": "m", "type": "meter", "params": {"window": \(window)}},
          {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "m"}, {"from": "m", "to": "cap"}]}
        """
    }

    func testMeterReadsPeakRMSAndTruePeakOfKnownSignalsPerChannel() throws {
        let dir = try TemporaryDirectory()
        let n = 48000
        // Left: fs/4 at 45°, 0.5 peak. Right: 1 kHz at -20 dBFS.
        let left = Synth.sine(frequency: fs / 4, amplitude: 0.5, sampleRate: fs, frames: n, phase: Double.pi / 4)
        let right = Synth.sine(frequency: 1000, amplitude: 0.1, sampleRate: fs, frames: n)
        let path = try writeWAV([left, right], in: dir, name: "in.wav")
        let store = CaptureStore(capacityFrames: 2 * n)
        let g = try TestGraph.validate(meterGraph(path: path), stores: ["main": store], directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 333)
        XCTAssertTrue(OfflineRenderer(engine: compiled.engine).run().finishErrors.isEmpty)
        // A pass-through: the output is the input, sample for sample.
        XCTAssertEqual(store.samples(0), left)
        XCTAssertEqual(store.samples(1), right)

        let meter = try XCTUnwrap(compiled.engine.node("m") as? MeterNode)
        let r = meter.reading()
        XCTAssertEqual(r.node, "m")
        XCTAssertEqual(r.window, 10, "ten windows of 100 ms in a second")
        XCTAssertEqual(r.channels.count, 2)
        XCTAssertEqual(r.channels[0].peakDBFS, dB(0.5) - 3.01, accuracy: 0.01)
        XCTAssertEqual(r.channels[0].rmsDBFS, dB(0.5) - 3.01, accuracy: 0.01, "RMS of a sine is its peak over √2")
        XCTAssertEqual(r.channels[0].truePeakDBTP, dB(0.5), accuracy: 0.1, "3 dB over the sample peak")
        XCTAssertEqual(r.channels[1].peakDBFS, -20, accuracy: 0.01)
        XCTAssertEqual(r.channels[1].rmsDBFS, -23.01, accuracy: 0.01)
        XCTAssertEqual(r.channels[1].truePeakDBTP, -20, accuracy: 0.05)
        XCTAssertEqual(r.maxPeakDBFS, dB(0.5) - 3.01, accuracy: 0.01, "the louder channel's peak")
        XCTAssertEqual(r.maxTruePeakDBTP, dB(0.5), accuracy: 0.1)

        // The same through the control surface, as `get` shows it.
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        XCTAssertEqual(try surface.get("m.peak").value, dB(0.5) - 3.01, accuracy: 0.01, "the loudest channel")
        XCTAssertEqual(try surface.get("m.peak[1]").value, -20, accuracy: 0.01)
        XCTAssertEqual(try surface.get("m.truePeak").value, dB(0.5), accuracy: 0.1)
        XCTAssertEqual(try surface.get("m.truePeak[0]").value, dB(0.5), accuracy: 0.1)
        XCTAssertEqual(try surface.get("m.rms[1]").value, -23.01, accuracy: 0.01)
        XCTAssertTrue(try surface.get("m.truePeak").word.hasSuffix("dBTP"))
        XCTAssertThrowsError(try surface.get("m.peak[2]"))
        XCTAssertThrowsError(try surface.get("m.loudness"))
        XCTAssertTrue(r.text.hasPrefix("m pk -9.0/-20.0 rms -9.0/-23.0 tp "), r.text)
    }

    func testWindowsArePublishedAsTheyEndAndShowTheLastOne() throws {
        // A tone that drops by 20 dB after 0.5 s: the reading follows per window.
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"frequency": 1000, "level": -6, "channels": 1}},
              {"id": "m", "type": "meter", "params": {"window": 50}},
              {"id": "o", "type": "null"}],
             "links": [{"from": "t", "to": "m"}, {"from": "m", "to": "o"}]}
            """
        let compiled = try GraphCompiler.compile(TestGraph.validate(json), maxFrames: 256)
        let engine = compiled.engine
        let meter = try XCTUnwrap(engine.node("m") as? MeterNode)
        XCTAssertEqual(meter.reading().window, 0)
        XCTAssertEqual(meter.reading().channels[0].peakDBFS, -.infinity)
        for _ in 0..<(2400 / 100) { engine.render(frames: 100) }
        XCTAssertEqual(meter.reading().window, 1, "one 50 ms window")
        XCTAssertEqual(meter.reading().channels[0].peakDBFS, -6, accuracy: 0.01)
        engine.post(try compiled.change("t.level", -26))
        for _ in 0..<(4800 / 96) { engine.render(frames: 96) }
        let r = meter.reading()
        XCTAssertEqual(r.window, 3)
        XCTAssertEqual(r.channels[0].peakDBFS, -26, accuracy: 0.01, "the last window only")
        XCTAssertEqual(r.channels[0].rmsDBFS, -29.01, accuracy: 0.02)
        XCTAssertEqual(r.maxPeakDBFS, -6, accuracy: 0.01, "the maximum since the start stays")
    }

    func testStatusLineShowsEveryMeter() {
        var status = OfflineHost().status()
        status.meters = [MeterReading(node: "m", window: 3,
                                      channels: [MeterLevels(peakDBFS: -3.04, rmsDBFS: -12.3, truePeakDBTP: -2.96),
                                                 MeterLevels(peakDBFS: -.infinity, rmsDBFS: -.infinity, truePeakDBTP: -.infinity)],
                                      maxPeakDBFS: -3, maxTruePeakDBTP: -2.9)]
        XCTAssertTrue(status.text.contains("m pk -3.0/-inf rms -12.3/-inf tp -3.0/-inf"), status.text)
    }

    func testBadWindowNamesItsPointer() {
        let json = #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone"}, {"id": "m", "type": "meter", "params": {"window": 0}}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "m"}, {"from": "m", "to": "o"}]}"#
        XCTAssertTrue(validationError(json).contains("/nodes/1/params/window"), validationError(json))
    }

    func testRenderAllocatesNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"waveform": "pink", "channels": 3}}, {"id": "m", "type": "meter", "params": {"window": 10}}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "m"}, {"from": "m", "to": "o"}]}"#
        try assertRendersWithoutAllocating(json, changes: [("t.level", -20), ("t.level", -3)])
    }
}
