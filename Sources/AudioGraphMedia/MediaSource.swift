import AudioGraphCore
import AudioGraphNodeAPI
import CFFmpeg

/// `media`: demuxes a file libavformat opens (MP4/M4A/MOV, Matroska/WebM,
/// MPEG-TS, ADTS, raw AC-3/E-AC-3, MP3, Ogg, FLAC, WAV…) and emits one audio
/// stream's compressed packets, with their timestamps and the container's
/// trim (encoder delay, padding), to a decoder node: `ffmpeg` (the FFmpeg
/// decoder plugin) for FFmpeg's codecs, `daa` for AC-4 (raw frames from an
/// MP4's `ac-4` track). PCM streams go through `ffmpeg` as well (its PCM
/// decoders convert every sample format).
public struct MediaSourceType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "media", role: .source,
        summary: "Demuxes a media file with libavformat (MP4, M4A, MOV, Matroska, WebM, MPEG-TS, ADTS, AC-3, E-AC-3, MP3, Ogg, FLAC, WAV…) and emits one audio stream's packets to a decoder node (ffmpeg, or daa for AC-4).",
        inputs: .none,
        parameters: [
            .init("path", .path, "The media file; relative to the graph file's folder."),
            .init("stream", .indexOrWord(["best"]), range: 0...65_535, default: .string("best"),
                  "Which stream: its index in the file (agraph probe lists them), or \"best\" (libavformat's choice of audio stream)."),
            .init("start", .number, range: 0...31_536_000, default: .number(0), unit: "s", "Where to start playing."),
            .init("end", .number, range: 0...31_536_000, optional: true, unit: "s", "Where to stop (default: the end of the stream)."),
            .init("loop", .boolean, default: .boolean(false), "Start again at `start` after `end` (no end of stream)."),
            .init("transport", .choice(TransportMode.names), default: .string(TransportMode.free.rawValue),
                  TransportMode.parameterHelp + " The decoder reading it follows: transport frame F plays the stream from start + F; with loop and a known end, wrapped into start…end."),
            .init("onError", .choice(["fail", "skip"]), default: .string("fail"),
                  "Damaged media (packets lost from the container, frames the decoder conceals): fail (an offline render stops there and exits non-zero, naming the file and what was concealed) or skip (conceal it with a warning and go on; as the decoder's own onError: skip). Live playback conceals either way."),
        ],
        domain: .background)

    /// Opens the file and picks the stream; reports what is wrong with a
    /// JSON pointer. [main-thread]
    static func open(_ c: ResolveContext) -> (MediaFile, MediaStream)? {
        guard let path = c.parameters.string("path") else { return nil }
        let full = c.resolvePath(path)
        let file: MediaFile
        do {
            file = try MediaFile(path: full)
        } catch {
            c.error(parameter: "path", error.message)
            return nil
        }
        let audio = file.streams.filter { $0.kind == "audio" }
        let chosen: MediaStream
        if let i = c.parameters.integer("stream") {
            guard i < file.streams.count else {
                c.error(parameter: "stream", "\(path) has \(file.streams.count) stream\(file.streams.count == 1 ? "" : "s") (0…\(file.streams.count - 1)); there is no stream \(i)")
                return nil
            }
            guard file.streams[i].kind == "audio" else {
                let list = audio.map { String($0.index) }.joined(separator: ", ")
                c.error(parameter: "stream", "stream \(i) of \(path) is \(file.streams[i].kind) (\(file.streams[i].codec)), not audio; its audio streams: \(list.isEmpty ? "none" : list)")
                return nil
            }
            chosen = file.streams[i]
        } else {
            guard let best = file.defaultAudioStream else {
                c.error(parameter: "path", "\(path) (\(file.container)) has no audio stream")
                return nil
            }
            chosen = best
        }
        guard chosen.sampleRate > 0 else {
            c.error(parameter: "path", "stream \(chosen.index) of \(path) (\(chosen.codec)) has no sample rate")
            return nil
        }
        // A damaged header (an MKV's Channels element of 0): without a
        // channel count the decoder cannot be linked; say which file.
        guard chosen.channels > 0 else {
            c.error(parameter: "path", "stream \(chosen.index) of \(path) (\(chosen.codec)) says it has no channels: its header is damaged")
            return nil
        }
        return (file, chosen)
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let (file, stream) = Self.open(c) else { return nil }
        let start = c.parameters.number("start") ?? 0
        let length = stream.durationSeconds ?? file.durationSeconds
        if let length, start > 0, start >= length {
            c.error(parameter: "start", "start at \(ParameterValue.number(start)) s is past the end of the stream (\(ParameterValue.number((length * 1000).rounded() / 1000)) s long)")
            return nil
        }
        if let end = c.parameters.number("end"), end <= start {
            c.error(parameter: "end", "end (\(ParameterValue.number(end)) s) must be after start (\(ParameterValue.number(start)) s)")
            return nil
        }
        // A window shorter than half a frame plays nothing (and, looped, would repeat nothing forever).
        if let end = c.parameters.number("end"),
           let a = try? FrameTime.frames(seconds: start, sampleRate: c.sampleRate),
           let b = try? FrameTime.frames(seconds: end, sampleRate: c.sampleRate), b <= a {
            c.error(parameter: "end", "end (\(ParameterValue.number(end)) s) is less than one frame after start (\(ParameterValue.number(start)) s) at \(ParameterValue.number(c.sampleRate)) Hz: nothing would play")
            return nil
        }
        // A layout the project has no name for is tagged discrete; the
        // decoder warns when it opens the stream.
        return .frames(codec: stream.codec, sampleRate: c.sampleRate, channels: stream.channels, layout: stream.layout,
                       surroundsAreBack: stream.surroundsAreBack)
    }

    public func isEndless(_ p: NodeParameters) -> Bool { p.boolean("loop") == true }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let path = c.parameters.string("path") else { throw EngineError(nodeID: c.nodeID, "no path") }
        let full = c.resolvePath(path)
        let file: MediaFile
        do { file = try MediaFile(path: full) } catch { throw EngineError(nodeID: c.nodeID, error.message) }
        let index: Int
        if let i = c.parameters.integer("stream") { index = i } else {
            guard let best = file.defaultAudioStream?.index else {
                throw EngineError(nodeID: c.nodeID, "\(path) has no audio stream")
            }
            index = best
        }
        guard index < file.streams.count else { throw EngineError(nodeID: c.nodeID, "\(path) has no stream \(index)") }
        let start = try FrameTime.frames(seconds: c.parameters.number("start") ?? 0, sampleRate: c.sampleRate)
        var end = try c.parameters.number("end").map { try FrameTime.frames(seconds: $0, sampleRate: c.sampleRate) }
        if let length = file.presentationFrames(of: file.streams[index], sampleRate: c.sampleRate) {
            end = min(end ?? length, length)
        }
        return MediaSourceNode(path: full, stream: file.streams[index], sampleRate: c.sampleRate,
                               window: PlaybackWindow(start: start, end: end, loops: c.parameters.boolean("loop") ?? false),
                               transportMode: TransportMode(rawValue: c.parameters.string("transport") ?? "") ?? .free,
                               onError: c.parameters.string("onError") ?? "fail")
    }
}

