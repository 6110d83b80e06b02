import AudioGraph
import AudioGraphOSC
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The OSC server over real UDP on 127.0.0.1, on a graph compiled offline:
/// the test thread is the audio thread (it renders blocks when it chooses),
/// so when a change is applied, and so when `/agraph/ack` may come, is
/// known exactly. A scripted host stands for JACK's status and transport.
final class OSCServerTests: XCTestCase {
    /// tone (1 kHz, -12 dBFS) → g → mix:in0; tone2 (3 kHz, -12) → mix:in1;
    /// mix → m (meter, 100 ms windows) → sink (null).
    static let graph = """
        {"format": "agraph/1", "name": "osc", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -12, "channels": 1}},
          {"id": "tone2", "type": "test-tone", "params": {"waveform": "sine", "frequency": 3000, "level": -12, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": 0}},
          {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
          {"id": "m", "type": "meter", "params": {"window": 100}},
          {"id": "sink", "type": "null"}],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "mix:in0"}, {"from": "tone2", "to": "mix:in1"},
                   {"from": "mix", "to": "m"}, {"from": "m", "to": "sink"}]}
        """

    var compiled: CompiledGraph!
    var host: ScriptedHost!
    var control: ControlSurface!
    var server: OSCServer!
    var client: OSCTestClient!

    override func setUpWithError() throws {
        compiled = try compileBuiltIn(Self.graph, file: "osc.json", maxFrames: 1024)
        host = ScriptedHost()
        host.meters = { [compiled] in compiled!.meterReadings }
        control = ControlSurface(compiled: compiled, host: host)
        server = try OSCServer(control: control, port: 0)
        client = try OSCTestClient()
    }

    override func tearDown() {
        server?.stop()
        server = nil
        client = nil
    }

    var port: Int { server.port }

    /// Renders `seconds` of the graph in 256-frame blocks (as the audio thread).
    func render(seconds: Double) {
        for _ in 0..<Int(seconds * 48000 / 256) { compiled.engine.render(frames: 256) }
    }

    /// The reply to `/agraph/get address`.
    func get(_ address: String) -> OSCMessage? {
        client.ask(OSCMessage("/agraph/get", [.string(address)]), port: port, reply: "/agraph/value")
    }

    /// The value `/agraph/get` reports for `address`.
    func value(_ address: String) -> Float? {
        if case .float(let v)? = get(address)?.arguments[1] { return v }
        return nil
    }

    /// Sends `message` (or raw bytes) and returns the `/agraph/error` reply.
    func error(for message: OSCMessage) -> OSCMessage? {
        client.ask(message, port: port, reply: "/agraph/error")
    }

    // MARK: the server

    func testItListensOnTheLoopbackAddressOnlyAndSaysWhere() throws {
        XCTAssertEqual(server.url, "osc.udp://127.0.0.1:\(port)/")
        XCTAssertGreaterThan(port, 0, "port 0 asks for a free port")
        // Bound to 127.0.0.1 itself, not the wildcard: another address of
        // the loopback network can take the same port, and what is sent
        // there never reaches the server.
        let other = try OSCTestClientOn127002(port: port)
        client.send(OSCMessage("/agraph/g/gain", [.float(-3)]), to: port)
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/get", [.string("g.gain")]), port: port, reply: "/agraph/value"))
        other.sendTo127002(OSCPacket.encode(OSCMessage("/agraph/g/gain", [.float(-20)])), port: port)
        XCTAssertEqual(other.receiveCount(timeout: 0.3), 1, "the datagram reached the other socket, not the server")
        XCTAssertEqual(value("g.gain"), -3)

        // A port in use is an error that says so, before anything runs.
        XCTAssertThrowsError(try OSCServer(port: port)) { error in
            XCTAssertTrue("\(error)".contains("cannot listen on UDP port \(port) of 127.0.0.1"), "\(error)")
            XCTAssertTrue("\(error)".contains("in use"), "\(error)")
        }
        XCTAssertThrowsError(try OSCServer(port: 70000))
        XCTAssertThrowsError(try OSCServer(port: 0, host: "no-such-host.invalid")) { error in
            XCTAssertTrue("\(error)".contains("cannot resolve 'no-such-host.invalid'"), "\(error)")
        }
    }

