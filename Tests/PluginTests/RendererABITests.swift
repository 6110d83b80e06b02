import XCTest
import AudioGraph
import AudioGraphPlugins
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The ABI 2.0 core at the C level, with a probe plugin written in C against
/// the header alone and built here for a chosen `abi` version: it reads
/// each input's channels and layout tag from the per-port arrays in
/// `check`, `output_layout` and `create`; its AGRAPH_NODE_VIRTUALIZES flag
/// makes the validator refuse binaural input; it asks the host for an
/// extension id the host does not know (NULL, and it copes) and answers
/// NULL to every id the host asks it for (the host copes: it renders). A
/// probe that declares 1.4 or 3.0 is refused naming both versions; one of a
/// newer minor (2.1) loads, and `agraph check-plugin` says so. A
/// virtualizer that does not name its output binaural gets a note.
final class RendererABITests: XCTestCase {
    static let probe = "com.example.test.layout-probe"

    /// The probe, one node type: one input (1…8 channels), output the same,
    /// virtualizing; `mode` 1 makes `check` refuse saying what it saw, 2
    /// makes `create` do so, 3 makes `output_layout` answer "discrete" when
    /// it sees a 5.1 input; 0 copies the input. What it saw: the host's
    /// version, each input's channels and tag, and what the host answered
    /// for an unknown extension id.
    static let source = #"""
    #include "agraph_plugin.h"
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>

    static const agraph_port_t in_port = { "in", AGRAPH_CHANNELS_FIXED, 0, 1, 8 };
    static const agraph_port_t out_port = { "out", AGRAPH_CHANNELS_SAME_AS_INPUT, 0, 0, 0 };
    static const agraph_param_t params[] = {
        { "mode", "0 copy; 1 check, 2 create refuse saying what they saw; 3 output_layout answers from it.",
          NULL, AGRAPH_PARAM_INTEGER, AGRAPH_PARAM_HAS_RANGE, 0, 3, 0, NULL, NULL, 0, 0 },
    };

    static void seen(const agraph_create_info_t *info, char *out, size_t capacity) {
        const void *unknown = info->host->get_extension(info->host, "agraph.no-such-extension/1");
        const void *newer = info->host->get_extension(info->host, "agraph.log/999");
        int n = snprintf(out, capacity, "host ABI %u.%u; unknown extensions: %s, %s; inputs:",
                         info->host->abi.major, info->host->abi.minor, unknown ? "found" : "NULL", newer ? "found" : "NULL");
        for (uint32_t k = 0; k < info->input_port_count && n > 0 && (size_t)n < capacity; k++)
            n += snprintf(out + n, capacity - n, " %u %s", info->input_port_channels[k],
                          info->input_port_layouts && info->input_port_layouts[k] ? info->input_port_layouts[k] : "(none)");
    }

    static int32_t check(const agraph_create_info_t *info, char *error, uint32_t capacity) {
        if (info->values[0].number != 1) return 1;
        seen(info, error, capacity);
        return 0;
    }

    static const char *output_layout(const agraph_create_info_t *info, uint32_t port) {
        char what[256];
        if (info->values[0].number != 3 || port != 0) return NULL;
        seen(info, what, sizeof what);
        return strstr(what, " 6 5.1") ? "discrete" : NULL;
    }

    typedef struct { uint32_t channels; } probe_t;

    static agraph_instance_t *create(const agraph_create_info_t *info, char *error, uint32_t capacity) {
        if (info->values[0].number == 2) { seen(info, error, capacity); return NULL; }
        probe_t *p = calloc(1, sizeof *p);
        if (!p) { snprintf(error, capacity, "out of memory"); return NULL; }
        p->channels = info->input_port_channels[0];
        return (agraph_instance_t *)p;
    }

    static int32_t activate(agraph_instance_t *i, double rate, uint32_t max, char *e, uint32_t c) { return 1; }

    static void process(agraph_instance_t *i, agraph_process_t *b) {
        const agraph_input_port_buffers_t *in = &b->input_ports[0];
        agraph_output_port_buffers_t *out = &b->output_ports[0];
        for (uint32_t c = 0; c < out->channels; c++)
            memcpy(out->buffers[c], in->buffers[c], b->frames * sizeof(float));
    }

