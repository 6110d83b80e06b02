import AudioGraphCore
import GraphFile
#if canImport(Glibc)
import Glibc
#endif

/// `file-out`: writes its input to a WAV or FLAC file through libsndfile, off
/// the audio thread. The header is kept up to date, and the file is closed
/// properly when rendering ends or is interrupted.
public struct FileSinkType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "file-out", role: .sink,
        summary: "Writes its input to a WAV or FLAC file (libsndfile), off the audio thread.",
        inputs: .single,
        parameters: [
            .init("path", .path, "The file to write; relative to the graph file's folder. Overwritten."),
            .init("format", .choice(SoundFile.Container.allCases.map(\.rawValue)), optional: true,
                  "Container; default from the path's extension (.flac → flac), else wav."),
            .init("sampleFormat", .choice(SoundFile.SampleFormat.allCases.map(\.rawValue)), optional: true,
                  "Sample format; default float32 for wav, int24 for flac (FLAC holds integers only)."),
            .init("bufferTime", .number, range: 0.01...60, default: .number(1), unit: "s",
                  "How much audio the ring between the audio thread and the writer holds."),
        ],
        domain: .background)

    /// Container and sample format for these parameters.
    public static func settings(_ p: NodeParameters) -> (SoundFile.Container, SoundFile.SampleFormat) {
        let path = p.string("path") ?? ""
        let container = p.string("format").flatMap(SoundFile.Container.init)
            ?? (path.lowercased().hasSuffix(".flac") ? .flac : .wav)
        let sample = p.string("sampleFormat").flatMap(SoundFile.SampleFormat.init)
            ?? (container == .flac ? .int24 : .float32)
        return (container, sample)
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let (container, sample) = Self.settings(c.parameters)
        if container == .flac && sample == .float32 {
            c.error(parameter: "sampleFormat", "FLAC holds integer samples only: use \"int24\" or \"int16\", or \"format\": \"wav\"")
        }
        if let path = c.parameters.string("path") {
            let full = c.resolvePath(path)
            let folder = String(full[..<(full.lastIndex(of: "/") ?? full.startIndex)])
            if access(folder.isEmpty ? "/" : folder, W_OK) != 0 {
                c.error(parameter: "path", "cannot write \(full): the folder \(folder) does not exist or is not writable")
            }
        }
        if let f = c.input, container == .flac, f.channels > 8 {
            c.error(parameter: c.parameters.string("format") == nil ? "path" : "format", "FLAC holds at most 8 channels; the stream has \(f.channels): use \"format\": \"wav\"")
        }
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let path = c.parameters.string("path"), let format = c.inputFormats.first else {
            throw EngineError(nodeID: c.nodeID, "no path or input")
        }
        let (container, sample) = Self.settings(c.parameters)
        let file = try SoundFile(writing: c.resolvePath(path), container: container, sampleFormat: sample,
                                 channels: format.channels, sampleRate: c.sampleRate)
        return FileSinkNode(file: file, capacityFrames: Int((c.parameters.number("bufferTime") ?? 1) * c.sampleRate))
    }
}

/// The audio-thread side of `file-out`: hands its input to the writer.
public final class FileSinkNode: RenderNode {
    let file: SoundFile
    let capacityFrames: Int
    var drain: DrainRing?
    var writer: FileWriterJob?
    var input: AudioBus?

    /// Writes every block of its input to `file`. [main-thread]
    public init(file: SoundFile, capacityFrames: Int) {
        self.file = file
        self.capacityFrames = capacityFrames
    }

    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        let ring = DrainRing(channels: file.channels, capacityFrames: max(capacityFrames, 2 * context.maxFrames),
                             maxFrames: context.maxFrames)
        drain = ring
        writer = FileWriterJob(file: file, drain: ring)
    }

    public func render(frames: Int) {
        guard let drain, let input else { return }
        drain.capture(input)
    }

    public var backgroundJob: (any BackgroundJob)? { writer }

    /// Frames the audio thread had to drop because the writer fell behind.
    public var droppedFrames: Int { drain?.droppedFrames.load(ordering: .relaxed) ?? 0 }
}

/// Drains the ring into the file. [worker-thread; `finish` on the main thread]
final class FileWriterJob: BackgroundJob, @unchecked Sendable {
    /// Samples (all channels) per write: 256 KiB of float. Larger writes
    /// mean fewer system calls and fewer header rewrites (the header is
    /// updated after every write).
    static let chunkSamples = 65536
    let chunkFrames: Int
    let file: SoundFile
    let drain: DrainRing
    let buffer: UnsafeMutablePointer<Float>
    var failure: SoundFileError?

    init(file: SoundFile, drain: DrainRing) {
        self.file = file
        self.drain = drain
        chunkFrames = max(Self.chunkSamples / max(file.channels, 1), 1024)
        buffer = .allocate(capacity: chunkFrames * file.channels)
    }

    deinit { buffer.deallocate() }

    func service() -> Bool {
        let n = drain.take(into: buffer, frames: chunkFrames)
        guard n > 0 else { return false }
        if failure == nil {
            do { try file.write(buffer, frames: n) } catch { failure = error }
        }
        return true
    }

    func isReady(forFrames frames: Int) -> Bool {
        drain.writableFrames >= frames
    }

    func finish() throws {
        while service() {}
        try file.close()
        if let failure { throw failure }
    }
}
