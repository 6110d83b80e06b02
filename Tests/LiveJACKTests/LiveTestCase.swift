import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// What the live test classes share: per test, a temporary folder and the
/// test servers' priority for this thread (JACK's threads in this process
/// and agraph subprocesses are made by it); graphs run on a private
/// `jackd -d dummy` (`TestJACKServer`), `agraph run` as a subprocess, the
/// retry on xruns, and measurements with the JACK tools.
///
/// Under ThreadSanitizer the test servers run at a longer period and waits
/// and tolerances in wall-clock time are scaled (`LiveTiming`); checks in
/// samples are the same in every build.
class LiveTestCase: XCTestCase {
    static let rate = 48000.0

    var dir: TemporaryDirectory!
    private var niceBefore: Int32 = 0

    override func setUpWithError() throws {
        // The live tests count JACK's process thread through the global
        // total: a test thread an earlier test left counted would have its
        // allocations (validating, waiting) blamed on the process thread.
        if MallocCounter.isCountingThisThread {
            MallocCounter.endThread()
            XCTFail("an earlier test left the test thread's allocations counted (MallocCounter.beginThread without endThread)")
        }
        dir = try TemporaryDirectory("agraph-\(type(of: self))")
        niceBefore = TestJACKServer.raiseThreadPriority()
    }

    override func tearDown() {
        dir = nil
        TestJACKServer.raiseThreadPriority(to: niceBefore)
    }

    // MARK: graphs

    /// Validates `json` with `registry` (the JACK node types by default)
    /// and runs it on `server` with the options `configure` sets.
    func startGraph(_ json: String, server: String, clientName: String = "agraph-live",
                    mode: RunningGraph.ServerMode = .external,
                    configure: (inout RunningGraph.Options) -> Void = { _ in },
                    registry: (JACKPortBinder) -> NodeRegistry = { .builtIn.addingJACK($0) }) throws -> RunningGraph {
        let binder = JACKPortBinder()
        let graph = try GraphValidator(registry: registry(binder))
            .validate(bytes: Array(json.utf8), file: "live.json", directory: dir.path).get()
        var options = RunningGraph.Options()
        options.clientName = clientName
        options.server = mode
        options.serverName = server
        configure(&options)
        return try RunningGraph(graph: graph, binder: binder, options: options)
    }

