// agraph-bench live: AudioGraph inside a JACK client on a dummy jackd,
// against a plain in-process JACK client and (when installed) ecasound and
// GStreamer. See docs/performance.md, "Live (JACK)".
import ArgumentParser
import AudioGraph
import AudioGraphJACK
import CJack
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct Live: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "N sines → mixer → jack-out on a dummy jackd per period; CPU per cycle, callback time, DSP load, xruns.",
        discussion: """
            For each period a dummy jackd of its own is started (jackd -n agraph-bench-<pid>-<period> \
            --no-realtime -d dummy -r 48000 -p P). Each configuration runs alone on it, warms up, then is \
            measured over --seconds. Callback: the process callback's own duration, from CLOCK_MONOTONIC \
            read inside it. Process CPU: the client process's CPU time (all threads, /proc/PID/task/*/schedstat, \
            cross-checked with /proc/PID/stat utime+stime in clock ticks) divided by the cycles in the \
            window (seconds × 48000 / period). JACK thread: the CPU of the client's JACK process thread \
            alone (wake-up + callback). jackd: the server's own CPU per cycle, for context. DSP: jack_cpu_load \
            sampled each second, averaged. ecasound and gst-launch-1.0 run when installed. --chain adds a \
            row for a processing chain: a 60 s 5.1 float WAV at 44.1 kHz (tones, written first by the \
            in-process renderer) looping through file (resample: native, a 44.1 kHz rate island) → \
            resample (libsoxr, high) → downmix (Lo/Ro to stereo) → limiter (-6 dBTP, so it works) → \
            meter → jack-out.
            """)

    @Option(help: "Seconds measured per configuration (after warm-up).") var seconds: Double = 20
    @Option(help: "Periods in frames, comma-separated.") var periods: String = "64,128"
    @Option(help: "Source counts for AudioGraph, comma-separated.") var sources: String = "1,8,32"
    @Option(help: "Warm-up seconds before each measurement.") var warmup: Double = 1
    @Option(help: "RunningGraph.Options.maxFrames (buses are sized for it); default: RunningGraph's own (8192), as agraph run.")
    var maxFrames: Int?
    @Option(help: "Channels of each test-tone (1: mono sines, which the mixer spreads to both outputs, as the plain client computes one sine per oscillator; 2: stereo tones).")
    var toneChannels: Int = 2
    @Option(help: "Rounds of the AudioGraph rows and the plain client, alternating (A, plain, A, plain…): the callback ratio is then the median of the rounds' ratios, which a shared machine's drift moves less than one pair. The table shows round 1.")
    var rounds: Int = 1
    @Option(help: "A graph file to run as a row of its own (repeatable; its jack-out ports stay unconnected).")
    var graph: [String] = []
    @Option(help: "Prefetch the engine's hot memory at the start of each cycle: on, off, or both (each AudioGraph row run both ways, alternating).")
    var prefetch: String = "on"
    @Flag(help: "Run the dummy jackd realtime (-R -P 70: SCHED_FIFO process threads, as in a studio) instead of --no-realtime; needs the right to SCHED_FIFO.")
    var realtime = false
    @Option(help: ArgumentHelp("A CPU wake-up latency request held for the whole run (/dev/cpu_dma_latency, as agraph run --cpu-dma-latency; cyclictest holds 0 by default too): 0 keeps idle CPUs polling, so each cycle starts warm; every row runs under it. none: no request (idle CPUs may halt between cycles: on a VM every cycle then starts cold). Default 0; when the default cannot be held (no right to the device), the run goes on without it and says so.", valueName: "µs|none"))
    var cpuDMALatency: String?
    @Flag(help: "Skip ecasound and GStreamer even when installed.") var noExternal = false
    @Flag(help: "Skip the jackd-alone baseline row.") var noBaseline = false
    @Flag(help: "Add the chain row: 44.1 kHz 5.1 file → resample → downmix → limiter → meter → jack-out.") var chain = false

    static let sampleRate = 48000

    func parsedList(_ s: String, _ what: String, _ range: ClosedRange<Int>) throws -> [Int] {
        let xs = s.split(separator: ",").map { Int($0.trimmingCharacters()) }
        guard !xs.isEmpty, xs.allSatisfy({ $0 != nil && range.contains($0!) }) else {
            throw ValidationError("--\(what) must be comma-separated integers in \(range.lowerBound)…\(range.upperBound)")
        }
        return xs.map { $0! }
    }

    func validate() throws {
        if !(seconds >= 1 && seconds <= 3600) { throw ValidationError("--seconds must be in [1, 3600]") }
        if !(warmup >= 0 && warmup <= 60) { throw ValidationError("--warmup must be in [0, 60]") }
        _ = try parsedList(periods, "periods", 16...8192)
        _ = try parsedList(sources, "sources", 1...64)
        if !(1...2).contains(toneChannels) { throw ValidationError("--tone-channels must be 1 or 2") }
        if !(1...50).contains(rounds) { throw ValidationError("--rounds must be in 1…50") }
    }

    func run() throws {
        let periodList = try parsedList(periods, "periods", 16...8192)
        let sourceList = try parsedList(sources, "sources", 1...64)
        let dir = try makeTempDirectory()
        defer { removeTree(dir) }
        var chainFile: String?
        if chain {
            let path = dir + "/chain-5.1-44k1.wav"
            if case .failure(let e) = renderInProcess(json: chainSourceJSON(path: path), directory: dir, blockFrames: 4096) {
                print("FAILED to write the chain's 44.1 kHz 5.1 file: \(e.message)")
                throw ExitCode.failure
            }
            chainFile = path
        }
        let ecasound = noExternal ? nil : findOnPath("ecasound")
        let gst = noExternal ? nil : findOnPath("gst-launch-1.0")
        let gstHasJack = gst != nil && gstElementExists("jackaudiosink")
        let gstHasMixer = gst != nil && gstElementExists("audiomixer")

        print("agraph-bench live: N sines → mixer → jack-out, dummy jackd at \(Self.sampleRate / 1000) kHz, "
              + "\(formatFixed(seconds, 0)) s per row after \(formatFixed(warmup, 1)) s warm-up")
        print("machine: \(machineDescription()); jackd \(jackdVersion())")
        let latencyRequest = try holdCPULatency(cpuDMALatency)
        defer { latencyRequest?.release() }
        let requestNote = latencyRequest.map { ", CPU wake-up latency \($0.microseconds) µs held" } ?? ", no CPU wake-up latency request"
        print("clock ticks: \(sysconf(Int32(_SC_CLK_TCK))) Hz (for /proc/PID/stat); schedstat: ns")
        print("")

        var summary: [(period: Int, rows: [LiveRow])] = []
        /// Per period, per round after the first: the AudioGraph rows (in
        /// `sourceList` order) and the plain client's.
        var laterRounds: [Int: [(audioGraph: [LiveRow], plain: LiveRow)]] = [:]
        for period in periodList {
            let name = "agraph-bench-\(getpid())-\(period)"
            let server: JACKServer
            do {
                server = try JACKServer(name: name, driver: "dummy", sampleRate: Self.sampleRate, period: period, realtime: realtime)
            } catch {
                print("period \(period): cannot start jackd: \(error)")
                throw ExitCode.failure
            }
            let jackdPID = server.process.processIdentifier
            defer { server.stop() }
            let observer: Observer
            do { observer = try Observer(server: name) } catch {
                print("period \(period): cannot open the observer client: \(error)")
                throw ExitCode.failure
            }
            defer { observer.close() }
            usleep(300_000)
            let window = Window(seconds: seconds, warmup: warmup, period: period, jackdPID: jackdPID)
            var rows: [LiveRow] = []

            print("period \(period) frames (\(formatFixed(Double(period) / Double(Self.sampleRate) * 1000, 2)) ms), "
                  + "jackd pid \(jackdPID), server '\(name)'")

            if !noBaseline {
                rows.append(window.measureIdle(observer: observer))
                progress(rows.last!)
            }
            for n in sourceList {
                for p in prefetchVariants {
                    rows.append(runAudioGraph(sources: n, prefetch: p, server: name, window: window))
                    progress(rows.last!)
                }
            }
            if let chainFile {
                rows.append(runAudioGraph(name: chainRowName, json: chainGraphJSON(file: chainFile), clientName: "agraph-bench-chain",
                                          directory: dir, server: name, window: window))
                progress(rows.last!)
            }
            for (k, file) in graph.enumerated() {
                rows.append(runGraphFile(file, index: k, server: name, window: window))
                progress(rows.last!)
            }
            rows.append(runPlain(server: name, window: window, observer: observer))
            progress(rows.last!)
            if rounds > 1 {
                for round in 2...rounds {
                    var these: [LiveRow] = []
                    for n in sourceList {
                        for p in prefetchVariants {
                            these.append(runAudioGraph(sources: n, prefetch: p, server: name, window: window))
                            progress(these.last!, round: round)
                        }
                    }
                    let plain = runPlain(server: name, window: window, observer: observer)
                    progress(plain, round: round)
                    laterRounds[period, default: []].append((these, plain))
                }
            }

            let ecaName = "ecasound (8 × tone,sine → jack)"
            if let ecasound {
                var args = ["-q", "-G:jack,ecasound-bench,notransport", "-f:f32_le,2,\(Self.sampleRate)"]
                for (i, f) in Job.frequencies.enumerated() {
                    args += ["-a:\(i + 1)", "-i:tone,sine,\(f),0", "-ea:12.5"]
                }
                args += ["-a:" + (1...Job.frequencies.count).map(String.init).joined(separator: ","), "-o:jack"]
                rows.append(window.measureExternal(name: ecaName, path: ecasound, args: args, server: name,
                                                   clientPrefix: "ecasound-bench", observer: observer, dir: dir))
            } else {
                rows.append(LiveRow(name: ecaName, note: "not installed"))
            }
            progress(rows.last!)

            let gstName = "GStreamer (8 × audiotestsrc → audiomixer → jackaudiosink)"
            if let gst, gstHasJack, gstHasMixer {
                var args = ["-q", "audiomixer", "name=m", "!", "audioconvert", "!",
                            "jackaudiosink", "connect=none", "server=\(name)", "client-name=gst-bench"]
                for f in Job.frequencies {
                    args += ["audiotestsrc", "wave=sine", "freq=\(f)", "volume=0.125", "!",
                             "audio/x-raw,format=F32LE,channels=2,rate=\(Self.sampleRate)", "!", "m."]
                }
                rows.append(window.measureExternal(name: gstName, path: gst, args: args, server: name,
                                                   clientPrefix: "gst-bench", observer: observer, dir: dir))
            } else if gst != nil {
                rows.append(LiveRow(name: gstName, note: "gst-launch-1.0 installed, but not "
                                    + [gstHasJack ? nil : "jackaudiosink", gstHasMixer ? nil : "audiomixer"]
                                        .compactMap { $0 }.joined(separator: ", ")
                                    + " (gstreamer1.0-plugins-good / -base)"))
            } else {
                rows.append(LiveRow(name: gstName, note: "not installed"))
            }
            progress(rows.last!)

            print("")
            printLiveTable(period: period, rows: rows, window: window)
            print("")
            summary.append((period, rows))
        }

        // engine.render alone, offline, at the same block sizes: the graph's
        // own cost without JACK, as a proxy for where callback time goes.
        print("engine.render alone (offline, same graphs, jack-out unbound so it copies nothing), best mean per block over 10 000 blocks, hot caches:")
        let liveMax = maxFrames ?? RunningGraph.Options().maxFrames
        for period in periodList {
            for mf in Set([period, liveMax]).sorted() {
                var parts: [String] = []
                for n in sourceList {
                    if let ns = offlineRenderNanos(sources: n, block: period, maxFrames: mf, toneChannels: toneChannels) {
                        parts.append("\(n) source\(n == 1 ? "" : "s") \(formatFixed(ns / 1000, 2)) µs")
                    } else {
                        parts.append("\(n): failed")
                    }
                }
                print("  block \(period), buses sized for \(mf) frames\(mf == liveMax ? " (as live)" : ""): " + parts.joined(separator: ", "))
                parts = []
                for n in sourceList {
                    if let ns = offlineRenderNanos(sources: n, block: period, maxFrames: mf, toneChannels: toneChannels, cold: true) {
                        parts.append("\(n) source\(n == 1 ? "" : "s") \(formatFixed(ns / 1000, 2)) µs")
                    }
                }
                print("    same, cold caches (8 MB written before each block; median): " + parts.joined(separator: ", "))
            }
            if let chainFile {
                // The chain cut after each stage (into jack-out): what each stage adds.
                var parts: [String] = []
                for stages in 1...4 {
                    let ns = offlineRenderNanos(json: chainGraphJSON(file: chainFile, stages: stages), directory: dir,
                                                block: period, maxFrames: liveMax)
                    parts.append("… → \(chainStages[stages - 1]) " + (ns.map { "\(formatFixed($0 / 1000, 2)) µs" } ?? "failed"))
                }
                print("  block \(period), chain file 44.1k 5.1 cut after each stage, buses for \(liveMax) frames "
                      + "(file reader thread not included): " + parts.joined(separator: ", "))
            }
        }

        // Targets: process CPU per cycle at period 128.
        print("")
        if let p128 = summary.first(where: { $0.period == 128 }) {
            for (n, target) in [(8, 15.0), (32, 25.0)] {
                guard let row = p128.rows.first(where: { $0.name == audioGraphRowName(n) }), let cpu = row.processCPU else { continue }
                print("target, period 128, \(n) sources: process CPU \(formatFixed(cpu, 1)) µs/cycle, aim ≤ \(formatFixed(target, 0)) µs: "
                      + (cpu <= target ? "met" : "NOT met"))
            }
        }
        // Callback median against the plain client's, same run (issue 8's aim: ≤ 1.5×).
        for (period, rows) in summary {
            guard let plain = rows.first(where: { $0.name.hasPrefix("plain client") }), !plain.callback.isEmpty else { continue }
            let p = percentile(plain.callback.sorted(), 50)
            for n in sourceList { for pf in prefetchVariants {
                guard let row = rows.first(where: { $0.name == audioGraphRowName(n, prefetch: pf) }), !row.callback.isEmpty else { continue }
                let a = percentile(row.callback.sorted(), 50)
                print("callback median, period \(period), \(n) source\(n == 1 ? "" : "s")\(pf ? "" : ", no prefetch") (\(toneChannels)-channel tones): "
                      + "\(formatFixed(a / 1000, 2)) µs, plain client \(formatFixed(p / 1000, 2)) µs: "
                      + "\(formatFixed(a / p, 2))×" + (n == 8 && period == 128 && pf ? " (aim ≤ 1.5×: \(a <= 1.5 * p ? "met" : "NOT met")\(requestNote))" : ""))
            } }
            if let later = laterRounds[period] {
                // Every round's ratio, then their median.
                let median = { (xs: [UInt32]) -> Double? in xs.isEmpty ? nil : percentile(xs.sorted(), 50) }
                for n in sourceList { for pf in prefetchVariants {
                    var ratios: [Double] = []
                    var parts: [String] = []
                    let rowName = audioGraphRowName(n, prefetch: pf)
                    let first = rows.first(where: { $0.name == rowName })
                    let pairs = [(first, plain)] + later.map { r in (r.audioGraph.first(where: { $0.name == rowName }), r.plain) }
                    for (a, b) in pairs {
                        guard let a, let am = median(a.callback), let bm = median(b.callback) else { parts.append("-"); continue }
                        ratios.append(am / bm)
                        parts.append("\(formatFixed(am / 1000, 2))/\(formatFixed(bm / 1000, 2)) µs \(formatFixed(am / bm, 2))×")
                    }
                    guard !ratios.isEmpty else { continue }
                    let sortedRatios = ratios.sorted()
                    let m = sortedRatios[(sortedRatios.count - 1) / 2]
                    let label = "\(n) source\(n == 1 ? "" : "s")\(pf ? "" : ", no prefetch")"
                    print("  \(rounds) rounds, \(label), callback medians AudioGraph/plain per round: "
                          + parts.joined(separator: ", "))
                    print("  median of the rounds' ratios, period \(period), \(label): \(formatFixed(m, 2))×"
                          + (n == 8 && period == 128 && pf ? " (aim ≤ 1.5×: \(m <= 1.5 ? "met" : "NOT met")\(requestNote))" : ""))
                } }
            }
            for row in rows where row.name.hasPrefix(graphRowPrefix) && !row.callback.isEmpty {
                let a = percentile(row.callback.sorted(), 50)
                print("\(row.name.dropFirst(graphRowPrefix.count)), period \(period): callback median \(formatFixed(a / 1000, 2)) µs, "
                      + "plain client \(formatFixed(p / 1000, 2)) µs")
            }
            if let row = rows.first(where: { $0.name == chainRowName }), !row.callback.isEmpty {
                let a = percentile(row.callback.sorted(), 50)
                let cpu = row.processCPU.map { formatFixed($0, 1) } ?? "-"
                let plainCPU = plain.processCPU.map { formatFixed($0, 1) } ?? "-"
                print("chain, period \(period): callback median \(formatFixed(a / 1000, 2)) µs, plain client \(formatFixed(p / 1000, 2)) µs: "
                      + "\(formatFixed(a / p, 2))×; process CPU \(cpu) µs/cycle, plain client \(plainCPU) µs/cycle")
            }
        }
        let failed = summary.flatMap(\.rows).filter { $0.note.hasPrefix("FAILED") }
        if !failed.isEmpty { throw ExitCode.failure }
    }

    func progress(_ row: LiveRow, round: Int = 1) {
        let cpu = row.processCPU.map { "\(formatFixed($0, 1)) µs/cycle" } ?? "-"
        print("  \(row.name)\(round > 1 ? " (round \(round))" : ""): process CPU \(cpu)\(row.note.isEmpty ? "" : "; \(row.note)")")
        fflush(nil)
    }

    /// The AudioGraph rows' prefetch settings (`--prefetch`).
    var prefetchVariants: [Bool] {
        switch prefetch {
        case "off": [false]
        case "both": [true, false]
        default: [true]
        }
    }

    func runAudioGraph(sources n: Int, prefetch: Bool = true, server: String, window: Window) -> LiveRow {
        runAudioGraph(name: audioGraphRowName(n, prefetch: prefetch), json: liveGraphJSON(sources: n, toneChannels: toneChannels),
                      clientName: "agraph-bench-\(n)", directory: "/tmp", server: server, window: window, prefetch: prefetch)
    }

    func runAudioGraph(name: String, json: String, clientName: String, directory: String, server: String, window: Window,
                       prefetch: Bool = true) -> LiveRow {
        let binder = JACKPortBinder()
        let graph: ValidatedGraph
        switch GraphValidator(registry: .builtIn.addingJACK(binder)).validate(bytes: Array(json.utf8), file: "live.json", directory: directory) {
        case .success(let g): graph = g
        case .failure(let e): return LiveRow(name: name, note: "FAILED: graph invalid: \(e)")
        }
        var options = RunningGraph.Options()
        options.server = .external
        options.serverName = server
        options.clientName = clientName
        options.measureCycles = true
        options.prefetchHotMemory = prefetch
        if let maxFrames { options.maxFrames = maxFrames }
        options.threadInit = recordJACKThread
        jackThreadTIDs.reset()
        let live: RunningGraph
        do {
            live = try RunningGraph(graph: graph, binder: binder, options: options)
        } catch {
            return LiveRow(name: name, note: "FAILED: \(error)")
        }
        defer { live.stop() }
        var peak = -Double.infinity
        var row = window.measure(
            name: name, pid: "self",
            drain: { _ = live.takeCycleTimes() },
            collect: { live.takeCycleTimes() },
            load: {
                let s = live.status()
                peak = max(peak, s.peaks.map(\.dBFS).max() ?? -.infinity)
                return s.cpuLoad
            },
            xruns: { live.status().xruns })
        let s = live.status()
        if s.serverGone { row.note = "FAILED: server gone" }
        if s.underruns > 0 { row.note += (row.note.isEmpty ? "" : "; ") + "\(s.underruns) underruns" }
        if !(peak > -40) {
            row.note += (row.note.isEmpty ? "" : "; ") + "output peak \(formatFixed(peak, 1)) dBFS?"
        }
        return row
    }

    /// A row for the graph file `file` (`--graph`), read from its folder.
    func runGraphFile(_ file: String, index: Int, server: String, window: Window) -> LiveRow {
        let name = graphRowPrefix + URL(fileURLWithPath: file).lastPathComponent
        guard let data = FileManager.default.contents(atPath: file), let json = String(data: data, encoding: .utf8) else {
            return LiveRow(name: name, note: "FAILED: cannot read \(file)")
        }
        return runAudioGraph(name: name, json: json, clientName: "agraph-bench-graph\(index)",
                             directory: URL(fileURLWithPath: file).deletingLastPathComponent().path, server: server, window: window)
    }

    func runPlain(server: String, window: Window, observer: Observer) -> LiveRow {
        let name = "plain client (in-process, Swift)"
        jackThreadTIDs.reset()
        let plain: PlainClient
        do { plain = try PlainClient(server: server, frequencies: Job.frequencies, sampleRate: Double(Self.sampleRate)) } catch {
            return LiveRow(name: name, note: "FAILED: \(error)")
        }
        defer { plain.close() }
        var row = window.measure(
            name: name, pid: "self",
            drain: { _ = plain.takeCycleTimes() },
            collect: { plain.takeCycleTimes() },
            load: { plain.client.cpuLoad },
            xruns: { plain.xruns.load(ordering: .relaxed) })
        if !(plain.peak > 0.3) { row.note += (row.note.isEmpty ? "" : "; ") + "output peak \(plain.peak)?" }
        return row
    }
}

