import AudioGraphOSC
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// NOT an NSM implementation: a test fixture speaking the server side of the
/// published NSM API (the "Non Session Management API" 1.2, as New Session
/// Manager documents it), just enough to drive one client: it listens on
/// 127.0.0.1 (its URL goes in the client's NSM_URL), records every message
/// the client sends, remembers the client's address from its datagrams, and
/// sends it the server's messages (the announce reply, open, save) when a
/// test says so. Messages are written and read with `OSCPacket`.
/// [one thread at a time]
public final class NSMTestServerFixture {
    public let fd: Int32
    public let port: Int
    /// `osc.udp://127.0.0.1:PORT/`: the client's NSM_URL.
    public var url: String { "osc.udp://127.0.0.1:\(port)/" }
    /// Every message the client sent, in order.
    public private(set) var received: [OSCMessage] = []
    /// Where the client's datagrams came from.
    private var client = sockaddr_storage()
    private var clientLength: socklen_t = 0

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw JACKTestError("socket: \(String(cString: strerror(errno)))") }
        var address = OSCTestClient.loopback(port: 0)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw JACKTestError("bind 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: bound.sin_port))
    }

    deinit { close(fd) }

    /// Reads what the client sent for up to `timeout` s, until a message
    /// at `address` (and matching `predicate`) that was not returned before
    /// arrives; returns it, or nil.
    public func waitFor(_ address: String, timeout: Double, after index: Int = 0,
                        where predicate: (OSCMessage) -> Bool = { _ in true }) -> OSCMessage? {
        let deadline = Date().addingTimeInterval(timeout)
        var scanned = index
        while true {
            while scanned < received.count {
                let m = received[scanned]
                scanned += 1
                if m.address == address && predicate(m) { return m }
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            readOne(timeout: left)
        }
    }

    /// The index of the next message to arrive (for `waitFor(after:)`).
    public var mark: Int { received.count }

    /// Reads whatever arrives within `timeout` s.
    public func drain(timeout: Double) {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 { readOne(timeout: deadline.timeIntervalSinceNow) }
    }

    private func readOne(timeout: Double) {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(max(1, timeout * 1000))) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var from = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &from) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        guard n > 0, let messages = try? OSCPacket.decode(Array(buffer[0..<n])) else { return }
        client = from
        clientLength = length
        received += messages
    }

    /// Sends `message` to the client (to where its last datagram came from).
    public func send(_ message: OSCMessage) {
        let bytes = OSCPacket.encode(message)
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &client) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, clientLength) }
            }
        }
    }

    /// `/reply "/nsm/server/announce" s:message s:server_name s:capabilities`.
    public func acceptAnnounce() {
        send(OSCMessage("/reply", [.string("/nsm/server/announce"), .string("Howdy, what took you so long?"),
                                   .string("nsm-test-fixture"), .string(":server-control:")]))
    }

    /// `/nsm/client/open s:path_to_instance_files s:display_name s:client_id`.
    public func open(path: String, displayName: String, clientID: String) {
        send(OSCMessage("/nsm/client/open", [.string(path), .string(displayName), .string(clientID)]))
    }

    /// `/nsm/client/save`.
    public func save() { send(OSCMessage("/nsm/client/save")) }
}
