import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import CJack
import Foundation
import Synchronization
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// How often JACK's process thread of a graph ran the counting thread-init.
private let processThreadInits = Atomic<Int>(0)
/// The thread it last ran on (`pthread_t`).
private let processThreadInitThread = Atomic<UInt>(0)

/// Graphs running live on a private `jackd -d dummy` per test, recorded by
/// an in-process JACK client (`JACKRecorder`) and checked sample by sample;
/// the `agraph run` command is run as a subprocess.
///
/// Timing is measured in recorded frames wherever possible (the recording
/// advances with JACK's clock), so a loaded machine delays the tests but
/// does not change what they check.
final class LiveJACKTests: LiveTestCase {
    /// 2^20: a position-encoded file holds `p / 2^20` at frame `p`, exact in Float.
    static let positionScale: Float = 1_048_576

    // MARK: helpers

    /// A mono float WAV whose sample at frame `p` is `p / 2^20`: every
    /// recorded sample says where in the file it came from.
    func writePositionFile(_ name: String, seconds: Double) throws -> String {
        let frames = Int(seconds * Self.rate)
        let path = dir.file(name)
        try writeSoundFile(path, format: .wavFloat32, channels: 1, sampleRate: Self.rate,
                           samples: (0..<frames).map { Float($0) / Self.positionScale })
        return path
    }

    /// The file positions of recorded samples; fails on a value that is not one.
    func positions(_ samples: [Float], file: StaticString = #filePath, line: UInt = #line) -> [Int] {
        samples.enumerated().map { i, x in
            let p = Int(x * Self.positionScale)
            if Float(p) / Self.positionScale != x {
                XCTFail("recorded sample \(i) = \(x) is not a file position", file: file, line: line)
            }
            return p
        }
    }

    /// Runs of consecutive file positions in a recording (ignoring silence,
    /// i.e. position 0 in the middle of nothing): (first index, first
    /// position, length).
    static func runs(_ positions: [Int]) -> [(index: Int, position: Int, count: Int)] {
        var out: [(index: Int, position: Int, count: Int)] = []
        var i = 0
        while i < positions.count {
            if positions[i] == 0 && (i + 1 >= positions.count || positions[i + 1] != 1) { i += 1; continue }
            let start = i
            while i + 1 < positions.count && positions[i + 1] == positions[i] + 1 { i += 1 }
            out.append((start, positions[start], i - start + 1))
            i += 1
        }
        return out
    }

    /// Largest distance (in samples) of a tone's rising zero crossings from
    /// the best straight line: a gap, a repeated or a dropped block of a
    /// continuous tone shows up as a jump of a good part of a cycle.
    static func phaseResidual(_ samples: [Float]) -> Double {
        let crossings = SignalAnalysis.risingZeroCrossings(samples, hysteresis: 0.01)
        guard crossings.count > 2 else { return .infinity }
        let x = crossings.indices.map(Double.init)
        let slope = SignalAnalysis.leastSquaresSlope(x: x, y: crossings)
        let meanX = x.reduce(0, +) / Double(x.count), meanY = crossings.reduce(0, +) / Double(x.count)
        return zip(x, crossings).map { abs($1 - (meanY + slope * ($0 - meanX))) }.max() ?? .infinity
    }

    /// `count` samples from `start`, cut down to whole cycles of a tone with
    /// `period` samples per cycle.
    static func wholeCycles(_ s: [Float], from start: Int, count: Int, period: Int = 48) -> [Float] {
        let n = count / period * period
        return Array(s[start..<min(s.count, start + n)])
    }

    // MARK: tone

