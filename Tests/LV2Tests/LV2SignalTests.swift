import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Real plugins change the signal as they say: an amplifier by its gain in
/// dB, a Butterworth low-pass by its response, a delay by its time; a
/// reported latency is compensated against a dry path; live changes take
/// effect in the next block; nothing around `run` allocates.
final class LV2SignalTests: XCTestCase {
    /// SWH's amp converts dB with its own table (swh's `DB_CO`), within
    /// 0.25 dB of the exact gain.
    func testAnAmplifierChangesTheLevelByItsGainInDB() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        for gain in [6.0, -12.0, 0.0] {
            let json = lv2Graph(source: tone(1000, level: -20, channels: 2),
                                params: #"{"uri": "\#(LV2Plugins.amp)", "instances": "per-channel", "gain": \#(gain)}"#)
            let out = try renderLV2(json, frames: 48000).samples
            XCTAssertEqual(out.count, 2, "per-channel: one instance per channel, two channels out")
            for c in 0..<2 {
                XCTAssertEqual(SignalAnalysis.sineLevelDBFS(out[c][4800..<48000]), -20 + gain, accuracy: 0.25, "channel \(c), gain \(gain) dB")
            }
        }
    }

    /// SWH's Butterworth low-pass (12 dB/octave; its resonance is 1/Q: 1.41
    /// for the Butterworth Q of √2/2): ~0 dB a decade below the cutoff, −3 dB at it, about
    /// −24 dB two octaves above (|H|² = 1/(1+(f/fc)⁴)). Its cutoff port has
    /// lv2:sampleRate bounds: the parameter is in Hz.
    func testALowPassAttenuatesAboveItsCutoffByTheButterworthResponse() throws {
        try LV2Plugins.require(LV2Plugins.lowpass)
        let fc = 960.0
        // Two octaves up: the ideal 2-pole −24.1 dB; SWH's filter gives
        // about −21 (within 3.5 dB), a 2-pole slope all the same.
        for (f, expected, tolerance) in [(fc / 10, 0.0, 0.2), (fc, -3.01, 0.5), (fc * 4, -24.1, 3.5)] {
            let json = lv2Graph(source: tone(f, level: -6),
                                params: #"{"uri": "\#(LV2Plugins.lowpass)", "cutoff": 960, "resonance": 1.41}"#)
            let out = try renderLV2(json, frames: 48000).samples
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(out[0][24000..<48000]) + 6, expected, accuracy: tolerance, "at \(Int(f)) Hz")
        }
    }

