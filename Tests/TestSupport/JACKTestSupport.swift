import CJack
import CJackShim
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Live JACK tests: a private `jackd` per test, an in-process recording
// client, and helpers to run the JACK command-line tools and to look for
// jackd processes. Nothing here depends on AudioGraphJACK, so the tests
// check the product with independent code.

/// A failure of the JACK test helpers.
public struct JACKTestError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// libjack prints its own complaints ("Cannot connect to server socket")
/// whenever a probe finds no server; keep test logs readable unless
/// AGRAPH_JACK_VERBOSE=1.
private let silenceJACKOnce: Void = {
    if ProcessInfo.processInfo.environment["AGRAPH_JACK_VERBOSE"].map({ $0 != "0" }) != true {
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
    }
}()

private let serverCounter = Atomic<Int>(0)

/// What the live tests adapt when they run under ThreadSanitizer.
///
/// TSan slows instrumented code (the graph's process callback, the worker,
/// the recorder, agraph subprocesses) several times over, while the dummy
/// server keeps wall-clock deadlines: at 256 frames (5.3 ms) a period is
/// missed for that reason alone. Under TSan the test servers run at 1024
/// frames (21 ms), and waits and tolerances expressed in wall-clock time are
/// scaled by `slowdown`. Checks expressed in samples stay exact.
public enum LiveTiming {
    /// Whether this process is built with ThreadSanitizer (its runtime,
    /// linked into the test executable, exports `__tsan_init`).
    public static let isThreadSanitized: Bool = dlsym(nil, "__tsan_init") != nil

    /// The period of test servers, in frames: 256, or 1024 under TSan.
    public static let period = isThreadSanitized ? 1024 : 256

    /// The factor for waits and wall-clock tolerances: 1, or 4 under TSan.
    public static let slowdown: Double = isThreadSanitized ? 4 : 1

    /// `seconds`, scaled by `slowdown`.
    public static func seconds(_ seconds: Double) -> Double { seconds * slowdown }
}

