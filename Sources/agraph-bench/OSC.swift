// agraph-bench osc: the OSC set round trip on a dummy jackd. See
// docs/performance.md, "OSC control".
import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphOSC
#if canImport(Glibc)
import Glibc
#endif

struct OSCBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "osc",
        abstract: "OSC round trips against a running graph: /agraph/set → applied by the audio thread → /agraph/ack; /agraph/get → /agraph/value.",
        discussion: """
            For each period a dummy jackd of its own is started (jackd -n agraph-bench-osc-<pid>-<period> \
            --no-realtime -d dummy -r 48000 -p P) and a graph (test-tone → gain g → jack-out) runs on it in \
            this process, with an OSCServer on 127.0.0.1 (a free port). A UDP socket of this process sends one \
            message at a time and waits for its reply; the time is from just before sendto to just after the \
            reply's recv (CLOCK_MONOTONIC). set: /agraph/set g.gain X (X alternating 0 and -1 dB), answered \
            by /agraph/ack once the audio thread has taken the change off the parameter queue (at the start \
            of the cycle that applies it); so the figure includes waiting for the next JACK cycle (up to one \
            period; each set is sent after a random pause of 0 to 1 period, so it lands at a random phase \
            of the cycle) and the server's 0.2 ms check of the queue while an acknowledgement is pending. get: \
            /agraph/get g.gain, answered at once: the OSC path alone (two loopback datagrams, liblo's \
            parsing and writing, the control surface). The callback's own duration is recorded during the \
            set run, for the effect of the traffic on the audio thread.
            """)

    @Option(help: "Round trips per measurement.") var messages = 10_000
    @Option(help: "Periods in frames, comma-separated.") var periods = "64,256"
    @Option(help: "Round trips before measuring.") var warmup = 200

    static let sampleRate = 48000

    func validate() throws {
        if !(100...1_000_000).contains(messages) { throw ValidationError("--messages must be in 100…1000000") }
        if !(0...100_000).contains(warmup) { throw ValidationError("--warmup must be in 0…100000") }
        let xs = periods.split(separator: ",").map { Int($0.trimmingCharacters()) }
        if xs.isEmpty || !xs.allSatisfy({ $0 != nil && (16...8192).contains($0!) }) {
            throw ValidationError("--periods must be comma-separated integers in 16…8192")
        }
    }

    func run() throws {
        let periodList = periods.split(separator: ",").compactMap { Int($0.trimmingCharacters()) }
        print("agraph-bench osc: \(messages) round trips per row, dummy jackd at 48 kHz, server and client on 127.0.0.1")
        print("machine: \(machineDescription()); jackd \(jackdVersion())")
        print("")
        var failed = false
        for period in periodList {
            let name = "agraph-bench-osc-\(getpid())-\(period)"
            let server: JACKServer
            do {
                server = try JACKServer(name: name, driver: "dummy", sampleRate: Self.sampleRate, period: period)
            } catch {
                print("period \(period): cannot start jackd: \(error)")
                throw ExitCode.failure
            }
            defer { server.stop() }
            do { try measure(period: period, server: name) } catch {
                print("period \(period): FAILED: \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }

    func measure(period: Int, server: String) throws {
        let json = """
            {"format": "agraph/1", "name": "bench-osc", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 2}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "out"}]}
            """
        let binder = JACKPortBinder()
        let graph = try GraphValidator(registry: .builtIn.addingJACK(binder))
            .validate(bytes: Array(json.utf8), file: "bench-osc.json", directory: "/tmp").get()
        var options = RunningGraph.Options()
        options.server = .external
        options.serverName = server
        options.clientName = "agraph-bench-osc"
        options.measureCycles = true
        let live = try RunningGraph(graph: graph, binder: binder, options: options)
        defer { live.stop() }
        let osc = try OSCServer(control: live.control, port: 0)
        defer { osc.stop() }
        let client = try BenchUDPClient(serverPort: osc.port)
        usleep(300_000)

        let periodMs = Double(period) / Double(Self.sampleRate) * 1000
        print("period \(period) frames (\(formatFixed(periodMs, 2)) ms), OSC on \(osc.url)")

        // set → ack
        var gain: Float = 0
        func setOnce() throws -> UInt64 {
            gain = gain == 0 ? -1 : 0
            let bytes = OSCPacket.encode(OSCMessage("/agraph/set", [.string("g.gain"), .float(gain)]))
            return try client.roundTrip(bytes, reply: "/agraph/ack", check: { $0.arguments.count == 3 && $0.arguments[1] == .float(gain) })
        }
        for _ in 0..<warmup { _ = try setOnce() }
        _ = live.takeCycleTimes()
        let xrunsBefore = live.status().xruns
        var set: [UInt64] = []
        set.reserveCapacity(messages)
        // A pause of a random part of a period before each message: a
        // controller's messages come at any phase of the JACK cycle, where
        // sending the next one as soon as an acknowledgement arrives (just
        // after a cycle began) would wait nearly a whole period every time.
        var rng = SystemRandomNumberGenerator()
        let periodNanos = UInt64(period) * 1_000_000_000 / UInt64(Self.sampleRate)
        for _ in 0..<messages {
            var t = timespec(tv_sec: 0, tv_nsec: Int(UInt64.random(in: 0..<periodNanos, using: &rng)))
            nanosleep(&t, nil)
            set.append(try setOnce())
        }
        let cycles = live.takeCycleTimes().sorted()
        let xruns = live.status().xruns - xrunsBefore

        // get → value
        let getBytes = OSCPacket.encode(OSCMessage("/agraph/get", [.string("g.gain")]))
        for _ in 0..<warmup { _ = try client.roundTrip(getBytes, reply: "/agraph/value") }
        var get: [UInt64] = []
        get.reserveCapacity(messages)
        for _ in 0..<messages { get.append(try client.roundTrip(getBytes, reply: "/agraph/value")) }

        func row(_ name: String, _ xs: [UInt64]) {
            let s = xs.sorted()
            let us = { (p: Double) -> String in formatFixed(percentileNanos(s, p) / 1000, 1) }
            let mean = Double(s.reduce(0, +)) / Double(s.count) / 1000
            print("  \(name)  median \(us(0.5)) µs   p99 \(us(0.99)) µs   max \(formatFixed(Double(s.last ?? 0) / 1000, 1)) µs   mean \(formatFixed(mean, 1)) µs   (n=\(s.count))")
        }
        row("set → ack  ", set)
        row("get → value", get)
        if !cycles.isEmpty {
            print("  callback during the set run: median \(formatFixed(percentile(cycles, 0.5) / 1000, 1)) µs   p99 \(formatFixed(percentile(cycles, 0.99) / 1000, 1)) µs   max \(formatFixed(Double(cycles.last ?? 0) / 1000, 1)) µs   (\(cycles.count) cycles); xruns \(xruns)")
        }
        print("")
    }
}

/// The `p` quantile (0…1) of sorted nanoseconds.
func percentileNanos(_ sorted: [UInt64], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return Double(sorted[min(Int((Double(sorted.count - 1) * p).rounded()), sorted.count - 1)])
}

/// One UDP socket on 127.0.0.1 that sends a datagram to the server and
/// waits for the reply. [any-thread; one thread]
final class BenchUDPClient {
    let fd: Int32
    var server = sockaddr_in()
    var buffer = [UInt8](repeating: 0, count: 65_536)

    struct Failure: Error, CustomStringConvertible { var description: String }

    init(serverPort: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        server.sin_family = sa_family_t(AF_INET)
        server.sin_port = UInt16(serverPort).bigEndian
        server.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    }

    deinit { close(fd) }

    /// Nanoseconds from sending `bytes` to receiving the reply to `reply`
    /// that passes `check` (other datagrams are skipped); fails after 2 s.
    func roundTrip(_ bytes: [UInt8], reply: String, check: (OSCMessage) -> Bool = { _ in true }) throws -> UInt64 {
        let start = MonotonicClock.nanoseconds()
        let sent = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &server) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == bytes.count else { throw Failure(description: "sendto: \(String(cString: strerror(errno)))") }
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let waited = MonotonicClock.nanoseconds() - start
            guard waited < 2_000_000_000, poll(&p, 1, Int32(2000 - waited / 1_000_000)) > 0 else {
                throw Failure(description: "no \(reply) within 2 s")
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            let end = MonotonicClock.nanoseconds()
            guard n > 0, let messages = try? OSCPacket.decode(Array(buffer[0..<n])) else { continue }
            if let error = messages.first(where: { $0.address == "/agraph/error" }) { throw Failure(description: "\(error)") }
            if messages.contains(where: { $0.address == reply && check($0) }) { return end - start }
        }
    }
}
