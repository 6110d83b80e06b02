import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// The `ab` node: the equal-power crossfade sample by sample (against the
/// sources captured beside it), switches during a crossfade, loudness
/// matching checked with an independent BS.1770 measurement
/// (`ReferenceLoudness`), its readings, validation, and zero allocations.
final class ABTests: XCTestCase {
    static let rate = 48_000.0
    static let block = 256
    /// A full 50 ms crossfade, frames, and the phase step per frame.
    static let fadeFrames = 2400
    static let delta = Double.pi / 2 / Double(fadeFrames)

    // MARK: helpers

    /// A compiled graph and the captures it records into.
    struct Rig {
        var compiled: CompiledGraph
        var stores: [String: CaptureStore]
        func samples(_ store: String, channel: Int = 0) -> [Float] { stores[store]?.samples(channel) ?? [] }
    }

    /// A 48 kHz graph of `nodes` and `links` (JSON text of the arrays'
    /// members) with a `capture` node writing into each store of
    /// `captures` (store name → node it records).
    static func graph(_ nodes: String, _ links: String, captures: [(store: String, node: String)]) -> String {
        let capNodes = captures.map { #"{"id": "cap_\#($0.store)", "type": "capture", "params": {"store": "\#($0.store)"}}"# }
        let capLinks = captures.map { #"{"from": "\#($0.node)", "to": "cap_\#($0.store)"}"# }
        return """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [\(([nodes] + capNodes).joined(separator: ",\n"))],
             "links": [\(([links] + capLinks).joined(separator: ",\n"))]}
            """
    }

    /// Compiles `json` without analysis passes (the ab node follows, as
    /// live), with room for `seconds` in each capture.
    func rig(_ json: String, stores: [String], seconds: Double) throws -> Rig {
        var map: [String: CaptureStore] = [:]
        for s in stores { map[s] = CaptureStore(capacityFrames: Int(seconds * Self.rate) + Self.block) }
        let g = try TestGraph.validate(json, stores: map)
        return Rig(compiled: try GraphCompiler.compile(g, maxFrames: Self.block, live: true), stores: map)
    }

    /// Renders `blocks` blocks of 256 frames; before block `b`, sets the
    /// parameters `changes[b]` as the control surface does (applied at
    /// frame b · 256).
    func render(_ rig: Rig, blocks: Int, changes: [Int: [(String, Double)]] = [:]) throws {
        for b in 0..<blocks {
            for (address, value) in changes[b] ?? [] { try rig.compiled.set(address, value) }
            rig.compiled.engine.render(frames: Self.block)
        }
    }

    /// Renders `json` offline the way `agraph render` does (analysis
    /// passes included) to the end of its streams.
    func renderOffline(_ json: String, stores: [String], seconds: Double) throws -> Rig {
        var map: [String: CaptureStore] = [:]
        for s in stores { map[s] = CaptureStore(capacityFrames: Int(seconds * Self.rate) + Self.block) }
        let g = try TestGraph.validate(json, stores: map)
        let compiled = try XCTUnwrap(try OfflinePasses.compile(g, maxFrames: Self.block))
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors, [])
        XCTAssertEqual(result.ending, .endOfStream)
        return Rig(compiled: compiled, stores: map)
    }

    /// The largest |x[n] − x[n−1]| for n in `range`.
    static func maxStep(_ x: [Float], _ range: Range<Int>) -> Double {
        var m = 0.0
        for n in range where n > 0 && n < x.count { m = max(m, abs(Double(x[n]) - Double(x[n - 1]))) }
        return m
    }

    /// A stereo pair of channels, as `ReferenceLoudness` takes them.
    static func stereo(_ rig: Rig, _ store: String, _ range: Range<Int>) -> [[Float]] {
        (0..<2).map { Array(rig.samples(store, channel: $0)[range]) }
    }

    // MARK: crossfade

    /// Two sines of different frequencies: before the switch the output is
    /// in0 exactly, during the 50 ms crossfade in0·cos θ + in1·sin θ with θ
    /// rising by (π/2)/2400 per frame (so cos(π/4), sin(π/4) halfway), then
    /// in1 exactly. No sample step exceeds what the two sines and the
    /// weights' own slope allow, where a hard switch at the same moment
    /// jumps far over that bound.
    func testCrossfadeFollowsTheEqualPowerLawWithoutADiscontinuity() throws {
        let amplitude = 0.5
        let (f0, f1) = (440.0, 1000.0)
        func json(crossfadeMs: Double) -> String {
            Self.graph("""
                {"id": "s0", "type": "test-tone", "params": {"frequency": \(f0), "level": -6.0206, "channels": 1}},
                {"id": "s1", "type": "test-tone", "params": {"frequency": \(f1), "level": -6.0206, "channels": 1}},
                {"id": "ab", "type": "ab", "params": {"crossfadeMs": \(crossfadeMs)}}
                """, #"{"from": "s0", "to": "ab:in0"}, {"from": "s1", "to": "ab:in1"}"#,
                captures: [("out", "ab"), ("c0", "s0"), ("c1", "s1")])
        }
        // Switch where the two sines are far apart, so a hard switch jumps.
        let sr = Self.rate
        let switchBlock = (30..<200).first { b in
            let n = Double(b * Self.block)
            return abs(sin(2 * .pi * f0 * n / sr) - sin(2 * .pi * f1 * n / sr)) > 0.8
        } ?? 30
        let start = switchBlock * Self.block
        let smooth = try rig(json(crossfadeMs: 50), stores: ["out", "c0", "c1"], seconds: 1)
        try render(smooth, blocks: 150, changes: [switchBlock: [("ab.select", 1)]])
        let y = smooth.samples("out"), x0 = smooth.samples("c0"), x1 = smooth.samples("c1")
        XCTAssertEqual(y.count, 150 * Self.block)
        var worst = 0.0
        for n in 0..<y.count {
            let expected: Double
            if n < start {
                expected = Double(x0[n])
            } else if n < start + Self.fadeFrames {
                let theta = Double(n - start + 1) * Self.delta
                expected = Double(x0[n]) * cos(theta) + Double(x1[n]) * sin(theta)
            } else {
                expected = Double(x1[n])
            }
            worst = max(worst, abs(Double(y[n]) - expected))
        }
        XCTAssertLessThan(worst, 2e-6, "the output against in0·cos θ + in1·sin θ")
        XCTAssertEqual(Double(1200) * Self.delta, .pi / 4, accuracy: 1e-12, "halfway, the weights are cos(π/4) and sin(π/4)")

        // |Δy| ≤ A·2π(f0 + f1)/sr (the sines' steepest steps, weights ≤ 1)
        // + 2A·δ (the weights' steps).
        let bound = amplitude * 2 * .pi * (f0 + f1) / sr + 2 * amplitude * Self.delta + 1e-6
        let fade = (start - 1)..<(start + Self.fadeFrames + 1)
        XCTAssertLessThanOrEqual(Self.maxStep(y, fade), bound, "the crossfade's largest step")

        let hard = try rig(json(crossfadeMs: 0), stores: ["out", "c0", "c1"], seconds: 1)
        try render(hard, blocks: 150, changes: [switchBlock: [("ab.select", 1)]])
        let h = hard.samples("out")
        XCTAssertGreaterThan(Self.maxStep(h, fade), 3 * bound, "a hard switch jumps (the check can fail)")
        XCTAssertEqual(h[start - 1], hard.samples("c0")[start - 1])
        XCTAssertEqual(h[start], hard.samples("c1")[start], "crossfadeMs 0 switches at the block's first frame")
    }

    /// Two sines of the same frequency and phase at -6 and -12 dBFS: the
    /// crossfade moves the amplitude smoothly (A0 cos θ + A1 sin θ), with
    /// no step over the bound.
    func testCrossfadeBetweenCoherentSinesOfDifferentLevelsIsSmooth() throws {
        let (a0, a1) = (0.5, 0.25)
        let json = Self.graph("""
            {"id": "s0", "type": "test-tone", "params": {"frequency": 440, "level": -6.0206, "channels": 1}},
            {"id": "s1", "type": "test-tone", "params": {"frequency": 440, "level": -12.0412, "channels": 1}},
            {"id": "ab", "type": "ab"}
            """, #"{"from": "s0", "to": "ab:in0"}, {"from": "s1", "to": "ab:in1"}"#, captures: [("out", "ab")])
        let r = try rig(json, stores: ["out"], seconds: 1)
        try render(r, blocks: 120, changes: [40: [("ab.select", 1)]])
        let y = r.samples("out")
        let start = 40 * Self.block
        var worst = 0.0
        for n in 1..<y.count {
            let theta = n < start ? 0 : min(Double(n - start + 1) * Self.delta, .pi / 2)
            let expected = (a0 * cos(theta) + a1 * sin(theta)) * sin(2 * .pi * 440 * Double(n) / Self.rate)
            worst = max(worst, abs(Double(y[n]) - expected))
        }
        XCTAssertLessThan(worst, 1e-4, "(A0 cos θ + A1 sin θ)·sin ωt")
        let peakAmplitude = (a0 * a0 + a1 * a1).squareRoot()
        let bound = peakAmplitude * 2 * .pi * 440 / Self.rate + (a0 + a1) * Self.delta + 1e-6
        XCTAssertLessThanOrEqual(Self.maxStep(y, (start - 1)..<(start + Self.fadeFrames + 1)), bound)
    }

    /// The weights themselves, read through DC: one ab node hears 1.0 on
    /// in0 and silence on in1, another the reverse, and both get the same
    /// switches. A switch back during a crossfade picks the input up where
    /// it is (no jump) and takes as long as the fade had run; the squared
    /// weights sum to 1 throughout; select -1 fades both out; crossfadeMs 0
    /// switches at once.
    func testSwitchDuringACrossfadeStartsFromTheCurrentMix() throws {
        // A 0.01 Hz square at 0 dBFS: 1.0 for 50 s (after its first sample).
        let json = Self.graph("""
            {"id": "dc", "type": "test-tone", "params": {"waveform": "square", "frequency": 0.01, "level": 0, "channels": 1}},
            {"id": "z", "type": "test-tone", "params": {"waveform": "silence", "channels": 1}},
            {"id": "ab0", "type": "ab"}, {"id": "ab1", "type": "ab"}
            """, """
            {"from": "dc", "to": "ab0:in0"}, {"from": "z", "to": "ab0:in1"},
            {"from": "z", "to": "ab1:in0"}, {"from": "dc", "to": "ab1:in1"}
            """, captures: [("w0", "ab0"), ("w1", "ab1")])
        let r = try rig(json, stores: ["w0", "w1"], seconds: 3)
        func both(_ param: String, _ v: Double) -> [(String, Double)] { [("ab0.\(param)", v), ("ab1.\(param)", v)] }
        try render(r, blocks: 120, changes: [
            20: both("select", 1),
            40: both("select", 0),
            43: both("select", 1),       // 768 frames into the fade back to in0
            70: both("crossfadeMs", 0) + both("select", 0),
            80: both("crossfadeMs", 50) + both("select", -1),
        ])
        let w0 = r.samples("w0").map(Double.init), w1 = r.samples("w1").map(Double.init)
        let f1 = 20 * Self.block, f2 = 40 * Self.block, f3 = 43 * Self.block, f4 = 70 * Self.block, f5 = 80 * Self.block

        // A fresh switch: cos θ and sin θ, θ = (i+1)·δ.
        XCTAssertEqual(w0[f1 - 1], 1)
        XCTAssertEqual(w1[f1 - 1], 0)
        for i in 0..<Self.fadeFrames {
            let theta = Double(i + 1) * Self.delta
            XCTAssertEqual(w0[f1 + i], cos(theta), accuracy: 1e-6, "w0 at \(i)")
            XCTAssertEqual(w1[f1 + i], sin(theta), accuracy: 1e-6, "w1 at \(i)")
        }
        XCTAssertEqual(w0[f1 + 1199], 0.5.squareRoot(), accuracy: 1e-6, "halfway: cos(π/4)")
        XCTAssertEqual(w1[f1 + 1199], 0.5.squareRoot(), accuracy: 1e-6, "halfway: sin(π/4)")
        XCTAssertEqual(w0[f1 + Self.fadeFrames], 0)
        XCTAssertEqual(w1[f1 + Self.fadeFrames], 1)

        // Back to in0, and after 768 frames to in1 again.
        for n in (f1 - 1)..<f4 {
            XCTAssertEqual(w0[n] * w0[n] + w1[n] * w1[n], 1, accuracy: 1e-5, "equal power at frame \(n)")
        }
        let stepBound = Self.delta + 1e-6
        XCTAssertLessThanOrEqual(Self.maxStep(r.samples("w0"), f2..<f4), stepBound, "w0 never jumps")
        XCTAssertLessThanOrEqual(Self.maxStep(r.samples("w1"), f2..<f4), stepBound, "w1 never jumps")
        let theta1 = 768 * Self.delta
        XCTAssertEqual(w0[f3 - 1], sin(theta1), accuracy: 1e-6)
        XCTAssertEqual(w1[f3 - 1], cos(theta1), accuracy: 1e-6)
        for i in 0..<768 {
            let theta = Double.pi / 2 - theta1 + Double(i + 1) * Self.delta
            XCTAssertEqual(w1[f3 + i], sin(theta), accuracy: 1e-6, "w1 goes on from cos θ1 at \(i)")
            XCTAssertEqual(w0[f3 + i], cos(theta), accuracy: 1e-6, "w0 fades out from sin θ1 at \(i)")
        }
        XCTAssertEqual(w1[f3 + 767], 1, accuracy: 1e-7, "the fade back took the 768 frames the fade had run")
        XCTAssertEqual(w1[f3 + 768], 1)

        // crossfadeMs 0: a hard switch at the block's first frame.
        XCTAssertEqual(w1[f4 - 1], 1)
        XCTAssertEqual(w0[f4], 1)
        XCTAssertEqual(w1[f4], 0)

        // select -1: in0 fades out over 50 ms to silence.
        for i in 0..<Self.fadeFrames {
            XCTAssertEqual(w0[f5 + i], cos(Double(i + 1) * Self.delta), accuracy: 1e-6)
        }
        XCTAssertEqual(w0[f5 + Self.fadeFrames], 0)
        XCTAssertEqual(w1[f5 + Self.fadeFrames], 0)
        let surface = ControlSurface(compiled: r.compiled, host: OfflineHost())
        XCTAssertEqual(try surface.get("ab0.select").value, -1, "the parameter as set")
        let node = try XCTUnwrap(r.compiled.engine.node("ab0") as? MeasuringNode)
        XCTAssertEqual(node.reading("select"), -1, "the reading: silence plays")
    }

    // MARK: loudness matching

    /// in0: a 1 kHz tone at -20 dBFS; in1: pink noise at -26 (the level of
    /// a sine of that peak). Their loudness differs by about 6 LU, and not
    /// by their levels' difference: matching must measure loudness.
    static let matchSources = """
        {"id": "s0", "type": "test-tone", "params": {"frequency": 1000, "level": -20, "duration": DURATION}},
        {"id": "s1", "type": "test-tone", "params": {"waveform": "pink", "level": -26, "seed": 5, "duration": DURATION}}
        """

    /// Offline (auto: integrated loudness in a first pass), each input gets
    /// one exact constant gain: the output's loudness with in0 selected and
    /// with in1 selected, measured independently, agree within 0.1 LU; the
    /// quietest input keeps 0 dB; the readings give the gains applied.
    func testOfflineMatchingAppliesExactIntegratedGains() throws {
        var loudness: [Double] = []
        var rendered: [Rig] = []
        for select in 0..<2 {
            let json = Self.graph(Self.matchSources.replacingOccurrences(of: "DURATION", with: "10") + """
                , {"id": "ab", "type": "ab", "params": {"match": "loudness", "select": \(select)}}
                """, #"{"from": "s0", "to": "ab:in0"}, {"from": "s1", "to": "ab:in1"}"#,
                captures: [("out", "ab"), ("c0", "s0"), ("c1", "s1")])
            let r = try renderOffline(json, stores: ["out", "c0", "c1"], seconds: 10)
            XCTAssertEqual(r.samples("out").count, 480_000)
            loudness.append(ReferenceLoudness.integrated(Self.stereo(r, "out", 0..<480_000)))
            rendered.append(r)
            XCTAssertTrue(r.compiled.notices.contains { $0.contains("'ab'") && $0.contains("integrated") }, "\(r.compiled.notices)")
        }
        let r = rendered[0]
        let in0 = ReferenceLoudness.integrated(Self.stereo(r, "c0", 0..<480_000))
        let in1 = ReferenceLoudness.integrated(Self.stereo(r, "c1", 0..<480_000))
        XCTAssertGreaterThan(abs(in0 - in1), 4, "the inputs differ (\(in0), \(in1) LUFS)")
        XCTAssertEqual(loudness[0], loudness[1], accuracy: 0.1, "in0 and in1 after matching: \(loudness)")
        XCTAssertEqual(loudness[0], min(in0, in1), accuracy: 0.1, "matched to the quietest input")

        let surface = ControlSurface(compiled: r.compiled, host: OfflineHost())
        let g0 = try surface.get("ab.gain0").value, g1 = try surface.get("ab.gain1").value
        XCTAssertEqual(g0 - g1, in1 - in0, accuracy: 0.1, "the gains make up the difference")
        XCTAssertEqual(max(g0, g1), 0, "the quietest input keeps 0 dB")
        XCTAssertEqual(try surface.get("ab.loudness0").value, in0, accuracy: 0.1)
        XCTAssertEqual(try surface.get("ab.loudness1").value, in1, accuracy: 0.1)
        XCTAssertTrue(try surface.get("ab.gain0").word.hasSuffix("dB"))

        // One constant gain: every sample of in0 scaled alike.
        let out = r.samples("out"), x0 = r.samples("c0")
        let g = Float(pow(10, g0 / 20))
        var worst: Float = 0
        for n in 0..<out.count { worst = max(worst, abs(out[n] - x0[n] * g)) }
        XCTAssertLessThan(worst, 1e-6)
    }

    /// Live behaviour (no analysis pass): the short-term loudness is
    /// followed, the gain moving at `rate` dB/s at most; once settled, the
    /// output with in0 selected and with in1 selected have the same
    /// loudness within 0.1 LU (measured independently over 3 s each), and
    /// the readings report the gain.
    func testFollowingShortTermLoudnessMatchesWithinATenthOfALU() throws {
        let rate = 3.0
        let json = Self.graph(Self.matchSources.replacingOccurrences(of: "DURATION", with: "13") + """
            , {"id": "ab", "type": "ab", "params": {"match": "loudness", "rate": \(rate)}}
            """, #"{"from": "s0", "to": "ab:in0"}, {"from": "s1", "to": "ab:in1"}"#,
            captures: [("out", "ab"), ("c0", "s0"), ("c1", "s1")])
        let r = try rig(json, stores: ["out", "c0", "c1"], seconds: 13)
        let switchBlock = Int(8 * Self.rate) / Self.block
        try render(r, blocks: Int(13 * Self.rate) / Self.block, changes: [switchBlock: [("ab.select", 1)]])
        let sw = switchBlock * Self.block
        let in0 = ReferenceLoudness.integrated(Self.stereo(r, "c0", 0..<sw))
        let in1 = ReferenceLoudness.integrated(Self.stereo(r, "c1", 0..<sw))
        XCTAssertGreaterThan(in0 - in1, 4, "in1 is the quieter (\(in0), \(in1) LUFS)")

        let playing0 = ReferenceLoudness.integrated(Self.stereo(r, "out", (sw - 144_000)..<sw))
        let playing1 = ReferenceLoudness.integrated(Self.stereo(r, "out", (sw + 9_600)..<(sw + 153_600)))
        XCTAssertEqual(playing0, playing1, accuracy: 0.1, "in0 and in1 through the matched ab")
        XCTAssertEqual(playing1, in1, accuracy: 0.1, "in1, the quietest, at 0 dB")

        let surface = ControlSurface(compiled: r.compiled, host: OfflineHost())
        XCTAssertEqual(try surface.get("ab.gain0").value, in1 - in0, accuracy: 0.1, "the gain applied to in0")
        XCTAssertEqual(try surface.get("ab.gain1").value, 0)
        XCTAssertEqual(try surface.get("ab.loudness1").value, in1, accuracy: 0.1, "in1's short-term loudness")

        // The gain heads down from 0 dB at `rate` dB/s: the tone's level in
        // 50 ms windows never drops faster.
        let out = r.samples("out")
        let window = 2400
        var levels: [Double] = []
        for start in stride(from: 0, to: sw - window, by: window) {
            levels.append(SignalAnalysis.sineLevelDBFS(out[start ..< start + window]) + 20)
        }
        let perWindow = rate * Double(window) / Self.rate
        for i in 1..<levels.count {
            XCTAssertGreaterThanOrEqual(levels[i] - levels[i - 1], -perWindow - 0.05, "window \(i): faster than \(rate) dB/s")
        }
        let target = in1 - in0
        let settledAt = levels.firstIndex { abs($0 - target) < 0.1 }.map { Double($0 * window) / Self.rate }
        let expected = 0.1 + abs(target) / rate
        XCTAssertEqual(try XCTUnwrap(settledAt), expected, accuracy: 0.5, "settled after |gain| / rate seconds")
    }

    /// `reference: 0` matches in1 to in0, boosting it: the gain in1 gets
    /// is positive and in0 keeps 0 dB.
    func testAReferenceInputKeepsItsLoudness() throws {
        let json = Self.graph(Self.matchSources.replacingOccurrences(of: "DURATION", with: "6") + """
            , {"id": "ab", "type": "ab", "params": {"match": "loudness", "reference": 0, "select": 1}}
            """, #"{"from": "s0", "to": "ab:in0"}, {"from": "s1", "to": "ab:in1"}"#,
            captures: [("out", "ab"), ("c0", "s0")])
        let r = try renderOffline(json, stores: ["out", "c0"], seconds: 6)
        let in0 = ReferenceLoudness.integrated(Self.stereo(r, "c0", 0..<288_000))
        let out = ReferenceLoudness.integrated(Self.stereo(r, "out", 0..<288_000))
        XCTAssertEqual(out, in0, accuracy: 0.1, "in1 brought up to in0's loudness")
        let surface = ControlSurface(compiled: r.compiled, host: OfflineHost())
        XCTAssertEqual(try surface.get("ab.gain0").value, 0)
        XCTAssertGreaterThan(try surface.get("ab.gain1").value, 4)
    }

    // MARK: validation

    func validationError(_ json: String) -> String {
        do {
            _ = try TestGraph.validate(json)
            XCTFail("validated")
            return ""
        } catch {
            return "\(error)"
        }
    }

    func testMismatchedInputsAreRefusedNamingTheInput() {
        let channels = validationError("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": {"channels": 2}},
              {"id": "b", "type": "test-tone", "params": {"channels": 6}},
              {"id": "ab", "type": "ab"}, {"id": "n", "type": "null"}],
             "links": [{"from": "a", "to": "ab:in0"}, {"from": "b", "to": "ab:in1"}, {"from": "ab", "to": "n"}]}
            """)
        XCTAssertTrue(channels.contains("in1 has 6 channels (5.1) but in0 has 2 (stereo)"), channels)
        XCTAssertTrue(channels.contains("/links/1"), channels)

        let layout = validationError("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone"}, {"id": "b", "type": "test-tone"},
              {"id": "tag", "type": "format-tag", "params": {"layout": "binaural"}},
              {"id": "ab", "type": "ab"}, {"id": "n", "type": "null"}],
             "links": [{"from": "a", "to": "ab:in0"}, {"from": "b", "to": "tag"}, {"from": "tag", "to": "ab:in1"}, {"from": "ab", "to": "n"}]}
            """)
        XCTAssertTrue(layout.contains("in1 is binaural but in0 is stereo"), layout)

