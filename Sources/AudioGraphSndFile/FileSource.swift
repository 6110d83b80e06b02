import AudioGraphCore
import Synchronization
import AudioGraphNodeAPI
import AudioGraphProcessing
#if canImport(Glibc)
import Glibc
#endif

/// `file`: plays an audio file through libsndfile (WAV, AIFF, FLAC, Ogg
/// Vorbis/Opus, MP3 and whatever else the installed libsndfile reads).
/// Reading happens on the worker thread; the audio thread takes frames from
/// a ring.
///
/// A file at another rate than the graph's (`resample`):
/// - `auto` (default): converted to the graph's rate on the worker thread,
///   between the file and the ring, with libsoxr at `quality`. libsoxr's
///   output is time-aligned and flushed at the end, so the stream is
///   exactly `round(frames × graphRate / fileRate)` frames long and adds no
///   latency; `start`, `seek` and `loop` work as at the graph's rate.
/// - `off`: a rate mismatch is a validation error.
/// - `native`: the file plays at its own rate, as a *rate island* (see
///   `ResampleType`): each block carries the frames falling due in it, and
///   a `resample` node brings the branch back to the graph's rate. Only
///   for rates below the graph's.
public struct FileSourceType: NodeType, RateConversionReporting {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "file", role: .source,
        summary: "Plays an audio file (libsndfile: WAV, AIFF, FLAC, Ogg Vorbis/Opus, MP3, …), read off the audio thread.",
        inputs: .none,
        parameters: [
            .init("path", .path, "The file; relative to the graph file's folder."),
            .init("loop", .boolean, default: .boolean(false), "Start again at the beginning at the end (no end of stream)."),
            .init("start", .number, range: 0...31_536_000, default: .number(0), unit: "s", "Where to start playing."),
            .init("bufferTime", .number, range: 0.01...60, default: .number(0.5), unit: "s",
                  "How much audio the ring between the reader and the audio thread holds."),
            .init("onError", .choice(["fail", "skip"]), default: .string("fail"),
                  "A decoding error or a truncated file: fail (report it with the position, and the render exits non-zero) or skip (report it as a warning; the source ends there and the render goes on)."),
            .init("resample", .choice(["auto", "off", "native"]), default: .string("auto"),
                  "A file at another rate than the graph's: auto (convert it to the graph's rate on the reader thread, libsoxr), off (refuse it), native (play it at its own rate, below the graph's, as a rate island for a resample node)."),
            .init("quality", .choice(ResampleQuality.names), default: .string("high"),
                  "The conversion's quality, as the resample node's: quick, low, medium, high (20-bit), very-high (28-bit)."),
            .init("transport", .choice(TransportMode.names), default: .string(TransportMode.free.rawValue),
                  TransportMode.parameterHelp + " Transport frame F plays the file from start + F; with loop, the laps follow (each from the file's beginning)."),
        ],
        domain: .background)

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let path = c.parameters.string("path") else { return nil }
        let full = c.resolvePath(path)
        if let problem = FileChecks.readableFileProblem(full) {
            c.error(parameter: "path", "cannot read audio file \(full): \(problem)")
            return nil
        }
        let file: SoundFile
        do {
            file = try SoundFile(reading: full)
        } catch {
            c.error(parameter: "path", "cannot read audio file \(full): \(error.message)")
            return nil
        }
        defer { try? file.close() }
        if let problem = RingBudget.check(seconds: c.parameters.number("bufferTime") ?? 0.5, sampleRate: c.sampleRate,
                                          channels: file.channels, parameter: "bufferTime") {
            c.error(parameter: "bufferTime", problem)
        }
        var rate = c.sampleRate
        if file.sampleRate != c.sampleRate {
            let quality = ResampleQuality(rawValue: c.parameters.string("quality") ?? "high") ?? .high
            switch c.parameters.string("resample") ?? "auto" {
            case "off":
                c.error(parameter: "path", "\(path) is at \(Int(file.sampleRate)) Hz but the graph runs at \(Int(c.sampleRate)) Hz, and \"resample\" is \"off\": set \"resample\": \"auto\" to convert it while playing, set the graph's \"sampleRate\" to \(Int(file.sampleRate)), or convert the file (e.g. sox \(full) -r \(Int(c.sampleRate)) converted.flac)")
            case "native":
                if file.sampleRate > c.sampleRate {
                    c.error(parameter: "resample", "\(path) is at \(Int(file.sampleRate)) Hz, above the graph's \(Int(c.sampleRate)) Hz: a stream inside the graph runs at the graph's rate or below; use \"resample\": \"auto\" to convert it in the reader")
                } else {
                    rate = file.sampleRate
                }
            default:
                if let problem = Resampler.problem(from: file.sampleRate, to: c.sampleRate, channels: file.channels, quality: quality) {
                    c.error(parameter: "path", "\(path): \(problem)")
                }
            }
        }
        if let start = c.parameters.number("start"), start > 0, file.isLengthKnown {
            let length = Double(file.frames) / file.sampleRate
            if start >= length {
                c.error(parameter: "start", "start at \(ParameterValue.number(start)) s is past the end of \(path) (\(ParameterValue.number((length * 1000).rounded() / 1000)) s long)")
            }
        }
        if file.isLengthKnown && file.frames == 0 && c.parameters.boolean("loop") == true {
            c.error(parameter: "loop", "\(path) is empty and cannot loop")
        }
        return StreamFormat(channels: file.channels, sampleRate: rate, layout: file.layout,
                            surroundsAreBack: file.surroundsAreBack)
    }

    public func rateConversion(parameters: NodeParameters, inputFormats: [StreamFormat], outputFormats: [StreamFormat],
                               graphRate: Double, directory: String) -> String? {
        guard let path = parameters.string("path"),
              let file = try? SoundFile(reading: GraphPaths.resolve(path, against: directory)) else { return nil }
        defer { try? file.close() }
        guard file.sampleRate != graphRate else { return nil }
        let from = Int(file.sampleRate)
        switch parameters.string("resample") ?? "auto" {
        case "native":
            return "plays \(path) at its own \(from) Hz: a rate island below the graph's \(Int(graphRate)) Hz (a resample node brings it back)"
        case "off":
            return nil
        default:
            return "converts \(path) \(from) → \(Int(graphRate)) Hz (libsoxr, quality \(parameters.string("quality") ?? "high"), on the reader thread)"
        }
    }

    public func isEndless(_ p: NodeParameters) -> Bool { p.boolean("loop") == true }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let path = c.parameters.string("path") else { throw EngineError(nodeID: c.nodeID, "no path") }
        let file = try SoundFile(reading: c.resolvePath(path))
        let startFrame = try FrameTime.frames(seconds: c.parameters.number("start") ?? 0, sampleRate: file.sampleRate)
        if startFrame > 0 { try file.seek(toFrame: startFrame) }
        let capacity = try FrameTime.frames(seconds: c.parameters.number("bufferTime") ?? 0.5, sampleRate: c.sampleRate)
        var converter: Resampler?
        var pacer: RatePacer?
        if file.sampleRate != c.sampleRate {
            switch c.parameters.string("resample") ?? "auto" {
            case "native":
                pacer = RatePacer(rate: Int(file.sampleRate), graphRate: Int(c.sampleRate))
            case "off":
                throw EngineError(nodeID: c.nodeID, "\(path) is at \(Int(file.sampleRate)) Hz, the graph at \(Int(c.sampleRate)) Hz, and \"resample\" is \"off\"")
            default:
                let quality = ResampleQuality(rawValue: c.parameters.string("quality") ?? "high") ?? .high
                do {
                    converter = try Resampler(from: file.sampleRate, to: c.sampleRate, channels: file.channels, quality: quality)
                } catch {
                    throw EngineError(nodeID: c.nodeID, error.message)
                }
            }
        }
        let node = FileSourceNode(nodeID: c.nodeID, file: file, loop: c.parameters.boolean("loop") ?? false,
                                  capacityFrames: capacity, skipErrors: c.parameters.string("onError") == "skip",
                                  graphRate: c.sampleRate, converter: converter, pacer: pacer)
        node.startFrame = file.sampleRate == c.sampleRate ? startFrame
            : Int((Double(startFrame) * c.sampleRate / file.sampleRate).rounded(.down))
        node.transportMode = TransportMode(rawValue: c.parameters.string("transport") ?? "") ?? .free
        return node
    }
}