/// The `media` node in an engine: it holds what its decoder's cursor opens;
/// the decoder reads packets off the audio thread. Its render does nothing
/// (a compressed stream has no PCM in the engine).
public final class MediaSourceNode: RenderNode, CompressedFrameSource, RateConverting, @unchecked Sendable {
    public let path: String
    public let stream: MediaStream
    public let sampleRate: Double
    public let playback: PlaybackWindow
    public let transportMode: TransportMode
    public let onError: String?
    var output: AudioBus?

    /// [main-thread]
    init(path: String, stream: MediaStream, sampleRate: Double, window: PlaybackWindow, transportMode: TransportMode,
         onError: String = "fail") {
        self.onError = onError
        self.path = path
        self.stream = stream
        self.sampleRate = sampleRate
        self.playback = window
        self.transportMode = transportMode
    }

    public var codec: String { stream.codec }

    /// The stream's rate when the decoder converts it to the graph's. [any-thread]
    public var convertedFromRate: Double? {
        Double(stream.sampleRate) == sampleRate || stream.sampleRate <= 0 ? nil : Double(stream.sampleRate)
    }

    public var mediaPath: String? { path }

    /// Each decoder gets its own demuxer over the file. [main-thread]
    public func makeCursor() throws -> any CompressedFrameCursor {
        ThreadRole.check(.main)
        do {
            return try MediaFile(path: path).cursor(over: stream, graphRate: sampleRate)
        } catch {
            throw EngineError("cannot open \(path) again: \(error)")
        }
    }

    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }

    public func render(frames: Int) {
        output?.state = BusState(validFrames: frames, ended: false)
    }
}

/// Packets of one stream, with timestamps in samples at the graph's rate
/// relative to the stream's start (negative for priming).
/// [worker-thread; made on the main thread]
final class MediaCursor: CompressedFrameCursor {
    let file: MediaFile
    let stream: MediaStream
    let graphRate: Double
    let base: AVRational
    let start: Int64
    var count = 0
    /// A packet read ahead by `seek` (to learn where decoding restarts).
    var pending: CompressedFrame?

    init(file: MediaFile, stream: MediaStream, graphRate: Double) throws(MediaError) {
        self.file = file
        self.stream = stream
        self.graphRate = graphRate
        guard let t = file.timing(stream.index) else { throw MediaError("no stream \(stream.index)") }
        base = t.base
        start = t.start
    }

    var streamInfo: CompressedStreamInfo? { stream.info }

