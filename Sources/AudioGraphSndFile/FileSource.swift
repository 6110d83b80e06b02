import AudioGraphCore
import Synchronization
import AudioGraphNodeAPI
#if canImport(Glibc)
import Glibc
#endif

/// `file`: plays an audio file through libsndfile (WAV, AIFF, FLAC, Ogg
/// Vorbis/Opus, MP3 and whatever else the installed libsndfile reads).
/// Reading happens on the worker thread; the audio thread takes frames from
/// a ring.
public struct FileSourceType: NodeType {
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
        if file.sampleRate != c.sampleRate {
            c.error(parameter: "path", "\(path) is at \(Int(file.sampleRate)) Hz but the graph runs at \(Int(c.sampleRate)) Hz, and resampling is not available yet: set the graph's \"sampleRate\" to \(Int(file.sampleRate)) or convert the file (e.g. sox \(full) -r \(Int(c.sampleRate)) converted.flac)")
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
        return StreamFormat(channels: file.channels, sampleRate: c.sampleRate, layout: file.layout)
    }

    public func isEndless(_ p: NodeParameters) -> Bool { p.boolean("loop") == true }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let path = c.parameters.string("path") else { throw EngineError(nodeID: c.nodeID, "no path") }
        let file = try SoundFile(reading: c.resolvePath(path))
        let startFrame = try FrameTime.frames(seconds: c.parameters.number("start") ?? 0, sampleRate: file.sampleRate)
        if startFrame > 0 { try file.seek(toFrame: startFrame) }
        let capacity = try FrameTime.frames(seconds: c.parameters.number("bufferTime") ?? 0.5, sampleRate: c.sampleRate)
        return FileSourceNode(nodeID: c.nodeID, file: file, loop: c.parameters.boolean("loop") ?? false,
                              capacityFrames: capacity, skipErrors: c.parameters.string("onError") == "skip")
    }
}

/// The audio-thread side of `file`: takes frames from the ring.
final class FileSourceNode: RenderNode, SeekableNode, UnderrunCounting {
    let nodeID: String
    let file: SoundFile
    let loop: Bool
    let capacityFrames: Int
    let skipErrors: Bool
    var feed: FeedRing?
    var reader: FileReaderJob?
    var output: AudioBus?

    init(nodeID: String, file: SoundFile, loop: Bool, capacityFrames: Int, skipErrors: Bool) {
        self.nodeID = nodeID
        self.file = file
        self.loop = loop
        self.capacityFrames = capacityFrames
        self.skipErrors = skipErrors
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        self.output = output
        let ring = FeedRing(channels: file.channels, capacityFrames: max(capacityFrames, 2 * context.maxFrames),
                            maxFrames: context.maxFrames)
        feed = ring
        reader = FileReaderJob(nodeID: nodeID, file: file, loop: loop, feed: ring, skipErrors: skipErrors)
    }

    func render(frames: Int) {
        guard let feed, let output else { return }
        feed.render(into: output, frames: frames)
    }

    var backgroundJob: (any BackgroundJob)? { reader }

    /// None: the ring is prefetch (read ahead of the audio thread), not
    /// delay; the file's frame `p` plays at the graph's frame `p`.
    var latency: Int { 0 }

    var lengthFrames: Int? { file.isLengthKnown ? file.frames : nil }

    var underrunCount: Int { feed?.underruns.load(ordering: .relaxed) ?? 0 }

    func seek(toFrame frame: Int) -> Bool {
        guard let reader, frame >= 0, !file.isLengthKnown || frame < max(file.frames, 1) else { return false }
        reader.requestSeek(toFrame: frame)
        return true
    }
}

/// Reads the file into the ring, a chunk at a time. [worker-thread, but
/// `requestSeek` and `setTargetFill` from any thread]
final class FileReaderJob: BackgroundJob, FillTargeting, @unchecked Sendable {
    static let chunkFrames = 4096
    let nodeID: String
    let file: SoundFile
    let loop: Bool
    let feed: FeedRing
    let skipErrors: Bool
    let buffer: UnsafeMutablePointer<Float>
    var done = false
    /// The first decoding error, in words (worker thread; read after it stopped).
    var readError: String?
    private let failed = Atomic<Bool>(false)
    /// Frames to keep buffered: Int.max (as much as fits) offline.
    private let target = Atomic<Int>(Int.max)
    /// A pending seek: the frame, or -1.
    private let pendingSeek = Atomic<Int>(-1)

    init(nodeID: String, file: SoundFile, loop: Bool, feed: FeedRing, skipErrors: Bool) {
        self.nodeID = nodeID
        self.file = file
        self.loop = loop
        self.feed = feed
        self.skipErrors = skipErrors
        buffer = .allocate(capacity: Self.chunkFrames * file.channels)
    }

    deinit { buffer.deallocate() }

    func setTargetFill(frames: Int) { target.store(max(frames, 1), ordering: .relaxed) }
    var targetFill: Int { target.load(ordering: .relaxed) }

    /// Asks the worker to continue from `frame`. [control-thread]
    func requestSeek(toFrame frame: Int) { pendingSeek.store(frame, ordering: .releasing) }

    func service() -> Bool {
        let seekTo = pendingSeek.exchange(-1, ordering: .acquiring)
        if seekTo >= 0 {
            do {
                try file.seek(toFrame: seekTo)
                done = false
            } catch {
                done = true
            }
            // Everything in the ring now is from before the seek.
            feed.flush()
            if done { feed.markEnd() }
        }
        guard !done else { return seekTo >= 0 }
        let goal = target.load(ordering: .relaxed)
        let buffered = feed.bufferedFrames
        var room = min(feed.writableFrames, Self.chunkFrames)
        if goal < Int.max {
            // Live: keep about `goal` frames ahead, read in whole 256-frame steps.
            guard buffered < goal else { return seekTo >= 0 }
            room = min(room, (goal - buffered + 255) / 256 * 256)
        } else {
            // Offline: wait for a useful amount of room rather than trickling.
            guard room >= min(Self.chunkFrames, feed.ring.capacity / feed.channels / 4) else { return seekTo >= 0 }
        }
        guard room > 0 else { return seekTo >= 0 }
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
