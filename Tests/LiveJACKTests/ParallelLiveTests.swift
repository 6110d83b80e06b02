import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A live graph rendered on two threads (`"threads": 2`, `agraph run
/// --threads`): its two independent branches give the samples they give on
/// JACK's process thread alone; the helper thread runs while the graph runs
/// and is gone after `stop`; a bad `"threads"` is refused naming its path.
final class ParallelLiveTests: LiveTestCase {
    /// Two mono branches, each a tone through two filters and a gain, each
    /// to a `jack-out` of its own and a `capture` (stores 1 and 2); one second.
    static func twoBranchGraph(threads: String, duration: String = #", "duration": 1"#, filter: String = "low-pass",
                               stores: [String] = ["1", "2"], captures: Bool = true) -> String {
        func branch(_ k: Int, _ f: Double) -> String {
            #"""
            {"id": "t\#(k)", "type": "test-tone", "params": {"waveform": "saw", "frequency": \#(f), "level": -12, "channels": 1\#(duration)}},
            {"id": "lp\#(k)", "type": "filter", "params": {"type": "\#(filter)", "frequency": \#(f * 4), "q": 0.9}},
            {"id": "pk\#(k)", "type": "filter", "params": {"type": "peaking", "frequency": \#(f * 2), "q": 2, "gain": 6}},
            {"id": "g\#(k)", "type": "gain", "params": {"gain": -3}},
            {"id": "out\#(k)", "type": "jack-out", "params": {"ports": ["out_\#(k)"]}}
            """# + (captures ? #", {"id": "cap\#(k)", "type": "capture", "params": {"store": "\#(stores[k - 1])"}}"# : "")
        }
        func links(_ k: Int) -> String {
            #"{"from": "t\#(k)", "to": "lp\#(k)"}, {"from": "lp\#(k)", "to": "pk\#(k)"}, {"from": "pk\#(k)", "to": "g\#(k)"}, {"from": "g\#(k)", "to": "out\#(k)"}"# + (captures ? #", {"from": "g\#(k)", "to": "cap\#(k)"}"# : "")
        }
        return """
            {"format": "agraph/1", "name": "two-branches", "sampleRate": 48000, "threads": \(threads), "nodes": [
              \(branch(1, 220)),
              \(branch(2, 330))],
             "links": [\(links(1)), \(links(2))]}
            """
    }

    /// The JACK node types and `capture` over `stores`.
    static func registry(_ binder: JACKPortBinder, _ stores: [String: CaptureStore]) -> NodeRegistry {
        var r = NodeRegistry.builtIn.addingJACK(binder)
        r.register(CaptureType(stores: stores))
        return r
    }

    /// The helper threads of this process (named `agraph-render`).
    static func renderThreadCount() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == "agraph-render"
        }.count
    }

    /// What each branch rendered in one run, as the engine rendered it
    /// (captured in the graph: JACK's xruns on a loaded machine change
    /// when blocks render, not what they hold).
    func render(threads: String, check: (RunningGraph) -> Void = { _ in }) throws -> [[Float]] {
        let server = try TestJACKServer()
        defer { server.stop() }
        let stores = ["1": CaptureStore(capacityFrames: 60_000), "2": CaptureStore(capacityFrames: 60_000)]
        let live = try startGraph(Self.twoBranchGraph(threads: threads), server: server.name,
                                  registry: { Self.registry($0, stores) })
        let events = EventLog(live.events)
        XCTAssertNotNil(events.wait(timeout: 15) { $0 == .endOfStream }, "end of stream after 1 s; events: \(events.all)")
        check(live)
        live.stop()
        return [stores["1"]!.samples(0), stores["2"]!.samples(0)]
    }

    func testTwoBranchesOnTwoThreadsGiveTheSamplesOfOneThread() throws {
        XCTAssertEqual(Self.renderThreadCount(), 0)
        let one = try render(threads: "1") { live in
            XCTAssertNil(live.renderThreads)
            XCTAssertFalse(live.engine.rendersInParallel)
            XCTAssertEqual(Self.renderThreadCount(), 0)
        }
        let two = try render(threads: "2") { live in
            XCTAssertEqual(live.renderThreads?.helperCount, 1)
            XCTAssertTrue(live.engine.rendersInParallel)
            XCTAssertEqual(Self.renderThreadCount(), 1, "one helper runs while the graph runs")
        }
        XCTAssertEqual(Self.renderThreadCount(), 0, "the helper is gone after stop")
        for k in 0..<2 {
            XCTAssertEqual(one[k].count, 48000, "branch \(k + 1): one second")
            XCTAssertGreaterThan(SignalAnalysis.rmsDBFS(one[k]), -40, "branch \(k + 1) carries a signal")
            XCTAssertEqual(two[k].count, one[k].count)
            XCTAssertNil(firstMismatch(two[k], one[k]), "branch \(k + 1): the same samples on two threads as on one")
        }
        XCTAssertNotNil(firstMismatch(one[0], one[1]), "two different branches")
    }

    func testAReloadedEngineRendersOnTheSameThreads() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        // The new graph's captures record into stores of their own (a store
        // is prepared by the node that records into it).
        let stores = ["1": CaptureStore(capacityFrames: 48000 * 20), "2": CaptureStore(capacityFrames: 48000 * 20),
                      "3": CaptureStore(capacityFrames: 48000 * 20), "4": CaptureStore(capacityFrames: 48000 * 20)]
        let live = try startGraph(Self.twoBranchGraph(threads: "2", duration: ""), server: server.name,
                                  registry: { Self.registry($0, stores) })
        defer { live.stop() }
        XCTAssertTrue(live.engine.rendersInParallel)
        let helpers = try XCTUnwrap(live.renderThreads)
        XCTAssertTrue(waitUntil(timeout: 5) { stores["1"]!.frames > 4800 })
        // Another filter type: both branches' filters are rebuilt.
        let binder = live.binder
        let next = try GraphValidator(registry: Self.registry(binder, stores))
            .validate(bytes: Array(Self.twoBranchGraph(threads: "2", duration: "", filter: "high-pass", stores: ["3", "4"]).utf8),
                      file: "live.json", directory: dir.path).get()
        let report = try live.reload(graph: next)
        XCTAssertTrue(report.swapped)
        XCTAssertTrue(Set(report.replaced).isSuperset(of: ["lp1", "lp2"]), "\(report)")
        XCTAssertTrue(live.engine.rendersInParallel, "the new engine renders in parallel")
        XCTAssertTrue(live.renderThreads === helpers, "on the same helper")
        XCTAssertEqual(Self.renderThreadCount(), 1)
        XCTAssertTrue(waitUntil(timeout: 5) { stores["3"]!.frames > 9600 && stores["4"]!.frames > 9600 }, "both branches go on after the swap")
        XCTAssertGreaterThan(SignalAnalysis.rmsDBFS(stores["4"]!.samples(0)), -40)
    }

    func testAgraphRunThreadsOverridesTheGraphAndSaysSo() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        // Without the capture nodes: the CLI has no test stores.
        let json = Self.twoBranchGraph(threads: "1", captures: false)
        XCTAssertFalse(json.contains("capture"), json)
        let cli = try startAgraphRun(try writeGraph(json), server: server, ["--quiet", "--threads", "2"])
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("rendering on 2 threads", timeout: 5), cli.stderr)
        assertExitsCleanly(cli)
        XCTAssertFalse(cli.stderr.contains("no independent branches"), cli.stderr)
        let bad = try CLIProcess(["run", "g.json", "--threads", "zero"], directory: dir.path)
        XCTAssertTrue(bad.waitForExit(timeout: 10))
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("--threads must be"), bad.stderr)
    }

    func testABadThreadsValueIsRefusedNamingItsPath() throws {
        let stores = ["1": CaptureStore(capacityFrames: 1), "2": CaptureStore(capacityFrames: 1)]
        for bad in ["0", "65", "\"many\"", "1.5", "true"] {
            let binder = JACKPortBinder()
            let result = GraphValidator(registry: Self.registry(binder, stores))
                .validate(bytes: Array(Self.twoBranchGraph(threads: bad).utf8), file: "g.json", directory: dir.path)
            guard case .failure(let errors) = result else {
                XCTFail("\"threads\": \(bad) was accepted")
                continue
            }
            let text = "\(errors)"
            XCTAssertTrue(text.contains("/threads"), "names the JSON path: \(text)")
            XCTAssertTrue(text.contains("\"auto\""), "says what it takes: \(text)")
        }
        for good in ["1", "2", "\"auto\""] {
            let binder = JACKPortBinder()
            let g = try GraphValidator(registry: Self.registry(binder, stores))
                .validate(bytes: Array(Self.twoBranchGraph(threads: good).utf8), file: "g.json", directory: dir.path).get()
            XCTAssertEqual(g.threads, good == "\"auto\"" ? .auto : .count(Int(good)!))
        }
    }
}
