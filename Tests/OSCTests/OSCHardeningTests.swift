import AudioGraph
import AudioGraphOSC
import Foundation
import TestSupport
import XCTest

/// Issue 22, item 15, over OSC (real UDP on 127.0.0.1, a graph compiled
/// offline): a string value with a NUL or bytes after it is refused, a
/// value beyond a delay's maximum is refused, and the errors answered to
/// senders are kept for the console, at most 5 a second.
final class OSCHardeningTests: XCTestCase {
    static let graph = """
        {"format": "agraph/1", "name": "osc", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": 0}},
          {"id": "d", "type": "delay", "params": {"ms": 10}},
          {"id": "sink", "type": "null"}],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "d"}, {"from": "d", "to": "sink"}]}
        """

    var compiled: CompiledGraph!
    var control: ControlSurface!
    var server: OSCServer!
    var client: OSCTestClient!

    override func setUpWithError() throws {
        compiled = try compileBuiltIn(Self.graph, file: "osc.json", maxFrames: 1024)
        control = ControlSurface(compiled: compiled, host: OfflineHost())
        server = try OSCServer(control: control, port: 0)
        client = try OSCTestClient()
    }

    override func tearDown() {
        server?.stop()
        server = nil
        client = nil
    }

    /// An OSC-string: the bytes, then NULs to a multiple of 4 (at least one).
    static func oscString(_ bytes: [UInt8]) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: 4 - bytes.count % 4)
    }

    func testAStringValueWithANULOrBytesAfterItIsRefused() throws {
        let head = Self.oscString(Array("/agraph/g/gain".utf8)) + Self.oscString(Array(",s".utf8))
        let cases: [[UInt8]] = [
            head + Self.oscString(Array("-3".utf8) + [0] + Array("garbage".utf8)),   // "-3\0garbage\0…": not padded with NULs
            head + Self.oscString(Array("-3".utf8)) + Self.oscString(Array("garbage".utf8)),  // "-3" then bytes no type tag declares
            head + Array("-3".utf8) + [0, 0x67],                                        // "-3\0g"
        ]
        for bytes in cases {
            client.sendRaw(bytes, to: server.port)
            let reply = client.next("/agraph/error", timeout: 5)
            XCTAssertNotNil(reply, "\(bytes) should be refused")
        }
        XCTAssertEqual(try control.get("g.gain").value, 0, "nothing applied")
        XCTAssertEqual(compiled.engine.parameters.postedCount, 0, "nothing queued")
    }

    func testADelayBeyondItsMaximumIsRefused() throws {
        for message in [OSCMessage("/agraph/d/ms", [.float(1000.001)]), OSCMessage("/agraph/d/ms", [.string("1000.0001")]),
                        OSCMessage("/agraph/d/ms", [.double(1000.0001)])] {
            let reply = try XCTUnwrap(client.ask(message, port: server.port, reply: "/agraph/error"), "\(message)")
            XCTAssertTrue((reply.arguments.last?.text ?? "").contains("more than"), "\(reply)")
        }
        XCTAssertEqual(compiled.engine.parameters.postedCount, 0, "nothing queued")
    }

    /// What `agraph run --osc` prints on stderr: each refusal once, with
    /// the sender, the address and the reason; a flood shows 5 lines a
    /// second and a count of the rest.
    func testErrorsAreKeptForTheConsoleRateLimited() throws {
        XCTAssertEqual(server.takeErrors(), [])
        _ = client.ask(OSCMessage("/agraph/g/gain", [.float(100)]), port: server.port, reply: "/agraph/error")
        let one = server.takeErrors()
        guard one.count == 1 else { return XCTFail("one error kept: \(one)") }
        XCTAssertTrue(one[0].hasPrefix("OSC from 127.0.0.1:"), one[0])
        XCTAssertTrue(one[0].contains("/agraph/g/gain: 100.0 is out of range for g.gain"), one[0])
        XCTAssertEqual(server.takeErrors(), [], "taken once")

        // Past the first error's window: a flood of 50.
        usleep(1_100_000)
        for i in 0..<50 { client.send(OSCMessage("/agraph/nope\(i)\u{1B}[2J"), to: server.port) }
        var replies = 0
        while replies < 50, client.next("/agraph/error", timeout: 5) != nil { replies += 1 }
        XCTAssertEqual(replies, 50, "every sender is still answered")
        let shown = server.takeErrors()
        guard shown.count == 5 else { return XCTFail("5 errors shown: \(shown)") }
        XCTAssertFalse(shown.joined().contains("\u{1B}"), "no escape sequence reaches the terminal: \(shown)")
        XCTAssertTrue(shown[0].contains("/agraph/nope0\\u{1b}[2J"), shown[0])
        usleep(1_100_000)
        XCTAssertEqual(server.takeErrors(), ["OSC: 45 more errors in 1 s not shown"])
    }
}