    // MARK: set and get

    /// `/agraph/g/gain -6` changes the gain by 6 dB: the meter reads the
    /// 1 kHz tone 6 dB lower once blocks have been rendered after it.
    func testASetChangesTheSignalAndGetReadsValuesAndReadings() throws {
        render(seconds: 0.5)
        let before = try XCTUnwrap(value("m.rms"))
        client.send(OSCMessage("/agraph/g/gain", [.float(-6)]), to: port)
        XCTAssertTrue(waitUntil { self.value("g.gain") == -6 }, "the control surface holds the new value")
        // Mute the 3 kHz tone (list element 1) so the meter sees the 1 kHz one only.
        client.send(OSCMessage("/agraph/mix/mutes/1", [.bool(true)]), to: port)
        XCTAssertTrue(waitUntil { self.value("mix.mutes[1]") == 1 })
        render(seconds: 0.5)
        let rms = try XCTUnwrap(value("m.rms"))
        // Before: two -12 dBFS sines (rms -15 each, uncorrelated: -12 together);
        // after: one at -18 (rms -21).
        XCTAssertEqual(Double(before), -12.0, accuracy: 0.1)
        XCTAssertEqual(Double(rms), -21.0, accuracy: 0.1)
        let reply = try XCTUnwrap(get("m.rms"))
        XCTAssertEqual(reply.typeTags, ",sfs")
        XCTAssertEqual(reply.arguments[0], .string("m.rms"))
        XCTAssertEqual(reply.arguments[2], .string("-21.0 dBFS"), "the word the prompt shows")
        XCTAssertEqual(get("mix.mutes[1]")?.arguments[2], .string("true"))
    }

    /// Every argument type a value may come as.
    func testValuesComeAsNumbersBooleansOrWords() {
        let cases: [(String, OSCArgument, Float)] = [
            ("/agraph/g/gain", .int32(-3), -3), ("/agraph/g/gain", .double(-4.5), -4.5), ("/agraph/g/gain", .int64(-5), -5),
            ("/agraph/g/gain", .string("-7"), -7), ("/agraph/g/gain", .symbol("-8"), -8),
            ("/agraph/g/mute", .bool(true), 1), ("/agraph/g/mute", .string("off"), 0), ("/agraph/g/mute", .int32(1), 1),
            ("/agraph/mix/gains/0", .float(-2), -2), ("/agraph/mix/outputGain", .float(1.5), 1.5),
        ]
        for (address, argument, expected) in cases {
            client.send(OSCMessage(address, [argument]), to: port)
            let name = address.dropFirst("/agraph/".count).split(separator: "/")
            let dotted = "\(name[0]).\(name[1])" + (name.count == 3 ? "[\(name[2])]" : "")
            XCTAssertTrue(waitUntil { self.value(dotted) == expected }, "\(address) \(argument): \(String(describing: self.value(dotted)))")
        }
    }

    /// `/agraph/set` answers `/agraph/ack` only once the audio thread has
    /// taken the change: not while no block is rendered, at once after one.
    func testSetIsAcknowledgedWhenTheAudioThreadHasTakenTheChange() throws {
        client.send(OSCMessage("/agraph/set", [.string("mix.gains[1]"), .float(-6)]), to: port)
        XCTAssertNil(client.next("/agraph/ack", timeout: 0.3), "no block rendered: no acknowledgement")
        XCTAssertEqual(compiled.engine.parameters.takenCount, 0)
        compiled.engine.render(frames: 256)
        let ack = try XCTUnwrap(client.next("/agraph/ack", timeout: 2))
        XCTAssertEqual(ack.arguments, [.string("mix.gains[1]"), .float(-6), .string("-6")])
        XCTAssertEqual(compiled.engine.parameters.takenCount, 1)

        // Ten at once: ten acknowledgements, in order, after one block.
        for i in 0..<10 { client.send(OSCMessage("/agraph/set", [.string("g.gain"), .int32(Int32(-i))]), to: port) }
        XCTAssertTrue(waitUntil { self.compiled.engine.parameters.postedCount == 11 })
        compiled.engine.render(frames: 256)
        var values: [OSCArgument] = []
        while values.count < 10, let m = client.next("/agraph/ack", timeout: 2) { values.append(m.arguments[1]) }
        XCTAssertEqual(values, (0..<10).map { .float(Float(-$0)) })
    }

