import XCTest
import AudioGraph
import TestSupport

/// gain, mixer, format-tag and live parameter changes, judged by the signal.
final class ProcessingTests: XCTestCase {
    let rate = 48000.0

    func testMixerOutputIsTheExactWeightedSum() throws {
        let a = #"{"waveform": "sine", "frequency": 440, "level": -6, "channels": 2}"#
        let b = #"{"waveform": "white", "level": -12, "channels": 2, "seed": 9}"#
        let c = #"{"waveform": "saw", "frequency": 97, "level": -10, "channels": 1}"#
        let mixed = try TestGraph.render("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": \(a)},
              {"id": "b", "type": "test-tone", "params": \(b)},
              {"id": "c", "type": "test-tone", "params": \(c)},
              {"id": "m", "type": "mixer", "params": {"inputs": 3, "gains": [0, -6, 3.5], "outputGain": -1}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "m:in0"}, {"from": "b", "to": "m:in1"}, {"from": "c", "to": "m:in2"},
                       {"from": "m", "to": "cap"}]}
            """, seconds: 1)
        let sa = try TestGraph.render(TestGraph.single("test-tone", a), seconds: 1)
        let sb = try TestGraph.render(TestGraph.single("test-tone", b), seconds: 1)
        let sc = try TestGraph.render(TestGraph.single("test-tone", c), seconds: 1)
        let g = [0.0, -6, 3.5].map { Float(Decibels.toLinear($0 - 1)) }
        XCTAssertEqual(mixed.count, 2)
        for ch in 0..<2 {
            for i in 0..<mixed[ch].count {
                // The mixer's own order of operations: start at 0, add each input × gain.
                var expected: Float = 0
                expected += sa[ch][i] * g[0]
                expected += sb[ch][i] * g[1]
                expected += sc[0][i] * g[2]   // mono input spread to both channels
                if mixed[ch][i] != expected {
                    XCTFail("channel \(ch) frame \(i): \(mixed[ch][i]) != \(expected)")
                    return
                }
            }
        }
    }

    /// Nine inputs (stereo and mono, one muted): the steady sum goes four
    /// inputs per pass (the first pass writes the output, the next adds)
    /// and the rest one or two at a time, and still equals adding each
    /// input × gain, in order, to 0, sample for sample.
    func testMixerOfNineInputsIsTheExactWeightedSumInOrder() throws {
        let tones = (0..<9).map { i -> String in
            let waveform = ["sine", "white", "saw", "square"][i % 4]
            let seed = waveform == "white" ? #", "seed": \#(i + 1)"# : ""
            return #"{"waveform": "\#(waveform)", "frequency": \#(97 + 61 * i), "level": \#(-3 - i), "channels": \#(i % 3 == 2 ? 1 : 2)\#(seed)}"#
        }
        let gainsDB = [0.0, -6, 3.5, -1, -20, 2, -3, 0.5, -9]
        let muted = 5
        let nodes = tones.enumerated().map { #"{"id": "t\#($0.offset)", "type": "test-tone", "params": \#($0.element)}"# }
        let links = (0..<9).map { #"{"from": "t\#($0)", "to": "m:in\#($0)"}"# }
        let mutes = (0..<9).map { $0 == muted ? "true" : "false" }.joined(separator: ", ")
        let mixed = try TestGraph.render("""
            {"format": "agraph/1", "nodes": [
              \(nodes.joined(separator: ",\n  ")),
              {"id": "m", "type": "mixer", "params": {"inputs": 9, "channels": 2, "gains": [\(gainsDB.map { "\($0)" }.joined(separator: ", "))],
                                                   "mutes": [\(mutes)], "outputGain": -2}},
              {"id": "cap", "type": "capture"}],
             "links": [\(links.joined(separator: ", ")), {"from": "m", "to": "cap"}]}
            """, seconds: 0.5)
        let singles = try tones.map { try TestGraph.render(TestGraph.single("test-tone", $0), seconds: 0.5) }
        let g = gainsDB.map { Float(Decibels.toLinear($0 - 2)) }
        XCTAssertEqual(mixed.count, 2)
        XCTAssertEqual(mixed[0].count, 24000)
        for ch in 0..<2 {
            for i in 0..<mixed[ch].count {
                var expected: Float = 0
                for k in 0..<9 where k != muted {
                    expected += singles[k][singles[k].count == 1 ? 0 : ch][i] * g[k]
                }
                if mixed[ch][i] != expected || mixed[ch][i].sign != expected.sign {
                    XCTFail("channel \(ch) frame \(i): \(mixed[ch][i]) != \(expected)")
                    return
                }
            }
        }
    }

    /// `channels` sets the output width: mono inputs are summed once and
    /// the same sum goes to every channel; a stereo input is refused.
    func testMixerChannelsSpreadsMonoInputsToEveryChannel() throws {
        let a = #"{"waveform": "sine", "frequency": 440, "level": -6, "channels": 1}"#
        let b = #"{"waveform": "saw", "frequency": 97, "level": -10, "channels": 1}"#
        let mixed = try TestGraph.render("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": \(a)},
              {"id": "b", "type": "test-tone", "params": \(b)},
              {"id": "m", "type": "mixer", "params": {"inputs": 2, "gains": [-3, 1.5], "channels": 3}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "m:in0"}, {"from": "b", "to": "m:in1"}, {"from": "m", "to": "cap"}]}
            """, seconds: 0.5)
        let sa = try TestGraph.render(TestGraph.single("test-tone", a), seconds: 0.5)[0]
        let sb = try TestGraph.render(TestGraph.single("test-tone", b), seconds: 0.5)[0]
        let g = [-3.0, 1.5].map { Float(Decibels.toLinear($0)) }
        XCTAssertEqual(mixed.count, 3, "three output channels")
        for ch in 0..<3 {
            XCTAssertEqual(mixed[ch].count, 24000)
            for i in 0..<mixed[ch].count {
                var expected: Float = 0
                expected += sa[i] * g[0]
                expected += sb[i] * g[1]
                if mixed[ch][i] != expected {
                    XCTFail("channel \(ch) frame \(i): \(mixed[ch][i]) != \(expected)")
                    return
                }
            }
        }
        XCTAssertThrowsError(try TestGraph.render("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": {"channels": 2}},
              {"id": "m", "type": "mixer", "params": {"inputs": 1, "channels": 3}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "m:in0"}, {"from": "m", "to": "cap"}]}
            """, seconds: 0.1)) { error in
            XCTAssertTrue("\(error)".contains("\"channels\" is 3"), "\(error)")
        }
    }

    func testMixerMutesAndEndsWithItsLongestInput() throws {
        let out = try TestGraph.render("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": {"duration": 0.25, "channels": 1}},
              {"id": "b", "type": "test-tone", "params": {"duration": 0.5, "channels": 1, "frequency": 1000}},
              {"id": "m", "type": "mixer", "params": {"inputs": 2, "mutes": [false, true]}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "m:in0"}, {"from": "b", "to": "m:in1"}, {"from": "m", "to": "cap"}]}
            """, seconds: 5)[0]
        XCTAssertEqual(out.count, 24000, "ends with the longer input")
        XCTAssertEqual(SignalAnalysis.frequency(of: Array(out[0..<12000]), sampleRate: rate), 440, accuracy: 0.05, "muted input absent")
        XCTAssertTrue(out[12000...].allSatisfy { $0 == 0 }, "silent after the unmuted input ends")
    }

    func testGainChangesLevelByItsDecibels() throws {
        for dB in [-6.0, -20, 3] {
            let out = try TestGraph.render("""
                {"format": "agraph/1", "nodes": [
                  {"id": "t", "type": "test-tone", "params": {"level": -12, "channels": 1}},
                  {"id": "g", "type": "gain", "params": {"gain": \(dB)}},
                  {"id": "cap", "type": "capture"}],
                 "links": [{"from": "t", "to": "g"}, {"from": "g", "to": "cap"}]}
                """, seconds: 1)[0]
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(out), -12 + dB, accuracy: 0.01)
        }
    }

    func testFormatTagPassesSamplesUnchanged() throws {
        let params = #"{"waveform": "white", "channels": 2}"#
        let tagged = try TestGraph.render("""
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": \(params)},
              {"id": "tag", "type": "format-tag", "params": {"layout": "binaural"}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "t", "to": "tag"}, {"from": "tag", "to": "cap"}]}
            """, seconds: 0.5)
        let plain = try TestGraph.render(TestGraph.single("test-tone", params), seconds: 0.5)
        for c in 0..<2 { XCTAssertNil(firstMismatch(tagged[c], plain[c])) }
        let g = try TestGraph.validate("""
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone"},
              {"id": "tag", "type": "format-tag", "params": {"layout": "binaural"}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "t", "to": "tag"}, {"from": "tag", "to": "cap"}]}
            """, stores: ["main": CaptureStore(capacityFrames: 1)])
        XCTAssertEqual(g.node("tag")?.outputFormat?.layout, .binaural, "the tag travels with the stream")
    }

    /// A 20 dB gain change while rendering: applied at the next block and
    /// smoothed, so the largest sample-to-sample step stays that of the
    /// tone itself, far below the jump an unsmoothed change would make.
    func testLiveGainChangeIsSmoothed() throws {
        let store = CaptureStore(capacityFrames: 48000)
        let g = try TestGraph.validate("""
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone", "params": {"frequency": 50, "level": 0, "channels": 1}},
              {"id": "g", "type": "gain", "params": {"gain": -20}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "t", "to": "g"}, {"from": "g", "to": "cap"}]}
            """, stores: ["main": store])
        let compiled = try GraphCompiler.compile(g, maxFrames: 256)
        let engine = compiled.engine
        for _ in 0..<40 { engine.render(frames: 256) }    // 10240 frames at -20 dB
        try compiled.set("g.gain", 0)                      // +20 dB
        for _ in 0..<40 { engine.render(frames: 256) }
        let out = store.samples(0)
        XCTAssertEqual(out.count, 20480)
        let before = Array(out[0..<10240]), after = Array(out[12000...])
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(before), -20, accuracy: 0.05)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(after), 0, accuracy: 0.05)
        var maxStep: Float = 0
        for i in 1..<out.count { maxStep = max(maxStep, abs(out[i] - out[i - 1])) }
        // A 50 Hz full-scale sine moves at most 2π·50/48000 ≈ 0.0065 per sample.
        let natural = Float(2 * Double.pi * 50 / 48000)
        XCTAssertLessThan(maxStep, natural * 1.1, "no click: steps stay within the tone's own slope")
        // Change applied at the block boundary, not before: the last 5 cycles before it.
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(Array(out[5440..<10240])), -20, accuracy: 0.05)
        XCTAssertGreaterThan(SignalAnalysis.peak(Array(out[10240..<10500])), SignalAnalysis.peak(Array(out[9000..<10240])),
                             "louder right after the boundary")
    }

    func testLiveMixerElementAndToneParameters() throws {
        let store = CaptureStore(capacityFrames: 96000)
        let g = try TestGraph.validate("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone", "params": {"frequency": 500, "channels": 1, "level": -6}},
              {"id": "b", "type": "test-tone", "params": {"frequency": 700, "channels": 1, "level": -6}},
              {"id": "m", "type": "mixer", "params": {"inputs": 2, "mutes": [false, true]}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "m:in0"}, {"from": "b", "to": "m:in1"}, {"from": "m", "to": "cap"}]}
            """, stores: ["main": store])
        let compiled = try GraphCompiler.compile(g, maxFrames: 1024)
        for _ in 0..<24 { compiled.engine.render(frames: 1000) }
        try compiled.set("m.mutes[0]", 1)
        try compiled.set("m.mutes[1]", 0)
        try compiled.set("b.frequency", 1500)
        for _ in 0..<24 { compiled.engine.render(frames: 1000) }
        let out = store.samples(0)
        XCTAssertEqual(SignalAnalysis.frequency(of: Array(out[0..<24000]), sampleRate: rate), 500, accuracy: 0.05)
        XCTAssertEqual(SignalAnalysis.frequency(of: Array(out[26000...]), sampleRate: rate), 1500, accuracy: 0.15)
        // Bad addresses are refused with a reason, and nothing is queued.
        XCTAssertThrowsError(try compiled.set("m.gains", 0)) { XCTAssertTrue("\($0)".contains("m.gains[0")) }
        XCTAssertThrowsError(try compiled.set("m.inputs", 3)) { XCTAssertTrue("\($0)".contains("cannot change while running")) }
        XCTAssertThrowsError(try compiled.set("x.gain", 0)) { XCTAssertTrue("\($0)".contains("no node 'x'")) }
        XCTAssertThrowsError(try compiled.set("a.level", 12)) { XCTAssertTrue("\($0)".contains("out of range")) }
        XCTAssertThrowsError(try compiled.set("m.mutes[7]", 1))
    }
}

/// Nothing is virtualized twice: a node that virtualizes refuses a stream
/// tagged binaural, whoever tagged it.
final class VirtualizationTests: XCTestCase {
    /// A stand-in for a binaural renderer: only its descriptor matters here.
    struct FakeVirtualizer: NodeType {
        let descriptor = NodeDescriptor(typeID: "test-virtualizer", role: .processor, summary: "test", inputs: .single,
                                        parameters: [], virtualizes: true)
        func resolve(_ c: ResolveContext) -> StreamFormat? { c.input.map { StreamFormat(channels: 2, sampleRate: $0.sampleRate, layout: .binaural) } }
        func makeNode(_ c: InstanceContext) throws -> any RenderNode { throw EngineError("not for rendering") }
    }

    func graph(layout: String) -> String {
        """
        {"format": "agraph/1", "nodes": [
          {"id": "t", "type": "test-tone"},
          {"id": "tag", "type": "format-tag", "params": {"layout": "\(layout)"}},
          {"id": "v", "type": "test-virtualizer"},
          {"id": "n", "type": "null"}],
         "links": [{"from": "t", "to": "tag"}, {"from": "tag", "to": "v"}, {"from": "v", "to": "n"}]}
        """
    }

    func testAVirtualizerRefusesBinauralInput() throws {
        var registry = NodeRegistry.builtIn
        registry.register(FakeVirtualizer())
        let validator = GraphValidator(registry: registry)
        guard case .failure(let errors) = validator.validate(bytes: Array(graph(layout: "binaural").utf8), file: "g.json", directory: "/tmp") else {
            return XCTFail("binaural into a virtualizer must be refused")
        }
        XCTAssertEqual(errors.errors.first?.pointer.description, "/links/1")
        XCTAssertTrue(errors.errors.first?.message.contains("virtualize twice") ?? false, "\(errors)")
        XCTAssertNoThrow(try validator.validate(bytes: Array(graph(layout: "stereo").utf8), file: "g.json", directory: "/tmp").get())
    }
}
