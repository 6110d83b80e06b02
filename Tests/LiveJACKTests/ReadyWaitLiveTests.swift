import AudioGraph
import AudioGraphJACK
import Foundation
import Synchronization
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 22: the waits for the background jobs before the first cycle and
/// before a reload's swap are bounded (`RunningGraph.Options.readyTimeout`)
/// and end when a stop is asked for (`shouldStop`: agraph run's SIGINT and
/// SIGTERM). They used to wait for ever on a job that never got ready,
/// freezing agraph run's main thread. `never-ready` (TestSupport) is such a
/// job.
final class ReadyWaitLiveTests: LiveTestCase {
    static func registry(_ binder: JACKPortBinder) -> NodeRegistry {
        var r = NodeRegistry.builtIn.addingJACK(binder)
        r.register(NeverReadySourceType())
        return r
    }

    static let neverReadyGraph = """
        {"format": "agraph/1", "name": "stuck", "sampleRate": 48000, "nodes": [
          {"id": "stuck", "type": "never-ready"},
          {"id": "out", "type": "jack-out", "params": {"ports": ["stuck_1", "stuck_2"]}}],
         "links": [{"from": "stuck", "to": "out"}]}
        """

    /// A start whose job never gets ready fails at the timeout, naming the node.
    func testStartWhoseJobNeverGetsReadyFailsWithinTheTimeout() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let started = Date()
        XCTAssertThrowsError(try startGraph(Self.neverReadyGraph, server: server.name, configure: { $0.readyTimeout = 1 },
                                            registry: Self.registry)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("the graph did not start"), text)
            XCTAssertTrue(text.contains("'stuck'"), "names the node: \(text)")
            XCTAssertTrue(text.contains("within 1 s"), text)
        }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 1, "waited the timeout")
        XCTAssertLessThan(elapsed, LiveTiming.seconds(1 + 4), "gave up at the timeout")
    }

    /// A stop asked for during the start's wait (SIGTERM in agraph run)
    /// ends it at once, long before the timeout.
    func testStopDuringTheStartWaitEndsIt() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let stop = Atomic<Bool>(false)
        let stopper = Thread { usleep(300_000); stop.store(true, ordering: .relaxed) }
        let started = Date()
        stopper.start()
        XCTAssertThrowsError(try startGraph(Self.neverReadyGraph, server: server.name, configure: { options in
            options.readyTimeout = 600
            options.shouldStop = { stop.load(ordering: .relaxed) }
        }, registry: Self.registry)) { error in
            XCTAssertTrue("\(error)".contains("interrupted while waiting for the node 'stuck'"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), LiveTiming.seconds(5), "ended by the stop, not the 600 s timeout")
    }

    /// A reload to a graph with a job that never gets ready is refused at
    /// the timeout with the reason, and the running graph plays on
    /// (recorded), unchanged; a stop asked for refuses it at once.
    func testReloadToAJobThatNeverGetsReadyIsRefusedAndTheOldGraphPlaysOn() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 8)
            defer { rec.close() }
            let stop = Atomic<Bool>(false)
            let live = try startGraph(Self.toneGraph(), server: server.name, configure: { options in
                options.readyTimeout = 1
                options.shouldStop = { stop.load(ordering: .relaxed) }
            }, registry: Self.registry)
            defer { live.stop() }
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5))
            let second = """
                {"format": "agraph/1", "name": "tone", "sampleRate": 48000, "nodes": [
                  {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -12, "channels": 2}},
                  {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}},
                  {"id": "stuck", "type": "never-ready"},
                  {"id": "out2", "type": "jack-out", "params": {"ports": ["stuck_1", "stuck_2"]}}],
                 "links": [{"from": "tone", "to": "out"}, {"from": "stuck", "to": "out2"}]}
                """
            let g = try GraphValidator(registry: Self.registry(live.binder))
                .validate(bytes: Array(second.utf8), file: "reloaded.json", directory: dir.path).get()
            let started = Date()
            XCTAssertThrowsError(try live.reload(graph: g)) { error in
                let text = "\(error)"
                XCTAssertTrue(text.hasPrefix("reload: "), text)
                XCTAssertTrue(text.contains("the node 'stuck' did not have the first"), text)
                XCTAssertTrue(text.contains("within 1 s"), text)
            }
            let elapsed = Date().timeIntervalSince(started)
            XCTAssertGreaterThanOrEqual(elapsed, 1)
            XCTAssertLessThan(elapsed, LiveTiming.seconds(1 + 4))
            XCTAssertFalse(live.isReloading)
            XCTAssertEqual(live.graph.nodes.map(\.id).sorted(), ["out", "tone"], "the running graph is unchanged")
            XCTAssertFalse(live.binder.ports.contains { $0.name.hasPrefix("stuck") && !$0.removed }, "no port of the refused graph")
            // The old graph plays on: a second of the tone after the refusal.
            let after = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(after + 48000, timeout: LiveTiming.seconds(10)))
            let played = rec.samples(0, after..<(after + 48000))
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(played), -12, accuracy: 0.3, "the tone plays on after the refused reload")
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(rec.samples(1, after..<(after + 48000))), -12, accuracy: 0.3)

            // A stop asked for ends the reload's wait at once.
            stop.store(true, ordering: .relaxed)
            let again = Date()
            XCTAssertThrowsError(try live.reload(graph: g)) { error in
                XCTAssertTrue("\(error)".contains("interrupted while waiting for the node 'stuck'"), "\(error)")
            }
            XCTAssertLessThan(Date().timeIntervalSince(again), LiveTiming.seconds(0.9), "before the 1 s timeout")
            try checkNoXruns(rec, live, isLast: isLast)
        }
    }
}