    // MARK: refusals

    /// Each bad request gets `/agraph/error <address> <reason>` and changes nothing.
    func testBadRequestsAreAnsweredWithAnErrorAndChangeNothing() throws {
        client.send(OSCMessage("/agraph/g/gain", [.float(-1)]), to: port)
        XCTAssertTrue(waitUntil { self.value("g.gain") == -1 })
        let cases: [(OSCMessage, String)] = [
            (OSCMessage("/other/thing", [.float(1)]), "start with /agraph/"),
            (OSCMessage("/agraph/frobnicate"), "unknown address /agraph/frobnicate"),
            (OSCMessage("/agraph/nope/gain", [.float(1)]), "no node 'nope'"),
            // A combining mark right after a '/' (one Character with it): split by bytes all the same.
            (OSCMessage("/agraph/\u{301}g/gain", [.float(1)]), "no node '\u{301}g'"),
            (OSCMessage("/agraph/g/nope", [.float(1)]), "has no parameter 'nope'"),
            (OSCMessage("/agraph/g/gain", [.float(100)]), "out of range"),
            (OSCMessage("/agraph/g/gain", [.float(.nan)]), "not a finite number"),
            (OSCMessage("/agraph/g/gain", [.string("inf")]), "not a finite number"),
            (OSCMessage("/agraph/g/gain", [.string("loud")]), "'loud' is not a value"),
            (OSCMessage("/agraph/g/gain", [.blob([1])]), "got type 'b'"),
            (OSCMessage("/agraph/g/gain"), "takes one value"),
            (OSCMessage("/agraph/g/gain", [.float(1), .float(2)]), "takes one value"),
            (OSCMessage("/agraph/g/gain/0", [.float(1)]), "not a list"),
            (OSCMessage("/agraph/mix/gains", [.float(1)]), "is a list"),
            (OSCMessage("/agraph/mix/gains/7", [.float(1)]), "mix.gains[0…1]"),
            (OSCMessage("/agraph/mix/gains/x", [.float(1)]), "whole number"),
            (OSCMessage("/agraph/*/gain", [.float(1)]), "patterns"),
            (OSCMessage("/agraph/g//gain", [.float(1)]), "not an address of a parameter"),
            (OSCMessage("/agraph/tone/channels", [.float(1)]), "cannot change while running"),
            (OSCMessage("/agraph/get", [.float(1)]), "/agraph/get takes one parameter address"),
            (OSCMessage("/agraph/get"), "/agraph/get takes one parameter address"),
            (OSCMessage("/agraph/get", [.string("gain")]), "not a parameter address"),
            (OSCMessage("/agraph/set", [.string("g.gain")]), "/agraph/set takes a parameter address and a value"),
            (OSCMessage("/agraph/set", [.float(1), .float(1)]), "/agraph/set takes a parameter address and a value"),
            (OSCMessage("/agraph/seek", [.string("x")]), "/agraph/seek takes seconds"),
            (OSCMessage("/agraph/seek", [.float(-1)]), "not a position"),
            (OSCMessage("/agraph/seek", [.float(1)]), "nothing in this graph can seek"),
            (OSCMessage("/agraph/pause", [.string("now")]), "takes no argument"),
            (OSCMessage("/agraph/status", [.int32(1), .int32(2)]), "takes no argument"),
            (OSCMessage("/agraph/subscribe"), "/agraph/subscribe takes what"),
            (OSCMessage("/agraph/subscribe", [.string("everything")]), "not one of meters, position, events"),
            (OSCMessage("/agraph/subscribe", [.string("meters"), .float(0)]), "the rate must be"),
            (OSCMessage("/agraph/subscribe", [.string("meters"), .float(1000)]), "the rate must be"),
            (OSCMessage("/agraph/subscribe", [.string("meters"), .float(5), .string("http://x/")]), "not a UDP OSC URL"),
            (OSCMessage("/agraph/subscribe", [.string("meters"), .float(5), .string("osc.udp://127.0.0.1:0/")]), "port from 1 to 65535"),
            (OSCMessage("/agraph/subscribe", [.string("meters"), .float(5), .int32(1)]), "/agraph/subscribe takes what"),
            (OSCMessage("/agraph/unsubscribe", [.string("nonsense")]), "not one of meters, position, events, all"),
            (OSCMessage("/agraph/unsubscribe", [.int32(1)]), "/agraph/unsubscribe takes nothing"),
        ]
        for (message, reason) in cases {
            let reply = error(for: message)
            XCTAssertEqual(reply?.arguments.first, .string(message.address), "\(message): \(String(describing: reply))")
            let text = reply?.arguments.dropFirst().first?.text ?? ""
            XCTAssertTrue(text.contains(reason), "\(message): '\(text)' should say \(reason)")
        }
        // Datagrams that are not OSC: an error naming what is wrong, to the sender.
        let raw: [([UInt8], String, String)] = [
            (Array("hello world!".utf8), "", "must start with '/'"),
            ([0xde, 0xad, 0xbe], "", "multiple of 4"),
            (Array("/agraph/g/gain".utf8) + [0, 0], "/agraph/g/gain", "type tag"),
            (Array("/agraph/g/gain".utf8) + [0, 0] + Array(",f".utf8) + [0, 0], "/agraph/g/gain", "arguments are missing"),
            (Array("#bundle".utf8) + [0] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 200, 1, 2, 3, 4], "", "bytes where"),
        ]
        for (bytes, address, reason) in raw {
            client.sendRaw(bytes, to: port)
            let reply = client.next("/agraph/error", timeout: 5)
            XCTAssertEqual(reply?.arguments.first, .string(address), "\(bytes)")
            XCTAssertTrue((reply?.arguments.last?.text ?? "").contains(reason), "\(bytes): \(String(describing: reply))")
        }
        XCTAssertEqual(value("g.gain"), -1, "nothing changed")
        XCTAssertEqual(value("mix.gains[1]"), 0, "nothing changed")
        XCTAssertEqual(compiled.engine.parameters.postedCount, 1, "only the first, good change was queued")
        XCTAssertEqual(host.calls, [], "no transport call")
    }

    // MARK: transport and status

    func testPausePlaySeekAndStatus() throws {
        XCTAssertEqual(client.ask(OSCMessage("/agraph/pause"), port: port, reply: "/agraph/ok")?.arguments, [.string("/agraph/pause")])
        XCTAssertEqual(host.calls, ["pause"])
        // A button's release (0) does nothing; its press (1) plays.
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/play", [.float(0)]), port: port, reply: "/agraph/ok"))
        XCTAssertEqual(host.calls, ["pause"])
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/play", [.float(1)]), port: port, reply: "/agraph/ok"))
        XCTAssertEqual(host.calls, ["pause", "play"])

        host.update {
            $0.seconds = 12.5
            $0.frames = 600_000
            $0.xruns = 3
            $0.underruns = 2
            $0.damagedFrames = 1
            $0.cpuLoad = 4.5
            $0.bufferSize = 256
            $0.peaks = [PortPeak(port: "out_L", dBFS: -6), PortPeak(port: "out_R", dBFS: -.infinity)]
        }
        client.send(OSCMessage("/agraph/status"), to: port)
        let bundle = try XCTUnwrap(client.receive(timeout: 5))
        XCTAssertEqual(bundle.first?.address, "/agraph/status")
        XCTAssertEqual(bundle.first?.arguments, [.float(12.5), .int64(600_000), .string("playing"), .int32(3), .int32(2),
                                                 .int32(1), .float(4.5), .int32(256)])
        XCTAssertEqual(bundle.filter { $0.address == "/agraph/peak" }.map(\.arguments),
                       [[.string("out_L"), .float(-6)], [.string("out_R"), .float(-.infinity)]])
        // The meter node's one channel: its last window.
        let meters = bundle.filter { $0.address == "/agraph/meter" }
        XCTAssertEqual(meters.count, 1, "\(bundle)")
        XCTAssertEqual(meters.first?.arguments.prefix(2), [.string("m"), .int32(0)])
    }

    // MARK: subscriptions

    /// Position at 20 Hz: about 20 messages a second, until unsubscribed.
    func testPositionArrivesAtTheRateAskedUntilUnsubscribed() throws {
        let ok = try XCTUnwrap(client.ask(OSCMessage("/agraph/subscribe", [.string("position"), .float(20)]), port: port, reply: "/agraph/ok"))
        XCTAssertEqual(ok.arguments, [.string("/agraph/subscribe"), .string("position"), .string(client.url), .float(20)])
        host.update { $0.seconds = 1.5; $0.frames = 72000 }
        let got = client.collect(seconds: 2).filter { $0.1.address == "/agraph/position" }
        // 40 in 2 s; the OSC thread wakes within a millisecond of each due
        // time, so the count is exact but for the edges of the window.
        XCTAssertEqual(Double(got.count), 40, accuracy: 3, "\(got.count) in 2 s")
        XCTAssertEqual(got.last?.1.arguments, [.float(1.5), .int64(72000), .string("playing")])
        let gaps = zip(got.dropFirst(), got).map { $0.0.0.timeIntervalSince($0.1.0) }.sorted()
        XCTAssertEqual(gaps[gaps.count / 2], 0.05, accuracy: 0.01, "median interval")

        XCTAssertNotNil(client.ask(OSCMessage("/agraph/unsubscribe", [.string("position")]), port: port, reply: "/agraph/ok"))
        client.drain()
        XCTAssertTrue(client.collect(seconds: 0.5).isEmpty, "nothing after unsubscribing")
    }

    /// Events: xruns, the state, the end, as they happen; only what happens
    /// after subscribing.
    func testEventsArriveAsTheyHappen() throws {
        host.update { $0.xruns = 5 }
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string("events")]), port: port, reply: "/agraph/ok"))
        XCTAssertNil(client.next("/agraph/event/xrun", timeout: 0.2), "xruns before the subscription are not events")
        host.update { $0.xruns = 7 }
        XCTAssertEqual(client.next("/agraph/event/xrun", timeout: 2)?.arguments, [.int32(7)])
        client.send(OSCMessage("/agraph/pause"), to: port)
        XCTAssertEqual(client.next("/agraph/event/state", timeout: 2)?.arguments, [.string("paused")])
        host.update { $0.finished = true }
        XCTAssertNotNil(client.next("/agraph/event/end", timeout: 2))
        host.update { $0.serverGone = true }
        XCTAssertNotNil(client.next("/agraph/event/shutdown", timeout: 2))
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/unsubscribe"), port: port, reply: "/agraph/ok"))
        host.update { $0.xruns = 9 }
        XCTAssertNil(client.next("/agraph/event/xrun", timeout: 0.3))
    }

    /// An underrun, as `/agraph/event/underrun` with the node and its
    /// total: a `file` source whose reader never runs (no worker thread is
    /// started here) finds its ring empty in every block, so each block
    /// rendered is one underrun, exactly.
    func testUnderrunsArriveAsEventsWithTheNodeAndItsTotal() throws {
        let dir = try TemporaryDirectory("agraph-osc-underrun")
        let wav = dir.file("tone.wav")
        try writeSoundFile(wav, format: .wavFloat32, channels: 1, sampleRate: 48000,
                           samples: Synth.sine(frequency: 1000, amplitude: 0.25, sampleRate: 48000, frames: 48000))
        let json = """
            {"format": "agraph/1", "name": "underrun", "sampleRate": 48000, "nodes": [
              {"id": "src", "type": "file", "params": {"path": "\(wav)"}}, {"id": "sink", "type": "null"}],
             "links": [{"from": "src", "to": "sink"}]}
            """
        let graph = try GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "underrun.json", directory: dir.path).get()
        let starved = try GraphCompiler.compile(graph, maxFrames: 1024)
        let starvedHost = ScriptedHost()  // the control surface holds its host weakly
        let server = try OSCServer(control: ControlSurface(compiled: starved, host: starvedHost), port: 0)
        defer { server.stop() }
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string("events")]), port: server.port, reply: "/agraph/ok"))
        XCTAssertNil(client.next("/agraph/event/underrun", timeout: 0.2), "no underrun before a block is rendered")
        for _ in 0..<3 { starved.engine.render(frames: 256) }
        let counter = try XCTUnwrap(starved.engine.node("src") as? UnderrunCounting)
        XCTAssertEqual(counter.underrunCount, 3)
        // One event per poll that saw the total grow: the last says 3.
        var seen: [OSCMessage] = []
        while let m = client.next("/agraph/event/underrun", timeout: 2) {
            seen.append(m)
            if m.arguments.last == .int32(3) { break }
        }
        XCTAssertEqual(seen.last?.arguments, [.string("src"), .int32(3)], "\(seen)")
        XCTAssertTrue(seen.allSatisfy { $0.arguments.first == .string("src") }, "\(seen)")
        XCTAssertNil(client.next("/agraph/event/underrun", timeout: 0.2), "nothing more while no block is rendered")
        withExtendedLifetime(starvedHost) {}
    }

    /// A playlist's items starting and ending, as `/agraph/event/item`
    /// (the playlist decodes through the `ffmpeg` plugin, as in agraph).
    func testPlaylistItemsArriveAsEvents() throws {
        let (compiled, dir) = try PlaylistFixture.twoItems(folder: "agraph-osc-playlist")
        defer { withExtendedLifetime(dir) {} }   // the items stay while the graph plays
        let control = ControlSurface(compiled: compiled, host: host)
        let server = try OSCServer(control: control, port: 0)
        defer { server.stop() }
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string("events")]), port: server.port, reply: "/agraph/ok"))
        _ = OfflineRenderer(engine: compiled.engine, blockFrames: 480).run(maxFrames: 48000, progress: { _ in })
        var items: [[OSCArgument]] = []
        while items.count < 4, let m = client.next("/agraph/event/item", timeout: 5) { items.append(m.arguments) }
        XCTAssertEqual(items.map { Array($0.prefix(3)) }, [
            [.string("pl"), .string("started"), .int32(0)], [.string("pl"), .string("ended"), .int32(0)],
            [.string("pl"), .string("started"), .int32(1)], [.string("pl"), .string("ended"), .int32(1)],
        ])
        XCTAssertEqual(items.map { ($0.last?.text as NSString?)?.lastPathComponent }, ["a.flac", "a.flac", "b.flac", "b.flac"])
    }

    /// Meters to another address (a URL), as a bundle per tick: the ports'
    /// peaks and each meter channel.
    func testMetersGoToTheURLGiven() throws {
        let listener = try OSCTestClient()
        host.update { $0.peaks = [PortPeak(port: "out_L", dBFS: -3)] }
        render(seconds: 0.3)
        let ok = try XCTUnwrap(client.ask(OSCMessage("/agraph/subscribe", [.string("meters"), .int32(10), .string(listener.url)]),
                                          port: port, reply: "/agraph/ok"))
        XCTAssertEqual(ok.arguments[2], .string(listener.url))
        let got = listener.collect(seconds: 1.5)
        let peaks = got.filter { $0.1.address == "/agraph/peak" }
        let meters = got.filter { $0.1.address == "/agraph/meter" }
        XCTAssertEqual(Double(peaks.count), 15, accuracy: 2)
        XCTAssertEqual(meters.count, peaks.count, "one meter channel per tick")
        XCTAssertEqual(peaks.first?.1.arguments, [.string("out_L"), .float(-3)])
        if case .float(let rms)? = meters.last?.1.arguments[3] {
            XCTAssertEqual(Double(rms), -12, accuracy: 0.1, "the meter's rms: two -12 dBFS sines")
        } else {
            XCTFail("\(String(describing: meters.last))")
        }
        XCTAssertTrue(client.collect(seconds: 0.2).isEmpty, "nothing to the sender of the subscription")
    }

    /// A subscriber whose port closes is dropped after a few sends fail
    /// (ICMP port unreachable comes back as a send error): a socket that
    /// later takes the same port gets nothing.
    func testASubscriberThatGoesAwayIsDropped() throws {
        var listener: OSCTestClient? = try OSCTestClient()
        let listenerPort = listener!.port
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string("position"), .float(50), .string(listener!.url)]),
                                   port: port, reply: "/agraph/ok"))
        XCTAssertNotNil(listener!.next("/agraph/position", timeout: 2))
        listener = nil
        usleep(500_000)  // 25 sends: every other one fails; the third failure drops it
        let again = try OSCTestClient(port: listenerPort)
        XCTAssertTrue(again.collect(seconds: 0.5).isEmpty, "dropped: nothing for whoever has the port now")
        // A second subscription still works.
        XCTAssertNotNil(client.ask(OSCMessage("/agraph/subscribe", [.string("position"), .float(50), .string(again.url)]),
                                   port: port, reply: "/agraph/ok"))
        XCTAssertNotNil(again.next("/agraph/position", timeout: 2))
    }

    func waitUntil(timeout: Double = 5, _ predicate: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !predicate() {
            if Date() > deadline { return false }
            usleep(2_000)
        }
        return true
    }
}