/// The full path of an executable found on PATH (or in /usr/bin), or nil.
public func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"] {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// What a finished command printed and returned.
public struct ToolResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs `executable` (a name on PATH or a path) to completion, killing it
/// after `timeout` s. `environment` entries are added to this process's.
public func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Double = 20) throws -> ToolResult {
    let dir = NSTemporaryDirectory() + "/agraph-tool-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let p = try ChildProcess([executable] + arguments, environment: environment,
                             stdout: .file(dir + "/out"), stderr: .file(dir + "/err"))
    if !p.waitUntilExit(timeout: timeout) {
        p.send(SIGKILL)
        p.waitUntilExit()
        throw JACKTestError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
    }
    return ToolResult(status: p.terminationStatus,
                      stdout: (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? "",
                      stderr: (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? "")
}

/// A `jackd -n agraph-test-<pid>-<n> --no-realtime -d dummy` of one test:
/// started by `init` (which waits until it accepts clients), stopped by
/// `stop()` or at deinit. A watchdog shell kills it should the test
/// process die without stopping it.
///
/// A server killed with SIGKILL leaves its entry in JACK's shared-memory
/// registry, which holds only 8 servers and frees an entry only when a
/// server of the same name starts again: `stop()` therefore starts the
/// name once more and stops it cleanly after `kill9()` (and so does the
/// watchdog), or a few killed test servers would keep every jackd on the
/// machine from starting ("Too many servers already active").
public final class TestJACKServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    public let process: ChildProcess
    private let watchdog: ChildProcess?
    private let logPath: String
    private var stopped = false
    private var killed = false

    /// The nice value of test servers (and, with `raiseThreadPriority`, of
    /// the test's own JACK threads).
    public static let niceness: Int32 = -10

    /// Gives the calling thread, and the threads it creates from now on
    /// (libjack's process and notification threads, subprocesses), the
    /// niceness of test servers; returns the previous value to restore.
    /// Without the right to do so, nothing changes.
    @discardableResult
    public static func raiseThreadPriority(to value: Int32 = niceness) -> Int32 {
        errno = 0
        let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, value)
        return errno == 0 ? before : 0
    }

    /// A server name no other test (or test run) uses.
    public static func uniqueName() -> String {
        "agraph-test-\(getpid())-\(serverCounter.add(1, ordering: .relaxed).newValue)"
    }

    /// `jackd` and its arguments for a server `name`: under `nice` when
    /// available (not realtime, but ahead of ordinary work on a busy
    /// machine; nice execs jackd in the same process, and without the right
    /// to raise priority runs it as it is).
    static func command(name: String, sampleRate: Int, period: Int) throws -> [String] {
        guard let jackd = findExecutable("jackd") else { throw JACKTestError("jackd is not installed") }
        let arguments = [jackd, "-n", name, "--no-realtime", "-d", "dummy", "-r", String(sampleRate), "-p", String(period)]
        if let nice = findExecutable("nice") { return [nice, "-n", String(niceness)] + arguments }
        return arguments
    }

    static func launch(_ command: [String], log: String?) throws -> ChildProcess {
        guard let log else { return try ChildProcess(command) }
        return try ChildProcess(command, stdout: .file(log), stderr: .sameAsStdout)
    }

    public init(name: String = TestJACKServer.uniqueName(), sampleRate: Int = 48000, period: Int = LiveTiming.period,
                timeout: Double = 15) throws {
        _ = silenceJACKOnce
        self.name = name
        self.sampleRate = sampleRate
        self.period = period
        let command = try Self.command(name: name, sampleRate: sampleRate, period: period)
        logPath = NSTemporaryDirectory() + "/\(name).log"
        let p = try Self.launch(command, log: logPath)
        process = p
        // Should this process die: kill the server, then free its registry
        // entry by starting and stopping the name once more.
        let again = command.map { "'\($0)'" }.joined(separator: " ")
        watchdog = try? Self.launch(["/bin/sh", "-c", """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            kill -9 \(p.pid) 2>/dev/null && sleep 0.5 && { \(again) & J=$!; sleep 3; kill -TERM $J; }
            """], log: nil)
        let deadline = Date().addingTimeInterval(timeout)
        while !Self.acceptsClients(name) {
            if !p.isRunning {
                let why = log_()
                stop()
                throw JACKTestError("jackd -n \(name) exited at once (status \(p.terminationStatus)):\n\(why)")
            }
            if Date() > deadline {
                stop()
                throw JACKTestError("jackd -n \(name) did not accept clients within \(timeout) s:\n\(log_())")
            }
            usleep(20_000)
        }
    }

    deinit { stop() }

    public var pid: Int32 { process.pid }
    public var isRunning: Bool { process.isRunning }

    /// What jackd printed so far.
    public func log_() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Whether a JACK server named `server` accepts a client now (never
    /// starts one).
    public static func acceptsClients(_ server: String) -> Bool {
        _ = silenceJACKOnce
        guard socketAnswers(server) else { return false }
        var status = jack_status_t(rawValue: 0)
        guard let h = agraph_jack_client_open("agraph-test-probe", server, &status) else { return false }
        agraph_jack_client_close(h)
        return true
    }

    /// Whether JACK2's server socket for `server` (`/dev/shm/jack_NAME_UID_0`)
    /// accepts a connection. Checked before opening a client, since a
    /// libjack client open that fails starts and cancels a thread
    /// asynchronously, which ThreadSanitizer cannot follow (it stops the
    /// process: "thread finished with ignores enabled"). When the socket
    /// is elsewhere (another JACK build), answers true and libjack decides.
    public static func socketAnswers(_ server: String) -> Bool {
        guard FileManager.default.fileExists(atPath: "/dev/shm/jack-shm-registry") else { return true }
        let path = "/dev/shm/jack_\(server)_\(getuid())_0"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return true }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0
    }

    /// Kills the server with SIGKILL (no chance to tell its clients) and
    /// reaps it.
    public func kill9() {
        if process.isRunning {
            process.send(SIGKILL)
            killed = true
        }
        process.waitUntilExit()
    }

    /// SIGTERM, then SIGKILL after 3 s; reaps it; after a SIGKILL frees
    /// the server's registry entry and semaphores. Idempotent.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        if let watchdog, watchdog.isRunning {
            watchdog.send(SIGKILL)
            watchdog.waitUntilExit()
        }
        if process.isRunning {
            process.send(SIGTERM)
            if !process.waitUntilExit(timeout: 3) {
                process.send(SIGKILL)
                killed = true
            }
        }
        process.waitUntilExit()
        if killed { Self.reclaim(name: name, sampleRate: sampleRate, period: period) }
        try? FileManager.default.removeItem(atPath: logPath)
    }

    /// Starts the name once more and stops it cleanly: jackd frees the
    /// entry a dead server of that name left in JACK's registry. Then
    /// removes the semaphores its clients left in /dev/shm.
    static func reclaim(name: String, sampleRate: Int, period: Int) {
        guard let command = try? Self.command(name: name, sampleRate: sampleRate, period: period),
              let p = try? launch(command, log: nil) else { return }
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && !acceptsClients(name) && Date() < deadline { usleep(20_000) }
        if p.isRunning {
            p.send(SIGTERM)
            if !p.waitUntilExit(timeout: 3) { p.send(SIGKILL) }
        }
        p.waitUntilExit()
        let marker = "_\(name)_"
        for file in (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm")) ?? []
        where file.hasPrefix("jack_sem.") && file.contains(marker) {
            try? FileManager.default.removeItem(atPath: "/dev/shm/" + file)
        }
    }

    /// Runs a JACK tool against this server: `JACK_DEFAULT_SERVER` names it
    /// (for tools without `-s`), and no tool may start a server.
    public func tool(_ executable: String, _ arguments: [String] = [], timeout: Double = 20) throws -> ToolResult {
        try runTool(executable, arguments,
                    environment: ["JACK_DEFAULT_SERVER": name, "JACK_NO_START_SERVER": "1"], timeout: timeout)
    }

    /// Process ids of live `jackd` processes started with `-n name`
    /// (whoever started them).
    public static func jackdProcesses(named name: String) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [Int32] = []
        for entry in entries {
            guard let pid = Int32(entry),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"), !data.isEmpty else { continue }
            let argv = data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            guard let first = argv.first, first == "jackd" || first.hasSuffix("/jackd") else { continue }
            for i in argv.indices.dropLast() where (argv[i] == "-n" || argv[i] == "--name") && argv[i + 1] == name {
                found.append(pid)
            }
            if argv.contains("--name=\(name)") { found.append(pid) }
        }
        return found
    }
}