func audioGraphRowName(_ n: Int, prefetch: Bool = true) -> String {
    "AudioGraph, \(n) source\(n == 1 ? "" : "s")\(prefetch ? "" : ", no prefetch")"
}

let graphRowPrefix = "AudioGraph graph file: "
let chainRowName = "AudioGraph chain: file 44.1k 5.1 → resample → downmix → limiter → meter"

/// The chain's source file: 60 s of 5.1 tones at 44.1 kHz (a sine at
/// -12 dBFS in every channel), tagged 5.1, float32 WAV.
func chainSourceJSON(path: String) -> String {
    """
    {"format": "agraph/1", "sampleRate": 44100,
     "nodes": [{"id": "tones", "type": "test-tone", "params": {"waveform": "sine", "frequency": 441, "level": -12, "channels": 6, "duration": 60}},
               {"id": "tag", "type": "format-tag", "params": {"layout": "5.1"}},
               {"id": "out", "type": "file-out", "params": {"path": "\(path)", "format": "wav", "sampleFormat": "float32"}}],
     "links": [{"from": "tones", "to": "tag"}, {"from": "tag", "to": "out"}]}
    """
}

/// The chain at the live rate (48 kHz): the 44.1 kHz file plays at its own
/// rate (`resample: native`, a rate island, looping), the `resample` node
/// brings it to 48 kHz on the audio thread, `downmix` folds 5.1 to stereo
/// (Lo/Ro), the limiter holds -6 dBTP (the downmixed tones peak near
/// -4.4 dBFS, so it limits), the meter measures, jack-out plays.
/// `stages` < 4 cuts the chain after that many stages (into jack-out).
func chainGraphJSON(file: String, stages: Int = 4) -> String {
    let nodes = [
        #"{"id": "to48k", "type": "resample", "params": {"quality": "high"}}"#,
        #"{"id": "stereo", "type": "downmix", "params": {"layout": "stereo"}}"#,
        #"{"id": "lim", "type": "limiter", "params": {"ceiling": -6}}"#,
        #"{"id": "m", "type": "meter"}"#,
    ].prefix(stages)
    let ids = ["song", "to48k", "stereo", "lim", "m"].prefix(stages + 1) + ["out"]
    let links = zip(ids, ids.dropFirst()).map { #"{"from": "\#($0)", "to": "\#($1)"}"# }
    return """
    {
      "format": "agraph/1",
      "name": "bench-live-chain",
      "description": "agraph-bench live --chain: 44.1 kHz 5.1 file -> resample -> downmix -> limiter -> meter -> jack-out.",
      "sampleRate": \(Live.sampleRate),
      "nodes": [
        {"id": "song", "type": "file", "params": {"path": "\(file)", "resample": "native", "loop": true}},
        \(nodes.joined(separator: ",\n        ")),
        {"id": "out", "type": "jack-out"}
      ],
      "links": [
        \(links.joined(separator: ",\n        "))
      ]
    }

    """
}

/// The chain's stages after the file, in order.
let chainStages = ["resample", "downmix", "limiter", "meter"]

/// Mean ns of `engine.render(frames: block)` for a graph, offline, hot
/// caches, best of 5 × 2000 blocks (fed sources are serviced by their
/// worker thread between blocks, not timed here).
/// `live`: compiled as for JACK (nodes that differ live, such as
/// `binaural`'s partition, take their live settings).
func offlineRenderNanos(json: String, directory: String, block: Int, maxFrames: Int, live: Bool = false) -> Double? {
    let binder = JACKPortBinder()
    guard case .success(let g) = GraphValidator(registry: .builtIn.addingJACK(binder))
        .validate(bytes: Array(json.utf8), file: "live.json", directory: directory),
        let compiled = try? GraphCompiler.compile(g, maxFrames: maxFrames, live: live) else { return nil }
    let engine = compiled.engine
    engine.worker.start()
    defer {
        engine.worker.stop()
        _ = engine.worker.finishJobs(completed: false)
    }
    var best = Double.infinity
    for _ in 0..<5 {
        var total: UInt64 = 0
        for _ in 0..<2000 {
            engine.worker.waitUntilReady(frames: block)
            let t0 = MonotonicClock.nanoseconds()
            engine.render(frames: block)
            total += MonotonicClock.nanoseconds() - t0
        }
        best = min(best, Double(total) / 2000)
    }
    return best
}

/// N endless stereo sines at distinct frequencies → N-input mixer → jack-out
/// (no connections). Each tone at 1/N so the sum peaks at 0 dBFS at most.
func liveGraphJSON(sources n: Int, toneChannels: Int = 2) -> String {
    var nodes: [String] = []
    var links: [String] = []
    let level = -20 * log10(Double(n))
    for i in 0..<n {
        let f = i < Job.frequencies.count ? Job.frequencies[i] : 110 * pow(2, Double(i) / 7)
        nodes.append(#"{"id": "t\#(i)", "type": "test-tone", "params": {"waveform": "sine", "frequency": \#(formatFixed(f, 2)), "level": \#(formatFixed(level, 4)), "channels": \#(toneChannels)}}"#)
        links.append(#"{"from": "t\#(i)", "to": "mix:in\#(i)"}"#)
    }
    nodes.append(#"{"id": "mix", "type": "mixer", "params": {"inputs": \#(n), "channels": 2}}"#)
    nodes.append(#"{"id": "out", "type": "jack-out"}"#)
    links.append(#"{"from": "mix", "to": "out"}"#)
    return """
        {
          "format": "agraph/1",
          "name": "bench-live-\(n)",
          "description": "agraph-bench live: \(n) sines into a mixer into jack-out.",
          "sampleRate": \(Live.sampleRate),
          "nodes": [
            \(nodes.joined(separator: ",\n    "))
          ],
          "links": [
            \(links.joined(separator: ",\n    "))
          ]
        }

        """
}

/// Mean ns of `engine.render(frames: block)` for the live graph, offline.
func offlineRenderNanos(sources n: Int, block: Int, maxFrames: Int, toneChannels: Int = 2, cold: Bool = false) -> Double? {
    let binder = JACKPortBinder()
    guard case .success(let g) = GraphValidator(registry: .builtIn.addingJACK(binder))
        .validate(bytes: Array(liveGraphJSON(sources: n, toneChannels: toneChannels).utf8), file: "live.json", directory: "/tmp"),
        let compiled = try? GraphCompiler.compile(g, maxFrames: maxFrames) else { return nil }
    let engine = compiled.engine
    if cold {
        // Evict the caches before every block (write 8 MB), time render only.
        let junkCount = 8 << 20
        let junk = UnsafeMutablePointer<UInt8>.allocate(capacity: junkCount)
        defer { junk.deallocate() }
        junk.initialize(repeating: 0, count: junkCount)
        var samples: [Double] = []
        for k in 0..<400 {
            var j = 0
            while j < junkCount { junk[j] &+= 1; j += 64 }
            let t0 = MonotonicClock.nanoseconds()
            engine.render(frames: block)
            if k >= 20 { samples.append(Double(MonotonicClock.nanoseconds() - t0)) }
        }
        return Stats(samples).median
    }
    for _ in 0..<2000 { engine.render(frames: block) }
    var best = Double.infinity
    for _ in 0..<5 {
        let count = 10_000
        let t0 = MonotonicClock.nanoseconds()
        for _ in 0..<count { engine.render(frames: block) }
        best = min(best, Double(MonotonicClock.nanoseconds() - t0) / Double(count))
    }
    return best
}

// MARK: - measurement

struct LiveRow {
    var name: String
    /// Callback durations in ns (empty: not measurable).
    var callback: [UInt32] = []
    var processCPU: Double?      // µs per cycle, schedstat
    var processCPUStat: Double?  // µs per cycle, /proc/PID/stat ticks
    var threadCPU: Double?       // µs per cycle, the client's JACK thread
    var jackdCPU: Double?        // µs per cycle
    var dspLoad: Double?         // %
    var xruns: Int?
    var cycles: Double = 0
    var seenCycles: Int?
    /// µs per cycle spent in LV2 plugins' `run` calls inside the measured
    /// callbacks (`agraph-bench lv2`'s AudioGraph rows).
    var pluginRunMean: Double?
    /// Per measured cycle (`agraph-bench lv2`): the plugins' run calls in
    /// it and the rest of the callback (callback − run calls), in ns.
    var runsPerCycle: [UInt32] = []
    var hostPerCycle: [UInt32] = []
    /// Per thread of the process: "name(tid)", µs per cycle, largest first.
    var threads: [(String, Double)] = []
    var note = ""

    init(name: String, note: String = "") {
        self.name = name
        self.note = note
    }
}

/// CPU time of a process or thread from /proc.
struct CPUTime {
    var ticks: Int64   // utime + stime, clock ticks (/proc/PID/stat)
    var ns: Int64      // sum of run time over threads (/proc/PID/task/*/schedstat)

    static func - (a: CPUTime, b: CPUTime) -> CPUTime { CPUTime(ticks: a.ticks - b.ticks, ns: a.ns - b.ns) }

    /// A whole process (all threads).
    static func process(_ pid: String) -> CPUTime? {
        guard let ticks = statTicks("/proc/\(pid)/stat") else { return nil }
        var ns: Int64 = 0
        guard let d = opendir("/proc/\(pid)/task") else { return nil }
        defer { closedir(d) }
        while let e = readdir(d) {
            let tid = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if tid.first == "." { continue }
            ns += schedstatNs("/proc/\(pid)/task/\(tid)/schedstat") ?? 0
        }
        return CPUTime(ticks: ticks, ns: ns)
    }

    /// Each thread of a process: tid → (name, run time ns).
    static func threads(_ pid: String) -> [Int32: (name: String, ns: Int64)] {
        var out: [Int32: (name: String, ns: Int64)] = [:]
        guard let d = opendir("/proc/\(pid)/task") else { return out }
        defer { closedir(d) }
        while let e = readdir(d) {
            let tid = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard let t = Int32(tid), let ns = schedstatNs("/proc/\(pid)/task/\(tid)/schedstat") else { continue }
            let name = (readText("/proc/\(pid)/task/\(tid)/comm") ?? "?").split(separator: "\n").first.map(String.init) ?? "?"
            out[t] = (name, ns)
        }
        return out
    }

    /// One thread of a process.
    static func thread(_ pid: String, _ tid: Int32) -> CPUTime? {
        guard let ticks = statTicks("/proc/\(pid)/task/\(tid)/stat"),
              let ns = schedstatNs("/proc/\(pid)/task/\(tid)/schedstat") else { return nil }
        return CPUTime(ticks: ticks, ns: ns)
    }

    /// utime + stime (fields 14 and 15; the name in field 2 may hold spaces).
    static func statTicks(_ path: String) -> Int64? {
        guard let text = readText(path), let paren = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: paren)...].split(separator: " ")
        guard fields.count > 12, let u = Int64(fields[11]), let s = Int64(fields[12]) else { return nil }
        return u + s
    }

    /// First field of schedstat: time spent on the CPU, ns.
    static func schedstatNs(_ path: String) -> Int64? {
        readText(path)?.split(separator: " ").first.flatMap { Int64($0) }
    }
}

/// Threads JACK ran the thread-init callback on (the process thread among
/// them), in order; reset before each client.
let jackThreadTIDs = JACKThreadIDs()

final class JACKThreadIDs: Sendable {
    private let ids = Locked<[Int32]>([])
    func reset() { ids.withLock { $0.removeAll() } }
    /// [any-thread; a JACK thread, once at its start: not on the real-time path]
    func add(_ tid: Int32) { ids.withLock { $0.append(tid) } }
    var all: [Int32] { ids.withLock { $0 } }
}

let recordJACKThread: @convention(c) (UnsafeMutableRawPointer?) -> Void = { _ in
    jackThreadTIDs.add(currentThreadID())
}

/// This thread's id, from /proc/thread-self → "PID/task/TID" (no gettid in
/// Swift's Glibc module). Called once per thread, at its start.
func currentThreadID() -> Int32 {
    var buf = [CChar](repeating: 0, count: 64)
    let n = readlink("/proc/thread-self", &buf, buf.count - 1)
    guard n > 0 else { return 0 }
    let text = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return text.split(separator: "/").last.flatMap { Int32($0) } ?? 0
}

struct Window {
    var seconds: Double
    var warmup: Double
    var period: Int
    var jackdPID: pid_t

    var cyclesPerSecond: Double { Double(Live.sampleRate) / Double(period) }

    /// Warms up, then measures over `seconds`: CPU deltas of `pid` (and of
    /// the JACK thread when known, and of jackd), callback times, DSP load
    /// each second, xruns.
    func measure(name: String, pid: String, callbacks: Bool = true, drain: () -> Void, collect: () -> [UInt32],
                 load: () -> Double, xruns: () -> Int) -> LiveRow {
        var row = LiveRow(name: name)
        usleep(UInt32(warmup * 1e6))
        drain()
        let jackTIDs = pid == "self" ? jackThreadTIDs.all : []
        let x0 = xruns()
        var times: [UInt32] = []
        times.reserveCapacity(Int(seconds * cyclesPerSecond * 1.1) + 1024)
        var loads: [Double] = []
        _ = load()
        let jackd0 = CPUTime.process("\(jackdPID)")
        let threads0 = CPUTime.threads(pid)
        let cpu0 = CPUTime.process(pid)
        let t0 = MonotonicClock.seconds()
        var next = t0 + 1
        while true {
            let now = MonotonicClock.seconds()
            let end = t0 + seconds
            if now >= end { break }
            let wake = min(next, end)
            usleep(UInt32(max(wake - now, 0) * 1e6))
            if MonotonicClock.seconds() >= next - 0.001 {
                loads.append(load())
                times += collect()
                next += 1
            }
        }
        let cpu1 = CPUTime.process(pid)
        let threads1 = CPUTime.threads(pid)
        let jackd1 = CPUTime.process("\(jackdPID)")
        let t1 = MonotonicClock.seconds()
        times += collect()
        let cycles = (t1 - t0) * cyclesPerSecond
        row.cycles = cycles
        row.seenCycles = times.count
        row.callback = times
        if let a = cpu0, let b = cpu1 { fill(&row.processCPU, &row.processCPUStat, b - a, cycles) }
        var unused: Double?
        if let a = jackd0, let b = jackd1 { fill(&row.jackdCPU, &unused, b - a, cycles) }
        row.dspLoad = loads.isEmpty ? nil : loads.reduce(0, +) / Double(loads.count)
        row.xruns = xruns() - x0
        // Name the threads: main, JACK's (thread-init callback), the rest.
        let myPID = pid == "self" ? Int32(getpid()) : Int32(pid) ?? 0
        var jackCPU: [Double] = []
        row.threads = threads1.compactMap { tid, t in
            guard let before = threads0[tid] else { return nil }
            let perCycle = Double(t.ns - before.ns) / 1000 / cycles
            let label: String
            if tid == myPID { label = "main" }
            else if jackTIDs.contains(tid) { label = "JACK"; jackCPU.append(perCycle) }
            else { label = t.name == "agraph-bench" ? "other" : t.name }
            return ("\(label)(\(tid))", perCycle)
        }.sorted { $0.1 > $1.1 }
        // The process thread is the busiest of JACK's threads.
        row.threadCPU = jackCPU.max()
        if callbacks, Double(times.count) < cycles * 0.98 || Double(times.count) > cycles * 1.02 {
            row.note = "\(times.count) callbacks for \(Int(cycles)) expected cycles"
        }
        return row
    }

    private func fill(_ precise: inout Double?, _ ticks: inout Double?, _ d: CPUTime, _ cycles: Double) {
        precise = Double(d.ns) / 1000 / cycles
        ticks = Double(d.ticks) / Double(sysconf(Int32(_SC_CLK_TCK))) * 1e6 / cycles
    }

    /// jackd with only the observer (not activated): the server's own cost.
    func measureIdle(observer: Observer) -> LiveRow {
        jackThreadTIDs.reset()
        var row = measure(name: "jackd alone (no active client)", pid: "self", callbacks: false, drain: {}, collect: { [] },
                          load: { observer.client.cpuLoad }, xruns: { observer.xruns.load(ordering: .relaxed) })
        row.note = "process CPU here is the idle bench itself"
        row.seenCycles = nil
        return row
    }

    /// Spawns `path args` with JACK_DEFAULT_SERVER=server, waits until a
    /// client named `clientPrefix…` has ports, warms up, measures its
    /// process CPU; xruns and DSP load from the observer client. `env`: more
    /// NAME=VALUE for the child.
    func measureExternal(name: String, path: String, args: [String], server: String, clientPrefix: String,
                         observer: Observer, dir: String, env: [String] = []) -> LiveRow {
        let log = dir + "/\(clientPrefix).log"
        guard let pid = spawnBackground(path, args, env: ["JACK_DEFAULT_SERVER=\(server)"] + env, output: log) else {
            return LiveRow(name: name, note: "FAILED: cannot start \(path)")
        }
        defer { terminate(pid) }
        let deadline = MonotonicClock.seconds() + 10
        while !observer.client.ports().contains(where: { $0.hasPrefix(clientPrefix) }) {
            if MonotonicClock.seconds() > deadline || !isAlive(pid) {
                let text = (readText(log) ?? "").split(separator: "\n").prefix(4).joined(separator: " / ")
                return LiveRow(name: name, note: "FAILED: no JACK ports from '\(clientPrefix)' (\(isAlive(pid) ? "timeout" : "exited")): \(text)")
            }
            usleep(50_000)
        }
        jackThreadTIDs.reset()
        var row = measure(name: name, pid: "\(pid)", callbacks: false, drain: {}, collect: { [] },
                          load: { observer.client.cpuLoad }, xruns: { observer.xruns.load(ordering: .relaxed) })
        row.seenCycles = nil
        if !isAlive(pid) { row.note = "FAILED: exited during the measurement" }
        row.note += (row.note.isEmpty ? "" : "; ") + "xruns: server-wide, via an inactive observer client"
        return row
    }
}

// MARK: - JACK clients of the bench

/// An inactive client on the server: lists ports, reads the DSP load, counts
/// xruns (JACK notifies every open client). It takes no part in the cycle.
final class Observer: @unchecked Sendable {
    let client: JACKClient
    let xruns = Atomic<Int>(0)

    init(server: String) throws {
        client = try JACKClient(name: "agraph-bench-observer", server: server)
        jack_set_xrun_callback(client.handle, { arg in
            Unmanaged<Observer>.fromOpaque(arg!).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
            return 0
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    func close() { client.close() }
}

/// A bench's own JACK client with two output ports (`out_L`, `out_R`):
/// registers them, installs the process and xrun callbacks, records each
/// callback's duration and the output's peak. A subclass does its cycle in
/// `process(_:)` (timed from its first line: the dispatch is outside) and
/// calls `finishCycle(start:peak:)`; its `init` ends with `activate()`.
class BenchJACKClient: @unchecked Sendable {
    let client: JACKClient
    let left: OpaquePointer
    let right: OpaquePointer
    private let times = SPSCRing<UInt32>(minimumCapacity: 1 << 16)
    let xruns = Atomic<Int>(0)
    private let peakBits = Atomic<UInt32>(0)
    var peak: Float { Float(bitPattern: peakBits.load(ordering: .relaxed)) }
    private var closed = false

    init(name: String, server: String) throws {
        client = try JACKClient(name: name, server: server)
        left = try client.registerPort("out_L", isInput: false)
        right = try client.registerPort("out_R", isInput: false)
    }

    deinit { close() }

    /// Installs the callbacks and activates the client. [main-thread; once, at the end of a
    /// subclass's init]
    func activate() throws {
        let me = Unmanaged.passUnretained(self).toOpaque()
        jack_set_thread_init_callback(client.handle, recordJACKThread, nil)
        jack_set_process_callback(client.handle, { frames, arg in
            Unmanaged<BenchJACKClient>.fromOpaque(arg!).takeUnretainedValue().process(frames)
            return 0
        }, me)
        jack_set_xrun_callback(client.handle, { arg in
            Unmanaged<BenchJACKClient>.fromOpaque(arg!).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
            return 0
        }, me)
        try client.activate()
    }

    func close() {
        guard !closed else { return }
        closed = true
        client.deactivate()
        client.close()
    }

    /// One cycle; overridden. [audio-thread]
    func process(_ nframes: UInt32) {}

    /// This cycle's two output port buffers. [audio-thread]
    @inline(__always)
    final func outputBuffers(_ nframes: UInt32) -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)? {
        guard let l = jack_port_get_buffer(left, nframes)?.assumingMemoryBound(to: Float.self),
              let r = jack_port_get_buffer(right, nframes)?.assumingMemoryBound(to: Float.self) else { return nil }
        return (l, r)
    }

    /// Records the cycle's peak and its duration since `start`. [audio-thread]
    @inline(__always)
    /// Records the cycle's duration; returns it (ns). [audio-thread]
    @discardableResult
    final func finishCycle(start: UInt64, peak m: Float) -> UInt32 {
        if m > peak { peakBits.store(m.bitPattern, ordering: .relaxed) }
        let took = UInt32(truncatingIfNeeded: min(MonotonicClock.nanoseconds() &- start, UInt64(UInt32.max)))
        _ = times.push(took)
        return took
    }

    /// Callback durations (ns) since the last call. [control-thread]
    func takeCycleTimes() -> [UInt32] {
        var out: [UInt32] = []
        var v: UInt32 = 0
        while times.pop(into: &v) { out.append(v) }
        return out
    }
}

/// A minimal JACK client without AudioGraph: its process callback sums 8
/// phasor sines (Double, one sample of every oscillator at a time, like a
/// plain C loop) at 1/8 into two output ports.
final class PlainClient: BenchJACKClient, @unchecked Sendable {
    private let count: Int
    private let re, im, c, s: UnsafeMutablePointer<Double>
    private let gain: Float

    init(server: String, frequencies: [Double], sampleRate: Double) throws {
        count = frequencies.count
        re = .allocate(capacity: count); im = .allocate(capacity: count)
        c = .allocate(capacity: count); s = .allocate(capacity: count)
        for (k, f) in frequencies.enumerated() {
            let w = 2 * Double.pi * f / sampleRate
            re[k] = 1; im[k] = 0; c[k] = cos(w); s[k] = sin(w)
        }
        gain = Float(1 / Double(count))
        try super.init(name: "agraph-bench-plain", server: server)
        try activate()
    }

    deinit {
        close()
        re.deallocate(); im.deallocate(); c.deallocate(); s.deallocate()
    }

    /// [audio-thread]
    override func process(_ nframes: UInt32) {
        let start = MonotonicClock.nanoseconds()
        guard let (l, r) = outputBuffers(nframes) else { return }
        let m = Self.render(re: re, im: im, c: c, s: s, count: count, gain: gain, left: l, right: r, frames: Int(nframes))
        finishCycle(start: start, peak: m)
    }

    /// The plain client's work for one cycle: `count` phasors (`re`, `im`,
    /// rotated by `c`, `s` per sample) summed times `gain` into `left` and
    /// `right`; returns the peak. Also timed offline by `agraph-bench cold`.
    /// [audio-thread]
    @inline(never)
    static func render(re: UnsafeMutablePointer<Double>, im: UnsafeMutablePointer<Double>,
                       c: UnsafeMutablePointer<Double>, s: UnsafeMutablePointer<Double>, count: Int, gain: Float,
                       left l: UnsafeMutablePointer<Float>, right r: UnsafeMutablePointer<Float>, frames n: Int) -> Float {
        var m: Float = 0
        var i = 0
        while i < n {
            var sum = 0.0
            var k = 0
            while k < count {
                let x = re[k], y = im[k]
                sum += y
                re[k] = x * c[k] - y * s[k]
                im[k] = x * s[k] + y * c[k]
                k += 1
            }
            let v = Float(sum) * gain
            l[i] = v
            r[i] = v
            m = max(m, abs(v))
            i += 1
        }
        var k = 0
        while k < count {
            let g = (3 - (re[k] * re[k] + im[k] * im[k])) * 0.5
            re[k] *= g; im[k] *= g
            k += 1
        }
        return m
    }
}

// MARK: - processes

func spawnBackground(_ path: String, _ args: [String], env extra: [String], output: String) -> pid_t? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    let keys = Set(extra.compactMap { $0.split(separator: "=").first.map(String.init) })
    var env: [String] = []
    var e = environ
    while let p = e.pointee {
        let entry = String(cString: p)
        if let k = entry.split(separator: "=").first, !keys.contains(String(k)) { env.append(entry) }
        e += 1
    }
    let envp: [UnsafeMutablePointer<CChar>?] = (env + extra).map { strdup($0) } + [nil]
    defer { for a in envp { free(a) } }
    var pid = pid_t()
    guard posix_spawn(&pid, path, &actions, nil, argv, envp) == 0 else { return nil }
    return pid
}

func isAlive(_ pid: pid_t) -> Bool {
    var status: Int32 = 0
    return waitpid(pid, &status, WNOHANG) == 0
}

/// SIGTERM, then SIGKILL after 3 s; reaps the child.
func terminate(_ pid: pid_t) {
    var status: Int32 = 0
    if waitpid(pid, &status, WNOHANG) != 0 { return }
    kill(pid, SIGTERM)
    let deadline = MonotonicClock.seconds() + 3
    while MonotonicClock.seconds() < deadline {
        if waitpid(pid, &status, WNOHANG) != 0 { return }
        usleep(20_000)
    }
    kill(pid, SIGKILL)
    _ = waitpid(pid, &status, 0)
}

func gstElementExists(_ element: String) -> Bool {
    guard let inspect = findOnPath("gst-inspect-1.0") else { return false }
    return spawnAndWait(inspect, ["--exists", element], stdout: "/dev/null", stderr: "/dev/null").0 == 0
}

func jackdVersion() -> String {
    guard let jackd = findOnPath("jackd") else { return "not found" }
    let out = "/tmp/agraph-bench-jackd-version-\(getpid())"
    defer { unlink(out) }
    _ = spawnAndWait(jackd, ["--version"], stdout: out, stderr: "/dev/null")
    let line = (readText(out) ?? "").split(separator: "\n").first.map(String.init) ?? "?"
    return line.split(separator: " ").dropFirst(2).first.map(String.init) ?? line
}

// MARK: - table

func percentile(_ sorted: [UInt32], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let i = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
    return Double(sorted[i])
}

func printLiveTable(period: Int, rows: [LiveRow], window: Window) {
    let nameWidth = max(rows.map(\.name.count).max() ?? 0, 6)
    func l(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(w - s.count, 0)) }
    func r(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(w - s.count, 0)) + s }
    func us(_ x: Double?) -> String { x.map { $0.isFinite ? formatFixed($0, 1) : "-" } ?? "-" }
    let cycles = Int((window.seconds * window.cyclesPerSecond).rounded())
    print("period \(period) (\(cycles) cycles in \(formatFixed(window.seconds, 0)) s); times in µs; CPU is per cycle")
    print(l("", nameWidth) + "  " + r("callback (in-callback clock)", 26) + "  " + r("process CPU", 19)
          + r("JACK thr", 10) + r("jackd", 8) + r("DSP", 7) + r("xruns", 7))
    print(l("config", nameWidth) + "  " + r("median", 8) + r("p99", 9) + r("max", 9) + "  "
          + r("schedstat", 10) + r("stat", 9) + r("CPU", 10) + r("CPU", 8) + r("%", 7) + r("", 7) + "  note")
    print(String(repeating: "-", count: nameWidth + 2 + 26 + 2 + 19 + 10 + 8 + 7 + 7 + 8))
    for row in rows {
        let sorted = row.callback.sorted()
        let cb = sorted.isEmpty ? r("-", 8) + r("-", 9) + r("-", 9)
            : r(formatFixed(percentile(sorted, 50) / 1000, 1), 8) + r(formatFixed(percentile(sorted, 99) / 1000, 1), 9)
              + r(formatFixed(Double(sorted.last!) / 1000, 1), 9)
        print(l(row.name, nameWidth) + "  " + cb + "  " + r(us(row.processCPU), 10) + r(us(row.processCPUStat), 9)
              + r(us(row.threadCPU), 10) + r(us(row.jackdCPU), 8) + r(row.dspLoad.map { formatFixed($0, 1) } ?? "-", 7)
              + r(row.xruns.map(String.init) ?? "n/a", 7) + (row.note.isEmpty ? "" : "  " + row.note))
    }
    print("process CPU by thread (µs per cycle, schedstat; threads under 0.05 left out):")
    for row in rows where !row.threads.isEmpty {
        let shown = row.threads.filter { $0.1 >= 0.05 }.map { "\($0.0) \(formatFixed($0.1, 2))" }
        print("  \(row.name): " + (shown.isEmpty ? "(all idle)" : shown.joined(separator: ", ")))
    }
}