/// A control host whose status the test sets, and which records the
/// transport calls it gets. [any thread]
final class ScriptedHost: ControlHost, @unchecked Sendable {
    private let lock = NSLock()
    private var value = GraphStatus(seconds: 0, frames: 0, peaks: [], xruns: 0, underruns: 0, cpuLoad: 0, bufferSize: 256,
                                    paused: false, finished: false, serverGone: false)
    private var calls_: [String] = []
    /// Where `status()` gets its meter readings.
    var meters: (@Sendable () -> [MeterReading])?

    var calls: [String] { lock.withLock { calls_ } }

    func update(_ change: (inout GraphStatus) -> Void) { lock.withLock { change(&value) } }

    func pause() { lock.withLock { calls_.append("pause"); value.paused = true } }
    func play() { lock.withLock { calls_.append("play"); value.paused = false } }
    func status() -> GraphStatus {
        var s = lock.withLock { value }
        s.meters = meters?() ?? []
        return s
    }
}

/// A plain socket on 127.0.0.2 (another loopback address). [test thread]
final class OSCTestClientOn127002 {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = UInt16(port).bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0002).bigEndian
        let rc = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = String(cString: strerror(errno))
            close(fd)
            throw JACKTestError("cannot bind 127.0.0.2:\(port) (\(e)): the server holds the wildcard address, not 127.0.0.1")
        }
    }

    deinit { close(fd) }

    func sendTo127002(_ bytes: [UInt8], port: Int) {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = UInt16(port).bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0002).bigEndian
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Datagrams received within `timeout` s.
    func receiveCount(timeout: Double) -> Int {
        var n = 0
        var buffer = [UInt8](repeating: 0, count: 2048)
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&p, 1, Int32(timeout * 1000)) > 0 {
            if recv(fd, &buffer, buffer.count, 0) > 0 { n += 1 }
        }
        return n
    }
}
