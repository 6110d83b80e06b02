// The extensions the kit implements: plugin-wide (ext/plugin-info.h, and
// the library-wide init/deinit hooks) and per instance (ext/output-route.h,
// ext/decoder.h, ext/decoder-stream.h), each looked up by its id.
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct PluginHooks: Sendable {
    var details: (@Sendable () -> String)?
    var initialize: (@Sendable (String) throws -> Void)?
    var deinitialize: (@Sendable () -> Void)?
}

let pluginHooks = Mutex<PluginHooks>(PluginHooks())

/// The details text, kept until the next call (as the ABI allows).
nonisolated(unsafe) var detailsText: UnsafeMutablePointer<CChar>?

let pluginGetExtension: @convention(c) (UnsafePointer<CChar>?) -> UnsafeRawPointer? = { id in
    guard let id, String(cString: id) == AGRAPH_EXT_PLUGIN_INFO else { return nil }
    return UnsafeRawPointer(pluginInfoExtension)
}

nonisolated(unsafe) let pluginInfoExtension: UnsafeMutablePointer<agraph_plugin_info_ext_t> = {
    let p = UnsafeMutablePointer<agraph_plugin_info_ext_t>.allocate(capacity: 1)
    p.initialize(to: agraph_plugin_info_ext_t(details: {
        let text = pluginHooks.withLock { $0.details }?() ?? ""
        free(detailsText)
        detailsText = strdup(text)
        return UnsafePointer(detailsText)
    }))
    return p
}()

let pluginInitTrampoline: @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UInt32) -> Int32 = { path, error, capacity in
    guard let initialize = pluginHooks.withLock({ $0.initialize }) else { return 1 }
    do {
        try initialize(path.map { String(cString: $0) } ?? "")
        return 1
    } catch let e {
        writeError("\(e)", error, capacity)
        return 0
    }
}

let pluginDeinitTrampoline: @convention(c) () -> Void = {
    pluginHooks.withLock { $0.deinitialize }?()
}

/// The instance extensions the kit implements: the decoder (for a
/// `PluginDecoder`) and the plugin side of the output route.
let instanceGetExtension: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> UnsafeRawPointer? = { p, id in
    guard let id else { return nil }
    let name = String(cString: id)
    if name == AGRAPH_EXT_OUTPUT_ROUTE { return UnsafeRawPointer(routeExtension) }
    if name == AGRAPH_EXT_DECODER, instance(p).decoder != nil { return UnsafeRawPointer(decoderExtension) }
    if name == AGRAPH_EXT_DECODER_STREAM, instance(p).decoder is any PluginStreamDecoder {
        return UnsafeRawPointer(streamDecoderExtension)
    }
    return nil
}

nonisolated(unsafe) let routeExtension: UnsafeMutablePointer<agraph_output_route_ext_t> = {
    let e = UnsafeMutablePointer<agraph_output_route_ext_t>.allocate(capacity: 1)
    e.initialize(to: agraph_output_route_ext_t(changed: { p, route in
        instance(p).node.outputRouteChanged(PluginOutputRoute(rawValue: route) ?? .unknown)
    }))
    return e
}()

nonisolated(unsafe) let decoderExtension: UnsafeMutablePointer<agraph_decoder_ext_t> = {
    let e = UnsafeMutablePointer<agraph_decoder_ext_t>.allocate(capacity: 1)
    e.initialize(to: agraph_decoder_ext_t(
        configure: nil,
        max_frames_per_decode: { p in UInt32(clamping: instance(p).decoder?.maxFramesPerDecode ?? 0) },
        decode: { p, frame, size, timestamp, pcm, capacity, written in
            let box = instance(p)
            written?.pointee = 0
            box.lastError[0] = 0
            guard let decoder = box.decoder, let pcm else { return Int32(AGRAPH_DECODE_FATAL.rawValue) }
            let bytes = frame.map { UnsafeRawBufferPointer(start: $0, count: Int(size)) }
            let view = PluginPCM(pointers: pcm, channels: box.channels, capacity: Int(capacity))
            switch decoder.decode(size == 0 ? nil : bytes, timestamp: Int(timestamp), into: view) {
            case .ok(let frames):
                written?.pointee = UInt32(clamping: min(max(frames, 0), Int(capacity)))
                return Int32(AGRAPH_DECODE_OK.rawValue)
            case .badFrame(let why):
                writeError(why, box.lastError, UInt32(AGRAPH_ERROR_CAPACITY))
                return Int32(AGRAPH_DECODE_BAD_FRAME.rawValue)
            case .fatal(let why):
                writeError(why, box.lastError, UInt32(AGRAPH_ERROR_CAPACITY))
                return Int32(AGRAPH_DECODE_FATAL.rawValue)
            }
        },
        flush: { p in instance(p).decoder?.flush() },
        decoder_latency: { p in UInt32(clamping: instance(p).decoder?.decoderLatency ?? 0) },
        last_error: { p in UnsafePointer(instance(p).lastError) }))
    return e
}()

nonisolated(unsafe) let streamDecoderExtension: UnsafeMutablePointer<agraph_decoder_stream_ext_t> = {
    let e = UnsafeMutablePointer<agraph_decoder_stream_ext_t>.allocate(capacity: 1)
    e.initialize(to: agraph_decoder_stream_ext_t(
        open_stream: { p, info, errorOut, capacity in
            guard let decoder = instance(p).decoder as? any PluginStreamDecoder, let i = info?.pointee else {
                writeError("not a stream decoder", errorOut, capacity)
                return 0
            }
            let stream = PluginStreamInfo(
                codec: i.codec.map { String(cString: $0) } ?? "", sampleRate: Int(i.sample_rate), channels: Int(i.channels),
                channelMask: i.channel_mask, codecTag: i.codec_tag, bitsPerCodedSample: Int(i.bits_per_coded_sample),
                bitsPerRawSample: Int(i.bits_per_raw_sample), blockAlign: Int(i.block_align), frameSize: Int(i.frame_size),
                profile: Int(i.profile), bitRate: Int(i.bit_rate),
                extradata: i.extradata.map { UnsafeRawBufferPointer(start: $0, count: Int(i.extradata_size)) })
            do {
                try decoder.openStream(stream)
                return 1
            } catch {
                writeError("\(error)", errorOut, capacity)
                return 0
            }
        },
        trim_next_frame: { p, skip, discard in
            (instance(p).decoder as? any PluginStreamDecoder)?.trimNextFrame(skipStart: Int(skip), discardEnd: Int(discard))
        },
        concealed_frames: { p in
            UInt64(max((instance(p).decoder as? any PluginStreamDecoder)?.concealedFrames ?? 0, 0))
        }))
    return e
}()
