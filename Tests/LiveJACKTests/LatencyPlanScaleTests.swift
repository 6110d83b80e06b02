import AudioGraph
@testable import AudioGraphJACK
import Foundation
import TestSupport
import XCTest

/// The latency plan JACK's latency callback reads is worked out once per
/// jack-out node, not once per pair of ports (issue 22 item 5: each pair
/// walked the whole graph upstream again). No server is needed: the plan
/// only stores the port handles.
final class LatencyPlanScaleTests: XCTestCase {
    func testAPlanOf64InputsAnd64OutputsThroughThousandsOfNodesIsQuick() throws {
        let n = 3_000
        let json = GainChain.json(count: n, source: #"{"id": "src", "type": "jack-in", "params": {"channels": 64}}"#,
                                  sink: #"{"id": "out", "type": "jack-out"}"#, name: "wide")
        let binder = JACKPortBinder()
        let graph = try GraphValidator(registry: .builtIn.addingJACK(binder))
            .validate(bytes: Array(json.utf8), file: "wide.json", directory: "/tmp").get()
        let compiled = try GraphCompiler.compile(graph, maxFrames: 16, live: true)
        XCTAssertEqual(binder.ports.count, 128)
        // Stand-ins for JACK's port handles: the plan stores them, never follows them.
        let ports = binder.ports.indices.map { OpaquePointer(bitPattern: 0x1000 + 16 * $0) }
        let start = Date()
        let plan = LatencyPlan(engine: compiled.engine, binder: binder, ports: ports)
        let took = Date().timeIntervalSince(start)
        XCTAssertEqual(plan.outputs.count, 64)
        XCTAssertEqual(plan.inputs.count, 64)
        XCTAssertTrue(plan.outputs.allSatisfy { $0.feeders.count == 64 && $0.own == 0 }, "every input feeds every output, with no latency")
        XCTAssertTrue(plan.inputs.allSatisfy { $0.reaches.count == 64 })
        // Before: 64 × 64 walks of 3,000 steps (several seconds in a debug build).
        XCTAssertLessThan(took, LiveTiming.seconds(1), "the plan took \(took) s")
    }
}
