// agraph-bench parallel: one live graph of two independent heavy branches
// rendered on JACK's process thread alone against two threads (the graph's
// "threads"), taking turns. See docs/performance.md, "One graph, several cores".
import ArgumentParser
import AudioGraph
import AudioGraphJACK
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct ParallelBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parallel",
        abstract: "Two independent binaural renders of N objects each on a dummy jackd: cycle time on one thread against two, taking turns.",
        discussion: """
            The graph: two branches, each endless white noise of --objects channels → binaural (one \
            position per channel, the default SOFA set, partition 128) → jack-out of its own; the \
            branches share nothing. It runs as `agraph-bench live` runs a row (a dummy jackd at 48 kHz, \
            period --period, warm-up, then --seconds measured): callback time from the in-callback \
            clock (median, p99, max), process CPU per cycle (all threads, schedstat), per thread. \
            Each round runs every --threads value in turn (A B A B …); the summary gives, per round, the \
            median callback of each thread count as a ratio to one thread's, and the median of those \
            ratios, with the load average before and after.
            """)

    @Option(help: "Seconds measured per row (after warm-up).") var seconds: Double = 5
    @Option(help: "Warm-up seconds before each row.") var warmup: Double = 1
    @Option(help: "Rounds (each runs every thread count once, in turn).") var rounds: Int = 3
    @Option(help: "Period in frames.") var period: Int = 128
    @Option(help: "Objects (channels) per branch.") var objects: Int = 16
    @Option(help: "Thread counts to compare, comma-separated; the first is the reference.") var threads: String = "1,2"
    @Flag(help: "Run the dummy jackd real-time (-R: SCHED_FIFO process thread; the helpers get its priority); needs the right to SCHED_FIFO.")
    var realtime = false
    @Option(help: ArgumentHelp("A CPU wake-up latency request held for the whole run, as agraph-bench live: 0 (the default, when it can be held) keeps idle CPUs polling, so a helper woken within the cycle starts at once; none: no request.", valueName: "µs|none"))
    var cpuDMALatency: String?
    @Option(help: "Blocks per in-process turn (engine.render alone, no JACK); 0 skips that part.") var blocks: Int = 4000

    func threadList() throws -> [Int] {
        let xs = threads.split(separator: ",").map { Int($0.trimmingCharacters()) }
        guard !xs.isEmpty, xs.allSatisfy({ $0 != nil && (1...GraphThreads.maximum).contains($0!) }) else {
            throw ValidationError("--threads must be comma-separated counts from 1 to \(GraphThreads.maximum)")
        }
        return xs.map { $0! }
    }

    func validate() throws {
        _ = try threadList()
        if !(seconds >= 1 && seconds <= 600) { throw ValidationError("--seconds must be in [1, 600]") }
        if !(warmup >= 0 && warmup <= 60) { throw ValidationError("--warmup must be in [0, 60]") }
        if !(1...50).contains(rounds) { throw ValidationError("--rounds must be in 1…50") }
        if !(16...8192).contains(period) { throw ValidationError("--period must be in 16…8192") }
        if !(1...64).contains(objects) { throw ValidationError("--objects must be in 1…64") }
        if !(0...1_000_000).contains(blocks) { throw ValidationError("--blocks must be in 0…1000000") }
    }

    /// The two-branch graph at `threads` threads.
    func graphJSON(threads: Int) -> String {
        let positions = (0..<objects).map { i in
            #"{"azimuth": \#(-180 + Double(i) * 360 / Double(objects)), "elevation": \#((i % 3 - 1) * 20)}"#
        }.joined(separator: ", ")
        var nodes: [String] = []
        var links: [String] = []
        for k in 1...2 {
            nodes.append(#"{"id": "src\#(k)", "type": "test-tone", "params": {"waveform": "white", "level": -30, "channels": \#(objects)}}"#)
            nodes.append(#"{"id": "bin\#(k)", "type": "binaural", "params": {"positions": [\#(positions)]}}"#)
            nodes.append(#"{"id": "out\#(k)", "type": "jack-out", "params": {"ports": ["b\#(k)_L", "b\#(k)_R"]}}"#)
            links.append(#"{"from": "src\#(k)", "to": "bin\#(k)"}, {"from": "bin\#(k)", "to": "out\#(k)"}"#)
        }
        return #"{"format": "agraph/1", "name": "parallel", "sampleRate": 48000, "threads": \#(threads), "nodes": [\#(nodes.joined(separator: ", "))], "links": [\#(links.joined(separator: ", "))]}"#
    }

    /// The same graph compiled as live (buses for 8192 frames, jack-out
    /// unbound), `engine.render(frames: period)` alone on this thread and
    /// the helpers, `blocks` blocks per turn, the counts taking turns over
    /// the rounds: wall time and process CPU per block.
    func renderAlone(counts: [Int]) {
        print("")
        // With --realtime, this thread and the helpers run SCHED_FIFO, as
        // JACK's process thread and the helpers would.
        var before = sched_param(), policy: Int32 = 0
        pthread_getschedparam(pthread_self(), &policy, &before)
        if realtime {
            var p = sched_param()
            p.sched_priority = Self.realtimePriority
            if pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0 { print("  (SCHED_FIFO refused: ordinary scheduling)") }
        }
        defer { pthread_setschedparam(pthread_self(), policy, &before) }
        print("in-process: engine.render(frames: \(period)) alone, \(blocks) blocks per turn after 200 warm-up, \(rounds) round\(rounds == 1 ? "" : "s")"
              + (realtime ? ", SCHED_FIFO \(Self.realtimePriority)" : ", ordinary scheduling"))
        var walls = [[Double]](repeating: [], count: counts.count)
        var cpus = [[Double]](repeating: [], count: counts.count)
        for _ in 0..<rounds {
            for (j, t) in counts.enumerated() {
                let binder = JACKPortBinder()
                guard case .success(let g) = GraphValidator(registry: .builtIn.addingJACK(binder))
                        .validate(bytes: Array(graphJSON(threads: t).utf8), file: "parallel.json", directory: "/tmp"),
                      let compiled = try? GraphCompiler.compile(g, maxFrames: RunningGraph.Options().maxFrames, live: true) else {
                    print("  FAILED to compile the graph")
                    return
                }
                let engine = compiled.engine
                let helpers = t > 1 ? try? RenderThreads(helpers: t - 1, realtimePriority: realtime ? Self.realtimePriority : nil) : nil
                engine.useRenderThreads(helpers)
                for _ in 0..<200 { engine.render(frames: period) }
                let cpu0 = CPUTime.process("self"), t0 = MonotonicClock.nanoseconds()
                for _ in 0..<blocks { engine.render(frames: period) }
                let t1 = MonotonicClock.nanoseconds(), cpu1 = CPUTime.process("self")
                helpers?.stop()
                walls[j].append(Double(t1 - t0) / Double(blocks) / 1000)
                if let a = cpu0, let b = cpu1 { cpus[j].append(Double((b - a).ns) / Double(blocks) / 1000) }
            }
        }
        func median(_ xs: [Double]) -> Double { xs.isEmpty ? .nan : xs.sorted()[xs.count / 2] }
        for (j, t) in counts.enumerated() {
            let ratio = j == 0 ? "" : "; × \(formatFixed(median(zip(walls[j], walls[0]).map { $0 / $1 }), 2)) wall, × \(formatFixed(median(zip(cpus[j], cpus[0]).map { $0 / $1 }), 2)) CPU against \(counts[0])"
            print("  threads \(t): \(formatFixed(median(walls[j]), 1)) µs per block wall (rounds: \(walls[j].map { formatFixed($0, 1) }.joined(separator: ", "))), "
                  + "process CPU \(formatFixed(median(cpus[j]), 1)) µs per block\(ratio)")
        }
        print("")
    }

    /// The in-process part's priority with --realtime (a JACK client's
    /// process thread under `jackd -R -P 70` runs at 65 or so).
    static let realtimePriority: Int32 = 65

    static func loadAverage() -> String {
        (readText("/proc/loadavg") ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }

    func run() throws {
        let counts = try threadList()
        let name = "agraph-bench-par-\(getpid())-\(period)"
        let server: JACKServer
        do {
            server = try JACKServer(name: name, driver: "dummy", sampleRate: Live.sampleRate, period: period, realtime: realtime)
        } catch {
            print("cannot start jackd: \(error)")
            throw ExitCode.failure
        }
        defer { server.stop() }
        let observer = try Observer(server: name)
        defer { observer.close() }
        usleep(300_000)
        let budget = Double(period) / Double(Live.sampleRate) * 1e6
        print("agraph-bench parallel: 2 branches × (white noise, \(objects) channels → binaural → jack-out), dummy jackd "
              + "\(Live.sampleRate / 1000) kHz\(realtime ? " real-time" : ", not real-time"), period \(period) (\(formatFixed(budget, 1)) µs per cycle), "
              + "\(formatFixed(seconds, 0)) s per row after \(formatFixed(warmup, 1)) s warm-up, \(rounds) round\(rounds == 1 ? "" : "s") of threads \(counts.map(String.init).joined(separator: ", "))")
        print("machine: \(machineDescription()); load average before: \(Self.loadAverage())")
        let latencyRequest = try holdCPULatency(cpuDMALatency)
        defer { latencyRequest?.release() }
        if blocks > 0 { renderAlone(counts: counts) }
        let window = Window(seconds: seconds, warmup: warmup, period: period, jackdPID: server.process.processIdentifier)
        var bench = try Live.parse([])
        bench.noExternal = true
        var rows: [LiveRow] = []
        /// Per round: the median callback (µs) and process CPU per cycle of each count.
        var medians: [[Double]] = []
        var cpus: [[Double]] = []
        var failed = false
        for round in 1...rounds {
            var m: [Double] = [], c: [Double] = []
            for t in counts {
                let row = bench.runAudioGraph(name: "threads \(t), round \(round)", json: graphJSON(threads: t),
                                              clientName: "agraph-bench-par", directory: "/tmp", server: name, window: window)
                bench.progress(row)
                if row.note.hasPrefix("FAILED") { failed = true }
                m.append(row.callback.isEmpty ? .nan : percentile(row.callback.sorted(), 50) / 1000)
                c.append(row.processCPU ?? .nan)
                rows.append(row)
            }
            medians.append(m)
            cpus.append(c)
        }
        print("")
        printLiveTable(period: period, rows: rows, window: window)
        print("")
        print("load average after: \(Self.loadAverage())")
        for (j, t) in counts.enumerated().dropFirst() {
            let ratios = medians.map { $0[j] / $0[0] }.filter(\.isFinite).sorted()
            let cpuRatios = cpus.map { $0[j] / $0[0] }.filter(\.isFinite).sorted()
            let perRound = medians.enumerated().map { r, m in "round \(r + 1): \(formatFixed(m[0], 1)) → \(formatFixed(m[j], 1)) µs" }
            print("threads \(t) against \(counts[0]): median callback × \(ratios.isEmpty ? "-" : formatFixed(ratios[ratios.count / 2], 2)) "
                  + "(\(perRound.joined(separator: "; "))); process CPU per cycle × \(cpuRatios.isEmpty ? "-" : formatFixed(cpuRatios[cpuRatios.count / 2], 2))")
        }
        if failed { throw ExitCode.failure }
    }
}
