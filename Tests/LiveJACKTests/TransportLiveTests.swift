import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import Foundation
import Synchronization
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

private let transportThreadInits = Atomic<Int>(0)

/// JACK transport (issue 12): sources with `transport: "follow"` (or
/// `--transport follow`) follow the transport that `jack_transport` drives
/// (locate, play, stop). Their source is a numbered file, each sample
/// encoding its own frame index exactly, so the recording says which frame
/// of the source every output frame is.
final class TransportLiveTests: LiveTestCase {
    /// Frames of the numbered file (10 s at 48 kHz).
    static let fileFrames = 480_000

    /// Frame `i` of the numbered file: (i + 1) / 2^24, exact in Float32
    /// (silence, 0, is no frame).
    static func value(_ i: Int) -> Float { Float(i + 1) / 16_777_216 }

    /// The frame a recorded sample is, or nil for silence (or a value no
    /// frame has).
    static func frameIndex(_ v: Float) -> Int? {
        guard v != 0 else { return nil }
        let k = Double(v) * 16_777_216
        guard k == k.rounded(), k >= 1 else { return nil }
        return Int(k) - 1
    }

    /// A run of consecutive source frames in a recording.
    struct Run: Equatable, CustomStringConvertible {
        /// Where it starts in the recording.
        var at: Int
        /// The source frame it starts with, and how many follow on.
        var first: Int
        var count: Int
        var last: Int { first + count - 1 }
        var description: String { "[rec \(at): frames \(first)…\(last)]" }
    }

    /// The runs of a recording: stretches of frames that each follow the
    /// one before (modulo `wrap`), split by silence or by a jump.
    static func runs(_ samples: [Float], wrap: Int = .max) -> (runs: [Run], unknown: Int) {
        var runs: [Run] = []
        var unknown = 0
        for (i, v) in samples.enumerated() {
            guard v != 0 else { continue }
            guard let f = frameIndex(v) else { unknown += 1; continue }
            if var r = runs.last, r.at + r.count == i, (r.last + 1) % wrap == f {
                r.count += 1
                runs[runs.count - 1] = r
            } else {
                runs.append(Run(at: i, first: f, count: 1))
            }
        }
        return (runs, unknown)
    }

    /// `runs` with those joined that a stretch of silence separates while
    /// the source kept time through it (an underrun of a follower: it
    /// plays on from the frame due, not from where it stopped): the source
    /// frames advanced exactly as far as the recording did.
    static func joiningUnderruns(_ runs: [Run]) -> [Run] {
        var joined: [Run] = []
        for r in runs {
            if var p = joined.last, r.at > p.at + p.count, r.first - p.first == r.at - p.at {
                p.count = r.at + r.count - p.at
                joined[joined.count - 1] = p
            } else {
                joined.append(r)
            }
        }
        return joined
    }

    /// Whether `starts` are, in order, the first frames of some of `runs`.
    static func startsInOrder(_ runs: [Run], _ starts: [Int]) -> Bool {
        var k = 0
        for r in runs where k < starts.count && r.first == starts[k] { k += 1 }
        return k == starts.count
    }

    /// Writes frames `frames` of the numbered sequence to `name` (mono
    /// float WAV at 48 kHz).
    func writeNumberedFile(_ name: String = "numbered.wav", frames: Range<Int> = 0..<TransportLiveTests.fileFrames) throws {
        try writeSoundFile(dir.file(name), format: .wavFloat32, channels: 1, sampleRate: Self.rate,
                           samples: frames.map(Self.value))
    }

    /// Checks channel `c` of a recording cycle by cycle against the
    /// transport the recorder saw in the same cycle: while the transport
    /// rolls, a cycle is either silence (the follower held while it is
    /// being located) or the numbered frames from the transport's frame on
    /// (transport frame F plays source frame F), sample for sample; while
    /// it does not roll, silence. Returns what broke the rule and how many
    /// cycles played.
    static func followsTransport(_ rec: JACKRecorder, channel c: Int, recorded: Int) -> (problems: [String], played: Int) {
        var problems: [String] = []
        var played = 0
        for cycle in rec.cycleLog {
            guard let at = cycle.at, at + cycle.frames <= recorded else { continue }
            let s = rec.samples(c, at..<(at + cycle.frames))
            guard s.contains(where: { $0 != 0 }) else { continue }
            guard cycle.isRolling else {
                problems.append("rec \(at): sound while the transport is \(cycle.transportState.rawValue == 0 ? "stopped" : "starting")")
                continue
            }
            played += 1
            if let j = s.indices.first(where: { frameIndex(s[$0]) != cycle.transportFrame + $0 }) {
                problems.append("rec \(at + j): frame \(frameIndex(s[j]).map(String.init) ?? "\(s[j])") where the transport is at \(cycle.transportFrame + j)")
            }
        }
        return (problems, played)
    }