    /// A 48 kHz graph: a sine `test-tone` (through a `gain` node `g` at
    /// 0 dB when `gain`) to a `jack-out` that connects to `connect`.
    static func toneGraph(frequency: Double = 1000, level: Double = -12, channels: Int = 2,
                          duration: Double? = nil, gain: Bool = false, connect: String? = "agraph-rec:in_*") -> String {
        let d = duration.map { #", "duration": \#($0)"# } ?? ""
        let c = connect.map { #"{"connect": ["\#($0)"]}"# } ?? "{}"
        let tone = #"{"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": \#(frequency), "level": \#(level), "channels": \#(channels)\#(d)}}"#
        let (nodes, links) = gain
            ? (#"{"id": "g", "type": "gain", "params": {"gain": 0}}, "#, #"{"from": "tone", "to": "g"}, {"from": "g", "to": "out"}"#)
            : ("", #"{"from": "tone", "to": "out"}"#)
        return """
            {"format": "agraph/1", "name": "tone", "sampleRate": 48000, "nodes": [
              \(tone),
              \(nodes){"id": "out", "type": "jack-out", "params": \(c)}],
             "links": [\(links)]}
            """
    }

    /// Writes `json` to `name` in the test's folder; returns its path.
    func writeGraph(_ json: String, _ name: String = "graph.json") throws -> String {
        let path = dir.file(name)
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The level of the last 0.1 s a recorder got on channel `c`, in dBFS.
    static func recentLevel(_ rec: JACKRecorder, channel c: Int = 0) -> Double {
        let n = rec.framesRecorded
        guard n >= 4800 else { return -.infinity }
        return SignalAnalysis.sineLevelDBFS(rec.samples(c, (n - 4800)..<n))
    }

    /// Waits until `rec` has recorded `seconds` since the first non-zero
    /// sample on channel `c` (a graph's output may reach a recorder some
    /// time after it started recording), up to `timeout` s (scaled by
    /// `LiveTiming.slowdown`); whether it has.
    func waitForSignal(_ rec: JACKRecorder, seconds: Double, channel c: Int = 0, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(LiveTiming.seconds(timeout))
        var scanned = 0
        var first: Int?
        while true {
            let n = rec.framesRecorded
            if first == nil, n > scanned {
                first = rec.samples(c, scanned..<n).firstIndex { $0 != 0 }.map { scanned + $0 }
                scanned = n
            }
            if let first, n >= first + Int(seconds * Self.rate) { return true }
            if Date() > deadline || rec.isFull { return false }
            usleep(2_000)
        }
    }

    /// Waits until `predicate` holds, up to `timeout` s (scaled by
    /// `LiveTiming.slowdown`); whether it did.
    func waitUntil(timeout: Double, _ predicate: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(LiveTiming.seconds(timeout))
        while !predicate() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    // MARK: agraph run

    /// `agraph run GRAPH --server external --server-name SERVER ARGS…` in
    /// the test's folder, once it says it is running.
    func startAgraphRun(_ graph: String, server: TestJACKServer, _ arguments: [String] = ["--quiet"],
                        file: StaticString = #filePath, line: UInt = #line) throws -> CLIProcess {
        let cli = try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name] + arguments,
                                 directory: dir.path)
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr, file: file, line: line)
        return cli
    }

    /// Runs `body` with `agraph run` of `graph` (JSON) at its console, on a
    /// server of its own; `body`'s last command must stop it cleanly (or
    /// the graph end). Returns all it wrote to stderr.
    @discardableResult
    func atTheConsole(of graph: String, _ body: (CLIProcess) throws -> Void) throws -> String {
        let server = try TestJACKServer()
        defer { server.stop() }
        let cli = try startAgraphRun(try writeGraph(graph), server: server)
        defer { cli.kill() }
        try body(cli)
        assertExitsCleanly(cli)
        return cli.stderr
    }

    /// Asserts that `cli` exits within `timeout` s, with status 0.
    func assertExitsCleanly(_ cli: CLIProcess, timeout: Double = 15, file: StaticString = #filePath, line: UInt = #line) {
        guard cli.waitForExit(timeout: timeout) else {
            // Where it hangs, for the log: every thread's stack (gdb, when
            // the machine has it), then it is killed by the test's cleanup.
            XCTFail("agraph did not exit: \(cli.stderr)\nits threads:\n\(cli.threadStacks())", file: file, line: line)
            return
        }
        XCTAssertEqual(cli.status, 0, cli.stderr, file: file, line: line)
    }

    // MARK: xruns

    /// JACK reported xruns: the recording may miss or repeat a cycle.
    struct XrunsHappened: Error { var count: Int }

    /// Throws `XrunsHappened` when JACK reported xruns to the recorder or the
    /// graph, unless this is the last attempt (whose checks then fail).
    /// Under ThreadSanitizer the graph's underruns count too: its worker
    /// runs instrumented, several times slower, and one preemption of it
    /// then leaves a ring short for a cycle (in the normal build an underrun
    /// is the product's and fails the test's own check at once).
    func checkNoXruns(_ rec: JACKRecorder, _ live: RunningGraph, isLast: Bool) throws {
        let status = live.status()
        let n = max(rec.xruns, status.xruns) + (LiveTiming.isThreadSanitized ? status.underruns : 0)
        if n > 0 && !isLast { throw XrunsHappened(count: n) }
    }

    /// Runs `body` (which starts its own server) up to `attempts` times while
    /// it ends with `XrunsHappened`: a non-realtime jackd on a loaded or
    /// preempted VM can miss a deadline for reasons outside the product.
    /// Every check of the recording runs on a run without xruns, or fails on
    /// the last one. After an attempt with xruns, a control run (a server
    /// and the recorder, no graph) tells the machine from the product: when
    /// the machine drops cycles with no graph running, that attempt does not
    /// count, and when it keeps doing so for `machineBudget` seconds the test
    /// is skipped, saying so (nothing about the product can be judged then).
    func retryingOnXruns(attempts: Int = 4, machineBudget: Double = 45, function: String = #function,
                         _ body: (_ isLast: Bool) throws -> Void) throws {
        let deadline = Date().addingTimeInterval(machineBudget)
        var attempt = 1
        while true {
            do {
                try body(attempt == attempts)
                return
            } catch let e as XrunsHappened {
                let what = LiveTiming.isThreadSanitized ? "xrun(s) or underrun(s)" : "xrun(s)"
                let control = try controlXruns(seconds: 2)
                if control > 0 {
                    print("\(function): \(e.count) \(what), and \(control) xrun(s) with no graph running: the machine drops cycles; not counted")
                    guard Date() < deadline else {
                        throw XCTSkip("the machine kept dropping JACK cycles with no graph running (\(control) xruns in 2 s of a bare server and recorder) for \(Int(machineBudget)) s: the recording checks could not be judged")
                    }
                    usleep(500_000)
                    continue
                }
                print("\(function): attempt \(attempt) had \(e.count) \(what), no xruns with no graph running; running it again")
                attempt += 1
            }
        }
    }

    /// Xruns JACK reports to a bare recorder on a fresh server in `seconds`.
    func controlXruns(seconds: Double) throws -> Int {
        let server = try TestJACKServer()
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 1, seconds: seconds + 1)
        defer { rec.close() }
        usleep(UInt32(seconds * 1e6))
        return rec.xruns
    }

    // MARK: JACK tools

    /// `jack_iodelay` looped through `jack_thru` on `server`: the
    /// reference a graph's loop is measured against. jack_thru connects
    /// itself to the system ports; that is undone, so that it is wired like
    /// a graph under test. Skips the test without jack_thru, jack_iodelay
    /// or stdbuf.
    func iodelayThroughJackThru(server: TestJACKServer) throws -> (roundTrip: Double?, extra: Int?) {
        try XCTSkipUnless(findExecutable("jack_iodelay") != nil && findExecutable("jack_thru") != nil
                          && findExecutable("stdbuf") != nil, "jack_iodelay, jack_thru or stdbuf missing")
        let thru = try ChildProcess(["jack_thru"], environment: ["JACK_DEFAULT_SERVER": server.name, "JACK_NO_START_SERVER": "1"])
        defer {
            thru.send(SIGTERM)
            thru.waitUntilExit()
        }
        let unwire = """
            for i in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jack_thru:output_2$' && break; sleep 0.1; done
            for p in 1 2; do jack_disconnect system:capture_$p jack_thru:input_$p; jack_disconnect jack_thru:output_$p system:playback_$p; done
            exit 0
            """
        _ = try server.tool("bash", ["-c", unwire])
        return try iodelay(server: server, into: "jack_thru:input_1", from: "jack_thru:output_1")
    }

    /// `jack_iodelay` looped through `input` → `output`: the round trip and
    /// the extra loopback latency it printed last (beyond the latencies the
    /// ports report), in frames.
    func iodelay(server: TestJACKServer, into input: String, from output: String) throws -> (roundTrip: Double?, extra: Int?) {
        let script = """
            t=$(mktemp)
            stdbuf -o0 jack_iodelay > "$t" 2>&1 & p=$!
            for i in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jack_delay:in$' && break; sleep 0.1; done
            jack_connect jack_delay:out '\(input)' && jack_connect '\(output)' jack_delay:in
            sleep 3
            kill $p; wait $p 2>/dev/null
            tr '\\r' '\\n' < "$t" | grep 'total roundtrip latency' | tail -1 | grep -o '[0-9.]* frames'
            tr '\\r' '\\n' < "$t" | grep 'extra loopback latency' | tail -1 | grep -o '[0-9]* frames'
            rm -f "$t"
            """
        let r = try server.tool("bash", ["-c", script], timeout: 20)
        let lines = r.stdout.split(separator: "\n")
        let round = lines.first.flatMap { Double($0.split(separator: " ").first ?? "") }
        let extra = lines.dropFirst().first.flatMap { Int($0.split(separator: " ").first ?? "") }
        return (round, extra)
    }

    /// `jack_lsp -l` of `server`: port → playback and capture latency ranges.
    static func portLatencies(server: TestJACKServer) throws -> (ports: [String: (playback: [Int], capture: [Int])], output: ToolResult) {
        let lsp = try runTool("jack_lsp", ["-s", server.name, "-l"], environment: ["JACK_NO_START_SERVER": "1"])
        var out: [String: (playback: [Int], capture: [Int])] = [:]
        var port: String?
        for line in lsp.stdout.split(separator: "\n").map(String.init) {
            if !line.hasPrefix("\t") && !line.hasPrefix(" ") {
                port = line.trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let port, let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { continue }
            let range = line[line.index(after: open)..<close].split(separator: " ").compactMap { Int($0) }
            var entry = out[port] ?? ([], [])
            if line.contains("playback latency") { entry.playback = range }
            if line.contains("capture latency") { entry.capture = range }
            out[port] = entry
        }
        return (out, lsp)
    }
}

// MARK: - support

/// Collects a running graph's events as they arrive.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [RunningGraph.Event] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<RunningGraph.Event>) {
        task = Task.detached { [self] in
            for await e in stream { self.append(e) }
        }
    }

    deinit { task?.cancel() }

    private func append(_ e: RunningGraph.Event) {
        lock.lock()
        events.append(e)
        lock.unlock()
    }

    var all: [RunningGraph.Event] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }

