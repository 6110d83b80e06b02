import XCTest
import AudioGraph
import AudioGraphPlugins
import AGraphPluginKit
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Node plugins end to end: the example plugin loaded from
/// AGRAPH_PLUGIN_PATH, validated, rendered, changed live, counted for
/// allocations; and every way a plugin can fail to load, reported.
final class PluginTests: XCTestCase {
    static let ringModulator = "com.example.ring-modulator"

    var folder: TemporaryDirectory!
    var savedPluginPath: String?

    /// The folder SwiftPM built the plugin products into: the test runner's.
    var buildFolder: String { PluginCatalog.defaultFolders(environment: nil).build.first ?? "." }

    override func setUpWithError() throws {
        folder = try TemporaryDirectory("agraph-plugins")
        savedPluginPath = getenv("AGRAPH_PLUGIN_PATH").map { String(cString: $0) }
        setenv("AGRAPH_PLUGIN_PATH", folder.path, 1)
    }

    override func tearDown() {
        // Tests in other targets (the CLI ones) inherit the environment.
        if let savedPluginPath { setenv("AGRAPH_PLUGIN_PATH", savedPluginPath, 1) } else { unsetenv("AGRAPH_PLUGIN_PATH") }
        folder = nil
    }

    /// Copies a built plugin product into the AGRAPH_PLUGIN_PATH folder.
    func install(_ library: String) throws {
        let source = buildFolder + "/" + library
        guard FileManager.default.fileExists(atPath: source) else {
            throw XCTSkip("\(library) is not built in \(buildFolder); build with --build-tests")
        }
        try FileManager.default.copyItem(atPath: source, toPath: folder.file(library))
    }

    func registry(_ stores: [String: CaptureStore] = [:]) -> (registry: NodeRegistry, report: PluginCatalog) {
        NodeRegistry.withPlugins(TestGraph.registry(stores))
    }

