// agraph-bench lv2: a chain of four LV2 plugins on a stereo stream, hosted
// by AudioGraph (offline engine and live on a dummy jackd), against the same
// plugins' `run` calls timed in-process (a raw lilv loop, hot, and the same
// loop inside a plain JACK client) and against ecasound hosting the same
// chain (`-elv2:`). See docs/performance.md, "LV2 hosting".
import ArgumentParser
import AudioGraph
import AudioGraphJACK
import CJack
import CLilv
import CLV2Host
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One plugin of the benchmark chain: fixed parameter values by port symbol.
struct LV2BenchPlugin {
    var id: String
    var uri: String
    /// One instance per channel of a mono plugin (`"instances": "per-channel"`).
    var perChannel: Bool
    var values: [(symbol: String, value: Float)]

    func value(_ symbol: String) -> Float? { values.first { $0.symbol == symbol }?.value }
}

struct LV2Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lv2",
        abstract: "Four LV2 plugins on a stereo stream at period 128: AudioGraph's cycle against the plugins' own run calls and ecasound.",
        discussion: """
            The chain (stereo, fixed values, no required host features, so ecasound hosts it too): \
            SWH DJ EQ → x42-comp stereo compressor → MDA Delay → SWH Simple amplifier (mono, one instance per \
            channel). The input: 440 Hz left, 660 Hz right, -12 dBFS peak, as a float WAV (written by the bench). \
            Rows: (1) the plugins' lilv_instance_run calls in a raw lilv loop in this process (URID map/unmap, \
            options, bounded block length given), each 128-frame block timed with CLOCK_MONOTONIC around the \
            five run calls, hot; (2) AudioGraph offline: engine.render per block (file → lv2 ×4 → jack-out \
            unbound), timed per block, and cut-down graphs (test-tone source; the engine's worker threads not \
            started; no plugins); rows 1 and 2 in --rounds rounds, each figure its best round; (3) the raw loop \
            inside a plain JACK client's process callback on a dummy jackd (-p 128): the plugins' cost when woken \
            once per period; (4) AudioGraph live as `agraph run` (RunningGraph, Options.measureCycles) on the \
            same jackd, with the file and with test-tone as the source, and the plugins' run calls timed inside those \
            same callbacks (two clock reads per node and cycle); (5) ecasound offline \
            (-f:f32_le,2,48000 -b:128 -i:WAV -elv2:… ×4 -o:null), CPU (getrusage of the child: user+system) of \
            the long input minus a 1 s input (its start-up), per 128-frame block, LV2_PATH set to the chain's \
            four bundles; and the same without the plugins; (6) ecasound live (-o:jack) on the same jackd: \
            process CPU per cycle. Host overhead = (AudioGraph cycle − plugins' run) / plugins' run.
            """)

    @Option(help: "Period (frames).") var period: Int = 128
    @Option(help: "Blocks timed in the in-process and offline rows (after 2000 warm-up blocks).") var blocks: Int = 20_000
    @Option(help: "Seconds measured per live row (after warm-up).") var seconds: Double = 10
    @Option(help: "Warm-up seconds before each live row.") var warmup: Double = 1
    @Option(help: "ecasound offline runs (the best is kept).") var runs: Int = 3
    @Option(help: "Rounds of the in-process and offline rows (each row keeps its best round).") var rounds: Int = 5
    @Flag(help: "Run the dummy jackd realtime (-R -P 70: SCHED_FIFO process threads, as in a studio) instead of --no-realtime; needs the right to SCHED_FIFO.")
    var realtime = false
    @Option(help: ArgumentHelp("A CPU wake-up latency request held for the whole run (/dev/cpu_dma_latency, as agraph run --cpu-dma-latency; cyclictest holds 0 by default too): 0 keeps idle CPUs polling, so each cycle starts warm; every row runs under it. none: no request (idle CPUs may halt between cycles: on a VM every cycle then starts cold). Default 0; when the default cannot be held (no right to the device), the run goes on without it and says so.", valueName: "µs|none"))
    var cpuDMALatency: String?
    @Flag(help: "Skip the live (JACK) rows.") var noLive = false
    @Flag(help: "Skip ecasound even when installed.") var noExternal = false

    static let sampleRate = 48000
    static let chain: [LV2BenchPlugin] = [
        LV2BenchPlugin(id: "eq", uri: "http://plugin.org.uk/swh-plugins/dj_eq", perChannel: false,
                       values: [("lo", 3), ("mid", -2), ("hi", 1)]),
        LV2BenchPlugin(id: "comp", uri: "http://gareus.org/oss/lv2/darc#stereo", perChannel: false,
                       values: [("enable", 1), ("hold", 0), ("inputgain", 2), ("threshold", -25), ("Ratio", 0.5),
                                ("attack", 0.01), ("release", 0.3)]),
        LV2BenchPlugin(id: "delay", uri: "http://drobilla.net/plugins/mda/Delay", perChannel: false,
                       values: [("l_delay", 0.3), ("r_delay", 0.2), ("feedback", 0.4), ("fb_tone", 0.5),
                                ("fx_mix", 0.3), ("output", 0.5)]),
        LV2BenchPlugin(id: "amp", uri: "http://plugin.org.uk/swh-plugins/amp", perChannel: true,
                       values: [("gain", -3)]),
    ]

    func validate() throws {
        if !(16...4096).contains(period) { throw ValidationError("--period must be in 16…4096") }
        if !(100...10_000_000).contains(blocks) { throw ValidationError("--blocks must be in 100…10000000") }
        if !(seconds >= 1 && seconds <= 600) { throw ValidationError("--seconds must be in [1, 600]") }
        if !(warmup >= 0 && warmup <= 60) { throw ValidationError("--warmup must be in [0, 60]") }
        if !(1...20).contains(runs) { throw ValidationError("--runs must be in 1…20") }
        if !(1...50).contains(rounds) { throw ValidationError("--rounds must be in 1…50") }
    }

    func run() throws {
        let dir = try makeTempDirectory()
        defer { removeTree(dir) }
        let descriptions: [LV2PluginDescription]
        do { descriptions = try Self.chain.map { try LV2World.shared.describe($0.uri) } } catch {
            print("FAILED: \(error) (install swh-lv2, x42-plugins, mda-lv2)")
            throw ExitCode.failure
        }
        let signal = LV2BenchSignal(sampleRate: Self.sampleRate)
        // Long enough for a live row to read it to the end without looping (ecasound does not loop).
        let wavSeconds = Int(max(60, seconds + warmup + 20).rounded(.up))
        let wav = dir + "/lv2-bench-input.wav"
        do { try signal.writeWAV(path: wav, seconds: wavSeconds) } catch {
            print("FAILED: cannot write \(wav): \(error)")
            throw ExitCode.failure
        }
        let ecasound = noExternal ? nil : findOnPath("ecasound")

        print("agraph-bench lv2: stereo 440/660 Hz at -12 dBFS → " + Self.chain.map { $0.id }.joined(separator: " → ")
              + ", \(Self.sampleRate / 1000) kHz, period \(period)")
        for (p, d) in zip(Self.chain, descriptions) {
            print("  \(p.id): \(d.name) <\(p.uri)>\(p.perChannel ? " (one instance per channel)" : ""): "
                  + p.values.map { "\($0.symbol)=\(formatG($0.value))" }.joined(separator: " "))
        }
        print("machine: \(machineDescription())")
        let latencyRequest = try holdCPULatency(cpuDMALatency)
        defer { latencyRequest?.release() }
        if let ecasound { print("ecasound: \(ecasound) (" + Self.ecasoundOps(descriptions).joined(separator: " ") + ")") }
        print("")

        var results = LV2BenchResults()

        // 1 and 2, in rounds (the machine's load changes: each row keeps its best round):
        // 1. the plugins' own run calls, raw lilv, hot; 2. AudioGraph offline: engine.render
        // per block, the chain and cut-down graphs that say where the host's time goes.
        let raw: RawLV2Chain
        do {
            raw = try RawLV2Chain(chain: Self.chain, descriptions: descriptions, sampleRate: Double(Self.sampleRate), maxFrames: period)
        } catch {
            print("  plugins' run (raw lilv): FAILED: \(error)")
            throw ExitCode.failure
        }
        var rawRounds: [LV2Timing] = []
        var stageRounds: [[(String, LV2Timing)]] = []
        var variantRounds: [OfflineVariant: [LV2Timing]] = [:]
        for round in 1...rounds {
            rawRounds.append(raw.timeBlocks(signal: signal, frames: period, blocks: blocks))
            stageRounds.append(raw.timeStages(signal: signal, frames: period, blocks: blocks))
            var line = "  round \(round): plugins' run mean \(formatFixed(rawRounds.last!.mean, 2)) µs; engine.render mean:"
            for variant in OfflineVariant.allCases {
                switch offlineBlockTimes(json: Self.graphJSON(wav: wav, variant: variant), directory: dir, frames: period, blocks: blocks,
                                         startWorker: variant.worker) {
                case .success(let t):
                    variantRounds[variant, default: []].append(t)
                    line += " \(variant.shortName) \(formatFixed(t.mean, 2))"
                case .failure(let e):
                    print("  AudioGraph engine.render (offline), \(variant.rawValue): FAILED: \(e.message)")
                    throw ExitCode.failure
                }
            }
            print(line)
            fflush(nil)
        }
        results.plugins = LV2Timing.best(rawRounds)
        results.perPlugin = stageRounds[0].indices.map { i in (stageRounds[0][i].0, LV2Timing.best(stageRounds.map { $0[i].1 })) }
        results.offlineVariants = OfflineVariant.allCases.map { ($0, LV2Timing.best(variantRounds[$0]!)) }

        // 3. ecasound offline: CPU of the long file minus CPU of a 1 s file (its start-up:
        // lilv loading the world, instantiating), per block of the difference.
        var ecaEnv: [String] = []
        if let ecasound {
            ecaEnv = ["LV2_PATH=" + (try Self.bundleFolder(descriptions, dir: dir))]
            let short = dir + "/lv2-bench-short.wav"
            try signal.writeWAV(path: short, seconds: 1)
            let frames = (wavSeconds - 1) * Self.sampleRate
            let args = ["-q", "-f:f32_le,2,\(Self.sampleRate)", "-b:\(period)"]
            let ops = Self.ecasoundOps(descriptions)
            results.ecasoundChain = ecasoundOffline(ecasound, args, ops, long: wav, short: short, frames: frames, env: ecaEnv, dir: dir)
            results.ecasoundPass = ecasoundOffline(ecasound, args, [], long: wav, short: short, frames: frames, env: ecaEnv, dir: dir)
            print("  ecasound offline: chain \(results.ecasoundChain.map { formatFixed($0, 2) + " µs/block" } ?? "FAILED"), "
                  + "no plugins \(results.ecasoundPass.map { formatFixed($0, 2) + " µs/block" } ?? "FAILED")")
        }
        fflush(nil)

        // 4. Live on a dummy jackd.
        if !noLive {
            try runLive(descriptions: descriptions, signal: signal, wav: wav, dir: dir, ecasound: ecasound, ecasoundEnv: ecaEnv,
                        results: &results)
        }

        print("")
        printTable(results)
    }

    // MARK: graphs and command lines

    /// file (looping) → the four plugins → jack-out; the variants cut it down.
    static func graphJSON(wav: String, variant: OfflineVariant = .chain) -> String {
        var nodes = [variant.fileSource ? #"{"id": "src", "type": "file", "params": {"path": "\#(wav)", "loop": true}}"#
                     : #"{"id": "src", "type": "test-tone", "params": {"waveform": "sine", "frequency": 440, "level": -12, "channels": 2}}"#]
        let chain = variant.plugins ? Self.chain : []
        for p in chain {
            let d = try? LV2World.shared.describe(p.uri)
            let params = p.values.map { v -> String in
                let toggle = d?.controlInputs.first { $0.symbol == v.symbol }?.isToggle ?? false
                return "\"\(v.symbol)\": " + (toggle ? (v.value >= 0.5 ? "true" : "false") : formatG(v.value))
            }
            let instances = p.perChannel ? #", "instances": "per-channel""# : ""
            nodes.append(#"{"id": "\#(p.id)", "type": "lv2", "params": {"uri": "\#(p.uri)"\#(instances), "# + params.joined(separator: ", ") + "}}")
        }
        nodes.append(#"{"id": "out", "type": "jack-out"}"#)
        let ids = ["src"] + chain.map(\.id) + ["out"]
        let links = zip(ids, ids.dropFirst()).map { #"{"from": "\#($0)", "to": "\#($1)"}"# }
        return """
            {
              "format": "agraph/1",
              "name": "bench-lv2",
              "description": "agraph-bench lv2: a stereo file through four LV2 plugins into jack-out.",
              "sampleRate": \(sampleRate),
              "nodes": [
                \(nodes.joined(separator: ",\n    "))
              ],
              "links": [
                \(links.joined(separator: ",\n    "))
              ]
            }

            """
    }

    /// `-elv2:URI,v1,…,vN` per plugin: every control input in port order (ecasound's order), the
    /// chain's value or else the port's default, so both hosts run the plugins with the same values.
    static func ecasoundOps(_ descriptions: [LV2PluginDescription]) -> [String] {
        zip(chain, descriptions).map { p, d in
            let values = d.controlInputs.sorted { $0.index < $1.index }.map { formatG(p.value($0.symbol) ?? $0.defaultValue ?? 0) }
            return "-elv2:" + ([p.uri] + values).joined(separator: ",")
        }
    }

    // MARK: ecasound offline

    /// A folder of links to the chain's bundles, for ecasound's LV2_PATH: lilv then loads four
    /// bundles, not every plugin installed (seconds of start-up with LSP's).
    static func bundleFolder(_ descriptions: [LV2PluginDescription], dir: String) throws -> String {
        let folder = dir + "/lv2"
        mkdir(folder, 0o755)
        for d in descriptions {
            let path = URL(string: d.bundle)?.path ?? d.bundle
            let link = folder + "/" + URL(fileURLWithPath: path).lastPathComponent
            if access(link, F_OK) != 0, symlink(path, link) != 0 {
                throw BenchError(message: "cannot link \(link) → \(path)")
            }
        }
        return folder
    }

    /// ecasound's CPU per `period` frames, µs: (CPU with the long input − CPU with the short
    /// one) / blocks of the difference (`frames`); each the best of `runs`. nil when it fails.
    func ecasoundOffline(_ path: String, _ args: [String], _ ops: [String], long: String, short: String, frames: Int,
                         env: [String], dir: String) -> Double? {
        guard let a = ecasoundCPU(path, args + ["-i:\(long)"] + ops + ["-o:null"], env: env, dir: dir),
              let b = ecasoundCPU(path, args + ["-i:\(short)"] + ops + ["-o:null"], env: env, dir: dir) else { return nil }
        return (a - b) / (Double(frames) / Double(period))
    }

    /// CPU (user + system, from wait4's rusage) of one ecasound run, µs; the best of `runs`.
    func ecasoundCPU(_ path: String, _ args: [String], env: [String], dir: String) -> Double? {
        var best = Double.infinity
        let log = dir + "/ecasound-offline.log"
        for _ in 0..<runs {
            guard let pid = spawnBackground(path, args, env: env, output: log) else { return nil }
            var status: Int32 = 0
            var usage = rusage()
            guard wait4(pid, &status, 0, &usage) == pid, status == 0 else {
                let text = (readText(log) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
                print("  ecasound failed (status \(status)): \(text)")
                return nil
            }
            if let text = readText(log), text.contains("ERROR") {
                print("  ecasound reported: " + text.split(separator: "\n").prefix(3).joined(separator: " / "))
                return nil
            }
            let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
            best = min(best, cpu)
        }
        return best
    }

    // MARK: live

    func runLive(descriptions: [LV2PluginDescription], signal: LV2BenchSignal, wav: String, dir: String, ecasound: String?,
                 ecasoundEnv: [String], results: inout LV2BenchResults) throws {
        let name = "agraph-bench-lv2-\(getpid())"
        let server: JACKServer
        do { server = try JACKServer(name: name, driver: "dummy", sampleRate: Self.sampleRate, period: period, realtime: realtime) } catch {
            print("  cannot start jackd: \(error)")
            throw ExitCode.failure
        }
        defer { server.stop() }
        let observer: Observer
        do { observer = try Observer(server: name) } catch {
            print("  cannot open the observer client: \(error)")
            throw ExitCode.failure
        }
        defer { observer.close() }
        usleep(300_000)
        let window = Window(seconds: seconds, warmup: warmup, period: period, jackdPID: server.process.processIdentifier)

        // The raw chain inside a plain JACK client.
        do {
            jackThreadTIDs.reset()
            let raw = try RawLV2Chain(chain: Self.chain, descriptions: descriptions, sampleRate: Double(Self.sampleRate),
                                      maxFrames: period)
            let client = try RawLV2Client(server: name, chain: raw, signal: signal)
            var row = window.measure(name: "plugins' run in a plain JACK client", pid: "self",
                                     drain: { _ = client.takeCycleTimes() }, collect: { client.takeCycleTimes() },
                                     load: { client.client.cpuLoad }, xruns: { client.xruns.load(ordering: .relaxed) })
            if !(client.peak > 0.01) { row.note += (row.note.isEmpty ? "" : "; ") + "output peak \(client.peak)?" }
            client.close()
            row.runsPerCycle = client.pairsSeen.map { UInt32(truncatingIfNeeded: min($0.probe, UInt64(UInt32.max))) }
            row.hostPerCycle = zip(client.pairsSeen, row.runsPerCycle).map { $0.nanoseconds &- min($1, $0.nanoseconds) }
            results.liveRaw = row
        } catch {
            results.liveRaw = LiveRow(name: "plugins' run in a plain JACK client", note: "FAILED: \(error)")
        }
        print("  \(results.liveRaw!.name): \(liveSummary(results.liveRaw!))")
        fflush(nil)

        results.liveAgraph = runAgraphLive(name: "AudioGraph (agraph run): file → lv2 ×4 → jack-out",
                                           json: Self.graphJSON(wav: wav), directory: dir, server: name, window: window)
        print("  \(results.liveAgraph!.name): \(liveSummary(results.liveAgraph!))")
        fflush(nil)
        results.liveAgraphTone = runAgraphLive(name: "AudioGraph (agraph run): test-tone → lv2 ×4 → jack-out",
                                               json: Self.graphJSON(wav: wav, variant: .tonePlugins), directory: dir, server: name,
                                               window: window)
        print("  \(results.liveAgraphTone!.name): \(liveSummary(results.liveAgraphTone!))")
        fflush(nil)

        if let ecasound {
            let args = ["-q", "-G:jack,ecasound-bench,notransport", "-f:f32_le,2,\(Self.sampleRate)", "-b:\(period)", "-i:\(wav)"]
                + Self.ecasoundOps(descriptions) + ["-o:jack"]
            results.liveEcasound = window.measureExternal(name: "ecasound -elv2: ×4 → jack", path: ecasound, args: args,
                                                          server: name, clientPrefix: "ecasound-bench", observer: observer, dir: dir,
                                                          env: ecasoundEnv)
            print("  \(results.liveEcasound!.name): \(liveSummary(results.liveEcasound!))")
        }
    }

    /// AudioGraph as `agraph run` runs it (RunningGraph on the server, Options.measureCycles),
    /// measured like `agraph-bench live`'s rows; the note says the output's peak (the chain's
    /// output is about -10 dBFS: silence would mean the plugins ran on nothing).
    func runAgraphLive(name: String, json: String, directory: String, server: String, window: Window) -> LiveRow {
        let binder = JACKPortBinder()
        let graph: ValidatedGraph
        switch GraphValidator(registry: .builtIn.addingJACK(binder)).validate(bytes: Array(json.utf8), file: "lv2.json", directory: directory) {
        case .success(let g): graph = g
        case .failure(let e): return LiveRow(name: name, note: "FAILED: graph invalid: \(e)")
        }
        var options = RunningGraph.Options()
        options.server = .external
        options.serverName = server
        options.clientName = "agraph-bench-lv2"
        options.measureCycles = true
        // Each cycle's record carries the run calls' running total: the
        // differences pair every callback with its own run calls.
        options.cycleProbe = { agraph_lv2_run_timing_total() }
        options.threadInit = recordJACKThread
        jackThreadTIDs.reset()
        // The plugins' run calls, timed inside the same callbacks (nodes
        // read the switch when prepared): their sum over the window, from
        // the drain to the last collect.
        agraph_lv2_run_timing_enable(1)
        defer { agraph_lv2_run_timing_enable(0) }
        let live: RunningGraph
        do { live = try RunningGraph(graph: graph, binder: binder, options: options) } catch {
            return LiveRow(name: name, note: "FAILED: \(error)")
        }
        defer { live.stop() }
        func outputPeak() -> Double { live.status().peaks.map(\.dBFS).max() ?? -.infinity }
        var notes: [String] = []
        var peak = -Double.infinity
        var runFrom: UInt64 = 0, runTo: UInt64 = 0
        var samples: [CycleSample] = []
        var row = window.measure(
            name: name, pid: "self",
            drain: {
                _ = live.takeCycleTimes()
                runFrom = agraph_lv2_run_timing_total()
            },
            collect: {
                let t = live.takeCycleSamples()
                runTo = agraph_lv2_run_timing_total()
                samples += t
                return t.map(\.nanoseconds)
            },
            load: {
                peak = max(peak, outputPeak())
                return live.status().cpuLoad
            },
            xruns: { live.status().xruns })
        if !row.callback.isEmpty, runTo > runFrom {
            row.pluginRunMean = Double(runTo - runFrom) / Double(row.callback.count) / 1000
        }
        // Per cycle: the run total's step since the cycle before (the first
        // cycle has no "before" and is left out).
        var k = 1
        while k < samples.count {
            let run = UInt32(truncatingIfNeeded: min(samples[k].probe &- samples[k - 1].probe, UInt64(UInt32.max)))
            row.runsPerCycle.append(run)
            row.hostPerCycle.append(samples[k].nanoseconds &- min(run, samples[k].nanoseconds))
            k += 1
        }
        let s = live.status()
        if s.serverGone { notes.insert("FAILED: server gone", at: 0) }
        if s.underruns > 0 { notes.append("\(s.underruns) underruns") }
        notes.append("output peak \(formatFixed(peak, 1)) dBFS while measured")
        if !row.note.isEmpty { notes.insert(row.note, at: 0) }
        row.note = notes.joined(separator: "; ")
        return row
    }

    func liveSummary(_ row: LiveRow) -> String {
        let cb = row.callback.isEmpty ? "" : "callback " + LV2Timing(row.callback.map(UInt64.init)).summary + "; "
        return cb + "process CPU \(row.processCPU.map { formatFixed($0, 2) } ?? "-") µs/cycle, xruns \(row.xruns.map(String.init) ?? "-")"
            + (row.note.isEmpty ? "" : "; \(row.note)")
    }

    // MARK: the table

    func printTable(_ r: LV2BenchResults) {
        func l(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(w - s.count, 0)) }
        func rt(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(w - s.count, 0)) + s }
        func us(_ x: Double?) -> String { x.map { $0.isFinite ? formatFixed($0, 2) : "-" } ?? "-" }
        func pct(_ a: Double?, _ b: Double?) -> String {
            guard let a, let b, b > 0 else { return "-" }
            return (a >= b ? "+" : "") + formatFixed((a - b) / b * 100, 1) + " %"
        }
        let w = 58
        print("rows 1 and 2: the best of \(rounds) rounds of \(blocks) blocks (each figure its minimum over the rounds)")
        print("period \(period) frames at \(Self.sampleRate) Hz (\(formatFixed(Double(period) / Double(Self.sampleRate) * 1e3, 2)) ms); µs per cycle")
        print(l("row", w) + rt("median", 9) + rt("p99", 9) + rt("mean", 9) + rt("proc CPU", 10) + rt("xruns", 7) + "  vs plugins' run")
        print(String(repeating: "-", count: w + 9 * 3 + 10 + 7 + 18))
        let plugins = r.plugins
        func timingRow(_ name: String, _ t: LV2Timing?, _ ref: LV2Timing?, note: String = "") {
            guard let t else { print(l(name, w) + "  " + (note.isEmpty ? "-" : note)); return }
            print(l(name, w) + rt(us(t.median), 9) + rt(us(t.p99), 9) + rt(us(t.mean), 9) + rt("-", 10) + rt("-", 7)
                  + "  " + (ref.map { "median " + pct(t.median, $0.median) + ", mean " + pct(t.mean, $0.mean) } ?? "(reference)")
                  + (note.isEmpty ? "" : "  " + note))
        }
        timingRow("1 plugins' run, raw lilv loop, in-process (hot)", plugins, nil)
        for (name, t) in r.perPlugin {
            print(l("    " + name, w) + rt(us(t.median), 9) + rt(us(t.p99), 9) + rt(us(t.mean), 9))
        }
        timingRow("2 AudioGraph engine.render, offline", r.offline, plugins)
        for (v, t) in r.offlineVariants where v != .chain {
            print(l("    " + v.rawValue, w) + rt(us(t.median), 9) + rt(us(t.p99), 9) + rt(us(t.mean), 9))
        }
        func liveRow(_ name: String, _ row: LiveRow?, _ ref: LV2Timing?) {
            guard let row else { return }
            let t = row.callback.isEmpty ? nil : LV2Timing(row.callback.map(UInt64.init))
            print(l(name, w) + rt(us(t?.median), 9) + rt(us(t?.p99), 9) + rt(us(t?.mean), 9) + rt(us(row.processCPU), 10)
                  + rt(row.xruns.map(String.init) ?? "-", 7) + "  "
                  + (t.map { "median " + pct($0.median, ref?.median) + ", mean " + pct($0.mean, ref?.mean) } ?? "")
                  + (row.note.hasPrefix("FAILED") ? "  " + row.note : ""))
        }
        func perCycleRows(_ row: LiveRow?, indent: String) {
            guard let row, !row.runsPerCycle.isEmpty else { return }
            let runs = LV2Timing(row.runsPerCycle.map(UInt64.init)), host = LV2Timing(row.hostPerCycle.map(UInt64.init))
            print(l(indent + "its plugins' run calls, in the same callbacks", w) + rt(us(runs.median), 9) + rt(us(runs.p99), 9)
                  + rt(us(runs.mean), 9))
            print(l(indent + "the rest of each callback (callback − run calls)", w) + rt(us(host.median), 9) + rt(us(host.p99), 9)
                  + rt(us(host.mean), 9) + rt("-", 10) + rt("-", 7) + "  median " + pct(runs.median + host.median, runs.median)
                  + " of the run calls'")
        }
        liveRow("3 plugins' run in a plain JACK client (callback)", r.liveRaw, plugins)
        perCycleRows(r.liveRaw, indent: "    ")
        func runsRow(_ row: LiveRow?) {
            if row?.runsPerCycle.isEmpty == false { perCycleRows(row, indent: "      "); return }
            guard let row, let runs = row.pluginRunMean, !row.callback.isEmpty else { return }
            let mean = LV2Timing(row.callback.map(UInt64.init)).mean
            print(l("      its plugins' run calls, in the same callbacks", w) + rt("-", 9) + rt("-", 9) + rt(us(runs), 9)
                  + rt("-", 10) + rt("-", 7) + "  callback mean " + pct(mean, runs))
        }
        liveRow("4 AudioGraph live, agraph run (callback)", r.liveAgraph, plugins)
        runsRow(r.liveAgraph)
        liveRow("    the same with test-tone as the source", r.liveAgraphTone, plugins)
        runsRow(r.liveAgraphTone)
        if let e = r.ecasoundChain {
            print(l("5 ecasound offline -o:null (CPU per block)", w) + rt("-", 9) + rt("-", 9) + rt(us(e), 9) + rt("-", 10) + rt("-", 7)
                  + "  mean " + pct(e, plugins?.mean))
        }
        if let e = r.ecasoundPass {
            print(l("    ecasound without the plugins", w) + rt("-", 9) + rt("-", 9) + rt(us(e), 9))
        }
        if let e = r.liveEcasound {
            print(l("6 ecasound live -o:jack (process CPU)", w) + rt("-", 9) + rt("-", 9) + rt("-", 9) + rt(us(e.processCPU), 10)
                  + rt(e.xruns.map(String.init) ?? "-", 7) + (e.note.hasPrefix("FAILED") ? "  " + e.note : ""))
        }
        print("")
        // The aim: host overhead under 10 %.
        if let p = plugins, let o = r.offline {
            let ov = (o.mean - p.mean) / p.mean * 100
            print("host overhead, offline (engine.render mean vs plugins' run mean): \(formatFixed(ov, 1)) % "
                  + "(\(formatFixed(o.mean - p.mean, 2)) µs/cycle); aim < 10 %: \(ov < 10 ? "met" : "NOT met")")
        }
        if let p = plugins, let o = r.offlineVariants.first(where: { $0.0 == .tonePluginsIdle })?.1 {
            let ov = (o.mean - p.mean) / p.mean * 100, ovm = (o.median - p.median) / p.median * 100
            print("host overhead, offline, test-tone source and the worker threads not started (no wake-ups after each block): "
                  + "mean \(formatFixed(ov, 1)) %, median \(formatFixed(ovm, 1)) % (\(formatFixed(o.mean - p.mean, 2)) µs/cycle)")
        }
        if let p = plugins, let a = r.liveAgraph, !a.callback.isEmpty {
            let t = LV2Timing(a.callback.map(UInt64.init))
            let ov = (t.median - p.median) / p.median * 100
            print("host overhead, live (agraph run callback median vs plugins' run median, hot): \(formatFixed(ov, 1)) %; aim < 10 %: "
                  + (ov < 10 ? "met" : "NOT met"))
            if let raw = r.liveRaw, !raw.callback.isEmpty {
                let q = LV2Timing(raw.callback.map(UInt64.init))
                let ov2 = (t.median - q.median) / q.median * 100
                print("host overhead, live (agraph run callback median vs the plain JACK client's callback median, same jackd): "
                      + "\(formatFixed(ov2, 1)) %; aim < 10 %: " + (ov2 < 10 ? "met" : "NOT met"))
            }
        }
        for (label, row) in [("file source", r.liveAgraph), ("test-tone source", r.liveAgraphTone)] {
            guard let row, let runs = row.pluginRunMean, runs > 0, !row.callback.isEmpty else { continue }
            let mean = LV2Timing(row.callback.map(UInt64.init)).mean
            let ov = (mean - runs) / runs * 100
            print("host overhead, live, \(label) (agraph run callback mean vs its plugins' run calls in the same callbacks): "
                  + "\(formatFixed(ov, 1)) % (\(formatFixed(mean - runs, 2)) µs/cycle); aim < 10 %: " + (ov < 10 ? "met" : "NOT met"))
        }
        // Per cycle: what the host adds around the run calls of the same
        // callback, against those run calls (medians over the cycles).
        for (label, row) in [("AudioGraph, file source", r.liveAgraph), ("AudioGraph, test-tone source", r.liveAgraphTone),
                             ("the plain JACK client", r.liveRaw)] {
            guard let row, !row.runsPerCycle.isEmpty else { continue }
            let runs = LV2Timing(row.runsPerCycle.map(UInt64.init)).median
            let host = LV2Timing(row.hostPerCycle.map(UInt64.init)).median
            guard runs > 0 else { continue }
            let ov = host / runs * 100
            print("host overhead, live, per cycle, \(label) (median of callback − its run calls, \(formatFixed(host, 2)) µs, "
                  + "over the median of those run calls, \(formatFixed(runs, 2)) µs): \(formatFixed(ov, 1)) %"
                  + (label.hasPrefix("AudioGraph") ? "; aim < 10 %: " + (ov < 10 ? "met" : "NOT met") : ""))
        }
        if let a = r.liveAgraph?.processCPU, let e = r.liveEcasound?.processCPU {
            print("live process CPU per cycle: AudioGraph \(formatFixed(a, 2)) µs, ecasound \(formatFixed(e, 2)) µs (\(formatFixed(a / e, 2))×)")
        }
        if let e = r.ecasoundChain, let o = r.offline {
            print("offline per block: AudioGraph engine.render mean \(formatFixed(o.mean, 2)) µs (one thread, file reader not counted), "
                  + "ecasound CPU \(formatFixed(e, 2)) µs (whole process, file reading included)")
        }
    }
}

/// The offline graphs: the chain, and cut-down graphs that say what the host adds.
enum OfflineVariant: String, CaseIterable {
    case chain = "file → lv2 ×4 → jack-out"
    case tonePlugins = "test-tone → lv2 ×4 → jack-out"
    case tonePluginsIdle = "the same, the engine's worker threads not started"
    case fileOnly = "file → jack-out (no plugins)"
    case toneOnly = "test-tone → jack-out (no plugins, no worker)"

    var shortName: String {
        switch self {
        case .chain: "chain"
        case .tonePlugins: "tone+plugins"
        case .tonePluginsIdle: "tone+plugins(no worker)"
        case .fileOnly: "file only"
        case .toneOnly: "tone only"
        }
    }

    var fileSource: Bool { self == .chain || self == .fileOnly }
    var plugins: Bool { self == .chain || self == .tonePlugins || self == .tonePluginsIdle }
    /// Whether the engine's worker threads run (woken after every block: a semaphore post each).
    var worker: Bool { self != .tonePluginsIdle }
}

/// Results of the rows, in µs.
struct LV2BenchResults {
    var plugins: LV2Timing?
    var perPlugin: [(String, LV2Timing)] = []
    var offlineVariants: [(OfflineVariant, LV2Timing)] = []
    var offline: LV2Timing? { offlineVariants.first { $0.0 == .chain }?.1 }
    var ecasoundChain: Double?
    var ecasoundPass: Double?
    var liveRaw: LiveRow?
    var liveAgraph: LiveRow?
    var liveAgraphTone: LiveRow?
    var liveEcasound: LiveRow?
}

/// Median, p99 and mean of block times given in ns; in µs.
struct LV2Timing {
    var median, p99, mean: Double
    var count: Int

    init(_ ns: [UInt64]) {
        let s = ns.sorted()
        count = s.count
        func at(_ p: Double) -> Double {
            guard !s.isEmpty else { return .nan }
            return Double(s[min(s.count - 1, max(0, Int((p / 100 * Double(s.count)).rounded(.up)) - 1))]) / 1000
        }
        median = at(50)
        p99 = at(99)
        mean = s.isEmpty ? .nan : Double(s.reduce(0, +)) / Double(s.count) / 1000
    }

    /// The best of several rounds: each figure's minimum.
    static func best(_ rounds: [LV2Timing]) -> LV2Timing {
        var b = rounds[0]
        for r in rounds.dropFirst() {
            b.median = min(b.median, r.median)
            b.p99 = min(b.p99, r.p99)
            b.mean = min(b.mean, r.mean)
        }
        return b
    }

    var summary: String {
        "median \(formatFixed(median, 2)) µs, p99 \(formatFixed(p99, 2)) µs, mean \(formatFixed(mean, 2)) µs (\(count) blocks)"
    }
}

/// A shortest round-trip decimal for a parameter value.
func formatG(_ v: Float) -> String {
    v == v.rounded() && abs(v) < 1e7 ? String(Int(v)) : "\(v)"
}

/// The test signal: one second of 440 Hz left, 660 Hz right at -12 dBFS peak
/// (whole cycles, so it loops without a click). [main-thread; `copy` any thread]
final class LV2BenchSignal: @unchecked Sendable {
    let frames: Int
    let left: UnsafeMutablePointer<Float>
    let right: UnsafeMutablePointer<Float>

    init(sampleRate: Int) {
        frames = sampleRate
        left = .allocate(capacity: frames)
        right = .allocate(capacity: frames)
        let a = pow(10, -12.0 / 20)
        for i in 0..<frames {
            left[i] = Float(a * sin(2 * Double.pi * 440 * Double(i) / Double(sampleRate)))
            right[i] = Float(a * sin(2 * Double.pi * 660 * Double(i) / Double(sampleRate)))
        }
    }

    deinit {
        left.deallocate()
        right.deallocate()
    }

    /// Copies `n` frames starting at `offset` (wrapping) into two buffers.
    func copy(into l: UnsafeMutablePointer<Float>, _ r: UnsafeMutablePointer<Float>, offset: Int, count n: Int) {
        var i = 0
        var k = offset % frames
        while i < n {
            l[i] = left[k]
            r[i] = right[k]
            k += 1
            if k == frames { k = 0 }
            i += 1
        }
    }

    /// A plain float WAV (WAVE_FORMAT_IEEE_FLOAT, 16-byte fmt chunk: what ecasound reads), the second repeated.
    func writeWAV(path: String, seconds: Int) throws {
        let dataBytes = frames * seconds * 8
        var header = [UInt8]()
        func u32(_ v: Int) { for s in stride(from: 0, to: 32, by: 8) { header.append(UInt8((v >> s) & 0xff)) } }
        func u16(_ v: Int) { header.append(UInt8(v & 0xff)); header.append(UInt8((v >> 8) & 0xff)) }
        header += Array("RIFF".utf8); u32(36 + dataBytes); header += Array("WAVE".utf8)
        header += Array("fmt ".utf8); u32(16); u16(3); u16(2); u32(frames); u32(frames * 8); u16(8); u16(32)
        header += Array("data".utf8); u32(dataBytes)
        var second = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames { second[2 * i] = left[i]; second[2 * i + 1] = right[i] }
        guard let f = fopen(path, "wb") else { throw BenchError(message: "fopen: \(String(cString: strerror(errno)))") }
        defer { fclose(f) }
        guard fwrite(header, 1, header.count, f) == header.count else { throw BenchError(message: "write failed") }
        for _ in 0..<seconds {
            let n = second.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
            guard n == frames * 8 else { throw BenchError(message: "write failed") }
        }
    }
}

// MARK: - the raw lilv chain

/// The chain hosted with lilv alone: instances connected buffer to buffer
/// (stage k reads pair k, writes pair k+1), controls set once, activated.
/// Made and timed on one thread; `run(frames:)` is what a JACK client's
/// process callback calls. [main-thread | audio-thread; run: audio]
final class RawLV2Chain: @unchecked Sendable {
    private let world: OpaquePointer
    /// Every instance, in run order; `stageOf[i]` is its stage.
    private(set) var instances: [UnsafeMutablePointer<LilvInstance>] = []
    private(set) var stageOf: [Int] = []
    let names: [String]
    /// Two buffers per stage boundary: [2k] left, [2k+1] right.
    let buffers: [UnsafeMutablePointer<Float>]
    private var controls: [UnsafeMutablePointer<Float>] = []
    private var keep: [UnsafeMutableRawPointer] = []
    /// The features' URI strings (strdup: free) and structs (deallocate), in pairs.
    private var featureMemory: [UnsafeMutableRawPointer] = []
    private let features: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>

    init(chain: [LV2BenchPlugin], descriptions: [LV2PluginDescription], sampleRate: Double, maxFrames: Int) throws {
        guard let w = lilv_world_new() else { throw BenchError(message: "lilv_world_new failed") }
        world = w
        lilv_world_load_all(w)
        names = chain.map(\.id)
        buffers = (0..<(2 * (chain.count + 1))).map { _ in
            let b = UnsafeMutablePointer<Float>.allocate(capacity: maxFrames)
            b.initialize(repeating: 0, count: maxFrames)
            return b
        }
        // Features: URID map/unmap (AudioGraph's process table), options (block lengths, sample rate), bounded block length.
        let urids = LV2URIDTable.shared
        let values = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        values.storeBytes(of: Int32(1), toByteOffset: 0, as: Int32.self)
        values.storeBytes(of: Int32(maxFrames), toByteOffset: 4, as: Int32.self)
        values.storeBytes(of: Int32(maxFrames), toByteOffset: 8, as: Int32.self)
        values.storeBytes(of: Float(sampleRate), toByteOffset: 12, as: Float.self)
        let intType = urids.map(LV2URI.atomInt), floatType = urids.map(LV2URI.atomFloat)
        let entries: [(String, Int, LV2_URID)] = [(LV2URI.minBlockLength, 0, intType), (LV2URI.maxBlockLength, 4, intType),
                                                   (LV2URI.nominalBlockLength, 8, intType), (LV2URI.sampleRate, 12, floatType)]
        let options = UnsafeMutablePointer<LV2_Options_Option>.allocate(capacity: entries.count + 1)
        for (i, e) in entries.enumerated() {
            options[i] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: urids.map(e.0), size: 4, type: e.2,
                                            value: UnsafeRawPointer(values + e.1))
        }
        options[entries.count] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil)
        let list: [(String, UnsafeMutableRawPointer?)] = [
            (LV2URI.uridMap, UnsafeMutableRawPointer(urids.mapFeature)), (LV2URI.uridUnmap, UnsafeMutableRawPointer(urids.unmapFeature)),
            (LV2URI.options, UnsafeMutableRawPointer(options)), (LV2URI.boundedBlockLength, nil),
        ]
        features = .allocate(capacity: list.count + 1)
        for (i, (uri, data)) in list.enumerated() {
            let u = strdup(uri)!
            let f = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
            f.initialize(to: LV2_Feature(URI: UnsafePointer(u), data: data))
            features[i] = UnsafePointer(f)
            featureMemory += [UnsafeMutableRawPointer(u), UnsafeMutableRawPointer(f)]
        }
        features[list.count] = nil
        keep = [values, UnsafeMutableRawPointer(options)]

        for (s, (spec, d)) in zip(chain, descriptions).enumerated() {
            guard let uri = lilv_new_uri(w, spec.uri), let plugin = lilv_plugins_get_by_uri(lilv_world_get_all_plugins(w), uri) else {
                throw BenchError(message: "lilv does not find \(spec.uri)")
            }
            lilv_node_free(uri)
            let ins = d.audioInputs, outs = d.audioOutputs
            let count = spec.perChannel ? 2 : 1
            guard spec.perChannel ? (ins.count == 1 && outs.count == 1) : (ins.count == 2 && outs.count == 2) else {
                throw BenchError(message: "\(spec.uri): \(ins.count) in / \(outs.count) out does not fit \(spec.perChannel ? "per-channel" : "stereo")")
            }
            for k in 0..<count {
                guard let inst = lilv_plugin_instantiate(plugin, sampleRate, features) else {
                    throw BenchError(message: "\(spec.uri) could not be instantiated")
                }
                let ctl = UnsafeMutablePointer<Float>.allocate(capacity: d.ports.count)
                ctl.initialize(repeating: 0, count: d.ports.count)
                controls.append(ctl)
                for p in d.ports {
                    switch p.kind {
                    case .control:
                        if p.isInput { ctl[p.index] = spec.value(p.symbol) ?? p.defaultValue ?? 0 }
                        lilv_instance_connect_port(inst, UInt32(p.index), ctl + p.index)
                    case .audio:
                        let pos = p.isInput ? ins.firstIndex { $0.index == p.index } : outs.firstIndex { $0.index == p.index }
                        guard let pos else { throw BenchError(message: "\(spec.uri): audio port \(p.symbol) is a side chain") }
                        let channel = spec.perChannel ? k : pos
                        lilv_instance_connect_port(inst, UInt32(p.index), buffers[2 * (p.isInput ? s : s + 1) + channel])
                    default:
                        throw BenchError(message: "\(spec.uri): port \(p.symbol) is \(p.kind.rawValue): the raw loop connects audio and control ports only")
                    }
                }
                lilv_instance_activate(inst)
                instances.append(inst)
                stageOf.append(s)
            }
        }
    }

    deinit {
        for inst in instances {
            lilv_instance_deactivate(inst)
            lilv_instance_free(inst)
        }
        for c in controls { c.deallocate() }
        for b in buffers { b.deallocate() }
        for k in keep { k.deallocate() }
        for (i, m) in featureMemory.enumerated() {
            if i % 2 == 0 { free(m) } else { m.deallocate() }
        }
        features.deallocate()
        lilv_world_free(world)
    }

    var input: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) { (buffers[0], buffers[1]) }
    var output: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) { (buffers[buffers.count - 2], buffers[buffers.count - 1]) }

    /// Every instance's run, in order. [audio-thread]
    @inline(__always)
    func run(frames: Int) {
        let n = UInt32(frames)
        var i = 0
        while i < instances.count {
            lilv_instance_run(instances[i], n)
            i += 1
        }
    }

    /// ns per block of the run calls (the input copied in before, not timed), after 2000 warm-up blocks.
    func timeBlocks(signal: LV2BenchSignal, frames: Int, blocks: Int) -> LV2Timing {
        var times = [UInt64](repeating: 0, count: blocks)
        var offset = 0
        for b in -2000..<blocks {
            signal.copy(into: buffers[0], buffers[1], offset: offset, count: frames)
            offset += frames
            let t0 = MonotonicClock.nanoseconds()
            run(frames: frames)
            let t1 = MonotonicClock.nanoseconds()
            if b >= 0 { times[b] = t1 - t0 }
        }
        return LV2Timing(times)
    }

    /// The same, each stage's run calls timed on their own: what each plugin costs.
    func timeStages(signal: LV2BenchSignal, frames: Int, blocks: Int) -> [(String, LV2Timing)] {
        let stages = names.count
        var times = [[UInt64]](repeating: [UInt64](repeating: 0, count: blocks), count: stages)
        var offset = 0
        let n = UInt32(frames)
        for b in -2000..<blocks {
            signal.copy(into: buffers[0], buffers[1], offset: offset, count: frames)
            offset += frames
            var i = 0
            for s in 0..<stages {
                let t0 = MonotonicClock.nanoseconds()
                while i < instances.count && stageOf[i] == s {
                    lilv_instance_run(instances[i], n)
                    i += 1
                }
                if b >= 0 { times[s][b] = MonotonicClock.nanoseconds() - t0 }
            }
        }
        return (0..<stages).map { (names[$0], LV2Timing(times[$0])) }
    }
}

