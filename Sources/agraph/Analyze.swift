import ArgumentParser
import AudioGraph
import AudioGraphProcessing
import AudioGraphSndFile
#if canImport(Glibc)
import Glibc
#endif

struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure audio files: EBU R128 loudness (libebur128), loudness range, true and sample peak, per-channel peak and RMS.",
        discussion: """
            Integrated loudness (LUFS, gated, ITU-R BS.1770-4), loudness range (LU, EBU Tech 3342), \
            true peak (dBTP, 4x oversampled), sample peak (dBFS), each channel's peak and RMS (dBFS), \
            duration and channel layout. --json prints one object per file (an array of them, in \
            argument order, for several files; null for a file that could not be analysed) with \
            exactly the keys integratedLUFS, loudnessRangeLU, truePeakDBTP, samplePeakDBFS, channels, \
            durationSeconds; levels of silence (-inf) are null. A file that cannot be analysed is \
            reported with its name, the others are still analysed, and the exit status is 1.
            """)

    @Argument(help: "Audio files (anything libsndfile reads: WAV, FLAC, AIFF, Ogg, MP3, …).")
    var files: [String]

    @Flag(help: "Machine-readable output on stdout.")
    var json = false

    @Flag(help: "No progress output.")
    var quiet = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one audio file") }
    }

    func run() throws {
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        // Open everything first: the progress bar knows the total length.
        var opened: [Result<SoundFile, SoundFileError>] = []
        var total = 0.0
        var lengthKnown = true
        for path in files {
            do {
                let f = try SoundFile(reading: path)
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
        return "\(error)"
    }
}

/// One file's measurements (`agraph analyze`).
struct FileLoudness {
    struct Channel {
        var label: String
        var peakDBFS: Double
        var rmsDBFS: Double
        var truePeakDBTP: Double
    }

    var integratedLUFS: Double
    var loudnessRangeLU: Double
    var truePeakDBTP: Double
    var samplePeakDBFS: Double
    var durationSeconds: Double
    var frames: Int
    var sampleRate: Double
    var layout: ChannelLayout
    var channels: [Channel]

    struct Interrupted: Error, CustomStringConvertible {
        var description: String { "interrupted" }
    }

    /// Why a file could not be measured to its end.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads `file` to its end and measures it; closes it.
    /// - Parameter progress: called every chunk with the seconds read;
    ///   returns false to stop (throws `Interrupted`).
    /// [main-thread]
    static func measure(_ file: SoundFile, progress: (Double) -> Bool) throws -> FileLoudness {
        defer { try? file.close() }
        let channels = file.channels
        let meter = try EBUR128Meter(channels: channels, sampleRate: file.sampleRate, layout: file.layout)
        let chunk = 16384
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: chunk * channels)
        defer { buffer.deallocate() }
        var sumSquares = [Double](repeating: 0, count: channels)
        var frames = 0
        while true {
            let n = file.read(into: buffer, frames: chunk)
            if n == 0 { break }
            meter.add(interleaved: buffer, frames: n)
            sumSquares.withUnsafeMutableBufferPointer { sums in
                for c in 0..<channels {
                    var s = 0.0
                    var i = c
                    let end = n * channels
                    while i < end {
                        let v = Double(buffer[i])
                        s += v * v
                        i += channels
                    }
                    sums[c] += s
                }
            }
            frames += n
            if !progress(Double(frames) / file.sampleRate) { throw Interrupted() }
        }
        if let why = file.readError { throw Failure(description: why) }
        let labels = file.layout.channelLabels(count: channels)
        let perChannel = (0..<channels).map { c in
            Channel(label: c < labels.count ? labels[c] : "\(c + 1)",
                    peakDBFS: EBUR128Meter.decibels(meter.samplePeak(channel: c)),
                    rmsDBFS: frames > 0 ? 10 * log10(sumSquares[c] / Double(frames)) : -.infinity,
                    truePeakDBTP: EBUR128Meter.decibels(meter.truePeak(channel: c)))
        }
        return FileLoudness(integratedLUFS: meter.integrated, loudnessRangeLU: meter.loudnessRange,
                            truePeakDBTP: meter.truePeakDBTP, samplePeakDBFS: meter.samplePeakDBFS,
                            durationSeconds: Double(frames) / file.sampleRate, frames: frames,
                            sampleRate: file.sampleRate, layout: file.layout, channels: perChannel)
    }

    /// A level for people: one decimal, "-inf" for silence.
    static func level(_ v: Double) -> String { v.isFinite ? formatFixed(v, 1) : "-inf" }

    /// A number for JSON: null for ±inf and NaN.
    static func number(_ v: Double, _ digits: Int = 2) -> String { v.isFinite ? formatFixed(v, digits) : "null" }

    func text(name: String) -> String {
        var lines = [name,
                     "  duration     \(formatFixed(durationSeconds, 3)) s (\(frames) frames at \(Int(sampleRate)) Hz), \(channels.count) ch \(layout)",
                     "  integrated   \(Self.level(integratedLUFS)) LUFS",
                     "  range        \(formatFixed(loudnessRangeLU, 1)) LU",
                     "  true peak    \(Self.level(truePeakDBTP)) dBTP",
                     "  sample peak  \(Self.level(samplePeakDBFS)) dBFS"]
        for c in channels {
            let label = c.label.padding(toLength: 4, withPad: " ", startingAt: 0)
            lines.append("  \(label)         peak \(Self.level(c.peakDBFS)) dBFS, RMS \(Self.level(c.rmsDBFS)) dBFS, true peak \(Self.level(c.truePeakDBTP)) dBTP")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One JSON object with exactly the keys integratedLUFS,
    /// loudnessRangeLU, truePeakDBTP, samplePeakDBFS, channels,
    /// durationSeconds.
    var json: String {
        let chans = channels.map { c in
            "{\"label\": \"\(c.label)\", \"peakDBFS\": \(Self.number(c.peakDBFS)), \"rmsDBFS\": \(Self.number(c.rmsDBFS)), \"truePeakDBTP\": \(Self.number(c.truePeakDBTP))}"
        }
        return "{\"integratedLUFS\": \(Self.number(integratedLUFS)), \"loudnessRangeLU\": \(Self.number(loudnessRangeLU)), "
            + "\"truePeakDBTP\": \(Self.number(truePeakDBTP)), \"samplePeakDBFS\": \(Self.number(samplePeakDBFS)), "
            + "\"channels\": [\(chans.joined(separator: ", "))], \"durationSeconds\": \(formatFixed(durationSeconds, 6))}"
    }
}