// MARK: recorder

/// What the recorder's process callback touches: preallocated storage and
/// atomics only.
private final class RecorderState: @unchecked Sendable {
    let channels: Int
    let capacity: Int
    let storage: [UnsafeMutablePointer<Float>]
    let storageBase: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let ports: UnsafeMutablePointer<OpaquePointer?>
    let maxCycles = 1 << 16
    let cycleSizes: UnsafeMutablePointer<Int32>
    /// Per cycle: where it starts in the recording, and JACK's transport
    /// (state, frame) as `jack_transport_query` gave it in that cycle.
    let cycleStarts: UnsafeMutablePointer<Int>
    let transportStates: UnsafeMutablePointer<Int32>
    let transportFrames: UnsafeMutablePointer<UInt32>
    let position: UnsafeMutablePointer<jack_position_t>
    /// The recorder's client. [set before activation]
    var client: OpaquePointer?
    let frames = Atomic<Int>(0)
    let cycles = Atomic<Int>(0)
    let stallMicroseconds = Atomic<Int>(0)
    let xruns = Atomic<Int>(0)

    init(channels: Int, capacity: Int) {
        self.channels = channels
        self.capacity = capacity
        storage = (0..<channels).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
            p.initialize(repeating: 0, count: capacity)
            return p
        }
        storageBase = .allocate(capacity: max(channels, 1))
        for (i, p) in storage.enumerated() { storageBase[i] = p }
        ports = .allocate(capacity: max(channels, 1))
        ports.initialize(repeating: nil, count: max(channels, 1))
        cycleSizes = .allocate(capacity: maxCycles)
        cycleSizes.initialize(repeating: 0, count: maxCycles)
        cycleStarts = .allocate(capacity: maxCycles)
        cycleStarts.initialize(repeating: 0, count: maxCycles)
        transportStates = .allocate(capacity: maxCycles)
        transportStates.initialize(repeating: 0, count: maxCycles)
        transportFrames = .allocate(capacity: maxCycles)
        transportFrames.initialize(repeating: 0, count: maxCycles)
        position = .allocate(capacity: 1)
        position.initialize(to: jack_position_t())
    }

    deinit {
        storage.forEach { $0.deallocate() }
        storageBase.deallocate()
        ports.deallocate()
        cycleSizes.deallocate()
        cycleStarts.deallocate()
        transportStates.deallocate()
        transportFrames.deallocate()
        position.deallocate()
    }

    /// [JACK's process thread of the recorder]
    @inline(__always)
    func process(_ nframes: UInt32) {
        let n = Int(nframes)
        let start = frames.load(ordering: .relaxed)
        let k = min(n, capacity - start)
        var c = 0
        while c < channels {
            if k > 0, let buffer = jack_port_get_buffer(ports[c], nframes) {
                (storageBase[c] + start).update(from: buffer.assumingMemoryBound(to: Float.self), count: k)
            }
            c += 1
        }
        let cycle = cycles.load(ordering: .relaxed)
        if cycle < maxCycles {
            cycleSizes[cycle] = Int32(truncatingIfNeeded: n)
            cycleStarts[cycle] = k > 0 ? start : -1
            if let client {
                transportStates[cycle] = Int32(truncatingIfNeeded: jack_transport_query(client, position).rawValue)
                transportFrames[cycle] = position.pointee.frame
            }
        }
        cycles.store(cycle + 1, ordering: .releasing)
        if k > 0 { frames.store(start + k, ordering: .releasing) }
        let stall = stallMicroseconds.exchange(0, ordering: .relaxed)
        if stall > 0 { usleep(UInt32(stall)) }
    }
}

