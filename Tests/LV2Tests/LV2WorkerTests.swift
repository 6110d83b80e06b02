import AudioGraph
import Foundation
import TestSupport
import XCTest

/// LV2's worker through a fixture plugin (Tests/PluginFixtures/WorkerLV2):
/// work scheduled in `run` runs on the engine's worker thread, not the
/// audio thread, and its reply reaches the plugin at the next block.
final class LV2WorkerTests: XCTestCase {
    func testWorkScheduledInRunRunsOnTheWorkerAndItsReplyArrivesAtTheNextBlock() throws {
        // The fixture is built beside agraph (a dynamic library product).
        guard let agraph = locateAgraph().path else { throw XCTSkip("agraph is not built next to the tests") }
        let library = (agraph as NSString).deletingLastPathComponent + "/libLV2TestWorker.so"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: library), "the worker fixture is not built; build with --build-tests")
        let dir = try TemporaryDirectory()
        let bundle = dir.file("worker.lv2")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        try """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix doap: <http://usefulinc.com/ns/doap#> .
            @prefix work: <http://lv2plug.in/ns/ext/worker#> .
            <urn:audiograph:test:worker> a lv2:Plugin ; lv2:binary <file://\(library)> ;
                doap:name "Worker fixture" ; lv2:requiredFeature work:schedule ; lv2:extensionData work:interface ;
                lv2:port [ a lv2:AudioPort , lv2:InputPort ; lv2:index 0 ; lv2:symbol "in" ; lv2:name "In" ] ,
                         [ a lv2:AudioPort , lv2:OutputPort ; lv2:index 1 ; lv2:symbol "out" ; lv2:name "Out" ] ,
                         [ a lv2:ControlPort , lv2:OutputPort ; lv2:index 2 ; lv2:symbol "other" ; lv2:name "Off the run thread" ] .
            """.write(toFile: bundle + "/manifest.ttl", atomically: true, encoding: .utf8)
        LV2World.shared.loadBundle(bundle)
        let messages = Locked<[String]>([])
        LV2Log.handler = { line in messages.withLock { $0.append(line) } }
        defer { LV2Log.handler = nil }

        let json = lv2Graph(source: tone(1000, level: -20), params: #"{"uri": "urn:audiograph:test:worker"}"#)
        var others: [Double] = []
        let samples = try renderLV2(json, frames: 256 * 20, blockFrames: 256) { block, compiled in
            if block > 0 { others.append((compiled.engine.node("fx") as? MeasuringNode)?.reading("other") ?? -1) }
        }
        let out = samples.samples[0]
        // The prepare probe ran the plugin some blocks first (their work is
        // answered too): block b shows the answer to the run just before it.
        let levels = (0..<20).map { out[$0 * 256] }
        for b in 1..<20 {
            XCTAssertEqual(levels[b], levels[b - 1] + 1, "block \(b): the reply of the previous block's work: \(levels)")
            XCTAssertTrue(out[(b * 256)..<((b + 1) * 256)].allSatisfy { $0 == levels[b] }, "one level per block")
        }
        XCTAssertGreaterThan(levels[0], 0, "the probe's work was answered before the first block")
        XCTAssertEqual(Set(others), [1], "work ran on another thread than run, every time")
        // LV2 log: a message from instantiate (main thread) at once, one from
        // run (the audio thread) queued and printed off it.
        let logged = messages.withLock { $0 }
        XCTAssertTrue(logged.contains("agraph: lv2 node 'fx': note: instantiated at 48000 Hz"), "\(logged)")
        XCTAssertTrue(logged.contains("agraph: lv2 node 'fx': note: run number 3"), "\(logged)")
    }
}
