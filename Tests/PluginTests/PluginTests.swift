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

    /// The AGRAPH_PLUGIN_PATH folder, empty at the start of each test.
    var folder: PluginFolder!

    /// The folder SwiftPM built the plugin products into: the test runner's.
    var buildFolder: String { BuiltPlugins.folder }

    override func setUpWithError() throws {
        folder = try PluginFolder("agraph-plugins")
    }

    override func tearDown() {
        folder = nil
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

    func amplitude(_ s: [Float], _ hz: Double) -> Double {
        SignalAnalysis.goertzelMagnitude(s, sampleRate: 48000, frequency: hz)
    }

    // MARK: - Loading

    func testExamplePluginLoadsFromPluginPathWithItsParameters() throws {
        try folder.install("libAGraphExamplePlugin.so")
        let (registry, report) = TestGraph.pluginRegistry()
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
        try folder.install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 96_000)
        let (registry, _) = TestGraph.pluginRegistry(["main": store])
        let g = try folder.validate(graph(), registry).get()
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
        try folder.install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 48_000)
        let (registry, _) = TestGraph.pluginRegistry(["main": store])
        let compiled = try GraphCompiler.compile(try folder.validate(graph(mix: 0.5), registry).get(), maxFrames: 256)
        _ = OfflineRenderer(engine: compiled.engine).run()
        let s = store.samples(0)
        let a = SignalAnalysis.linear(fromDBFS: -6)
        XCTAssertEqual(amplitude(s, 1000), a / 2, accuracy: 0.01)
        XCTAssertEqual(amplitude(s, 700), a / 4, accuracy: 0.01)
    }

    func testLiveParameterChangeThroughTheEngine() throws {
        try folder.install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 96_000)
        let (registry, _) = TestGraph.pluginRegistry(["main": store])
        let compiled = try GraphCompiler.compile(try folder.validate(graph(seconds: nil), registry).get(), maxFrames: 480)
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
        try folder.install("libAGraphExamplePlugin.so")
        let store = CaptureStore(capacityFrames: 1024)
        let (registry, _) = TestGraph.pluginRegistry(["main": store])
        let compiled = try GraphCompiler.compile(try folder.validate(graph(seconds: nil), registry).get(), maxFrames: 256)
        let engine = compiled.engine
        engine.render(frames: 256)   // warm-up: the Swift runtime instantiates metadata on first use
        let changes = try [("rm.frequency", 500.0), ("rm.mix", 0.3), ("rm.frequency", 120)].map { try compiled.change($0.0, $0.1) }
        engine.post(changes[0])
        engine.render(frames: 256)
        let sizes = [64, 256, 100, 1]
        let allocations = MallocCounter.countRendering(engine, sizes: sizes, changes: changes)
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks with the plugin")
        XCTAssertGreaterThan(engine.framePosition, 1_000_000)
    }

    // MARK: - Failures, reported

    /// The fixture is a plugin built for ABI 1.4: refused after its version
    /// alone is read (its init is never called), naming 1.4 and 2.0.
    func testAnABI14PluginIsRefusedNamingBothVersions() throws {
        try folder.install("libAGraphTestAbiMismatchPlugin.so")
        let (_, report) = TestGraph.pluginRegistry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphTestAbiMismatchPlugin.so") }, report.note)
        let expected = "built for ABI 1.4; this agraph loads plugin ABI 2.0 (any 2.x): rebuild it against agraph_plugin.h 2.0 (docs/plugin-abi.md, \"Migrating from 1.x\")"
        XCTAssertEqual(failure.reason, expected)
        XCTAssertTrue(failure.reason.contains("1.4") && failure.reason.contains("2.0"), failure.reason)
        XCTAssertTrue(report.note.contains("failed to load: libAGraphTestAbiMismatchPlugin.so (\(expected))"), report.note)
        XCTAssertFalse(report.plugins.contains { $0.path.hasSuffix("libAGraphTestAbiMismatchPlugin.so") })
    }

    func testAFileThatIsNotELFIsRefusedBeforeDlopen() throws {
        let path = folder.file("libAGraphBroken.so")
        try String(repeating: "this is not an ELF shared object\n", count: 8).write(toFile: path, atomically: true, encoding: .utf8)
        let (_, report) = TestGraph.pluginRegistry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphBroken.so") }, report.note)
        XCTAssertEqual(failure.reason, "not an ELF file (no ELF magic at the start; 264 bytes)")
        XCTAssertTrue(report.note.contains("libAGraphBroken.so (not an ELF file"), report.note)
    }

    func testLibraryThatDlopenRefusesIsReportedWithTheDlerrorText() throws {
        // A complete shared object that dlopen still refuses: it needs a library that does not exist.
        let source = folder.file("needs.c"), library = folder.file("libAGraphNeedsMissing.so")
        try "int agraph_fixture_value(void) { return 1; }\n".write(toFile: source, atomically: true, encoding: .utf8)
        // Linked against a stub that is removed afterwards: the link succeeds, the load fails.
        let stub = folder.file("libagraphmissing.so")
        try CCompiler.sharedLibrary(stub, ["-x", "c", "/dev/null"])
        try CCompiler.sharedLibrary(library, [source, "-L" + folder.path, "-Wl,--no-as-needed", "-lagraphmissing"])
        try FileManager.default.removeItem(atPath: stub)
        XCTAssertNil(dlopen(library, RTLD_NOW | RTLD_LOCAL))
        let expected = try XCTUnwrap(dlerror().map { String(cString: $0) })
        let (_, report) = TestGraph.pluginRegistry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphNeedsMissing.so") }, report.note)
        XCTAssertEqual(failure.reason, expected)
        XCTAssertTrue(failure.reason.contains("libagraphmissing.so"), failure.reason)
    }

    func testLibraryWithoutTheEntryPointIsReported() throws {
        // A real shared library that is not a plugin: the Swift runtime's Glibc overlay, renamed.
        let glibc = "/opt/swift/usr/lib/swift/linux/libswiftGlibc.so"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: glibc))
        try FileManager.default.copyItem(atPath: glibc, toPath: folder.file("libAGraphNotAPlugin.so"))
        let (_, report) = TestGraph.pluginRegistry()
        let failure = try XCTUnwrap(report.failures.first { $0.path.hasSuffix("libAGraphNotAPlugin.so") }, report.note)
        XCTAssertEqual(failure.reason, "does not export agraph_plugin_entry")
    }

    func testUnknownTypeIsAnErrorAndTheReportNamesTheSearchedFolders() throws {
        try folder.install("libAGraphTestAbiMismatchPlugin.so")
        let (registry, report) = TestGraph.pluginRegistry()
        let json = #"{"format": "agraph/1", "nodes": [{"id": "x", "type": "com.example.missing"}, {"id": "n", "type": "null"}], "links": [{"from": "x", "to": "n"}]}"#
        guard case .failure(let errors) = folder.validate(json, registry) else { return XCTFail("an unknown type must not validate") }
        let d = try XCTUnwrap(errors.errors.first { $0.message.contains("com.example.missing") }, errors.description)
        XCTAssertEqual(d.nodeID, "x")
        XCTAssertTrue(d.message.contains("unknown node type"), d.message)
        XCTAssertTrue(d.message.contains(Self.ringModulator) || !registry.typeIDs.contains(Self.ringModulator))
        // What the validator appends once NodeRegistry carries the note (see the report to the lead):
        let explanation = report.explainUnknownType("com.example.missing")
        XCTAssertTrue(explanation.contains("plugins searched: files named libAGraph*.so (others are never opened) in \(folder.path), \(buildFolder)"), explanation)
        XCTAssertTrue(explanation.contains("failed to load: libAGraphTestAbiMismatchPlugin.so (built for ABI 1.4;"), explanation)
    }

    func testPluginTypeCannotReplaceABuiltInType() throws {
        try folder.install("libAGraphExamplePlugin.so")
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

    // MARK: - Damaged files and lying descriptors (issue 7, item 3)

    /// A plugin search of `folders` only, run on another thread so that a
    /// search that blocks (a FIFO opened by dlopen) fails the test instead
    /// of hanging the run. nil after `timeout` seconds.
    func loadWithin(_ timeout: Double, _ folders: [String]) -> PluginCatalog? {
        final class Box: @unchecked Sendable { var catalog: PluginCatalog? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.catalog = PluginCatalog.load(pluginPath: folders, buildFolders: [])
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return box.catalog
    }

    /// Resident memory of this process, bytes.
    func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A truncated plugin (a half-copied file, a full disk) used to crash
    /// every command with SIGBUS inside dlopen. Now each cut is refused with
    /// the reason, and the process carries on.
    func testTruncatedLibraryIsRefusedWithTheReasonAndTheProcessSurvives() throws {
        let source = try BuiltPlugins.path("libAGraphExamplePlugin.so")
        let bytes = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: source)))
        let size = bytes.count
        // Where the loadable segments end (the part dlopen maps; a debug
        // build carries debug sections after it): ELF64 little-endian.
        func field(_ offset: Int, _ width: Int) -> Int {
            (0..<width).reversed().reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
        }
        let phoff = field(32, 8), phnum = field(56, 2)
        let loadEnd = (0..<phnum).map { i -> Int in
            let base = phoff + i * 56
            return field(base, 4) == 1 ? field(base + 8, 8) + field(base + 32, 8) : 0
        }.max() ?? 0
        XCTAssertGreaterThan(loadEnd, 3 * 4096)
        // Cuts inside the loadable segments are the ones that crashed dlopen with SIGBUS.
        let cuts: [(Int, String)] = [(0, "an empty file (0 bytes)"), (10, "too short for an ELF header (10 bytes)"),
                                     (63, "truncated: 63 bytes, shorter than an ELF header"),
                                     (loadEnd / 2, "truncated or damaged: segment "), (loadEnd - 4096, "truncated or damaged: segment "),
                                     (size / 2, "truncated or damaged: "), (size - 4096, "truncated or damaged: "),
                                     (size - 1, "truncated or damaged: ")]
        for (cut, reason) in cuts {
            let dir = try TemporaryDirectory("agraph-truncated")
            let path = dir.file("libAGraphTestTruncated.so")
            try FileManager.default.copyItem(atPath: source, toPath: path)
            XCTAssertEqual(truncate(path, off_t(cut)), 0)
            let catalog = PluginCatalog.load(pluginPath: [dir.path], buildFolders: [])
            XCTAssertTrue(catalog.plugins.isEmpty, "cut at \(cut) of \(size)")
            XCTAssertTrue(catalog.types.isEmpty)
            let failure = try XCTUnwrap(catalog.failures.first, "cut at \(cut): \(catalog.note)")
            XCTAssertTrue(failure.path.hasSuffix("/libAGraphTestTruncated.so"))
            XCTAssertTrue(failure.reason.hasPrefix(reason), "cut at \(cut) of \(size): \(failure.reason)")
            if cut > 64 {
                XCTAssertTrue(failure.reason.hasSuffix("ends past the end of the file (\(cut) bytes)"), failure.reason)
            }
        }
        // The untouched library still loads from such a folder.
        let dir = try TemporaryDirectory("agraph-truncated")
        try FileManager.default.copyItem(atPath: source, toPath: dir.file("libAGraphTestWhole.so"))
        let whole = PluginCatalog.load(pluginPath: [dir.path], buildFolders: [])
        XCTAssertEqual(whole.failures.map(\.reason), [])
        XCTAssertTrue(whole.types.contains { $0.descriptor.typeID == Self.ringModulator })
    }

    /// ELF files for another class, byte order, machine or file type are
    /// named for what they are, without being mapped.
    func testELFForAnotherMachineOrTypeIsRefusedWithTheReason() throws {
        let source = try BuiltPlugins.path("libAGraphExamplePlugin.so")
        let original = try XCTUnwrap(FileManager.default.contents(atPath: source))
        let host = original[original.startIndex + 18]   // e_machine, low byte (little-endian)
        let other: UInt8 = host == 62 ? 183 : 62
        let otherName = other == 62 ? "x86-64 (e_machine 62)" : "AArch64 (e_machine 183)"
        let cases: [(offset: Int, byte: UInt8, reason: String)] = [
            (4, 1, "a 32-bit ELF file; this agraph is 64-bit"),
            (5, 2, "a big-endian ELF file; this machine is little-endian"),
            (18, other, "built for \(otherName); this machine is "),
            (16, 2, "ELF type 2 (an executable), not a shared object (ET_DYN)"),
            (16, 1, "ELF type 1 (a relocatable object (.o)), not a shared object (ET_DYN)"),
        ]
        for c in cases {
            let dir = try TemporaryDirectory("agraph-elf")
            var bytes = original
            bytes[bytes.startIndex + c.offset] = c.byte
            let path = dir.file("libAGraphTestPatched.so")
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: bytes))
            let catalog = PluginCatalog.load(pluginPath: [dir.path], buildFolders: [])
            let reason = catalog.failures.first?.reason ?? "loaded"
            XCTAssertTrue(reason.hasPrefix(c.reason), "byte \(c.offset) = \(c.byte): \(reason)")
        }
    }

    /// A FIFO named like a plugin used to block dlopen's open forever; a
    /// folder so named is not a library either.
    func testAFIFOOrAFolderNamedLikeAPluginIsRefusedWithoutBlocking() throws {
        XCTAssertEqual(mkfifo(folder.file("libAGraphTestX.so"), 0o600), 0)
        try FileManager.default.createDirectory(atPath: folder.file("libAGraphTestFolder.so"), withIntermediateDirectories: false)
        let catalog = try XCTUnwrap(loadWithin(10, [folder.path]), "the plugin search blocked on the FIFO")
        let fifo = try XCTUnwrap(catalog.failures.first { $0.path.hasSuffix("/libAGraphTestX.so") }, catalog.note)
        XCTAssertEqual(fifo.reason, "not a regular file (a FIFO)")
        let dir = try XCTUnwrap(catalog.failures.first { $0.path.hasSuffix("/libAGraphTestFolder.so") }, catalog.note)
        XCTAssertEqual(dir.reason, "not a regular file (a folder)")
        XCTAssertTrue(catalog.note.contains("libAGraphTestX.so (not a regular file (a FIFO))"), catalog.note)
    }

    /// Loads the huge-counts fixture in `mode` from a folder of its own (a
    /// fresh copy: a fresh load of the library), checking that it takes
    /// little time and memory.
    func loadHugeCounts(_ mode: String, file: StaticString = #filePath, line: UInt = #line) throws -> PluginCatalog {
        try folder.install("libAGraphTestHugeCountsPlugin.so", in: mode)
        let dir = folder.file(mode)
        setenv("AGRAPH_TEST_HUGE_COUNTS", mode, 1)
        defer { unsetenv("AGRAPH_TEST_HUGE_COUNTS") }
        let before = residentBytes()
        let start = DispatchTime.now()
        let catalog = PluginCatalog.load(pluginPath: [dir], buildFolders: [])
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        XCTAssertLessThan(seconds, 2, "\(mode): refused quickly", file: file, line: line)
        XCTAssertLessThan(residentBytes() - before, 32 << 20, "\(mode): without growing memory", file: file, line: line)
        return catalog
    }

    func testADescriptorClaimingFourBillionNodeTypesIsRefusedAtOnce() throws {
        for mode in ["node-types", "node-table"] {
            let catalog = try loadHugeCounts(mode)
            XCTAssertEqual(catalog.failures.count, 1, "\(mode): one failure, not one per claimed type: \(catalog.failures.prefix(3))")
            XCTAssertEqual(catalog.failures.first?.reason,
                           "the descriptor claims 4294967295 node types; at most \(PluginLimits.nodeTypes) are read", mode)
            XCTAssertTrue(catalog.plugins.isEmpty && catalog.types.isEmpty, mode)
        }
    }

    func testATypeClaimingFourBillionParametersOrChoicesIsRefusedAtOnce() throws {
        let params = try loadHugeCounts("params")
        XCTAssertEqual(params.failures.map(\.description),
                       ["libAGraphTestHugeCountsPlugin.so type \"com.example.test-bounded\" (claims 4294967295 parameters; at most 1024 are read)"])
        XCTAssertTrue(params.types.isEmpty)
        let choices = try loadHugeCounts("choices")
        XCTAssertEqual(choices.failures.map(\.reason), ["parameter mode: claims 4294967295 choices; at most 1024 are read"])
        XCTAssertEqual(choices.failures.first?.typeID, "com.example.test-bounded")
        XCTAssertTrue(choices.types.isEmpty)
    }

    func testUnterminatedAndOverlongStringsAreRefusedWithTheReason() throws {
        let unterminated = try loadHugeCounts("unterminated")
        XCTAssertEqual(unterminated.failures.map(\.reason), ["the type id is longer than 4096 bytes (or not NUL-terminated)"])
        XCTAssertEqual(unterminated.failures.first?.typeID, "#0", "an unreadable id is named by its index")
        XCTAssertTrue(unterminated.types.isEmpty)

        let summary = try loadHugeCounts("long-summary")
        XCTAssertEqual(summary.failures.map(\.reason), ["the type's summary is longer than 4096 bytes (or not NUL-terminated)"])
        XCTAssertEqual(summary.failures.first?.typeID, "com.example.test-bounded")

        let name = try loadHugeCounts("long-name")
        XCTAssertEqual(name.failures.map(\.reason), ["the plugin's name is longer than 4096 bytes (or not NUL-terminated)"])
        XCTAssertTrue(name.plugins.isEmpty && name.types.isEmpty)

        let details = try loadHugeCounts("long-details")
        XCTAssertEqual(details.failures.map(\.reason), ["the plugin-info details text is longer than 65536 bytes (or not NUL-terminated)"])
        XCTAssertTrue(details.plugins.isEmpty && details.types.isEmpty)
    }

    func testStringsAndCountsAtTheLimitsAreAccepted() throws {
        let catalog = try loadHugeCounts("at-limits")
        XCTAssertEqual(catalog.failures.map(\.description), [])
        let type = try XCTUnwrap(catalog.types.first)
        XCTAssertEqual(type.descriptor.summary.utf8.count, PluginLimits.stringBytes)
        let mode = try XCTUnwrap(type.descriptor.parameter(named: "mode"))
        guard case .choice(let options) = mode.type else { return XCTFail("mode is a choice") }
        XCTAssertEqual(options.count, PluginLimits.choices)
        XCTAssertEqual(options[0].utf8.count, PluginLimits.stringBytes)
        XCTAssertEqual(options[1023], "c1023")
    }
}

