import ArgumentParser
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// `agraph-bench resample`: N minutes of 44.1 kHz stereo to a 48 kHz
/// float32 WAV, by AudioGraph (the `file` source converting by itself, and
/// the `resample` node), against `sox … rate` and ffmpeg's soxr resampler
/// at the same libsoxr quality, whole jobs, wall clock.
struct ResampleBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resample",
        abstract: "Resample 10 min of 44.1 kHz stereo to a 48 kHz float WAV; compare with sox rate and ffmpeg aresample=resampler=soxr.",
        discussion: """
            The input: 44.1 kHz stereo float32 WAV (two sines and pink noise), written once by the \
            in-process renderer. Each job reads it and writes a 48 kHz stereo float32 WAV: AudioGraph \
            in-process (validate + compile + render + close; the `file` source converts on its reader \
            thread), the agraph render CLI (whole process), AudioGraph with a `resample` node (the \
            file plays at 44.1 kHz, the node converts on the audio thread), `sox IN -e floating-point \
            -b 32 OUT rate -v|-h 48000`, and `ffmpeg -i IN -af aresample=resampler=soxr:precision=28|20 \
            -ar 48000 -c:a pcm_f32le OUT`. very-high is libsoxr's 28-bit recipe (sox -v, ffmpeg \
            precision=28), high its 20-bit one (sox -h, ffmpeg's default precision=20). Figures are x \
            real time (seconds of audio per second of wall clock), median / min / max over the runs, \
            with CPU time (user + system: wait4 for processes, this process's getrusage delta \
            in-process) beside it. The jobs take turns run by run; the output is removed before every \
            run; the temporary folder goes at the end unless --keep. --one-core pins every job to one CPU.
            """)

    @Option(help: "Seconds of audio.") var seconds: Double = 600
    @Option(help: "Timed runs of each job.") var runs: Int = 3
    @Option(help: "Qualities to compare: very-high, high (comma-separated).") var qualities: String = "very-high,high"
    @Option(help: "Frames per block for AudioGraph.") var blockFrames: Int = 4096
    @Flag(help: "Keep the temporary folder.") var keep = false
    @Flag(help: "Pin every job (AudioGraph and the peers) to one CPU, as taskset -c 0 would.") var oneCore = false

    func validate() throws {
        if !(seconds > 0 && seconds <= 7200) { throw ValidationError("--seconds must be in (0, 7200]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
        for q in qualityList where !["very-high", "high"].contains(q) {
            throw ValidationError("--qualities: \(q) is not one of very-high, high")
        }
    }

    var qualityList: [String] { qualities.split(separator: ",").map { String($0) } }

    func run() throws {
        let coreLine = try applyOneCore(oneCore)
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        let input = dir + "/in44k1.wav"
        let inputFrames = Int((seconds * 44100).rounded())
        // What libsoxr makes of it: round(frames × 48000 / 44100).
        let expected = (inputFrames * 48000 + 22050) / 44100
        print("agraph-bench resample: \(formatFixed(seconds, 0)) s of 44.1 kHz stereo float32 → 48 kHz stereo float32 WAV, "
              + "\(runs) run\(runs == 1 ? "" : "s") each, block \(blockFrames) frames")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        if keep { print("temp folder: \(dir)") }
        let source = """
            {"format": "agraph/1", "sampleRate": 44100,
             "nodes": [{"id": "a", "type": "test-tone", "params": {"waveform": "sine", "frequency": 997, "level": -12, "channels": 2, "duration": \(seconds)}},
                       {"id": "b", "type": "test-tone", "params": {"waveform": "sine", "frequency": 15000, "level": -18, "channels": 2, "duration": \(seconds)}},
                       {"id": "n", "type": "test-tone", "params": {"waveform": "pink", "level": -30, "channels": 2, "duration": \(seconds)}},
                       {"id": "mix", "type": "mixer", "params": {"inputs": 3}},
                       {"id": "out", "type": "file-out", "params": {"path": "\(input)", "format": "wav", "sampleFormat": "float32"}}],
             "links": [{"from": "a", "to": "mix:in0"}, {"from": "b", "to": "mix:in1"}, {"from": "n", "to": "mix:in2"}, {"from": "mix", "to": "out"}]}
            """
        if case .failure(let e) = renderInProcess(json: source, directory: dir, blockFrames: 4096) {
            print("FAILED to write the input: \(e.message)")
            throw ExitCode.failure
        }
        print("")
        let agraph = siblingExecutable("agraph")
        let sox = findOnPath("sox")
        let ffmpeg = findOnPath("ffmpeg")
        let output = dir + "/out.wav"
        // Every job once per round, rounds repeated: a load that comes and
        // goes on the machine falls on every job alike.
        var jobs: [Job] = []
        for quality in qualityList {
            let direct = Self.graph(input: input, output: output, quality: quality, node: false)
            let graphPath = dir + "/resample-\(quality).json"
            try writeText(direct, to: graphPath)
            jobs.append(Job(name: "AudioGraph file source, \(quality) (in-process)") {
                self.inProcessOnce(json: direct, dir: dir, output: output, frames: expected)
            })
            jobs.append(Job(name: "agraph render CLI, \(quality) (whole process)", missing: agraph == nil ? "not built (swift build -c release --product agraph)" : nil) {
                self.processOnce(agraph ?? "", ["render", graphPath, "--quiet", "--block-frames", "\(self.blockFrames)"],
                                 dir: dir, output: output, expected: expected, exact: true)
            })
            let nodeGraph = Self.graph(input: input, output: output, quality: quality, node: true)
            jobs.append(Job(name: "AudioGraph resample node, \(quality) (in-process)") {
                self.inProcessOnce(json: nodeGraph, dir: dir, output: output, frames: nil)
            })
            let soxFlag = quality == "very-high" ? "-v" : "-h"
            jobs.append(Job(name: "sox rate \(soxFlag)", isPeer: true, missing: sox == nil ? "not installed" : nil) {
                self.processOnce(sox ?? "", [input, "-e", "floating-point", "-b", "32", output, "rate", soxFlag, "48000"],
                                 dir: dir, output: output, expected: expected, exact: true)
            })
            let precision = quality == "very-high" ? 28 : 20
            jobs.append(Job(name: "ffmpeg aresample=resampler=soxr:precision=\(precision)", isPeer: true, missing: ffmpeg == nil ? "not installed" : nil) {
                self.processOnce(ffmpeg ?? "", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", input,
                                                "-af", "aresample=resampler=soxr:precision=\(precision)", "-ar", "48000",
                                                "-c:a", "pcm_f32le", output], dir: dir, output: output, expected: expected, exact: false)
            })
        }
        var times = Array(repeating: [Sample](), count: jobs.count)
        var status = jobs.map { $0.missing ?? "" }
        for _ in 0 ..< runs {
            for (i, job) in jobs.enumerated() where job.missing == nil && !status[i].hasPrefix("FAILED") {
                let (t, s) = job.run()
                if let t { times[i].append(t) }
                status[i] = s
            }
        }
        let rows = jobs.indices.map { i in
            var row = TimedJob(name: jobs[i].name, missing: jobs[i].missing, isPeer: jobs[i].isPeer, audioSeconds: seconds) {
                .failure(BenchError(message: "not run here"))
            }
            row.failed = status[i].hasPrefix("FAILED")
            row.samples = row.failed ? [] : times[i]
            row.status = status[i]
            return row
        }
        printTimingTable(rows)
        for quality in qualityList {
            guard let ours = rows.first(where: { $0.name.hasPrefix("agraph render CLI, \(quality)") }), ours.usable else { continue }
            let peers = quality == "very-high" ? ["sox rate -v", "ffmpeg aresample=resampler=soxr:precision=28"]
                : ["sox rate -h", "ffmpeg aresample=resampler=soxr:precision=20"]
            for peer in rows where peers.contains(peer.name) && peer.usable {
                print("\(quality): agraph render is \(formatFixed(peer.wall.median / ours.wall.median, 2))x as fast as \(peer.name) (median wall clock, whole processes)")
            }
        }
        printPeerRatios(rows, pairs: qualityList.flatMap { q in
            (q == "very-high" ? ["sox rate -v", "ffmpeg aresample=resampler=soxr:precision=28"] : ["sox rate -h", "ffmpeg aresample=resampler=soxr:precision=20"])
                .flatMap { peer in ["AudioGraph file source, \(q) (in-process)", "agraph render CLI, \(q) (whole process)"].map { ($0, peer) } }
        }, oneCore: oneCore)
        print("")
        printLoad("at end")
        if rows.contains(where: { $0.status.hasPrefix("FAILED") }) { throw ExitCode.failure }
    }

    /// A 48 kHz graph reading `input` (44.1 kHz) into a float32 WAV: the
    /// file converting by itself, or playing natively into a resample node.
    static func graph(input: String, output: String, quality: String, node: Bool) -> String {
        let out = #"{"id": "out", "type": "file-out", "params": {"path": "\#(output)", "format": "wav", "sampleFormat": "float32"}}"#
        if node {
            return """
                {"format": "agraph/1", "sampleRate": 48000,
                 "nodes": [{"id": "in", "type": "file", "params": {"path": "\(input)", "resample": "native"}},
                           {"id": "rs", "type": "resample", "params": {"quality": "\(quality)"}}, \(out)],
                 "links": [{"from": "in", "to": "rs"}, {"from": "rs", "to": "out"}]}
                """
        }
        return """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "in", "type": "file", "params": {"path": "\(input)", "quality": "\(quality)"}}, \(out)],
             "links": [{"from": "in", "to": "out"}]}
            """
    }

    struct Job {
        var name: String
        /// A peer (sox, ffmpeg) rather than AudioGraph.
        var isPeer = false
        /// Why the job cannot run (a tool not installed), or nil.
        var missing: String? = nil
        /// One timed run: wall and CPU (nil on failure) and a status.
        var run: () -> (Sample?, String)
    }

    /// One in-process render; checks the frames written when `frames` is given.
    func inProcessOnce(json: String, dir: String, output: String, frames: Int?) -> (Sample?, String) {
        unlink(output)
        let (result, t) = measureInProcess { renderInProcess(json: json, directory: dir, blockFrames: blockFrames) }
        switch result {
        case .success(let (_, rendered)):
            if let frames {
                if let bad = checkWAV(output, frames: frames) { return (nil, "FAILED: \(bad)") }
                return (t, "ok, \(frames) frames")
            }
            return (t, "ok, \(rendered) frames (the node's latency first)")
        case .failure(let e):
            return (nil, "FAILED: \(e.message)")
        }
    }

    /// One run of a process writing `output`. With `exact`, a length other
    /// than `expected` fails; else it is reported (ffmpeg's soxr wrapper
    /// may flush differently).
    func processOnce(_ path: String, _ args: [String], dir: String, output: String, expected: Int, exact: Bool) -> (Sample?, String) {
        let err = dir + "/job.err"
        // Start without the file (see processRun).
        unlink(output)
        let r = spawnMeasured(path, args, stdout: "/dev/null", stderr: err)
        let status = r.status, t = r.sample
        guard status == 0 else {
            let text = (readText(err) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
            return (nil, "FAILED: exit \(status): \(text)")
        }
        if exact, let bad = checkWAV(output, frames: expected) { return (nil, "FAILED: \(bad)") }
        let frames = wavFrames(output) ?? -1
        return (t, frames == expected ? "ok, \(frames) frames" : "ok, \(frames) frames (exact: \(expected))")
    }

    /// Frames in a WAV's data chunk, when it is one.
    func wavFrames(_ path: String) -> Int? {
        try? readWAVInfo(path).get().frames
    }
}
