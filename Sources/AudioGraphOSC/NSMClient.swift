// The client side of the NSM session-management protocol (the "Non Session
// Management API", version 1.2, as New Session Manager publishes it): a
// program started by a session manager with NSM_URL in its environment
// announces itself, is told where its files live (open), when to write
// them (save), and reports whether it has unsaved changes (dirty/clean).
// Quit is SIGTERM, which is the program's to handle.
//
// Messages travel over one UDP socket connected to the server's address
// (only the server's datagrams are read); they are encoded and decoded by
// OSCPacket.

#if canImport(Glibc)
import AudioGraphHost
import Glibc
#endif

/// What the session manager asked, as a value.
public enum NSMRequest: Sendable, Equatable {
    /// `/nsm/client/open s:path_to_instance_files s:display_name s:client_id`
    case open(path: String, displayName: String, clientID: String)
    /// `/nsm/client/save`
    case save
    /// `/reply "/nsm/server/announce" s:message s:server_name s:capabilities`
    case announced(message: String, serverName: String, capabilities: String)
    /// `/error s:path i:code s:message` from the server (e.g. to the announce).
    case error(path: String, code: Int32, message: String)
    /// `/nsm/client/session_is_loaded`, `/nsm/client/show_optional_gui` …:
    /// informational messages this client has nothing to do for.
    case other(OSCMessage)
}

/// NSM's error codes (the API's `ERR_*`).
public enum NSMErrorCode: Int32, Sendable {
    case general = -1
    case incompatibleAPI = -2
    case blacklisted = -3
    case launchFailed = -4
    case noSuchFile = -5
    case noSessionOpen = -6
    case unsavedChanges = -7
    case notNow = -8
    case badProject = -9
    case createFailed = -10
}

/// Speaks the client side of the NSM API to the server named by `NSM_URL`.
///
/// ```swift
/// guard let url = NSMClient.urlFromEnvironment else { … }   // not under a session manager
/// let nsm = try NSMClient(serverURL: url)
/// try nsm.announce(applicationName: "agraph", capabilities: [":dirty:"], executableName: "agraph")
/// while let request = nsm.receive(timeout: 0.1) { … nsm.reply(to: "/nsm/client/open", "OK") … }
/// nsm.markDirty()
/// ```
///
/// Threading: every method: [main-thread] (one thread at a time: the
/// program's control loop); `serverURL`: [any-thread].
public final class NSMClient: @unchecked Sendable {
    /// The API version this client speaks.
    public static let apiVersion = (major: Int32(1), minor: Int32(2))

    /// `NSM_URL` from the environment, nil when unset or empty. [any-thread]
    public static var urlFromEnvironment: String? {
        guard let v = getenv("NSM_URL") else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }

    /// The server's OSC URL (`osc.udp://host:port/`). [any-thread]
    public let serverURL: String
    private let socket: UDPSocket
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    /// Messages of one datagram not handed out yet.
    private var pending: [OSCMessage] = []
    /// What was last reported, so that repeated marks send nothing.
    private var reportedDirty: Bool?

    /// Opens a socket to the server at `serverURL`. [main-thread]
    /// - Throws: `OSCError` when the URL is not a UDP OSC URL or does not resolve.
    public init(serverURL: String) throws(OSCError) {
        ThreadRole.check(.main)
        self.serverURL = serverURL
        socket = try UDPSocket.connected(to: SocketAddress.resolve(url: serverURL))
    }

    deinit { buffer.deallocate() }

    /// Sends `/nsm/server/announce` with this process's id. `capabilities`
    /// are the words only (`dirty`), or already in NSM's `:dirty:` form.
    /// [main-thread]
    public func announce(applicationName: String, capabilities: [String], executableName: String) throws(OSCError) {
        ThreadRole.check(.main)
        let words = capabilities.map { $0.trimmingColons }.filter { !$0.isEmpty }
        let caps = words.isEmpty ? "" : ":" + words.joined(separator: ":") + ":"
        try send(OSCMessage("/nsm/server/announce", [
            .string(applicationName), .string(caps), .string(executableName),
            .int32(Self.apiVersion.major), .int32(Self.apiVersion.minor), .int32(Int32(getpid())),
        ]))
    }

