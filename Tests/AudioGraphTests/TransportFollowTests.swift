import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Following a transport, without JACK: the engine holds the following
/// steps (`transportHeld`), a `file` source moves to a transport frame
/// with its `start` and `loop`, the seek requests' bookkeeping, the
/// window mapping of the decoders, and `seek` leaving followers to the
/// transport. The live side (jack_transport against a recording) is in
/// LiveJACKTests/TransportLiveTests.
final class TransportFollowTests: XCTestCase {
    var dir: TemporaryDirectory!
    static let frames = 48_000

    override func setUpWithError() throws {
        dir = try TemporaryDirectory()
        // Frame i is (i + 1) / 2^24: exact in Float32, 0 is silence.
        try writeSoundFile(dir.file("numbered.wav"), format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: (0..<Self.frames).map { Float($0 + 1) / 16_777_216 })
    }

    override func tearDown() { dir = nil }

    static func frameIndex(_ v: Float) -> Int? { v == 0 ? nil : Int((Double(v) * 16_777_216).rounded()) - 1 }

    /// `song` (a `file` with `params`) and a free `free` copy, each into a
    /// `null` sink; compiled for blocks of up to 256 frames.
    func engine(song params: String = "") throws -> Engine {
        let json = """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "song", "type": "file", "params": {"path": "numbered.wav", "transport": "follow"\(params)}},
              {"id": "free", "type": "file", "params": {"path": "numbered.wav", "loop": true}},
              {"id": "n1", "type": "null"}, {"id": "n2", "type": "null"}],
             "links": [{"from": "song", "to": "n1"}, {"from": "free", "to": "n2"}]}
            """
        let graph = try TestGraph.validate(json, directory: dir.path)
        let engine = try GraphCompiler.compile(graph, maxFrames: 256).engine
        XCTAssertEqual(engine.setTransportFollowers(["song", "nothing"]), ["nothing"])
        XCTAssertEqual(engine.transportFollowers, ["song"])
        return engine
    }

    /// The frames a step's output carried in the last block (nil: silence).
    func block(_ engine: Engine, _ id: String, _ n: Int = 256) -> [Int?] {
        let bus = engine.outputs[engine.stepIndex(of: id)!]!
        return (0..<n).map { Self.frameIndex(bus.channel(0)[$0]) }
    }

    /// Renders one block once the worker has filled the rings.
    func render(_ engine: Engine, _ n: Int = 256) {
        engine.worker.waitUntilReady(frames: n)
        engine.render(frames: n)
    }

    /// Locates `song` at transport frame `frame` and, as a live host does,
    /// renders held blocks (which drop the stale audio, so that the reader
    /// can refill) until it is there; then renders a block and returns
    /// what it played.
    func locate(_ engine: Engine, _ frame: Int) throws -> [Int?] {
        let song = try XCTUnwrap(engine.node("song") as? TransportFollowing)
        song.locate(toTransportFrame: frame)
        engine.worker.wake()
        engine.transportHeld = true
        let deadline = Date().addingTimeInterval(5)
        while !song.isLocated(readyFor: 256) && Date() < deadline {
            engine.render(frames: 256)
            XCTAssertEqual(block(engine, "song"), Array(repeating: nil, count: 256), "silent while held")
            usleep(1000)
        }
        XCTAssertTrue(song.isLocated(readyFor: 256), "located at \(frame)")
        engine.transportHeld = false
        render(engine)
        return block(engine, "song")
    }

    // MARK: the engine holds the followers

