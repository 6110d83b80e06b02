import AudioGraphOSC
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `NSMClient` against `NSMTestServerFixture` (a test fixture speaking the
/// server side of the published NSM API, not an NSM implementation) over UDP
/// on 127.0.0.1, without JACK: the announce's fields, the server's messages
/// as requests, replies and errors as the API writes them, dirty/clean sent
/// once per change of state.
final class NSMClientTests: XCTestCase {
    func testAnnounceCarriesTheAPIFieldsAndTheServersMessagesBecomeRequests() throws {
        let server = try NSMTestServerFixture()
        let client = try NSMClient(serverURL: server.url)
        try client.announce(applicationName: "agraph", capabilities: ["dirty", ":switch:"], executableName: "agraph")
        let announce = try XCTUnwrap(server.waitFor("/nsm/server/announce", timeout: 5))
        XCTAssertEqual(announce.arguments, [.string("agraph"), .string(":dirty:switch:"), .string("agraph"),
                                            .int32(1), .int32(2), .int32(getpid())])

        server.acceptAnnounce()
        XCTAssertEqual(client.receive(timeout: 5), .announced(message: "Howdy, what took you so long?",
                                                              serverName: "nsm-test-fixture", capabilities: ":server-control:"))
        server.open(path: "/s/agraph.nX", displayName: "agraph", clientID: "agraph.nX")
        XCTAssertEqual(client.receive(timeout: 5), .open(path: "/s/agraph.nX", displayName: "agraph", clientID: "agraph.nX"))
        server.save()
        XCTAssertEqual(client.receive(timeout: 5), .save)
        server.send(OSCMessage("/error", [.string("/nsm/server/announce"), .int32(-2), .string("incompatible")]))
        XCTAssertEqual(client.receive(timeout: 5), .error(path: "/nsm/server/announce", code: -2, message: "incompatible"))
        server.send(OSCMessage("/nsm/client/session_is_loaded"))
        XCTAssertEqual(client.receive(timeout: 5), .other(OSCMessage("/nsm/client/session_is_loaded")))
        // An open with missing arguments is not an open.
        server.send(OSCMessage("/nsm/client/open", [.string("/s/x")]))
        XCTAssertEqual(client.receive(timeout: 5), .other(OSCMessage("/nsm/client/open", [.string("/s/x")])))
        XCTAssertNil(client.receive(timeout: 0.05), "nothing more")
    }

    func testRepliesErrorsAndDirtyCleanOncePerChange() throws {
        let server = try NSMTestServerFixture()
        let client = try NSMClient(serverURL: server.url)
        try client.announce(applicationName: "agraph", capabilities: [":dirty:"], executableName: "agraph")
        XCTAssertNotNil(server.waitFor("/nsm/server/announce", timeout: 5))
        client.reply(to: "/nsm/client/open", "OK")
        client.error(to: "/nsm/client/save", code: .noSessionOpen, "no session")
        client.markDirty()
        client.markDirty()
        client.markClean()
        client.markClean()
        client.markDirty()
        server.drain(timeout: 0.3)
        XCTAssertEqual(Array(server.received.dropFirst()), [
            OSCMessage("/reply", [.string("/nsm/client/open"), .string("OK")]),
            OSCMessage("/error", [.string("/nsm/client/save"), .int32(-6), .string("no session")]),
            OSCMessage("/nsm/client/is_dirty"),
            OSCMessage("/nsm/client/is_clean"),
            OSCMessage("/nsm/client/is_dirty"),
        ])
    }

    func testAURLThatIsNotUDPOSCIsRefused() {
        XCTAssertThrowsError(try NSMClient(serverURL: "osc.tcp://127.0.0.1:9/"))
        XCTAssertThrowsError(try NSMClient(serverURL: "not a url"))
    }
}
