import ArgumentParser
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// `agraph-bench analyze`: `agraph analyze` of N minutes of stereo against
/// ffmpeg's `ebur128` filter (with and without true peak), whole processes,
/// wall clock.
struct AnalyzeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "agraph analyze of 10 min of 48 kHz stereo against ffmpeg -af ebur128 (loudness, LRA, true peak).",
        discussion: """
            The file: pink noise (test-tone), 48 kHz stereo, written once by the in-process renderer \
            (float32 WAV by default, or 24-bit FLAC with --flac). Each job reads the whole file and \
            measures integrated loudness, loudness range and true peak: `agraph analyze FILE --json \
            --quiet` (also sample peak and per-channel peak and RMS), `ffmpeg -nostats -i FILE -af \
            ebur128=peak=true -f null -`, and ffmpeg without true peak. Figures are x real time \
            (seconds of audio per second of wall clock), median / min / max over the runs. The jobs \
            take turns run by run (agraph, baseline, ffmpeg with true peak, ffmpeg without), so a \
            change in the machine's load hits them alike. --baseline adds another agraph build \
            (e.g. the one before a change) as a row of the same run. CPU time (user + system, wait4) \
            is given beside wall time; each job's outputs are removed before each of its runs, the \
            temporary folder at the end unless --keep; --one-core pins every job to one CPU.
            """)

    @Option(help: "Seconds of audio.") var seconds: Double = 600
    @Option(help: "Timed runs of each job.") var runs: Int = 3
    @Flag(help: "Analyse a 24-bit FLAC instead of a float32 WAV (adds decoding).") var flac = false
    @Flag(help: "Keep the temporary folder.") var keep = false
    @Option(help: "Another agraph executable to time as well (e.g. a build from before a change).") var baseline: String?
    @Flag(help: "Pin every job (AudioGraph and the peers) to one CPU, as taskset -c 0 would.") var oneCore = false

    func validate() throws {
        if !(seconds > 0 && seconds <= 7200) { throw ValidationError("--seconds must be in (0, 7200]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
    }

    func run() throws {
        let coreLine = try applyOneCore(oneCore)
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        let file = dir + (flac ? "/program.flac" : "/program.wav")
        let format = flac ? #""format": "flac", "sampleFormat": "int24""# : #""format": "wav", "sampleFormat": "float32""#
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "noise", "type": "test-tone", "params": {"waveform": "pink", "level": -20, "channels": 2, "duration": \(seconds)}},
                       {"id": "out", "type": "file-out", "params": {"path": "\(file)", \(format)}}],
             "links": [{"from": "noise", "to": "out"}]}
            """
        print("agraph-bench analyze: \(formatFixed(seconds, 0)) s of 48 kHz stereo pink noise, \(flac ? "24-bit FLAC" : "float32 WAV"), \(runs) run\(runs == 1 ? "" : "s") each")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        if case .failure(let e) = renderInProcess(json: json, directory: dir, blockFrames: 4096) {
            print("FAILED to write the test file: \(e.message)")
            throw ExitCode.failure
        }
        print("")
        // The jobs, run in turns (run 1 of each, then run 2 of each, …).
        struct Job {
            var name: String
            var path: String
            var args: [String]
            var stdout: String
            var stderr: String
            var samples: [Sample] = []
            var status: String?
        }
        var jobs: [Job] = []
        var notes: [Row] = []
        let agraph = siblingExecutable("agraph")
        if let agraph {
            jobs.append(Job(name: "agraph analyze (I, LRA, true peak, peaks, RMS)", path: agraph,
                            args: ["analyze", file, "--json", "--quiet"], stdout: dir + "/analyze.json", stderr: dir + "/analyze.err"))
        } else {
            notes.append(Row(name: "agraph analyze", times: [], seconds: seconds, status: "not built (swift build -c release --product agraph)"))
        }
        if let baseline {
            jobs.append(Job(name: "agraph analyze, baseline build", path: baseline,
                            args: ["analyze", file, "--json", "--quiet"], stdout: dir + "/baseline.json", stderr: dir + "/baseline.err"))
        }
        if let ffmpeg = findOnPath("ffmpeg") {
            for (name, filter) in [("ffmpeg -af ebur128=peak=true", "ebur128=peak=true"), ("ffmpeg -af ebur128 (no true peak)", "ebur128")] {
                jobs.append(Job(name: name, path: ffmpeg,
                                args: ["-nostdin", "-hide_banner", "-nostats", "-i", file, "-af", filter, "-f", "null", "-"],
                                stdout: "/dev/null", stderr: dir + "/ffmpeg-\(jobs.count).err"))
            }
        } else {
            notes.append(Row(name: "ffmpeg -af ebur128", times: [], seconds: seconds, status: "not installed"))
        }
        for _ in 0..<runs {
            for k in jobs.indices where jobs[k].status == nil {
                // Every job starts without its outputs.
                for o in [jobs[k].stdout, jobs[k].stderr] where o != "/dev/null" { unlink(o) }
                let r = spawnMeasured(jobs[k].path, jobs[k].args, stdout: jobs[k].stdout, stderr: jobs[k].stderr)
                let status = r.status
                if status == 0 {
                    jobs[k].samples.append(r.sample)
                } else {
                    let text = (readText(jobs[k].stderr) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
                    jobs[k].status = "FAILED: exit \(status): \(text)"
                    jobs[k].samples = []
                }
            }
        }
        var rows: [TimedJob] = []
        var agraphJSON: String?
        var ffmpegI: Double?
        for job in jobs {
            var check = job.status
            if check == nil {
                if job.path == agraph || job.path == baseline {
                    let text = readText(job.stdout)
                    if job.path == agraph { agraphJSON = text }
                    let i = text.flatMap { Self.number(after: "\"integratedLUFS\": ", in: $0) }
                    let tp = text.flatMap { Self.number(after: "\"truePeakDBTP\": ", in: $0) }
                    check = i.map { "ok, I = \(formatFixed($0, 2)) LUFS" + (tp.map { ", TP \(formatFixed($0, 2)) dBTP" } ?? "") }
                        ?? "FAILED: no integratedLUFS"
                } else {
                    let text = readText(job.stderr) ?? ""
                    let i = text.range(of: "Integrated loudness:").flatMap { Self.number(after: "I:", in: String(text[$0.upperBound...])) }
                    let tp = text.range(of: "True peak:").flatMap { Self.number(after: "Peak:", in: String(text[$0.upperBound...])) }
                    if job.args.contains("ebur128=peak=true") { ffmpegI = i }
                    check = i.map { "ok, I = \(formatFixed($0, 1)) LUFS" + (tp.map { ", TP \(formatFixed($0, 1)) dBTP" } ?? "") }
                        ?? "FAILED: no summary"
                }
            }
            var row = TimedJob(name: job.name, isPeer: job.path != agraph && job.path != baseline, audioSeconds: seconds) {
                .failure(BenchError(message: "not run here"))
            }
            row.samples = job.samples
            row.status = check!
            row.failed = check!.hasPrefix("FAILED")
            rows.append(row)
        }
        for n in notes {
            rows.append(TimedJob(name: n.name, missing: n.status, audioSeconds: seconds) { .failure(BenchError(message: "not run")) })
        }
        printTimingTable(rows)
        print("")
        if let a = jobs.first(where: { $0.path == agraph }), !a.samples.isEmpty {
            let mine = Stats(a.samples.map(\.wall)).median
            for other in jobs where other.path != agraph && !other.samples.isEmpty {
                let ratio = Stats(other.samples.map(\.wall)).median / mine
                var line = "agraph analyze vs \(other.name): \(formatFixed(ratio, 2))x as fast (median wall clock)"
                if other.path != baseline { line += "; aim ≥ 3x: " + (ratio >= 3 ? "met" : "NOT met") }
                print(line)
            }
        }
        if let agraphJSON, let i = Self.number(after: "\"integratedLUFS\": ", in: agraphJSON), let ffmpegI {
            print("integrated loudness: agraph \(formatFixed(i, 2)) LUFS, ffmpeg \(formatFixed(ffmpegI, 1)) LUFS")
        }
        printPeerRatios(rows.filter { $0.name != "agraph analyze, baseline build" }, oneCore: oneCore)
        print("")
        printLoad("at end")
        if rows.contains(where: { $0.status.hasPrefix("FAILED") }) { throw ExitCode.failure }
    }

    /// The number right after `marker` in `text` (spaces skipped).
    static func number(after marker: String, in text: String) -> Double? {
        guard let r = text.range(of: marker) else { return nil }
        let rest = text[r.upperBound...].drop { $0 == " " }
        return Double(rest.prefix { $0 == "-" || $0 == "." || $0.isNumber })
    }
}
