import AudioGraph
import Foundation
import TestSupport
import XCTest

/// The one graph monitor every front end subscribes to (issue #23), on
/// graphs rendered offline, and control addresses resolved once into
/// handles.
final class GraphMonitorTests: XCTestCase {
    /// A 1 kHz tone at -12 dBFS through a meter of 100 ms windows (4800 frames).
    static let meterGraph = """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "t", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
          {"id": "m", "type": "meter", "params": {"window": 100}},
          {"id": "o", "type": "null"}],
         "links": [{"from": "t", "to": "m"}, {"from": "m", "to": "o"}]}
        """

    func meterWindows(_ events: [GraphEvent]) -> [Int] {
        events.compactMap { if case .meter(let r) = $0 { r.window } else { nil } }
    }

    /// Renders one 100 ms meter window in blocks of 480 frames.
    func renderWindow(_ engine: Engine) {
        for _ in 0..<10 { engine.render(frames: 480) }
    }

    /// Two pulling subscribers (one that takes after every poll, one that
    /// takes once at the end) and a callback subscriber each see every
    /// meter window once, in order, with the levels the meter measured.
    func testTwoSubscribersSeeEveryMeterWindowOnceInOrder() throws {
        let compiled = try compileBuiltIn(Self.meterGraph, file: "meter.json", maxFrames: 480)
        let monitor = GraphMonitor(compiled: compiled)
        var eager = monitor.subscribe()
        var late = monitor.subscribe()
        let called = Locked<[GraphEvent]>([])
        let token = monitor.subscribe { e in called.withLock { $0.append(e) } }
        var eagerSeen: [GraphEvent] = []
        for _ in 0..<6 {
            renderWindow(compiled.engine)
            XCTAssertEqual(monitor.poll(), 1, "one window, one event")
            eagerSeen += monitor.events(since: &eager)
        }
        XCTAssertEqual(monitor.poll(), 0, "nothing new: no event")
        let lateSeen = monitor.events(since: &late)
        XCTAssertEqual(meterWindows(eagerSeen), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(eagerSeen, lateSeen, "the same values, in the same order")
        XCTAssertEqual(called.withLock { $0 }, eagerSeen)
        XCTAssertEqual(eager.missed, 0)
        XCTAssertEqual(late.missed, 0)
        for case .meter(let r) in eagerSeen {
            XCTAssertEqual(r.node, "m")
            XCTAssertEqual(r.channels[0].peakDBFS, -12, accuracy: 0.01)
            XCTAssertEqual(r.channels[0].rmsDBFS, -15.01, accuracy: 0.02)
        }
        XCTAssertTrue(monitor.events(since: &eager).isEmpty, "taken once")
        monitor.unsubscribe(token)
        renderWindow(compiled.engine)
        monitor.poll()
        XCTAssertEqual(meterWindows(monitor.events(since: &eager)), [7])
        XCTAssertEqual(meterWindows(called.withLock { $0 }), [1, 2, 3, 4, 5, 6], "no calls after unsubscribing")
    }

    /// A subscriber that stops taking costs the others nothing: the log
    /// keeps the newest `capacity` events; the one that fell behind loses
    /// its oldest (and says how many), the others lose none.
    func testASubscriberThatStopsTakingDoesNotMakeOthersMissEvents() throws {
        let compiled = try compileBuiltIn(Self.meterGraph, file: "meter.json", maxFrames: 480)
        let monitor = GraphMonitor(compiled: compiled, capacity: 4)
        var stalled = monitor.subscribe()
        var active = monitor.subscribe()
        let called = Locked<[GraphEvent]>([])
        _ = monitor.subscribe { e in called.withLock { $0.append(e) } }
        var seen: [GraphEvent] = []
        for _ in 0..<10 {
            renderWindow(compiled.engine)
            monitor.poll()
            seen += monitor.events(since: &active)
        }
        XCTAssertEqual(meterWindows(seen), Array(1...10))
        XCTAssertEqual(active.missed, 0)
        XCTAssertEqual(meterWindows(called.withLock { $0 }), Array(1...10))
        XCTAssertEqual(meterWindows(monitor.events(since: &stalled)), [7, 8, 9, 10], "the newest four")
        XCTAssertEqual(stalled.missed, 6)
        // From here it follows again.
        renderWindow(compiled.engine)
        monitor.poll()
        XCTAssertEqual(meterWindows(monitor.events(since: &stalled)), [11])
        XCTAssertEqual(meterWindows(monitor.events(since: &active)), [11])
    }

    /// A playlist's items, as the audio reaches them: each subscriber sees
    /// started/ended of each item once, in order, then the end, once.
    func testPlaylistEventsReachEverySubscriberOnceInOrder() throws {
        let (compiled, dir) = try PlaylistFixture.twoItems(folder: "agraph-monitor-playlist")
        defer { withExtendedLifetime(dir) {} }   // the items stay while the graph plays
        let monitor = GraphMonitor(compiled: compiled)
        var first = monitor.subscribe(), second = monitor.subscribe()
        let called = Locked<[GraphEvent]>([])
        _ = monitor.subscribe { e in called.withLock { $0.append(e) } }
        // Polled between two runs of the renderer, and after the end.
        let renderer = OfflineRenderer(engine: compiled.engine, blockFrames: 480)
        XCTAssertEqual(renderer.run(maxFrames: 14400).ending, .durationReached)
        monitor.poll()
        var firstSeen = monitor.events(since: &first)
        XCTAssertEqual(renderer.run(maxFrames: 48000).ending, .endOfStream)
        monitor.poll()
        firstSeen += monitor.events(since: &first)
        let secondSeen = monitor.events(since: &second)
        let items = firstSeen.compactMap { e -> String? in
            guard case .playlist(let p) = e else { return nil }
            return "\(p.kind) \(p.item) \((p.path as NSString).lastPathComponent)"
        }
        XCTAssertEqual(items, ["started 0 a.flac", "ended 0 a.flac", "started 1 b.flac", "ended 1 b.flac"])
        XCTAssertEqual(firstSeen.filter { $0 == .endOfStream }.count, 1)
        XCTAssertEqual(firstSeen.last, .endOfStream, "the end comes after the last item's events")
        XCTAssertEqual(secondSeen, firstSeen)
        XCTAssertEqual(called.withLock { $0 }, firstSeen)
    }

    /// A host's counters (faked here, as any host implements the protocol)
    /// become one event per change: an xrun count that moves, a pause, a
    /// shutdown (after which its counters are not looked at), connections.
    func testHostCounterChangesBecomeOneEventEach() throws {
        let compiled = try compileBuiltIn(Self.meterGraph, file: "meter.json", maxFrames: 480)
        let host = FakeMonitorHost()
        let monitor = GraphMonitor(compiled: compiled, host: host)
        var cursor = monitor.subscribe()
        XCTAssertTrue(monitor.events(since: &cursor).isEmpty)

        host.counters.withLock { $0.xruns = 3 }
        monitor.poll()
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.xrun(total: 3)], "one change, one event, however often polled")
        host.counters.withLock { $0.xruns = 5; $0.paused = true }
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.xrun(total: 5), .paused(true)])

        // Connections the host made itself are settled: no events; a
        // change afterwards is one event per port pair.
        host.counters.withLock { $0.connections = ["out_L": ["sys:in_1"]]; $0.connectionsSettled = 1 }
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [])
        host.counters.withLock { $0.connections = ["out_L": ["sys:in_2"], "out_R": ["sys:in_2"]] }
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [
            .connection(ours: "out_L", other: "sys:in_2", connected: true),
            .connection(ours: "out_L", other: "sys:in_1", connected: false),
            .connection(ours: "out_R", other: "sys:in_2", connected: true),
        ])

        host.counters.withLock { $0.shutdownReason = "server stopped" }
        monitor.poll()
        host.counters.withLock { $0.xruns = 9 }
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.shutdown(reason: "server stopped")])

        // Events only the host sees are posted, in order with the polled ones.
        monitor.post(.reconnected)
        host.counters.withLock { $0.shutdownReason = nil }
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.reconnected, .xrun(total: 9)])
    }

    /// A fed node that finds its ring empty (a `file` source whose reader
    /// never runs: one underrun per block) gives one event per poll that
    /// saw its total move.
    func testUnderrunsAreCountedOncePerPoll() throws {
        let dir = try TemporaryDirectory("agraph-monitor-underrun")
        let wav = dir.file("tone.wav")
        try writeSoundFile(wav, format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 1000, amplitude: 0.25, sampleRate: 48000, frames: 48000))
        let json = """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "src", "type": "file", "params": {"path": "\(wav)"}}, {"id": "sink", "type": "null"}],
             "links": [{"from": "src", "to": "sink"}]}
            """
        let compiled = try compileBuiltIn(json, file: "underrun.json", maxFrames: 256)
        let monitor = GraphMonitor(compiled: compiled)
        var cursor = monitor.subscribe()
        for _ in 0..<3 { compiled.engine.render(frames: 256) }
        monitor.poll()
        compiled.engine.render(frames: 256)
        monitor.poll()
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.underrun(node: "src", total: 3), .underrun(node: "src", total: 4)])
    }

    /// A live value set by any front end is one `.parameter` event at the
    /// next poll (the NSM session's dirty state follows them); setting the
    /// value it already has is none.
    func testLiveValuesSetBecomeParameterEvents() throws {
        let compiled = try compileBuiltIn(ControlSurfaceHardeningTests.graph, file: "hardening.json", maxFrames: 256)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        let monitor = surface.monitor
        XCTAssertTrue(monitor === surface.monitor, "one monitor per surface")
        var cursor = monitor.subscribe()
        try surface.set("g.gain", -6)
        try surface.set(try surface.resolve("f.q"), 2)
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.parameter(address: "f.q", value: 2), .parameter(address: "g.gain", value: -6)])
        try surface.set("g.gain", -6)
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [])
        XCTAssertEqual(surface.execute(line: "set g.gain -3"), .success(.set(ParameterReading(
            address: ParameterAddress(node: "g", parameter: "gain"), value: -3, word: "-3"))))
        monitor.poll()
        XCTAssertEqual(monitor.events(since: &cursor), [.parameter(address: "g.gain", value: -3)])
    }

    // MARK: handles

    static let gainGraph = """
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "t", "type": "test-tone", "params": {"frequency": 1000, "level": 0, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": -20}},
          {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
          {"id": "cap", "type": "capture"}],
         "links": [{"from": "t", "to": "g"}, {"from": "g", "to": "mix:in0"}, {"from": "t", "to": "mix:in1"},
                   {"from": "mix", "to": "cap"}]}
        """

    /// A handle resolved once sets the parameter it names: the rendered
    /// level moves by the gain set through it; `get` through it reads it.
    func testSetThroughAHandleChangesTheRenderedSignal() throws {
        let store = CaptureStore(capacityFrames: 48000)
        let compiled = try GraphCompiler.compile(TestGraph.validate(Self.gainGraph, stores: ["main": store]), maxFrames: 480)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        let gain = try surface.resolve("g.gain")
        let direct = try surface.resolve("mix.mutes[1]")
        XCTAssertEqual(gain.descriptor.name, "gain")
        XCTAssertNil(gain.element)
        XCTAssertEqual(direct.element, 1)
        XCTAssertEqual(direct.description, "mix.mutes[1]")
        // The tone's direct path muted: the output is the gain's path alone.
        try surface.set(direct, word: "true")
        for _ in 0..<40 { compiled.engine.render(frames: 480) }      // 19200 frames
        XCTAssertEqual(try surface.set(gain, -6).word, "-6")
        for _ in 0..<40 { compiled.engine.render(frames: 480) }
        let out = store.samples(0)
        XCTAssertEqual(out.count, 38400)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(Array(out[4800..<19200])), -20, accuracy: 0.05)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(Array(out[24000...])), -6, accuracy: 0.05)
        XCTAssertEqual(try surface.get(gain).value, -6)
        XCTAssertEqual(try surface.get("g.gain").value, -6, "the same parameter by address")
        XCTAssertEqual(compiled.liveValues["g.gain"], -6)
    }

    /// An address that names nothing fails at resolve time, with the text
    /// `set` gave before; the command line parses the address once, and the
    /// surface runs it without parsing it again.
    func testResolveErrorsAreTheOnesSetGave() throws {
        let compiled = try compileBuiltIn(ControlSurfaceHardeningTests.graph, file: "hardening.json", maxFrames: 256)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        for (address, expected) in [
            ("gain", "'gain' is not a parameter address: write node.param or node.param[i]"),
            ("g.gain[x]", "'g.gain[x]': the index in brackets must be a whole number ≥ 0"),
            ("g.gain[1]", "'g.gain' is not a list; drop the [1]"),
            ("x.gain", "no node 'x'"),
            ("f.type", "'f.type' cannot change while running; live parameters of filter: "),
        ] {
            XCTAssertThrowsError(try surface.resolve(address)) {
                XCTAssertTrue(($0 as? ControlError)?.message.hasPrefix(expected) == true, "\(address): \($0)")
            }
            XCTAssertThrowsError(try surface.set(address, 1)) {
                XCTAssertTrue(($0 as? ControlError)?.message.hasPrefix(expected) == true, "\(address): \($0)")
            }
        }
        XCTAssertThrowsError(try surface.resolve("g.gian")) { error in
            XCTAssertTrue("\(error)".hasPrefix("'g' (gain) has no parameter 'gian'; did you mean 'gain'?"), "\(error)")
        }
        let command = try XCTUnwrap(ControlLine.parse("set g.gain -3"))
        XCTAssertEqual(command, .set(address: ParameterAddress(node: "g", parameter: "gain"), value: "-3"))
        XCTAssertEqual(surface.execute(command), .success(.set(ParameterReading(address: ParameterAddress(node: "g", parameter: "gain"),
                                                                                 value: -3, word: "-3"))))
        // A handle belongs to its graph's engine.
        let other = try compileBuiltIn(ControlSurfaceHardeningTests.graph, file: "hardening.json", maxFrames: 256)
        let handle = try surface.resolve("g.gain")
        XCTAssertThrowsError(try other.set(handle, 0)) { error in
            XCTAssertEqual("\(error)", "'g.gain' was resolved for a graph that no longer runs: resolve it again")
        }
    }
}

/// A host whose counters the test sets. [any thread]
final class FakeMonitorHost: GraphMonitorHost, @unchecked Sendable {
    let counters = Locked(HostCounters())
    func monitorCounters() -> HostCounters? { counters.withLock { $0 } }
}
