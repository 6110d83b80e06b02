// The OSC server of a running graph (`agraph run --osc PORT`): a UDP socket
// bound to one address (the loopback address unless told otherwise) and
// one thread of its own that reads messages, runs them on the graph's
// `ControlSurface`, answers the sender and feeds the subscribers. The
// address space is documented in docs/osc.md; the mapping is OSCService.
//
// Why not liblo's own server (`lo_server_thread_new…`): liblo 0.31 (Debian
// 12's) always binds the wildcard address; a host in
// `lo_server_new_from_url` is taken for a multicast group (server.c:
// `getaddrinfo(NULL, port, AI_PASSIVE)`), so it cannot keep a server on
// the loopback address. Its server also drops a datagram that is not OSC
// without telling who sent it, where this one answers with an error. liblo
// reads the messages (OSCMessage.swift).
//
// The thread never touches JACK or the audio thread: it calls the control
// surface (lock-free parameter queue, nodes' own requests) as any control
// thread may, and learns that a change was applied from the parameter
// queue's read position.

import AudioGraphHost
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Serves a running graph's control surface over OSC (UDP).
///
/// ```swift
/// let live = try RunningGraph(graph: graph, binder: binder)
/// let osc = try OSCServer(control: live.control, port: 9000)   // 127.0.0.1:9000
/// print(osc.url)                                                // osc.udp://127.0.0.1:9000/
/// …
/// osc.stop()
/// live.stop()
/// ```
///
/// Threading: `init`, `start`, `stop`: [main-thread] (the thread that made
/// it); `url`, `port`: [any-thread]. The server's own thread
/// ([control-thread]) does all the rest. Stop the server before the graph.
public final class OSCServer: @unchecked Sendable {
    /// Where the server listens unless told otherwise: OSC has no
    /// authentication, and anyone who can reach the port controls the graph.
    public static let loopback = "127.0.0.1"

    /// The URL it listens on: `osc.udp://127.0.0.1:9000/`. [any-thread]
    public let url: String
    /// The UDP port it listens on (the one picked, when asked for 0). [any-thread]
    public let port: Int

    private let socket: UDPSocket
    private var service: OSCService?
    private let errorLog = OSCErrorLog()
    private var thread: pthread_t?
    private let flag = StopFlag()
    /// Written to wake the thread at once to stop.
    private let wake: (read: Int32, write: Int32)