/// Issue 8 item 7: a plugin library not named libAGraph*.so is not loaded,
/// and "unknown node type" says which names are loaded, what was found
/// instead and where it looked.
final class PluginNamingTests: XCTestCase {
    func testAMisnamedPluginIsNamedInTheUnknownTypeMessage() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: try BuiltPlugins.path("libAGraphExamplePlugin.so"), toPath: dir.file("ringmod.so"))
        let catalog = PluginCatalog.load(pluginPath: [dir.path], buildFolders: [])
        XCTAssertTrue(catalog.types.isEmpty, "a misnamed library is never opened")
        var registry = NodeRegistry.builtIn
        _ = registry.register(plugins: catalog)
        registry.unavailableNote = catalog.note
        let json = #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone"}, {"id": "r", "type": "com.example.ring-modulator"}, {"id": "n", "type": "null"}], "links": [{"from": "t", "to": "r"}, {"from": "r", "to": "n"}]}"#
        let result = TestGraph.validate(json, registry: registry, file: "g.json", directory: dir.path)
        guard case .failure(let errors) = result else { return XCTFail("validates without the plugin") }
        let text = "\(errors)"
        XCTAssertTrue(text.contains("libAGraph*.so"), text)
        XCTAssertTrue(text.contains("ringmod.so"), "names the file it skipped: \(text)")
        XCTAssertTrue(text.contains(dir.path), "names the folder searched: \(text)")
    }
}