    /// The first event matching `predicate`, waiting up to `timeout` s
    /// (scaled by `LiveTiming.slowdown`).
    func wait(timeout: Double, _ predicate: (RunningGraph.Event) -> Bool) -> RunningGraph.Event? {
        let deadline = Date().addingTimeInterval(LiveTiming.seconds(timeout))
        repeat {
            if let e = all.first(where: predicate) { return e }
            usleep(5_000)
        } while Date() < deadline
        return all.first(where: predicate)
    }
}

/// `agraph` as a subprocess: stdin kept open, stdout and stderr collected
/// as they arrive. Timeouts are scaled by `LiveTiming.slowdown`.
///
/// Threads of its own (joined before anything they used is released) read
/// the output and write long input: nothing is left for another thread to
/// release behind ThreadSanitizer's back.
final class CLIProcess: @unchecked Sendable {
    let process: ChildProcess
    private let input: Int32
    private let output = Output()
    private var threads: [pthread_t] = []
    private var inputClosed = false

    /// What the reader threads collected. [reader threads; any thread under `lock`]
    private final class Output: @unchecked Sendable {
        let lock = NSCondition()
        var err = Data()
        var out = Data()
        var errChunks: [(Date, Int)] = []
        var finished = 0
    }

    /// A thread's work and what it needs (retained by the thread).
    private final class Work {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    private static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    init(_ arguments: [String], directory: String, environment: [String: String] = [:]) throws {
        _ = Self.ignoreBrokenPipes
        let agraph = try Self.agraphPath()
        let stdin = try PipeEnds(), stdout = try PipeEnds(), stderr = try PipeEnds()
        do {
            process = try ChildProcess([agraph] + arguments, environment: environment, directory: directory,
                                       stdin: .descriptor(stdin.read), stdout: .descriptor(stdout.write),
                                       stderr: .descriptor(stderr.write))
        } catch {
            for fd in [stdin.read, stdin.write, stdout.read, stdout.write, stderr.read, stderr.write] { close(fd) }
            throw error
        }
        for fd in [stdin.read, stdout.write, stderr.write] { close(fd) }
        input = stdin.write
        startReader(stdout.read, isStderr: false)
        startReader(stderr.read, isStderr: true)
    }

