// The `ffmpeg` decoder node: libavcodec behind the project's decoder
// contract, written in Swift on AGraphPluginKit and built as a plugin
// (`libAGraphFFmpegPlugin.so`, product `AGraphFFmpegPlugin`), not into the
// host: the second decoder after `daa`, and the proof that the contract
// carries a general decoder.
//
// Fed by the `media` source (AGRAPH_EXT_DECODER_STREAM: the stream's codec
// parameters, and the container's trim of encoder delay and padding), it
// decodes AAC (LC, HE, HEv2), AC-3, E-AC-3, MP3, MP2, Opus, Vorbis, FLAC,
// ALAC, DTS core, WavPack, TrueHD and PCM variants to float PCM:
// - channels in the project's order (FFmpeg's native order is the project's
//   for mono, stereo and 5.1; 7.1's side and back pairs swap), layout from
//   the media source (5.1(side) → 5.1; unknown positions → discrete, with a
//   warning in the log);
// - encoder delay and padding trimmed by libavcodec from the container's
//   skip-samples (AAC priming in MP4 edit lists, Opus pre-skip, the LAME
//   header), so the PCM lines up sample for sample with what was encoded;
// - a stream at another rate than the graph's converted with libswresample's
//   soxr engine (`quality`), which compensates its own delay (MediaTests
//   checks an impulse's time);
// - corrupt packets: libavcodec's own concealment where it has one, else
//   the frame is refused (the host counts it and plays silence).
import AGraphPluginKit
import CFFmpeg
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

final class FFmpegDecoder: PluginStreamDecoder {
    /// FFmpeg's names of the codecs this node decodes.
    static let codecs = [
        "aac", "aac_latm", "ac3", "eac3", "mp3", "mp2", "opus", "vorbis", "flac", "alac", "dts", "truehd", "wavpack",
        "pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_f32le", "pcm_f32be",
        "pcm_f64le", "pcm_f64be", "pcm_u8", "pcm_s8", "pcm_alaw", "pcm_mulaw",
    ]
    static let inputCodec = codecs.joined(separator: " ")
    static let qualities = ["quick", "low", "medium", "high", "very-high"]

    static let description = PluginNodeDescription(
        typeID: "ffmpeg",
        summary: "Decodes a media stream with libavcodec (AAC, AC-3, E-AC-3, MP3, Opus, Vorbis, FLAC, ALAC, DTS, PCM…): channels and layout from the stream, encoder delay and padding trimmed, other rates converted.",
        input: .input("in", channels: 0...255),
        output: .output(channels: .sameAsInput),
        parameters: [
            .choice("quality", qualities, default: "high",
                    "Rate conversion quality when the stream's rate is not the graph's (libswresample's soxr engine: 16, 16, 20, 20, 28 bits)."),
            // Read by the host's decoder node (AudioGraphPlugins' PluginDecoderNode), not here.
            .choice("onError", ["fail", "skip"], default: "fail",
                    "Damaged media (frames the decoder conceals, packets lost from the container): fail (an offline render stops there and exits non-zero, naming the file and what was concealed) or skip (conceal it with a warning and go on). Skip on either this node or its media source skips. Live playback conceals either way."),
        ])

    /// Largest PCM one packet gives, after rate conversion (FLAC frames of
    /// up to 32768 samples converted up by up to 2x, with room).
    static let maxFrames = 65_536 + 4096