/// The audio-thread side of `file`: takes frames from the ring.
final class FileSourceNode: RenderNode, SeekableNode, UnderrunCounting, TransportFollowing, RateConverting {
    let nodeID: String
    let file: SoundFile
    let loop: Bool
    let capacityFrames: Int
    let skipErrors: Bool
    let graphRate: Double
    /// `resample: "auto"` at another rate: the reader's converter.
    let converter: Resampler?
    /// `resample: "native"` at another rate: paces the rate island.
    /// [audio-thread; after prepare]
    var pacer: RatePacer?
    /// Whether it plays as a rate island (`pacer`), for other threads.
    let isRateIsland: Bool
    var feed: FeedRing?
    var reader: FileReaderJob?
    var output: AudioBus?
    /// Where it starts (`start`), at the graph's rate. [set before prepare]
    var startFrame = 0
    /// Its `transport` parameter. [set before prepare]
    var transportMode = TransportMode.free

    /// The file's rate when the reader converts it to the graph's
    /// (`resample: "auto"`; a rate island is not converted here). [any-thread]
    var convertedFromRate: Double? { converter == nil ? nil : file.sampleRate }

    init(nodeID: String, file: SoundFile, loop: Bool, capacityFrames: Int, skipErrors: Bool,
         graphRate: Double, converter: Resampler? = nil, pacer: RatePacer? = nil) {
        self.nodeID = nodeID
        self.file = file
        self.loop = loop
        self.capacityFrames = capacityFrames
        self.skipErrors = skipErrors
        self.graphRate = graphRate
        self.converter = converter
        self.pacer = pacer
        isRateIsland = pacer != nil
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        self.output = output
        let ring = FeedRing(channels: file.channels, capacityFrames: max(capacityFrames, 2 * context.maxFrames),
                            maxFrames: context.maxFrames)
        feed = ring
        reader = FileReaderJob(nodeID: nodeID, file: file, loop: loop, feed: ring, skipErrors: skipErrors, converter: converter)
    }

