// UDP sockets for the OSC server: the one it listens on (bound to one
// address, loopback by default) and one per subscriber (connected to it, so
// that an ICMP "port unreachable" comes back as a send error).

import AudioGraphCore
import CLo
#if canImport(Glibc)
import Glibc
#endif

/// Why the OSC server cannot start or a target is not usable, in words.
public struct OSCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An IPv4 or IPv6 socket address, as a value. [any-thread]
struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    private(set) var storage = sockaddr_storage()
    private(set) var length: socklen_t = 0

    init() {}

    init(_ pointer: UnsafePointer<sockaddr>, length: socklen_t) {
        self.length = min(length, socklen_t(MemoryLayout<sockaddr_storage>.size))
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: Int(self.length)))
        }
    }

    var family: Int32 { Int32(storage.ss_family) }

    /// Runs `body` with the address as a `sockaddr` pointer.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }

    /// Numeric host and port.
    var hostAndPort: (host: String, port: Int) {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withSockaddr { address, length in
            getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                        NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard rc == 0 else { return ("?", 0) }
        return (String(cString: host), Int(String(cString: service)) ?? 0)
    }

    /// `osc.udp://127.0.0.1:9000/`, `osc.udp://[::1]:9000/`.
    var url: String {
        let (host, port) = hostAndPort
        return "osc.udp://\(host.contains(":") ? "[\(host)]" : host):\(port)/"
    }

    var description: String { url }

    static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.length == b.length && withUnsafeBytes(of: a.storage) { x in
            withUnsafeBytes(of: b.storage) { y in memcmp(x.baseAddress!, y.baseAddress!, Int(a.length)) == 0 }
        }
    }

    func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: storage) { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<Int(length)])) }
    }

    /// The addresses `host` and `port` name (numeric or a name from the
    /// resolver; `passive`: for binding). [any-thread; may block on the resolver for a name]
    static func resolve(host: String, port: Int, passive: Bool) throws(OSCError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let list else {
            throw OSCError("cannot resolve '\(host)': \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var out: [SocketAddress] = []
        var p: UnsafeMutablePointer<addrinfo>? = list
        while let a = p {
            if let sa = a.pointee.ai_addr, a.pointee.ai_family == AF_INET || a.pointee.ai_family == AF_INET6 {
                out.append(SocketAddress(sa, length: a.pointee.ai_addrlen))
            }
            p = a.pointee.ai_next
        }
        guard !out.isEmpty else { throw OSCError("'\(host)' has no IPv4 or IPv6 address") }
        return out
    }

    /// The UDP address of an `osc.udp://HOST:PORT/` URL (liblo parses it).
    /// [any-thread; may block on the resolver for a name]
    static func resolve(url: String) throws(OSCError) -> SocketAddress {
        if let missing = LazyLibrary.require(.liblo, for: "OSC URLs") { throw OSCError(missing) }
        let protocolID = lo_url_get_protocol_id(url)
        guard protocolID == LO_UDP else {
            throw OSCError("'\(url)' is not a UDP OSC URL: write osc.udp://HOST:PORT/")
        }
        guard let hostPointer = lo_url_get_hostname(url) else { throw OSCError("'\(url)' names no host") }
        let host = String(cString: hostPointer)
        free(hostPointer)
        guard let portPointer = lo_url_get_port(url) else { throw OSCError("'\(url)' names no port") }
        let portText = String(cString: portPointer)
        free(portPointer)
        guard let port = Int(portText), (1...65535).contains(port), !host.isEmpty else {
            throw OSCError("'\(url)' needs a host and a port from 1 to 65535: osc.udp://HOST:PORT/")
        }
        return try resolve(host: host, port: port, passive: false)[0]
    }
}

/// A non-blocking UDP socket. [any-thread; one thread at a time]
final class UDPSocket {
    let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    private static func make(family: Int32) throws(OSCError) -> UDPSocket {
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OSCError("cannot open a UDP socket: \(String(cString: strerror(errno)))") }
        return UDPSocket(fd: fd)
    }

    /// A socket bound to `host`:`port` (0: a free port). [main-thread]
    static func bound(host: String, port: Int) throws(OSCError) -> UDPSocket {
        guard (0...65535).contains(port) else { throw OSCError("port \(port) is not in 0…65535") }
        var failures: [String] = []
        for address in try SocketAddress.resolve(host: host, port: port, passive: true) {
            let s = try make(family: address.family)
            let rc = address.withSockaddr { bind(s.fd, $0, $1) }
            if rc == 0 { return s }
            failures.append("\(address.hostAndPort.host): \(String(cString: strerror(errno)))")
        }
        throw OSCError("cannot listen on UDP port \(port) of \(host): " + failures.joined(separator: "; "))
    }

    /// A socket connected to `target`. [any-thread]
    static func connected(to target: SocketAddress) throws(OSCError) -> UDPSocket {
        let s = try make(family: target.family)
        let rc = target.withSockaddr { connect(s.fd, $0, $1) }
        guard rc == 0 else { throw OSCError("cannot send to \(target.url): \(String(cString: strerror(errno)))") }
        return s
    }

    /// The address the socket is bound to.
    var localAddress: SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return SocketAddress() }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) }
        }
    }

    /// The next datagram into `buffer`: its full size (more than the
    /// buffer holds when it was cut) and its sender; nil when none waits.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> (size: Int, from: SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        while true {
            let n = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_TRUNC), $0, &length)
                }
            }
            if n < 0 {
                // A pending ICMP error of an earlier reply reads as an error
                // here on some systems: skip it and read on.
                if errno == EINTR || errno == ECONNREFUSED { continue }
                return nil
            }
            let from = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) }
            }
            return (n, from)
        }
    }

    /// Sends `bytes` to `target`; errno on failure.
    @discardableResult
    func send(_ bytes: [UInt8], to target: SocketAddress) -> Int32? {
        let n = bytes.withUnsafeBytes { b in
            target.withSockaddr { sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
        return n < 0 ? errno : nil
    }

    /// Sends `bytes` on a connected socket; errno on failure.
    func send(_ bytes: [UInt8]) -> Int32? {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return n < 0 ? errno : nil
    }
}
