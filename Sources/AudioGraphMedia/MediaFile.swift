import AudioGraphCore
import AudioGraphNodeAPI
import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Why a media file could not be opened or read.
public struct MediaError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    /// FFmpeg's words for an error code.
    static func text(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        agraph_av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// One stream of a media file, as libavformat describes it.
public struct MediaStream: Sendable {
    public var index: Int
    /// "audio", "video", "subtitle", "data", "attachment", "unknown".
    public var kind: String
    /// FFmpeg's codec name ("aac", "eac3", "h264"…), "ac4-raw" for AC-4.
    public var codec: String
    public var profile: String?
    public var sampleRate: Int
    public var channels: Int
    /// FFmpeg's description of the channel layout ("5.1(side)"), if any.
    public var channelLayoutName: String?
    /// The project's layout for it.
    public var layout: ChannelLayout
    /// Whether that layout is a guess (the channels' positions are unknown
    /// or have no project layout): then `discrete`.
    public var layoutIsDiscrete: Bool
    /// A 5.1 with back surrounds (FFmpeg's "5.1", mask 0x3F), not side
    /// ones ("5.1(side)", 0x60F): `StreamFormat.surroundsAreBack`.
    public var surroundsAreBack: Bool
    public var durationSeconds: Double?
    /// The stream's duration in its time base (nil when unknown), and the base.
    public var durationTicks: Int64?
    public var timeBase: (num: Int32, den: Int32) { (timeBaseNum, timeBaseDen) }
    var timeBaseNum: Int32
    var timeBaseDen: Int32
    public var bitRate: Int
    public var language: String?
    /// The parameters a decoder is opened with (audio streams).
    public var info: CompressedStreamInfo
}

/// A media file opened with libavformat: its container and streams, and
/// reading one audio stream's packets in order, with seeking.
///
/// Threading: one thread at a time. `open` and the description on the main
/// thread; `next` and `seek` on the thread that owns the cursor (the worker).
public final class MediaFile: @unchecked Sendable {
    public let path: String
    /// libavformat's name of the container ("mov,mp4,m4a,3gp,3g2,mj2").
    public let container: String
    public let containerLongName: String
    public let durationSeconds: Double?
    public let bitRate: Int
    public let streams: [MediaStream]
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>

    /// Opens `path` and reads enough of it to describe its streams. Only a
    /// regular file is opened: a FIFO, device, socket or directory is refused
    /// before libavformat sees it (opening a FIFO would wait for a writer),
    /// and the path goes to libavformat's `file` protocol, never another
    /// protocol its name might spell ("pipe:0", "http://…"). [main-thread | worker-thread;
    /// a playlist's worker opens its items]
    public init(path: String) throws(MediaError) {
        ThreadRole.check(.main, .worker)
        self.path = path
        if let problem = FileChecks.readableFileProblem(path) {
            throw MediaError("cannot open \(path): \(problem)")
        }
        // FFmpeg is loaded the first time a graph needs it (CLazyLibs).
        if let missing = LazyLibrary.require(.avformat, .avcodec, .avutil, for: "the `media` source") {
            throw MediaError("cannot open \(path): \(missing)")
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        av_log_set_level(AV_LOG_QUIET)
        let rc = avformat_open_input(&ctx, "file:" + path, nil, nil)
        guard rc == 0, let c = ctx else {
            throw MediaError("cannot open \(path): \(MediaError.text(rc))")
        }
        let found = avformat_find_stream_info(c, nil)
        if found < 0 {
            avformat_close_input(&ctx)
            throw MediaError("\(path): cannot read its streams: \(MediaError.text(found))")
        }
        context = c
        guard let p = av_packet_alloc() else {
            avformat_close_input(&ctx)
            throw MediaError("out of memory")
        }
        packet = p
        container = c.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
        containerLongName = c.pointee.iformat.flatMap { $0.pointee.long_name.map { String(cString: $0) } } ?? container
        let d = c.pointee.duration
        durationSeconds = d == agraph_av_nopts_value() || d <= 0 ? nil : Double(d) / Double(agraph_av_time_base())
        bitRate = Int(c.pointee.bit_rate)
        var list: [MediaStream] = []
        for i in 0..<Int(c.pointee.nb_streams) {
            guard let st = c.pointee.streams[i] else { continue }
            list.append(Self.describe(st, index: i))
        }
        streams = list
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        avformat_close_input(&context)
    }

    /// The audio stream libavformat deems best (nil: none).
    public var bestAudioStream: Int? {
        guard let context else { return nil }
        let i = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        return i >= 0 ? Int(i) : nil
    }

    /// The audio stream played when none is named: libavformat's best,
    /// else the first audio stream (nil: the file has none).
    public var defaultAudioStream: MediaStream? {
        if let best = bestAudioStream, best < streams.count { return streams[best] }
        return streams.first { $0.kind == "audio" }
    }

    /// The length of `stream`'s presentation in samples at `sampleRate`,
    /// when the container says it exactly: an MP4's edit list gives it, and
    /// its last AAC frame's padding overshoots it (other containers mark
    /// that padding on the packet). nil otherwise.
    public func presentationFrames(of stream: MediaStream, sampleRate: Double) -> Int? {
        guard container.hasPrefix("mov,mp4"), let ticks = stream.durationTicks, stream.timeBaseDen > 0 else { return nil }
        return Int((Double(ticks) * Double(stream.timeBaseNum) / Double(stream.timeBaseDen) * sampleRate).rounded())
    }

    /// A reading position over `stream`'s packets, with timestamps in
    /// samples at `graphRate`; it owns this file from then on (one reader
    /// at a time). [any-thread; the thread that reads it]
    public func cursor(over stream: MediaStream, graphRate: Double) throws(MediaError) -> any CompressedFrameCursor {
        try MediaCursor(file: self, stream: stream, graphRate: graphRate)
    }

    static func describe(_ st: UnsafeMutablePointer<AVStream>, index: Int) -> MediaStream {
        let par = st.pointee.codecpar.pointee
        let kind: String
        switch par.codec_type {
        case AVMEDIA_TYPE_AUDIO: kind = "audio"
        case AVMEDIA_TYPE_VIDEO: kind = "video"
        case AVMEDIA_TYPE_SUBTITLE: kind = "subtitle"
        case AVMEDIA_TYPE_DATA: kind = "data"
        case AVMEDIA_TYPE_ATTACHMENT: kind = "attachment"
        default: kind = "unknown"
        }
        let codec = MediaCodecNames.name(par.codec_id, tag: par.codec_tag)
        let profile = avcodec_profile_name(par.codec_id, par.profile).map { String(cString: $0) }
        var layoutName: String? = nil
        var mask: UInt64 = 0
        var chLayout = par.ch_layout
        let channels = Int(chLayout.nb_channels)
        if chLayout.order == AV_CHANNEL_ORDER_NATIVE {
            mask = chLayout.u.mask
        }
        if chLayout.order != AV_CHANNEL_ORDER_UNSPEC {
            var buffer = [CChar](repeating: 0, count: 128)
            if av_channel_layout_describe(&chLayout, &buffer, buffer.count) > 0 {
                layoutName = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        let layout = MediaLayouts.layout(mask: mask, channels: channels)
        let tb = st.pointee.time_base
        let dur = st.pointee.duration
        let seconds = dur == agraph_av_nopts_value() || dur <= 0 || tb.den == 0 ? nil
            : Double(dur) * Double(tb.num) / Double(tb.den)
        var extradata: [UInt8] = []
        if let e = par.extradata, par.extradata_size > 0 {
            extradata = Array(UnsafeBufferPointer(start: e, count: Int(par.extradata_size)))
        }
        var language: String? = nil
        if let tag = av_dict_get(st.pointee.metadata, "language", nil, 0), let v = tag.pointee.value {
            language = String(cString: v)
        }
        let info = CompressedStreamInfo(
            codec: codec, sampleRate: Int(par.sample_rate), channels: channels, channelMask: mask,
            codecTag: par.codec_tag, bitsPerCodedSample: Int(par.bits_per_coded_sample),
            bitsPerRawSample: Int(par.bits_per_raw_sample), blockAlign: Int(par.block_align),
            frameSize: Int(par.frame_size), profile: Int(par.profile), bitRate: Int(par.bit_rate), extradata: extradata)
        return MediaStream(index: index, kind: kind, codec: codec, profile: profile, sampleRate: Int(par.sample_rate),
                           channels: channels, channelLayoutName: layoutName, layout: layout.layout,
                           layoutIsDiscrete: layout.discrete,
                           surroundsAreBack: MediaLayouts.surroundsAreBack(mask: mask, channels: channels),
                           durationSeconds: seconds,
                           durationTicks: seconds == nil ? nil : dur, timeBaseNum: tb.num, timeBaseDen: tb.den,
                           bitRate: Int(par.bit_rate),
                           language: language, info: info)
    }

    // MARK: Reading one stream [any-thread; the cursor's thread]

    /// The time base and start of `stream`, for timestamps.
    func timing(_ stream: Int) -> (base: AVRational, start: Int64)? {
        guard let context, stream >= 0, stream < Int(context.pointee.nb_streams),
              let st = context.pointee.streams[stream] else { return nil }
        let s = st.pointee.start_time
        return (st.pointee.time_base, s == agraph_av_nopts_value() ? 0 : s)
    }

    /// The next packet of `stream`: its bytes, time stamp (in the stream's
    /// time base), duration, key flag and the container's trim; nil at the
    /// end of the file (or on a read error: `readErrors` counts those).
    func nextPacket(of stream: Int) -> (bytes: [UInt8], pts: Int64, duration: Int64, key: Bool,
                                       skipStart: Int, discardEnd: Int)? {
        guard let context else { return nil }
        var stalled = 0
        var lastPosition: Int64 = -1
        while true {
            let rc = av_read_frame(context, packet)
            if rc < 0 {
                if rc == agraph_averror_eof() { return nil }
                // Damage: libavformat resyncs at the next packet or page;
                // give up only when reading stops moving forward.
                readErrors += 1
                let position = context.pointee.pb.map { avio_tell($0) } ?? -1
                stalled = position > lastPosition ? 0 : stalled + 1
                lastPosition = max(lastPosition, position)
                if stalled >= 16 { return nil }
                continue
            }
            defer { av_packet_unref(packet) }
            let p = packet.pointee
            guard Int(p.stream_index) == stream, let data = p.data, p.size > 0 else { continue }
            let bytes = Array(UnsafeBufferPointer(start: data, count: Int(p.size)))
            var skip = 0, discard = 0
            var size: Int = 0
            if let side = av_packet_get_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 8 {
                let raw = UnsafeRawPointer(side)
                skip = Int(UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
                discard = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            }
            let pts = p.pts != agraph_av_nopts_value() ? p.pts : p.dts
            return (bytes, pts, p.duration, p.flags & AV_PKT_FLAG_KEY != 0, skip, discard)
        }
    }

    /// Read errors skipped so far (damaged containers). [any-thread; the cursor's thread]
    public private(set) var readErrors = 0

    /// Moves so that the next packets of `stream` start at or before
    /// `timestamp` (the stream's time base). [any-thread; the cursor's thread]
    func seek(stream: Int, to timestamp: Int64) -> Bool {
        guard let context else { return false }
        let rc = avformat_seek_file(context, Int32(stream), Int64.min, timestamp, timestamp, 0)
        if rc >= 0 { return true }
        return av_seek_frame(context, Int32(stream), timestamp, AVSEEK_FLAG_BACKWARD) >= 0
    }
}

/// The project's layouts for FFmpeg's channel positions.
public enum MediaLayouts {
    // WAVE/FFmpeg native channel bits.
    static let fl: UInt64 = 1 << 0, fr: UInt64 = 1 << 1, fc: UInt64 = 1 << 2, lfe: UInt64 = 1 << 3
    static let bl: UInt64 = 1 << 4, br: UInt64 = 1 << 5, sl: UInt64 = 1 << 9, sr: UInt64 = 1 << 10

    /// The layout a channel mask maps to, and whether it had to fall back
    /// to `discrete`. 5.1 with side or back surrounds is the project's 5.1
    /// (its surrounds are at ±110° in BS.775 either way). The decoder puts
    /// the channels in the project's order (the `ffmpeg` plugin).
    public static func layout(mask: UInt64, channels: Int) -> (layout: ChannelLayout, discrete: Bool) {
        switch (mask, channels) {
        case (fc, 1): return (.mono, false)
        case (fl | fr, 2): return (.stereo, false)
        case (fl | fr | fc | lfe | bl | br, 6), (fl | fr | fc | lfe | sl | sr, 6): return (.surround51, false)
        case (fl | fr | fc | lfe | bl | br | sl | sr, 8): return (.surround71, false)
        case (0, 1): return (.mono, false)
        case (0, 2): return (.stereo, false)
        default: return (.discrete, true)
        }
    }

    /// Whether a mask `layout` maps to 5.1 has back surrounds (FFmpeg's
    /// "5.1", WAVE 0x3F) rather than side ones ("5.1(side)", 0x60F). [any-thread]
    public static func surroundsAreBack(mask: UInt64, channels: Int) -> Bool {
        channels == 6 && mask == fl | fr | fc | lfe | bl | br
    }

}