/// The raw chain in a plain JACK client: its process callback copies the test
/// signal in, runs the chain, copies the result to two output ports; it
/// times the whole callback and the run calls alone.
final class RawLV2Client: BenchJACKClient, @unchecked Sendable {
    private let chain: RawLV2Chain
    private let signal: LV2BenchSignal
    private var offset = 0
    /// Each cycle's callback time with its run calls' (`probe`), paired in
    /// one record; drained into `pairsSeen` by `takeCycleTimes`.
    private let pairs = SPSCRing<CycleSample>(minimumCapacity: 1 << 16)
    private(set) var pairsSeen: [CycleSample] = []
    private var measuring = false

    init(server: String, chain: RawLV2Chain, signal: LV2BenchSignal) throws {
        self.chain = chain
        self.signal = signal
        try super.init(name: "agraph-bench-lv2-plain", server: server)
        try activate()
    }

    /// Closes the client before the chain goes (the callback uses it).
    deinit { close() }

    /// [audio-thread]
    override func process(_ nframes: UInt32) {
        let start = MonotonicClock.nanoseconds()
        let n = Int(nframes)
        guard let (l, r) = outputBuffers(nframes) else { return }
        let (il, ir) = chain.input
        signal.copy(into: il, ir, offset: offset, count: n)
        offset = (offset + n) % signal.frames
        let t0 = MonotonicClock.nanoseconds()
        chain.run(frames: n)
        let t1 = MonotonicClock.nanoseconds()
        let (ol, or) = chain.output
        l.update(from: ol, count: n)
        r.update(from: or, count: n)
        var m: Float = 0
        var i = 0
        while i < n { m = max(m, abs(l[i]), abs(r[i])); i += 1 }
        let took = finishCycle(start: start, peak: m)
        _ = pairs.push(CycleSample(nanoseconds: took, probe: t1 &- t0))
    }

