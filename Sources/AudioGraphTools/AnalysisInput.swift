import AudioGraph
import AudioGraphMedia
import AudioGraphSndFile
#if canImport(Glibc)
import Glibc
#endif

/// What `agraph analyze` reads a file through: libsndfile for what it
/// reads, else the media path (`media` → the `ffmpeg` decoder plugin), as
/// `agraph render` decodes a `media` → `ffmpeg` graph. [main-thread]
public protocol AnalysisInput: AnyObject {
    var channels: Int { get }
    var sampleRate: Double { get }
    var layout: ChannelLayout { get }
    var isLengthKnown: Bool { get }
    /// The length in frames, when `isLengthKnown`.
    var frames: Int { get }
    /// Reads up to `count` interleaved frames; 0 at the end.
    func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) -> Int
    /// Why reading stopped before the end, if it did.
    var readError: String? { get }
    /// Closes the input; returns the damage found on the way (lines for
    /// the user: frames concealed), if any.
    func finish() -> [String]
}

extension SoundFile: AnalysisInput {
    public func finish() -> [String] {
        try? close()
        return []
    }
}

public enum AnalysisInputs {
    /// Opens `path` with libsndfile, or, when libsndfile cannot read it,
    /// through the media path; the error names both readers' reasons.
    /// - Parameter allowDamaged: the media path conceals damaged frames and
    ///   goes on (`onError: skip`) instead of stopping at the first.
    /// - Parameter registry: the node types the media graph is validated
    ///   against (the `ffmpeg` decoder plugin among them).
    public static func open(_ path: String, allowDamaged: Bool, registry: NodeRegistry) throws -> any AnalysisInput {
        let sndfileError: SoundFileError
        do { return try SoundFile(reading: path) } catch { sndfileError = error }
        do {
            return try DecodedMediaInput(path: path, allowDamaged: allowDamaged, registry: registry)
        } catch let e as MediaError {
            throw AnalyzeInputError(message: "\(sndfileError.message) (libsndfile); \(e.message) (libavformat)")
        } catch {
            throw AnalyzeInputError(message: "\(sndfileError.message) (libsndfile); \(error)")
        }
    }
}

public struct AnalyzeInputError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A file decoded by a `media` → `ffmpeg` graph at the stream's own rate,
/// rendered block by block into `read`. [main-thread]
public final class DecodedMediaInput: AnalysisInput {
    static let blockFrames = 4096
    static let decoderID = "decoder"

    public let channels: Int
    public let sampleRate: Double
    public let layout: ChannelLayout
    public let isLengthKnown: Bool
    public let frames: Int
    public private(set) var readError: String?
    private let engine: Engine
    private let step: Int
    private var ended = false
    private var finished = false
    private var damage: [String] = []

    public init(path: String, allowDamaged: Bool, registry: NodeRegistry) throws {
        let media = try MediaFile(path: path)
        guard let stream = media.defaultAudioStream else {
            throw MediaError("\(media.containerLongName) (\(media.container)) with no audio stream")
        }
        let full = path.hasPrefix("/") ? path : FileManagerPath.current() + "/" + path
        let json = """
            {"format": "agraph/1", "sampleRate": \(stream.sampleRate),
             "nodes": [{"id": "media", "type": "media", "params": {"path": \(JSONOut.string(full).rendered())}},
                       {"id": "\(Self.decoderID)", "type": "ffmpeg"},
                       {"id": "end", "type": "null"}],
             "links": [{"from": "media", "to": "\(Self.decoderID)"}, {"from": "\(Self.decoderID)", "to": "end"}]}
            """
        var graph: ValidatedGraph
        switch GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: path, directory: "/") {
        case .success(let g): graph = g
        case .failure(let errors):
            throw MediaError(errors.diagnostics.map(\.description).joined(separator: "; "))
        }
        // --allow-damaged: as `agraph render --allow-damaged`, every node
        // that can stop at damage conceals it and goes on.
        for i in graph.nodes.indices where allowDamaged && graph.nodes[i].descriptor.parameters.contains(where: { $0.name == "onError" }) {
            graph.nodes[i].parameters.values["onError"] = .string("skip")
        }
        let compiled = try GraphCompiler.compile(graph, maxFrames: Self.blockFrames)
        engine = compiled.engine
        guard let step = engine.stepIndex(of: Self.decoderID), let format = graph.node(Self.decoderID)?.outputFormats.first else {
            throw MediaError("the decoder graph has no decoder")
        }
        self.step = step
        channels = format.channels
        layout = format.layout
        sampleRate = Double(stream.sampleRate)
        if let seconds = stream.durationSeconds ?? media.durationSeconds, seconds.isFinite, seconds > 0 {
            isLengthKnown = true
            frames = Int((seconds * sampleRate).rounded())
        } else {
            isLengthKnown = false
            frames = 0
        }
        engine.worker.start()
    }

    deinit { _ = finish() }

    public func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) -> Int {
        // This thread renders the blocks: marked audio while it renders one,
        // its caller's role between blocks (waiting for jobs).
        let previousRole = ThreadRole.current
        let between: ThreadRole? = previousRole == .main ? nil : previousRole
        var done = 0
        while done < count && !ended {
            if engine.worker.hasFailedJob {
                ended = true
                break
            }
            let n = min(count - done, Self.blockFrames)
            engine.worker.waitUntilReady(frames: n)
            ThreadRole.mark(.audio)
            engine.render(frames: n)
            ThreadRole.mark(between)
            guard let bus = engine.outputs[step] else {
                ended = true
                break
            }
            let state = bus.state
            let valid = min(state.validFrames, n)
            for c in 0..<channels {
                Kernels.interleave(bus.channel(c), to: buffer + done * channels, stride: channels, channel: c, count: valid)
            }
            done += valid
            if state.ended || engine.isFinished { ended = true }
        }
        return done
    }

    public func finish() -> [String] {
        guard !finished else { return damage }
        finished = true
        engine.worker.stop()
        let (errors, notices) = engine.worker.finishJobs(completed: true)
        damage = notices.map(Self.plain)
        if !errors.isEmpty && readError == nil {
            readError = errors.map { Self.plain("\($0)") }.joined(separator: "; ")
        }
        return damage
    }

    /// A decoder's line without the internal node's name, its hint in
    /// `agraph analyze`'s words.
    public static func plain(_ line: String) -> String {
        var line = line
        for prefix in ["node '\(decoderID)': ", "'\(decoderID)': ", "'\(decoderID)' "] where line.hasPrefix(prefix) {
            line = String(line.dropFirst(prefix.count))
        }
        if let r = line.range(of: "--allow-damaged or onError: skip renders what decodes") {
            line.replaceSubrange(r, with: "agraph analyze --allow-damaged measures what decodes")
        }
        return line
    }
}

enum FileManagerPath {
    /// The working directory. [any-thread]
    static func current() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(cString: buffer)
    }
}
