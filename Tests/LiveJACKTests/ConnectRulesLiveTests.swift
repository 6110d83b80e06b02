import AudioGraph
import AudioGraphJACK
import TestSupport
import XCTest

/// Issue 25, connections that follow: a `connect` pattern keeps applying
/// for the life of the graph, the way a persistent patchbay does.
final class ConnectRulesLiveTests: LiveTestCase {
    /// A recorder started after the graph is connected by the graph's
    /// pattern, which was shown as waiting until then; closed and opened
    /// again, it is connected again. Checked on the signal: the tone at its
    /// level on both of the recorder's ports.
    func testAPortThatComesLaterIsConnectedAndAgainWhenItComesBack() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let live = try startGraph(Self.toneGraph(level: -12, connect: "late-rec:in_*"), server: server.name)
        defer { _ = live.stop() }
        XCTAssertTrue(waitUntil(timeout: 5) { live.status().waitingConnections["out"] == ["late-rec:in_*"] },
                      "waiting shown: \(live.status().waitingConnections)")
        XCTAssertTrue(live.status().text.contains("out waiting for late-rec:in_*"), live.status().text)
        for round in 0..<2 {
            let rec = try JACKRecorder(server: server.name, name: "late-rec", channels: 2, seconds: 10)
            XCTAssertTrue(waitForSignal(rec, seconds: 0.3), "round \(round): the pattern connected the late ports")
            XCTAssertEqual(Self.recentLevel(rec), -12, accuracy: 0.1, "round \(round)")
            XCTAssertEqual(Self.recentLevel(rec, channel: 1), -12, accuracy: 0.1, "round \(round), second port")
            XCTAssertTrue(waitUntil(timeout: 5) { live.status().waitingConnections.isEmpty }, "round \(round): no longer waiting")
            rec.close()
            XCTAssertTrue(waitUntil(timeout: 5) { live.status().waitingConnections["out"] != nil }, "round \(round): waiting again")
        }
    }
}