    func render(frames: Int) {
        guard let feed, let output else { return }
        if var p = pacer {
            // A rate island: only the frames due in this block.
            let due = p.next(frames)
            pacer = p
            feed.render(into: output, frames: due)
            if due < frames { output.clear(from: due, to: frames) }
        } else {
            feed.render(into: output, frames: frames)
        }
    }

    var backgroundJob: (any BackgroundJob)? { reader }

    /// None: the ring is prefetch (read ahead of the audio thread), not
    /// delay; the file's frame `p` plays at the graph's frame `p`.
    var latency: Int { 0 }

    /// At the graph's rate: what the converter makes of the file, or the
    /// graph frames a rate island spans.
    var lengthFrames: Int? {
        guard file.isLengthKnown else { return nil }
        guard file.sampleRate != graphRate else { return file.frames }
        let exact = Double(file.frames) * graphRate / file.sampleRate
        return Int(isRateIsland ? exact.rounded(.up) : exact.rounded())
    }

    var underrunCount: Int { feed?.underruns.load(ordering: .relaxed) ?? 0 }

    /// `frame` is at the graph's rate; the file seeks to the same time.
    func seek(toFrame frame: Int) -> Bool {
        guard let reader, frame >= 0 else { return false }
        let fileFrame = file.sampleRate == graphRate ? frame : Int((Double(frame) * file.sampleRate / graphRate).rounded(.down))
        guard !file.isLengthKnown || fileFrame < max(file.frames, 1) else { return false }
        reader.requestSeek(toFrame: fileFrame)
        return true
    }

    /// The file's frame at the graph's rate that transport frame `frame`
    /// plays: start + frame; past the end, the laps of a looping file
    /// (each from the file's beginning, as it loops), else the end.
    func graphFrame(forTransportFrame frame: Int) -> Int {
        let f = startFrame + max(frame, 0)
        guard let length = lengthFrames, f >= length else { return f }
        guard loop, length > 0 else { return length }
        return (f - length) % length
    }

    /// Seeks to where transport frame `frame` is; at or past the end of a
    /// file that does not loop, to its end: the stream ends there and the
    /// node plays silence until moved back. [control-thread]
    func locate(toTransportFrame frame: Int) {
        guard let reader else { return }
        feed?.keepsTime.store(true, ordering: .relaxed)
        let g = graphFrame(forTransportFrame: frame)
        let fileFrame = file.sampleRate == graphRate ? g : Int((Double(g) * file.sampleRate / graphRate).rounded(.down))
        reader.requestSeek(toFrame: file.isLengthKnown ? min(fileFrame, file.frames) : fileFrame)
    }

    /// Silence, nothing taken from the ring; a rate island's pacer keeps
    /// its clock (the block carries the frames due, silent). [audio-thread]
    func renderHeld(frames: Int) {
        feed?.discardStale()
        guard let output else { return }
        output.clear(from: 0, to: frames)
        var valid = frames
        if var p = pacer {
            valid = p.next(frames)
            pacer = p
        }
        output.state = BusState(validFrames: valid, ended: false)
    }

