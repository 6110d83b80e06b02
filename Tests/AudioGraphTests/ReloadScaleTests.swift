import AudioGraph
import AudioGraphCore
import Foundation
import TestSupport
import XCTest

/// A graph of tens of thousands of nodes: looking a node up by id, working
/// out a reload and building an engine around kept nodes scale with the
/// node count, not with its square (issue 22 item 5: a linear search by id
/// inside per-node loops made a 10,000-node `agraph run` take 72 s to set
/// up and a reload stall the main thread for seconds).
final class ReloadScaleTests: XCTestCase {
    static let count = 20_000

    /// A `test-tone` through `count` `gain` nodes (each at `gain` dB) into
    /// a `null`.
    static func chain(_ count: Int, gain: Double = 0, waveform: String = "sine") throws -> ValidatedGraph {
        let json = GainChain.json(count: count, gain: gain, waveform: waveform)
        return try GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "chain.json", directory: "/tmp").get()
    }

    /// Seconds `body` takes.
    func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = Date()
        try body()
        return Date().timeIntervalSince(start)
    }

    func testTwentyThousandNodesAreLookedUpAndReloadedInLinearTime() throws {
        let n = Self.count
        let a = try Self.chain(n)
        let compiled = try GraphCompiler.compile(a, maxFrames: 64)
        let ids = a.nodes.map(\.id)

        // Every node by id, as the live host does once per node when it
        // sets up its events, fills and followers (20,000 × 20,000 / 2
        // string comparisons before: about 20 s in a debug build).
        var found = 0
        let lookups = seconds {
            for id in ids where compiled.engine.node(id) != nil && compiled.graphNode(id) != nil { found += 1 }
        }
        XCTAssertEqual(found, n + 2)
        XCTAssertEqual(compiled.engine.stepIndex(of: "g\(n - 1)"), n)
        XCTAssertNil(compiled.engine.stepIndex(of: "nowhere"))
        XCTAssertLessThan(lookups, 2, "\(n + 2) lookups by id took \(lookups) s")

        // A reload that changes every gain: live changes only, each one
        // resolved by address (before: a walk of the graph per change).
        var b = a
        for i in b.nodes.indices where b.nodes[i].descriptor.typeID == "gain" { b.nodes[i].parameters.values["gain"] = .number(-1) }
        var diff = GraphDiff(from: a, to: b)
        var resolved = 0
        let parameterReload = seconds {
            diff = GraphDiff(from: a, to: b)
            let next = compiled.withGraph(b)
            for c in diff.parameterChanges where (try? next.change(c.address, c.value)) != nil { resolved += 1 }
            _ = compiled.liveResets(for: diff, in: next)
        }
        XCTAssertTrue(diff.isParameterOnly)
        XCTAssertEqual(diff.parameterChanges.count, n)
        XCTAssertEqual(resolved, n)
        XCTAssertLessThan(parameterReload, 5, "a \(n)-change reload's diff and checks took \(parameterReload) s")
        let report = ReloadReport(diff: diff, swapped: false)
        var line = ""
        let described = seconds { line = report.description }
        XCTAssertEqual(line, "reload: \(n) parameters changed (g0.gain, g1.gain, g2.gain, g3.gain, g4.gain, … and \(n - 5) more), \(n + 2) kept")
        XCTAssertLessThan(described, 1, "the report's line took \(described) s")

        // A rebuild around kept nodes: the old engine's steps found by id.
        var c = a
        c.nodes[0].parameters.values["waveform"] = .string("square")
        let replaced = GraphDiff(from: a, to: c)
        XCTAssertEqual(replaced.replaced.count, n + 2, "the source changed: everything below it is made anew")
        let keepAll = seconds {
            let again = try? GraphCompiler.compile(a, maxFrames: 64, keeping: (compiled, Set(ids)))
            XCTAssertEqual(again?.engine.ids.count, n + 2)
            XCTAssertTrue(again?.engine.node("g0") === compiled.engine.node("g0"), "kept: the same object")
        }
        XCTAssertLessThan(keepAll, 5, "an engine keeping \(n + 2) nodes took \(keepAll) s")
    }

    /// A reload report names at most a few nodes per list, then how many more.
    func testAReportOfManyNodesIsSummarised() throws {
        let a = try Self.chain(3)
        let b = try Self.chain(3, waveform: "square")
        XCTAssertEqual(ReloadReport(diff: GraphDiff(from: a, to: b), swapped: true).description,
                       "reload: 5 replaced (src, g0, g1, g2, out), 0 kept", "five names: all shown")
        let c = try Self.chain(5, waveform: "square")
        XCTAssertEqual(ReloadReport(diff: GraphDiff(from: a, to: c), swapped: true).description,
                       "reload: 2 nodes added (g3, g4), 5 replaced (src, g0, g1, g2, out), 0 kept")
        let d = try Self.chain(12, waveform: "square")
        let line = ReloadReport(diff: GraphDiff(from: d, to: a), swapped: true).description
        XCTAssertEqual(line, "reload: 5 replaced (src, g0, g1, g2, out), 9 removed (g3, g4, g5, g6, g7, … and 4 more), 0 kept")
    }
}