private let recorderProcess: JackProcessCallback = { nframes, arg in
    if let arg { Unmanaged<RecorderState>.fromOpaque(arg).takeUnretainedValue().process(nframes) }
    return 0
}

private let recorderXrun: JackXRunCallback = { arg in
    if let arg { Unmanaged<RecorderState>.fromOpaque(arg).takeUnretainedValue().xruns.add(1, ordering: .relaxed) }
    return 0
}

/// An in-process JACK client with `channels` input ports (`in_1`…) that
/// records everything it receives into preallocated memory (its process
/// callback never allocates), from its activation on.
public final class JACKRecorder: @unchecked Sendable {
    public let client: OpaquePointer
    /// The client's name as JACK gave it.
    public let name: String
    public let channels: Int
    public let sampleRate: Double
    private let state: RecorderState
    private var closed = false

    /// Opens the client on `server` (never starting one), registers the
    /// ports and activates. - Parameter seconds: the recording's capacity.
    public init(server: String, name: String = "agraph-rec", channels: Int, seconds: Double) throws {
        _ = silenceJACKOnce
        var status = jack_status_t(rawValue: 0)
        guard let h = agraph_jack_client_open(name, server, &status) else {
            throw JACKTestError("cannot open JACK client '\(name)' on server '\(server)' (status 0x\(String(status.rawValue, radix: 16)))")
        }
        client = h
        self.name = jack_get_client_name(h).map { String(cString: $0) } ?? name
        self.channels = channels
        sampleRate = Double(jack_get_sample_rate(h))
        state = RecorderState(channels: channels, capacity: Int(seconds * sampleRate))
        for c in 0..<channels {
            guard let port = jack_port_register(h, "in_\(c + 1)", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0) else {
                agraph_jack_client_close(h)
                throw JACKTestError("cannot register \(self.name):in_\(c + 1)")
            }
            state.ports[c] = port
        }
        state.client = h
        let context = Unmanaged.passUnretained(state).toOpaque()
        jack_set_process_callback(h, recorderProcess, context)
        jack_set_xrun_callback(h, recorderXrun, context)
        guard jack_activate(h) == 0 else {
            agraph_jack_client_close(h)
            throw JACKTestError("cannot activate \(self.name)")
        }
    }