    func isLocated(readyFor frames: Int) -> Bool {
        guard let reader, let feed else { return true }
        // The end of the file (or a failed seek) marks the ring's end.
        return reader.seeks.isSettled && (feed.isEnded || feed.bufferedFrames >= min(frames, reader.targetFill))
    }
}

/// Reads the file into the ring, a chunk at a time. [worker-thread; `requestSeek` and
/// `setTargetFill`: any thread]
final class FileReaderJob: OnDemandJob, FillTargeting, @unchecked Sendable {
    static let chunkFrames = 4096
    /// The largest read when converting (libsoxr works faster on large chunks).
    static let convertChunkFrames = 16384
    let nodeID: String
    let file: SoundFile
    let loop: Bool
    let feed: FeedRing
    let skipErrors: Bool
    let buffer: UnsafeMutablePointer<Float>
    /// Converts the file's rate to the graph's, between the file and the
    /// ring (`resample: "auto"`); nil at the graph's rate.
    let converter: Resampler?
    /// Converted frames not yet in the ring (with a converter).
    let staging: UnsafeMutablePointer<Float>?
    let stagingFrames: Int
    var stagingOffset = 0
    var stagingCount = 0
    /// Frames read into `buffer` that the converter has not taken yet.
    var pendingOffset = 0
    var pendingCount = 0
    /// The file has been read to its end: flush the converter next.
    var fileEnded = false
    var done = false
    /// The first decoding error, in words (worker thread; read after it stopped).
    var readError: String?
    private let failed = Atomic<Bool>(false)
    /// Frames to keep buffered: Int.max (as much as fits) offline.
    private let target = Atomic<Int>(Int.max)
    /// Seeks asked for, in file frames.
    let seeks = SeekRequests()

    init(nodeID: String, file: SoundFile, loop: Bool, feed: FeedRing, skipErrors: Bool, converter: Resampler? = nil) {
        self.nodeID = nodeID
        self.file = file
        self.loop = loop
        self.feed = feed
        self.skipErrors = skipErrors
        self.converter = converter
        buffer = .allocate(capacity: (converter == nil ? Self.chunkFrames : Self.convertChunkFrames) * file.channels)
        if let converter {
            // A chunk's worth of output (capped), plus room for a burst; a
            // larger output waits inside libsoxr until the next call.
            stagingFrames = min(Int((Double(Self.convertChunkFrames) * converter.ratio).rounded(.up)), 1 << 16) + 8192
            staging = .allocate(capacity: stagingFrames * file.channels)
        } else {
            stagingFrames = 0
            staging = nil
        }
    }

    deinit {
        buffer.deallocate()
        staging?.deallocate()
    }

    func setTargetFill(frames: Int) { target.store(max(frames, 1), ordering: .relaxed) }
    var targetFill: Int { target.load(ordering: .relaxed) }

    /// Whether `service` should read now: a seek waits, or the ring has
    /// room for a useful read (live: half the fill target, at most 1024
    /// frames, is gone; offline: room for a chunk), and the stream has not
    /// ended. The thread is then woken every few blocks (live, at the
    /// default fill and period 128: every 8) instead of after every one;
    /// its idle timer still runs it. With a converter, always (its staging
    /// state is the worker's own). [audio-thread; atomics only]
    var hasWork: Bool {
        if seeks.hasPending || converter != nil { return true }
        if feed.isEnded { return false }
        let goal = target.load(ordering: .relaxed)
        if goal < Int.max { return feed.bufferedFrames <= goal - min(goal / 2, 1024) }
        return feed.writableFrames >= min(Self.chunkFrames, feed.ring.capacity / feed.channels / 4)
    }

    /// Asks the worker to continue from `frame`. [control-thread]
    func requestSeek(toFrame frame: Int) { seeks.request(frame) }

