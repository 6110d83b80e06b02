// agraph-bench cold: the live 8-source graph's `engine.render`, offline,
// after the machine's caches and TLBs have been emptied before every block.
//
// Live, the callback's data, code and page-table entries leave the caches
// in the 2.67 ms between cycles (jackd, other processes, the VM's
// neighbours), and how far they leave varies with the host: wall time on a
// shared machine moves by 2x between runs. This bench empties the caches
// the same way before every block, so changes to what a cycle touches can
// be compared in one process, without JACK.
import ArgumentParser
import Foundation
import AudioGraph
import AudioGraphCore
import AudioGraphJACK
#if canImport(Glibc)
import Glibc
#endif

struct ColdBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cold",
        abstract: "engine.render of the live bench graph with the caches and TLBs emptied before every block (offline, no JACK).")

    @Option(help: "Source counts, comma-separated.") var sources: String = "1,8"
    @Option(help: "Channels of each test-tone.") var toneChannels: Int = 2
    @Option(help: "Block size in frames.") var block: Int = 128
    @Option(help: "Waveform of the tones (sine as live; others to see what a source costs).") var waveform: String = "sine"
    @Option(help: "Render this graph file instead of the bench graph (its rows are labelled by --sources' first count).")
    var graph: String?
    @Option(help: "Blocks measured per row.") var blocks: Int = 600
    @Option(help: "MiB written before each block (more than the last-level cache empties it).") var evictMiB: Int = 64
    @Flag(help: "Also run other code before each block (the graph validator on the bench graph), which empties the instruction caches and branch predictors as other processes do live.")
    var evictCode = false
    @Option(help: "Prefetch distances to compare (0: all of the cycle's hot lines at its start; k: the first k steps' at the start, then k steps ahead), comma-separated.")
    var prefetchDistances: String = "0,1"
    var distances: [Int] { prefetchDistances.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    @Option(help: "Rounds: the rows alternate this many times; the table reports each row's median over all its blocks.")
    var rounds: Int = 3

    func run() throws {
        printLoad("at start")
        let cpu0 = processCPUSeconds(), wall0 = MonotonicClock.seconds()
        defer {
            print("whole run: wall \(formatFixed(MonotonicClock.seconds() - wall0, 2)) s, CPU (user + system, this process) \(formatFixed(processCPUSeconds() - cpu0, 2)) s")
            printLoad("at end")
        }
        var counts = sources.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        if graph != nil { counts = Array(counts.prefix(1)) }
        let bytes = max(evictMiB, 1) << 20
        let junk = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes)
        defer { junk.deallocate() }
        junk.initialize(repeating: 0, count: bytes)
        struct Case { var sources: Int; var prefetch: Bool; var distance = 0; var plain = false }
        let cases = counts.flatMap { n in
            [Case(sources: n, prefetch: false)] + distances.map { Case(sources: n, prefetch: true, distance: $0) }
        } + [Case(sources: Job.frequencies.count, prefetch: false, plain: true)]
        // The plain client's state and "port buffers".
        let voices = Job.frequencies.count
        let re = UnsafeMutablePointer<Double>.allocate(capacity: voices), im = UnsafeMutablePointer<Double>.allocate(capacity: voices)
        let cw = UnsafeMutablePointer<Double>.allocate(capacity: voices), sw = UnsafeMutablePointer<Double>.allocate(capacity: voices)
        let ports = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 8192)
        defer { re.deallocate(); im.deallocate(); cw.deallocate(); sw.deallocate(); ports.deallocate() }
        ports.initialize(repeating: 0, count: 2 * 8192)
        for (k, f) in Job.frequencies.enumerated() {
            let w = 2 * Double.pi * f / Double(Live.sampleRate)
            re[k] = 1; im[k] = 0; cw[k] = cos(w); sw[k] = sin(w)
        }
        var peak: Float = 0
        var engines: [Engine] = []
        for c in cases where !c.plain {
            let binder = JACKPortBinder()
            let fileBytes = graph.flatMap { FileManager.default.contents(atPath: $0) }.map { Array($0) }
            guard case .success(let g) = GraphValidator(registry: .builtIn.addingJACK(binder))
                .validate(bytes: fileBytes ?? Array(liveGraphJSON(sources: c.sources, toneChannels: toneChannels).replacingOccurrences(of: "\"sine\"", with: "\"\(waveform)\"").utf8), file: "live.json", directory: "/tmp")
            else { throw ValidationError("the bench graph does not validate") }
            let engine = try GraphCompiler.compile(g, maxFrames: 8192).engine
            engine.prefetchDistance = c.prefetch ? c.distance : 0
            engines.append(engine)
        }
        var samples = Array(repeating: [Double](), count: cases.count)
        let graphBytes = Array(liveGraphJSON(sources: 8, toneChannels: toneChannels).utf8)
        let otherBinder = JACKPortBinder()
        var sink = 0
        for _ in 0..<max(rounds, 1) {
            for (k, c) in cases.enumerated() {
                let engine = engines[min(k, engines.count - 1)]
                for b in 0..<(blocks / max(rounds, 1) + 10) {
                    if evictCode, case .success(let g) = GraphValidator(registry: .builtIn.addingJACK(otherBinder))
                        .validate(bytes: graphBytes, file: "other.json", directory: "/tmp") {
                        sink &+= g.nodes.count
                    }
                    var j = 0
                    while j < bytes { junk[j] &+= 1; j += 64 }
                    let t0 = MonotonicClock.nanoseconds()
                    if c.plain {
                        peak = max(peak, PlainClient.render(re: re, im: im, c: cw, s: sw, count: voices, gain: 1 / Float(voices),
                                                            left: ports, right: ports + 8192, frames: block))
                    } else {
                        if c.prefetch { engine.prefetchHotMemory() }
                        engine.render(frames: block)
                    }
                    let t = Double(MonotonicClock.nanoseconds() - t0)
                    if b >= 10 { samples[k].append(t) }
                }
            }
        }
        if sink == -1 || peak > 1e9 { print(sink, peak) }
        print("engine.render, block \(block), \(evictMiB) MiB written before each block; median (p10–p90) µs over \(samples.first?.count ?? 0) blocks:")
        for (k, c) in cases.enumerated() {
            let s = samples[k].sorted()
            func at(_ q: Double) -> Double { s.isEmpty ? .nan : s[min(s.count - 1, Int(q * Double(s.count)))] / 1000 }
            if c.plain {
                print("  the plain client's loop (\(voices) phasors, two buffers): \(formatFixed(at(0.5), 2)) (\(formatFixed(at(0.1), 2))–\(formatFixed(at(0.9), 2)))")
                continue
            }
            let label = graph.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "\(c.sources) source\(c.sources == 1 ? "" : "s")"
            print("  \(label), \(c.prefetch ? "prefetch, distance \(c.distance) (\(engines[min(k, engines.count - 1)].hotLineTotal) lines)" : "no prefetch"): "
                  + "\(formatFixed(at(0.5), 2)) (\(formatFixed(at(0.1), 2))–\(formatFixed(at(0.9), 2)))")
        }
    }
}
