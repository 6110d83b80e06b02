import AudioGraph
import TestSupport
import XCTest

/// A source for port tests: channel c, frame t carries `c * 100_000 + t`
/// (exact in Float up to 2^24), for `frames` frames, then ends.
struct IndexSourceType: NodeType {
    let descriptor = NodeDescriptor(
        typeID: "index-source", role: .source, summary: "channel c, frame t = c·100000 + t (tests only)", inputs: .none,
        parameters: [.init("channels", .integer, range: 1...16, default: .number(6), "Channels."),
                     .init("frames", .integer, range: 1...1_000_000, default: .number(10_000), "Length.")])

    func resolve(_ c: ResolveContext) -> StreamFormat? {
        StreamFormat(channels: c.parameters.integer("channels") ?? 1, sampleRate: c.sampleRate)
    }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        IndexSource(length: c.parameters.integer("frames") ?? 0)
    }
}

final class IndexSource: RenderNode {
    let length: Int
    var position = 0
    var output: AudioBus?
    init(length: Int) { self.length = length }
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }
    func render(frames: Int) {
        guard let output else { return }
        let valid = max(0, min(frames, length - position))
        for c in 0..<output.channels {
            let p = output.channel(c)
            for i in 0..<frames { p[i] = i < valid ? Float(c * 100_000 + position + i) : 0 }
        }
        output.state = BusState(validFrames: valid, ended: position + frames >= length)
        position += frames
    }
}

/// A test processor with named inputs `in` and `side` and outputs `sum`
/// (the default) and `diff`: in ± side, channel by channel.
struct SumDiffType: NodeType {
    let descriptor = NodeDescriptor(
        typeID: "sum-diff", role: .processor, summary: "in + side, in − side (tests only)",
        inputs: .named([PortDescriptor("in", "the main signal"), PortDescriptor("side", "added and subtracted")]),
        outputs: .named([PortDescriptor("sum"), PortDescriptor("diff")], defaultPort: "sum"),
        parameters: [])

    func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let a = c.inputFormats[0], let b = c.inputFormats[1] else { return nil }
        guard a.channels == b.channels else {
            c.error(input: 1, "side has \(b.channels) channels, in has \(a.channels)")
            return nil
        }
        return a
    }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode { SumDiff() }
}

final class SumDiff: RenderNode {
    var ins: [AudioBus] = []
    var outs: [AudioBus] = []
    func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws {
        ins = inputs
        outs = outputs
    }
    func render(frames: Int) {
        for c in 0..<outs[0].channels {
            let a = ins[0].channel(c), b = ins[1].channel(c)
            let s = outs[0].channel(c), d = outs[1].channel(c)
            for i in 0..<frames { s[i] = a[i] + b[i]; d[i] = a[i] - b[i] }
        }
        let state = BusState.merging(ins)
        outs[0].state = state
        outs[1].state = state
    }
}

/// Several ports per node: `split` sample for sample, link errors at their
/// pointers, formats and latency compensation per (node, port).
final class PortTests: XCTestCase {
    func registry(_ stores: [String: CaptureStore]) -> NodeRegistry {
        var r = TestGraph.registryWithLatency(stores)
        r.register(IndexSourceType())
        r.register(SumDiffType())
        return r
    }

    func validate(_ json: String, _ stores: [String: CaptureStore] = [:]) -> Result<ValidatedGraph, GraphErrors> {
        GraphValidator(registry: registry(stores)).validate(bytes: Array(json.utf8), file: "inline.json", directory: "/tmp")
    }

    func errors(_ json: String) -> [Diagnostic] {
        guard case .failure(let e) = validate(json) else { XCTFail("validated"); return [] }
        return e.errors
    }

    static let splitGraph = """
        {"format": "agraph/1", "nodes": [
          {"id": "src", "type": "index-source", "params": {"channels": 6, "frames": 5000}},
          {"id": "split", "type": "split", "params": {"groups": [2, 1, 1, 2]}},
          {"id": "front", "type": "capture", "params": {"store": "front"}},
          {"id": "c", "type": "capture", "params": {"store": "c"}},
          {"id": "lfe", "type": "capture", "params": {"store": "lfe"}},
          {"id": "surr", "type": "capture", "params": {"store": "surr"}}],
         "links": [{"from": "src", "to": "split"}, {"from": "split:out0", "to": "front"}, {"from": "split:out1", "to": "c"},
                   {"from": "split:out2", "to": "lfe"}, {"from": "split:out3", "to": "surr"}]}
        """