    static void deactivate(agraph_instance_t *i) {}
    static void destroy(agraph_instance_t *i) { free(i); }
    /* No extension at all: NULL for every id (the output route the host asks
     * for). Built with -DANSWER_EVERY_ID, the bug check-plugin names: a
     * struct for any id (an output-route side without `changed`). */
    static const agraph_output_route_ext_t any_ext = { NULL };
    static const void *get_extension(const agraph_instance_t *i, const char *id) {
    #ifdef ANSWER_EVERY_ID
        return &any_ext;
    #else
        return NULL;
    #endif
    }

    static const agraph_node_type_t type = {
        .type_id = "com.example.test.layout-probe",
        .summary = "Says which layout tags it sees (tests only).",
        .domain = AGRAPH_DOMAIN_REALTIME,
        .flags = AGRAPH_NODE_VIRTUALIZES,
        .input_count = 1, .output_count = 1, .inputs = &in_port, .outputs = &out_port,
        .param_count = 1, .params = params,
        .check = check, .output_layout = output_layout, .create = create, .activate = activate,
        .process = process, .deactivate = deactivate, .destroy = destroy, .get_extension = get_extension,
    };
    static const agraph_node_type_t *const types[] = { &type };
    static const agraph_plugin_t plugin = {
        .abi = { PLUGIN_MAJOR, PLUGIN_MINOR }, .name = "layout probe", .vendor = "AudioGraph tests", .version = "1",
        .node_type_count = 1, .node_types = types,
    };
    const agraph_plugin_t *agraph_plugin_entry(void) { return &plugin; }
    """#

    var directory: TemporaryDirectory!
    /// The probes built in this test, by version.
    var built: [String: String] = [:]

    override func setUpWithError() throws {
        directory = try TemporaryDirectory("agraph-renderer-abi")
        built = [:]
    }

    override func tearDown() {
        directory = nil
    }

    /// The probe built declaring ABI `major.minor` (once per test), as
    /// `libAGraphTestLayoutProbe<major>_<minor>.so` in a folder of its own;
    /// its path.
    func buildProbe(major: Int = PluginCatalog.abiMajor, minor: Int = PluginCatalog.abiMinor,
                    answeringEveryID: Bool = false) throws -> String {
        let version = "\(major)_\(minor)" + (answeringEveryID ? "_any" : "")
        if let path = built[version] { return path }
        let c = directory.file("probe.c")
        try Self.source.write(toFile: c, atomically: true, encoding: .utf8)
        let folder = directory.file("abi\(version)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let library = folder + "/libAGraphTestLayoutProbe\(version).so"
        try CCompiler.sharedLibrary(library, ["-std=c99", "-DPLUGIN_MAJOR=\(major)", "-DPLUGIN_MINOR=\(minor)"]
                                        + (answeringEveryID ? ["-DANSWER_EVERY_ID"] : [])
                                        + ["-I", TestMedia.packageRoot + "/Sources/CAGraphPlugin/include", c])
        built[version] = library
        return library
    }

    /// The probe of `major.minor` loaded as `agraph` loads plugins, with
    /// `capture` and the `signal` source of `signals`.
    func loadProbe(major: Int = PluginCatalog.abiMajor, minor: Int = PluginCatalog.abiMinor, _ signals: [String: Signal] = [:],
                   store: CaptureStore = CaptureStore(capacityFrames: 1)) throws -> (NodeRegistry, PluginCatalog) {
        let library = try buildProbe(major: major, minor: minor)
        let catalog = PluginCatalog.load(pluginPath: [(library as NSString).deletingLastPathComponent], buildFolders: [])
        var registry = TestGraph.registry(["main": store])
        registry.register(SignalSourceType(signals: signals))
        XCTAssertEqual(registry.register(plugins: catalog).map(\.description), [])
        return (registry, catalog)
    }

    func graph(mode: Int) -> String {
        #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "src", "type": "signal"}, {"id": "probe", "type": "\#(Self.probe)", "params": {"mode": \#(mode)}},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "probe"}, {"from": "probe", "to": "cap"}]}
        """#
    }

    func validate(_ registry: NodeRegistry, mode: Int) -> Result<ValidatedGraph, GraphErrors> {
        TestGraph.validate(graph(mode: mode), registry: registry, directory: directory.path)
    }

    /// The probe's own message in a failed validation.
    func message(_ result: Result<ValidatedGraph, GraphErrors>) -> String? {
        guard case .failure(let e) = result else { return nil }
        return e.errors.first { $0.nodeID == "probe" }?.message
    }

    static let six = [[Float]](repeating: [0.25, -0.5], count: 6)

    /// What the probe says it saw, for `channels` inputs tagged `layout`.
    static func seen(_ channels: Int, _ layout: ChannelLayout) -> String {
        "host ABI \(PluginCatalog.abiMajor).\(PluginCatalog.abiMinor); unknown extensions: NULL, NULL; inputs: \(channels) \(layout.rawValue)"
    }

    func testAPluginSeesEachInputsChannelsAndTagInCheckOutputLayoutAndCreate() throws {
        for (layout, channels) in [(ChannelLayout.surround51, Self.six), (.discrete, Self.six), (.stereo, [[0.1], [0.2]]), (.mono, [[0.1]])] {
            let (registry, catalog) = try loadProbe(["main": Signal(layout, channels)])
            XCTAssertEqual(catalog.plugins.first?.abiMajor, 2)
            XCTAssertEqual(message(validate(registry, mode: 1)), Self.seen(channels.count, layout), "check, \(layout)")
            // output_layout: "discrete" exactly when it is told 5.1.
            let g = try validate(registry, mode: 3).get()
            XCTAssertEqual(g.node("probe")?.outputFormat?.layout, layout == .surround51 ? .discrete : layout, "output_layout, \(layout)")
            // create: after validation, when the graph is compiled.
            let valid = try validate(registry, mode: 2).get()
            XCTAssertThrowsError(try GraphCompiler.compile(valid, maxFrames: 64), "create, \(layout)") { error in
                XCTAssertTrue("\(error)".contains("create failed: \(Self.seen(channels.count, layout))"), "\(error)")
            }
        }
    }

    func testTheVirtualizesFlagMakesTheValidatorRefuseBinauralInput() throws {
        let (registry, _) = try loadProbe(["main": Signal(.binaural, [[0.1], [0.2]])])
        XCTAssertEqual(registry[Self.probe]?.descriptor.virtualizes, true)
        guard case .failure(let e) = validate(registry, mode: 0) else { return XCTFail("binaural into a virtualizer validated") }
        XCTAssertTrue(e.errors.contains {
            $0.message == "'src' sends binaural audio (already virtualized for headphones) into 'probe' (\(Self.probe)), which virtualizes: that would virtualize twice; feed it the unvirtualized stream, or leave it out"
        }, "\(e)")
        // The same plugin is fine with speaker input.
        let (speakers, _) = try loadProbe(["main": Signal(.stereo, [[0.1], [0.2]])])
        XCTAssertNoThrow(try validate(speakers, mode: 0).get())
    }

    /// The probe has no extension (NULL for the output route the host asks
    /// it for) and gets NULL for ids the host does not know: the graph
    /// renders, sample for sample.
    func testAPluginWithoutExtensionsRendersAndUnknownIdsGiveNull() throws {
        let left: [Float] = (0..<1000).map { Float($0) / 1000 }, right = left.map { -$0 }
        let store = CaptureStore(capacityFrames: 2048)
        let (registry, catalog) = try loadProbe(["main": Signal(.stereo, [left, right])], store: store)
        XCTAssertEqual(catalog.failures.map(\.description), [])
        let g = try validate(registry, mode: 0).get()
        _ = OfflineRenderer(engine: try GraphCompiler.compile(g, maxFrames: 128).engine).run()
        XCTAssertEqual(store.samples(0), left)
        XCTAssertEqual(store.samples(1), right)
    }

    /// A plugin declaring another major is refused after its version is
    /// read (nothing else of it is called), with both versions named.
    func testAPluginOfAnotherMajorIsRefusedNamingBothVersions() throws {
        for (major, minor, advice) in [(1, 4, "rebuild it against agraph_plugin.h 2.0"), (3, 0, "it needs a newer agraph")] {
            let library = try buildProbe(major: major, minor: minor)
            let catalog = PluginCatalog.load(pluginPath: [(library as NSString).deletingLastPathComponent], buildFolders: [])
            XCTAssertEqual(catalog.plugins.count, 0)
            XCTAssertEqual(catalog.types.count, 0)
            let reason = try XCTUnwrap(catalog.failures.first?.reason)
            XCTAssertTrue(reason.hasPrefix("built for ABI \(major).\(minor); this agraph loads plugin ABI 2.0 (any 2.x)"), reason)
            XCTAssertTrue(reason.contains(advice), reason)
            let report = PluginConformance.check(path: library) { body in body(); return nil }
            XCTAssertEqual(report.failures, ["the library does not load: \(reason)"])
        }
    }

    /// A plugin that answers an id it cannot know fails the conformance
    /// check, saying so; the host, given a struct whose function is NULL,
    /// still renders.
    func testAnExtensionForAnUnknownIdFailsTheCheckAndTheHostCopes() throws {
        let library = try buildProbe(answeringEveryID: true)
        let report = PluginConformance.check(path: library) { body in body(); return nil }
        let id = PluginConformance.unknownExtensionID
        XCTAssertTrue(report.failures.contains("\(Self.probe): (defaults) get_extension(instance, \"\(id)\") answered an extension: an id the plugin does not know must give NULL"), "\(report.failures)")
        XCTAssertEqual(PluginConformance.check(path: try buildProbe()) { body in body(); return nil }.failures, [])
        let catalog = PluginCatalog.load(pluginPath: [(library as NSString).deletingLastPathComponent], buildFolders: [])
        let left: [Float] = (0..<300).map { Float($0) / 300 }
        let store = CaptureStore(capacityFrames: 512)
        var registry = TestGraph.registry(["main": store])
        registry.register(SignalSourceType(signals: ["main": Signal(.stereo, [left, left])]))
        XCTAssertEqual(registry.register(plugins: catalog).map(\.description), [])
        let g = try validate(registry, mode: 0).get()
        _ = OfflineRenderer(engine: try GraphCompiler.compile(g, maxFrames: 128).engine).run()
        XCTAssertEqual(store.samples(0), left)
    }

    func testAPluginOfANewerMinorLoadsAndTheCheckSaysSo() throws {
        let library = try buildProbe(minor: PluginCatalog.abiMinor + 1)
        let report = PluginConformance.check(path: library) { body in body(); return nil }
        XCTAssertEqual(report.failures, [])
        XCTAssertTrue(report.lines.first?.hasSuffix("ABI 2.\(PluginCatalog.abiMinor + 1), 1 node type") ?? false, "\(report.lines)")
        XCTAssertTrue(report.notes.contains("built against ABI 2.\(PluginCatalog.abiMinor + 1), newer than this agraph's 2.\(PluginCatalog.abiMinor): it loads (a minor version adds only extensions, and this agraph offers none it does not know)"), "\(report.notes)")
    }

    /// The probe virtualizes but keeps its input's tag: the conformance
    /// check notes it; the crossfeed, which names its output binaural, gets
    /// no such note.
    func testTheConformanceCheckNotesAVirtualizerWhoseOutputIsNotBinaural() throws {
        let report = PluginConformance.check(path: try buildProbe()) { body in body(); return nil }
        XCTAssertEqual(report.failures, [])
        XCTAssertTrue(report.lines.contains { $0.hasPrefix("\(Self.probe) (realtime, virtualizes): ") }, "\(report.lines)")
        XCTAssertTrue(report.notes.contains("\(Self.probe): declares AGRAPH_NODE_VIRTUALIZES but names no output layout (so its output keeps the usual tag for its channels) for 2-channel input, not \"binaural\": a virtualizer after it could render it for headphones again"), "\(report.notes)")
        let crossfeed = PluginConformance.check(path: try BuiltPlugins.path("libAGraphCrossfeedPlugin.so")) { body in
            guard MallocCounter.isAvailable else { body(); return nil }
            return MallocCounter.count(body)
        }
        XCTAssertEqual(crossfeed.failures, [], "no allocation in process or set_parameter either")
        XCTAssertEqual(crossfeed.notes.filter { !$0.hasSuffix("allocations not counted (unavailable in this build)") }, [])
    }
}
