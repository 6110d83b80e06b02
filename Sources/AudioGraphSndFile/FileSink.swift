import AudioGraphCore
import AudioGraphNodeAPI
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `file-out`: writes its input to a sound file through libsndfile, off the
/// audio thread: WAV (RF64 past 4 GiB), W64, RF64, AIFF, CAF, FLAC, Ogg
/// Vorbis, Opus or MP3, chosen by the path's extension or `format`. The
/// stream's layout is written as the file's channel map (5.1 with side
/// surrounds, or back ones when the stream says so: `surroundsAreBack`).
public struct FileSinkType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "file-out", role: .sink,
        summary: "Writes its input to a sound file (libsndfile: WAV, W64, RF64, AIFF, CAF, FLAC, Ogg Vorbis, Opus, MP3), off the audio thread.",
        inputs: .single,
        parameters: [
            .init("path", .outputPath, "The file to write; relative to the graph file's folder. Offline, written under a temporary name and renamed into place when complete; live, recorded in place."),
            .init("format", .choice(SoundFile.Container.allCases.map(\.rawValue)), optional: true,
                  "Container and codec; default from the path's extension (\(SoundFile.Container.extensions))."),
            .init("sampleFormat", .choice(SoundFile.SampleFormat.allCases.map(\.rawValue)), optional: true,
                  "Sample format of PCM containers; default float32, int24 for flac (FLAC holds integers only). Lossy codecs take none."),
            .init("bufferTime", .number, range: 0.01...60, default: .number(1), unit: "s",
                  "How much audio the ring between the audio thread and the writer holds."),
        ],
        domain: .background)

    /// Container and sample format for these parameters: `format`, else the
    /// path's extension (nil when neither says); `sampleFormat`, else the
    /// container's default (nil for lossy codecs).
    public static func settings(_ p: NodeParameters) -> (SoundFile.Container?, SoundFile.SampleFormat?) {
        let container = p.string("format").flatMap(SoundFile.Container.init(rawValue:))
            ?? SoundFile.Container(extensionOf: p.string("path") ?? "")
        let sample = p.string("sampleFormat").flatMap(SoundFile.SampleFormat.init) ?? container?.defaultSampleFormat
        return (container, sample)
    }

    /// Why these parameters cannot be written: an unknown extension without
    /// `format`, or a combination the container cannot hold. [any-thread]
    public static func formatProblem(_ p: NodeParameters, channels: Int?, sampleRate: Double) -> (parameter: String, message: String)? {
        let (container, sample) = settings(p)
        guard let container else {
            return ("path", "cannot tell the file format from \"\(p.string("path") ?? "")\": use one of the extensions \(SoundFile.Container.extensions), or give \"format\" (\(SoundFile.Container.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let explicitSample = p.string("sampleFormat").flatMap(SoundFile.SampleFormat.init)
        if let problem = container.sampleProblem(explicitSample) { return ("sampleFormat", problem) }
        if let problem = container.problem(sample: container.isLossy ? nil : sample, channels: channels ?? 1, sampleRate: sampleRate) {
            return (p.string("format") == nil ? "path" : "format", problem)
        }
        return nil
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        if let (parameter, message) = Self.formatProblem(c.parameters, channels: c.input?.channels, sampleRate: c.sampleRate) {
            c.error(parameter: parameter, message)
        }
        if let path = c.parameters.string("path") {
            let full = c.resolvePath(path)
            if let problem = FileChecks.writableFileProblem(full) {
                c.error(parameter: "path", "cannot write \(full): \(problem)")
            }
        }
        if let f = c.input, let problem = RingBudget.check(seconds: c.parameters.number("bufferTime") ?? 1, sampleRate: c.sampleRate,
                                                             channels: f.channels, parameter: "bufferTime") {
            c.error(parameter: "bufferTime", problem)
        }
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let path = c.parameters.string("path"), let format = c.inputFormats.first else {
            throw EngineError(nodeID: c.nodeID, "no path or input")
        }
        let (container, sample) = Self.settings(c.parameters)
        guard let container else { throw EngineError(nodeID: c.nodeID, "no file format for \(path)") }
        let capacity = try FrameTime.frames(seconds: c.parameters.number("bufferTime") ?? 1, sampleRate: c.sampleRate)
        return try FileSinkNode(path: c.resolvePath(path), container: container, sampleFormat: sample,
                                channels: format.channels, sampleRate: c.sampleRate, layout: format.layout,
                                surroundsAreBack: format.surroundsAreBack,
                                capacityFrames: capacity, inPlace: c.live)
    }
}

/// The audio-thread side of `file-out`: hands its input to the writer.
/// Frames that find the ring full (the writer fell behind) are dropped and
/// counted (`DropCounting`).
public final class FileSinkNode: RenderNode, DropCounting, OfflineTrimmingSink {
    let file: SoundFile
    let pending: PendingOutput?
    let capacityFrames: Int
    var drain: DrainRing?
    var writer: FileWriterJob?
    var input: AudioBus?

    /// Writes every block of its input to `path`. Offline (`inPlace`
    /// false) the file is written under a temporary name and renamed into
    /// place when rendering completes; live, it is recorded in place with
    /// its header kept up to date, so that a recording survives a crash.
    /// [main-thread]
    public init(path: String, container: SoundFile.Container, sampleFormat: SoundFile.SampleFormat?,
                channels: Int, sampleRate: Double, layout: ChannelLayout? = nil, surroundsAreBack: Bool = false,
                capacityFrames: Int, inPlace: Bool) throws(SoundFileError) {
        ThreadRole.check(.main)
        let pending = inPlace ? nil : try PendingOutput(finalPath: path)
        do {
            file = try SoundFile(writing: pending?.temporaryPath ?? path, container: container, sampleFormat: sampleFormat,
                                 channels: channels, sampleRate: sampleRate, layout: layout,
                                 surroundsAreBack: surroundsAreBack)
        } catch {
            if let pending { unlink(pending.temporaryPath) }
            throw SoundFileError(path: path, message: error.message)
        }
        self.pending = pending
        self.capacityFrames = capacityFrames
    }

    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        let ring = DrainRing(channels: file.channels, capacityFrames: max(capacityFrames, 2 * context.maxFrames),
                             maxFrames: context.maxFrames)
        drain = ring
        writer = FileWriterJob(file: file, drain: ring, pending: pending)
    }

    /// Frames at the start of the input left out of the file: the latency
    /// of the nodes upstream that an offline render takes out again
    /// (`OfflineAlignedNode`). Set before rendering. [main-thread & !rendering]
    public var leadingFramesToDrop = 0

    /// The most frames the file gets (after those dropped): an offline
    /// render's `--duration`, which renders on past it by the latency some
    /// sinks drop (`OfflinePasses.framesToRender`), so that every file is
    /// exactly that long. Set before rendering. [main-thread & !rendering]
    public var framesLeftToWrite = Int.max

    public func render(frames: Int) {
        guard let drain, let input else { return }
        var dropped = 0
        if leadingFramesToDrop > 0 {
            let valid = input.state.validFrames
            dropped = leadingFramesToDrop < valid ? leadingFramesToDrop : valid
            leadingFramesToDrop -= dropped
        }
        if let writer, writer.writesOnRenderThread {
            framesLeftToWrite -= writer.writeDirect(input, from: dropped, limit: framesLeftToWrite)
            return
        }
        framesLeftToWrite -= drain.capture(input, from: dropped, limit: framesLeftToWrite)
    }

    public var backgroundJob: (any BackgroundJob)? { writer }

    /// Frames the audio thread had to drop because the writer fell behind.
    /// [any-thread]
    public var droppedFrames: Int { drain?.droppedFrames.load(ordering: .relaxed) ?? 0 }

    /// Holds the writer back (it writes nothing while held; the ring fills
    /// and then drops), or lets it go on: what a slow disk or a starved
    /// worker does, for tests of what is reported then. Finishing the file
    /// writes what the ring holds, held or not. [any-thread]
    public func holdWriter(_ hold: Bool) { writer?.held.store(hold, ordering: .relaxed) }
}

