import AudioGraph
import Foundation
import TestSupport
import XCTest

/// A `playlist` following a transport: transport frame F plays the list as
/// if it had played from its first item for F frames (each item its
/// window), with `loop` wrapping, silence past the end, back again after.
/// The items are the numbered sequence cut in three, so every output
/// sample says which frame of the sequence it is.
final class PlaylistTransportTests: PlaylistTestCase {
    static func value(_ i: Int) -> Float { Float(i + 1) / 16_777_216 }
    static func frameIndex(_ v: Float) -> Int? { v == 0 ? nil : Int((Double(v) * 16_777_216).rounded()) - 1 }

    func numbered(_ name: String, _ frames: Range<Int>) throws {
        try writeSoundFile(dir.file(name), format: .wavFloat32, channels: 1, sampleRate: Self.rate, samples: frames.map(Self.value))
    }

    /// a.wav: frames 0…14399; b.wav: 14400…33599, played from 0.1 s in
    /// (frames 19200…33599); c.wav: 33600…47999. The list plays 14400
    /// frames of each: transport frame F plays frame F below 14400, F + 4800 above.
    func engine(loop: Bool) throws -> (Engine, ControlSurface) {
        try numbered("a.wav", 0..<14_400)
        try numbered("b.wav", 14_400..<33_600)
        try numbered("c.wav", 33_600..<48_000)
        let (registry, _) = TestGraph.pluginRegistry()
        let graph = try TestGraph.validate(self.graph("""
            "layout": "mono", "transport": "follow", "loop": \(loop),
            \(items([("a.wav", ""), ("b.wav", #""start": 0.1"#), ("c.wav", "")]))
            """).replacingOccurrences(of: #""type": "capture""#, with: #""type": "null""#),
            registry: registry, directory: dir.path).get()
        let compiled = try GraphCompiler.compile(graph, maxFrames: 256)
        XCTAssertEqual(compiled.engine.setTransportFollowers(["pl"]), [])
        return (compiled.engine, ControlSurface(compiled: compiled, host: OfflineHost()))
    }

    func block(_ engine: Engine) -> [Int?] {
        let bus = engine.outputs[engine.stepIndex(of: "pl")!]!
        return (0..<256).map { Self.frameIndex(bus.channel(0)[$0]) }
    }

    /// Locates, renders held blocks (as a live host does) until the
    /// playlist is there, then one block; returns what it played.
    func locate(_ engine: Engine, _ frame: Int) throws -> [Int?] {
        let pl = try XCTUnwrap(engine.node("pl") as? TransportFollowing)
        XCTAssertEqual(pl.transportMode, .follow)
        pl.locate(toTransportFrame: frame)
        engine.worker.wake()
        engine.transportHeld = true
        let deadline = Date().addingTimeInterval(10)
        while !pl.isLocated(readyFor: 256) && Date() < deadline {
            engine.render(frames: 256)
            usleep(1000)
        }
        XCTAssertTrue(pl.isLocated(readyFor: 256), "located at \(frame)")
        engine.transportHeld = false
        engine.render(frames: 256)
        return block(engine)
    }

    func testTransportFramesMapOntoTheListItemByItem() throws {
        let (engine, control) = try engine(loop: false)
        engine.worker.start()
        defer { engine.worker.stop() }
        XCTAssertEqual(try locate(engine, 1000), (1000..<1256).map { $0 }, "in the first item")
        XCTAssertEqual(try locate(engine, 20_000), (24_800..<25_056).map { $0 }, "in the second, from its start")
        XCTAssertEqual(try locate(engine, 14_400), (19_200..<19_456).map { $0 }, "the second item's first frame")
        XCTAssertEqual(try locate(engine, 40_000), (44_800..<45_056).map { $0 }, "in the third")
        // Across an item boundary: gapless on into the next item.
        XCTAssertEqual(try locate(engine, 14_300), (14_300..<14_400).map { $0 } + (19_200..<19_356).map { $0 })
        // Past the end: silence, the stream ended; then back.
        XCTAssertEqual(try locate(engine, 43_200), Array(repeating: nil, count: 256))
        XCTAssertTrue(engine.outputs[engine.stepIndex(of: "pl")!]!.state.ended)
        XCTAssertEqual(try locate(engine, 5), (5..<261).map { $0 }, "back from past the end")
        var cursor = PlaylistEventCursor()
        let events = words(control.playlistEvents(since: &cursor))
        XCTAssertTrue(events.contains("skipped 1"), "a locate leaves the item heard as skipped: \(events)")
        XCTAssertEqual(events.last, "started 0", "\(events)")
    }

    func testALoopingListWrapsTransportFrames() throws {
        let (engine, _) = try engine(loop: true)
        engine.worker.start()
        defer { engine.worker.stop() }
        XCTAssertEqual(try locate(engine, 43_200 + 1000), (1000..<1256).map { $0 }, "the second lap")
        XCTAssertEqual(try locate(engine, 3 * 43_200 + 30_000), (34_800..<35_056).map { $0 }, "the fourth lap, third item")
        // The end of the list runs on into its start.
        XCTAssertEqual(try locate(engine, 43_100), (47_900..<48_000).map { $0 } + (0..<156).map { $0 })
    }
}
