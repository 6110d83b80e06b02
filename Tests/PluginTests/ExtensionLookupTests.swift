import XCTest
import AudioGraph
import AudioGraphPlugins
import CAGraphPlugin
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Extensions (ext/*.h) are found by their string id, on both sides of the
/// ABI: the host's in its host table, a plugin's per instance and
/// plugin-wide. An id the other side does not offer (unknown, or another
/// version of a known one) gives NULL, and the caller goes on without it.
final class ExtensionLookupTests: XCTestCase {
    /// A Swift plugin library opened by the C-level harness, kept mapped
    /// (RTLD_NODELETE) when the harness closes it: the Swift runtime keeps
    /// pointers into it, and a host never unloads a plugin.
    func swiftPlugin(_ name: String, nodeID: String, inputChannels: Int) throws -> ABIPlugin {
        let path = try BuiltPlugins.path(name)
        XCTAssertNotNil(dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))
        return try ABIPlugin(path: path, nodeID: nodeID, inputChannels: inputChannels, outputChannels: 2, sampleRate: 48000)
    }

    func testTheHostTableFindsEachHostExtensionByItsIdAndNothingElse() throws {
        let host = PluginHost(nodeID: "n", typeID: "t")
        let table = UnsafePointer(host.table)
        XCTAssertEqual(table.pointee.abi.major, 2)
        let get = try XCTUnwrap(table.pointee.get_extension)
        for id in [AGRAPH_HOST_EXT_LOG, AGRAPH_HOST_EXT_OUTPUT_ROUTE, AGRAPH_HOST_EXT_LATENCY, AGRAPH_HOST_EXT_THREAD_CHECK] {
            XCTAssertNotNil(get(table, id), id)
        }
        // What is behind an id works: the route the node's host says.
        host.outputRoute = .headphones
        let route = try XCTUnwrap(get(table, AGRAPH_HOST_EXT_OUTPUT_ROUTE)).assumingMemoryBound(to: agraph_host_output_route_t.self)
        XCTAssertEqual(route.pointee.get?(table), AGRAPH_ROUTE_HEADPHONES.rawValue)
        host.outputRoute = .speakers
        XCTAssertEqual(route.pointee.get?(table), AGRAPH_ROUTE_SPEAKERS.rawValue)
        for id in ["agraph.log/2", "agraph.log", "agraph.no-such-extension/1", ""] {
            XCTAssertNil(get(table, id), "'\(id)'")
        }
        XCTAssertNil(get(table, nil))
    }

    func testAKitPluginFindsItsExtensionsByIdAndAnswersNullToOtherIds() throws {
        let plugin = try swiftPlugin("libAGraphPCMFramesPlugin.so", nodeID: "dec", inputChannels: 0)
        XCTAssertTrue(plugin.details.hasPrefix("Codec pcm-frames"), "plugin-wide: \(AGRAPH_EXT_PLUGIN_INFO)")
        XCTAssertNil(plugin.descriptor.pointee.get_extension?("agraph.plugin-info/2"))
        XCTAssertNil(plugin.descriptor.pointee.get_extension?("agraph.no-such-extension/1"))
        let instance = try plugin.create([:])
        defer { instance.destroy() }
        XCTAssertNotNil(instance.pluginExtension(AGRAPH_EXT_DECODER))
        XCTAssertNotNil(instance.pluginExtension(AGRAPH_EXT_OUTPUT_ROUTE))
        for id in ["agraph.decoder/2", "agraph.no-such-extension/1", ""] {
            XCTAssertNil(instance.pluginExtension(id), "'\(id)'")
        }
        // The decoder found by its id decodes (nothing yet: it drains empty).
        try instance.activate()
        XCTAssertEqual(try instance.drain().left, [])
        instance.deactivate()
    }

    /// A realtime node of the example plugin has no decoder extension: the
    /// kit says NULL for that id, and the host renders it as a realtime node.
    func testARealtimeKitNodeHasNoDecoderExtension() throws {
        let plugin = try swiftPlugin("libAGraphExamplePlugin.so", nodeID: "ring", inputChannels: 2)
        let instance = try plugin.create([:])
        defer { instance.destroy() }
        XCTAssertNil(instance.pluginExtension(AGRAPH_EXT_DECODER))
        XCTAssertNil(instance.pluginExtension(AGRAPH_EXT_DECODER_STREAM))
        XCTAssertNotNil(instance.pluginExtension(AGRAPH_EXT_OUTPUT_ROUTE))
    }
}