/// Drains the ring into the file. [worker-thread; `finish` on the main thread]
///
/// Offline (`runOnRenderThread`), the node hands each block to the writer
/// on the thread that renders instead (`writeDirect`): interleaved into
/// the chunk buffer, written to the file a whole chunk at a time, with no
/// ring and no writer thread.
final class FileWriterJob: BackgroundJob, RenderThreadJob, @unchecked Sendable {
    /// Samples (all channels) per write: 256 KiB of float. Larger writes
    /// mean fewer system calls and fewer header rewrites (the header is
    /// updated after every write by the writer thread, every
    /// `headerEvery` writes on the render thread).
    static let chunkSamples = 65536
    let chunkFrames: Int
    let file: SoundFile
    let drain: DrainRing
    let pending: PendingOutput?
    let buffer: UnsafeMutablePointer<Float>
    var failure: SoundFileError?
    /// `FileSinkNode.holdWriter`: `service` writes nothing while set.
    let held = Atomic<Bool>(false)

    init(file: SoundFile, drain: DrainRing, pending: PendingOutput?) {
        self.file = file
        self.drain = drain
        self.pending = pending
        chunkFrames = max(Self.chunkSamples / max(file.channels, 1), 1024)
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: chunkFrames * file.channels)
        self.buffer = buffer
        let sources = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: max(file.channels, 1))
        sources.initialize(repeating: UnsafePointer(buffer), count: max(file.channels, 1))
        self.sources = sources
    }

    deinit {
        buffer.deallocate()
        sources.deallocate()
    }

    /// Each channel's samples, for `writeDirect`'s interleaving.
    private let sources: UnsafeMutablePointer<UnsafePointer<Float>>

    /// Offline: the node writes on the thread that renders. [main-thread; before rendering]
    private(set) var writesOnRenderThread = false
    /// Frames in `buffer` not yet written (offline).
    private var buffered = 0

    /// Writes on the thread that renders from now on, unless held (a
    /// test's stand-in for a slow disk). [main-thread & !rendering]
    func runOnRenderThread() -> Bool {
        if !held.load(ordering: .relaxed) {
            writesOnRenderThread = true
            // The header follows every `headerEvery` chunks instead of every
            // chunk: 3 system calls fewer per 256 KiB (lseek, write, lseek).
            file.updatesHeaderOnEveryWrite = false
        }
        return writesOnRenderThread
    }

    /// Offline: chunks written between header rewrites (4 MiB of float),
    /// so that a render killed outright leaves a file readable to within
    /// the last few MiB; a render that ends or is interrupted closes the
    /// file with its whole length.
    static let headerEvery = 16
    /// Chunks written since the header was last rewritten (offline).
    private var chunksSinceHeader = 0

    /// Offline: interleaves the bus's valid frames from `start` on (at
    /// most `limit`) into the chunk buffer, writing each chunk that fills;
    /// marks nothing dropped (nothing is). Returns the frames taken.
    /// [audio-thread; offline]
    func writeDirect(_ bus: AudioBus, from start: Int, limit: Int) -> Int {
        let valid = bus.state.validFrames
        let from = max(0, min(start, valid))
        let total = max(0, min(valid - from, limit))
        let channels = file.channels
        var done = 0
        while done < total {
            let n = min(total - done, chunkFrames - buffered)
            let dst = buffer + buffered * channels
            let at = from + done
            if channels == 2 && bus.channels >= 2 {
                Kernels.interleave2(bus.channel(0) + at, bus.channel(1) + at, to: dst, count: n)
            } else if channels == 6 && bus.channels >= 6 {
                // 5.1: six loads and stores per frame, no inner loop.
                let p0 = bus.channel(0) + at, p1 = bus.channel(1) + at, p2 = bus.channel(2) + at
                let p3 = bus.channel(3) + at, p4 = bus.channel(4) + at, p5 = bus.channel(5) + at
                var i = 0, o = 0
                while i < n {
                    dst[o] = p0[i]; dst[o + 1] = p1[i]; dst[o + 2] = p2[i]
                    dst[o + 3] = p3[i]; dst[o + 4] = p4[i]; dst[o + 5] = p5[i]
                    i += 1
                    o += 6
                }
            } else if bus.channels >= channels {
                // A frame at a time: the output is written in order, each
                // channel read in order (a channel at a time writes the
                // chunk once per channel, at a stride).
                for c in 0..<channels { sources[c] = UnsafePointer(bus.channel(c) + at) }
                var i = 0, o = 0
                while i < n {
                    var c = 0
                    while c < channels { dst[o + c] = sources[c][i]; c += 1 }
                    i += 1
                    o += channels
                }
            } else {
                for c in 0..<channels {
                    if c < bus.channels {
                        Kernels.interleave(bus.channel(c) + at, to: dst, stride: channels, channel: c, count: n)
                    } else {
                        for i in 0..<n { dst[i * channels + c] = 0 }
                    }
                }
            }
            buffered += n
            done += n
            if buffered == chunkFrames { flushBuffered() }
        }
        return total
    }

    /// Writes the frames buffered offline.
    private func flushBuffered() {
        guard buffered > 0 else { return }
        if failure == nil {
            do { try file.write(buffer, frames: buffered) } catch { failure = error }
            chunksSinceHeader += 1
            if chunksSinceHeader >= Self.headerEvery {
                file.updateHeaderNow()
                chunksSinceHeader = 0
            }
        }
        buffered = 0
    }

    func service() -> Bool {
        held.load(ordering: .relaxed) ? false : writeChunk()
    }

    /// Writes one chunk of what the ring holds; whether there was any.
    private func writeChunk() -> Bool {
        let n = drain.take(into: buffer, frames: chunkFrames)
        guard n > 0 else { return false }
        if failure == nil {
            do { try file.write(buffer, frames: n) } catch { failure = error }
        }
        return true
    }

    func isReady(forFrames frames: Int) -> Bool {
        writesOnRenderThread || drain.writableFrames >= frames
    }

    func finish() throws {
        _ = try finish(completed: true)
    }

    /// Writes what remains and closes the file. Complete and without error:
    /// renames it into place. Interrupted: keeps it under its temporary name
    /// and says so. A write error (a full disk): closes the encoder, makes
    /// what was written decodable (a FLAC gets its sample count and loses a
    /// cut last frame), keeps it, and throws saying how much was kept.
    /// [control-thread & !rendering]
    func finish(completed: Bool) throws -> [String] {
        flushBuffered()
        while writeChunk() {}
        let name = pending?.finalPath ?? file.path
        var closeError: SoundFileError?
        do { try file.close() } catch { closeError = error }
        if let failure = failure ?? closeError {
            var kept = file.frames
            if file.container == .flac, let repaired = FLACRepair.repair(path: file.path) { kept = repaired }
            let seconds = formatFixed(Double(kept) / file.sampleRate, 3)
            let where_ = pending.map { "kept in \($0.temporaryPath); \(name) is unchanged" } ?? "kept in \(name)"
            throw SoundFileError(path: name, message: "\(failure.message); \(kept) frames (\(seconds) s) were written and \(where_)")
        }
        guard let pending else { return [] }
        if completed {
            try pending.commit()
            return []
        }
        let seconds = formatFixed(Double(file.frames) / file.sampleRate, 3)
        return ["\(name): rendering did not complete; the \(seconds) s written are kept in \(pending.temporaryPath), and \(name) is unchanged"]
    }
}
