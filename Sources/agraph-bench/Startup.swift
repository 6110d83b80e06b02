// agraph-bench startup: how long `agraph` takes to start, validate and
// render its first block, against sox and ffmpeg making the same 1 s file,
// in the same run, taking turns. See docs/performance.md.
import ArgumentParser
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// `agraph-bench startup` (issue #24, "Start-up"). [main-thread]
struct StartupBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup",
        abstract: "Start-up: agraph --version, agraph validate, agraph render of a 1 s tone (whole process and to the first block) against sox and ffmpeg making the same file.",
        discussion: """
            Every job is a whole process (wall clock from posix_spawn to exit, CPU user + system from \
            wait4), the jobs taking turns run by run: `agraph --version`; `agraph validate \
            SMALL.json` (test-tone → file-out); `agraph render` of that graph, a 1 s 1 kHz sine to a \
            48 kHz mono float32 WAV; `agraph render` of one block of it (--duration = one block: \
            spawn → main → validated → compiled → first block → file closed → exit, an upper bound on \
            the time to the first rendered block); `agraph-bench startup-probe`, which runs the same \
            library calls as agraph render in this executable and reports spawn → main() → validated → \
            compiled → first block returned (its spawn → main is agraph-bench's, which links more than \
            agraph); `sox -n -r 48000 -b 32 -e floating-point OUT synth 1 sine 1000`; and `ffmpeg -f \
            lavfi -i sine=frequency=1000:sample_rate=48000 -t 1 -c:a pcm_f32le OUT`. Each output is \
            removed before each run and checked after it (48000 frames, 1 channel, float). Figures: \
            median and min over --runs.
            """)

    @Option(help: "Timed runs of each job.") var runs: Int = 21
    @Option(help: "Frames per block of agraph render (64…16384).") var blockFrames: Int = 1024
    @Flag(help: "Keep the temporary folder.") var keep = false
    @Flag(help: "Pin every job (AudioGraph and the peers) to one CPU, as taskset -c 0 would.") var oneCore = false

    func validate() throws {
        if runs < 1 || runs > 10_000 { throw ValidationError("--runs must be from 1 to 10000") }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
    }

    static let rate = 48000

    /// The small graph: a 1 s 1 kHz sine, mono, into a float32 WAV.
    static func toneJSON(output: String) -> String {
        """
        {"format": "agraph/1", "name": "bench-startup", "sampleRate": \(rate),
         "nodes": [{"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 1000, "level": -6, "channels": 1, "duration": 1}},
                   {"id": "out", "type": "file-out", "params": {"path": "\(output)", "format": "wav", "sampleFormat": "float32"}}],
         "links": [{"from": "tone", "to": "out"}]}

        """
    }

    /// The probe's phases of each run, filled in by its job.
    final class Phases {
        var figures: [StartupFigures] = []
    }

    func run() throws {
        let coreLine = try applyOneCore(oneCore)
        guard let agraph = siblingExecutable("agraph") else {
            print("agraph-bench startup: agraph not built beside agraph-bench (swift build -c release --product agraph)")
            throw ExitCode.failure
        }
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        let graph = dir + "/small.json", agOut = dir + "/agraph.wav"
        let oneBlockGraph = dir + "/one-block.json", oneBlockOut = dir + "/agraph-one-block.wav"
        let probeGraph = dir + "/probe.json", probeOut = dir + "/probe.wav"
        try writeText(Self.toneJSON(output: agOut), to: graph)
        try writeText(Self.toneJSON(output: oneBlockOut), to: oneBlockGraph)
        try writeText(Self.toneJSON(output: probeOut), to: probeGraph)
        let frames = Self.rate
        let err = dir + "/job.err"

        print("agraph-bench startup: 1 s 1 kHz sine → 48 kHz mono float32 WAV; \(runs) run\(runs == 1 ? "" : "s") of each job, taking turns")
        print("machine: \(machineDescription())")
        print(coreLine)
        print("agraph: \(agraph)")
        printLoad("at start")
        print("")

        var jobs: [TimedJob] = []
        let versionOut = dir + "/version.out"
        jobs.append(TimedJob(name: "agraph --version", audioSeconds: 1) {
            processRun(agraph, ["--version"], outputs: [versionOut], stdout: versionOut, stderr: err).flatMap { s in
                let text = (readText(versionOut) ?? "").split(separator: "\n").first.map(String.init) ?? ""
                return text.isEmpty ? .failure(BenchError(message: "printed nothing")) : .success((s, "ok, \(text)"))
            }
        })
        jobs.append(TimedJob(name: "agraph validate SMALL.json", audioSeconds: 1) {
            processRun(agraph, ["validate", graph, "--quiet"], outputs: [], stderr: err).map { ($0, "ok, valid") }
        })
        func file(_ out: String, frames: Int) -> (Sample) -> Result<(Sample, String), BenchError> {
            { s in
                if let bad = checkWAV(out, frames: frames, channels: 1) { return .failure(BenchError(message: bad)) }
                return .success((s, "ok, \(frames) frames"))
            }
        }
        let renderName = "agraph render, 1 s tone → WAV"
        jobs.append(TimedJob(name: renderName, audioSeconds: 1) {
            processRun(agraph, ["render", graph, "--quiet", "--block-frames", "\(self.blockFrames)"], outputs: [agOut], stderr: err)
                .flatMap(file(agOut, frames: frames))
        })
        let oneBlockName = "agraph render, first block only (--duration 1 block)"
        let blockSeconds = Double(blockFrames) / Double(Self.rate)
        jobs.append(TimedJob(name: oneBlockName, audioSeconds: blockSeconds) {
            processRun(agraph, ["render", oneBlockGraph, "--quiet", "--block-frames", "\(self.blockFrames)",
                                "--duration", "\(blockSeconds)"], outputs: [oneBlockOut], stderr: err)
                .flatMap(file(oneBlockOut, frames: self.blockFrames))
        })
        let phases = Phases()
        if let me = selfExecutable() {
            jobs.append(TimedJob(name: "agraph-bench startup-probe (same calls, to first block)", audioSeconds: blockSeconds) {
                unlink(probeOut)
                switch probeStartup(me, graph: probeGraph, blockFrames: self.blockFrames, dir: dir) {
                case .success(let f):
                    phases.figures.append(f)
                    return .success((f.process, "ok"))
                case .failure(let e):
                    return .failure(e)
                }
            })
        }
        let soxOut = dir + "/sox.wav"
        let sox = findOnPath("sox")
        jobs.append(TimedJob(name: "sox -n … synth 1 sine 1000", missing: sox == nil ? "sox not installed: apt-get install -y --no-install-recommends sox" : nil,
                             isPeer: true, audioSeconds: 1) {
            processRun(sox ?? "", ["-q", "-n", "-r", "\(Self.rate)", "-b", "32", "-e", "floating-point", soxOut, "synth", "1", "sine", "1000"],
                       outputs: [soxOut], stderr: err).flatMap(file(soxOut, frames: frames))
        })
        let ffOut = dir + "/ffmpeg.wav"
        let ffmpeg = findOnPath("ffmpeg")
        jobs.append(TimedJob(name: "ffmpeg -f lavfi -i sine=… -t 1", missing: ffmpeg == nil ? "ffmpeg not installed: apt-get install -y --no-install-recommends ffmpeg" : nil,
                             isPeer: true, audioSeconds: 1) {
            processRun(ffmpeg ?? "", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=\(Self.rate)",
                                      "-t", "1", "-c:a", "pcm_f32le", ffOut], outputs: [ffOut], stderr: err)
                .flatMap(file(ffOut, frames: frames))
        })

        runInTurns(&jobs, runs: runs)

        func pad(_ s: String, _ w: Int, right: Bool = true) -> String {
            let p = String(repeating: " ", count: max(w - s.count, 0))
            return right ? p + s : s + p
        }
        let nameWidth = jobs.map(\.name.count).max() ?? 10
        print(pad("job (whole process)", nameWidth, right: false) + pad("wall ms: median", 17) + pad("min", 8)
              + pad("CPU ms: median", 16) + pad("min", 8) + "  check")
        print(String(repeating: "-", count: nameWidth + 17 + 8 + 16 + 8 + 2 + 16))
        for j in jobs {
            guard j.usable else {
                print(pad(j.name, nameWidth, right: false) + pad("-", 17) + pad("-", 8) + pad("-", 16) + pad("-", 8) + "  " + j.status)
                continue
            }
            let w = j.wall, c = j.cpu
            print(pad(j.name, nameWidth, right: false) + pad(formatFixed(w.median * 1000, 2), 17) + pad(formatFixed(w.min * 1000, 2), 8)
                  + pad(formatFixed(c.median * 1000, 2), 16) + pad(formatFixed(c.min * 1000, 2), 8) + "  " + j.status)
        }
        if !phases.figures.isEmpty {
            func ms(_ xs: [Double]) -> String {
                let s = Stats(xs)
                return "\(formatFixed(s.median * 1000, 2)) ms (min \(formatFixed(s.min * 1000, 2)))"
            }
            let f = phases.figures
            print("")
            print("agraph-bench startup-probe, phases (median, min over \(f.count) runs):")
            print("  spawn → main() entry (exec, dynamic linking, runtime; agraph-bench's executable): \(ms(f.map(\.toMain)))")
            print("  validate the graph:                                                 \(ms(f.map(\.validate)))")
            print("  compile (create nodes, open the file, allocate):                    \(ms(f.map(\.compile)))")
            print("  start + first block:                                                \(ms(f.map(\.firstBlock)))")
            print("  spawn → first block returned:                                       \(ms(f.map(\.total)))")
        }

        print("")
        print("aims (medians):")
        func aim(_ name: String, _ label: String, limitMs: Double) {
            guard let j = jobs.first(where: { $0.name == name }), j.usable else { return }
            let v = j.wall.median * 1000
            print("  \(label): \(formatFixed(v, 2)) ms (min \(formatFixed(j.wall.min * 1000, 2))); aim ≤ \(formatFixed(limitMs, 0)) ms: \(v <= limitMs ? "met" : "NOT met")")
        }
        aim("agraph --version", "agraph --version, whole process", limitMs: 10)
        aim("agraph validate SMALL.json", "agraph validate SMALL.json, whole process", limitMs: 10)
        aim(oneBlockName, "agraph render to the first block (one block, whole process to exit: an upper bound)", limitMs: 15)
        if !phases.figures.isEmpty {
            let v = Stats(phases.figures.map(\.total)).median * 1000
            // agraph-bench links JACK, LV2 and the rest agraph loads lazily:
            // its spawn → main is not agraph's, so no aim is judged on it.
            print("  startup-probe spawn → first block returned (agraph-bench's executable, not agraph's start-up; the phases after main are the same calls): "
                  + "\(formatFixed(v, 2)) ms")
        }
        printPeerRatios(jobs, pairs: [(renderName, "sox -n … synth 1 sine 1000"), (renderName, "ffmpeg -f lavfi -i sine=… -t 1"),
                                      (oneBlockName, "sox -n … synth 1 sine 1000")], oneCore: oneCore)
        print("")
        printLoad("at end")
        if jobs.contains(where: \.failed) { throw ExitCode.failure }
    }
}
