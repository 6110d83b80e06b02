import XCTest
import AudioGraph
import AudioGraphPlugins
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// ABI 1.4 at the C level, with a probe plugin written in C against the
/// header alone and built here for a chosen `abi.minor`: a 1.4 plugin reads
/// each input's layout tag in `check`, `output_layout` and `create`, and its
/// AGRAPH_NODE_VIRTUALIZES flag makes the validator refuse binaural input;
/// a 1.0 or 1.3 plugin that happens to set that bit is read as before (the
/// bit ignored) and still loads and renders; a plugin of a newer minor
/// (1.5) loads, and `agraph check-plugin` says so. A virtualizer that does
/// not name its output binaural gets a note from the conformance check.
final class RendererABITests: XCTestCase {
    static let probe = "com.example.test.layout-probe"

    /// The probe, one node type: one input (1…8 channels), output the same,
    /// flag bit 1 set (AGRAPH_NODE_VIRTUALIZES from 1.4 on); `mode` 1 makes
    /// `check` refuse saying what it saw, 2 makes `create` do so, 3 makes
    /// `output_layout` answer "discrete" when it sees a 5.1 input; 0 copies
    /// the input. What it saw: the host's minor, and each input's tag when
    /// both sides are 1.4 or later.
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
        int n = snprintf(out, capacity, "host minor %u; layouts:", info->host_abi_minor);
        if (PLUGIN_MINOR >= 4 && info->host_abi_minor >= 4) {
            for (uint32_t k = 0; k < info->input_port_count && n > 0 && (size_t)n < capacity; k++)
                n += snprintf(out + n, capacity - n, " %s",
                              info->input_port_layouts && info->input_port_layouts[k] ? info->input_port_layouts[k] : "(none)");
        } else {
            snprintf(out + n, capacity - n, " not read");
        }
    }

    static int32_t check(const agraph_create_info_t *info, char *error, uint32_t capacity) {
        if (info->values[0].number != 1) return 1;
        seen(info, error, capacity);
        return 0;
    }

    static const char *output_layout(const agraph_create_info_t *info) {
        char what[256];
        if (info->values[0].number != 3) return NULL;
        seen(info, what, sizeof what);
        return strstr(what, "layouts: 5.1") ? "discrete" : NULL;
    }

    typedef struct { uint32_t channels; } probe_t;

    static agraph_instance_t *create(const agraph_create_info_t *info, char *error, uint32_t capacity) {
        if (info->values[0].number == 2) { seen(info, error, capacity); return NULL; }
        probe_t *p = calloc(1, sizeof *p);
        if (!p) { snprintf(error, capacity, "out of memory"); return NULL; }
        p->channels = info->input_channels;
        return (agraph_instance_t *)p;
    }

    static int32_t activate(agraph_instance_t *i, double rate, uint32_t max, char *e, uint32_t c) { return 1; }

    static void process(agraph_instance_t *i, agraph_process_t *b) {
        for (uint32_t c = 0; c < b->output_channels; c++)
            memcpy(b->outputs[c], b->inputs[c], b->frames * sizeof(float));
    }

    static void deactivate(agraph_instance_t *i) {}
    static void destroy(agraph_instance_t *i) { free(i); }

    static const agraph_node_type_t type = {
        .type_id = "com.example.test.layout-probe",
        .summary = "Says which layout tags it sees (tests only).",
        .domain = AGRAPH_DOMAIN_REALTIME,
        .flags = 1u << 1,   /* AGRAPH_NODE_VIRTUALIZES since 1.4; meant nothing before */
        .input_count = 1, .output_count = 1, .inputs = &in_port, .outputs = &out_port,
        .param_count = 1, .params = params,
        .check = check, .create = create, .activate = activate, .process = process,
        .deactivate = deactivate, .destroy = destroy,
    #if PLUGIN_MINOR >= 1
        .output_layout = output_layout,
    #endif
    };
    static const agraph_node_type_t *const types[] = { &type };
    static const agraph_plugin_t plugin = {
        { AGRAPH_PLUGIN_ABI_MAJOR, PLUGIN_MINOR }, "layout probe", "AudioGraph tests", "1",
        1, 0, types, NULL,
    };
    const agraph_plugin_t *agraph_plugin_entry(void) { return &plugin; }
    """#

    var directory: TemporaryDirectory!
    /// The probes built in this test, by minor.
    var built: [Int: String] = [:]

    override func setUpWithError() throws {
        directory = try TemporaryDirectory("agraph-renderer-abi")
        built = [:]
    }

    override func tearDown() {
        directory = nil
    }

    /// The probe built for `minor` (once per test), as
    /// `libAGraphTestLayoutProbe<minor>.so` in a folder of its own; its path.
    func buildProbe(minor: Int) throws -> String {
        if let path = built[minor] { return path }
        let c = directory.file("probe.c")
        try Self.source.write(toFile: c, atomically: true, encoding: .utf8)
        let folder = directory.file("minor\(minor)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let library = folder + "/libAGraphTestLayoutProbe\(minor).so"
        try CCompiler.sharedLibrary(library, ["-std=c99", "-DPLUGIN_MINOR=\(minor)",
                                              "-I", TestMedia.packageRoot + "/Sources/CAGraphPlugin/include", c])
        built[minor] = library
        return library
    }

    /// The probe of `minor` loaded as `agraph` loads plugins, with
    /// `capture` and the `signal` source of `signals`.
    func loadProbe(minor: Int, _ signals: [String: Signal] = [:],
                  store: CaptureStore = CaptureStore(capacityFrames: 1)) throws -> (NodeRegistry, PluginCatalog) {
        let library = try buildProbe(minor: minor)
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

    func testA14PluginSeesEachInputsLayoutTagInCheckOutputLayoutAndCreate() throws {
        for (layout, channels) in [(ChannelLayout.surround51, Self.six), (.discrete, Self.six), (.stereo, [[0.1], [0.2]]), (.mono, [[0.1]])] {
            let (registry, catalog) = try loadProbe(minor: 4, ["main": Signal(layout, channels)])
            XCTAssertEqual(catalog.plugins.first?.abiMinor, 4)
            XCTAssertEqual(message(validate(registry, mode: 1)), "host minor 4; layouts: \(layout.rawValue)", "check, \(layout)")
            // output_layout: "discrete" exactly when it is told 5.1.
            let g = try validate(registry, mode: 3).get()
            XCTAssertEqual(g.node("probe")?.outputFormat?.layout, layout == .surround51 ? .discrete : layout, "output_layout, \(layout)")
            // create: after validation, when the graph is compiled.
            let valid = try validate(registry, mode: 2).get()
            XCTAssertThrowsError(try GraphCompiler.compile(valid, maxFrames: 64), "create, \(layout)") { error in
                XCTAssertTrue("\(error)".contains("create failed: host minor 4; layouts: \(layout.rawValue)"), "\(error)")
            }
        }
    }

    func testThe14VirtualizesFlagMakesTheValidatorRefuseBinauralInput() throws {
        let (registry, _) = try loadProbe(minor: 4, ["main": Signal(.binaural, [[0.1], [0.2]])])
        XCTAssertEqual(registry[Self.probe]?.descriptor.virtualizes, true)
        guard case .failure(let e) = validate(registry, mode: 0) else { return XCTFail("binaural into a virtualizer validated") }
        XCTAssertTrue(e.errors.contains {
            $0.message == "'src' sends binaural audio (already virtualized for headphones) into 'probe' (\(Self.probe)), which virtualizes: that would virtualize twice; feed it the unvirtualized stream, or leave it out"
        }, "\(e)")
        // The same plugin is fine with speaker input.
        let (speakers, _) = try loadProbe(minor: 4, ["main": Signal(.stereo, [[0.1], [0.2]])])
        XCTAssertNoThrow(try validate(speakers, mode: 0).get())
    }

    /// Plugins built before 1.4 keep working: the bit they set means
    /// nothing to them (it is not read), they get no tags, and they render.
    func testOlderMinorPluginsIgnoreTheNewFlagAndStillRender() throws {
        for minor in [0, 3] {
            let left: [Float] = (0..<1000).map { Float($0) / 1000 }, right = left.map { -$0 }
            let store = CaptureStore(capacityFrames: 2048)
            let (registry, catalog) = try loadProbe(minor: minor, ["main": Signal(.binaural, [left, right])], store: store)
            XCTAssertEqual(catalog.failures.map(\.description), [], "ABI 1.\(minor)")
            XCTAssertEqual(catalog.plugins.first?.abiMinor, minor)
            XCTAssertEqual(registry[Self.probe]?.descriptor.virtualizes, false, "ABI 1.\(minor): the bit is not the 1.4 flag")
            XCTAssertEqual(message(validate(registry, mode: 1)), "host minor \(PluginCatalog.abiMinor); layouts: not read", "ABI 1.\(minor)")
            let g = try validate(registry, mode: 0).get()
            XCTAssertEqual(g.node("probe")?.outputFormat?.layout, .binaural, "ABI 1.\(minor): SAME_AS_INPUT keeps the tag")
            _ = OfflineRenderer(engine: try GraphCompiler.compile(g, maxFrames: 128).engine).run()
            XCTAssertEqual(store.samples(0), left, "ABI 1.\(minor) renders")
            XCTAssertEqual(store.samples(1), right, "ABI 1.\(minor) renders")
        }
    }

    func testAPluginOfANewerMinorLoadsAndTheCheckSaysSo() throws {
        let library = try buildProbe(minor: PluginCatalog.abiMinor + 1)
        let report = PluginConformance.check(path: library) { body in body(); return nil }
        XCTAssertEqual(report.failures, [])
        XCTAssertTrue(report.lines.first?.hasSuffix("ABI 1.\(PluginCatalog.abiMinor + 1), 1 node type") ?? false, "\(report.lines)")
        XCTAssertTrue(report.notes.contains("built against ABI 1.\(PluginCatalog.abiMinor + 1), newer than this agraph's 1.\(PluginCatalog.abiMinor): it loads, and what the later minor versions added is ignored"), "\(report.notes)")
    }

    /// The probe virtualizes but keeps its input's tag: the conformance
    /// check notes it; the crossfeed, which names its output binaural, gets
    /// no such note.
    func testTheConformanceCheckNotesAVirtualizerWhoseOutputIsNotBinaural() throws {
        let report = PluginConformance.check(path: try buildProbe(minor: 4)) { body in body(); return nil }
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
