import AudioGraphOSC
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on 127.0.0.1 that sends OSC to a server and reads what
/// comes back (replies to its own address, or what a subscription sends
/// it). Messages are written and read with `OSCPacket` (liblo); raw bytes
/// can be sent too. [one thread at a time]
public final class OSCTestClient {
    public let fd: Int32
    /// The port it receives on.
    public let port: Int
    /// `osc.udp://127.0.0.1:PORT/`
    public var url: String { "osc.udp://127.0.0.1:\(port)/" }
    /// Datagrams received that were not OSC.
    public private(set) var undecodable = 0

    /// Binds 127.0.0.1:`port` (0: a free port).
    public init(port: Int = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw JACKTestError("socket: \(String(cString: strerror(errno)))") }
        var address = Self.loopback(port: port)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw JACKTestError("bind 127.0.0.1:\(port): \(message)")
        }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: bound.sin_port))
    }

    deinit { close(fd) }

    static func loopback(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = UInt16(port).bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return a
    }

    /// Sends raw bytes to 127.0.0.1:`port`.
    public func sendRaw(_ bytes: [UInt8], to port: Int) {
        var address = Self.loopback(port: port)
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Sends `message` to 127.0.0.1:`port`.
    public func send(_ message: OSCMessage, to port: Int) {
        sendRaw(OSCPacket.encode(message), to: port)
    }

    /// The messages of the next datagram (a bundle's, flattened), waiting
    /// up to `timeout` s; nil when none came.
    public func receive(timeout: Double) -> [OSCMessage]? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(max(1, left * 1000))) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 { continue }
            do {
                return try OSCPacket.decode(Array(buffer[0..<n]))
            } catch {
                undecodable += 1
            }
        }
    }

    /// The first message to `address` that arrives within `timeout` s
    /// (others are dropped).
    public func next(_ address: String, timeout: Double) -> OSCMessage? {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            guard let messages = receive(timeout: deadline.timeIntervalSinceNow) else { return nil }
            if let m = messages.first(where: { $0.address == address }) { return m }
        }
        return nil
    }

    /// Every message that arrives in the next `seconds`, with the time each
    /// datagram arrived.
    public func collect(seconds: Double) -> [(Date, OSCMessage)] {
        let deadline = Date().addingTimeInterval(seconds)
        var out: [(Date, OSCMessage)] = []
        while deadline.timeIntervalSinceNow > 0 {
            guard let messages = receive(timeout: deadline.timeIntervalSinceNow) else { break }
            let now = Date()
            out += messages.map { (now, $0) }
        }
        return out
    }

    /// Drops whatever is waiting.
    public func drain() {
        while receive(timeout: 0.05) != nil {}
    }

    /// Sends `message` and waits up to `timeout` s for a reply to `reply`.
    public func ask(_ message: OSCMessage, port: Int, reply: String, timeout: Double = 5) -> OSCMessage? {
        send(message, to: port)
        return next(reply, timeout: timeout)
    }
}
