import AudioGraph
@testable import AudioGraphBinaural
import Foundation
import TestSupport
import XCTest

/// Head rotation while rendering: where a change lands offline, the
/// crossfade between filter sets, and the audio thread's allocations.
final class BinauralRotationTests: XCTestCase {
    static let rate = 44100.0

    /// Deterministic noise, `frames` long, at `amplitude` peak.
    static func noise(_ frames: Int, amplitude: Double = 0.5) -> [Float] {
        Synth.whiteNoise(frames: frames, seed: 7).map { Float(Double($0) * amplitude) }
    }

    /// A `set` of yaw before block k of an offline render is applied in
    /// block k and sent to the worker at its end; the renderer waits for
    /// the new filters before block k + 1, which crossfades to them over
    /// one partition (128 frames here). So the output is, exactly: the
    /// straight-ahead render up to block k + 1, then the linear crossfade,
    /// then the render with the head turned, and the same on every run.
    func testAYawSetOfflineLandsInTheNextBlockAndCrossfades() throws {
        let block = 256, k = 10, p = 128
        let input = [Self.noise(8192)]
        let params = #"{"positions": [{"azimuth": 30}], "partition": 128}"#
        func rotated() throws -> [[Float]] {
            try BinauralGraph.render(layout: "mono", params: params, input: input, blockFrames: block) { b, compiled in
                if b == k { try compiled.set("bin.yaw", 90) }
            }
        }
        let moving = try rotated()
        let again = try rotated()
        XCTAssertEqual(moving, again, "two offline renders with the same set are identical")
        let straight = try BinauralGraph.render(layout: "mono", params: params, input: input, blockFrames: block)
        let turned = try BinauralGraph.render(layout: "mono", params: #"{"positions": [{"azimuth": 30}], "yaw": 90}"#,
                                              input: input, blockFrames: block)
        let switchAt = (k + 1) * block
        for ear in 0..<2 {
            let peak = Double(straight[ear].map { abs($0) }.max() ?? 1)
            var worst = (error: 0.0, at: -1)
            for t in 0..<moving[ear].count {
                let a = Double(straight[ear][t]), b = Double(turned[ear][t])
                let w = t < switchAt ? 0 : min(1, Double(t - switchAt + 1) / Double(p))
                let want = a + (b - a) * w
                let e = abs(Double(moving[ear][t]) - want)
                if e > worst.error { worst = (e, t) }
            }
            XCTAssertLessThanOrEqual(worst.error, 1e-5 * peak, "ear \(ear): largest difference \(worst.error) at frame \(worst.at)")
            // The head did turn: after the fade the output is not the straight one.
            let after = (switchAt + p)..<(switchAt + 2000)
            let moved = after.map { abs(Double(moving[ear][$0]) - Double(straight[ear][$0])) }.max() ?? 0
            XCTAssertGreaterThan(moved, 0.05 * peak, "ear \(ear): the rotation changed the output")
        }
    }

    /// A sine plays while yaw changes every block by 47°. Once the sine has
    /// filled the responses (after 512 samples), every convolution of it
    /// is a sine too: a = A·|H_a(f)|·sin(ωt + φ_a). Each output sample is
    /// a crossfade y = a + (b − a)·w of two of them (w steps by at most
    /// 1/F per sample, F = 128), so
    /// |y[t+1] − y[t]| ≤ max(|Δa|, |Δb|) + |Δw|·|b − a|
    ///                ≤ G·2A·sin(πf/fs) + (1/F)·2·G·A,
    /// with G the largest |H(f)| of any (normalised) response in the set.
    /// A switch without the crossfade would jump by |b(t) − a(t−1)|, which
    /// the test computes and finds well above that bound.
    func testARotationSweepStaysUnderTheCrossfadeBound() throws {
        let set = try ReferenceSet()
        let amplitude = 0.5, frequency = 250.0, block = 128
        let frames = 2 * 44100
        let firstChange = 8
        let sine = Synth.sine(frequency: frequency, amplitude: amplitude, sampleRate: Self.rate, frames: frames)
        let yaw: (Int) -> Double = { b in b < firstChange ? 0 : HeadOrientation.wrapForTests(Double(b - firstChange + 1) * 47) }
        let out = try BinauralGraph.render(layout: "mono", input: [sine], blockFrames: block) { b, compiled in
            if b >= firstChange { try compiled.set("bin.yaw", yaw(b)) }
        }
        let g = set.largestMagnitude(at: frequency)
        let bound = g * 2 * amplitude * sin(Double.pi * frequency / Self.rate) + (1 / Double(block)) * 2 * g * amplitude
        var largest = 0.0
        for ear in 0..<2 {
            for t in (set.length + 1)..<frames {
                largest = max(largest, abs(Double(out[ear][t]) - Double(out[ear][t - 1])))
            }
        }
        XCTAssertLessThanOrEqual(largest, bound, "largest step \(largest), crossfade bound \(bound) (G = \(g))")
        // What switching without a crossfade would do, at the same moments:
        // the set for block b's yaw takes over at block b + 1.
        var hard = 0.0
        func filters(_ b: Int) -> [[Float]] {
            let m = set.nearest(azimuth: -yaw(b), elevation: 0)
            return [set.response(m, ear: 0), set.response(m, ear: 1)]
        }
        for b in firstChange..<(firstChange + 60) {
            let t = (b + 1) * block
            let before = filters(b - 1), after = filters(b)
            for ear in 0..<2 {
                hard = max(hard, abs(convolvedSample(sine, after[ear], at: t) - convolvedSample(sine, before[ear], at: t - 1)))
            }
        }
        XCTAssertGreaterThan(hard, 2 * bound, "a switch without crossfade would jump by \(hard); the bound \(bound) tells them apart")
    }