    let host: PluginHost
    let outputChannels: Int
    let quality: Int
    var graphRate = 48_000.0
    /// [worker-thread]
    var context: UnsafeMutablePointer<AVCodecContext>?
    var packet: UnsafeMutablePointer<AVPacket>?
    var frame: UnsafeMutablePointer<AVFrame>?
    var resampler: OpaquePointer?
    /// The format the resampler was made for.
    var resamplerFormat: (format: Int32, rate: Int32, channels: Int32)?
    /// The open stream's layout (its mask, or FFmpeg's default for its
    /// channel count): what frames of another channel count are mixed to.
    var streamLayout = AVChannelLayout()
    /// A change of channel count was reported (once per stream).
    var reportedLayoutChange = false
    var pendingTrim: (skip: Int, discard: Int)?
    /// Where (in samples, the timestamps' scale) the next output sample
    /// belongs, after a (re)start: the first frame's timestamp plus its
    /// trim. Decoded frames carry their own time (libavcodec keeps the
    /// packet's, adjusted for what it trims): output is aligned to it, so
    /// a decoder that trims more or less than the container said after a
    /// flush (Opus re-applies its pre-skip) still starts where the host
    /// counts. Only when the stream's rate is the graph's.
    var expected: Int?
    var sameRate = true
    /// Set by `flush`: the start of a stream needs no alignment (libavcodec
    /// applies the container's trim exactly as for ffmpeg's own decode,
    /// and a Vorbis stream's first frame times are not its output's).
    var aligning = false
    /// Frames libavcodec decoded but marked damaged (its concealment).
    let concealed = Atomic<Int>(0)
    var concealedFrames: Int { concealed.load(ordering: .relaxed) }
    /// Decoded channel feeding each output channel.
    var order: [Int] = []
    /// The open stream's channels (the node's may be more).
    var streamChannels = 0
    var stream: String = ""
    var scratch: [UnsafeMutablePointer<Float>] = []
    var scratchFrames = 0

    /// [main-thread]
    init(_ setup: PluginNodeSetup) throws {
        host = setup.host
        outputChannels = setup.outputChannels
        quality = Self.qualities.firstIndex(of: setup.string("quality") ?? "high") ?? 3
    }

    deinit { close() }