    func testHeldFollowersPlaySilenceAndGoOnWhereTheyStoppedWhileOthersRun() throws {
        let engine = try engine()
        XCTAssertEqual((engine.node("song") as? TransportFollowing)?.transportMode, .follow)
        XCTAssertEqual((engine.node("free") as? TransportFollowing)?.transportMode, .free)
        engine.worker.start()
        defer { engine.worker.stop() }
        var song: [Int?] = [], free: [Int?] = []
        for k in 0..<12 {
            engine.transportHeld = (4..<8).contains(k)
            render(engine)
            song += block(engine, "song")
            free += block(engine, "free")
            let state = engine.outputs[engine.stepIndex(of: "song")!]!.state
            XCTAssertEqual(state, BusState(validFrames: 256, ended: false), "block \(k): running, held or not")
        }
        XCTAssertEqual(Array(song[1024..<2048]), Array(repeating: nil, count: 1024), "held: silence")
        XCTAssertEqual(Array(song[0..<1024]).compactMap { $0 }, Array(0..<1024))
        XCTAssertEqual(Array(song[2048...]).compactMap { $0 }, Array(1024..<2048), "on from where it was held")
        XCTAssertEqual(free.compactMap { $0 }, Array(0..<3072), "the free source never held")
    }

    func testHoldingAndReleasingAllocatesNothingOnTheRenderThread() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let engine = try engine(song: #", "loop": true"#)
        engine.worker.start()
        defer { engine.worker.stop() }
        render(engine)
        engine.transportHeld = true
        render(engine)
        var k = 0
        let allocations = MallocCounter.countRendering(engine, sizes: [256, 64, 1, 200], every: 10) {
            k += 1
            engine.transportHeld = k % 3 == 0
            engine.worker.waitUntilReady(frames: 256)
        }
        XCTAssertEqual(allocations, 0, "allocations over 10,000 blocks, held and released")
    }

    // MARK: where a file goes for a transport frame

