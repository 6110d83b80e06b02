import XCTest
import AudioGraph
import AudioGraphPlugins
import AGraphPluginKit
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Several ports through the plugin ABI (1.2): the example plugin's
/// `com.example.ducker` has inputs `in` and `sidechain`; it is loaded,
/// described, validated (port names, channel rules, its check), rendered
/// (the gain follows the sidechain) and walked by `agraph check-plugin`.
final class DuckerTests: XCTestCase {
    static let ducker = "com.example.ducker"
    /// The AGRAPH_PLUGIN_PATH folder, holding the example plugin.
    var folder: PluginFolder!

    override func setUpWithError() throws {
        folder = try PluginFolder("agraph-ducker")
        try folder.install("libAGraphExamplePlugin.so")
    }

    override func tearDown() {
        folder = nil
    }

    func registry(_ stores: [String: CaptureStore] = [:]) -> NodeRegistry {
        TestGraph.pluginRegistry(stores).registry
    }

    /// main (1 kHz, −6 dBFS, stereo, 1 s) → duck:in; sidechain tone → duck:sidechain; duck → cap.
    func graph(sidechain: String, duckParams: String = "{}", sideLink: String = "duck:sidechain") -> String {
        #"""
        {"format": "agraph/1", "nodes": [
          {"id": "main", "type": "test-tone", "params": {"frequency": 1000, "level": -6, "channels": 2, "duration": 1}},
          {"id": "side", "type": "test-tone", "params": \#(sidechain)},
          {"id": "duck", "type": "\#(Self.ducker)", "params": \#(duckParams)},
          {"id": "cap", "type": "capture"}],
         "links": [{"from": "main", "to": "duck:in"}, {"from": "side", "to": "\#(sideLink)"}, {"from": "duck", "to": "cap"}]}
        """#
    }

    func render(_ json: String, frames: Int = 96_000) throws -> CaptureStore {
        let store = CaptureStore(capacityFrames: frames + 1024)
        let g = try folder.validate(json, registry(["main": store])).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: frames)
        return store
    }

    func errors(_ json: String) -> [Diagnostic] {
        switch folder.validate(json, registry(["main": CaptureStore(capacityFrames: 1)])) {
        case .success: XCTFail("validated"); return []
        case .failure(let e): return e.errors
        }
    }

    func testTheDuckerIsDescribedWithBothInputs() throws {
        let type = try XCTUnwrap(registry()[Self.ducker])
        XCTAssertEqual(type.descriptor.inputPortNames(NodeParameters()), ["in", "sidechain"])
        XCTAssertEqual(type.descriptor.outputPortNames(NodeParameters()), ["out"])
        let text = Describe.nodeType(type.descriptor)
        XCTAssertTrue(text.contains("inputs: in, sidechain   output: out"), text)
    }

    func testASilentSidechainLeavesTheInputSampleForSample() throws {
        let out = try render(graph(sidechain: #"{"waveform": "silence", "channels": 1}"#))
        let reference = try TestGraph.render(TestGraph.single("test-tone", #"{"frequency": 1000, "level": -6, "channels": 2, "duration": 1}"#), seconds: 2, blockFrames: 512)
        XCTAssertEqual(out.frames, 48_000, "the output follows the main input's length, not the endless sidechain's")
        XCTAssertTrue(out.ended)
        for c in 0..<2 {
            let s = out.samples(c)
            XCTAssertEqual(s.count, reference[c].count)
            if let t = s.indices.first(where: { s[$0] != reference[c][$0] }) {
                XCTFail("channel \(c) frame \(t): \(s[t]), the input has \(reference[c][t])")
            }
        }
    }

    func testTheGainFollowsTheSidechainLevel() throws {
        // Sidechain loud (−6 dBFS) for 0.5 s, then it ends: ducked by 12 dB,
        // then back to 0 dB once its envelope has fallen.
        let out = try render(graph(sidechain: #"{"frequency": 200, "level": -6, "channels": 1, "duration": 0.5}"#,
                                   duckParams: #"{"threshold": -30, "depth": 12, "time": 0.005, "release": 0.05}"#))
        XCTAssertEqual(out.frames, 48_000)
        let a = SignalAnalysis.linear(fromDBFS: -6)
        func level(_ range: Range<Int>) -> Double {
            SignalAnalysis.goertzelMagnitude(Array(out.samples(0)[range]), sampleRate: 48000, frequency: 1000)
        }
        XCTAssertEqual(level(4800..<24_000), a * Decibels.toLinear(-12), accuracy: 0.005, "ducked by 12 dB while the sidechain plays")
        XCTAssertEqual(level(38_400..<48_000), a, accuracy: 0.005, "back to the input's level after the sidechain ended")
        // Deeper ducking, live.
        let deeper = try render(graph(sidechain: #"{"frequency": 200, "level": -6, "channels": 1}"#,
                                      duckParams: #"{"depth": 24, "time": 0.005}"#))
        XCTAssertEqual(SignalAnalysis.goertzelMagnitude(Array(deeper.samples(1)[9600..<48_000]), sampleRate: 48000, frequency: 1000),
                       a * Decibels.toLinear(-24), accuracy: 0.003)
    }

    func testPortErrorsAtTheirPointers() {
        var e = errors(graph(sidechain: #"{"channels": 1}"#, sideLink: "duck:sidechian"))
        XCTAssertTrue(e.contains { $0.pointer.description == "/links/1/to" && $0.nodeID == "duck"
            && $0.message.contains("no input port 'sidechian'; did you mean 'sidechain'? its inputs: in, sidechain") },
                      e.map(\.description).joined(separator: "\n"))
        e = errors(graph(sidechain: #"{"channels": 1}"#, sideLink: "duck"))
        XCTAssertTrue(e.contains { $0.pointer.description == "/links/1/to" && $0.message.contains("several inputs (in, sidechain)") },
                      e.map(\.description).joined(separator: "\n"))
        // The plugin's check: a 3-channel sidechain for a stereo input.
        e = errors(graph(sidechain: #"{"channels": 3}"#))
        XCTAssertTrue(e.contains { $0.pointer.description == "/nodes/2" && $0.nodeID == "duck"
            && $0.message.contains("the sidechain has 3 channels") }, e.map(\.description).joined(separator: "\n"))
    }

    func testUnconnectedSidechainIsAnError() {
        let json = #"""
        {"format": "agraph/1", "nodes": [
          {"id": "main", "type": "test-tone", "params": {"duration": 1}},
          {"id": "duck", "type": "com.example.ducker"}, {"id": "cap", "type": "capture"}],
         "links": [{"from": "main", "to": "duck:in"}, {"from": "duck", "to": "cap"}]}
        """#
        let e = errors(json)
        XCTAssertTrue(e.contains { $0.pointer.description == "/nodes/1" && $0.message.contains("input port 'sidechain' is not connected") },
                      e.map(\.description).joined(separator: "\n"))
    }

    func testProcessAllocatesNothingWithTwoInputs() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let store = CaptureStore(capacityFrames: 2048)
        let json = graph(sidechain: #"{"frequency": 200, "channels": 1}"#).replacingOccurrences(of: #", "duration": 1"#, with: "")
        let g = try folder.validate(json, registry(["main": store])).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 256)
        compiled.engine.render(frames: 256)
        let change = try compiled.change("duck.depth", 20)
        let sizes = [64, 256, 1]
        // Posting is a control thread's work: not counted; applying it is.
        let allocations = MallocCounter.countRendering(compiled.engine, blocks: 2000, sizes: sizes, changes: [change], every: 1000)
        XCTAssertEqual(allocations, 0)
    }

    func testCheckPluginWalksTheDuckersPorts() throws {
        let report = PluginConformance.check(path: folder.file("libAGraphExamplePlugin.so"), countAllocations: { body in
            MallocCounter.isAvailable ? MallocCounter.count(body) : { body(); return nil }()
        })
        XCTAssertTrue(report.passed, report.failures.joined(separator: "\n"))
        XCTAssertTrue(report.lines.contains { $0.contains("com.example.ducker (realtime; ports in: in, sidechain, out: out)") },
                      report.lines.joined(separator: "\n"))
    }
}