    /// [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws {
        graphRate = sampleRate
    }

    /// [main-thread & active]
    func deactivate() { close() }

    func close() {
        avcodec_free_context(&context)
        av_packet_free(&packet)
        av_frame_free(&frame)
        swr_free(&resampler)
        resamplerFormat = nil
        av_channel_layout_uninit(&streamLayout)
        scratch.forEach { $0.deallocate() }
        scratch = []
        scratchFrames = 0
    }

    var maxFramesPerDecode: Int { Self.maxFrames }

    // MARK: The stream [worker-thread & active]

    func openStream(_ s: PluginStreamInfo) throws {
        close()
        guard let descriptor = avcodec_descriptor_get_by_name(s.codec),
              let codec = avcodec_find_decoder(descriptor.pointee.id) else {
            throw PluginError("libavcodec has no decoder for \(s.codec)")
        }
        guard s.channels > 0 else { throw PluginError("the stream (\(s.codec)) does not say its channel count") }
        // Fewer channels than the node's (a playlist's decoder is made for
        // the most any item has): the others stay silent.
        guard s.channels <= outputChannels else {
            throw PluginError("the stream has \(s.channels) channels but the node was made for \(outputChannels)")
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw PluginError("out of memory") }
        context = ctx
        ctx.pointee.sample_rate = Int32(s.sampleRate)
        if s.channelMask != 0 && s.channelMask.nonzeroBitCount == s.channels {
            av_channel_layout_from_mask(&ctx.pointee.ch_layout, s.channelMask)
        } else {
            av_channel_layout_default(&ctx.pointee.ch_layout, Int32(s.channels))
        }
        ctx.pointee.codec_tag = s.codecTag
        ctx.pointee.bits_per_coded_sample = Int32(s.bitsPerCodedSample)
        ctx.pointee.bits_per_raw_sample = Int32(s.bitsPerRawSample)
        ctx.pointee.block_align = Int32(s.blockAlign)
        ctx.pointee.frame_size = Int32(s.frameSize)
        ctx.pointee.bit_rate = Int64(s.bitRate)
        if s.profile >= 0 { ctx.pointee.profile = Int32(s.profile) }
        ctx.pointee.pkt_timebase = AVRational(num: 1, den: Int32(s.sampleRate))
        ctx.pointee.request_sample_fmt = AV_SAMPLE_FMT_FLTP
        // Check the CRCs codecs carry (AC-3, E-AC-3, MP3, FLAC…): a damaged
        // frame is then concealed and counted instead of played as noise.
        ctx.pointee.err_recognition |= AV_EF_CRCCHECK
        if let extra = s.extradata, extra.count > 0, let base = extra.baseAddress {
            let size = extra.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)
            guard let p = av_mallocz(size)?.assumingMemoryBound(to: UInt8.self) else { throw PluginError("out of memory") }
            p.update(from: base.assumingMemoryBound(to: UInt8.self), count: extra.count)
            ctx.pointee.extradata = p
            ctx.pointee.extradata_size = Int32(extra.count)
        }
        let rc = avcodec_open2(ctx, codec, nil)
        guard rc >= 0 else { throw PluginError("libavcodec cannot open the \(s.codec) decoder: \(Self.text(rc))") }
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, frame != nil else { throw PluginError("out of memory") }
        order = Self.order(mask: s.channelMask, channels: s.channels)
        streamChannels = s.channels
        if s.channelMask != 0 && s.channelMask.nonzeroBitCount == s.channels {
            av_channel_layout_from_mask(&streamLayout, s.channelMask)
        } else {
            av_channel_layout_default(&streamLayout, Int32(s.channels))
        }
        reportedLayoutChange = false
        sameRate = Double(s.sampleRate) == graphRate
        // A new stream starts as the first one did: trimmed by libavcodec
        // as ffmpeg's own decode trims it, not aligned to timestamps.
        expected = nil
        pendingTrim = nil
        aligning = false
        stream = "\(s.codec), \(s.channels) ch, \(s.sampleRate) Hz"
        if !Self.knownMasks.contains(s.channelMask) {
            host.log(.warning, "the stream (\(stream)) has channel positions the project has no layout for (mask 0x\(String(s.channelMask, radix: 16))): its channels are tagged discrete, in the stream's order")
        }
    }

    func trimNextFrame(skipStart: Int, discardEnd: Int) {
        pendingTrim = (skipStart, discardEnd)
    }

    /// Masks with a project layout (mono, stereo, 5.1 back or side, 7.1).
    static let knownMasks: Set<UInt64> = [0, 0x4, 0x3, 0x3F, 0x60F, 0x63F]

    /// For each output channel, the decoded channel that goes there: 7.1
    /// comes as L R C LFE Lb Rb Ls Rs (FFmpeg's native order), the project's
    /// 7.1 is L R C LFE Ls Rs Lb Rb.
    static func order(mask: UInt64, channels: Int) -> [Int] {
        if mask == 0x63F && channels == 8 { return [0, 1, 2, 3, 6, 7, 4, 5] }
        return Array(0..<channels)
    }

    static func text(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        agraph_av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Decoding [worker-thread & active]

    func flush() {
        if let context { avcodec_flush_buffers(context) }
        pendingTrim = nil
        expected = nil
        aligning = true
        if resampler != nil { restartResampler() }
    }

    func decode(_ bytes: UnsafeRawBufferPointer?, timestamp: Int, into pcm: PluginPCM) -> PluginDecodeResult {
        guard let context, let packet, let frame else { return .fatal("no stream was opened (the media source gives its parameters)") }
        var written = 0
        if let bytes, let base = bytes.baseAddress, bytes.count > 0 {
            guard av_new_packet(packet, Int32(bytes.count)) >= 0 else { return .fatal("out of memory") }
            packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            let known = sameRate && aligning && timestamp != Int.min
            packet.pointee.pts = known ? Int64(timestamp) : agraph_av_nopts_value()
            if known && expected == nil { expected = timestamp + (pendingTrim?.skip ?? 0) }
            if let trim = pendingTrim {
                pendingTrim = nil
                if let side = av_packet_new_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, 10) {
                    let raw = UnsafeMutableRawPointer(side)
                    raw.storeBytes(of: UInt32(clamping: trim.skip).littleEndian, toByteOffset: 0, as: UInt32.self)
                    raw.storeBytes(of: UInt32(clamping: trim.discard).littleEndian, toByteOffset: 4, as: UInt32.self)
                    raw.storeBytes(of: UInt16(0), toByteOffset: 8, as: UInt16.self)
                }
            }
            let sent = avcodec_send_packet(context, packet)
            av_packet_unref(packet)
            if sent < 0 && sent != agraph_averror_eagain() {
                drainFrames(into: pcm, written: &written)
                return .badFrame("libavcodec refused a \(stream) packet: \(Self.text(sent))")
            }
        } else {
            _ = avcodec_send_packet(context, nil)
        }
        let status = drainFrames(into: pcm, written: &written)
        if bytes == nil, let resampler, resamplerFormat != nil {
            // The end: what the converter still holds.
            written += convert(resampler, input: nil, count: 0, into: pcm, at: written)
        }
        if let why = status { return written > 0 ? .ok(frames: written) : .badFrame(why) }
        _ = frame
        return .ok(frames: written)
    }

    /// Takes every decoded frame libavcodec has ready; returns its words
    /// for a corrupt packet, if one was met.
    @discardableResult
    func drainFrames(into pcm: PluginPCM, written: inout Int) -> String? {
        guard let context, let frame else { return nil }
        var problem: String?
        while true {
            let rc = avcodec_receive_frame(context, frame)
            if rc == agraph_averror_eagain() || rc == agraph_averror_eof() { break }
            if rc < 0 {
                problem = "libavcodec could not decode a \(stream) packet: \(Self.text(rc))"
                break
            }
            if frame.pointee.decode_error_flags != 0 || frame.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 {
                concealed.add(1, ordering: .relaxed)
            }
            written += deliver(frame, into: pcm, at: written)
            av_frame_unref(frame)
        }
        return problem
    }

    /// Converts one decoded frame to float planar at the graph's rate, in
    /// the project's channel order, after what is already in `pcm`.
    func deliver(_ frame: UnsafeMutablePointer<AVFrame>, into pcm: PluginPCM, at offset: Int) -> Int {
        let f = frame.pointee
        let n = Int(f.nb_samples)
        guard n > 0 else { return 0 }
        let channels = min(Int(f.ch_layout.nb_channels), outputChannels)
        // A stream whose channel count changes on the way (broadcast
        // E-AC-3 or AAC going from 5.1 to stereo at a programme change):
        // its frames are mixed to the stream's layout by libswresample
        // (FFmpeg's own matrices), as the ffmpeg tool does, instead of
        // channels going silent or missing.
        let sameChannels = Int(f.ch_layout.nb_channels) == streamChannels
        if !sameChannels && !reportedLayoutChange {
            reportedLayoutChange = true
            host.log(.warning, "the stream (\(stream)) changed to \(f.ch_layout.nb_channels) channels: mixed to its \(streamChannels) from here on")
        }
        let direct = f.format == AV_SAMPLE_FMT_FLTP.rawValue && Double(f.sample_rate) == graphRate && sameChannels
        if direct {
            // Align to the frame's own time (see `expected`).
            var skip = 0, pad = 0
            if let e = expected, f.pts != agraph_av_nopts_value() {
                let at = Int(f.pts)
                if at > e { pad = min(at - e, pcm.capacity - offset) } else if at < e { skip = min(e - at, n) }
            }
            for c in 0..<outputChannels {
                guard let dst = pcm.channel(c) else { continue }
                (dst + offset).update(repeating: 0, count: pad)
            }
            let count = min(n - skip, pcm.capacity - offset - pad)
            guard count > 0 else { return pad }
            for c in 0..<outputChannels {
                guard let dst = pcm.channel(c) else { continue }
                let from = c < order.count ? order[c] : c
                if from < channels, let src = f.extended_data[from] {
                    (dst + offset + pad).update(from: UnsafeRawPointer(src).assumingMemoryBound(to: Float.self) + skip, count: count)
                } else {
                    (dst + offset + pad).update(repeating: 0, count: count)
                }
            }
            if let e = expected { expected = e + pad + count }
            return pad + count
        }
        guard let swr = ensureResampler(format: f.format, rate: f.sample_rate, layout: f.ch_layout) else { return 0 }
        let planes = UnsafeMutableRawPointer(f.extended_data).map { $0.assumingMemoryBound(to: UnsafePointer<UInt8>?.self) }
        let made = convert(swr, input: planes, count: n, into: pcm, at: offset)
        // At the graph's rate the converter only changes the format or mixes
        // channels, sample for sample: the aligned time goes on with it.
        if let e = expected, Double(f.sample_rate) == graphRate { expected = e + made }
        return made
    }

    /// Runs the converter and copies its output into `pcm` after `offset`,
    /// reordered.
    func convert(_ swr: OpaquePointer, input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int,
                 into pcm: PluginPCM, at offset: Int) -> Int {
        let room = Int(swr_get_out_samples(swr, Int32(count))) + 64
        ensureScratch(room)
        var outs = scratch.map { Optional(UnsafeMutableRawPointer($0).assumingMemoryBound(to: UInt8.self)) }
        let made = outs.withUnsafeMutableBufferPointer { o -> Int32 in
            swr_convert(swr, o.baseAddress, Int32(room), input, Int32(count))
        }
        guard made > 0 else { return 0 }
        let n = min(Int(made), pcm.capacity - offset)
        guard n > 0 else { return 0 }
        for c in 0..<outputChannels {
            guard let dst = pcm.channel(c) else { continue }
            let from = c < order.count ? order[c] : c
            if from < min(scratch.count, streamChannels) {
                (dst + offset).update(from: scratch[from], count: n)
            } else {
                (dst + offset).update(repeating: 0, count: n)
            }
        }
        return n
    }

    func ensureScratch(_ frames: Int) {
        guard frames > scratchFrames || scratch.count != outputChannels else { return }
        scratch.forEach { $0.deallocate() }
        scratchFrames = max(frames, 8192)
        scratch = (0..<outputChannels).map { _ in .allocate(capacity: scratchFrames) }
    }

    /// The converter for frames of this format: float planar at the graph's
    /// rate, the same channels; libswresample's soxr engine when the rate
    /// changes.
    func ensureResampler(format: Int32, rate: Int32, layout: AVChannelLayout) -> OpaquePointer? {
        let key = (format, rate, layout.nb_channels)
        if let r = resampler, let k = resamplerFormat, k == key { return r }
        swr_free(&resampler)
        var inLayout = layout
        // The same channels, or the stream's layout when the frames have
        // another count (mixed by libswresample).
        var outLayout = layout.nb_channels == Int32(streamChannels) ? layout : streamLayout
        var swr: OpaquePointer?
        let rc = swr_alloc_set_opts2(&swr, &outLayout, AV_SAMPLE_FMT_FLTP, Int32(graphRate),
                                     &inLayout, AVSampleFormat(format), rate, 0, nil)
        guard rc >= 0, let swr else { return nil }
        if Double(rate) != graphRate {
            av_opt_set(UnsafeMutableRawPointer(swr), "resampler", "soxr", 0)
            let precision: Int64 = [16, 16, 20, 20, 28][quality]
            av_opt_set_int(UnsafeMutableRawPointer(swr), "precision", precision, 0)
        }
        guard swr_init(swr) >= 0 else {
            var s: OpaquePointer? = swr
            swr_free(&s)
            return nil
        }
        resampler = swr
        resamplerFormat = key
        return swr
    }

    /// Empties the converter (after a flush: the next frames start anew).
    func restartResampler() {
        guard let swr = resampler else { return }
        swr_close(swr)
        if swr_init(swr) < 0 { swr_free(&resampler); resamplerFormat = nil }
    }
}

let plugin = PluginExport(
    name: "FFmpeg decoder", vendor: "AudioGraph", version: "1.0", nodes: [FFmpegDecoder.self],
    details: {
        let v = avcodec_version()
        return "libavcodec \(v >> 16).\((v >> 8) & 0xFF).\(v & 0xFF); codecs: \(FFmpegDecoder.codecs.joined(separator: ", "))"
    })

@c(agraph_plugin_entry)
public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { plugin.descriptor }
