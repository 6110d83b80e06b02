import ArgumentParser
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// `agraph-bench decode`: decoding media to a float WAV with `agraph render`
/// (media → ffmpeg → file-out) against `ffmpeg -err_detect crccheck -i IN
/// -c:a pcm_f32le OUT.wav` (the same libavcodec does the same work, CRCs
/// checked as AudioGraph's decoder checks them; the graph should add next
/// to nothing), and a batch (`agraph render --each -j N`) against a shell loop
/// over ffmpeg.
struct DecodeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "agraph render of 10 min of 5.1 E-AC-3 (640 kb/s) and of stereo AAC to a float WAV against ffmpeg; a batch of 32 one-minute files with -j 2 against a shell loop over ffmpeg.",
        discussion: """
            The media are made once with the ffmpeg command-line tool (needed: the benchmark compares \
            against it): a distinct sine per channel, E-AC-3 5.1 at 640 kb/s in a raw .ec3 and AAC-LC \
            stereo at 192 kb/s in an .m4a. Jobs are whole processes, wall clock and CPU (user + system \
            of the process and the children it waited for, from wait4), taking turns run by run so \
            that the machine's load falls on all alike; every job's outputs (files, batch folders) are \
            removed before each of its runs, and the temporary folder (media, outputs) at the end \
            unless --keep. Figures are x real time (seconds of audio per second), median / min / max. \
            --one-core pins every job to one CPU.
            """)

    @Option(help: "Seconds of each long file.") var seconds: Double = 600
    @Option(help: "Timed runs of each job.") var runs: Int = 3
    @Option(help: "Files in the batch.") var batchFiles: Int = 32
    @Option(help: "Seconds of each batch file.") var batchSeconds: Double = 60
    @Option(help: "Renders at a time in the batch.") var jobs: Int = 2
    @Flag(help: "Keep the temporary folder.") var keep = false
    @Flag(help: "Pin every job (AudioGraph and the peers) to one CPU, as taskset -c 0 would.") var oneCore = false

    func validate() throws {
        if !(seconds > 0 && seconds <= 7200) { throw ValidationError("--seconds must be in (0, 7200]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if batchFiles < 1 || batchFiles > 1000 { throw ValidationError("--batch-files must be in 1…1000") }
    }

    func run() throws {
        guard let ffmpeg = findOnPath("ffmpeg") else {
            print("agraph-bench decode: needs the ffmpeg command-line tool (apt-get install ffmpeg)")
            throw ExitCode.failure
        }
        guard let agraph = siblingExecutable("agraph") else {
            print("agraph-bench decode: agraph not built beside agraph-bench (swift build -c release --product agraph)")
            throw ExitCode.failure
        }
        let coreLine = try applyOneCore(oneCore)
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        print("agraph-bench decode: \(formatFixed(seconds, 0)) s of 5.1 E-AC-3 and of stereo AAC; batch \(batchFiles) × \(formatFixed(batchSeconds, 0)) s, -j \(jobs); \(runs) run\(runs == 1 ? "" : "s") each")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        func make(_ out: String, channels: Int, seconds: Double, _ codec: [String]) throws {
            let freqs = [500, 700, 900, 60, 1100, 1300]
            var inputs: [String] = []
            for c in 0..<channels { inputs += ["-f", "lavfi", "-i", "sine=f=\(freqs[c]):r=48000:d=\(seconds)"] }
            let layout = channels == 6 ? "5.1(side)" : "stereo"
            let join = (0..<channels).map { "[\($0):a]" }.joined() + "join=inputs=\(channels):channel_layout=\(layout)"
            let (status, _) = spawnAndWait(ffmpeg, ["-nostdin", "-loglevel", "error", "-y"] + inputs
                                           + ["-filter_complex", join] + codec + [out], stdout: "/dev/null", stderr: dir + "/make.err")
            if status != 0 {
                print("FAILED to make \(out): \(readText(dir + "/make.err") ?? "")")
                throw ExitCode.failure
            }
        }
        let eac3 = dir + "/movie.ec3", aac = dir + "/music.m4a"
        try make(eac3, channels: 6, seconds: seconds, ["-c:a", "eac3", "-b:a", "640k", "-f", "eac3"])
        try make(aac, channels: 2, seconds: seconds, ["-c:a", "aac", "-b:a", "192k"])
        let graph = dir + "/decode.json"
        let graphText = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "src", "type": "media", "params": {"path": "\(eac3)"}}, {"id": "dec", "type": "ffmpeg"},
                       {"id": "out", "type": "file-out", "params": {"path": "\(dir)/agraph-out.wav", "sampleFormat": "float32"}}],
             "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}]}
            """
        try writeText(graphText, to: graph)
        // The batch's files and a shell loop over ffmpeg for the same work.
        var batch: [String] = []
        for k in 0..<batchFiles {
            let f = dir + "/batch-\(k).m4a"
            if k == 0 { try make(f, channels: 2, seconds: batchSeconds, ["-c:a", "aac", "-b:a", "192k"]) } else {
                _ = spawnAndWait("/bin/cp", [batch[0], f], stdout: "/dev/null", stderr: "/dev/null")
            }
            batch.append(f)
        }
        let outDir = dir + "/batch-out"
        let loop = dir + "/loop.sh"
        let quoted = batch.map { "'\($0)'" }.joined(separator: " ")
        try writeText("""
            #!/bin/sh
            # What a user would write without agraph: ffmpeg over every file, -j at a time.
            mkdir -p '\(dir)/loop-out'
            printf '%s\\n' \(quoted) | xargs -P \(jobs) -I{} sh -c 'b=$(basename "{}" .m4a); '\(ffmpeg)' -nostdin -loglevel error -y -err_detect crccheck -i "{}" -c:a pcm_f32le "\(dir)/loop-out/$b.wav"'
            """, to: loop)
        let agOut = dir + "/agraph-out.wav", ffOut = dir + "/ffmpeg-out.wav", ffAAC = dir + "/ffmpeg-aac.wav"
        let loopOut = dir + "/loop-out"
        let err = dir + "/job.err"
        func file(_ out: String, channels: Int) -> (Sample) -> Result<(Sample, String), BenchError> {
            { s in describeFloatWAV(out, channels: channels).map { (s, $0) } }
        }
        func folder(_ path: String) -> (Sample) -> Result<(Sample, String), BenchError> {
            { s in
                var n = 0
                if let d = opendir(path) {
                    while let e = readdir(d) {
                        let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                        if name.hasSuffix(".wav") { n += 1 }
                    }
                    closedir(d)
                }
                return n == self.batchFiles ? .success((s, "ok, \(n) files"))
                    : .failure(BenchError(message: "\(path): \(n) WAV files, expected \(self.batchFiles)"))
            }
        }
        // The peers check the CRCs codecs carry, as AudioGraph's ffmpeg
        // decoder does (to conceal and count a damaged frame): the same
        // libavcodec work. ffmpeg's default, without the check, is timed
        // too for E-AC-3 (its CRC is ~2 % of the decode), for reference.
        let crc = ["-err_detect", "crccheck"]
        let names = ["agraph render: E-AC-3 5.1 → float WAV", "ffmpeg -err_detect crccheck -i: E-AC-3 5.1 → float WAV",
                     "agraph render: AAC stereo → float WAV", "ffmpeg -err_detect crccheck -i: AAC stereo → float WAV",
                     "agraph render --each, \(batchFiles) files, -j \(jobs)", "shell loop over ffmpeg -err_detect crccheck, \(batchFiles) files, -P \(jobs)",
                     "ffmpeg -i (no CRC check): E-AC-3 5.1 → float WAV"]
        var list: [TimedJob] = [
            TimedJob(name: names[0], audioSeconds: seconds) {
                processRun(agraph, ["render", graph, "--quiet"], outputs: [agOut], stderr: err).flatMap(file(agOut, channels: 6))
            },
            TimedJob(name: names[1], isPeer: true, audioSeconds: seconds) {
                processRun(ffmpeg, ["-nostdin", "-loglevel", "error", "-y"] + crc + ["-i", eac3, "-c:a", "pcm_f32le", ffOut],
                           outputs: [ffOut], stderr: err).flatMap(file(ffOut, channels: 6))
            },
            TimedJob(name: names[2], audioSeconds: seconds) {
                processRun(agraph, ["render", graph, "--quiet", "--set", "src.path=\(aac)"], outputs: [agOut], stderr: err)
                    .flatMap(file(agOut, channels: 2))
            },
            TimedJob(name: names[3], isPeer: true, audioSeconds: seconds) {
                processRun(ffmpeg, ["-nostdin", "-loglevel", "error", "-y"] + crc + ["-i", aac, "-c:a", "pcm_f32le", ffAAC],
                           outputs: [ffAAC], stderr: err).flatMap(file(ffAAC, channels: 2))
            },
            TimedJob(name: names[4], audioSeconds: Double(batchFiles) * batchSeconds) {
                processRun(agraph, ["render", graph, "--quiet", "--each"] + ["src.path=" + batch[0]] + Array(batch.dropFirst())
                           + ["--output-dir", outDir, "-j", String(self.jobs)], outputs: [outDir], stderr: err).flatMap(folder(outDir))
            },
            TimedJob(name: names[5], isPeer: true, audioSeconds: Double(batchFiles) * batchSeconds) {
                processRun("/bin/sh", [loop], outputs: [loopOut], stderr: err).flatMap(folder(loopOut))
            },
            TimedJob(name: names[6], isPeer: true, audioSeconds: seconds) {
                processRun(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", eac3, "-c:a", "pcm_f32le", ffOut],
                           outputs: [ffOut], stderr: err).flatMap(file(ffOut, channels: 6))
            },
        ]
        runInTurns(&list, runs: runs)
        print("")
        printTimingTable(list)
        print("")
        for pair in stride(from: 0, to: 6, by: 2) where list[pair].usable && list[pair + 1].usable {
            let ratio = list[pair + 1].wall.median / list[pair].wall.median
            print("\(list[pair].name) vs \(list[pair + 1].name): \(formatFixed(ratio, 2))x as fast (median wall clock); aim ≥ 1x: \(ratio >= 1 ? "met" : "NOT met")")
        }
        printPeerRatios(list, pairs: [(names[0], names[1]), (names[2], names[3]), (names[4], names[5])], oneCore: oneCore)
        if list[0].usable && list[6].usable {
            print("  for reference, against ffmpeg's default (less libavcodec work: no CRC check; no aim): \(names[0]) / \(names[6]): "
                  + "CPU ratio \(formatFixed(list[0].cpu.median / list[6].cpu.median, 2)), wall ratio \(formatFixed(list[0].wall.median / list[6].wall.median, 2))")
        }
        print("")
        printLoad("at end")
        if list.contains(where: \.failed) { throw ExitCode.failure }
    }
}