    /// Binds the socket; serves nothing until `start`. Binding before the
    /// graph starts lets a port in use be reported before anything touches
    /// JACK. [main-thread]
    /// - Parameters:
    ///   - port: the UDP port, 0 for one the system picks.
    ///   - host: the address to listen on (numeric or a name); the
    ///     loopback address by default. `0.0.0.0` or `::` listen on every
    ///     interface.
    /// - Throws: `OSCError` when the address does not resolve or the port
    ///   cannot be bound (in use, not allowed).
    public init(port: Int, host: String = OSCServer.loopback) throws(OSCError) {
        ThreadRole.check(.main)
        socket = try UDPSocket.bound(host: host, port: port)
        let local = socket.localAddress
        url = local.url
        self.port = local.hostAndPort.port
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw OSCError("cannot make the OSC thread's wake-up pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wake = (fds[0], fds[1])
    }

    /// Binds and starts serving `control`. [main-thread]
    public convenience init(control: ControlSurface, port: Int, host: String = OSCServer.loopback) throws(OSCError) {
        ThreadRole.check(.main)
        try self.init(port: port, host: host)
        try start(control: control)
    }

    deinit {
        stop()
        close(wake.read)
        close(wake.write)
    }

    /// Starts the server's thread on `control`; once. [main-thread]
    public func start(control: ControlSurface) throws(OSCError) {
        ThreadRole.check(.main)
        try start(control: { control }, reload: nil)
    }

    /// What `/agraph/reload` does: reloads the graph file the host runs
    /// and says what changed, or throws with the diagnostics (the running
    /// graph then plays on). Called on the OSC thread.
    public typealias ReloadHandler = @Sendable () throws -> String

    /// Starts the server's thread; once. `control` gives the running
    /// graph's control surface each time the thread looks (a hot reload
    /// replaces it: `{ live.control }`); `reload`, when given, serves
    /// `/agraph/reload`. [main-thread]
    public func start(control: @escaping @Sendable () -> ControlSurface, reload: ReloadHandler?) throws(OSCError) {
        ThreadRole.check(.main)
        guard service == nil, !flag.stopping.load(ordering: .acquiring) else { return }
        let service = OSCService(control: control, reload: reload, socket: socket, errorLog: errorLog)
        let box = Unmanaged.passRetained(Loop(service: service, socket: socket, wake: wake.read, flag: flag))
        var t = pthread_t()
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&t, nil, { raw in
                guard let raw else { return nil }
                let loop = Unmanaged<Loop>.fromOpaque(raw).takeRetainedValue()
                loop.run()
                return nil
            }, box.toOpaque())
        }
        guard rc == 0 else {
            box.release()
            throw OSCError("cannot start the OSC thread (error \(rc))")
        }
        self.service = service
        thread = t
    }

    /// The errors sent to senders since the last call, one line each
    /// (`OSC from 127.0.0.1:5000: /agraph/g/gain: …`), for the console to
    /// show as its own errors; at most 5 a second, then a line counting
    /// those not shown. Control characters are escaped. [any-thread]
    public func takeErrors() -> [String] {
        errorLog.take(now: MonotonicClock.seconds())
    }

    /// Stops the thread and joins it; idempotent. Events up to the stop
    /// are still sent to the subscribers, nothing after. [main-thread]
    public func stop() {
        ThreadRole.check(.main)
        guard !flag.stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        if let t = thread {
            pthread_join(t, nil)
            thread = nil
        }
    }

    /// Set once by `stop`; read by the thread. [any-thread]
    private final class StopFlag: Sendable {
        let stopping = Atomic<Bool>(false)
        var isSet: Bool { stopping.load(ordering: .acquiring) }
    }

    /// The thread's work, kept by the thread. [control-thread]
    private final class Loop {
        let service: OSCService
        let socket: UDPSocket
        let wake: Int32
        let flag: StopFlag
        /// One datagram: UDP's largest payload fits.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

        init(service: OSCService, socket: UDPSocket, wake: Int32, flag: StopFlag) {
            self.service = service
            self.socket = socket
            self.wake = wake
            self.flag = flag
        }

        deinit { buffer.deallocate() }

        func run() {
            ThreadRole.mark(.control)
            var fds = [pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            while !flag.isSet {
                let now = MonotonicClock.seconds()
                let wait = service.wait(now: now)
                fds[0].revents = 0
                fds[1].revents = 0
                var n: Int32
                if wait > 0 && wait < 0.001 {
                    // Shorter than poll's millisecond (an acknowledgement
                    // pending): look, sleep that long, look again.
                    n = poll(&fds, 2, 0)
                    if n == 0 {
                        var t = timespec(tv_sec: 0, tv_nsec: Int(wait * 1e9))
                        nanosleep(&t, nil)
                        n = poll(&fds, 2, 0)
                    }
                } else {
                    n = poll(&fds, 2, Int32(min((wait * 1000).rounded(.up), 1000)))
                }
                if flag.isSet { break }
                if n > 0 && fds[0].revents & Int16(POLLIN) != 0 {
                    // Up to 256 datagrams, then the subscriptions get their turn.
                    var count = 0
                    while count < 256, let datagram = socket.receive(into: buffer) {
                        service.receive(UnsafeRawBufferPointer(buffer), size: datagram.size, from: datagram.from,
                                        now: MonotonicClock.seconds())
                        count += 1
                    }
                }
                service.tick(now: MonotonicClock.seconds())
            }
            // What happened up to the stop (the end of the stream that
            // made `agraph run` stop) still reaches the subscribers.
            service.flush(now: MonotonicClock.seconds())
        }
    }
}
