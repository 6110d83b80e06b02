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
