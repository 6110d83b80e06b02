import ArgumentParser
import AudioGraph
import AudioGraphProcessing
import AudioGraphSndFile
import AudioGraphTools
#if canImport(Glibc)
import Glibc
#endif

struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Measure audio files: EBU R128 loudness (ITU-R BS.1770-4), loudness range, true and sample peak, per-channel peak and RMS.",
        discussion: """
            Integrated loudness (LUFS, gated, ITU-R BS.1770-4), loudness range (LU, EBU Tech 3342), \
            true peak (dBTP, 4x oversampled), sample peak (dBFS), each channel's peak and RMS (dBFS), \
            duration and channel layout. --json prints one object per file (an array of them, in \
            argument order, for several files; null for a file that could not be analysed) with \
            exactly the keys integratedLUFS, loudnessRangeLU, truePeakDBTP, samplePeakDBFS, channels, \
            durationSeconds; levels of silence (-inf) are null. A file that cannot be analysed is \
            reported with its name, the others are still analysed, and the exit status is 1.
            """)

    @Argument(help: "Audio files: what libsndfile reads (WAV, FLAC, AIFF, Ogg, MP3, …), and else what the media path decodes (the ffmpeg decoder plugin: M4A/AAC, Opus, E-AC-3, …).")
    var files: [String]

    @Flag(help: "Machine-readable output on stdout.")
    var json = false

    @Flag(help: "No progress output.")
    var quiet = false

    @Flag(help: "Files read through the media path: measure what decodes, damaged frames concealed (as silence) and reported, instead of stopping at the first.")
    var allowDamaged = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one audio file") }
    }

    func run() throws {
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        // Open everything first: the progress bar knows the total length.
        var opened: [Result<any AnalysisInput, any Error>] = []
        var total = 0.0
        var lengthKnown = true
        for path in files {
            do {
                let f = try AnalysisInputs.open(path, allowDamaged: allowDamaged, registry: standardRegistry())
                if f.isLengthKnown { total += Double(f.frames) / f.sampleRate } else { lengthKnown = false }
                opened.append(.success(f))
            } catch {
                opened.append(.failure(error))
            }
        }
        let progress = ProgressBar(total: lengthKnown ? total : nil, enabled: !quiet)
        var reports: [FileLoudness?] = []
        var failed = 0
        var doneBefore = 0.0
        for (i, result) in opened.enumerated() {
            if interruptRequested.load(ordering: .relaxed) { break }
            let report: FileLoudness
            do {
                let file = try result.get()
                if files.count > 1 { progress.label = "\(i + 1)/\(files.count)" }
                let base = doneBefore
                report = try FileLoudness.measure(file) { seconds in
                    progress.update(base + seconds)
                    return !interruptRequested.load(ordering: .relaxed)
                }
                doneBefore += report.durationSeconds
            } catch {
                progress.finish()
                printError("agraph: \(files[i]): cannot analyse: \(Self.message(error))")
                failed += 1
                reports.append(nil)
                continue
            }
            progress.finish()
            for line in report.damage { printError("agraph: \(files[i]): \(line)") }
            reports.append(report)
            if !json { print(report.text(name: files[i]), terminator: files.count > 1 && i < files.count - 1 ? "\n" : "") }
        }
        progress.finish()
        if interruptRequested.load(ordering: .relaxed) {
            printError("agraph: interrupted")
            throw ExitCode(130)
        }
        if json {
            if files.count == 1 {
                print(reports[0].map(\.json) ?? "null")
            } else {
                print("[\n" + reports.map { $0.map { "  " + $0.json } ?? "  null" }.joined(separator: ",\n") + "\n]")
            }
        }
        if failed > 0 {
            printError("agraph: \(failed) of \(files.count) file\(files.count == 1 ? "" : "s") could not be analysed")
            throw ExitCode.failure
        }
    }

    static func message(_ error: any Error) -> String {
        if let e = error as? SoundFileError { return e.message }
        if let e = error as? AnalyzeInputError { return e.message }
        if let e = error as? FileLoudness.Failure { return DecodedMediaInput.plain(e.description) }
        return "\(error)"
    }
}
