import AudioGraph
import AudioGraphCore
import Foundation
import TestSupport
import XCTest

/// "no node 'x'; nodes: …" listed every id of the graph on one line (a
/// 10,000-node graph: about 60,000 characters for one typo): it names the
/// closest id when one is close, then the first few ids and how many more,
/// like the reload lines.
final class UnknownNodeMessageTests: XCTestCase {
    static let count = 10_000

    func testAnUnknownNodeInABigGraphGetsAShortMessageWithTheClosestId() throws {
        let graph = try ReloadScaleTests.chain(Self.count)
        let compiled = try GraphCompiler.compile(graph, maxFrames: 64)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        let more = "g0, g1, g2, g3, … and \(Self.count - 3) more"
        for (line, expected) in [
            ("set nosuch.gain 1", "no node 'nosuch'; nodes (\(Self.count + 2)): src, \(more)"),
            ("set g4242x.gain 1", "no node 'g4242x'; did you mean 'g4242'? nodes (\(Self.count + 2)): src, \(more)"),
            ("get g9999y.gain", "no node 'g9999y'; did you mean 'g9999'? nodes (\(Self.count + 2)): src, \(more)"),
        ] {
            guard case .failure(let e)? = surface.execute(line: line) else { return XCTFail("\(line) was taken") }
            XCTAssertEqual(e.message, expected)
            XCTAssertLessThan(e.message.count, 200, line)
        }
        // The compiled graph's own setter (the Swift API) says the same.
        XCTAssertThrowsError(try compiled.set("g4242x.gain", 1)) { error in
            XCTAssertEqual("\(error)", "no node 'g4242x'; did you mean 'g4242'? nodes (\(Self.count + 2)): src, \(more)")
        }
        // Nothing was changed by the refused lines.
        XCTAssertEqual(try surface.get("g4242.gain").value, 0)
    }

    /// A small graph still lists every id, as before.
    func testASmallGraphListsEveryId() throws {
        let compiled = try GraphCompiler.compile(try ReloadScaleTests.chain(3), maxFrames: 64)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        guard case .failure(let e)? = surface.execute(line: "set zzz.gain 1") else { return XCTFail("taken") }
        XCTAssertEqual(e.message, "no node 'zzz'; nodes: src, g0, g1, g2, out")
    }
}

/// Issue 23: an unknown node type that a plugin of this package provides
/// (`ffmpeg` with AGraphFFmpegPlugin not built) says which product to
/// build, from one table (PackagePlugins) that matches what the products
/// really provide.
final class UnknownPluginTypeMessageTests: XCTestCase {
    func errors(_ json: String, registry: NodeRegistry = .builtIn) -> [Diagnostic] {
        switch GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: "g.json", directory: "/tmp") {
        case .success: XCTFail("should not validate"); return []
        case .failure(let e): return e.errors
        }
    }

    func testAPluginTypeOfThisPackageNamesItsProduct() throws {
        for (type, product) in [("ffmpeg", "AGraphFFmpegPlugin"), ("daa", "AGraphDAAPlugin"),
                                ("com.example.crossfeed", "AGraphCrossfeedPlugin"),
                                ("com.example.ducker", "AGraphExamplePlugin")] {
            var registry = NodeRegistry.builtIn
            registry.unavailableNote = "plugins searched: /nowhere"
            let found = errors(#"{"format": "agraph/1", "nodes": [{"id": "x", "type": "\#(type)"}], "links": []}"#,
                               registry: registry)
            XCTAssertEqual(found.count, 1, found.map(\.description).joined(separator: "\n"))
            XCTAssertEqual(found.first?.pointer.display, "/nodes/0/type")
            XCTAssertEqual(found.first?.message,
                           "unknown node type \"\(type)\": it comes from the plugin product \(product) of this package; "
                           + "build it with `swift build --product \(product)` (or scripts/demo), or put the folder "
                           + "holding lib\(product).so on AGRAPH_PLUGIN_PATH; plugins searched: /nowhere")
        }
    }

    /// Any other unknown type keeps the suggestion and the list of known types.
    func testAnotherUnknownTypeStillListsTheKnownTypes() throws {
        let found = errors(#"{"format": "agraph/1", "nodes": [{"id": "x", "type": "gian"}], "links": []}"#)
        XCTAssertEqual(found.count, 1)
        let message = try XCTUnwrap(found.first?.message)
        XCTAssertTrue(message.hasPrefix("unknown node type \"gian\"; did you mean \"gain\"? known types: test-tone,"), message)
        XCTAssertFalse(message.contains("--product"), message)
    }

    /// The table is what the built products provide: each library loads
    /// and gives exactly the type ids listed for it, and no two products
    /// list one type.
    func testTheTableMatchesTheBuiltPlugins() throws {
        var seen: Set<String> = []
        for product in PackagePlugins.products {
            var catalog = PluginCatalog()
            catalog.loadLibrary(try BuiltPlugins.path(product.fileName))
            XCTAssertEqual(catalog.failures.map(\.description), [], product.name)
            XCTAssertEqual(catalog.plugins.first?.typeIDs, product.typeIDs, product.name)
            for id in product.typeIDs { XCTAssertTrue(seen.insert(id).inserted, "\(id) listed twice") }
            for id in product.typeIDs { XCTAssertEqual(PackagePlugins.product(providing: id)?.name, product.name) }
        }
        XCTAssertNil(PackagePlugins.product(providing: "gain"))
    }
}
