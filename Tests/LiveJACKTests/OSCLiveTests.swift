import AudioGraph
import AudioGraphJACK
import AudioGraphOSC
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph run --osc` on a private `jackd -d dummy`, driven by liblo's own
/// `oscsend` and watched by `oscdump` (Debian's liblo-tools), and by a
/// socket of the test where a reply must come back to the sender: sets
/// heard in the recorded output, replies, subscriptions at their rates,
/// malformed traffic answered while the audio plays on, and no allocation
/// in the process callback while OSC traffic flows.
final class OSCLiveTests: LiveTestCase {
    static let amplitude = pow(10, -12.0 / 20)

    /// tone (1 kHz) → g → mix:in0; tone2 (3 kHz) → mix:in1; mix → m (meter)
    /// → out (mono, to the recorder). Both tones -12 dBFS peak.
    static func graph(duration: Double? = nil) -> String {
        let d = duration.map { #", "duration": \#($0)"# } ?? ""
        return """
            {"format": "agraph/1", "name": "osc", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1\(d)}},
              {"id": "tone2", "type": "test-tone", "params": {"frequency": 3000, "level": -12, "channels": 1\(d)}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "m", "type": "meter", "params": {"window": 100}},
              {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
             "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "mix:in0"}, {"from": "tone2", "to": "mix:in1"},
                       {"from": "mix", "to": "m"}, {"from": "m", "to": "out"}]}
            """
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try XCTSkipUnless(findExecutable("oscsend") != nil && findExecutable("oscdump") != nil,
                          "oscsend and oscdump (liblo-tools) are needed: scripts/setup installs them with AGRAPH_SETUP_TESTS=1")
    }

    // MARK: helpers

    /// The port `agraph run` said it serves OSC on.
    func oscPort(_ cli: CLIProcess, file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        XCTAssertNotNil(cli.waitForStderr("agraph: OSC on ", timeout: 10), cli.stderr, file: file, line: line)
        let text = cli.stderr
        guard let r = text.range(of: "agraph: OSC on osc.udp://127.0.0.1:"),
              let port = Int(text[r.upperBound...].prefix { $0.isNumber }) else {
            throw JACKTestError("no OSC URL on stderr: \(text)")
        }
        return port
    }

    /// `oscsend localhost PORT ADDRESS TYPES VALUES…`, which must succeed.
    func oscsend(_ port: Int, _ address: String, _ types: String = "", _ values: String...,
                 file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try runTool("oscsend", ["localhost", String(port), address] + (types.isEmpty ? [] : [types]) + values)
        XCTAssertEqual(r.status, 0, "oscsend \(address): \(r.stderr)", file: file, line: line)
    }

    /// Amplitudes of the 1 kHz and 3 kHz tones in `range` of the recording, dBFS.
    static func toneLevels(_ rec: JACKRecorder, _ range: Range<Int>) -> (k1: Double, k3: Double) {
        let x = rec.samples(0, range)
        return (SignalAnalysis.dBFS(SignalAnalysis.goertzelMagnitude(x, sampleRate: rate, frequency: 1000)),
                SignalAnalysis.dBFS(SignalAnalysis.goertzelMagnitude(x, sampleRate: rate, frequency: 3000)))
    }

    /// Throws `XrunsHappened` when the recorder saw xruns (not on the last attempt).
    func checkRecorderXruns(_ rec: JACKRecorder, isLast: Bool) throws {
        if rec.xruns > 0 && !isLast { throw XrunsHappened(count: rec.xruns) }
    }

    // MARK: set

    /// `oscsend … /agraph/g/gain f -6` lowers the 1 kHz tone by 6 dB in the
    /// recording, starting in the cycles after the message (and the 3 kHz
    /// tone not at all); `/agraph/mix/gains/1 f -6` lowers the 3 kHz tone
    /// (list element 1); `/agraph/g/mute T` silences the 1 kHz one.
    func testOscsendSetsAParameterAndAListElementHeardInTheNextCycles() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 30)
            defer { rec.close() }
            let cli = try startAgraphRun(try writeGraph(Self.graph()), server: server, ["--quiet", "--osc", "0"])
            defer { cli.kill() }
            let port = try oscPort(cli)
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)
            let settle = Int(LiveTiming.seconds(0.1) * Self.rate)

            // The actions first, the frames recorded at each; the checks
            // after, on a run without xruns.
            let start = rec.framesRecorded
            let launched = rec.framesRecorded
            try oscsend(port, "/agraph/g/gain", "f", "-6")
            let sent = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(sent + settle + 4800, timeout: 10))
            // A list element: mix.gains[1].
            try oscsend(port, "/agraph/mix/gains/1", "f", "-6")
            let listSent = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(listSent + settle + 4800, timeout: 10))
            // A boolean, as OSC's T.
            try oscsend(port, "/agraph/g/mute", "T")
            let muteSent = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(muteSent + settle + 4800, timeout: 10))
            let status = try OSCTestClient().ask(OSCMessage("/agraph/status"), port: port, reply: "/agraph/status")
            if case .int32(let xruns)? = status?.arguments[3], xruns > 0, !isLast { throw XrunsHappened(count: Int(xruns)) }
            try checkRecorderXruns(rec, isLast: isLast)

            let before = Self.toneLevels(rec, (start - 4800)..<start)
            XCTAssertEqual(before.k1, -12, accuracy: 0.1)
            XCTAssertEqual(before.k3, -12, accuracy: 0.1)
            let after = Self.toneLevels(rec, (sent + settle)..<(sent + settle + 4800))
            XCTAssertEqual(after.k1 - before.k1, -6, accuracy: 0.1, "the 1 kHz tone, 6 dB down")
            XCTAssertEqual(after.k3 - before.k3, 0, accuracy: 0.1, "the 3 kHz tone, untouched")
            let list = Self.toneLevels(rec, (listSent + settle)..<(listSent + settle + 4800))
            XCTAssertEqual(list.k3 - before.k3, -6, accuracy: 0.1, "the 3 kHz tone (mix input 1), 6 dB down")
            XCTAssertEqual(list.k1 - after.k1, 0, accuracy: 0.1, "the 1 kHz tone, as it was")
            let muted = Self.toneLevels(rec, (muteSent + settle)..<(muteSent + settle + 4800))
            XCTAssertLessThan(muted.k1, -100, "muted")
            XCTAssertEqual(muted.k3 - list.k3, 0, accuracy: 0.1)

            // Where the gain change begins in the recording, in 480-frame
            // blocks (10 cycles of 1 kHz, 30 of 3 kHz: whole cycles, so a
            // block's RMS is steady to 0.01 dB): the RMS of both tones, -12.0,
            // drops to -14.0 once the 1 kHz one is 6 dB down.
            let all = rec.samples(0)
            let blocks = stride(from: launched - 4800, to: sent + settle, by: 480).map {
                ($0, SignalAnalysis.rmsDBFS(all[$0..<($0 + 480)]))
            }
            XCTAssertEqual(blocks.first?.1 ?? 0, -12.0, accuracy: 0.05)
            let onset = try XCTUnwrap(blocks.first { $0.1 < -12.05 }?.0, "the change shows in the recording")
            XCTAssertGreaterThanOrEqual(onset, launched - 480, "not before oscsend ran")
            // The OSC thread wakes at once and the change is applied at the
            // start of the next cycle: within a few periods of oscsend's exit.
            XCTAssertLessThanOrEqual(onset, sent + Int(LiveTiming.seconds(0.05) * Self.rate),
                                     "the change began \(onset - sent) frames after oscsend exited")

            cli.send("quit")
            assertExitsCleanly(cli)
        }
    }

    // MARK: replies

    /// Get, status, pause and play from a socket of the test: the replies
    /// come back to it; pause is heard as silence, play as the tones again.
    func testGetStatusPauseAndPlayAnswerTheSender() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 30)
        defer { rec.close() }
        let cli = try startAgraphRun(try writeGraph(Self.graph()), server: server, ["--quiet", "--osc", "0"])
        defer { cli.kill() }
        let port = try oscPort(cli)
        let client = try OSCTestClient()
        XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)

        // Status first, while the signal has not changed since the start.
        usleep(UInt32(LiveTiming.seconds(0.5) * 1e6))
        client.send(OSCMessage("/agraph/status"), to: port)
        let bundle = try XCTUnwrap(client.receive(timeout: 5))
        let recorded = rec.framesRecorded
        let status = try XCTUnwrap(bundle.first { $0.address == "/agraph/status" }, "\(bundle)")
        XCTAssertEqual(status.typeTags, ",fhsiiifi")
        guard case .float(let seconds) = status.arguments[0], case .int64(let frames) = status.arguments[1] else {
            return XCTFail("\(status)")
        }
        XCTAssertGreaterThan(frames, 24000)
        XCTAssertEqual(Double(seconds), Double(frames) / Self.rate, accuracy: 0.01)
        XCTAssertEqual(status.arguments[2], .string("playing"))
        XCTAssertEqual(status.arguments[7], .int32(Int32(server.period)), "the buffer size")
        let peaks = bundle.filter { $0.address == "/agraph/peak" }
        XCTAssertEqual(peaks.count, 1, "one output port: \(bundle)")
        if case .float(let peak)? = peaks.first?.arguments[1] {
            // The port's peak over its last 0.25–0.5 s: the recording's.
            let heard = SignalAnalysis.dBFS(SignalAnalysis.peak(rec.samples(0, (recorded - 24000)..<recorded)))
            XCTAssertEqual(Double(peak), heard, accuracy: 0.05)
        } else {
            XCTFail("\(bundle)")
        }
        XCTAssertEqual(bundle.filter { $0.address == "/agraph/meter" }.count, 1, "one meter channel")

        let initial = try XCTUnwrap(client.ask(OSCMessage("/agraph/get", [.string("g.gain")]), port: port, reply: "/agraph/value"))
        XCTAssertEqual(initial.arguments, [.string("g.gain"), .float(0), .string("0")])
        client.send(OSCMessage("/agraph/g/gain", [.float(-6)]), to: port)
        let set = try XCTUnwrap(client.ask(OSCMessage("/agraph/get", [.string("g.gain")]), port: port, reply: "/agraph/value"))
        XCTAssertEqual(set.arguments, [.string("g.gain"), .float(-6), .string("-6")])

        // A reading of the meter, as `get m.rms` at the prompt: the 1 kHz
        // tone at -18 and the 3 kHz at -12 (RMS -21 and -15): -14.0 together.
        usleep(UInt32(LiveTiming.seconds(0.4) * 1e6))
        let rms = try XCTUnwrap(client.ask(OSCMessage("/agraph/get", [.string("m.rms")]), port: port, reply: "/agraph/value"))
        guard case .float(let level) = rms.arguments[1] else { return XCTFail("\(rms)") }
        XCTAssertEqual(Double(level), 10 * log10(pow(10, -2.10103) + pow(10, -1.50103)), accuracy: 0.05)


        // Pause: silence in the recording; play: the tones again.
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/pause"), port: port, reply: "/agraph/ok"))
        usleep(UInt32(LiveTiming.seconds(0.2) * 1e6))
        var n = rec.framesRecorded
        XCTAssertEqual(SignalAnalysis.peak(rec.samples(0, (n - 4800)..<n)), 0, "paused: silence")
        client.send(OSCMessage("/agraph/status"), to: port)
        XCTAssertEqual(client.receive(timeout: 5)?.first?.arguments[2], .string("paused"))
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/play"), port: port, reply: "/agraph/ok"))
        usleep(UInt32(LiveTiming.seconds(0.2) * 1e6))
        n = rec.framesRecorded
        XCTAssertEqual(Self.toneLevels(rec, (n - 4800)..<n).k3, -12, accuracy: 0.1, "playing again")

        cli.send("quit")
        assertExitsCleanly(cli)
    }

    // MARK: subscriptions

    /// `oscdump` listening on a free port (the system picks one; it is let
    /// go just before), writing to `name` in the test's folder: the
    /// process, the file, and the URL to send to.
    func startOscdump(_ name: String) throws -> (process: OscdumpProcess, file: String, url: String) {
        let port = try OSCTestClient().port
        let file = dir.file(name)
        let process = try ChildProcess(["oscdump", "-L", String(port)], stdout: .file(file), stderr: .sameAsStdout)
        usleep(200_000)
        return (OscdumpProcess(process), file, "osc.udp://127.0.0.1:\(port)/")
    }

    /// A running `oscdump`; `stop` ends it (SIGTERM) and reaps it.
    struct OscdumpProcess {
        let child: ChildProcess
        init(_ child: ChildProcess) { self.child = child }
        func stop() {
            child.send(SIGTERM)
            child.waitUntilExit()
        }
    }

    /// One line of `oscdump`: when it was received (its time tag, turned
    /// into seconds since 1970) and the address.
    struct DumpLine {
        var time: Double
        var address: String
        var text: Substring
    }

    static func dumpLines(_ path: String) -> [DumpLine] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ", maxSplits: 2)
            guard words.count >= 2 else { return nil }
            let tag = words[0].split(separator: ".")
            guard tag.count == 2, let s = UInt32(tag[0], radix: 16), let f = UInt32(tag[1], radix: 16) else { return nil }
            // NTP time (from 1900) to Unix time.
            return DumpLine(time: Double(s) - 2_208_988_800 + Double(f) / 4_294_967_296, address: String(words[1]), text: line)
        }
    }

    /// Position at 10 Hz and meters at 5 Hz arrive at `oscdump` at about
    /// those rates; events (an xrun, the end of the stream) as they happen;
    /// unsubscribing stops the position messages.
    func testSubscriptionsReachOscdumpAtTheirRatesAndEventsAsTheyHappen() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 30)
        defer { rec.close() }
        // Long enough to outlast the waits below (scaled under TSan), so the
        // end of the stream comes after them.
        let duration = LiveTiming.seconds(4) + 1
        let cli = try startAgraphRun(try writeGraph(Self.graph(duration: duration)), server: server, ["--quiet", "--osc", "0"])
        defer { cli.kill() }
        let port = try oscPort(cli)
        let (dump, dumpFile, target) = try startOscdump("oscdump.txt")
        defer { dump.stop() }
        try oscsend(port, "/agraph/subscribe", "sfs", "position", "10", target)
        try oscsend(port, "/agraph/subscribe", "sis", "meters", "5", target)
        try oscsend(port, "/agraph/subscribe", "ss", "events", target)
        usleep(UInt32(LiveTiming.seconds(2.5) * 1e6))

        // Counted by oscdump's own receive times over 2 s from the first
        // message: the server's timer wakes within a millisecond of each due
        // time, so the counts are exact but for one message at either edge
        // of the window (and the odd late wake-up of a loaded machine).
        var lines = Self.dumpLines(dumpFile)
        let positions = lines.filter { $0.address == "/agraph/position" }
        let start = try XCTUnwrap(positions.first?.time, "position messages at oscdump: \(lines.map(\.text))")
        let inWindow = positions.filter { $0.time >= start && $0.time < start + 2 }
        XCTAssertEqual(Double(inWindow.count), 20, accuracy: 2, "position at 10 Hz for 2 s")
        XCTAssertTrue(positions.last?.text.contains("\"playing\"") == true, "\(positions.last?.text ?? "")")
        // A meters tick is one bundle: the port's peak and the meter's channel, one time tag.
        let meterTicks = Set(lines.filter { $0.address == "/agraph/peak" }.map(\.time))
        let meterStart = try XCTUnwrap(meterTicks.min())
        XCTAssertEqual(Double(meterTicks.filter { $0 < meterStart + 2 }.count), 10, accuracy: 2, "meters at 5 Hz for 2 s")
        XCTAssertEqual(lines.filter { $0.address == "/agraph/meter" }.count, meterTicks.count)

        // An xrun (the recorder overruns its cycle), as an event.
        rec.stallNextCycle(microseconds: 150_000)
        XCTAssertTrue(waitUntil(timeout: 5) { Self.dumpLines(dumpFile).contains { $0.address == "/agraph/event/xrun" } },
                      "an xrun event: \(Self.dumpLines(dumpFile).suffix(5).map(\.text))")

        // Unsubscribed: no position message from a little after.
        try oscsend(port, "/agraph/unsubscribe", "ss", "position", target)
        let stopped = Date().timeIntervalSince1970
        usleep(UInt32(LiveTiming.seconds(1) * 1e6))
        lines = Self.dumpLines(dumpFile)
        XCTAssertEqual(lines.filter { $0.address == "/agraph/position" && $0.time > stopped + 0.05 }.count, 0,
                       "position after unsubscribing")
        XCTAssertGreaterThan(lines.filter { $0.address == "/agraph/peak" && $0.time > stopped + 0.2 }.count, 2,
                             "meters still come")

        // The tones end: the end of the stream, as an event, then agraph stops.
        XCTAssertNotNil(cli.waitForStderr("agraph: end of stream", timeout: 15), cli.stderr)
        assertExitsCleanly(cli)
        usleep(200_000)
        XCTAssertTrue(Self.dumpLines(dumpFile).contains { $0.address == "/agraph/event/end" },
                      "the end event: \(Self.dumpLines(dumpFile).suffix(5).map(\.text))")
    }

    /// The JACK server going away (jackd stopped, agraph run without
    /// `--reconnect`): a subscriber gets `/agraph/event/shutdown` before
    /// agraph exits (non-zero, saying so).
    func testTheServerGoingAwayReachesASubscriberBeforeAgraphExits() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let cli = try startAgraphRun(try writeGraph(Self.graph()), server: server, ["--quiet", "--osc", "0"])
        defer { cli.kill() }
        let port = try oscPort(cli)
        let (dump, dumpFile, target) = try startOscdump("oscdump-shutdown.txt")
        defer { dump.stop() }
        try oscsend(port, "/agraph/subscribe", "ss", "events", target)
        // Subscribed once a pause comes back as an event; then play on.
        try oscsend(port, "/agraph/pause")
        XCTAssertTrue(waitUntil(timeout: LiveTiming.seconds(5)) { Self.dumpLines(dumpFile).contains { $0.address == "/agraph/event/state" } },
                      "the pause event: \(Self.dumpLines(dumpFile).map(\.text))")
        try oscsend(port, "/agraph/play")

        server.stop()
        XCTAssertNotNil(cli.waitForStderr("agraph: the JACK server shut down", timeout: 10), cli.stderr)
        XCTAssertTrue(cli.waitForExit(timeout: 15), cli.stderr)
        XCTAssertEqual(cli.status, 1, cli.stderr)
        XCTAssertTrue(waitUntil(timeout: 2) { Self.dumpLines(dumpFile).contains { $0.address == "/agraph/event/shutdown" } },
                      "the shutdown event: \(Self.dumpLines(dumpFile).suffix(5).map(\.text))")
    }

    // MARK: malformed traffic

    /// Garbage datagrams, unknown addresses, wrong types and missing
    /// arguments: each gets one `/agraph/error` back, and the tone plays on
    /// without a break (every sample where the sine says it should be),
    /// agraph still running.
    func testMalformedTrafficIsAnsweredAndThePlayGoesOn() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 30)
            defer { rec.close() }
            let graph = """
                {"format": "agraph/1", "name": "osc", "sampleRate": 48000, "nodes": [
                  {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
                  {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
                 "links": [{"from": "tone", "to": "out"}]}
                """
            let cli = try startAgraphRun(try writeGraph(graph), server: server, ["--quiet", "--osc", "0"])
            defer { cli.kill() }
            let port = try oscPort(cli)
            let client = try OSCTestClient()
            XCTAssertTrue(waitForSignal(rec, seconds: 0.3), cli.stderr)
            let from = rec.framesRecorded

            var rng = SystemRandomNumberGenerator()
            var bad: [[UInt8]] = (0..<100).map { i in
                (0..<(1 + i % 40)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            bad += (0..<50).map { _ in OSCPacket.encode(OSCMessage("/agraph/no/such", [.float(1)])) }
            bad += (0..<50).map { _ in OSCPacket.encode(OSCMessage("/elsewhere", [.int32(1)])) }
            bad += (0..<50).map { _ in OSCPacket.encode(OSCMessage("/agraph/tone/level", [.blob([1, 2, 3])])) }
            bad += (0..<50).map { _ in OSCPacket.encode(OSCMessage("/agraph/tone/level")) }
            bad += (0..<50).map { _ in OSCPacket.encode(OSCMessage("/agraph/get", [.int32(3)])) }
            bad += (0..<50).map { _ in Array(OSCPacket.encode(OSCMessage("/agraph/tone/level", [.float(-6)])).dropLast(4)) }
            // Round after round for at least a second of audio, about a
            // thousand datagrams a second: as fast as the client can go,
            // it and the server would take both cores of a small machine
            // from the non-realtime test jackd, which then drops cycles.
            var answered = 0, sent = 0
            while rec.framesRecorded < from + 48000 {
                for bytes in bad {
                    client.sendRaw(bytes, to: port)
                    sent += 1
                    if client.next("/agraph/error", timeout: 2) != nil { answered += 1 }
                    usleep(1000)
                }
            }
            XCTAssertEqual(answered, sent, "one error reply per bad datagram")
            // oscsend's bad messages too (it cannot read the replies).
            try oscsend(port, "/agraph/nowhere", "i", "1")
            try oscsend(port, "/agraph/tone/level", "s", "loud")
            try oscsend(port, "/agraph/tone/level")
            XCTAssertEqual(client.ask(OSCMessage("/agraph/get", [.string("tone.level")]), port: port, reply: "/agraph/value")?.arguments[1],
                           .float(-12), "nothing changed")
            XCTAssertTrue(cli.isRunning, cli.stderr)
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + 4800, timeout: 10))
            let to = rec.framesRecorded
            // A run with xruns (the recorder's or the graph's) is judged on
            // another attempt: a dropped cycle is a break in the recording.
            let status = client.ask(OSCMessage("/agraph/status"), port: port, reply: "/agraph/status")
            if case .int32(let xruns)? = status?.arguments[3], xruns > 0, !isLast { throw XrunsHappened(count: Int(xruns)) }
            try checkRecorderXruns(rec, isLast: isLast)

            // The tone played on: each 480-frame block at the sine's RMS, and
            // no jump between samples larger than the sine's steepest step.
            let x = rec.samples(0, from..<to)
            XCTAssertGreaterThan(x.count, 48000, "at least a second under the traffic")
            for start in stride(from: 0, to: x.count - 480, by: 480) {
                XCTAssertEqual(SignalAnalysis.rmsDBFS(x[start..<(start + 480)]), -12 - 3.0103, accuracy: 0.02, "block at \(start)")
            }
            let steepest = Self.amplitude * 2 * Double.pi * 1000 / Self.rate
            let jump = zip(x.dropFirst(), x).map { abs(Double($0.0 - $0.1)) }.max() ?? 0
            XCTAssertLessThan(jump, steepest * 1.01, "no discontinuity")
            cli.send("quit")
            assertExitsCleanly(cli)
        }
    }

    // MARK: allocations

    /// While sets (acknowledged), gets, status requests and subscriptions at
    /// 100 Hz flow, JACK's process thread allocates nothing; the traffic
    /// really reached the graph (every set acknowledged, the level heard).
    func testNoAllocationInTheProcessCallbackWhileOSCTrafficFlows() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 20)
            defer { rec.close() }
            let live = try startGraph(Self.graph(), server: server.name) { options in
                options.threadInit = { _ in MallocCounter.beginThread() }
            }
            defer { live.stop() }
            let osc = try OSCServer(control: live.control, port: 0)
            defer { osc.stop() }
            let client = try OSCTestClient()
            XCTAssertTrue(waitForSignal(rec, seconds: 1), "warm-up")
            MallocCounter.reset()

            for what in ["position", "meters"] {
                XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string(what), .float(100)]), port: osc.port, reply: "/agraph/ok"))
            }
            XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string("events")]), port: osc.port, reply: "/agraph/ok"))
            let started = Date()
            var acks = 0, sets = 0, gets = 0
            while Date().timeIntervalSince(started) < 3 {
                let gain: Float = sets % 2 == 0 ? -6 : 0
                client.send(OSCMessage("/agraph/set", [.string("g.gain"), .float(gain)]), to: osc.port)
                client.send(OSCMessage("/agraph/mix/gains/1", [.float(gain)]), to: osc.port)
                sets += 1
                if client.next("/agraph/ack", timeout: 2)?.arguments[1] == .float(gain) { acks += 1 }
                if client.ask(OSCMessage("/agraph/get", [.string("m.rms")]), port: osc.port, reply: "/agraph/value") != nil { gets += 1 }
                if sets % 10 == 0 { client.send(OSCMessage("/agraph/status"), to: osc.port) }
            }
            // Ends on an even count: both gains back at 0 dB, heard.
            if sets % 2 == 1 {
                client.send(OSCMessage("/agraph/set", [.string("g.gain"), .float(0)]), to: osc.port)
                client.send(OSCMessage("/agraph/mix/gains/1", [.float(0)]), to: osc.port)
                XCTAssertNotNil(client.next("/agraph/ack", timeout: 2))
            }
            usleep(200_000)
            let mallocs = MallocCounter.total
            XCTAssertGreaterThan(sets, 100, "traffic flowed")
            XCTAssertEqual(acks, sets, "every set acknowledged with its value")
            XCTAssertEqual(gets, sets)
            // A recording with xruns has gaps: its levels are not the graph's.
            try checkRecorderXruns(rec, isLast: isLast)
            let n = rec.framesRecorded
            let levels = Self.toneLevels(rec, (n - 4800)..<n)
            XCTAssertEqual(levels.k1, -12, accuracy: 0.1)
            XCTAssertEqual(levels.k3, -12, accuracy: 0.1)
            if MallocCounter.isAvailable {
                XCTAssertEqual(mallocs, 0, "allocations on JACK's process thread while OSC traffic flowed")
            }
        }
    }
}