        let compressed = validationError("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone"}, {"id": "c", "type": "ac4", "params": {"path": "\(TestMedia.channelCheck)"}},
              {"id": "ab", "type": "ab"}, {"id": "n", "type": "null"}],
             "links": [{"from": "a", "to": "ab:in0"}, {"from": "c", "to": "ab:in1"}, {"from": "ab", "to": "n"}]}
            """)
        XCTAssertTrue(compressed.contains("/links/1") && compressed.contains("emits compressed ac4-sync frames"), compressed)
    }

    static func twoTones(_ params: String) -> String {
        """
        {"format": "agraph/1", "nodes": [
          {"id": "a", "type": "test-tone"}, {"id": "b", "type": "test-tone"},
          {"id": "ab", "type": "ab", "params": \(params)}, {"id": "n", "type": "null"}],
         "links": [{"from": "a", "to": "ab:in0"}, {"from": "b", "to": "ab:in1"}, {"from": "ab", "to": "n"}]}
        """
    }

    func testSelectOutOfRangeIsRefusedWithItsPointer() throws {
        let select = validationError(Self.twoTones(#"{"select": 2}"#))
        XCTAssertTrue(select.contains("/nodes/2/params/select"), select)
        XCTAssertTrue(select.contains("select 2 names no input: this ab node has 2 inputs (in0…in1)"), select)

        let reference = validationError(Self.twoTones(#"{"match": "loudness", "reference": 5}"#))
        XCTAssertTrue(reference.contains("/nodes/2/params/reference"), reference)

        let matchBy = validationError(Self.twoTones(#"{"matchBy": "integrated"}"#))
        XCTAssertTrue(matchBy.contains("/nodes/2/params/matchBy") && matchBy.contains("\"match\": \"loudness\""), matchBy)

        let tooMany = validationError(Self.twoTones(#"{"inputs": 17}"#))
        XCTAssertTrue(tooMany.contains("/nodes/2/params/inputs"), tooMany)

        // Live, through the control surface: refused with the same words.
        let g = try TestGraph.validate(Self.twoTones("{}"))
        let compiled = try GraphCompiler.compile(g, maxFrames: 256, live: true)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        XCTAssertThrowsError(try surface.set("ab.select", word: "2")) { error in
            XCTAssertTrue("\(error)".contains("select 2 names no input"), "\(error)")
        }
        XCTAssertThrowsError(try surface.set("ab.select", word: "0.5")) { error in
            XCTAssertTrue("\(error)".contains("whole number"), "\(error)")
        }
        XCTAssertEqual(try surface.set("ab.select", word: "1").value, 1)
        XCTAssertEqual(try surface.set("ab.select", word: "-1").value, -1)
        XCTAssertThrowsError(try surface.get("ab.gain2")) { error in
            XCTAssertTrue("\(error)".contains("gain0, gain1"), "the readings are listed: \(error)")
        }
    }

    /// Offline, matching by integrated loudness needs a first pass: live
    /// input upstream is refused before anything renders, saying how to
    /// match without one; short-term matching needs no pass.
    func testIntegratedMatchingRefusesLiveInputOffline() throws {
        var registry = TestGraph.registry([:])
        registry.register(LiveSourceType())
        func graph(_ matchBy: String) throws -> ValidatedGraph {
            let json = """
                {"format": "agraph/1", "nodes": [{"id": "mic", "type": "live-src"}, {"id": "t", "type": "test-tone"},
                 {"id": "cmp", "type": "ab", "params": {"match": "loudness", "matchBy": "\(matchBy)"}}, {"id": "n", "type": "null"}],
                 "links": [{"from": "mic", "to": "cmp:in0"}, {"from": "t", "to": "cmp:in1"}, {"from": "cmp", "to": "n"}]}
                """
            return try GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: "live.json", directory: "/tmp").get()
        }
        XCTAssertThrowsError(try OfflinePasses.compile(try graph("auto"), maxFrames: 256)) { error in
            XCTAssertTrue("\(error)".contains("'mic'") && "\(error)".contains("matchBy \"short-term\""), "\(error)")
        }
        XCTAssertEqual(OfflinePasses.passCount(try graph("short-term")), 0)
    }

    // MARK: realtime safety

    /// Following, exact gains, plain switching with four inputs, and
    /// switches (to silence too), crossfade changes and rate changes while
    /// rendering: no allocation across 10,000 blocks of varying size.
    func testRenderAllocatesNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"frequency": 1000, "level": -20}},
              {"id": "p", "type": "test-tone", "params": {"waveform": "pink", "level": -26}},
              {"id": "t6", "type": "test-tone", "params": {"waveform": "white", "channels": 6, "level": -30}},
              {"id": "p6", "type": "test-tone", "params": {"waveform": "pink", "channels": 6, "level": -20}},
              {"id": "follow", "type": "ab", "params": {"match": "loudness", "rate": 20}},
              {"id": "exact", "type": "ab", "params": {"match": "loudness", "crossfadeMs": 5}},
              {"id": "four", "type": "ab", "params": {"inputs": 4, "crossfadeMs": 20}},
              {"id": "six", "type": "ab", "params": {"match": "loudness", "matchBy": "integrated", "reference": 1}},
              {"id": "n1", "type": "null"}, {"id": "n2", "type": "null"}, {"id": "n3", "type": "null"}, {"id": "n4", "type": "null"}],
             "links": [{"from": "t", "to": "follow:in0"}, {"from": "p", "to": "follow:in1"}, {"from": "follow", "to": "n1"},
                       {"from": "t", "to": "exact:in0"}, {"from": "p", "to": "exact:in1"}, {"from": "exact", "to": "n2"},
                       {"from": "t", "to": "four:in0"}, {"from": "p", "to": "four:in1"}, {"from": "t", "to": "four:in2"},
                       {"from": "p", "to": "four:in3"}, {"from": "four", "to": "n3"},
                       {"from": "t6", "to": "six:in0"}, {"from": "p6", "to": "six:in1"}, {"from": "six", "to": "n4"}]}
            """
        let g = try TestGraph.validate(json)
        let compiled = try GraphCompiler.compile(g, maxFrames: 256) { node, made in
            if node.id == "exact", let a = made as? AnalysisPassNode {
                _ = try a.useAnalysis(ABAnalysis(integratedLUFS: [-20, -26]))
            }
        }
        let engine = compiled.engine
        engine.render(frames: 256)
        let changes = try [
            ("follow.select", 1.0), ("exact.select", 1), ("four.select", 3), ("six.select", 1), ("follow.rate", 6),
            ("four.select", 2), ("follow.select", 0), ("four.crossfadeMs", 0), ("four.select", -1), ("exact.select", -1),
            ("four.crossfadeMs", 80), ("four.select", 0), ("exact.select", 0), ("six.select", 0),
        ].map { try compiled.change($0.0, $0.1) }
        let allocations = MallocCounter.countRendering(engine, sizes: [64, 256, 100, 1], changes: changes, every: 37)
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks")
        let follow = try XCTUnwrap(engine.node("follow") as? MeasuringNode)
        XCTAssertLessThan(follow.reading("gain0") ?? .nan, -3, "the following gain moved")
        XCTAssertTrue((follow.reading("loudness1") ?? .nan).isFinite, "the loudness was published")
        let exact = try XCTUnwrap(engine.node("exact") as? MeasuringNode)
        XCTAssertEqual(exact.reading("gain0") ?? .nan, -6, accuracy: 1e-9)
    }
}