    func testSplitCopiesEachChannelGroupExactlyAndEndsEveryOutput() throws {
        for block in [1, 7, 256, 1024] {
            let names = ["front", "c", "lfe", "surr"]
            var stores: [String: CaptureStore] = [:]
            for n in names { stores[n] = CaptureStore(capacityFrames: 8192) }
            let g = try validate(Self.splitGraph, stores).get()
            let split = try XCTUnwrap(g.node("split"))
            XCTAssertEqual(split.outputPorts, ["out0", "out1", "out2", "out3"])
            XCTAssertEqual(split.outputFormats.map(\.channels), [2, 1, 1, 2])
            XCTAssertEqual(split.outputFormats.map(\.layout), [.stereo, .mono, .mono, .stereo])
            XCTAssertEqual(g.node("lfe")?.inputSourcePorts, [2])
            let compiled = try GraphCompiler.compile(g, maxFrames: block)
            let result = OfflineRenderer(engine: compiled.engine).run(maxFrames: 20_000)
            XCTAssertEqual(result.ending, .endOfStream, "every output port ends with the input (block \(block))")
            let firstChannel = ["front": 0, "c": 2, "lfe": 3, "surr": 4]
            for n in names {
                let store = try XCTUnwrap(stores[n])
                XCTAssertEqual(store.frames, 5000, "\(n), block \(block)")
                XCTAssertTrue(store.ended)
                for k in 0..<store.channels.count {
                    let s = store.samples(k)
                    let base = Float((firstChannel[n]! + k) * 100_000)
                    for t in 0..<s.count where s[t] != base + Float(t) {
                        return XCTFail("\(n) channel \(k) frame \(t): \(s[t]), expected \(base + Float(t)) (block \(block))")
                    }
                }
            }
        }
    }