    deinit { close() }

    /// Full names of the input ports, in order.
    public var portNames: [String] { (0..<channels).map { "\(name):in_\($0 + 1)" } }

    /// Connects `sources[i]` (full output port names) to input port `i`.
    public func connect(from sources: [String]) throws {
        for (i, source) in sources.enumerated() where i < channels {
            let rc = jack_connect(client, source, portNames[i])
            if rc != 0 && rc != EEXIST { throw JACKTestError("cannot connect \(source) → \(portNames[i]) (error \(rc))") }
        }
    }

    /// Frames recorded so far (the same for every channel). [any thread]
    public var framesRecorded: Int { state.frames.load(ordering: .acquiring) }

    /// Process cycles run so far. [any thread]
    public var cycles: Int { state.cycles.load(ordering: .acquiring) }

    /// Xruns JACK reported to this client. [any thread]
    public var xruns: Int { state.xruns.load(ordering: .relaxed) }

    /// The period of each cycle so far (the first 65536 cycles).
    public var cycleSizes: [Int] {
        let n = min(cycles, state.maxCycles)
        return (0..<n).map { Int(state.cycleSizes[$0]) }
    }

    /// One process cycle of the recorder: where it starts in the recording
    /// (nil once the recording is full), its frames, and JACK's transport
    /// in that cycle (`jack_transport_query` on the process thread: the
    /// state, and the frame of the cycle's first frame).
    public struct Cycle: Sendable, Equatable {
        public var at: Int?
        public var frames: Int
        public var transportState: jack_transport_state_t
        public var transportFrame: Int
        public var isRolling: Bool { transportState == JackTransportRolling }
    }

    /// The cycles so far (the first 65536).
    public var cycleLog: [Cycle] {
        let n = min(cycles, state.maxCycles)
        return (0..<n).map { i in
            Cycle(at: state.cycleStarts[i] >= 0 ? state.cycleStarts[i] : nil, frames: Int(state.cycleSizes[i]),
                  transportState: jack_transport_state_t(rawValue: UInt32(bitPattern: state.transportStates[i])),
                  transportFrame: Int(state.transportFrames[i]))
        }
    }

    /// Whether the recording is full.
    public var isFull: Bool { framesRecorded >= state.capacity }

    /// The recording of channel `c` so far (or the frames `range` of it).
    public func samples(_ c: Int, _ range: Range<Int>? = nil) -> [Float] {
        let n = framesRecorded
        let r = (range ?? 0..<n).clamped(to: 0..<n)
        return Array(UnsafeBufferPointer(start: state.storage[c] + r.lowerBound, count: r.count))
    }

    /// Waits until `frames` frames are recorded; false on timeout.
    @discardableResult
    public func waitForFrames(_ frames: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while framesRecorded < min(frames, state.capacity) {
            if Date() > deadline { return false }
            usleep(2_000)
        }
        return true
    }

    /// Makes the next process cycle sleep this long (to provoke an xrun).
    public func stallNextCycle(microseconds: Int) {
        state.stallMicroseconds.store(microseconds, ordering: .relaxed)
    }

    /// Deactivates and closes the client. Idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        jack_deactivate(client)
        agraph_jack_client_close(client)
    }

    /// Closes without deactivating, for a server that is gone.
    public func abandon() {
        guard !closed else { return }
        closed = true
        agraph_jack_client_close(client)
    }
}
