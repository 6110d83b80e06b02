import AudioGraph
import AudioGraphJACK
import Foundation
import Synchronization
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The single-owner live host (issue 8): reconnecting after the server is
/// restarted, latency reported as delay only (measured with jack_iodelay),
/// the server's rate in the mismatch message, and the control surface's
/// answers.
final class LiveHostTests: LiveTestCase {
    // MARK: reconnect

    /// The server stops (SIGTERM) and a new one starts under the same name:
    /// the graph carries on with its engine, its ports come back, the
    /// graph's `connect` patterns and a connection someone else made are
    /// restored as their ports appear.
    func testReconnectAfterTheServerRestartsBringsBackPortsAndConnections() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 20)
        defer { rec.abandon() }
        let manual = try JACKRecorder(server: server.name, name: "manual-rec", channels: 1, seconds: 20)
        defer { manual.abandon() }
        let live = try startGraph(Self.toneGraph(channels: 1, gain: true, connect: "agraph-rec:in_*"),
                                  server: server.name)
        defer { live.stop() }
        let events = EventLog(live.events)
        try manual.connect(from: ["agraph-live:out_1"])
        XCTAssertTrue(manual.waitForFrames(4800 * 3, timeout: 10))
        XCTAssertTrue(rec.waitForFrames(4800 * 3, timeout: 10))
        try live.set("g.gain", -6)
        let before = live.engine.framePosition

        server.stop()
        XCTAssertNotNil(events.wait(timeout: 10) { if case .shutdown = $0 { true } else { false } }, "\(events.all)")
        XCTAssertNotNil(live.shutdownReason)
        rec.abandon()
        manual.abandon()

        // Reconnect from another thread while the server comes back.
        let done = Atomic<Int>(0)
        let reconnecting = Thread { done.store(live.reconnect(timeout: 30) ? 1 : 2, ordering: .releasing) }
        reconnecting.start()
        let again = try TestJACKServer(name: server.name)
        defer { again.stop() }
        let deadline = Date().addingTimeInterval(30)
        while done.load(ordering: .acquiring) == 0 && Date() < deadline { usleep(20_000) }
        XCTAssertEqual(done.load(ordering: .acquiring), 1, "reconnected; events: \(events.all)")
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .reconnected }, "\(events.all)")
        XCTAssertNil(live.shutdownReason)

        // The ports are back; the recorders come back after the graph.
        let lsp = try again.tool("jack_lsp")
        XCTAssertTrue(lsp.stdout.contains("agraph-live:out_1"), lsp.stdout)
        let rec2 = try JACKRecorder(server: again.name, channels: 1, seconds: 10)
        defer { rec2.close() }
        let manual2 = try JACKRecorder(server: again.name, name: "manual-rec", channels: 1, seconds: 10)
        defer { manual2.close() }
        XCTAssertTrue(waitForSignal(rec2, seconds: 0.3), "the connect pattern is applied again")
        XCTAssertTrue(waitForSignal(manual2, seconds: 0.3), "the other connection is restored")
        XCTAssertEqual(Self.recentLevel(rec2), -18, accuracy: 0.1, "the same engine: -12 dBFS tone, gain -6 still set")
        XCTAssertEqual(Self.recentLevel(manual2), -18, accuracy: 0.1)
        XCTAssertGreaterThan(live.engine.framePosition, before, "the graph carries on")
        XCTAssertEqual(try live.value("g.gain"), -6)
        XCTAssertFalse(live.status().serverGone)
        XCTAssertTrue(live.stop().isEmpty)
    }

    /// `agraph run --reconnect`: the server restarts, agraph says so and
    /// runs again, and `quit` still stops it cleanly.
    func testCLIReconnectRunsAgainAfterTheServerRestarts() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph(Self.toneGraph(channels: 1, connect: "agraph-rec:in_*"))
        let first = try JACKRecorder(server: server.name, channels: 1, seconds: 5)
        defer { first.abandon() }
        let cli = try startAgraphRun(graph, server: server, ["--reconnect", "--quiet"])
        defer { cli.kill() }
        XCTAssertTrue(waitForSignal(first, seconds: 0.3), cli.stderr)
        XCTAssertEqual(Self.recentLevel(first), -12, accuracy: 0.1)
        server.stop()
        first.abandon()
        XCTAssertNotNil(cli.waitForStderr("waiting for a JACK server", timeout: 10), cli.stderr)
        let again = try TestJACKServer(name: server.name)
        defer { again.stop() }
        XCTAssertNotNil(cli.waitForStderr("running again", timeout: 20), cli.stderr)
        let rec = try JACKRecorder(server: again.name, channels: 1, seconds: 5)
        defer { rec.close() }
        XCTAssertTrue(waitForSignal(rec, seconds: 0.3), "connected again by its pattern\n\(cli.stderr)")
        XCTAssertEqual(Self.recentLevel(rec), -12, accuracy: 0.1)
        cli.send("quit")
        assertExitsCleanly(cli)
    }

    // MARK: signals

    /// The signals JACK's process thread blocks (a bit per signal), as its
    /// thread-init callback found them; -1 before.
    static let processThreadSignals = Atomic<Int>(-1)

    /// Signals stay on the main thread: JACK's process thread (started by
    /// libjack from the owner thread) blocks SIGINT, SIGTERM and SIGHUP, so
    /// no handler ever runs on the audio thread; and `agraph run` still
    /// takes SIGHUP (a reload) and SIGTERM (a clean stop) on its main thread.
    func testSignalsAreBlockedOnTheAudioThreadAndStillReachAgraph() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        Self.processThreadSignals.store(-1, ordering: .relaxed)
        let live = try startGraph(Self.toneGraph(channels: 1, connect: nil), server: server.name) { options in
            options.threadInit = { _ in
                let bits = ThreadSignals.blockedHere.reduce(0) { $0 | (1 << Int($1)) }
                LiveHostTests.processThreadSignals.store(bits, ordering: .releasing)
            }
        }
        XCTAssertTrue(waitUntil(timeout: 5) { Self.processThreadSignals.load(ordering: .acquiring) >= 0 })
        live.stop()
        XCTAssertEqual(Self.processThreadSignals.load(ordering: .acquiring), (1 << Int(SIGINT)) | (1 << Int(SIGTERM)) | (1 << Int(SIGHUP)),
                       "SIGINT, SIGTERM and SIGHUP blocked on the process thread")

        let graph = try writeGraph(Self.toneGraph(channels: 1, connect: nil))
        let cli = try startAgraphRun(graph, server: server, ["--quiet"])
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("running 'tone'", timeout: 10), cli.stderr)
        for _ in 0..<3 {
            cli.process.send(SIGHUP)
            usleep(300_000)
        }
        XCTAssertNotNil(cli.waitForStderr("reload", timeout: 10), "SIGHUP reached the main thread: \(cli.stderr)")
        cli.process.send(SIGTERM)
        assertExitsCleanly(cli)
    }

    // MARK: rename (make before break)

    /// The largest residual of a sine's three-term recurrence,
    /// x[n+1] + x[n-1] = 2 cos(ω) x[n], over `x`: about 1e-6 for the test
    /// tone, and a hundred times more at a frame lost, doubled, silenced or
    /// rendered twice over itself (5 kHz: ω is large enough that no phase
    /// of the sine hides a slip).
    static func largestSineResidual(_ x: [Float], frequency: Double) -> Double {
        let k = 2 * cos(2 * Double.pi * frequency / Self.rate)
        var largest = 0.0
        for n in 1..<max(x.count - 1, 1) {
            largest = max(largest, abs(Double(x[n + 1]) + Double(x[n - 1]) - k * Double(x[n])))
        }
        return largest
    }

    /// `rename(to:)` opens the new client beside the old one, connects it
    /// where the old one is and hands the cycle over between two cycles:
    /// the recording of a 5 kHz sine across the rename is one unbroken
    /// sine (no frame lost, doubled, silenced or summed twice), the
    /// recorder is connected to the new client, the old one is gone, and
    /// the process threads (both clients') allocate nothing.
    func testARenameHandsTheCycleToTheNewClientWithNoFrameLostOrDoubled() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 10)
            defer { rec.close() }
            let live = try startGraph(Self.toneGraph(frequency: 5000, channels: 1, gain: true), server: server.name) { options in
                options.threadInit = { _ in MallocCounter.beginThread() }
            }
            defer { live.stop() }
            XCTAssertTrue(waitForSignal(rec, seconds: 0.3))
            MallocCounter.reset()
            let before = rec.framesRecorded
            try live.rename(to: "agraph-renamed")
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + 24_000, timeout: LiveTiming.seconds(10)))
            let mallocs = MallocCounter.total
            try checkNoXruns(rec, live, isLast: isLast)
            let x = rec.samples(0, (before - 4_800)..<rec.framesRecorded)
            let residual = Self.largestSineResidual(x, frequency: 5000)
            print("rename: largest sine residual across it \(residual) over \(x.count) frames")
            XCTAssertLessThan(residual, 1e-3, "one unbroken sine across the rename")
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(Array(x.suffix(4_800))), -12, accuracy: 0.1, "one client's level, not two")
            let lsp = try server.tool("jack_lsp", ["-c"])
            XCTAssertTrue(lsp.stdout.contains("agraph-renamed:out_1\n   agraph-rec:in_1"), lsp.stdout)
            XCTAssertFalse(lsp.stdout.contains("agraph-live:"), lsp.stdout)
            if MallocCounter.isAvailable { XCTAssertEqual(mallocs, 0, "allocations on the process threads across the rename") }
            // The new client runs the graph as the old one did.
            try live.set("g.gain", -6)
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + 9_600, timeout: LiveTiming.seconds(10)))
            XCTAssertEqual(Self.recentLevel(rec), -18, accuracy: 0.1)
        }
    }

    /// A rename whose new client cannot be opened (a name longer than JACK
    /// allows) throws with JACK's reason, and the old client plays on
    /// untouched: its connections kept, the sine unbroken.
    func testARenameThatCannotOpenTheNewClientLeavesTheOldOnePlaying() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 10)
            defer { rec.close() }
            let live = try startGraph(Self.toneGraph(frequency: 5000, channels: 1), server: server.name)
            defer { live.stop() }
            XCTAssertTrue(waitForSignal(rec, seconds: 0.3))
            let before = rec.framesRecorded
            XCTAssertThrowsError(try live.rename(to: String(repeating: "n", count: 300)))
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + 9_600, timeout: LiveTiming.seconds(10)))
            try checkNoXruns(rec, live, isLast: isLast)
            let x = rec.samples(0, (before - 4_800)..<rec.framesRecorded)
            XCTAssertLessThan(Self.largestSineResidual(x, frequency: 5000), 1e-3, "the old client played on")
            let lsp = try server.tool("jack_lsp", ["-c"])
            XCTAssertTrue(lsp.stdout.contains("agraph-live:out_1\n   agraph-rec:in_1"), lsp.stdout)
        }
    }

    // MARK: latency

    /// jack-in → gain → mixer ← file → jack-out: the file's ring is
    /// prefetch, so the live path reports what it delays, 0, and
    /// jack_iodelay measures the same round trip as through jack_thru with
    /// an extra loopback latency of 0 (it used to report 512 frames and
    /// print a negative, wrapped, extra latency).
    func testAFileFedMixerAddsNoLatencyMeasuredWithIodelay() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        try writeSoundFile(dir.file("quiet.wav"), format: .wavFloat32, channels: 1, sampleRate: Self.rate,
                           samples: [Float](repeating: 0, count: 48000))

        let viaThru = try iodelayThroughJackThru(server: server)

        let live = try startGraph("""
            {"format": "agraph/1", "name": "mixthru", "nodes": [
              {"id": "in", "type": "jack-in", "params": {"channels": 1}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "song", "type": "file", "params": {"path": "quiet.wav", "loop": true}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "in", "to": "g"}, {"from": "g", "to": "mix:in0"},
                       {"from": "song", "to": "mix:in1"}, {"from": "mix", "to": "out"}]}
            """, server: server.name, clientName: "agraph-mix")
        defer { live.stop() }
        XCTAssertEqual(live.engine.latencies, [0, 0, 0, 0, 0], "only algorithmic delay counts")
        let viaGraph = try iodelay(server: server, into: "agraph-mix:in_1", from: "agraph-mix:out_1")

        let thruFrames = try XCTUnwrap(viaThru.roundTrip, "jack_iodelay measured nothing through jack_thru")
        let graphFrames = try XCTUnwrap(viaGraph.roundTrip, "jack_iodelay measured nothing through the graph")
        XCTAssertEqual(graphFrames, thruFrames, accuracy: 0.5, "the same round trip as through jack_thru")
        // jack_iodelay counts as "extra" what no port reports: in a loop on
        // one server that is JACK's own period (the loop is cut there), the
        // same for jack_thru and for the graph. The graph adds nothing to
        // it; it used to report 512 frames it did not delay, and the extra
        // came out negative (printed wrapped, near 2^32).
        let thruExtra = try XCTUnwrap(viaThru.extra), graphExtra = try XCTUnwrap(viaGraph.extra)
        XCTAssertEqual(Double(graphExtra), Double(thruExtra), accuracy: 1, "the same extra loopback latency as jack_thru")
        XCTAssertLessThanOrEqual(graphExtra, server.period, "not wrapped: the ports do not claim more than the loop delays")

        // And jack_lsp shows the same: the graph adds nothing on either port.
        let (latencies, lsp) = try Self.portLatencies(server: server)
        XCTAssertEqual(latencies["agraph-mix:out_1"]?.capture, [0, 0], lsp.stdout)
        XCTAssertEqual(latencies["agraph-mix:in_1"]?.playback, [0, 0], lsp.stdout)
    }

    // MARK: new-user defects

    /// A 44100 Hz graph on a 48000 Hz server names the server's rate (it
    /// said "0 Hz": the rate was read after the client closed).
    // MARK: CPU wake-up latency

    /// `Options.cpuDMALatency` (`agraph run --cpu-dma-latency`): the kernel
    /// has the request in force while the graph plays (the device reads it
    /// back) and withdraws it when the graph stops. Where this user cannot
    /// write the device, the start fails before JACK, naming it.
    func testACPUWakeUpLatencyRequestIsInForceWhileTheGraphPlays() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let device = CPULatencyRequest.devicePath
        guard access(device, W_OK) == 0 else {
            XCTAssertThrowsError(try startGraph(Self.toneGraph(connect: nil), server: server.name,
                                                configure: { $0.cpuDMALatency = 0 })) { error in
                XCTAssertTrue("\(error)".contains(device), "\(error)")
            }
            XCTAssertFalse(try server.tool("jack_lsp").stdout.contains("agraph-live:"), "the start stopped before JACK")
            return
        }
        let before = try XCTUnwrap(CPULatencyRequest.current(), "\(device) is writable but not readable")
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 20)
        defer { rec.abandon() }
        let live = try startGraph(Self.toneGraph(channels: 1, connect: "agraph-rec:in_*"), server: server.name,
                                  configure: { $0.cpuDMALatency = 0 })
        defer { live.stop() }
        XCTAssertEqual(CPULatencyRequest.current(), 0, "in force while the graph plays")
        XCTAssertTrue(waitForSignal(rec, seconds: 0.5), "the graph plays under the request")
        XCTAssertEqual(Self.recentLevel(rec), -12, accuracy: 0.2)
        live.stop()
        XCTAssertEqual(CPULatencyRequest.current(), before, "withdrawn when the graph stops")

        // The same through `agraph run --cpu-dma-latency`: said at the start,
        // in force while it plays, withdrawn when it quits.
        let graph = try writeGraph(Self.toneGraph(channels: 1, connect: nil))
        let cli = try startAgraphRun(graph, server: server, ["--quiet", "--cpu-dma-latency", "0"])
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: holding a CPU wake-up latency request of 0 µs (\(device))", timeout: 5), cli.stderr)
        XCTAssertEqual(CPULatencyRequest.current(), 0, cli.stderr)
        cli.send("quit")
        assertExitsCleanly(cli)
        XCTAssertEqual(CPULatencyRequest.current(), before, "withdrawn when agraph quits")
    }

    func testARateMismatchNamesTheServersRate() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let json = Self.toneGraph(connect: nil).replacingOccurrences(of: "\"sampleRate\": 48000", with: "\"sampleRate\": 44100")
        XCTAssertThrowsError(try startGraph(json, server: server.name)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("the JACK server runs at 48000 Hz but the graph at 44100 Hz"), text)
            XCTAssertTrue(text.contains("set the graph's \"sampleRate\" to 48000"), text)
        }
    }

    /// `get` answers in the words `set` takes; `status` does not reset the
    /// meters, so two statuses at the same moment agree.
    func testGetAnswersInSetsWordsAndStatusReadsDoNotDisagree() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let live = try startGraph("""
            {"format": "agraph/1", "name": "words", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -12, "channels": 2}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 1}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "tone", "to": "mix"}, {"from": "mix", "to": "out"}]}
            """, server: server.name)
        defer { live.stop() }
        let control = live.control

        XCTAssertEqual(try control.get("mix.mutes[0]").word, "false")
        XCTAssertEqual(try control.set("mix.mutes[0]", word: "true").word, "true")
        XCTAssertEqual(try control.get("mix.mutes[0]").word, "true")
        XCTAssertEqual(try control.get("mix.mutes[0]").value, 1)
        XCTAssertEqual(try control.set("mix.mutes[0]", word: "off").description, "mix.mutes[0] = false")
        XCTAssertEqual(try control.get("mix.outputGain").word, "0")
        XCTAssertEqual(try control.set("mix.gains[0]", word: "-6.5").word, "-6.5")
        // A choice answers with its option's name (no built-in node has a
        // live choice: the daa node's `endpoint` is one).
        let waveform = try XCTUnwrap(NodeRegistry.builtIn["test-tone"]?.descriptor.parameters.first { $0.name == "waveform" })
        guard case .choice(let options) = waveform.type else { return XCTFail("waveform is a choice") }
        XCTAssertEqual(ControlSurface.word(1, for: waveform), options[1])
        XCTAssertEqual(ControlSurface.word(7.5, for: waveform), "7.5")
        // The console's reply is the reading, in the same words.
        guard case .success(let reply)? = control.execute(line: "get mix.mutes[0]") else { return XCTFail() }
        XCTAssertEqual(reply.text, "mix.mutes[0] = false")
        guard case .success(let setReply)? = control.execute(line: "set mix.mutes[0] on") else { return XCTFail() }
        XCTAssertEqual(setReply.text, "mix.mutes[0] = true")
        guard case .failure(let e)? = control.execute(line: "set mix.mutes[0] maybe") else { return XCTFail() }
        XCTAssertTrue(e.message.contains("not a value of mix.mutes[0]"), e.message)
        _ = try control.set("mix.mutes[0]", word: "false")

        // Two statuses in a row (no JACK cycle needs to pass between them)
        // agree. The meters hold the peak over the last 0.25–0.5 s: wait
        // until the window holds only the new gain.
        Thread.sleep(forTimeInterval: 1.2)
        for _ in 0..<20 {
            let a = live.status(), b = live.status()
            XCTAssertEqual(a.peaks, b.peaks)
            XCTAssertEqual(a.peaks.count, 2)
            for p in a.peaks { XCTAssertEqual(p.dBFS, -18.5, accuracy: 0.6, "the window's peak: \(a.text)") }
            guard case .success(.status(let c))? = control.execute(line: "status") else { return XCTFail() }
            XCTAssertEqual(c.peaks, live.status().peaks, "the status command shows what the status line shows")
            usleep(20_000)
        }
    }
}
