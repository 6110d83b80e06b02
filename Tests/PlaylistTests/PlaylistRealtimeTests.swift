import AudioGraph
import Foundation
import TestSupport
import XCTest

/// The render path of a playlist allocates nothing while it plays and
/// switches items (of every kind: another rate, another layout, `next`):
/// its audio-thread half only reads the ring.
final class PlaylistRealtimeTests: PlaylistTestCase {
    func testNothingIsAllocatedOnTheRenderThreadWhileItemsSwitch() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let files = [
            try sineFile("mono.flac", frequency: 500, seconds: 0.2).path,
            try sineFile("stereo.wav", frequency: 700, seconds: 0.2, channels: 2, format: .wavFloat32).path,
            try sineFile("surround.flac", frequencies: [500, 700, 900, 60, 1100, 1300], seconds: 0.2).path,
            try sineFile("mono-44k1.flac", frequency: 900, seconds: 0.2, rate: 44_100).path,
        ]
        let (registry, _) = TestGraph.pluginRegistry()
        let graph = try TestGraph.validate(
            """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "pl", "type": "playlist", "params": {\(items(files.map { ($0, "") })), "loop": true}},
                       {"id": "out", "type": "null"}],
             "links": [{"from": "pl", "to": "out"}]}
            """, registry: registry, directory: dir.path).get()
        let compiled = try GraphCompiler.compile(graph, maxFrames: 256)
        let engine = compiled.engine
        let control = ControlSurface(compiled: compiled, host: OfflineHost())
        engine.worker.start()
        // Warm-up: the Swift runtime instantiates metadata on first use.
        engine.worker.waitUntilReady(frames: 256)
        engine.render(frames: 256)

        var blocks = 0
        let allocations = MallocCounter.countRendering(engine, sizes: [64, 256, 100, 1], every: 10) {
            // Outside the count: wait for the worker as the offline driver
            // does, and now and then skip to the next item (a flush of the ring).
            blocks += 10
            if blocks % 2_000 == 0 { _ = control.execute(line: "playlist pl next") }
            engine.worker.waitUntilReady(frames: 256)
        }
        engine.worker.stop()
        XCTAssertEqual(allocations, 0, "allocations on the render path across 10,000 blocks")
        var cursor = PlaylistEventCursor()
        let events = control.playlistEvents(since: &cursor)
        let started = events.filter { $0.kind == .started }
        XCTAssertGreaterThan(started.count, 50, "over 22 s of 0.2 s items, the playlist switched items many times")
        XCTAssertEqual(Set(started.map(\.item)), [0, 1, 2, 3], "every kind of item played")
        XCTAssertTrue(events.contains { $0.kind == .skipped }, "next skipped items")
        XCTAssertFalse(events.contains { if case .failed = $0.kind { return true }; return false }, "\(events.filter { $0.kind != .started })")
    }
}