    /// A follower (`song`, `transport` as given) on port `follow` and a free
    /// looping copy (`free`) on port `free`, to the recorder's two inputs.
    static func twoSourceGraph(transport: String?) -> String {
        let t = transport.map { #", "transport": "\#($0)""# } ?? ""
        return """
            {"format": "agraph/1", "name": "transport", "sampleRate": 48000, "nodes": [
              {"id": "song", "type": "file", "params": {"path": "numbered.wav"\(t)}},
              {"id": "free", "type": "file", "params": {"path": "numbered.wav", "loop": true}},
              {"id": "out", "type": "jack-out", "params": {"ports": ["follow"], "connect": ["agraph-rec:in_1"]}},
              {"id": "out2", "type": "jack-out", "params": {"ports": ["free"], "connect": ["agraph-rec:in_2"]}}],
             "links": [{"from": "song", "to": "out"}, {"from": "free", "to": "out2"}]}
            """
    }

    /// Runs `commands` through `jack_transport` (its prompt reads them
    /// from stdin, one per line) on `server`.
    func jackTransport(_ server: TestJACKServer, _ commands: String...) throws {
        let r = try server.tool("bash", ["-c", "printf '\(commands.joined(separator: "\\n"))\\n' | jack_transport"])
        XCTAssertEqual(r.status, 0, "jack_transport \(commands): \(r.stdout)\(r.stderr)")
    }

    /// Waits until the graph's transport reading satisfies `predicate`.
    func waitForTransport(_ live: RunningGraph, timeout: Double = 10, _ predicate: (TransportReading) -> Bool) -> TransportReading? {
        var last: TransportReading?
        _ = waitUntil(timeout: timeout) {
            last = live.status().transport
            return last.map(predicate) ?? false
        }
        return last.flatMap { predicate($0) ? $0 : nil }
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try XCTSkipUnless(findExecutable("jack_transport") != nil, "jack_transport (jackd2's tools) is not installed")
    }

    // MARK: locate, play, stop

    /// jack_transport locate (stopped and rolling), play and stop against
    /// a recording: the follower plays from exactly the located frame,
    /// silence while stopped, on from where it stopped; the free source
    /// never pauses; no allocation on the process thread meanwhile.
    func testLocatePlayAndStopFromJackTransportMoveTheFollowerSampleExactly() throws {
        try writeNumberedFile()
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 40)
            defer { rec.close() }
            let inits = transportThreadInits.load(ordering: .relaxed)
            let live = try startGraph(Self.twoSourceGraph(transport: "follow"), server: server.name) { options in
                options.threadInit = { _ in
                    transportThreadInits.add(1, ordering: .relaxed)
                    MallocCounter.beginThread()
                }
            }
            defer { live.stop() }
            XCTAssertEqual(live.transportFollowers, ["song"])
            let start = try XCTUnwrap(waitForTransport(live) { $0.state == .stopped && $0.located }, "\(live.status())")
            XCTAssertEqual(start.frame, 0)
            XCTAssertEqual(start.followers, ["song"])
            XCTAssertTrue(live.status().text.contains("transport stopped 0.0 s (frame 0)"), live.status().text)

            // Warm-up (the first use of each path on the process thread):
            // locate, play, stop; then count allocations from zero.
            try jackTransport(server, "locate 48000")
            XCTAssertNotNil(waitForTransport(live) { $0.frame == 48000 && $0.located }, "\(live.status())")
            try jackTransport(server, "play")
            XCTAssertNotNil(waitForTransport(live) { $0.state == .rolling && $0.frame > 48000 + 9600 }, "\(live.status())")
            try jackTransport(server, "stop")
            XCTAssertNotNil(waitForTransport(live) { $0.state == .stopped }, "\(live.status())")
            usleep(200_000)
            MallocCounter.reset()
            XCTAssertEqual(transportThreadInits.load(ordering: .relaxed) - inits, 1)

            // Locate while stopped, then play.
            try jackTransport(server, "locate 96000")
            let located = try XCTUnwrap(waitForTransport(live) { $0.frame == 96000 && $0.located }, "\(live.status())")
            XCTAssertEqual(located.state, .stopped)
            try jackTransport(server, "play")
            XCTAssertNotNil(waitForTransport(live) { $0.state == .rolling && $0.frame >= 96000 + 48000 }, "\(live.status())")

            // Locate while rolling: the transport waits (starting) until
            // the follower is there, then rolls on from there.
            try jackTransport(server, "locate 240000")
            let moved = try XCTUnwrap(waitForTransport(live) { $0.state == .rolling && $0.frame >= 240000 && $0.frame < 480000 && $0.located },
                                      "\(live.status())")
            XCTAssertTrue(live.status().text.contains("transport rolling"), live.status().text)
            XCTAssertNotNil(waitForTransport(live) { $0.frame >= moved.frame + 24000 }, "\(live.status())")

            // Stop: silence, held; play: on from the held frame.
            try jackTransport(server, "stop")
            let stopped = try XCTUnwrap(waitForTransport(live) { $0.state == .stopped }, "\(live.status())")
            usleep(500_000)
            XCTAssertEqual(live.status().transport?.frame, stopped.frame, "the transport stands still")
            try jackTransport(server, "play")
            XCTAssertNotNil(waitForTransport(live) { $0.state == .rolling && $0.frame >= stopped.frame + 24000 }, "\(live.status())")
            let mallocs = MallocCounter.total
            XCTAssertNotNil(waitForTransport(live) { $0.located }, "\(live.status())")
            let status = live.status()
            try checkNoXruns(rec, live, isLast: isLast)
            // On a last attempt with xruns, a cycle JACK skipped for the
            // graph makes the follower locate again (a little ahead, on the
            // transport's frame): the cycle-by-cycle check still holds,
            // the runs are split further.
            let clean = max(rec.xruns, status.xruns) == 0

            if MallocCounter.isAvailable {
                XCTAssertEqual(mallocs, 0, "allocations on JACK's process thread across locates, starts and stops")
            }
            if clean { XCTAssertEqual(status.underruns, 0, "no underrun: a locate's refill is not an underrun") }

            // Cycle by cycle: the follower played exactly the transport's
            // frame, and nothing while the transport stood still.
            let recorded = rec.framesRecorded
            let check = Self.followsTransport(rec, channel: 0, recorded: recorded)
            XCTAssertEqual(check.problems, [], "the follower against the transport, cycle by cycle")
            XCTAssertGreaterThan(check.played, 2 * 48000 / server.period)

            // The follower: the warm-up run from 48000, then from exactly
            // 96000, then from exactly 240000, then on from where it stopped.
            let follower = Self.runs(rec.samples(0, 0..<recorded))
            XCTAssertEqual(follower.unknown, 0, "every sample is a frame of the file or silence")
            let runs = follower.runs
            XCTAssertTrue(Self.startsInOrder(runs, [48000, 96000, 240000]), "runs from each located frame: \(runs)")
            guard clean else { return }
            XCTAssertEqual(runs.count, 4, "\(runs)")
            guard runs.count == 4 else { return }
            XCTAssertEqual(runs[0].first, 48000, "\(runs)")
            XCTAssertEqual(runs[1].first, 96000, "after locate 96000 the output continues from frame 96000: \(runs)")
            XCTAssertEqual(runs[2].first, 240000, "after locate 240000 (rolling) it continues from frame 240000: \(runs)")
            XCTAssertEqual(runs[3].first, runs[2].last + 1, "after stop and play it continues where it stopped: \(runs)")
            XCTAssertGreaterThanOrEqual(runs[1].count, 48000, "\(runs)")
            // What stop held: the transport stopped where the output did.
            XCTAssertEqual(runs[2].last + 1, stopped.frame, "the follower stopped at the transport's frame: \(runs)")
            // The silence between the runs is the transport standing still
            // or locating: at least one period, all zero (checked by `runs`).
            for k in 1..<runs.count {
                XCTAssertGreaterThanOrEqual(runs[k].at - (runs[k - 1].at + runs[k - 1].count), server.period, "\(runs)")
            }

            // The free source played on through every stop and locate:
            // one run, looping the file.
            let free = Self.runs(rec.samples(1, 0..<recorded), wrap: Self.fileFrames)
            XCTAssertEqual(free.unknown, 0)
            XCTAssertEqual(free.runs.count, 1, "the free source never paused: \(free.runs.prefix(5))")
            if let r = free.runs.first {
                XCTAssertEqual(r.at + r.count, recorded, "to the end of the recording")
                XCTAssertLessThan(r.at, runs[0].at, "from before the first play")
            }
        }
    }

    // MARK: catching up

    /// A graph that starts while the transport already rolls, and one
    /// paused while it rolls: the follower is held, located a little ahead
    /// at a whole number of periods, and plays on exactly from the frame
    /// the transport has then reached (not from where it was paused).
    func testFollowersCatchUpWithARollingTransportOnItsFrame() throws {
        try writeNumberedFile()
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 30)
            defer { rec.close() }
            try jackTransport(server, "locate 24000", "play")
            XCTAssertTrue(waitUntil(timeout: 5) { rec.cycleLog.last.map { $0.isRolling && $0.transportFrame > 24000 } ?? false })
            let live = try startGraph(Self.twoSourceGraph(transport: "follow"), server: server.name)
            defer { live.stop() }
            let joined = try XCTUnwrap(waitForTransport(live) { $0.state == .rolling && $0.located }, "\(live.status())")
            XCTAssertNotNil(waitForTransport(live) { $0.frame >= joined.frame + 24000 }, "\(live.status())")

            live.pause()
            XCTAssertTrue(live.status().paused)
            usleep(300_000)
            XCTAssertEqual(live.status().transport?.located, false, "paused while the transport rolls on: not where it is")
            live.play()
            let resumed = try XCTUnwrap(waitForTransport(live) { $0.state == .rolling && $0.located }, "\(live.status())")
            XCTAssertNotNil(waitForTransport(live) { $0.frame >= resumed.frame + 24000 }, "\(live.status())")
            try checkNoXruns(rec, live, isLast: isLast)
            let clean = max(rec.xruns, live.status().xruns) == 0

            let recorded = rec.framesRecorded
            let check = Self.followsTransport(rec, channel: 0, recorded: recorded)
            XCTAssertEqual(check.problems, [], "the follower against the transport, cycle by cycle")
            XCTAssertGreaterThan(check.played, 3 * 24000 / (2 * server.period), "it played after joining and after the pause")
            // With xruns (a last attempt), the cycle-by-cycle check is what holds.
            guard clean else { return }
            let runs = Self.runs(rec.samples(0, 0..<recorded)).runs
            XCTAssertEqual(runs.count, 2, "\(runs)")
            guard runs.count == 2 else { return }
            XCTAssertGreaterThan(runs[0].first, 24000, "it joined the rolling transport where it was: \(runs)")
            XCTAssertGreaterThan(runs[1].first, runs[0].last + 1 + 9600, "after the pause it caught up with the transport: \(runs)")
            XCTAssertEqual(live.status().underruns, 0)
        }
    }

    // MARK: reconnect

    /// The server restarts: the graph reconnects as a slow-sync client of
    /// the new server, and follows its transport as before.
    func testFollowingGoesOnAfterTheServerRestarts() throws {
        try writeNumberedFile()
        let server = try TestJACKServer()
        defer { server.stop() }
        let first = try JACKRecorder(server: server.name, channels: 2, seconds: 10)
        defer { first.abandon() }
        let live = try startGraph(Self.twoSourceGraph(transport: "follow"), server: server.name)
        defer { live.stop() }
        let events = EventLog(live.events)
        XCTAssertTrue(waitForSignal(first, seconds: 0.1, channel: 1))
        try jackTransport(server, "locate 96000")
        XCTAssertNotNil(waitForTransport(live) { $0.frame == 96000 && $0.located }, "\(live.status())")

        server.stop()
        XCTAssertNotNil(events.wait(timeout: 10) { if case .shutdown = $0 { true } else { false } }, "\(events.all)")
        first.abandon()
        let done = Atomic<Int>(0)
        let reconnecting = Thread { done.store(live.reconnect(timeout: 30) ? 1 : 2, ordering: .releasing) }
        reconnecting.start()
        let again = try TestJACKServer(name: server.name)
        defer { again.stop() }
        XCTAssertTrue(waitUntil(timeout: 30) { done.load(ordering: .acquiring) != 0 })
        XCTAssertEqual(done.load(ordering: .acquiring), 1, "reconnected; events: \(events.all)")
        // The new server's transport stands at 0: the follower goes there.
        XCTAssertNotNil(waitForTransport(live) { $0.state == .stopped && $0.frame == 0 && $0.located }, "\(live.status())")

        let rec = try JACKRecorder(server: again.name, channels: 2, seconds: 10)
        defer { rec.close() }
        XCTAssertTrue(waitForSignal(rec, seconds: 0.1, channel: 1), "the free source plays, its connection restored")
        // Locate and play at once: the transport starts from 72000 only
        // once the follower is there.
        try jackTransport(again, "locate 72000", "play")
        XCTAssertNotNil(waitForTransport(live) { $0.state == .rolling && $0.frame >= 72000 + 24000 }, "\(live.status())")
        let recorded = rec.framesRecorded
        if rec.xruns == 0 {
            let check = Self.followsTransport(rec, channel: 0, recorded: recorded)
            XCTAssertEqual(check.problems, [], "the follower against the new server's transport")
            XCTAssertGreaterThan(check.played, 24000 / again.period)
        }
        XCTAssertEqual(Self.runs(rec.samples(0, 0..<recorded)).runs.first?.first, 72000)
    }

    // MARK: agraph run --transport follow

    /// Whether the `ffmpeg` decoder plugin loads here (Swift plugins do not
    /// load into the ThreadSanitizer build).
    var hasFFmpegPlugin: Bool {
        PluginCatalog.load().types.contains { $0.descriptor.typeID == "ffmpeg" }
    }

    /// `status` at agraph's prompt: its reply (a line with "transport").
    func statusLine(_ cli: CLIProcess, timeout: Double = 5) -> String? {
        let before = cli.stdout.count
        cli.send("status")
        var line: String?
        _ = waitUntil(timeout: timeout) {
            let out = cli.stdout
            guard out.count > before else { return false }
            line = String(out.dropFirst(before)).split(separator: "\n").first { $0.contains("transport ") }.map(String.init)
            return line != nil
        }
        return line
    }

    /// Polls `status` until its line satisfies `predicate`.
    func waitForStatus(_ cli: CLIProcess, timeout: Double = 10, _ predicate: (String) -> Bool) -> String? {
        var last: String?
        _ = waitUntil(timeout: timeout) {
            last = statusLine(cli)
            return last.map(predicate) ?? false
        }
        return last.flatMap { predicate($0) ? $0 : nil }
    }

    /// `agraph run --transport follow`: a `file`, a `media` → `ffmpeg` and
    /// a two-item `playlist` (none says "transport") all follow
    /// jack_transport's locate (stopped and rolling), play and stop,
    /// sample for sample; the status line shows the transport; `seek` on a
    /// follower is refused. Where the ffmpeg plugin does not load (the
    /// ThreadSanitizer build), the `file` alone.
    func testAgraphRunTransportFollowMovesFileMediaAndPlaylist() throws {
        let plugin = hasFFmpegPlugin
        try writeNumberedFile()
        // The playlist's items continue each other: the list is the
        // numbered sequence too, its second item from frame 144000.
        try writeNumberedFile("part-a.wav", frames: 0..<144_000)
        try writeNumberedFile("part-b.wav", frames: 144_000..<Self.fileFrames)
        let decoded = plugin ? """
              {"id": "m", "type": "media", "params": {"path": "numbered.wav"}},
              {"id": "dec", "type": "ffmpeg"},
              {"id": "pl", "type": "playlist", "params": {"layout": "mono", "items": [{"path": "part-a.wav"}, {"path": "part-b.wav"}]}},
              {"id": "o2", "type": "jack-out", "params": {"ports": ["media"], "connect": ["agraph-rec:in_2"]}},
              {"id": "o3", "type": "jack-out", "params": {"ports": ["list"], "connect": ["agraph-rec:in_3"]}},
            """ : ""
        let decodedLinks = plugin ? #", {"from": "m", "to": "dec"}, {"from": "dec", "to": "o2"}, {"from": "pl", "to": "o3"}"# : ""
        let graph = try writeGraph("""
            {"format": "agraph/1", "name": "studio", "sampleRate": 48000, "nodes": [
              {"id": "song", "type": "file", "params": {"path": "numbered.wav"}},
              \(decoded)
              {"id": "o1", "type": "jack-out", "params": {"ports": ["file"], "connect": ["agraph-rec:in_1"]}}],
             "links": [{"from": "song", "to": "o1"}\(decodedLinks)]}
            """)
        let followers: Set<String> = plugin ? ["song", "dec", "pl"] : ["song"]
        let channels = plugin ? ["file", "media → ffmpeg", "playlist"] : ["file"]
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: channels.count, seconds: 30)
            defer { rec.close() }
            let cli = try startAgraphRun(graph, server: server, ["--transport", "follow"])
            defer { cli.kill() }
            XCTAssertNotNil(cli.waitForStderr("(they play while it rolls", timeout: 5), cli.stderr)
            let said = cli.stderr.split(separator: "\n").first { $0.hasPrefix("agraph: following the JACK transport: ") }
            let named = said?.dropFirst("agraph: following the JACK transport: ".count).split(separator: " (").first
            XCTAssertEqual(named.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) },
                           followers, cli.stderr)
            XCTAssertNotNil(waitForStatus(cli) { $0.contains("transport stopped 0.0 s (frame 0)") && !$0.contains("locating") },
                            cli.stdout + cli.stderr)
            cli.send("seek song 1")
            XCTAssertNotNil(cli.waitForStderr("error: 'song' follows the JACK transport: locate the transport instead", timeout: 5),
                            cli.stderr)

            try jackTransport(server, "locate 200000")
            XCTAssertNotNil(waitForStatus(cli) { $0.contains("(frame 200000)") && !$0.contains("locating") }, cli.stdout + cli.stderr)
            try jackTransport(server, "play")
            XCTAssertNotNil(waitForStatus(cli) { $0.contains("transport rolling") && !$0.contains("locating") }, cli.stdout + cli.stderr)
            usleep(700_000)
            try jackTransport(server, "locate 100000")
            usleep(200_000)
            XCTAssertNotNil(waitForStatus(cli) { $0.contains("transport rolling") && !$0.contains("locating") }, cli.stdout + cli.stderr)
            usleep(700_000)
            try jackTransport(server, "stop")
            XCTAssertNotNil(waitForStatus(cli) { $0.contains("transport stopped") }, cli.stdout + cli.stderr)
            usleep(200_000)
            let recorded = rec.framesRecorded
            let xruns = rec.xruns
            cli.send("quit")
            assertExitsCleanly(cli)
            if xruns > 0 && !isLast { throw XrunsHappened(count: xruns) }

            for (c, name) in channels.enumerated() {
                let check = Self.followsTransport(rec, channel: c, recorded: recorded)
                XCTAssertEqual(check.problems, [], "\(name) against the transport, cycle by cycle")
                // A follower's feeder may fall behind on a loaded machine:
                // the silence it leaves keeps time (checked cycle by cycle
                // above), so the runs join across it.
                let runs = Self.joiningUnderruns(Self.runs(rec.samples(c, 0..<recorded)).runs)
                if xruns == 0 {
                    XCTAssertEqual(runs.map(\.first), [200_000, 100_000], "\(name): from each located frame: \(runs)")
                    XCTAssertTrue(runs.allSatisfy { $0.count >= 24000 }, "\(name): \(runs)")
                } else {
                    // A last attempt with xruns: a skipped cycle makes the
                    // followers locate again, on the transport's frame.
                    XCTAssertTrue(Self.startsInOrder(runs, [200_000, 100_000]), "\(name): from each located frame: \(runs)")
                }
            }
        }
    }
}
