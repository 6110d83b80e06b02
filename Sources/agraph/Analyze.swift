import ArgumentParser
import AudioGraph
import AudioGraphProcessing
import AudioGraphSndFile
#if canImport(Glibc)
import Glibc
#endif

struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
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
                let f = try AnalysisInputs.open(path, allowDamaged: allowDamaged)
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
    /// What the decoder found damaged and concealed (lines for the user).
    var damage: [String] = []

    struct Interrupted: Error, CustomStringConvertible {
        var description: String { "interrupted" }
    }

    /// Why a file could not be measured to its end.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Frames per block read from the file (one `sf_readf_float` call).
    static let blockFrames = 16384
    /// Blocks in flight between the reading thread and the loudness thread.
    static let slotCount = 8

    /// Reads `file` to its end and measures it; closes it.
    ///
    /// Two threads share the work: this one reads blocks (libsndfile,
    /// `sf_readf_float`, `blockFrames` at a time) into `slotCount` buffers
    /// and measures true peak, sample peak and RMS in one vectorised pass
    /// (`TruePeakScanner`); a worker thread feeds the same buffers to
    /// `ProgrammeLoudness` (K-weighting and gating: integrated loudness and
    /// LRA). A buffer is reused only after the worker is
    /// done with it (two counting semaphores: free and filled slots).
    /// - Parameter progress: called every block with the seconds read;
    ///   returns false to stop (throws `Interrupted`).
    /// [main-thread]
    static func measure(_ file: any AnalysisInput, progress: (Double) -> Bool) throws -> FileLoudness {
        defer { _ = file.finish() }
        let channels = file.channels
        let meter = try ProgrammeLoudness(channels: channels, sampleRate: file.sampleRate,
                                          weights: ProgrammeLoudness.weights(layout: file.layout, channels: channels))
        // The channels' true-peak scans split between the two threads: the
        // first half here (with the reading), the rest beside the loudness.
        let split = (channels + 1) / 2
        let scanner = TruePeakScanner(channels: channels, measuring: 0..<split)
        let workerScanner = TruePeakScanner(channels: channels, measuring: split..<channels)
        let pipeline = LoudnessWorker(meter: meter, scanner: workerScanner, slots: slotCount,
                                      slotSamples: blockFrames * channels)
        pipeline.start()
        var frames = 0
        var slot = 0
        var interrupted = false
        while true {
            pipeline.waitForFreeSlot()
            if interrupted { break }
            let buffer = pipeline.buffer(slot)
            let n = file.read(into: buffer, frames: blockFrames)
            if n == 0 { break }
            pipeline.submit(slot: slot, frames: n)
            scanner.add(interleaved: buffer, frames: n)
            frames += n
            slot = (slot + 1) % slotCount
            // Stop after the next free slot: `finish` ends the stream there.
            if !progress(Double(frames) / file.sampleRate) { interrupted = true }
        }
        pipeline.finish(slot: slot)
        if interrupted { throw Interrupted() }
        let damage = file.finish()
        if let why = file.readError { throw Failure(description: (damage + [why]).joined(separator: "; ")) }
        let labels = file.layout.channelLabels(count: channels)
        let scan = { (c: Int) in c < split ? scanner : workerScanner }
        let perChannel = (0..<channels).map { c in
            let scanner = scan(c)
            return Channel(label: c < labels.count ? labels[c] : "\(c + 1)",
                    peakDBFS: EBUR128Meter.decibels(scanner.samplePeak(channel: c)),
                    rmsDBFS: frames > 0 ? 10 * log10(scanner.meanSquare(channel: c)) : -.infinity,
                    truePeakDBTP: EBUR128Meter.decibels(scanner.truePeak(channel: c)))
        }
        let truePeak = (0..<channels).map { scan($0).truePeak(channel: $0) }.max() ?? 0
        let samplePeak = (0..<channels).map { scan($0).samplePeak(channel: $0) }.max() ?? 0
        return FileLoudness(integratedLUFS: meter.integrated, loudnessRangeLU: meter.loudnessRange,
                            truePeakDBTP: EBUR128Meter.decibels(truePeak), samplePeakDBFS: EBUR128Meter.decibels(samplePeak),
                            durationSeconds: Double(frames) / file.sampleRate, frames: frames,
                            sampleRate: file.sampleRate, layout: file.layout, channels: perChannel, damage: damage)
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

/// The loudness thread of `FileLoudness.measure`: feeds filled buffers to
/// `ProgrammeLoudness` in order, and hands them back.
///
/// The reading thread (the owner) fills slot k, `submit`s it, and before
/// filling a slot again waits for a free one; the worker waits for a
/// filled slot, measures it and frees it. Slots are used in turn, so the
/// order is kept. `finish` sends an empty slot (the end) and joins.
///
/// Threading: `init`, `start`, `waitForFreeSlot`, `buffer`, `submit`,
/// `finish` [main-thread]; the worker only runs `loop`.
final class LoudnessWorker: @unchecked Sendable {
    let meter: ProgrammeLoudness
    let scanner: TruePeakScanner
    let slots: Int
    let storage: UnsafeMutablePointer<Float>
    let slotSamples: Int
    /// Frames in each slot (0: the end); written before `filledSlots.signal()`,
    /// read after its wait.
    let frames: UnsafeMutablePointer<Int>
    let freeSlots = Wakeup()
    let filledSlots = Wakeup()
    var thread: pthread_t?

    /// [main-thread]
    init(meter: ProgrammeLoudness, scanner: TruePeakScanner, slots: Int, slotSamples: Int) {
        self.meter = meter
        self.scanner = scanner
        self.slots = slots
        self.slotSamples = slotSamples
        storage = .allocate(capacity: slots * slotSamples)
        frames = .allocate(capacity: slots)
        frames.initialize(repeating: 0, count: slots)
        for _ in 0..<slots { freeSlots.signal() }
    }

    deinit {
        storage.deallocate()
        frames.deallocate()
    }

    /// [main-thread]
    func start() {
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&t, nil, { raw in
                guard let raw else { return nil }
                Unmanaged<LoudnessWorker>.fromOpaque(raw).takeRetainedValue().loop()
                return nil
            }, box.toOpaque())
        }
        if rc == 0 { thread = t } else { box.release() }
    }

    /// Slot `k`'s buffer. [main-thread]
    func buffer(_ k: Int) -> UnsafeMutablePointer<Float> { storage + k * slotSamples }

    /// Blocks until the worker has a slot free (one is used per `submit`). [main-thread]
    func waitForFreeSlot() {
        while !freeSlots.wait(timeout: 1) {}
    }

    /// Hands slot `k` with `n` frames to the worker (or measures it here
    /// when no thread could be started). [main-thread]
    func submit(slot k: Int, frames n: Int) {
        frames[k] = n
        if thread == nil {
            measure(k, n)
            freeSlots.signal()
        } else {
            filledSlots.signal()
        }
    }

    /// Ends the stream at slot `k` (the next in turn, free: the caller
    /// waited for it) and joins the worker. [main-thread]
    func finish(slot k: Int) {
        guard let t = thread else { return }
        frames[k] = 0
        filledSlots.signal()
        pthread_join(t, nil)
        thread = nil
    }

    private func measure(_ k: Int, _ n: Int) {
        meter.add(interleaved: buffer(k), frames: n)
        scanner.add(interleaved: buffer(k), frames: n)
    }

    /// [the worker thread]
    private func loop() {
        var k = 0
        while true {
            while !filledSlots.wait(timeout: 1) {}
            let n = frames[k]
            if n == 0 { return }
            measure(k, n)
            freeSlots.signal()
            k = (k + 1) % slots
        }
    }
}
