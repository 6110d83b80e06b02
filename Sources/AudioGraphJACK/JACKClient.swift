import AudioGraphHost
import CJack
import CJackShim
#if canImport(Glibc)
import Glibc
#endif

/// An error talking to JACK, in words a user can act on.
public struct JACKError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A thin owner of a `jack_client_t`. [main-thread; unless a method says otherwise]
public final class JACKClient: @unchecked Sendable {
    public let handle: OpaquePointer
    /// The name JACK gave the client (it may add a suffix).
    public let name: String
    public let serverName: String?
    private var closed = false

    /// Connects to a running server; never starts one.
    /// - Parameter server: the server's name (`jackd -n NAME`), nil for the default.
    public init(name: String, server: String?) throws(JACKError) {
        // libjack is loaded the first time a graph goes live (CLazyLibs).
        if let missing = LazyLibrary.require(.jack, for: "a live graph") { throw JACKError(missing) }
        JACKMessages.install()
        var status = jack_status_t(rawValue: 0)
        guard let h = agraph_jack_client_open(name, server, &status) else {
            throw JACKError(Self.describe(status, server: server))
        }
        handle = h
        self.name = jack_get_client_name(h).map { String(cString: $0) } ?? name
        serverName = server
    }

    deinit { close() }

    /// Whether a server answers under `server` (nil: the default). [main-thread]
    public static func serverIsRunning(_ server: String?) -> Bool {
        ThreadRole.check(.main)
        guard socketAnswers(server ?? defaultServerName), LazyLibrary.require(.jack, for: "JACK") == nil else { return false }
        JACKMessages.install()
        var status = jack_status_t(rawValue: 0)
        guard let h = agraph_jack_client_open("agraph-probe", server, &status) else { return false }
        agraph_jack_client_close(h)
        return true
    }

    /// The server libjack picks when none is named: `$JACK_DEFAULT_SERVER`, else "default".
    static var defaultServerName: String {
        getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "default"
    }

    /// Whether JACK2's server socket for `server` (`/dev/shm/jack_NAME_UID_0`)
    /// accepts a connection: a cheap check before opening a client, since a
    /// libjack client open that fails starts threads and cancels them
    /// asynchronously (wasteful while polling for a server to come back,
    /// and more than ThreadSanitizer can follow). Without JACK2's registry
    /// in /dev/shm (another JACK build) it answers true and libjack decides.
    /// [any-thread]
    static func socketAnswers(_ server: String) -> Bool {
        guard access("/dev/shm/jack-shm-registry", F_OK) == 0 else { return true }
        let bytes = Array("/dev/shm/jack_\(server)_\(getuid())_0".utf8)
        var address = sockaddr_un()
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return true }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { Glibc.close(fd) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0
    }

    static func describe(_ status: jack_status_t, server: String?) -> String {
        let s = status.rawValue
        let which = server.map { "JACK server '\($0)'" } ?? "the default JACK server"
        if s & JackServerFailed.rawValue != 0 || s & JackServerError.rawValue != 0 {
            return "cannot connect to \(which): is it running? (start one with `jackd -d dummy`, or use --server embedded)"
        }
        if s & JackNameNotUnique.rawValue != 0 { return "the client name is already taken on \(which)" }
        if s & JackVersionError.rawValue != 0 { return "\(which) speaks another protocol version than this libjack" }
        if s & JackShmFailure.rawValue != 0 { return "cannot access JACK's shared memory for \(which)" }
        return "cannot open a JACK client on \(which) (status 0x\(String(s, radix: 16)))"
    }

    public var sampleRate: Double { Double(jack_get_sample_rate(handle)) }
    public var bufferSize: Int { Int(jack_get_buffer_size(handle)) }
    /// JACK's DSP load in percent. [any-thread]
    public var cpuLoad: Double { Double(jack_cpu_load(handle)) }

    /// Registers an audio port; `isInput` for ports that receive audio.
    public func registerPort(_ shortName: String, isInput: Bool) throws(JACKError) -> OpaquePointer {
        let flags = UInt(isInput ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue)
        guard let p = jack_port_register(handle, shortName, JACK_DEFAULT_AUDIO_TYPE, flags, 0) else {
            throw JACKError("cannot register port '\(name):\(shortName)' (a name too long or already used?)")
        }
        return p
    }

    public func unregister(_ port: OpaquePointer) { jack_port_unregister(handle, port) }

    /// Full port names matching a JACK regular expression and flags.
    public func ports(pattern: String? = nil, isInput: Bool? = nil) -> [String] {
        var flags: UInt = 0
        if let isInput { flags = UInt(isInput ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue) }
        return Self.takeNames(jack_get_ports(handle, pattern, JACK_DEFAULT_AUDIO_TYPE, flags))
    }

    /// The strings of a NULL-terminated list libjack allocated; frees it.
    private static func takeNames(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String] {
        guard let list else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var out: [String] = []
        var i = 0
        while let p = list[i] {
            out.append(String(cString: p))
            i += 1
        }
        return out
    }

    public func connect(_ source: String, _ destination: String) throws(JACKError) {
        let rc = jack_connect(handle, source, destination)
        if rc != 0 && rc != EEXIST {
            throw JACKError("cannot connect \(source) → \(destination) (error \(rc))")
        }
    }

    /// Ports connected to `port` (full names).
    public func connections(of port: OpaquePointer) -> [String] {
        Self.takeNames(jack_port_get_all_connections(handle, port))
    }

    /// Sets a metadata property on a port (e.g. its pretty name).
    public func setProperty(_ port: OpaquePointer, key: String, value: String, type: String? = nil) {
        let uuid = jack_port_uuid(port)
        _ = jack_set_property(handle, uuid, key, value, type)
    }

    /// Removes every property this client set on `port`.
    public func removeProperties(_ port: OpaquePointer) {
        _ = jack_remove_properties(handle, jack_port_uuid(port))
    }

    public func activate() throws(JACKError) {
        if jack_activate(handle) != 0 { throw JACKError("cannot activate the JACK client '\(name)'") }
    }

    public func deactivate() {
        guard !closed else { return }
        _ = jack_deactivate(handle)
    }

    /// Closes the client (deactivates it, unregisters its ports). Idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        agraph_jack_client_close(handle)
    }
}

/// Glob matching for `connect` patterns (`system:playback_*`). [any-thread]
public func globMatches(_ pattern: String, _ name: String) -> Bool {
    fnmatch(pattern, name, 0) == 0
}

/// libjack prints its own errors ("Cannot connect to server socket…") on
/// stderr, also when AudioGraph merely probes for a server. They are
/// dropped, since AudioGraph reports every failure in its own words; set
/// AGRAPH_JACK_VERBOSE=1 to see them.
enum JACKMessages {
    static let verbose = getenv("AGRAPH_JACK_VERBOSE").map { String(cString: $0) != "0" } ?? false

    static let installOnce: Void = {
        if !verbose {
            jack_set_error_function { _ in }
            jack_set_info_function { _ in }
        }
    }()

    static func install() { _ = installOnce }
}