    /// Stream ticks → graph samples (relative to the stream's start).
    func samples(_ ticks: Int64) -> Int {
        Self.samples(ticks: ticks, start: start, num: base.num, den: base.den, graphRate: graphRate)
    }

    /// Graph samples → stream ticks.
    func ticks(_ samples: Int) -> Int64 {
        Self.ticks(samples: samples, start: start, num: base.num, den: base.den, graphRate: graphRate)
    }

    /// Coded-rate samples → graph samples.
    func graphSamples(coded n: Int) -> Int {
        Self.graphSamples(coded: n, codedRate: stream.sampleRate, graphRate: graphRate)
    }

    // The conversions, safe for any values a file can carry (a time base
    // of 0/1 or 1/0, a sample rate of 0, timestamps near Int64's ends):
    // done in Double, a result that is not finite is 0, and one beyond
    // ±2^62 is clamped, so no conversion to an integer traps. [any-thread]

    /// `x` rounded as `rule` says, as an Int: 0 when not finite, clamped to ±2^62.
    static func whole(_ x: Double, _ rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> Int64 {
        let r = x.rounded(rule)
        guard r.isFinite else { return 0 }
        let bound = Double(Int64(1) << 62)
        return Int64(min(max(r, -bound), bound))
    }

    /// Stream ticks (time base `num`/`den`) → graph samples after `start`.
    static func samples(ticks: Int64, start: Int64, num: Int32, den: Int32, graphRate: Double) -> Int {
        Int(whole((Double(ticks) - Double(start)) * Double(num) / Double(den) * graphRate))
    }

    /// Graph samples after `start` → stream ticks (time base `num`/`den`).
    static func ticks(samples: Int, start: Int64, num: Int32, den: Int32, graphRate: Double) -> Int64 {
        whole(Double(start) + (Double(samples) / graphRate * Double(den) / Double(num)).rounded(.down), .down)
    }

    /// Samples at `codedRate` → samples at `graphRate`.
    static func graphSamples(coded n: Int, codedRate: Int, graphRate: Double) -> Int {
        Int(whole(Double(n) * graphRate / Double(codedRate)))
    }

    func next() -> CompressedFrame? {
        if let p = pending {
            pending = nil
            return p
        }
        guard let p = file.nextPacket(of: stream.index) else { return nil }
        defer { count += 1 }
        let ts = p.pts == agraph_av_nopts_value() ? Int.min : samples(p.pts)
        let duration = p.duration > 0 ? Self.samples(ticks: p.duration, start: 0, num: base.num, den: base.den, graphRate: graphRate)
            : graphSamples(coded: max(stream.info.frameSize, 1024))
        return CompressedFrame(bytes: p.bytes[...], index: count, timestamp: ts, samplesPerFrame: duration,
                               sampleRate: graphRate, isIndependent: p.key, skipStart: p.skipStart, discardEnd: p.discardEnd)
    }

    /// Decoding restarts this long before a seek target, so that the
    /// decoder's state (MDCT overlap, MP3's bit reservoir, Opus's pre-roll)
    /// has settled by the target: 80 ms or the codec's own pre-roll, at
    /// least four frames. HE-AAC and HE-AACv2: 1.1 s, because a decoder
    /// opened afresh (`start`) applies SBR only from the first SBR header
    /// it reads, and encoders repeat that header only about once a second
    /// (FDK AAC's default); a shorter pre-roll leaves the band above the
    /// crossover out from the target up to the next header.
    var preroll: Int {
        let frame = stream.info.frameSize > 0 ? stream.info.frameSize : 2048
        let base = max(graphSamples(coded: 4 * frame), Int(0.08 * graphRate))
        return Self.carriesSBR(stream.info) ? max(base, Int(Self.sbrHeaderInterval * graphRate)) : base
    }

    /// How far back an SBR header is sure to be found, in seconds.
    static let sbrHeaderInterval = 1.1

    /// An AAC stream with spectral band replication (HE-AAC, HE-AACv2).
    static func carriesSBR(_ info: CompressedStreamInfo) -> Bool {
        info.codec == "aac" && (info.profile == Int(FF_PROFILE_AAC_HE) || info.profile == Int(FF_PROFILE_AAC_HE_V2))
    }

    func seek(toSample sample: Int) -> Int? {
        pending = nil
        let target = max(sample - preroll, 0)
        guard file.seek(stream: stream.index, to: ticks(target) ) else { return nil }
        guard var first = next() else { return nil }
        // A demuxer that could not land before the target (rounding of
        // byte seeks): start from the beginning instead.
        if first.timestamp != Int.min, first.timestamp > sample {
            guard file.seek(stream: stream.index, to: start), let again = next() else { return nil }
            first = again
        }
        pending = first
        guard first.timestamp != Int.min else { return sample }
        // The container's own trim of that packet happens in the decoder:
        // its output starts after it.
        return first.timestamp + graphSamples(coded: first.skipStart)
    }
}