    deinit { kill() }

    private func start(_ work: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Work(work))
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { raw in
            Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        if rc == 0 { threads.append(t) } else { box.release() }
    }

    private func startReader(_ fd: Int32, isStderr: Bool) {
        let output = output
        start {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = Glibc.read(fd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                output.lock.lock()
                if isStderr {
                    output.err.append(contentsOf: buffer[0..<n])
                    output.errChunks.append((Date(), output.err.count))
                } else {
                    output.out.append(contentsOf: buffer[0..<n])
                }
                output.lock.unlock()
            }
            close(fd)
            output.lock.lock()
            output.finished += 1
            output.lock.broadcast()
            output.lock.unlock()
        }
    }

    var stderr: String {
        output.lock.lock()
        defer { output.lock.unlock() }
        return String(decoding: output.err, as: UTF8.self)
    }

    var stdout: String {
        output.lock.lock()
        defer { output.lock.unlock() }
        return String(decoding: output.out, as: UTF8.self)
    }

    var isRunning: Bool { process.isRunning }

    /// When stderr first contained `text`, waiting up to `timeout` s.
    func waitForStderr(_ text: String, timeout: Double) -> Date? {
        let deadline = Date().addingTimeInterval(LiveTiming.seconds(timeout))
        let needle = Data(text.utf8)
        while true {
            // Searched under the lock: no copy of the buffer outlives it.
            output.lock.lock()
            let found: Date? = output.err.range(of: needle).map { r in
                let end = r.upperBound - output.err.startIndex
                return output.errChunks.first { $0.1 >= end }?.0 ?? Date()
            }
            output.lock.unlock()
            if let found { return found }
            if Date() > deadline { return nil }
            usleep(2_000)
        }
    }