    func testToneRunsFiveSecondsWithExactFrequencyLevelAndNoXruns() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 8)
            defer { rec.close() }
            let live = try startGraph(Self.toneGraph(duration: 5), server: server.name)
            defer { live.stop() }
            let events = EventLog(live.events)

            XCTAssertNotNil(events.wait(timeout: 15) { $0 == .endOfStream }, "end of stream after 5 s; events: \(events.all)")
            rec.waitForFrames(rec.framesRecorded + 4096, timeout: 5)
            try checkNoXruns(rec, live, isLast: isLast)
            let status = live.status()
            XCTAssertTrue(status.finished)
            XCTAssertEqual(status.xruns, 0, "xruns reported to the graph")
            XCTAssertEqual(rec.xruns, 0, "xruns reported to the recorder")
            XCTAssertEqual(status.underruns, 0)
            XCTAssertNil(live.shutdownReason)

            // One length for both channels: the recorder goes on recording.
            let recorded = rec.framesRecorded
            let left = rec.samples(0, 0..<recorded), right = rec.samples(1, 0..<recorded)
            XCTAssertNil(firstMismatch(left, right), "both channels carry the tone")
            // The sine starts at phase 0: frame 0 is 0, frame 1 the first non-zero sample.
            let first = try XCTUnwrap(left.firstIndex { $0 != 0 }) - 1
            let last = try XCTUnwrap(left.lastIndex { $0 != 0 })
            XCTAssertEqual(Double(last + 1 - first), 5 * Self.rate, accuracy: 2, "the tone lasts 5 s")
            XCTAssertTrue(left[(last + 1)...].allSatisfy { $0 == 0 }, "silence after the end")

            let steady = Self.wholeCycles(left, from: first + 4800, count: last - first - 9600)
            XCTAssertGreaterThan(steady.count, 200_000)
            let f = SignalAnalysis.frequency(of: steady, sampleRate: Self.rate)
            XCTAssertEqual(f, 1000, accuracy: 1000 * 0.0001, "frequency within 0.01 %")
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(steady), -12, accuracy: 0.05, "level within 0.05 dB")
            XCTAssertLessThan(Self.phaseResidual(Array(left[first..<(last + 1)])), 0.01, "no gap or repeated block")
        }
    }

    // MARK: live control

    func testLiveGainSetChangesTheRecordedLevelByTheAskedDecibels() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 6)
            defer { rec.close() }
            let live = try startGraph(Self.toneGraph(channels: 1, gain: true), server: server.name)
            defer { live.stop() }

            XCTAssertTrue(rec.waitForFrames(Int(1.0 * Self.rate), timeout: 10))
            let mark = rec.framesRecorded
            try live.set("g.gain", -6)
            XCTAssertTrue(rec.waitForFrames(mark + Int(1.0 * Self.rate), timeout: 10))
            XCTAssertEqual(try live.value("g.gain"), -6)

            try checkNoXruns(rec, live, isLast: isLast)
            let s = rec.samples(0)
            let start = try XCTUnwrap(s.firstIndex { $0 != 0 })
            XCTAssertLessThan(start + 4800, mark - 14400 - 480, "enough tone before the set")
            // Recorded before `set` was called, and the last 0.5 s (long after it).
            let before = Self.wholeCycles(s, from: mark - 480 - 14400, count: 14400)
            let after = Self.wholeCycles(s, from: s.count - 24000, count: 24000)
            let levelBefore = SignalAnalysis.sineLevelDBFS(before), levelAfter = SignalAnalysis.sineLevelDBFS(after)
            XCTAssertEqual(levelBefore, -12, accuracy: 0.05)
            XCTAssertEqual(levelAfter - levelBefore, -6, accuracy: 0.01, "before \(levelBefore), after \(levelAfter)")
            XCTAssertLessThan(Self.phaseResidual(Array(s[start...])), 0.01, "the tone ran on without a gap")
        }
    }

    /// An 8 s file whose samples encode their frame number, played by a
    /// `file` node to a 1-channel recorder.
    func startPositionPlayer(server: String) throws -> (JACKRecorder, RunningGraph) {
        _ = try writePositionFile("positions.wav", seconds: 8)
        let rec = try JACKRecorder(server: server, channels: 1, seconds: 6)
        do {
            let live = try startGraph("""
                {"format": "agraph/1", "name": "player", "sampleRate": 48000, "nodes": [
                  {"id": "player", "type": "file", "params": {"path": "positions.wav"}},
                  {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_1"]}}],
                 "links": [{"from": "player", "to": "out"}]}
                """, server: server)
            return (rec, live)
        } catch {
            rec.close()
            throw error
        }
    }

    func testSeekMakesTheRecordingContinueFromTheNewPosition() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let (rec, live) = try startPositionPlayer(server: server.name)
            defer { rec.close(); live.stop() }

            XCTAssertTrue(rec.waitForFrames(Int(1.0 * Self.rate), timeout: 10))
            let mark = rec.framesRecorded
            try live.seek(node: "player", seconds: 5)
            XCTAssertTrue(rec.waitForFrames(mark + Int(1.0 * Self.rate), timeout: 10))
            XCTAssertThrowsError(try live.seek(node: "player", seconds: 9), "past the end of the 8 s file")

            try checkNoXruns(rec, live, isLast: isLast)
            let p = positions(rec.samples(0))
            let runs = Self.runs(p)
            XCTAssertEqual(runs.count, 2, "from the start, then from the seek: \(runs)")
            guard runs.count == 2 else { return }
            XCTAssertEqual(runs[0].position, 0, "plays from the file's first frame")
            XCTAssertGreaterThanOrEqual(runs[0].index + runs[0].count, mark, "nothing changed before seek was called")
            XCTAssertEqual(runs[1].position, 240_000, "continues exactly at 5 s")
            XCTAssertEqual(runs[1].index + runs[1].count, p.count, "and on to the end of the recording")
            let gap = runs[1].index - (runs[0].index + runs[0].count)
            XCTAssertTrue(p[(runs[0].index + runs[0].count)..<runs[1].index].allSatisfy { $0 == 0 }, "only silence between")
            XCTAssertLessThanOrEqual(gap, Int(LiveTiming.seconds(0.1) * Self.rate),
                                     "the seek took effect within 0.1 s (gap \(gap) frames)")
            XCTAssertLessThanOrEqual(runs[1].index - mark, Int(LiveTiming.seconds(0.25) * Self.rate),
                                     "the seek took effect soon after the call")
            XCTAssertEqual(live.status().underruns, 0)
        }
    }

    func testPauseOutputsSilenceAndPlayGoesOnWhereItStopped() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let (rec, live) = try startPositionPlayer(server: server.name)
            defer { rec.close(); live.stop() }

            XCTAssertTrue(rec.waitForFrames(Int(0.75 * Self.rate), timeout: 10))
            let pausedAt = rec.framesRecorded
            live.pause()
            XCTAssertTrue(live.status().paused)
            XCTAssertTrue(rec.waitForFrames(pausedAt + Int(0.5 * Self.rate), timeout: 10))
            let playedAt = rec.framesRecorded
            let heldAt = live.engine.framePosition
            live.play()
            XCTAssertFalse(live.status().paused)
            XCTAssertTrue(rec.waitForFrames(playedAt + Int(0.5 * Self.rate), timeout: 10))

            try checkNoXruns(rec, live, isLast: isLast)
            let p = positions(rec.samples(0))
            let runs = Self.runs(p)
            XCTAssertEqual(runs.count, 2, "played, paused, played: \(runs)")
            guard runs.count == 2 else { return }
            let pauseStart = runs[0].index + runs[0].count, pauseEnd = runs[1].index
            XCTAssertEqual(runs[0].position, 0)
            XCTAssertEqual(runs[1].position, runs[0].position + runs[0].count, "goes on at the very next frame")
            XCTAssertEqual(runs[1].index + runs[1].count, p.count)
            XCTAssertTrue(p[pauseStart..<pauseEnd].allSatisfy { $0 == 0 }, "paused output is silence")
            XCTAssertGreaterThanOrEqual(pauseStart, pausedAt, "nothing was silenced before pause()")
            let soon = Int(LiveTiming.seconds(0.25) * Self.rate)
            XCTAssertLessThanOrEqual(pauseStart, pausedAt + soon)
            XCTAssertGreaterThanOrEqual(pauseEnd, playedAt, "silence until play()")
            XCTAssertLessThanOrEqual(pauseEnd, playedAt + soon)
            XCTAssertEqual(heldAt, runs[0].count, "the engine held its position while paused")
        }
    }

    // MARK: events

    func testEventsConnectionEndOfStreamAndXrun() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let live = try startGraph(Self.toneGraph(duration: 1, connect: nil), server: server.name)
        defer { live.stop() }
        let events = EventLog(live.events)
        let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 5)
        defer { rec.close() }
        try rec.connect(from: ["agraph-live:out_L", "agraph-live:out_R"])

        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .connection(ours: "out_L", other: "agraph-rec:in_1", connected: true) },
                        "\(events.all)")
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .connection(ours: "out_R", other: "agraph-rec:in_2", connected: true) },
                        "\(events.all)")
        XCTAssertNotNil(events.wait(timeout: 10) { $0 == .endOfStream }, "\(events.all)")
        XCTAssertTrue(live.engine.isFinished)
        // The engine runs on after the end: where it is when the event has
        // been read, within 1024 frames (21 ms; scaled under TSan).
        XCTAssertEqual(live.engine.framePosition, 48000, accuracy: Int(LiveTiming.seconds(1024)))

        // A client that overruns its cycle: JACK reports an xrun to everyone.
        let before = live.status().xruns
        rec.stallNextCycle(microseconds: 150_000)
        XCTAssertNotNil(events.wait(timeout: 5) { if case .xrun(let total) = $0 { total > before } else { false } },
                        "an xrun event; events: \(events.all)")
        XCTAssertGreaterThan(live.status().xruns, before)

        rec.close()
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .connection(ours: "out_L", other: "agraph-rec:in_1", connected: false) },
                        "\(events.all)")
    }

    // MARK: buffer size and allocations

    func testBufferSizeChangesKeepTheAudioGoingWithoutAllocatingInTheProcessCallback() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 16)
        defer { rec.close() }
        let initsBefore = processThreadInits.load(ordering: .relaxed)
        let live = try startGraph(Self.toneGraph(channels: 1, gain: true), server: server.name) { options in
            options.threadInit = { _ in
                processThreadInits.add(1, ordering: .relaxed)
                processThreadInitThread.store(UInt(pthread_self()), ordering: .relaxed)
                MallocCounter.beginThread()
            }
        }
        defer { live.stop() }
        let events = EventLog(live.events)
        let started = Date()

        // Warm-up: 1 s of audio, then count from zero.
        XCTAssertTrue(rec.waitForFrames(Int(1.0 * Self.rate), timeout: 10))
        MallocCounter.reset()
        XCTAssertEqual(processThreadInits.load(ordering: .relaxed) - initsBefore, 1, "threadInit ran once")
        XCTAssertEqual(processThreadInitThread.load(ordering: .relaxed), UInt(jack_client_thread_id(live.client.handle)),
                       "threadInit ran on JACK's process thread of the graph")

        // 3 s at the server's period (256), 3 s at 4 times that, 3 s at
        // half; each segment's frames: from after the change to before the
        // next one.
        let sizes = [server.period, server.period * 4, server.period / 2]
        var segments: [Range<Int>] = []
        var segmentStart = Int(1.1 * Self.rate)
        for size in sizes.dropFirst() {
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + Int(3.0 * Self.rate), timeout: 15))
            segments.append(segmentStart..<(rec.framesRecorded - 480))
            let r = try server.tool("jack_bufsize", [String(size)])
            XCTAssertEqual(r.status, 0, "jack_bufsize \(size): \(r.stdout)\(r.stderr)")
            XCTAssertNotNil(events.wait(timeout: 5) { $0 == .bufferSize(size) }, "\(events.all)")
            segmentStart = rec.framesRecorded + 4800
        }
        XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + Int(3.0 * Self.rate), timeout: 15))
        let mallocs = MallocCounter.total
        let elapsed = Date().timeIntervalSince(started)
        segments.append(segmentStart..<rec.framesRecorded)

        XCTAssertGreaterThanOrEqual(elapsed, 10, "a run of at least 10 s")
        if MallocCounter.isAvailable {
            XCTAssertEqual(mallocs, 0, "allocations on JACK's process thread after the warm-up")
        }
        let status = live.status()
        XCTAssertEqual(status.bufferSize, sizes[2])
        XCTAssertFalse(status.serverGone)
        XCTAssertNil(live.shutdownReason)
        XCTAssertEqual(Set(rec.cycleSizes), Set(sizes), "the recorder saw every period")

        // The tone goes on at every period, at its frequency and level.
        let xruns = max(rec.xruns, status.xruns)
        let s = rec.samples(0)
        for segment in segments {
            XCTAssertGreaterThan(segment.count, Int(2.5 * Self.rate))
            let part = Array(s[segment])
            XCTAssertEqual(SignalAnalysis.frequency(of: part, sampleRate: Self.rate), 1000,
                           accuracy: 1000 * (xruns == 0 ? 0.0001 : 0.001), "frequency in frames \(segment)")
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(Self.wholeCycles(s, from: segment.lowerBound, count: segment.count)),
                           -12, accuracy: 0.05, "level in frames \(segment)")
        }
        let start = try XCTUnwrap(s.firstIndex { $0 != 0 })
        XCTAssertFalse(s[start...].contains { !$0.isFinite })
        if xruns == 0 {
            // Without xruns: not one frame lost, repeated or silent across the changes.
            XCTAssertLessThan(Self.phaseResidual(Array(s[(start + 4800)...])), 0.01, "continuous across the period changes")
            XCTAssertLessThanOrEqual(Self.longestSilence(s[start...]), 1, "no silent stretch")
        } else {
            print("\(#function): \(xruns) xrun(s) (machine load?): frame-exact continuity not checked")
        }
    }

    /// The longest run of exactly-zero samples.
    static func longestSilence(_ s: ArraySlice<Float>) -> Int {
        var longest = 0, run = 0
        for x in s {
            run = x == 0 ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    // MARK: latency and metadata

    func testPortLatenciesPrettyNamesAndLayoutAreVisibleToJACKTools() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        try writeSoundFile(dir.file("stereo.wav"), format: .wavFloat32, channels: 2, sampleRate: Self.rate,
                           samples: (0..<96000).map { Float($0 % 100) / 200 })
        let player = try startGraph("""
            {"format": "agraph/1", "name": "player", "sampleRate": 48000, "nodes": [
              {"id": "player", "type": "file", "params": {"path": "stereo.wav", "loop": true}},
              {"id": "tag", "type": "format-tag", "params": {"layout": "binaural"}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "player", "to": "tag"}, {"from": "tag", "to": "out"}]}
            """, server: server.name, clientName: "agraph-file")
        defer { player.stop() }
        let thru = try startGraph("""
            {"format": "agraph/1", "name": "thru", "sampleRate": 48000, "nodes": [
              {"id": "in", "type": "jack-in", "params": {"channels": 2, "connect": ["system:capture_*"]}},
              {"id": "trim", "type": "gain", "params": {"gain": -3}},
              {"id": "out", "type": "jack-out", "params": {"ports": ["thru_L", "thru_R"], "connect": ["system:playback_*"]}}],
             "links": [{"from": "in", "to": "trim"}, {"from": "trim", "to": "out"}]}
            """, server: server.name, clientName: "agraph-thru")
        defer { thru.stop() }

        // Latencies settle after the connections; poll briefly. The dummy
        // driver's capture ports report one period (256), its playback
        // ports two.
        let capture = [server.period, server.period], playback = [2 * server.period, 2 * server.period]
        var latencies: [String: (playback: [Int], capture: [Int])] = [:]
        let expected: [(String, KeyPath<(playback: [Int], capture: [Int]), [Int]>, [Int])] = [
            ("agraph-file:out_L", \.capture, [0, 0]),           // a file's ring is prefetch, not delay
            ("agraph-file:out_R", \.capture, [0, 0]),
            ("agraph-thru:in_L", \.capture, capture),           // system:capture's
            ("agraph-thru:thru_L", \.capture, capture),         // the same: the graph adds 0
            ("agraph-thru:thru_R", \.capture, capture),
            ("agraph-thru:thru_L", \.playback, playback),       // system:playback's
            ("agraph-thru:in_L", \.playback, playback),         // the same: the graph adds 0
            ("agraph-thru:in_R", \.playback, playback),
        ]
        var lsp = ToolResult(status: -1, stdout: "", stderr: "")
        let deadline = Date().addingTimeInterval(LiveTiming.seconds(5))
        repeat {
            (latencies, lsp) = try Self.portLatencies(server: server)
            if expected.allSatisfy({ latencies[$0.0]?[keyPath: $0.1] == $0.2 }) { break }
            usleep(100_000)
        } while Date() < deadline
        XCTAssertEqual(lsp.status, 0, lsp.stderr)
        for (port, direction, value) in expected {
            XCTAssertEqual(latencies[port]?[keyPath: direction], value, "\(port) \(direction)\n\(lsp.stdout)")
        }

        func properties(_ port: String) throws -> [String: String] {
            let r = try server.tool("jack_property", ["--port", "-l", port])
            XCTAssertEqual(r.status, 0, r.stderr)
            return Self.parseProperties(r.stdout)
        }
        let prettyKey = "http://jackaudio.org/metadata/pretty-name"
        let layoutKey = "urn:audiograph:channel-layout"
        XCTAssertEqual(RunningGraph.prettyNameKey, prettyKey)
        XCTAssertEqual(RunningGraph.layoutKey, layoutKey)
        XCTAssertEqual(try properties("agraph-file:out_L"), [prettyKey: "binaural L", layoutKey: "binaural"])
        XCTAssertEqual(try properties("agraph-file:out_R"), [prettyKey: "binaural R", layoutKey: "binaural"])
        XCTAssertEqual(try properties("agraph-thru:in_L"), [prettyKey: "stereo L", layoutKey: "stereo"])
        XCTAssertEqual(try properties("agraph-thru:thru_R"), [prettyKey: "stereo R", layoutKey: "stereo"])
        let all = try server.tool("jack_property", ["-l"])
        XCTAssertTrue(all.stdout.contains("key: \(layoutKey) value: binaural"), all.stdout)

        // Stopping removes what the graph published.
        player.stop()
        let after = try server.tool("jack_property", ["-l"])
        XCTAssertFalse(after.stdout.contains("binaural"), after.stdout)
    }

    /// `jack_property -l` output (`key: K value: V` lines) as a dictionary.
    static func parseProperties(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for line in text.split(separator: "\n").map(String.init) where line.hasPrefix("key: ") {
            guard let v = line.range(of: " value: ") else { continue }
            out[String(line[line.index(line.startIndex, offsetBy: 5)..<v.lowerBound])] = String(line[v.upperBound...])
        }
        return out
    }

    // MARK: servers

    func testServerAutoStartsAndStopsAnEmbeddedServer() throws {
        let name = TestJACKServer.uniqueName()
        XCTAssertFalse(TestJACKServer.acceptsClients(name))
        let live = try startGraph(Self.toneGraph(duration: 0.5, connect: nil), server: name, mode: .auto)
        var stopped = false
        defer {
            if !stopped { live.stop() }
            for pid in TestJACKServer.jackdProcesses(named: name) { kill(pid, SIGKILL) }
        }
        XCTAssertNotNil(live.server, "auto started a server")
        XCTAssertEqual(live.client.sampleRate, Self.rate)
        XCTAssertEqual(TestJACKServer.jackdProcesses(named: name).count, 1)
        XCTAssertTrue(TestJACKServer.acceptsClients(name))
        let began = live.engine.framePosition
        usleep(300_000)
        XCTAssertGreaterThan(live.engine.framePosition, began, "the graph runs on it")
        live.stop()
        stopped = true
        XCTAssertEqual(TestJACKServer.jackdProcesses(named: name), [], "no jackd of that name remains")
        XCTAssertFalse(TestJACKServer.acceptsClients(name))
    }

    func testCLIServerAutoStartsAndStopsAnEmbeddedServer() throws {
        let name = TestJACKServer.uniqueName()
        let graph = try writeGraph(Self.toneGraph(duration: 10, connect: nil))
        let cli = try CLIProcess(["run", graph, "--server", "auto", "--server-name", name, "--duration", "1.5"],
                                 directory: dir.path)
        defer {
            cli.kill()
            for pid in TestJACKServer.jackdProcesses(named: name) { kill(pid, SIGKILL) }
        }
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr)
        XCTAssertTrue(cli.stderr.contains("embedded JACK server"), cli.stderr)
        XCTAssertEqual(TestJACKServer.jackdProcesses(named: name).count, 1, "an embedded jackd -n \(name) runs")
        assertExitsCleanly(cli)
        XCTAssertEqual(TestJACKServer.jackdProcesses(named: name), [], "no jackd of that name remains")
        XCTAssertFalse(TestJACKServer.acceptsClients(name))
    }

    func testCLIReportsAServerKilledMidRunAndLeavesAValidFile() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let graph = try writeGraph("""
            {"format": "agraph/1", "name": "tone-both", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -12, "channels": 2}},
              {"id": "out", "type": "jack-out"},
              {"id": "file", "type": "file-out", "params": {"path": "rendered.wav"}}],
             "links": [{"from": "tone", "to": "out"}, {"from": "tone", "to": "file"}]}
            """)
        let launched = Date()
        let cli = try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name, "--duration", "30"],
                                 directory: dir.path)
        defer { cli.kill() }
        let running = try XCTUnwrap(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr)
        usleep(2_000_000)
        let killed = Date()
        server.kill9()

        let reported = cli.waitForStderr("the JACK server shut down", timeout: 10)
        XCTAssertNotNil(reported, cli.stderr)
        if let reported {
            XCTAssertLessThanOrEqual(reported.timeIntervalSince(killed), LiveTiming.seconds(2), "reported within 2 s")
        }
        XCTAssertTrue(cli.waitForExit(timeout: 10), "agraph exits after the server died\n\(cli.stderr)")
        let exitedAfter = Date().timeIntervalSince(killed)
        XCTAssertLessThanOrEqual(exitedAfter, LiveTiming.seconds(5))
        XCTAssertNotEqual(cli.status, 0, cli.stderr)
        XCTAssertEqual(cli.status, 1, cli.stderr)

        let file = try readSoundFile(dir.file("rendered.wav"))
        XCTAssertEqual(file.channels, 2)
        XCTAssertEqual(file.sampleRate, Self.rate)
        let frames = file.samples.count / 2
        let seconds = Double(frames) / Self.rate
        // Everything the engine rendered ("stopped at X.XX s") is in the file.
        let stoppedAt = try XCTUnwrap(cli.stderr.firstMatch(of: /stopped at ([0-9.]+) s/).flatMap { Double($0.1) }, cli.stderr)
        XCTAssertEqual(seconds, stoppedAt, accuracy: 0.0051, "file frames \(frames) vs \(stoppedAt) s rendered")
        // And that is about as long as the graph ran.
        let ranAtMost = killed.timeIntervalSince(launched)
        let ranAtLeast = killed.timeIntervalSince(running)
        XCTAssertLessThanOrEqual(seconds, ranAtMost + 0.1)
        XCTAssertGreaterThanOrEqual(seconds, ranAtLeast * 0.9 - 0.3, "ran \(ranAtLeast)…\(ranAtMost) s")
        let left = deinterleave(file.samples, channels: 2, channel: 0)
        XCTAssertNil(firstMismatch(left, deinterleave(file.samples, channels: 2, channel: 1)))
        let steady = Self.wholeCycles(left, from: 4800, count: frames - 9600)
        XCTAssertEqual(SignalAnalysis.frequency(of: steady, sampleRate: Self.rate), 1000, accuracy: 0.1)
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(steady), -12, accuracy: 0.05)
        XCTAssertLessThan(Self.phaseResidual(left), 0.01, "every rendered frame, in order")
    }

    func testCLIRejectsAnInvalidGraphWithoutStartingJackd() throws {
        // A fake jackd first on PATH records whether anything tried to start one.
        let bin = dir.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let marker = dir.file("jackd-was-started")
        try "#!/bin/sh\ntouch '\(marker)'\nexit 1\n".write(toFile: bin + "/jackd", atomically: true, encoding: .utf8)
        chmod(bin + "/jackd", 0o755)
        let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let name = TestJACKServer.uniqueName()

        let invalid = try writeGraph(Self.toneGraph(frequency: 30000, connect: nil), "invalid.json")
        let bad = try CLIProcess(["run", invalid, "--server", "auto", "--server-name", name],
                                 directory: dir.path, environment: ["PATH": path])
        defer { bad.kill() }
        XCTAssertTrue(bad.waitForExit(timeout: 15))
        XCTAssertEqual(bad.status, 1, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("error:") && bad.stderr.contains("frequency"), bad.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "jackd was started for an invalid graph")
        XCTAssertEqual(TestJACKServer.jackdProcesses(named: name), [])

        // The control: a valid graph does reach for (the fake) jackd.
        let valid = try writeGraph(Self.toneGraph(duration: 1, connect: nil), "valid.json")
        let good = try CLIProcess(["run", valid, "--server", "auto", "--server-name", name],
                                  directory: dir.path, environment: ["PATH": path])
        defer { good.kill() }
        XCTAssertTrue(good.waitForExit(timeout: 15))
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the fake jackd is the one agraph runs")
        XCTAssertEqual(good.status, 1, good.stderr)
        XCTAssertTrue(good.stderr.contains("jackd exited"), good.stderr)
    }

    // MARK: measured latency (jack_iodelay)

    /// A pure realtime graph (jack-in → gain → jack-out) adds no frames
    /// beyond JACK's own: jack_iodelay looped through it measures what it
    /// measures through jack_thru.
    func testPureRealtimePathAddsNoLatencyMeasuredWithIodelay() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let viaThru = try iodelayThroughJackThru(server: server).roundTrip

        let live = try startGraph("""
            {"format": "agraph/1", "name": "thru", "nodes": [
              {"id": "in", "type": "jack-in", "params": {"channels": 1}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "in", "to": "g"}, {"from": "g", "to": "out"}]}
            """, server: server.name, clientName: "agraph-thru")
        defer { live.stop() }
        let viaGraph = try iodelay(server: server, into: "agraph-thru:in_1", from: "agraph-thru:out_1").roundTrip

        let thruFrames = try XCTUnwrap(viaThru, "jack_iodelay measured nothing through jack_thru")
        let graphFrames = try XCTUnwrap(viaGraph, "jack_iodelay measured nothing through the graph")
        XCTAssertEqual(thruFrames, Double(server.period), accuracy: 0.5, "the loop through jack_thru is one period")
        XCTAssertEqual(graphFrames, thruFrames, accuracy: 0.5, "the graph adds no frames beyond JACK's own")
    }

    // MARK: DAA endpoint auto

    /// The graph `stream → daa(endpoint auto) → jack-out` on `server`,
    /// with the test double of the DAA interface (whose right channel
    /// encodes the endpoint it was given); nil when it is not built.
    func startDAAGraph(server: TestJACKServer, connect: String?) throws -> RunningGraph? {
        guard let agraph = locateAgraph().path else { throw XCTSkip("build products not found") }
        let build = URL(fileURLWithPath: agraph).deletingLastPathComponent().path
        let double = build + "/libTestDoubleDAA.so"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: double), "libTestDoubleDAA.so not built")
        let media = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/media/ChannelCheck.ac4").path
        let inRepo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Media/ChannelCheck.ac4").path
        let path = FileManager.default.fileExists(atPath: inRepo) ? inRepo : media
        guard FileManager.default.fileExists(atPath: path) else {
            XCTFail("missing test media \(inRepo)")
            return nil
        }
        // The graph names the library by file name, found in a trusted
        // vendor-library folder (docs/security.md); as it was after the test.
        let previous = getenv("AGRAPH_VENDOR_LIBRARY_PATH").map { String(cString: $0) }
        addTeardownBlock {
            if let previous { setenv("AGRAPH_VENDOR_LIBRARY_PATH", previous, 1) } else { unsetenv("AGRAPH_VENDOR_LIBRARY_PATH") }
        }
        setenv("AGRAPH_VENDOR_LIBRARY_PATH", build, 1)
        let c = connect.map { #", "connect": ["\#($0)"]"# } ?? ""
        return try startGraph("""
            {"format": "agraph/1", "name": "route", "nodes": [
              {"id": "stream", "type": "ac4", "params": {"path": "\(path)"}},
              {"id": "dec", "type": "daa", "params": {"library": "libTestDoubleDAA.so", "endpoint": "auto", "fallbackEndpoint": "speakers"}},
              {"id": "out", "type": "jack-out", "params": {"headphones": ["*phones*"]\(c)}}],
             "links": [{"from": "stream", "to": "dec"}, {"from": "dec", "to": "out"}]}
            """, server: server.name, clientName: "agraph-route", registry: { binder in
            let (registry, report) = NodeRegistry.withPlugins(.builtIn.addingJACK(binder))
            XCTAssertNotNil(registry["daa"], "the daa plugin loads; \(report.note)")
            return registry
        })
    }

    /// The endpoint codes the double was given in `right` (its right channel).
    static func endpointCodes(_ right: [Float]) -> Set<Int> {
        Set(right.map { Int(($0 * 131_072).rounded()) / (65 * 13 * 10) % 3 })
    }

    /// The endpoint the double was given, from the last recorded 0.1 s.
    static func endpoint(_ rec: JACKRecorder) -> Int? {
        let n = rec.framesRecorded
        guard n > 4800 else { return nil }
        let codes = endpointCodes(rec.samples(1, (n - 4800)..<n))
        return codes.count == 1 ? codes.first : nil
    }

    /// `daa` with `endpoint: auto` follows the sink's connections live, like
    /// DAAPlay's route changes: the host tells it the route
    /// (`OutputRouteAware.outputRouteChanged`) from the jack-out's
    /// connections and `headphones` patterns: headphones, speakers, or
    /// unknown (nothing connected: the fallback endpoint).
    func testDAAEndpointAutoFollowsTheSinkConnections() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        guard let live = try startDAAGraph(server: server, connect: nil) else { return }
        defer { live.stop() }
        let events = EventLog(live.events)

        // The route is announced at start: nothing connected, not known.
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .route(.unknown) }, "\(events.all)")
        let speakers = try JACKRecorder(server: server.name, name: "spk-rec", channels: 2, seconds: 10)
        defer { speakers.close() }
        try speakers.connect(from: ["agraph-route:out_L", "agraph-route:out_R"])
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .route(.speakers) }, "\(events.all)")
        Thread.sleep(forTimeInterval: 1.5)
        XCTAssertEqual(Self.endpoint(speakers), 1, "connected to speakers: the speakers endpoint")

        let phones = try JACKRecorder(server: server.name, name: "phones-rec", channels: 2, seconds: 10)
        defer { phones.close() }
        try phones.connect(from: ["agraph-route:out_L", "agraph-route:out_R"])
        XCTAssertNotNil(events.wait(timeout: 5) { $0 == .route(.headphones) }, "\(events.all)")
        Thread.sleep(forTimeInterval: 1.5)
        XCTAssertEqual(live.outputRoute, .headphones)
        XCTAssertEqual(Self.endpoint(phones), 2, "connected to headphones: the headphones endpoint")
        XCTAssertEqual(Self.endpoint(speakers), 2, "the same stream goes to both")
    }

    /// The route is known before the first block: a graph whose jack-out
    /// `connect`s to headphones decodes its very first frames for them
    /// (it used to play ~40 ms on the fallback endpoint first).
    func testDAAEndpointAutoKnowsTheRouteBeforeTheFirstBlock() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let phones = try JACKRecorder(server: server.name, name: "phones-rec", channels: 2, seconds: 10)
        defer { phones.close() }
        guard let live = try startDAAGraph(server: server, connect: "phones-rec:in_*") else { return }
        defer { live.stop() }
        XCTAssertTrue(phones.waitForFrames(Int(1.5 * Self.rate), timeout: 10))
        let right = phones.samples(1)
        let first = try XCTUnwrap(right.firstIndex { $0 != 0 }, "the decoder's output reached the recorder")
        let head = Array(right[first..<min(right.count, first + 4800)])
        XCTAssertEqual(Self.endpointCodes(head), [2], "the first 0.1 s is decoded for headphones")
        XCTAssertEqual(live.outputRoute, .headphones)
    }
}