    func testAFileGoesToStartPlusTheTransportFrameAndLoopsLapsFromItsBeginning() throws {
        let plain = try engine()
        plain.worker.start()
        defer { plain.worker.stop() }
        XCTAssertEqual(try locate(plain, 1000), (1000..<1256).map { $0 }, "frame F of the transport plays frame F")
        XCTAssertEqual(try locate(plain, 0), (0..<256).map { $0 })
        // Past the end: the stream ends (silence) until moved back.
        XCTAssertEqual(try locate(plain, 60_000), Array(repeating: nil, count: 256))
        XCTAssertTrue(plain.outputs[plain.stepIndex(of: "song")!]!.state.ended, "ended past the end")
        XCTAssertEqual(try locate(plain, 5), (5..<261).map { $0 }, "back from past the end")
        // The end itself: the last frames, then the end of the stream.
        let tail = try locate(plain, Self.frames - 100)
        XCTAssertEqual(Array(tail[0..<100]), (Self.frames - 100..<Self.frames).map { $0 })
        XCTAssertEqual(Array(tail[100...]), Array(repeating: nil, count: 156))

        let started = try engine(song: #", "start": 0.5"#)
        started.worker.start()
        defer { started.worker.stop() }
        XCTAssertEqual(try locate(started, 1000), (25_000..<25_256).map { $0 }, "start + F")

        // start 0.5 s, looping: 24000 frames to the end, then laps of the
        // whole file from its beginning.
        let looped = try engine(song: #", "start": 0.5, "loop": true"#)
        looped.worker.start()
        defer { looped.worker.stop() }
        XCTAssertEqual(try locate(looped, 24_010), (10..<266).map { $0 }, "the first lap from the file's beginning")
        XCTAssertEqual(try locate(looped, 24_000 + 3 * Self.frames + 7), (7..<263).map { $0 }, "the fourth lap")
        let seam = try locate(looped, 23_900)
        XCTAssertEqual(seam, ((47_900..<48_000).map { $0 } + (0..<156).map { $0 }), "across the loop's seam")
    }

    // MARK: bookkeeping

    func testSeekRequestsSettleOnlyOnceTheLatestIsCarriedOut() {
        let seeks = SeekRequests()
        XCTAssertTrue(seeks.isSettled)
        XCTAssertNil(seeks.take())
        seeks.request(5)
        XCTAssertFalse(seeks.isSettled)
        let first = try? XCTUnwrap(seeks.take())
        XCTAssertEqual(first?.frame, 5)
        XCTAssertFalse(seeks.isSettled, "taken, not yet carried out")
        // A newer request while the first is carried out.
        seeks.request(7)
        seeks.request(9)
        seeks.done(first?.sequence ?? -1)
        XCTAssertFalse(seeks.isSettled, "the first was carried out, not the latest")
        let latest = seeks.take()
        XCTAssertEqual(latest?.frame, 9, "the latest wins")
        XCTAssertNil(seeks.take())
        seeks.done(latest?.sequence ?? -1)
        XCTAssertTrue(seeks.isSettled)
        seeks.request(-3)
        XCTAssertEqual(seeks.take()?.frame, 0, "clamped to 0")
    }

    func testTheDecodersWindowMapsTransportFramesFromItsStart() {
        let plain = PlaybackWindow(start: 100, end: 1100, loops: false)
        XCTAssertEqual(plain.sample(forTransportFrame: 0), 100)
        XCTAssertEqual(plain.sample(forTransportFrame: 2500), 2600, "past the end: the stream ends there")
        let looped = PlaybackWindow(start: 100, end: 1100, loops: true)
        XCTAssertEqual(looped.sample(forTransportFrame: 999), 1099)
        XCTAssertEqual(looped.sample(forTransportFrame: 1000), 100)
        XCTAssertEqual(looped.sample(forTransportFrame: 2500), 600)
        let unknownEnd = PlaybackWindow(start: 100, end: nil, loops: true)
        XCTAssertEqual(unknownEnd.sample(forTransportFrame: 2500), 2600, "no end known: no wrap")
        XCTAssertEqual(PlaybackWindow.whole.sample(forTransportFrame: 42), 42)
    }

    // MARK: control surface and status

    final class FollowingHost: ControlHost, @unchecked Sendable {
        let followers: [String]
        init(_ followers: [String]) { self.followers = followers }
        func pause() {}
        func play() {}
        func status() -> GraphStatus {
            GraphStatus(seconds: 1, frames: 48000, peaks: [], xruns: 0, underruns: 0, cpuLoad: 0, bufferSize: 256,
                        paused: false, finished: false, serverGone: false,
                        transport: TransportReading(state: .rolling, frame: 96000, seconds: 2, followers: followers, located: false))
        }
        var transportFollowers: [String] { followers }
    }

    func testSeekLeavesFollowersToTheTransportAndStatusShowsIt() throws {
        let graph = try TestGraph.validate("""
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "song", "type": "file", "params": {"path": "numbered.wav", "transport": "follow"}},
              {"id": "free", "type": "file", "params": {"path": "numbered.wav"}},
              {"id": "n1", "type": "null"}, {"id": "n2", "type": "null"}],
             "links": [{"from": "song", "to": "n1"}, {"from": "free", "to": "n2"}]}
            """, directory: dir.path)
        let compiled = try GraphCompiler.compile(graph, maxFrames: 256)
        let host = FollowingHost(["song"])
        let control = ControlSurface(compiled: compiled, host: host)
        guard case .failure(let e)? = control.execute(line: "seek song 0.5") else { return XCTFail("seek on a follower") }
        XCTAssertEqual(e.message, "'song' follows the JACK transport: locate the transport instead (e.g. jack_transport: locate FRAME)")
        guard case .success(.seeked(nil, 0.5))? = control.execute(line: "seek 0.5") else { return XCTFail("seek of the others") }
        let allHost = FollowingHost(["song", "free"])   // the surface holds its host weakly
        let everyone = ControlSurface(compiled: compiled, host: allHost)
        guard case .failure(let all)? = everyone.execute(line: "seek 0.5") else { return XCTFail("nothing left to seek") }
        XCTAssertTrue(all.message.hasPrefix("every seekable source follows the JACK transport"), all.message)
        withExtendedLifetime(allHost) {}

        let status = try control.status()
        XCTAssertEqual(status.transport?.followers, ["song"])
        XCTAssertTrue(status.text.hasPrefix("1.0 s  transport rolling 2.0 s (frame 96000) locating  "), status.text)
    }
}
