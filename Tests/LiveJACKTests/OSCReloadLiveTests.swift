import AudioGraph
import AudioGraphOSC
import Foundation
import TestSupport
import XCTest

/// `/agraph/reload` (hot reload over OSC): the graph file `agraph run`
/// plays is loaded again; the reply says what changed, the OSC address
/// space follows the new graph, and an invalid file is an error reply with
/// the graph playing on.
extension OSCLiveTests {
    /// `graph()` with a gain `g2` (-6 dB) between the 3 kHz tone and the mixer.
    static func graphWithSecondGain() -> String {
        """
        {"format": "agraph/1", "name": "osc", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
          {"id": "tone2", "type": "test-tone", "params": {"frequency": 3000, "level": -12, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": 0}},
          {"id": "g2", "type": "gain", "params": {"gain": -6}},
          {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
          {"id": "m", "type": "meter", "params": {"window": 100}},
          {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "mix:in0"}, {"from": "tone2", "to": "g2"},
                   {"from": "g2", "to": "mix:in1"}, {"from": "mix", "to": "m"}, {"from": "m", "to": "out"}]}
        """
    }

    func testOSCReloadLoadsTheGraphFileAgainAndAnInvalidOneIsAnErrorReply() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 30)
            defer { rec.close() }
            let path = try writeGraph(Self.graph())
            let cli = try startAgraphRun(path, server: server, ["--quiet", "--osc", "0"])
            defer { cli.kill() }
            let port = try oscPort(cli)
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)
            let settle = Int(LiveTiming.seconds(0.1) * Self.rate)
            let client = try OSCTestClient()

            // The file gains a node: the reply names it; the 3 kHz tone is 6 dB down.
            try Self.graphWithSecondGain().write(toFile: path, atomically: true, encoding: .utf8)
            let reply = try XCTUnwrap(client.ask(OSCMessage("/agraph/reload"), port: port, reply: "/agraph/ok", timeout: 10),
                                      cli.stderr)
            XCTAssertEqual(reply.arguments.first, .string("/agraph/reload"))
            let said = reply.arguments.count > 1 ? reply.arguments[1].text ?? "" : ""
            XCTAssertTrue(said.hasPrefix("reload: 1 node added (g2)"), said)
            let reloaded = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(reloaded + settle + 4800, timeout: 10))
            let after = Self.toneLevels(rec, (reloaded + settle)..<(reloaded + settle + 4800))

            // The new node has its OSC address.
            XCTAssertNotNil(client.ask(OSCMessage("/agraph/set", [.string("g2.gain"), .float(0)]), port: port, reply: "/agraph/ack"),
                            "the reloaded graph's new node, set over OSC")
            let set = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(set + settle + 4800, timeout: 10))
            let restored = Self.toneLevels(rec, (set + settle)..<(set + settle + 4800))

            // An invalid file: an error reply with its diagnostics; the graph plays on.
            try #"{"format": "agraph/1", "nodes": [{"id": "x", "type": "no-such-type"}], "links": []}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            let refused = try XCTUnwrap(client.ask(OSCMessage("/agraph/reload"), port: port, reply: "/agraph/error", timeout: 10),
                                        cli.stderr)
            let why = refused.arguments.count > 1 ? refused.arguments[1].text ?? "" : ""
            XCTAssertTrue(why.contains("no-such-type"), why)
            XCTAssertTrue(why.contains("not loaded; the running graph plays on"), why)
            let kept = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(kept + 4800, timeout: 10))
            let still = Self.toneLevels(rec, kept..<(kept + 4800))
            let status = try XCTUnwrap(client.ask(OSCMessage("/agraph/status"), port: port, reply: "/agraph/status"))
            if case .int32(let xruns) = status.arguments[3], xruns > 0, !isLast { throw XrunsHappened(count: Int(xruns)) }
            try checkRecorderXruns(rec, isLast: isLast)

            XCTAssertEqual(after.k1, -12, accuracy: 0.1, "the 1 kHz tone, kept as it was")
            XCTAssertEqual(after.k3, -18, accuracy: 0.1, "the 3 kHz tone through the new gain")
            XCTAssertEqual(restored.k3, -12, accuracy: 0.1, "g2.gain set to 0 over OSC")
            XCTAssertEqual(still.k1, -12, accuracy: 0.1)
            XCTAssertEqual(still.k3, -12, accuracy: 0.1, "the invalid file changed nothing")
            cli.send("quit")
            assertExitsCleanly(cli)
        }
    }
}