    func testSplitLayoutsAndDroppedChannels() throws {
        let json = Self.splitGraph.replacingOccurrences(of: #""groups": [2, 1, 1, 2]"#,
                                                        with: #""groups": [2, 1, 1, 1], "layouts": ["binaural", "mono", "discrete", "mono"]"#)
        let g = try validate(json, ["front": CaptureStore(capacityFrames: 1), "c": CaptureStore(capacityFrames: 1),
                                    "lfe": CaptureStore(capacityFrames: 1), "surr": CaptureStore(capacityFrames: 1)]).get()
        XCTAssertEqual(g.node("split")?.outputFormats.map(\.layout), [.binaural, .mono, .discrete, .mono])
    }

    func testSplitParameterErrorsAtTheirPointers() {
        func one(_ params: String, pointer: String, _ phrases: [String]) {
            let json = Self.splitGraph.replacingOccurrences(of: #""groups": [2, 1, 1, 2]"#, with: params)
            let e = errors(json)
            XCTAssertTrue(e.contains { d in d.pointer.description == pointer && d.nodeID == "split" && d.location != nil
                && phrases.allSatisfy { d.message.contains($0) } }, e.map(\.description).joined(separator: "\n"))
        }
        one(#""groups": [4, 2, 1, 1]"#, pointer: "/nodes/1/params/groups", ["take 8 channels", "the input has 6", "L R C LFE Ls Rs"])
        one(#""groups": [2, 1.5, 1, 1]"#, pointer: "/nodes/1/params/groups/1", ["whole number"])
        one(#""groups": [2, 1, 1, 2], "layouts": ["stereo"]"#, pointer: "/nodes/1/params/layouts", ["1 layout for 4 groups"])
        one(#""groups": [2, 1, 1, 2], "layouts": ["stereo", "mono", "mono", "5.1"]"#, pointer: "/nodes/1/params/layouts/3", ["\"5.1\" has 6 channels"])
        one(#""groups": [2, 1, 1, 2], "layouts": ["stero", "mono", "mono", "stereo"]"#, pointer: "/nodes/1/params/layouts/0", ["did you mean \"stereo\""])
    }

    func testLinkPortErrorsListThePortsWithDidYouMean() {
        let base = Self.splitGraph
        var e = errors(base.replacingOccurrences(of: #"{"from": "split:out1", "to": "c"}"#, with: #"{"from": "split:otu1", "to": "c"}"#))
        XCTAssertTrue(e.contains { $0.pointer.description == "/links/2/from" && $0.nodeID == "split"
            && $0.message.contains("no output port 'otu1'") && $0.message.contains("did you mean 'out1'?")
            && $0.message.contains("out0, out1, out2, out3") }, e.map(\.description).joined(separator: "\n"))
        e = errors(base.replacingOccurrences(of: #"{"from": "split:out1", "to": "c"}"#, with: #"{"from": "split", "to": "c"}"#))
        XCTAssertTrue(e.contains { $0.pointer.description == "/links/2/from" && $0.message.contains("several outputs (out0, out1, out2, out3)")
            && $0.message.contains("\"split:out0\"") }, e.map(\.description).joined(separator: "\n"))
        // Named inputs: the unknown one, with a hint and the list.
        let named = """
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "index-source", "params": {"channels": 1}},
              {"id": "b", "type": "index-source", "params": {"channels": 1}},
              {"id": "sd", "type": "sum-diff"},
              {"id": "cap", "type": "capture"}, {"id": "cap2", "type": "capture"}],
             "links": [{"from": "a", "to": "sd:in"}, {"from": "b", "to": "sd:sidee"}, {"from": "sd", "to": "cap"}, {"from": "sd:diff", "to": "cap2"}]}
            """
        e = errors(named)
        XCTAssertTrue(e.contains { $0.pointer.description == "/links/1/to" && $0.nodeID == "sd"
            && $0.message.contains("no input port 'sidee'; did you mean 'side'? its inputs: in, side") },
                      e.map(\.description).joined(separator: "\n"))
        XCTAssertFalse(e.contains { $0.message.contains("several outputs") }, "sum-diff declares a default output")
    }

    func testNamedPortsFlowWithTheDefaultOutputAndPerPortWarnings() throws {
        let cap = CaptureStore(capacityFrames: 4096)
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "index-source", "params": {"channels": 2, "frames": 3000}},
              {"id": "split", "type": "split", "params": {"groups": [1, 1]}},
              {"id": "sd", "type": "sum-diff"},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "split"}, {"from": "split:out0", "to": "sd:in"}, {"from": "split:out1", "to": "sd:side"},
                       {"from": "sd", "to": "cap"}]}
            """
        let g = try validate(json, ["main": cap]).get()
        XCTAssertEqual(g.links.map { "\($0.from):\($0.fromPort)->\($0.to):\($0.toPort)" },
                       ["a:out->split:in", "split:out0->sd:in", "split:out1->sd:side", "sd:sum->cap:in"])
        XCTAssertTrue(g.warnings.contains { $0.nodeID == "sd" && $0.message.contains("output 'sd:diff' of 'sd' goes nowhere") },
                      g.warnings.map(\.description).joined(separator: "\n"))
        let compiled = try GraphCompiler.compile(g, maxFrames: 100)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 5000)
        let s = cap.samples(0)
        XCTAssertEqual(s.count, 3000)
        for t in 0..<s.count where s[t] != Float(2 * t + 100_000) { return XCTFail("frame \(t): \(s[t])") }
    }

    func testCycleThroughPortsIsReported() {
        let e = errors("""
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "index-source", "params": {"channels": 1}},
              {"id": "sd", "type": "sum-diff"}, {"id": "split", "type": "split", "params": {"groups": [1]}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "sd:in"}, {"from": "split:out0", "to": "sd:side"}, {"from": "sd:sum", "to": "split"},
                       {"from": "sd:diff", "to": "cap"}]}
            """)
        XCTAssertTrue(e.contains { $0.message.contains("cycle") && $0.message.contains("sd") && $0.message.contains("split") },
                      e.map(\.description).joined(separator: "\n"))
    }

    /// Paths of different latency from two ports of one node meet: the
    /// shorter is delayed, per (step, port).
    func testLatencyCompensationPerOutputPort() throws {
        let cap = CaptureStore(capacityFrames: 12_000)
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "index-source", "params": {"channels": 2, "frames": 8000}},
              {"id": "split", "type": "split", "params": {"groups": [1, 1]}},
              {"id": "late", "type": "fixed-latency", "params": {"frames": 300}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "a", "to": "split"}, {"from": "split:out0", "to": "late"}, {"from": "late", "to": "mix:in0"},
                       {"from": "split:out1", "to": "mix:in1"}, {"from": "mix", "to": "cap"}]}
            """
        let g = try validate(json, ["main": cap]).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 128)
        XCTAssertEqual(compiled.engine.compensationDelays.map { "\($0.node):\($0.port)=\($0.frames)" }, ["mix:1=300"])
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 20_000)
        let s = cap.samples(0)
        // fixed-latency (a test node) ends at a block boundary after its delay.
        XCTAssertGreaterThanOrEqual(s.count, 8300, "the delayed end of stream")
        for t in 0..<8300 {
            let expected: Float = t < 300 ? 0 : Float(2 * (t - 300) + 100_000)
            if s[t] != expected { return XCTFail("frame \(t): \(s[t]), expected \(expected)") }
        }
    }

    func testDescribeListsPortsAndDotDrawsThem() throws {
        let text = Describe.nodeType(SumDiffType().descriptor)
        XCTAssertTrue(text.contains("inputs: in, side   outputs: sum, diff; default sum"), text)
        XCTAssertTrue(text.contains("input side: added and subtracted"), text)
        XCTAssertTrue(Describe.nodeType(try XCTUnwrap(NodeRegistry.builtIn["split"]).descriptor).contains("outputs: out0 … outN-1 (N = groups)"))
        let stores = ["front", "c", "lfe", "surr"].reduce(into: [String: CaptureStore]()) { $0[$1] = CaptureStore(capacityFrames: 1) }
        let dot = Describe.dot(try validate(Self.splitGraph, stores).get())
        XCTAssertTrue(dot.contains(#"{<o_out0> out0|<o_out1> out1|<o_out2> out2|<o_out3> out3}"#), dot)
        XCTAssertTrue(dot.contains(#""split":"o_out2" -> "lfe" [label="1 ch mono"]"#), dot)
        XCTAssertTrue(dot.contains(#""src" -> "split" [label="6 ch 5.1"]"#), dot)
    }
}