    /// A 5.1 graph compiled as for JACK (the live partition, 128, several
    /// per block), its worker started, a rotation cycle done (the Swift
    /// runtime makes its metadata on first use), and the yaw, pitch and
    /// roll changes to post.
    func liveEngine(frames: Int) throws -> (CompiledGraph, [ParameterChange], CaptureStore) {
        let capture = CaptureStore(capacityFrames: frames + 8192)
        let input = (0..<6).map { c in Self.noise(frames).map { $0 * Float(c + 1) / 6 } }
        let g = try BinauralGraph.validate(BinauralGraph.json(layout: "5.1", params: #"{"interpolate": true}"#),
                                           input: input, capture: capture).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 512, live: true)
        let engine = compiled.engine
        let changes = try [("bin.yaw", 30.0), ("bin.pitch", -20), ("bin.roll", 15), ("bin.yaw", -170), ("bin.pitch", 45), ("bin.yaw", 0)]
            .map { try compiled.change($0.0, $0.1) }
        engine.worker.start()
        engine.render(frames: 512)
        engine.post(changes[0])
        engine.render(frames: 512)
        engine.worker.waitUntilReady(frames: 512)
        engine.render(frames: 512)
        engine.render(frames: 512)
        return (compiled, changes, capture)
    }

    /// Ten thousand blocks of odd sizes with yaw, pitch and roll changing
    /// every seven blocks, the worker computing and handing over filter
    /// sets as it would live: the audio thread allocates nothing.
    func testRenderingAndRotatingAllocateNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let (compiled, changes, _) = try liveEngine(frames: 1_400_000)
        let engine = compiled.engine
        defer { engine.worker.stop() }
        let allocations = MallocCounter.countRendering(engine, blocks: 10_000, sizes: [128, 64, 512, 37, 1, 300],
                                                       changes: changes, every: 7)
        XCTAssertEqual(allocations, 0, "allocations on the audio thread across 10,000 blocks")
        engine.worker.stop()
        let node = try XCTUnwrap(engine.node("bin") as? BinauralRenderNode)
        XCTAssertEqual(node.partitionFrames, 128)
        XCTAssertGreaterThan(node.filterSetsTaken, 100, "the rotations were computed and rendered while counting")
        XCTAssertGreaterThan(engine.framePosition, 1_000_000)
    }

    /// The handoff under load: the worker computes while the audio thread
    /// renders without waiting and changes come every other block, so
    /// requests coalesce, sets wait in the mailbox and go back unused. Run
    /// under ThreadSanitizer too (scripts/test): no race on the slots.
    func testRotatingWhileTheWorkerRunsFreely() throws {
        let (compiled, changes, capture) = try liveEngine(frames: 200_000)
        let engine = compiled.engine
        var k = 0
        for block in 0..<3000 {
            if block % 2 == 0 {
                engine.post(changes[k % changes.count])
                k += 1
            }
            engine.render(frames: [128, 64, 200, 1][block % 4])
        }
        engine.worker.stop()
        let node = try XCTUnwrap(engine.node("bin") as? BinauralRenderNode)
        XCTAssertGreaterThan(node.filterSetsTaken, 20, "sets were handed over")
        for ear in 0..<2 {
            let recorded = capture.samples(ear)
            XCTAssertTrue(recorded.allSatisfy { $0.isFinite }, "ear \(ear) is finite")
            XCTAssertGreaterThan(SignalAnalysis.rms(recorded), 0.01, "ear \(ear) carries the signal")
        }
    }
}

extension HeadOrientation {
    /// `degrees` in −180…180 (the parameter's range).
    static func wrapForTests(_ degrees: Double) -> Double {
        var a = degrees.truncatingRemainder(dividingBy: 360)
        if a > 180 { a -= 360 }
        if a < -180 { a += 360 }
        return a
    }
}