    /// Callback times since the last call; the same cycles with their run
    /// times are kept in `pairsSeen` (cleared by the first call: the
    /// warm-up). [control-thread]
    override func takeCycleTimes() -> [UInt32] {
        let out = super.takeCycleTimes()
        if !measuring { measuring = true; _ = takePairs(); pairsSeen = []; return out }
        pairsSeen += takePairs()
        return out
    }

    private func takePairs() -> [CycleSample] {
        var out: [CycleSample] = []
        var v = CycleSample(nanoseconds: 0, probe: 0)
        while pairs.pop(into: &v) { out.append(v) }
        return out
    }
}

// MARK: - AudioGraph offline

/// engine.render(frames:) timed per block (the file reader's worker serviced
/// between blocks, not timed), after 2000 warm-up blocks; buses sized as live.
/// `startWorker` false: the engine's worker threads are not started, so its
/// wake-up after each block posts a semaphore nobody waits on (the graph must
/// have no fed source then, and its plugins no scheduled work).
func offlineBlockTimes(json: String, directory: String, frames: Int, blocks: Int, startWorker: Bool = true) -> Result<LV2Timing, BenchError> {
    let binder = JACKPortBinder()
    let graph: ValidatedGraph
    switch GraphValidator(registry: .builtIn.addingJACK(binder)).validate(bytes: Array(json.utf8), file: "lv2.json", directory: directory) {
    case .success(let g): graph = g
    case .failure(let e): return .failure(BenchError(message: "graph invalid: \(e)"))
    }
    let compiled: CompiledGraph
    do { compiled = try GraphCompiler.compile(graph, maxFrames: RunningGraph.Options().maxFrames) } catch {
        return .failure(BenchError(message: "compile: \(error)"))
    }
    let engine = compiled.engine
    if startWorker { engine.worker.start() }
    defer {
        if startWorker { engine.worker.stop() }
        _ = engine.worker.finishJobs(completed: false)
    }
    var times = [UInt64](repeating: 0, count: blocks)
    for b in -2000..<blocks {
        if startWorker { engine.worker.waitUntilReady(frames: frames) }
        let t0 = MonotonicClock.nanoseconds()
        engine.render(frames: frames)
        let t1 = MonotonicClock.nanoseconds()
        if b >= 0 { times[b] = t1 - t0 }
    }
    return .success(LV2Timing(times))
}