    /// test-tone (1 kHz, −6 dBFS, stereo) → ring modulator → capture.
    func graph(frequency: Double = 300, mix: Double = 1, seconds: Double? = 1) -> String {
        let duration = seconds.map { #", "duration": \#($0)"# } ?? ""
        return #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -6, "channels": 2\#(duration)}},
                   {"id": "rm", "type": "\#(Self.ringModulator)", "params": {"frequency": \#(frequency), "mix": \#(mix)}},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "tone", "to": "rm"}, {"from": "rm", "to": "cap"}]}
        """#
    }

    func validate(_ json: String, _ registry: NodeRegistry) -> Result<ValidatedGraph, GraphErrors> {
        GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: "inline.json", directory: folder.path)
    }

    func amplitude(_ s: [Float], _ hz: Double) -> Double {
        SignalAnalysis.goertzelMagnitude(s, sampleRate: 48000, frequency: hz)
    }

    // MARK: - Loading

    func testExamplePluginLoadsFromPluginPathWithItsParameters() throws {
        try install("libAGraphExamplePlugin.so")
        let (registry, report) = registry()
        XCTAssertEqual(report.searchedFolders.first, folder.path, "AGRAPH_PLUGIN_PATH is searched first")
        XCTAssertTrue(report.searchedFolders.contains(buildFolder), "then the build's own products")
        let plugin = try XCTUnwrap(report.plugins.first { $0.typeIDs.contains(Self.ringModulator) })
        XCTAssertEqual(plugin.path, (realpath(folder.path, nil).map { String(cString: $0) } ?? folder.path) + "/libAGraphExamplePlugin.so")
        XCTAssertEqual(plugin.abiMajor, PluginCatalog.abiMajor)
        XCTAssertEqual(plugin.name, "AudioGraph example plugin")

        let type = try XCTUnwrap(registry[Self.ringModulator])
        let d = type.descriptor
        XCTAssertEqual(d.role, .processor)
        XCTAssertEqual(d.origin, plugin.path)
        XCTAssertEqual(d.parameters.map(\.name), ["frequency", "mix", "carrier"])
        let frequency = try XCTUnwrap(d.parameter(named: "frequency"))
        XCTAssertEqual(frequency.type, .number)
        XCTAssertEqual(frequency.range, 0.1...20_000)
        XCTAssertEqual(frequency.defaultValue, .number(440))
        XCTAssertEqual(frequency.unit, "Hz")
        XCTAssertTrue(frequency.live)
        let carrier = try XCTUnwrap(d.parameter(named: "carrier"))
        XCTAssertEqual(carrier.type, .choice(["sine", "square"]))
        XCTAssertEqual(carrier.defaultValue, .string("sine"))
        XCTAssertFalse(carrier.live)
        XCTAssertTrue(Describe.nodeType(d).contains("libAGraphExamplePlugin.so"))
        XCTAssertTrue(Describe.nodeList(registry).contains(Self.ringModulator))
    }

    func testBuildFolderIsSearchedWithoutThePluginPathAndSkipsTestFixtures() throws {
        let catalog = PluginCatalog.load(pluginPath: [], buildFolders: [buildFolder])
        XCTAssertTrue(catalog.types.contains { $0.descriptor.typeID == Self.ringModulator }, catalog.note)
        XCTAssertFalse(catalog.failures.contains { $0.path.contains("libAGraphTest") }, catalog.note)
    }

    // MARK: - Rendering

    func testGraphValidatesAndRendersWithTheRingModulatorsEffect() throws {
        try install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 96_000)
        let (registry, _) = registry(["main": store])
        let g = try validate(graph(), registry).get()
        XCTAssertEqual(g.node("rm")?.outputFormat, StreamFormat(channels: 2, sampleRate: 48000))
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.ending, .endOfStream)
        XCTAssertEqual(store.frames, 48000, "the stream ends with its source")
        XCTAssertTrue(store.ended)
        for c in 0..<2 {
            let s = store.samples(c)
            // A·sin(1000)·sin(300) = A/2·(cos 700 − cos 1300): sidebands, no carrier, no input.
            let a = SignalAnalysis.linear(fromDBFS: -6)
            XCTAssertEqual(amplitude(s, 700), a / 2, accuracy: 0.01, "channel \(c)")
            XCTAssertEqual(amplitude(s, 1300), a / 2, accuracy: 0.01, "channel \(c)")
            XCTAssertLessThan(amplitude(s, 1000), 0.001, "channel \(c): the input is gone at mix 1")
            XCTAssertLessThan(amplitude(s, 300), 0.001, "channel \(c)")
        }
    }

    func testMixKeepsPartOfTheInput() throws {
        try install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 48_000)
        let (registry, _) = registry(["main": store])
        let compiled = try GraphCompiler.compile(try validate(graph(mix: 0.5), registry).get(), maxFrames: 256)
        _ = OfflineRenderer(engine: compiled.engine).run()
        let s = store.samples(0)
        let a = SignalAnalysis.linear(fromDBFS: -6)
        XCTAssertEqual(amplitude(s, 1000), a / 2, accuracy: 0.01)
        XCTAssertEqual(amplitude(s, 700), a / 4, accuracy: 0.01)
    }

    func testLiveParameterChangeThroughTheEngine() throws {
        try install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 96_000)
        let (registry, _) = registry(["main": store])
        let compiled = try GraphCompiler.compile(try validate(graph(seconds: nil), registry).get(), maxFrames: 480)
        let engine = compiled.engine
        for _ in 0..<100 { engine.render(frames: 480) }          // 1 s at 300 Hz
        try compiled.set("rm.frequency", 500)
        XCTAssertEqual(try compiled.value("rm.frequency"), 500)
        for _ in 0..<100 { engine.render(frames: 480) }          // 1 s at 500 Hz
        XCTAssertThrowsError(try compiled.set("rm.carrier", 1), "carrier is not live")
        XCTAssertThrowsError(try compiled.set("rm.frequency", 50_000), "out of range")
        let s = store.samples(1)
        XCTAssertEqual(s.count, 96_000)
        let before = Array(s[0..<48_000]), after = Array(s[48_000..<96_000])
        XCTAssertGreaterThan(amplitude(before, 700), 0.2)
        XCTAssertLessThan(amplitude(before, 500), 0.01)
        XCTAssertGreaterThan(amplitude(after, 500), 0.2, "1000 − 500 Hz")
        XCTAssertGreaterThan(amplitude(after, 1500), 0.2, "1000 + 500 Hz")
        XCTAssertLessThan(amplitude(after, 700), 0.01)
    }

    func testRenderAllocatesNothingAcrossTenThousandBlocks() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        try install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 1024)
        let (registry, _) = registry(["main": store])
        let compiled = try GraphCompiler.compile(try validate(graph(seconds: nil), registry).get(), maxFrames: 256)
        let engine = compiled.engine
        engine.render(frames: 256)   // warm-up: the Swift runtime instantiates metadata on first use
        let changes = try [("rm.frequency", 500.0), ("rm.mix", 0.3), ("rm.frequency", 120)].map { try compiled.change($0.0, $0.1) }
        engine.post(changes[0])
        engine.render(frames: 256)
        let sizes = [64, 256, 100, 1]
        let allocations = MallocCounter.count {
            for i in 0..<10_000 {
                if i % 100 == 0 {
                    MallocCounter.endThread()
                    engine.post(changes[(i / 100) % changes.count])
                    MallocCounter.beginThread()
                }
                engine.render(frames: sizes[i % 4])
            }
        }
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks with the plugin")
        XCTAssertGreaterThan(engine.framePosition, 1_000_000)
    }

    // MARK: - Failures, reported

    func testPluginOfAnotherAbiMajorIsRefusedNamingBothVersions() throws {
        try install("libAGraphTestAbiMismatchPlugin.so")
        let (_, report) = registry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphTestAbiMismatchPlugin.so") }, report.note)
        let major = PluginCatalog.abiMajor
        XCTAssertEqual(failure.reason, "ABI \(major + 1).0, this agraph reads \(major).x")
        XCTAssertTrue(report.note.contains("failed to load: libAGraphTestAbiMismatchPlugin.so (ABI \(major + 1).0, this agraph reads \(major).x)"), report.note)
        XCTAssertFalse(report.plugins.contains { $0.path.hasSuffix("libAGraphTestAbiMismatchPlugin.so") })
    }

    func testLibraryThatFailsToLoadIsReportedWithTheDlerrorText() throws {
        let path = folder.file("libAGraphBroken.so")
        try String(repeating: "this is not an ELF shared object\n", count: 8).write(toFile: path, atomically: true, encoding: .utf8)
        // What dlopen itself says about the file.
        XCTAssertNil(dlopen(path, RTLD_NOW | RTLD_LOCAL))
        let expected = try XCTUnwrap(dlerror().map { String(cString: $0) })
        let (_, report) = registry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphBroken.so") }, report.note)
        XCTAssertTrue(failure.reason.contains("libAGraphBroken.so"), failure.reason)
        XCTAssertTrue(expected.contains(failure.reason) || failure.reason.contains("invalid ELF header") || failure.reason.contains("file too short"),
                      "\(failure.reason) vs \(expected)")
        XCTAssertTrue(report.note.contains("libAGraphBroken.so"), report.note)
    }

    func testLibraryWithoutTheEntryPointIsReported() throws {
        // A real shared library that is not a plugin: the Swift runtime's Glibc overlay, renamed.
        let glibc = "/opt/swift/usr/lib/swift/linux/libswiftGlibc.so"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: glibc))
        try FileManager.default.copyItem(atPath: glibc, toPath: folder.file("libAGraphNotAPlugin.so"))
        let (_, report) = registry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphNotAPlugin.so") }, report.note)
        XCTAssertEqual(failure.reason, "does not export agraph_plugin_entry")
    }

    func testUnknownTypeIsAnErrorAndTheReportNamesTheSearchedFolders() throws {
        try install("libAGraphTestAbiMismatchPlugin.so")
        let (registry, report) = registry()
        let json = #"{"format": "agraph/1", "nodes": [{"id": "x", "type": "com.example.missing"}, {"id": "n", "type": "null"}], "links": [{"from": "x", "to": "n"}]}"#
        guard case .failure(let errors) = validate(json, registry) else { return XCTFail("an unknown type must not validate") }
        let d = try XCTUnwrap(errors.errors.first { $0.message.contains("com.example.missing") }, errors.description)
        XCTAssertEqual(d.nodeID, "x")
        XCTAssertTrue(d.message.contains("unknown node type"), d.message)
        XCTAssertTrue(d.message.contains(Self.ringModulator) || !registry.typeIDs.contains(Self.ringModulator))
        // What the validator appends once NodeRegistry carries the note (see the report to the lead):
        let explanation = report.explainUnknownType("com.example.missing")
        XCTAssertTrue(explanation.contains("plugins searched: \(folder.path), \(buildFolder)"), explanation)
        XCTAssertTrue(explanation.contains("failed to load: libAGraphTestAbiMismatchPlugin.so (ABI"), explanation)
    }

    func testPluginTypeCannotReplaceABuiltInType() throws {
        try install("libAGraphExamplePlugin.so")
        var base = NodeRegistry.builtIn
        let catalog = PluginCatalog.load()
        let type = try XCTUnwrap(catalog.types.first)
        // Pretend a built-in already has the plugin's id.
        struct Stub: NodeType {
            let descriptor = NodeDescriptor(typeID: "com.example.ring-modulator", role: .sink, summary: "stub", inputs: .single, parameters: [])
            func resolve(_ c: ResolveContext) -> StreamFormat? { nil }
            func makeNode(_ c: InstanceContext) throws -> any RenderNode { fatalError() }
        }
        base.register(Stub())
        let refused = base.register(plugins: catalog)
        XCTAssertEqual(refused.map(\.typeID), [type.descriptor.typeID])
        XCTAssertEqual(base[Self.ringModulator]?.descriptor.summary, "stub")
    }
}
