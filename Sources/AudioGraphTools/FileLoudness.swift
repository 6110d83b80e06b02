import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// One file's measurements (`agraph analyze`).
public struct FileLoudness {
    public struct Channel {
        public var label: String
        public var peakDBFS: Double
        public var rmsDBFS: Double
        public var truePeakDBTP: Double
    }

    public var integratedLUFS: Double
    public var loudnessRangeLU: Double
    public var truePeakDBTP: Double
    public var samplePeakDBFS: Double
    public var durationSeconds: Double
    public var frames: Int
    public var sampleRate: Double
    public var layout: ChannelLayout
    public var channels: [Channel]
    /// What the decoder found damaged and concealed (lines for the user).
    public var damage: [String] = []

    public struct Interrupted: Error, CustomStringConvertible {
        public var description: String { "interrupted" }
    }

    /// Why a file could not be measured to its end.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Frames per block read from the file (one `sf_readf_float` call).
    public static let blockFrames = 16384
    /// Blocks in flight between the reading thread and the loudness thread.
    public static let slotCount = 8

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
    public static func measure(_ file: any AnalysisInput, progress: (Double) -> Bool) throws -> FileLoudness {
        ThreadRole.check(.main)
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
    public static func level(_ v: Double) -> String { v.isFinite ? formatFixed(v, 1) : "-inf" }

    /// A number for JSON: null for ±inf and NaN.
    public static func number(_ v: Double, _ digits: Int = 2) -> String { v.isFinite ? formatFixed(v, digits) : "null" }

    public func text(name: String) -> String {
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
    public var json: String {
        let chans = channels.map { c in
            "{\"label\": \"\(c.label)\", \"peakDBFS\": \(Self.number(c.peakDBFS)), \"rmsDBFS\": \(Self.number(c.rmsDBFS)), \"truePeakDBTP\": \(Self.number(c.truePeakDBTP))}"
        }
        return "{\"integratedLUFS\": \(Self.number(integratedLUFS)), \"loudnessRangeLU\": \(Self.number(loudnessRangeLU)), "
            + "\"truePeakDBTP\": \(Self.number(truePeakDBTP)), \"samplePeakDBFS\": \(Self.number(samplePeakDBFS)), "
            + "\"channels\": [\(chans.joined(separator: ", "))], \"durationSeconds\": \(formatFixed(durationSeconds, 6))}"
    }
}