    /// An impulse through SWH's delay line set to 10 ms comes out exactly
    /// 480 frames later, unchanged.
    func testADelayDelaysByItsSetTime() throws {
        try LV2Plugins.require(LV2Plugins.delay)
        let dir = try TemporaryDirectory()
        var impulse = [Float](repeating: 0, count: 9600)
        impulse[1000] = 0.5
        try writeSoundFile(dir.file("impulse.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000, samples: impulse)
        let json = lv2Graph(source: #""type": "file", "params": {"path": "impulse.wav"}"#,
                            params: #"{"uri": "\#(LV2Plugins.delay)", "max_delay": 1, "delay_time": 0.01}"#)
        let out = try renderLV2(json, frames: 9600, blockFrames: 128, directory: dir.path).samples[0]
        let peaks = out.indices.filter { abs(out[$0]) > 1e-6 }
        XCTAssertEqual(peaks, [1480], "one impulse, 10 ms = 480 frames later")
        XCTAssertEqual(out[1480], 0.5, accuracy: 1e-6)
    }

    /// x42's delay line set to 1000 frames reports that latency: the node's
    /// latency is 1000, and mixed with a dry copy the two paths line up
    /// (the engine delays the dry one): one impulse of twice the amplitude,
    /// 1000 frames late, not two.
    func testAReportedLatencyIsCompensatedAgainstADryPath() throws {
        try LV2Plugins.require(LV2Plugins.nodelay)
        let dir = try TemporaryDirectory()
        // x42's delay line glides to a new delay (no click): the impulse
        // comes once it has settled.
        var impulse = [Float](repeating: 0, count: 48000)
        impulse[30000] = 0.25
        try writeSoundFile(dir.file("impulse.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000, samples: impulse)
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "src", "type": "file", "params": {"path": "impulse.wav"}},
                       {"id": "fx", "type": "lv2", "params": {"uri": "\(LV2Plugins.nodelay)", "delay": 1000, "report_latency": "Delay and report latency"}},
                       {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
                       {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "fx"}, {"from": "fx", "to": "mix:in0"}, {"from": "src", "to": "mix:in1"},
                       {"from": "mix", "to": "cap"}]}
            """
        var atStart = -1
        let (samples, compiled) = try renderLV2(json, frames: 48000, blockFrames: 256, directory: dir.path) { block, compiled in
            if block == 0 { atStart = compiled.engine.node("fx")?.latency ?? -1 }
        }
        XCTAssertEqual(atStart, 1000, "the latency, known when the engine is built")
        XCTAssertEqual(compiled.engine.node("fx")?.latency, 1000, "the plugin's latency port")
        let out = samples[0]
        let peaks = out.indices.filter { abs(out[$0]) > 1e-6 }
        XCTAssertEqual(peaks, [31000], "dry and delayed aligned: one impulse at 30000 + 1000")
        XCTAssertEqual(out[31000], 0.5, accuracy: 1e-6)
        XCTAssertEqual((compiled.engine.node("fx") as? MeasuringNode)?.reading("latency"), 1000, "the latency port as a reading")
    }

    /// An enumeration by name: x42's "No delay, only report latency"
    /// passes the signal through undelayed and still reports 256 frames.
    func testAnEnumerationIsSetByName() throws {
        try LV2Plugins.require(LV2Plugins.nodelay)
        let json = lv2Graph(source: tone(1000, level: -20),
                            params: #"{"uri": "\#(LV2Plugins.nodelay)", "delay": 256, "report_latency": "No delay, only report latency"}"#)
        let (samples, compiled) = try renderLV2(json, frames: 4800, blockFrames: 240)
        XCTAssertEqual(compiled.engine.node("fx")?.latency, 256)
        let reference = try renderLV2(TestGraph.single("test-tone", #"{"frequency": 1000, "level": -20, "channels": 1, "duration": 1}"#), frames: 4800, blockFrames: 240).samples[0]
        let diffs = zip(samples[0][0..<4800], reference[0..<4800]).map { abs($0 - $1) }
        let difference = diffs.max() ?? 1
        XCTAssertEqual(difference, 0, "undelayed, sample for sample; first difference at \(diffs.firstIndex { $0 > 0 } ?? -1): \(Array(samples[0][0..<8])) vs \(Array(reference[0..<8]))")
        XCTAssertEqual(try compiled.value("fx.report_latency"), 2, "the choice's index")
    }

    /// A live change posted between blocks is heard from the next block on,
    /// sample-exact for SWH's amp (which applies its gain per block).
    func testALiveChangeTakesEffectInTheNextBlock() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let json = lv2Graph(source: tone(1000, level: -20), params: #"{"uri": "\#(LV2Plugins.amp)", "gain": 0}"#)
        let out = try renderLV2(json, frames: 256 * 40, blockFrames: 256) { block, compiled in
            if block == 20 { try compiled.set("fx.gain", 6) }
        }.samples[0]
        let before = SignalAnalysis.sineLevelDBFS(out[2400..<(20 * 256)])
        let after = SignalAnalysis.sineLevelDBFS(out[(20 * 256 + 64)..<(40 * 256)])
        XCTAssertEqual(before, -20, accuracy: 0.02)
        XCTAssertEqual(after, -14, accuracy: 0.05, "6 dB up from block 20 on")
        let reference = try renderLV2(TestGraph.single("test-tone", #"{"frequency": 1000, "level": -20, "channels": 1, "duration": 1}"#), frames: 256 * 40).samples[0]
        let difference = zip(out[0..<(20 * 256)], reference[0..<(20 * 256)]).map { abs($0 - $1) }.max() ?? 1
        XCTAssertEqual(difference, 0, "blocks before the change: untouched")
        XCTAssertNotEqual(out[20 * 256 + 10], reference[20 * 256 + 10], "the first block after the change is changed")
    }

    /// Blocks of changing sizes (a bus moves with the block size, and the
    /// node reconnects the plugins' audio ports only when it moved): the
    /// same samples as fixed blocks, for a per-channel amp into a delay.
    func testBlocksOfChangingSizesGiveTheSameSamplesAsFixedBlocks() throws {
        try LV2Plugins.require(LV2Plugins.amp, LV2Plugins.mdaDelay)
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "src", \(tone(440, level: -20, channels: 2))},
                       {"id": "amp", "type": "lv2", "params": {"uri": "\(LV2Plugins.amp)", "instances": "per-channel", "gain": -6}},
                       {"id": "dly", "type": "lv2", "params": {"uri": "\(LV2Plugins.mdaDelay)", "l_delay": 0.01, "r_delay": 0.02}},
                       {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "amp"}, {"from": "amp", "to": "dly"}, {"from": "dly", "to": "cap"}]}
            """
        let fixed = try renderLV2(json, frames: 24000, blockFrames: 512).samples
        let varying = try renderLV2(json, frames: 24000, blockFrames: 512, blockSizes: [1, 7, 128, 512, 64, 333, 256]).samples
        XCTAssertEqual(fixed.count, 2)
        XCTAssertEqual(varying.map(\.count), fixed.map(\.count))
        for c in 0..<2 {
            XCTAssertGreaterThan(fixed[c].map(abs).max() ?? 0, 0.01, "channel \(c) carries the tone")
            let worst = zip(fixed[c], varying[c]).map { abs($0 - $1) }.max() ?? 1
            XCTAssertEqual(worst, 0, "channel \(c): the same samples whatever the block sizes")
        }
    }

    /// SWH's sidechain compressor: the `sidechain` port drives the gain
    /// reduction. A −20 dBFS tone keyed by silence passes untouched; keyed
    /// by a 0 dBFS tone it is pulled down.
    func testASidechainInputDrivesTheCompressor() throws {
        try LV2Plugins.require(LV2Plugins.sidechainCompressor)
        func level(key: Double?) throws -> Double {
            let keySource = key.map { #""type": "test-tone", "params": {"frequency": 200, "level": \#($0), "channels": 1, "duration": 1}"# }
                ?? #""type": "test-tone", "params": {"waveform": "silence", "channels": 1, "duration": 1}"#
            let json = """
                {"format": "agraph/1", "sampleRate": 48000,
                 "nodes": [{"id": "src", \(tone(1000, level: -20))},
                           {"id": "key", \(keySource)},
                           {"id": "fx", "type": "lv2", "params": {"uri": "\(LV2Plugins.sidechainCompressor)", "threshold": -30, "ratio": 10, "attack": 2, "release": 50}},
                           {"id": "cap", "type": "capture"}],
                 "links": [{"from": "src", "to": "fx:in"}, {"from": "key", "to": "fx:sidechain"}, {"from": "fx", "to": "cap"}]}
                """
            let out = try renderLV2(json, frames: 48000).samples[0]
            return SignalAnalysis.sineLevelDBFS(out[24000..<48000])
        }
        XCTAssertEqual(try level(key: nil), -20, accuracy: 0.1, "no key: no reduction")
        XCTAssertLessThan(try level(key: 0), -30, "a loud key: the tone is pulled down by the sidechain")
    }

    /// Thousands of blocks through a per-channel amplifier and a stereo MDA
    /// delay (odd block sizes), with live changes: no allocation on the
    /// rendering thread.
    func testNothingAllocatesAroundRunAcrossThousandsOfBlocks() throws {
        try LV2Plugins.require(LV2Plugins.amp, LV2Plugins.mdaDelay)
        try XCTSkipUnless(MallocCounter.isAvailable, "malloc counting is not available in this build (TSan)")
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "src", "type": "test-tone", "params": {"frequency": 440, "level": -20, "channels": 2}},
                       {"id": "amp", "type": "lv2", "params": {"uri": "\(LV2Plugins.amp)", "instances": "per-channel", "gain": -3}},
                       {"id": "dly", "type": "lv2", "params": {"uri": "\(LV2Plugins.mdaDelay)"}},
                       {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "amp"}, {"from": "amp", "to": "dly"}, {"from": "dly", "to": "cap"}]}
            """
        let store = CaptureStore(capacityFrames: 16)
        let compiled = try GraphCompiler.compile(TestGraph.validate(json, stores: ["main": store]), maxFrames: 512)
        let engine = compiled.engine
        let sizes = [1, 7, 128, 512, 64, 333]
        for i in 0..<50 { engine.render(frames: sizes[i % sizes.count]) }
        // The set (parsing, queueing) is the control thread's work: not counted.
        let mallocs = try MallocCounter.count {
            for i in 0..<5000 {
                if i % 100 == 0 {
                    MallocCounter.endThread()
                    try compiled.set("amp.gain", Double(-(i / 100 % 12)))
                    MallocCounter.beginThread()
                }
                engine.render(frames: sizes[i % sizes.count])
            }
        }
        XCTAssertEqual(mallocs, 0, "allocations while rendering 5000 blocks through two LV2 nodes")
    }
}
