// agraph-bench binaural: the `binaural` node offline against ffmpeg's
// sofalizer, and live at period 128 against the plain client. See
// docs/performance.md, "Binaural renderer".
import ArgumentParser
import AudioGraph
import AudioGraphJACK
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct BinauralBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "binaural",
        abstract: "7.1 → binaural: agraph render against ffmpeg -af sofalizer offline (10 min of noise), and live CPU per cycle at period 128 against the plain client.",
        discussion: """
            Offline: 10 minutes of 8-channel white noise tagged 7.1 (16-bit WAV, written first by the \
            in-process renderer), at 48 kHz and at 44.1 kHz (the default set's own rate). Jobs are whole \
            processes, wall clock, taking turns run by run: agraph render (file → binaural → float WAV) \
            and ffmpeg -i IN -af sofalizer=sofa=/usr/share/libmysofa/default.sofa:type=freq:interpolate=0 \
            with the back pair moved to ±135° (speakers=4 135|5 225, BS.2051's 7.1 as the node uses) → \
            float WAV. Both take the nearest measurement of the same set. sofalizer works at the set's \
            rate only, so with 48 kHz input ffmpeg resamples the input to 44.1 kHz first (its own \
            choice, counted in its time); the 44.1 kHz pair compares the renderers without it. Live: a \
            dummy jackd at 48 kHz, period 128; 8-channel noise → binaural → jack-out, measured as \
            `agraph-bench live` measures (callback time, process CPU per cycle), beside the plain client. \
            Offline jobs give CPU time (user + system, wait4) beside wall time; each job's output is \
            removed before each of its runs; the temporary folder goes at the end unless --keep.
            """)

    @Option(help: "Seconds of the offline input.") var seconds: Double = 600
    @Option(help: "Timed runs of each offline job.") var runs: Int = 3
    @Option(help: "Seconds measured live (after warm-up).") var liveSeconds: Double = 20
    @Option(help: "Live period in frames.") var period: Int = 128
    @Option(help: "Partition sizes to try offline beside the default, comma-separated (empty: none).") var partitions: String = "512"
    @Flag(help: "Skip the partition sweep (engine.render per frame for each partition size and block).") var noSweep = false
    @Flag(help: "Skip the live part.") var noLive = false
    @Flag(help: "Skip the offline part.") var noOffline = false
    @Flag(help: "Keep the temporary folder.") var keep = false
    @Flag(help: "Pin every job (offline: AudioGraph and ffmpeg) to one CPU, as taskset -c 0 would; the live part then shares that CPU with jackd.") var oneCore = false

    static let sofa = "/usr/share/libmysofa/default.sofa"
    static let sofalizer = "sofalizer=sofa=\(sofa):type=freq:interpolate=0:speakers=4 135|5 225"

    func validate() throws {
        if !(seconds > 0 && seconds <= 7200) { throw ValidationError("--seconds must be in (0, 7200]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(liveSeconds >= 1 && liveSeconds <= 3600) { throw ValidationError("--live-seconds must be in [1, 3600]") }
        if !(16...8192).contains(period) { throw ValidationError("--period must be in 16…8192") }
    }

    func run() throws {
        let coreLine = try applyOneCore(oneCore)
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        print("agraph-bench binaural: 7.1 → binaural, SOFA \(Self.sofa)")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        var failed = false
        if !noSweep { sweep(dir: dir) }
        if !noOffline { failed = try offline(dir: dir) || failed }
        if !noLive { failed = live(dir: dir) || failed }
        print("")
        printLoad("at end")
        if failed { throw ExitCode.failure }
    }

    /// The input file: `seconds` of 8-channel white noise at -20 dBFS
    /// RMS-ish, tagged 7.1, 16-bit WAV at `rate`.
    func noiseJSON(path: String, rate: Int) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(rate),
         "nodes": [{"id": "noise", "type": "test-tone", "params": {"waveform": "white", "level": -20, "channels": 8, "duration": \(seconds)}},
                   {"id": "tag", "type": "format-tag", "params": {"layout": "7.1"}},
                   {"id": "out", "type": "file-out", "params": {"path": "\(path)", "format": "wav", "sampleFormat": "int16"}}],
         "links": [{"from": "noise", "to": "tag"}, {"from": "tag", "to": "out"}]}
        """
    }

    func renderJSON(input: String, output: String, rate: Int) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(rate),
         "nodes": [{"id": "in", "type": "file", "params": {"path": "\(input)"}},
                   {"id": "bin", "type": "binaural"},
                   {"id": "out", "type": "file-out", "params": {"path": "\(output)", "format": "wav", "sampleFormat": "float32"}}],
         "links": [{"from": "in", "to": "bin"}, {"from": "bin", "to": "out"}]}
        """
    }

    struct Job {
        var name: String
        var path: String
        var args: [String]
        /// The file the job writes (removed before each run).
        var output: String
        var samples: [Sample] = []
        var status: String?
        var times: [Double] { samples.map(\.wall) }
    }

    /// Returns whether something failed.
    func offline(dir: String) throws -> Bool {
        guard let ffmpeg = findOnPath("ffmpeg") else {
            print("offline: needs the ffmpeg command-line tool (apt-get install ffmpeg)")
            return true
        }
        guard let agraph = siblingExecutable("agraph") else {
            print("offline: agraph not built beside agraph-bench (swift build -c release --product agraph)")
            return true
        }
        var jobs: [Job] = []
        let extra = partitions.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        for rate in [48000, 44100] {
            let input = dir + "/noise-7.1-\(rate).wav"
            if case .failure(let e) = renderInProcess(json: noiseJSON(path: input, rate: rate), directory: dir, blockFrames: 4096) {
                print("FAILED to write \(input): \(e.message)")
                return true
            }
            let graph = dir + "/binaural-\(rate).json"
            try writeText(renderJSON(input: input, output: dir + "/agraph-\(rate).wav", rate: rate), to: graph)
            let k = rate / 100
            jobs.append(Job(name: "agraph render, \(k / 10).\(k % 10) kHz: file → binaural → float WAV", path: agraph,
                            args: ["render", graph, "--quiet"], output: dir + "/agraph-\(rate).wav"))
            jobs.append(Job(name: "ffmpeg -af sofalizer, \(k / 10).\(k % 10) kHz in" + (rate == 44100 ? "" : " (→ 44.1 kHz)"),
                            path: ffmpeg, args: ["-nostdin", "-loglevel", "error", "-y", "-i", input, "-af", Self.sofalizer,
                                                 "-c:a", "pcm_f32le", dir + "/ffmpeg-\(rate).wav"], output: dir + "/ffmpeg-\(rate).wav"))
            if rate == 48000 {
                for p in extra {
                    jobs.append(Job(name: "agraph render, 48 kHz, partition \(p)", path: agraph,
                                    args: ["render", graph, "--quiet", "--set", "bin.partition=\(p)"], output: dir + "/agraph-\(rate).wav"))
                }
                jobs.append(Job(name: "ffmpeg -af sofalizer, 48 kHz in, -filter_threads 1", path: ffmpeg,
                                args: ["-nostdin", "-loglevel", "error", "-y", "-filter_threads", "1", "-i", input, "-af", Self.sofalizer,
                                       "-c:a", "pcm_f32le", dir + "/ffmpeg-1t.wav"], output: dir + "/ffmpeg-1t.wav"))
            }
        }
        print("offline: \(formatFixed(seconds, 0)) s of 8-channel noise tagged 7.1 (16-bit WAV) → 2-channel float WAV, \(runs) run\(runs == 1 ? "" : "s") each")
        print("  agraph: \(renderJSON(input: "IN", output: "OUT", rate: 48000).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "))")
        print("  ffmpeg: ffmpeg -i IN -af '\(Self.sofalizer)' -c:a pcm_f32le OUT")
        for _ in 0..<runs {
            for k in jobs.indices where jobs[k].status == nil {
                let err = dir + "/job-\(k).err"
                unlink(jobs[k].output)   // every job starts without its output (see processRun)
                let r = spawnMeasured(jobs[k].path, jobs[k].args, stdout: "/dev/null", stderr: err)
                if r.status == 0 { jobs[k].samples.append(r.sample) } else {
                    let text = (readText(err) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
                    jobs[k].status = "FAILED: exit \(r.status): \(text)"
                    jobs[k].samples = []
                }
            }
        }
        print("")
        print("wall clock, seconds (median / min / max), x real time, and CPU (user + system, median):")
        for j in jobs {
            if let s = j.status { print("  \(j.name): \(s)"); continue }
            let st = Stats(j.times), cpu = Stats(j.samples.map(\.cpu))
            print("  \(j.name): \(formatFixed(st.median, 2)) s (\(formatFixed(st.min, 2)) / \(formatFixed(st.max, 2))), "
                  + "\(formatFixed(seconds / st.median, 0))x real time; CPU \(formatFixed(cpu.median, 2)) s")
        }
        print("")
        for (a, b) in [(0, 1), (jobs.count - 2, jobs.count - 1)] where jobs[a].status == nil && jobs[b].status == nil {
            let ratio = Stats(jobs[b].times).median / Stats(jobs[a].times).median
            print("\(jobs[a].name) vs \(jobs[b].name): \(formatFixed(ratio, 2))x as fast (median wall clock); aim ≥ 3x: \(ratio >= 3 ? "met" : "NOT met")")
        }
        let timed = jobs.map { j in
            var t = TimedJob(name: j.name, isPeer: j.path == ffmpeg, audioSeconds: seconds) { .failure(BenchError(message: "not run here")) }
            t.samples = j.status == nil ? j.samples : []
            t.failed = j.status != nil
            return t
        }
        printPeerRatios(timed, pairs: [(jobs[0].name, jobs[1].name), (jobs[jobs.count - 2].name, jobs[jobs.count - 1].name)], oneCore: oneCore)
        return jobs.contains { $0.status != nil }
    }

    /// engine.render alone, per frame, for each partition size and block
    /// size: what the default partition is chosen from.
    func sweep(dir: String) {
        print("")
        print("engine.render alone, 7.1 noise → binaural → jack-out (unbound), 48 kHz, ns per frame (best mean of 5 × 2000 blocks):")
        let blocks = [64, 128, 256, 1024]
        print("  partition " + blocks.map { "block \($0)".padding(toLength: 12, withPad: " ", startingAt: 0) }.joined(separator: " "))
        for p in [64, 128, 256, 512, 1024] {
            var line = "  " + String(p).padding(toLength: 10, withPad: " ", startingAt: 0)
            for b in blocks {
                let ns = offlineRenderNanos(json: Self.liveJSON(partition: p), directory: dir, block: b, maxFrames: max(b, 1024))
                line += " " + (ns.map { formatFixed($0 / Double(b), 1) } ?? "failed").padding(toLength: 12, withPad: " ", startingAt: 0)
            }
            print(line)
        }
        print("  (the test-tone's white noise, 8 channels, is in every figure: with a downmix in place of binaural, \(offlineRenderNanos(json: Self.liveJSON(partition: nil, binaural: false), directory: dir, block: 1024, maxFrames: 1024).map { formatFixed($0 / 1024, 1) } ?? "-") ns per frame at block 1024)")
    }

    /// The live graph: endless 8-channel noise tagged 7.1 → binaural → jack-out.
    static func liveJSON(partition: Int? = nil, binaural: Bool = true) -> String {
        """
        {"format": "agraph/1", "name": "bench-binaural", "description": "agraph-bench binaural: 7.1 noise → binaural → jack-out.",
         "sampleRate": \(Live.sampleRate),
         "nodes": [{"id": "noise", "type": "test-tone", "params": {"waveform": "white", "level": -20, "channels": 8}},
                   {"id": "tag", "type": "format-tag", "params": {"layout": "7.1"}},
                   \(binaural ? "" : "{\"id\": \"bin\", \"type\": \"downmix\", \"params\": {\"layout\": \"stereo\"}},")
                   \(binaural ? "{\"id\": \"bin\", \"type\": \"binaural\"\(partition.map { ", \"params\": {\"partition\": \($0)}" } ?? "")}," : "")
                   {"id": "out", "type": "jack-out"}],
         "links": [{"from": "noise", "to": "tag"}, {"from": "tag", "to": "bin"}, {"from": "bin", "to": "out"}]}
        """
    }

    /// Returns whether something failed.
    func live(dir: String) -> Bool {
        print("")
        let name = "agraph-bench-bin-\(getpid())-\(period)"
        let server: JACKServer
        do {
            server = try JACKServer(name: name, driver: "dummy", sampleRate: Live.sampleRate, period: period)
        } catch {
            print("live: cannot start jackd: \(error)")
            return true
        }
        defer { server.stop() }
        let observer: Observer
        do { observer = try Observer(server: name) } catch {
            print("live: cannot open the observer client: \(error)")
            return true
        }
        defer { observer.close() }
        usleep(300_000)
        let budget = Double(period) / Double(Live.sampleRate) * 1e6
        print("live: dummy jackd \(Live.sampleRate / 1000) kHz, period \(period) (\(formatFixed(budget, 1)) µs per cycle), "
              + "\(formatFixed(liveSeconds, 0)) s per row after 1 s warm-up")
        let window = Window(seconds: liveSeconds, warmup: 1, period: period, jackdPID: server.process.processIdentifier)
        guard var bench = try? Live.parse([]) else { return true }
        bench.noExternal = true
        let rowName = "AudioGraph: 7.1 noise → binaural → jack-out"
        var rows = [bench.runAudioGraph(name: rowName, json: Self.liveJSON(), clientName: "agraph-bench-binaural",
                                        directory: dir, server: name, window: window)]
        bench.progress(rows[0])
        rows.append(bench.runPlain(server: name, window: window, observer: observer))
        bench.progress(rows[1])
        print("")
        printLiveTable(period: period, rows: rows, window: window)
        print("")
        if let ns = offlineRenderNanos(json: Self.liveJSON(), directory: dir, block: period, maxFrames: RunningGraph.Options().maxFrames, live: true) {
            print("engine.render alone (same graph compiled as live, jack-out unbound), block \(period), buses for \(RunningGraph.Options().maxFrames) frames: "
                  + "\(formatFixed(ns / 1000, 2)) µs per block (best mean of 5 × 2000)")
        }
        let ag = rows[0], plain = rows[1]
        guard !ag.callback.isEmpty else {
            print("live: no callback times measured: \(ag.note)")
            return true
        }
        let sorted = ag.callback.sorted()
        let median = percentile(sorted, 50) / 1000, p99 = percentile(sorted, 99) / 1000
        let plainMedian = plain.callback.isEmpty ? Double.nan : percentile(plain.callback.sorted(), 50) / 1000
        print("binaural callback, period \(period): median \(formatFixed(median, 1)) µs (\(formatFixed(100 * median / budget, 2)) % of the \(formatFixed(budget, 1)) µs budget), "
              + "p99 \(formatFixed(p99, 1)) µs (\(formatFixed(100 * p99 / budget, 2)) %); plain client median \(formatFixed(plainMedian, 1)) µs; "
              + "process CPU \(ag.processCPU.map { formatFixed($0, 1) } ?? "-") µs/cycle "
              + "(plain \(plain.processCPU.map { formatFixed($0, 1) } ?? "-")); aim < 10 % of the budget: \(p99 < 0.1 * budget ? "met (p99)" : median < 0.1 * budget ? "met (median), p99 above" : "NOT met")")
        return ag.note.hasPrefix("FAILED") || plain.note.hasPrefix("FAILED")
    }
}