    /// The next request from the server, waiting up to `timeout` seconds
    /// (0: only what has arrived); nil when none came. Datagrams that are
    /// not OSC are dropped. [main-thread]
    public func receive(timeout: Double) -> NSMRequest? {
        ThreadRole.check(.main)
        if pending.isEmpty {
            var fds = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&fds, 1, Int32(max(0, timeout * 1000))) > 0 else { return nil }
            while pending.isEmpty, let datagram = socket.receive(into: buffer) {
                guard datagram.size <= buffer.count,
                      let messages = try? OSCPacket.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<datagram.size]))
                else { continue }
                pending = messages
            }
            if pending.isEmpty { return nil }
        }
        return Self.request(pending.removeFirst())
    }

    /// A message from the server as a request.
    static func request(_ m: OSCMessage) -> NSMRequest {
        let a = m.arguments
        switch m.address {
        case "/nsm/client/open" where a.count >= 3:
            if let path = a[0].text, let name = a[1].text, let id = a[2].text {
                return .open(path: path, displayName: name, clientID: id)
            }
        case "/nsm/client/save":
            return .save
        case "/reply" where a.first?.text == "/nsm/server/announce":
            return .announced(message: a.count > 1 ? a[1].text ?? "" : "", serverName: a.count > 2 ? a[2].text ?? "" : "",
                              capabilities: a.count > 3 ? a[3].text ?? "" : "")
        case "/error" where a.count >= 3:
            if let path = a[0].text, let code = a[1].number, let text = a[2].text {
                return .error(path: path, code: Int32(clamping: Int(code)), message: text)
            }
        default: break
        }
        return .other(m)
    }

    /// `/reply s:path s:message`: `path` (e.g. `/nsm/client/open`) succeeded. [main-thread]
    public func reply(to path: String, _ message: String = "OK") {
        ThreadRole.check(.main)
        try? send(OSCMessage("/reply", [.string(path), .string(message)]))
    }

    /// `/error s:path i:code s:message`: `path` failed. [main-thread]
    public func error(to path: String, code: NSMErrorCode = .general, _ message: String) {
        ThreadRole.check(.main)
        try? send(OSCMessage("/error", [.string(path), .int32(code.rawValue), .string(message)]))
    }

    /// `/nsm/client/is_dirty` unless already reported dirty. [main-thread]
    public func markDirty() {
        ThreadRole.check(.main)
        guard reportedDirty != true else { return }
        reportedDirty = true
        try? send(OSCMessage("/nsm/client/is_dirty"))
    }

    /// `/nsm/client/is_clean` unless already reported clean. [main-thread]
    public func markClean() {
        ThreadRole.check(.main)
        guard reportedDirty != false else { return }
        reportedDirty = false
        try? send(OSCMessage("/nsm/client/is_clean"))
    }

    /// `/nsm/client/message i:priority s:message`: a line for the session
    /// manager's user (priority 0…3). [main-thread]
    public func message(_ text: String, priority: Int32 = 1) {
        ThreadRole.check(.main)
        try? send(OSCMessage("/nsm/client/message", [.int32(priority), .string(text)]))
    }

    private func send(_ message: OSCMessage) throws(OSCError) {
        if let e = socket.send(OSCPacket.encode(message)) {
            throw OSCError("cannot send \(message.address) to \(serverURL): \(String(cString: strerror(e)))")
        }
    }
}

extension String {
    fileprivate var trimmingColons: String {
        String(self.drop { $0 == ":" }.reversed().drop { $0 == ":" }.reversed())
    }
}