    func service() -> Bool {
        let request = seeks.take()
        let seekTo = request?.frame ?? -1
        if let request {
            defer { seeks.done(request.sequence) }
            do {
                try file.seek(toFrame: seekTo)
                done = false
            } catch {
                done = true
            }
            if let converter {
                // A fresh stream from the new position (soxr_clear allocates: worker thread).
                converter.reset()
                stagingOffset = 0
                stagingCount = 0
                pendingCount = 0
                fileEnded = false
            }
            // Everything in the ring now is from before the seek.
            feed.flush()
            if done { feed.markEnd() }
        }
        guard !done else { return seekTo >= 0 }
        let goal = target.load(ordering: .relaxed)
        let buffered = feed.bufferedFrames
        // Converting, offline: fill what the ring has room for (libsoxr is
        // faster on larger chunks); else a chunk at most.
        var room = converter != nil && goal == Int.max ? feed.writableFrames : min(feed.writableFrames, Self.chunkFrames)
        if goal < Int.max {
            // Live: keep about `goal` frames ahead, read in whole 256-frame steps.
            guard buffered < goal else { return seekTo >= 0 }
            room = min(room, (goal - buffered + 255) / 256 * 256)
        } else {
            // Offline: wait for a useful amount of room rather than trickling.
            guard room >= min(Self.chunkFrames, feed.ring.capacity / feed.channels / 4) else { return seekTo >= 0 }
        }
        guard room > 0 else { return seekTo >= 0 }
        if let converter, let staging { return serviceConverting(converter, staging: staging, room: room) }
        var n = file.read(into: buffer, frames: room)
        if n < room, readError == nil, let why = file.readError {
            // Damaged or truncated: what was decoded plays, then the stream ends.
            readError = why
            if !skipErrors { failed.store(true, ordering: .releasing) }
            if n > 0 { feed.write(buffer, frames: n) }
            done = true
            feed.markEnd()
            return true
        }
        if n == 0 && loop && file.frames > 0 {
            do { try file.seek(toFrame: 0) } catch { done = true; feed.markEnd(); return true }
            n = file.read(into: buffer, frames: room)
        }
        if n == 0 {
            done = true
            feed.markEnd()
            return true
        }
        feed.write(buffer, frames: n)
        return true
    }

    /// One step of reading through the converter: hand converted frames to
    /// the ring, else convert what was read, else flush at the end of the
    /// file, else read a chunk. Returns true (it always did something or
    /// ended the stream). [worker-thread]
    private func serviceConverting(_ converter: Resampler, staging: UnsafeMutablePointer<Float>, room: Int) -> Bool {
        let ch = file.channels
        if stagingCount > 0 {
            let n = feed.write(staging + stagingOffset * ch, frames: min(stagingCount, room))
            stagingOffset += n
            stagingCount -= n
            return true
        }
        stagingOffset = 0
        if pendingCount > 0 {
            let (used, made) = converter.process(buffer + pendingOffset * ch, frames: pendingCount,
                                                 into: staging, capacity: stagingFrames)
            pendingOffset += used
            pendingCount -= used
            stagingCount = made
            if used == 0 && made == 0 { pendingCount = 0 }
            return true
        }
        let held = converter.drain(into: staging, capacity: stagingFrames)
        if held > 0 {
            stagingCount = held
            return true
        }
        if fileEnded {
            let made = converter.flush(into: staging, capacity: stagingFrames)
            if made > 0 {
                stagingCount = made
                return true
            }
            done = true
            feed.markEnd()
            return true
        }
        // Read about what fills the room once converted.
        let want = min(Self.convertChunkFrames, max(Int((Double(room) / converter.ratio).rounded(.up)), 1))
        var n = file.read(into: buffer, frames: want)
        if n < want, readError == nil, let why = file.readError {
            // Damaged or truncated: what was decoded plays, then the stream ends.
            readError = why
            if !skipErrors { failed.store(true, ordering: .releasing) }
            fileEnded = true
        } else if n == 0 && loop && file.frames > 0 {
            // Looping continues the same converted stream: no flush at the seam.
            do {
                try file.seek(toFrame: 0)
                n = file.read(into: buffer, frames: want)
            } catch {
                fileEnded = true
            }
        }
        if n == 0 { fileEnded = true }
        pendingOffset = 0
        pendingCount = n
        return true
    }

    func isReady(forFrames frames: Int) -> Bool {
        done || feed.bufferedFrames >= min(frames, target.load(ordering: .relaxed))
    }

    var hasFailed: Bool { failed.load(ordering: .acquiring) }

    func finish() throws {
        _ = try finish(completed: true)
    }

    /// Closes the file; a decoding error is thrown (`onError: "fail"`) or
    /// returned as a notice (`"skip"`). [control-thread & !rendering]
    func finish(completed: Bool) throws -> [String] {
        try file.close()
        guard let readError else { return [] }
        let message = "'\(nodeID)': \(file.path): \(readError)"
        if skipErrors { return ["warning: \(message); skipped the rest of the file (onError: skip)"] }
        throw EngineError(nodeID: nodeID, "\(file.path): \(readError)")
    }
}