    /// Writes `bytes` to stdin (all of them, unless agraph has exited).
    func write(_ bytes: [UInt8]) {
        Self.writeAll(input, bytes)
    }

    /// Writes `bytes` to stdin from a thread of its own (for input larger
    /// than the pipe holds); `kill()` waits for it.
    func writeInBackground(_ bytes: [UInt8]) {
        let fd = input
        start { Self.writeAll(fd, bytes) }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Writes `line` and a newline to stdin.
    func send(_ line: String) {
        write(Array((line + "\n").utf8))
    }

    /// Whether it exited within `timeout` s; then all it wrote is collected.
    func waitForExit(timeout: Double) -> Bool {
        guard process.waitUntilExit(timeout: LiveTiming.seconds(timeout)) else { return false }
        joinThreads()
        return true
    }

    var status: Int32 { process.terminationStatus }

    /// Every thread's stack of the running process, by `gdb -batch` (a
    /// diagnostic for a process that does not exit), or why not.
    func threadStacks() -> String {
        let gdb = "/usr/bin/gdb"
        guard FileManager.default.isExecutableFile(atPath: gdb) else { return "(no \(gdb) on this machine)" }
        guard process.isRunning else { return "(it has exited since)" }
        do {
            let r = try runTool(gdb, ["-p", "\(process.pid)", "-batch", "-ex", "thread apply all bt"], timeout: 120)
            return r.stdout + r.stderr
        } catch {
            return "(gdb: \(error))"
        }
    }

    /// SIGKILL if it still runs; closes stdin and waits for the threads.
    func kill() {
        if process.isRunning {
            process.send(SIGKILL)
            process.waitUntilExit()
        }
        joinThreads()
        if !inputClosed {
            inputClosed = true
            close(input)
        }
    }

    /// Once the process is gone, its pipes reach end of file (nothing else
    /// holds them): the readers finish, and a writer fails. Joins them, or
    /// leaves them be after 10 s.
    private func joinThreads() {
        output.lock.lock()
        let deadline = Date().addingTimeInterval(10)
        while output.finished < 2 && output.lock.wait(until: deadline) {}
        let finished = output.finished == 2
        output.lock.unlock()
        for t in threads {
            if finished { pthread_join(t, nil) } else { pthread_detach(t) }
        }
        threads = []
    }

    /// `agraph` from the same build folder as this test bundle (or `$AGRAPH`).
    static func agraphPath() throws -> String {
        let (path, searched) = locateAgraph()
        guard let path else {
            throw XCTSkip("agraph not found next to the test bundle (searched \(searched)); build it into the same scratch path first: swift build --product agraph")
        }
        return path
    }
}
