// agraph-bench reload: hot reload of a 32-node graph on a dummy jackd: time
// from the command to the swap, and the process callback's worst time in
// the cycles around each reload against its median. See docs/performance.md.
import ArgumentParser
import AudioGraph
import AudioGraphJACK
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct ReloadBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Hot reload of a 32-node graph live: command → swap, callback worst vs median.",
        discussion: """
            A dummy jackd of its own (jackd -n agraph-bench-reload-<pid> --no-realtime -d dummy -r 48000 -p P). \
            The graph: 15 sines → 15 filters → a 15-input mixer → jack-out (32 nodes). Each reload swaps \
            between two files that differ in one filter's type (a non-live parameter: that filter, the \
            mixer and the jack-out are made anew, 29 nodes kept) with the default 20 ms crossfade. Per \
            reload: the time from the call to the callback taking the new engine; the callback's durations \
            from the call until 100 ms after the crossfade ended, their maximum (the crossfade's cycles \
            render the retired nodes too), against the median of every cycle measured between reloads; \
            and the swap alone (the callback taking the new engine and port table).
            """)

    @Option(help: "Reloads.") var reloads: Int = 50
    @Option(help: "Period in frames.") var period: Int = 256
    @Option(help: "Seconds between reloads.") var gap: Double = 0.3

    func validate() throws {
        guard (1...10_000).contains(reloads) else { throw ValidationError("--reloads must be 1…10000") }
        guard (16...8192).contains(period) else { throw ValidationError("--period must be 16…8192") }
        guard gap >= 0.05, gap <= 60 else { throw ValidationError("--gap must be 0.05…60 s") }
    }

    static func graphJSON(filterType: String) -> String {
        var nodes: [String] = []
        var links: [String] = []
        for i in 0..<15 {
            nodes.append(#"{"id": "t\#(i)", "type": "test-tone", "params": {"frequency": \#(200 + 97 * i), "level": -30, "channels": 2}}"#)
            let type = i == 0 ? filterType : "low-pass"
            nodes.append(#"{"id": "f\#(i)", "type": "filter", "params": {"type": "\#(type)", "frequency": 4000}}"#)
            links.append(#"{"from": "t\#(i)", "to": "f\#(i)"}"#)
            links.append(#"{"from": "f\#(i)", "to": "mix:in\#(i)"}"#)
        }
        nodes.append(#"{"id": "mix", "type": "mixer", "params": {"inputs": 15}}"#)
        nodes.append(#"{"id": "out", "type": "jack-out", "params": {}}"#)
        links.append(#"{"from": "mix", "to": "out"}"#)
        return #"{"format": "agraph/1", "name": "reload-bench", "sampleRate": 48000, "nodes": [\#(nodes.joined(separator: ", "))], "links": [\#(links.joined(separator: ", "))]}"#
    }

    func run() throws {
        printLoad("at start")
        defer { printLoad("at end") }
        let name = "agraph-bench-reload-\(getpid())"
        let server = try JACKServer(name: name, driver: "dummy", sampleRate: 48000, period: period)
        defer { server.stop() }
        let binder = JACKPortBinder()
        let registry = NodeRegistry.builtIn.addingJACK(binder)
        func validated(_ type: String) throws -> ValidatedGraph {
            try GraphValidator(registry: registry).validate(bytes: Array(Self.graphJSON(filterType: type).utf8),
                                                           file: "reload-bench.json", directory: "/tmp").get()
        }
        let graphs = [try validated("low-pass"), try validated("high-pass")]
        print("graph: \(graphs[0].nodes.count) nodes; period \(period); \(reloads) reloads, 20 ms crossfade")
        var options = RunningGraph.Options()
        options.server = .external
        options.serverName = name
        options.clientName = "reload-bench"
        options.measureCycles = true
        let live = try RunningGraph(graph: graphs[0], binder: binder, options: options)
        defer { live.stop() }
        usleep(1_000_000)
        _ = live.takeCycleTimes()
        var between: [UInt32] = []
        var toSwap: [Double] = []
        var worst: [UInt32] = []
        var kept = 0
        var swapOnly: [UInt64] = []
        var xrunsAround = 0
        var aroundSeconds = 0.0
        let xrunsBefore = live.status().xruns
        for r in 0..<reloads {
            usleep(UInt32(gap * 1e6))
            between += live.takeCycleTimes()
            let x0 = live.status().xruns
            let report = try live.reload(graph: graphs[(r + 1) % 2], crossfadeMs: 20)
            while live.isReloading { usleep(1000) }
            usleep(100_000)
            let around = live.takeCycleTimes()
            let x1 = live.status().xruns
            xrunsAround += x1 - x0
            aroundSeconds += Double(around.count * period) / 48000
            toSwap.append(report.secondsToSwap)
            swapOnly.append(live.lastSwapNanoseconds)
            worst.append(around.max() ?? 0)
            kept = report.keptCount
        }
        let xruns = live.status().xruns - xrunsBefore
        between.sort()
        let sortedSwap = toSwap.sorted()
        let median = percentile(between, 50)
        let sortedWorst = worst.sorted()
        func us(_ ns: Double) -> String { String(format: "%.1f", ns / 1000) }
        print("nodes kept per reload: \(kept) of \(graphs[0].nodes.count)")
        print("command → swap: median \(String(format: "%.2f", sortedSwap[sortedSwap.count / 2] * 1000)) ms, max \(String(format: "%.2f", (sortedSwap.last ?? 0) * 1000)) ms")
        print("callback between reloads: median \(us(median)) µs, p99 \(us(percentile(between, 99))), max \(us(Double(between.last ?? 0))) µs over \(between.count) cycles")
        print("callback worst around each reload (call → 100 ms after the fade): median \(us(Double(sortedWorst[sortedWorst.count / 2]))) µs, max \(us(Double(sortedWorst.last ?? 0))) µs")
        let sortedSwapOnly = swapOnly.sorted()
        print("the swap itself in the callback (take the new engine and port table): median \(us(Double(sortedSwapOnly[sortedSwapOnly.count / 2]))) µs, max \(us(Double(sortedSwapOnly.last ?? 0))) µs")
        print("xruns: \(xruns) in all; \(xrunsAround) in the windows around the reloads (\(String(format: "%.1f", aroundSeconds)) s), \(xruns - xrunsAround) between them (\(String(format: "%.1f", Double(between.count * period) / 48000)) s)")
    }
}
