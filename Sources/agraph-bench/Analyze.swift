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
            (seconds of audio per second of wall clock), median / min / max over the runs.
            """)

    @Option(help: "Seconds of audio.") var seconds: Double = 600
    @Option(help: "Timed runs of each job.") var runs: Int = 3
    @Flag(help: "Analyse a 24-bit FLAC instead of a float32 WAV (adds decoding).") var flac = false
    @Flag(help: "Keep the temporary folder.") var keep = false

    func validate() throws {
        if !(seconds > 0 && seconds <= 7200) { throw ValidationError("--seconds must be in (0, 7200]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
    }

    func run() throws {
        let dir = try makeTempDirectory()
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
        if case .failure(let e) = renderInProcess(json: json, directory: dir, blockFrames: 4096) {
            print("FAILED to write the test file: \(e.message)")
            throw ExitCode.failure
        }
        print("")
        var rows: [Row] = []
        var agraphI: Double?
        if let agraph = siblingExecutable("agraph") {
            let out = dir + "/analyze.json"
            let r = timeRuns(agraph, ["analyze", file, "--json", "--quiet"], stdout: out, stderr: dir + "/analyze.err")
            agraphI = readText(out).flatMap { Self.number(after: "\"integratedLUFS\": ", in: $0) }
            rows.append(Row(name: "agraph analyze (I, LRA, true peak, peaks, RMS)", times: r.times, seconds: seconds,
                            status: r.status ?? agraphI.map { "ok, I = \(formatFixed($0, 2)) LUFS" } ?? "FAILED: no integratedLUFS"))
        } else {
            rows.append(Row(name: "agraph analyze", times: [], seconds: seconds, status: "not built (swift build -c release --product agraph)"))
        }
        var ffmpegI: Double?
        if let ffmpeg = findOnPath("ffmpeg") {
            for (name, filter) in [("ffmpeg -af ebur128=peak=true", "ebur128=peak=true"), ("ffmpeg -af ebur128 (no true peak)", "ebur128")] {
                let err = dir + "/ffmpeg.err"
                let r = timeRuns(ffmpeg, ["-nostdin", "-hide_banner", "-nostats", "-i", file, "-af", filter, "-f", "null", "-"],
                                 stdout: "/dev/null", stderr: err)
                let i = readText(err).flatMap { text in
                    text.range(of: "Integrated loudness:").flatMap { Self.number(after: "I:", in: String(text[$0.upperBound...])) }
                }
                if filter.hasSuffix("true") { ffmpegI = i }
                rows.append(Row(name: name, times: r.times, seconds: seconds,
                                status: r.status ?? i.map { "ok, I = \(formatFixed($0, 1)) LUFS" } ?? "FAILED: no summary"))
            }
        } else {
            rows.append(Row(name: "ffmpeg -af ebur128", times: [], seconds: seconds, status: "not installed"))
        }
        printTable(rows)
        if rows.count >= 2, let a = rows.first?.times, let f = rows.dropFirst().first?.times, !a.isEmpty, !f.isEmpty {
            print("\nagraph analyze vs ffmpeg ebur128=peak=true: \(formatFixed(Stats(f).median / Stats(a).median, 1))x faster (median wall clock)")
        }
        if let agraphI, let ffmpegI {
            print("integrated loudness: agraph \(formatFixed(agraphI, 2)) LUFS, ffmpeg \(formatFixed(ffmpegI, 1)) LUFS")
        }
        if keep { print("\nkept \(dir)") } else { removeTree(dir) }
        if rows.contains(where: { $0.status.hasPrefix("FAILED") }) { throw ExitCode.failure }
    }

    /// Times `runs` runs of a process; a status when one failed.
    func timeRuns(_ path: String, _ args: [String], stdout: String, stderr: String) -> (times: [Double], status: String?) {
        var times: [Double] = []
        for _ in 0..<runs {
            let (status, t) = spawnAndWait(path, args, stdout: stdout, stderr: stderr)
            guard status == 0 else {
                let text = (readText(stderr) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
                return ([], "FAILED: exit \(status): \(text)")
            }
            times.append(t)
        }
        return (times, nil)
    }

    /// The number right after `marker` in `text` (spaces skipped).
    static func number(after marker: String, in text: String) -> Double? {
        guard let r = text.range(of: marker) else { return nil }
        let rest = text[r.upperBound...].drop { $0 == " " }
        return Double(rest.prefix { $0 == "-" || $0 == "." || $0.isNumber })
    }
}
