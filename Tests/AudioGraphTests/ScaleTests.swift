import AudioGraph
import AudioGraphCore
import Foundation
import TestSupport
import XCTest

/// Issue 24, Scale: buses shared by liveness (and in place where a node
/// allows it), so a long chain uses a bounded number of buses and renders
/// the same samples; mixers of thousands of inputs.
final class ScaleTests: XCTestCase {
    /// A graph file of `nodes` and `links` (JSON object texts).
    func graph(_ nodes: [String], _ links: [String]) -> String {
        #"{"format": "agraph/1", "sampleRate": 48000, "nodes": [\#(nodes.joined(separator: ", "))], "links": [\#(links.joined(separator: ", "))]}"#
    }

    /// Renders `json` offline for `frames` frames in blocks of `block`;
    /// returns what the capture node recorded (channel by channel) and the engine.
    func render(_ json: String, frames: Int, block: Int = 512, reuseBuses: Bool? = nil) throws -> ([[Float]], Engine) {
        let store = CaptureStore(capacityFrames: frames + block)
        let g = try TestGraph.validate(json, stores: ["main": store])
        let compiled = try GraphCompiler.compile(g, maxFrames: block, reuseBuses: reuseBuses)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: frames)
        return ((0..<store.channels.count).map { store.samples($0) }, compiled.engine)
    }

    static let tone = #"{"id": "src", "type": "test-tone", "params": {"waveform": "saw", "frequency": 997, "level": -6, "channels": 2}}"#
    static let capture = #"{"id": "cap", "type": "capture"}"#

    /// The gain (dB) of chain node `i`: the product over the chain stays near 1.
    static func chainGain(_ i: Int) -> Double { i % 2 == 0 ? 0.37 : -0.36 }

    func testAChainOfAThousandGainsRendersTheProductInOneOrTwoBuses() throws {
        let n = 1000, frames = 4800
        var nodes = [Self.tone], links: [String] = []
        var previous = "src"
        for i in 0..<n {
            nodes.append(#"{"id": "g\#(i)", "type": "gain", "params": {"gain": \#(Self.chainGain(i))}}"#)
            links.append(#"{"from": "\#(previous)", "to": "g\#(i)"}"#)
            previous = "g\(i)"
        }
        nodes.append(Self.capture)
        links.append(#"{"from": "\#(previous)", "to": "cap"}"#)
        let (out, engine) = try render(graph(nodes, links), frames: frames)
        // Bounded: the source's bus, every gain writing in place (none is
        // read by more than its successor).
        XCTAssertTrue(engine.sharesBuses)
        XCTAssertLessThanOrEqual(engine.busCount, 2, "\(n + 1) outputs in \(engine.busCount) buses")
        // The source alone, and the product gain by gain, in Float as the nodes do it.
        let (reference, alone) = try render(graph([Self.tone, Self.capture], [#"{"from": "src", "to": "cap"}"#]), frames: frames)
        XCTAssertEqual(alone.busCount, 1)
        let gains = (0..<n).map { Float(Decibels.toLinear(Self.chainGain($0))) }
        XCTAssertEqual(out.count, 2)
        for c in 0..<2 {
            XCTAssertEqual(out[c].count, frames)
            var mismatches = 0
            for k in 0..<frames {
                var v = reference[c][k]
                for g in gains { v = v * g }
                if out[c][k] != v { mismatches += 1 }
            }
            XCTAssertEqual(mismatches, 0, "channel \(c): samples that differ from the gain product")
        }
        XCTAssertGreaterThan(SignalAnalysis.rms(out[0]), 0.1)
        // Without reuse: one bus per output, the same samples.
        let (separate, plain) = try render(graph(nodes, links), frames: frames, reuseBuses: false)
        XCTAssertEqual(plain.busCount, n + 1)
        XCTAssertFalse(plain.sharesBuses)
        XCTAssertTrue(separate == out, "the same samples with a bus per output")
    }

    /// Gains in place ramping to new values (live changes): the same
    /// samples as with a bus per output, block for block.
    func testGainsInPlaceRampTheSameAsWithTheirOwnBuses() throws {
        var nodes = [Self.tone], links: [String] = []
        var previous = "src"
        for i in 0..<4 {
            nodes.append(#"{"id": "g\#(i)", "type": "gain", "params": {"gain": \#(-Double(i))}}"#)
            links.append(#"{"from": "\#(previous)", "to": "g\#(i)"}"#)
            previous = "g\(i)"
        }
        nodes.append(#"{"id": "n", "type": "null"}"#)
        links.append(#"{"from": "\#(previous)", "to": "n"}"#)
        let g = try TestGraph.validate(graph(nodes, links))
        let shared = try GraphCompiler.compile(g, maxFrames: 256)
        let separate = try GraphCompiler.compile(g, maxFrames: 256, reuseBuses: false)
        XCTAssertEqual(shared.engine.busCount, 1, "the source's bus, every gain in place")
        XCTAssertEqual(separate.engine.busCount, 5)
        var a: [Float] = [], b: [Float] = []
        for block in 0..<40 {
            if block == 3 || block == 17 {
                for c in [shared, separate] {
                    try c.set("g1.gain", block == 3 ? -9 : 4)
                    try c.set("g3.mute", block == 3 ? 1 : 0)
                }
            }
            shared.engine.render(frames: 200)
            separate.engine.render(frames: 200)
            for c in 0..<2 {
                a += Array(UnsafeBufferPointer(start: shared.engine.outputs[4]!.channel(c), count: 200))
                b += Array(UnsafeBufferPointer(start: separate.engine.outputs[4]!.channel(c), count: 200))
            }
        }
        XCTAssertTrue(a == b, "in place and with their own buses, ramps included")
        XCTAssertGreaterThan(SignalAnalysis.rms(Array(a.suffix(400))), 0.05, "unmuted again at the end")
        XCTAssertLessThan(SignalAnalysis.rms(Array(a[(12 * 400)..<(16 * 400)])), 1e-6, "muted in between")
    }

    /// One source read by eight two-gain branches and by the mixer itself,
    /// after them all: its bus must outlive every branch; branch buses are
    /// reused (the source's readers cannot write in place).
    func testAFanOutAndFanInRendersTheSameSamplesWithReuse() throws {
        let branches = 8, frames = 6000
        var nodes = [Self.tone], links: [String] = []
        for b in 0..<branches {
            nodes.append(#"{"id": "a\#(b)", "type": "gain", "params": {"gain": \#(-Double(b) - 1)}}"#)
            nodes.append(#"{"id": "b\#(b)", "type": "gain", "params": {"gain": \#(Double(b) * 0.5)}}"#)
            links.append(#"{"from": "src", "to": "a\#(b)"}"#)
            links.append(#"{"from": "a\#(b)", "to": "b\#(b)"}"#)
            links.append(#"{"from": "b\#(b)", "to": "mix:in\#(b)"}"#)
        }
        links.append(#"{"from": "src", "to": "mix:in\#(branches)"}"#)
        nodes.append(#"{"id": "mix", "type": "mixer", "params": {"inputs": \#(branches + 1)}}"#)
        nodes.append(#"{"id": "post", "type": "gain", "params": {"gain": -12}}"#)
        nodes.append(Self.capture)
        links += [#"{"from": "mix", "to": "post"}"#, #"{"from": "post", "to": "cap"}"#]
        let json = graph(nodes, links)
        let (out, engine) = try render(json, frames: frames)
        // 2 + 2·8 + 2 outputs; alive at once at most: the source and the
        // eight branch ends (the mixer's inputs), one branch's middle.
        XCTAssertLessThanOrEqual(engine.busCount, branches + 2, "\(engine.busCount) buses")
        let (separate, plain) = try render(json, frames: frames, reuseBuses: false)
        XCTAssertEqual(plain.busCount, 2 * branches + 3)
        XCTAssertTrue(out == separate, "the same samples as with a bus per output")
        // And the sum itself: src × (1 + Σ a_b·b_b) × post.
        let (reference, _) = try render(graph([Self.tone, Self.capture], [#"{"from": "src", "to": "cap"}"#]), frames: frames)
        var total = 1.0
        for b in 0..<branches { total += Decibels.toLinear(-Double(b) - 1) * Decibels.toLinear(Double(b) * 0.5) }
        total *= Decibels.toLinear(-12)
        var worst: Float = 0
        for k in 0..<frames { worst = max(worst, abs(out[0][k] - reference[0][k] * Float(total))) }
        XCTAssertLessThan(worst, 1e-5)
        XCTAssertGreaterThan(SignalAnalysis.rms(out[0]), 0.05)
    }

    /// One mono source into every input of a 4,096-input mixer, each with
    /// its own gain: the output is the sum, in input order, in Float.
    func testAMixerOf4096InputsRendersTheExactSum() throws {
        let n = 4096, frames = 2048
        let gainsDB = (0..<n).map { -72 + Double($0 % 9) }
        let source = #"{"id": "src", "type": "test-tone", "params": {"waveform": "sine", "frequency": 440, "level": -6, "channels": 1}}"#
        let gains = gainsDB.map { String($0) }.joined(separator: ", ")
        let nodes = [source, #"{"id": "mix", "type": "mixer", "params": {"inputs": \#(n), "gains": [\#(gains)]}}"#, Self.capture]
        let links = (0..<n).map { #"{"from": "src", "to": "mix:in\#($0)"}"# } + [#"{"from": "mix", "to": "cap"}"#]
        let started = Date()
        let (out, _) = try render(graph(nodes, links), frames: frames)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "validating, building and rendering a 4,096-input mixer")
        let (reference, _) = try render(graph([source, Self.capture], [#"{"from": "src", "to": "cap"}"#]), frames: frames)
        let linear = gainsDB.map { Float(Decibels.toLinear($0)) }
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(out[0].count, frames)
        var mismatches = 0
        for k in 0..<frames {
            var sum: Float = 0
            for g in linear { sum = sum + reference[0][k] * g }
            if out[0][k] != sum { mismatches += 1 }
        }
        XCTAssertEqual(mismatches, 0, "samples that differ from the sum")
        XCTAssertGreaterThan(SignalAnalysis.rms(out[0]), 0.1)
    }

    /// A tree: 4,096 tones into 64 mixers of 64 inputs into one mixer. The
    /// steps run depth first (each mixer right after its last input), so the
    /// buses alive at once are one mixer's inputs plus the mixers' outputs
    /// made so far, not every tone's output: at most 64 + 64 + 1 buses, where
    /// running every tone first needed 4,096. The same samples as with a bus
    /// per output.
    func testAWideTreeRunsDepthFirstInBusesBoundedByItsFanIn() throws {
        let fanIn = 64, groups = 64, frames = 1024
        var nodes: [String] = [], links: [String] = []
        for g in 0..<groups {
            for k in 0..<fanIn {
                let t = g * fanIn + k
                nodes.append(#"{"id": "t\#(t)", "type": "test-tone", "params": {"frequency": \#(100 + t), "level": -60, "channels": 2}}"#)
                links.append(#"{"from": "t\#(t)", "to": "m\#(g):in\#(k)"}"#)
            }
        }
        for g in 0..<groups {
            nodes.append(#"{"id": "m\#(g)", "type": "mixer", "params": {"inputs": \#(fanIn)}}"#)
            links.append(#"{"from": "m\#(g)", "to": "top:in\#(g)"}"#)
        }
        nodes += [#"{"id": "top", "type": "mixer", "params": {"inputs": \#(groups)}}"#, Self.capture]
        links.append(#"{"from": "top", "to": "cap"}"#)
        let json = graph(nodes, links)
        let (out, engine) = try render(json, frames: frames, block: 256)
        XCTAssertLessThanOrEqual(engine.busCount, fanIn + groups + 1, "\(groups * fanIn + groups + 1) outputs in \(engine.busCount) buses")
        // Each mixer right after its last input: depth first.
        for (i, inputs) in engine.inputIndices.enumerated() where !inputs.isEmpty {
            XCTAssertEqual(inputs.max(), i - 1, "step \(i) (\(engine.ids[i])) runs right after its last input")
        }
        let (separate, plain) = try render(json, frames: frames, block: 256, reuseBuses: false)
        XCTAssertEqual(plain.busCount, groups * fanIn + groups + 1)
        XCTAssertTrue(separate == out, "the same samples with a bus per output")
        XCTAssertGreaterThan(SignalAnalysis.rms(out[0]), 0.001)
    }

    func errors(_ json: String) -> [Diagnostic] {
        switch GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "g.json", directory: "/tmp") {
        case .success: XCTFail("should not validate"); return []
        case .failure(let e): return e.errors
        }
    }

    /// A 4,096-input mixer with one bad parameter, every input linked: one
    /// error, naming the mixer and the parameter.
    func testAMixerWithABadParameterIsOneError() throws {
        let n = 4096
        let links = (0..<n).map { #"{"from": "src", "to": "mix:in\#($0)"}"# } + [#"{"from": "mix", "to": "out"}"#]
        func json(_ params: String, channels: Int = 1) -> String {
            graph([#"{"id": "src", "type": "test-tone", "params": {"channels": \#(channels)}}"#,
                   #"{"id": "mix", "type": "mixer", "params": {"inputs": \#(n)\#(params)}}"#,
                   #"{"id": "out", "type": "null"}"#], links)
        }
        let gain = errors(json(#", "outputGain": 99"#))
        XCTAssertEqual(gain.count, 1, gain.prefix(5).map(\.description).joined(separator: "\n"))
        XCTAssertEqual(gain.first?.nodeID, "mix")
        XCTAssertEqual(gain.first?.pointer.display, "/nodes/1/params/outputGain")
        // Too few gains for the inputs: one error on "gains".
        let list = errors(json(#", "gains": [0, 0]"#))
        XCTAssertEqual(list.count, 1, list.prefix(5).map(\.description).joined(separator: "\n"))
        XCTAssertEqual(list.first?.pointer.display, "/nodes/1/params/gains")
        // Stereo into a mixer told to make 3 channels: one error for the
        // 4,096 inputs, naming the first and how many.
        let wide = errors(json(#", "channels": 3"#, channels: 2))
        XCTAssertEqual(wide.count, 1, wide.prefix(5).map(\.description).joined(separator: "\n"))
        XCTAssertEqual(wide.first?.nodeID, "mix")
        XCTAssertTrue(wide.first?.message.contains("in0 has 2 channels") ?? false, wide.first?.message ?? "")
        XCTAssertTrue(wide.first?.message.contains("(4096 inputs in all)") ?? false, wide.first?.message ?? "")
        // Over the limit: one error at "inputs".
        let many = errors(graph([#"{"id": "src", "type": "test-tone"}"#,
                                 #"{"id": "mix", "type": "mixer", "params": {"inputs": \#(MixerType.maximumInputs + 1)}}"#,
                                 #"{"id": "out", "type": "null"}"#], links))
        XCTAssertEqual(many.count, 1, many.prefix(5).map(\.description).joined(separator: "\n"))
        XCTAssertEqual(many.first?.pointer.display, "/nodes/1/params/inputs")
    }

    /// Buses by liveness, checked on the plan: outputs alive at once never
    /// share a bus, a bus read by a sink is never given again, and a gain
    /// writes in place only into a bus nobody reads after it.
    func testNoTwoLiveOutputsShareABus() throws {
        let json = graph([Self.tone,
                          #"{"id": "g0", "type": "gain"}"#, #"{"id": "g1", "type": "gain"}"#,
                          #"{"id": "split", "type": "split", "params": {"groups": [1, 1]}}"#,
                          #"{"id": "g2", "type": "gain"}"#, #"{"id": "g3", "type": "gain"}"#,
                          #"{"id": "m", "type": "mixer", "params": {"inputs": 3}}"#,
                          #"{"id": "n0", "type": "null"}"#, Self.capture],
                         [#"{"from": "src", "to": "g0"}"#, #"{"from": "src", "to": "g1"}"#,
                          #"{"from": "g0", "to": "n0"}"#, #"{"from": "g1", "to": "split"}"#,
                          #"{"from": "split:out0", "to": "g2"}"#, #"{"from": "split:out1", "to": "g3"}"#,
                          #"{"from": "g2", "to": "m:in0"}"#, #"{"from": "g3", "to": "m:in1"}"#,
                          #"{"from": "src", "to": "m:in2"}"#, #"{"from": "m", "to": "cap"}"#])
        let (out, engine) = try render(json, frames: 2048)
        let (separate, _) = try render(json, frames: 2048, reuseBuses: false)
        XCTAssertTrue(out == separate, "the same samples with a bus per output")
        // Each output's span: from its step to its last reader (a sink: the end).
        var spans: [(bus: UnsafeMutableRawPointer, from: Int, to: Int)] = []
        for (i, buses) in engine.portOutputs.enumerated() {
            for (p, bus) in buses.enumerated() {
                var last = i
                for (j, inputs) in engine.inputIndices.enumerated() {
                    for (k, src) in inputs.enumerated() where src == i && engine.inputPortIndices[j][k] == p {
                        last = engine.portOutputs[j].isEmpty ? Int.max : max(last, j)
                    }
                }
                spans.append((UnsafeMutableRawPointer(bus.channel(0)), i, last))
            }
        }
        for a in spans.indices {
            for b in spans.indices where a < b && spans[a].bus == spans[b].bus {
                let (x, y) = spans[a].from < spans[b].from ? (spans[a], spans[b]) : (spans[b], spans[a])
                XCTAssertLessThanOrEqual(x.to, y.from, "outputs at steps \(x.from) and \(y.from) share a bus while both are read")
            }
        }
        XCTAssertTrue(engine.sharesBuses)
        XCTAssertLessThan(engine.busCount, spans.count)
    }
}
