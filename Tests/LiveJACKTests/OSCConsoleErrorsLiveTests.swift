import AudioGraph
import AudioGraphOSC
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 22, item 15: `agraph run --osc` showed OSC errors to the sender
/// only. They are on stderr too, as the console's own errors are, and a
/// flood of bad packets shows a few lines and a count.
final class OSCConsoleErrorsLiveTests: LiveTestCase {
    static let graph = """
        {"format": "agraph/1", "name": "osc-errors", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": 0}},
          {"id": "out", "type": "jack-out"}],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "out"}]}
        """

    func testOSCErrorsAreShownOnStderrRateLimited() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let cli = try startAgraphRun(try writeGraph(Self.graph), server: server, ["--quiet", "--osc", "0"])
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: OSC on ", timeout: 10), cli.stderr)
        let text = cli.stderr
        let r = try XCTUnwrap(text.range(of: "agraph: OSC on osc.udp://127.0.0.1:"), text)
        let port = try XCTUnwrap(Int(text[r.upperBound...].prefix { $0.isNumber }), text)
        let client = try OSCTestClient()

        XCTAssertNotNil(client.ask(OSCMessage("/agraph/g/gain", [.float(100)]), port: port, reply: "/agraph/error"))
        XCTAssertNotNil(cli.waitForStderr("/agraph/g/gain: 100.0 is out of range", timeout: 5), cli.stderr)
        XCTAssertTrue(cli.stderr.contains("error: OSC from 127.0.0.1:"), cli.stderr)

        usleep(1_100_000)
        for i in 0..<40 { client.send(OSCMessage("/agraph/nope\(i)"), to: port) }
        XCTAssertNotNil(cli.waitForStderr("35 more errors in 1 s not shown", timeout: 5), cli.stderr)
        let flood = cli.stderr.split(separator: "\n").filter { $0.contains("/agraph/nope") }
        XCTAssertEqual(flood.count, 5, "5 of 40 shown: \(flood)")
    }
}
