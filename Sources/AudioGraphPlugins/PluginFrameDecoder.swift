import AudioGraphHost
import CAGraphPlugin

/// One decoder plugin instance behind the decoder extensions
/// (`AGRAPH_EXT_DECODER`, and `AGRAPH_EXT_DECODER_STREAM` when it has it),
/// as a `FrameDecoder`: the C calls and nothing else. The decoder node and
/// the playlist both drive their instances through this.
///
/// Owns the instance: deactivates (when active) and destroys it on release.
/// Threading: `init`, `activate`, `latency`, `maxFramesPerDecode`, deinit:
/// [main-thread]; the decoding calls: [worker-thread & active], one at a
/// time; `concealedFrames`: [any-thread].
final class PluginFrameDecoder: FrameDecoder {
    let type: UnsafePointer<agraph_node_type_t>
    let instance: OpaquePointer
    /// The instance's host table; outlives the instance.
    let host: PluginHost
    let typeID: String
    let nodeID: String
    let channels: Int
    let ext: agraph_decoder_ext_t
    /// AGRAPH_EXT_DECODER_STREAM, when the instance offers it.
    let streamExt: agraph_decoder_stream_ext_t?
    private(set) var active = false

    /// Takes over `instance` (destroyed here if it lacks the decoder
    /// extension). [main-thread]
    init(type: UnsafePointer<agraph_node_type_t>, instance: OpaquePointer, host: PluginHost,
         typeID: String, nodeID: String, channels: Int) throws {
        self.type = type
        self.instance = instance
        self.host = host
        self.typeID = typeID
        self.nodeID = nodeID
        self.channels = channels
        let t = type.pointee
        guard let raw = t.get_extension?(instance, AGRAPH_EXT_DECODER) else {
            t.destroy?(instance)
            throw EngineError(nodeID: nodeID, "\(typeID): the instance does not provide \(AGRAPH_EXT_DECODER)")
        }
        let e = raw.assumingMemoryBound(to: agraph_decoder_ext_t.self).pointee
        guard e.decode != nil, e.flush != nil, e.max_frames_per_decode != nil else {
            t.destroy?(instance)
            throw EngineError(nodeID: nodeID, "\(typeID): its decoder extension lacks decode, flush or max_frames_per_decode")
        }
        ext = e
        streamExt = t.get_extension?(instance, AGRAPH_EXT_DECODER_STREAM)
            .map { $0.assumingMemoryBound(to: agraph_decoder_stream_ext_t.self).pointee }
    }

    deinit {
        if active { type.pointee.deactivate?(instance) }
        type.pointee.destroy?(instance)
    }

    /// Activates the instance (again, after deactivating it, when it was
    /// active). [main-thread]
    func activate(sampleRate: Double, maxFrames: Int) throws {
        if active { type.pointee.deactivate?(instance); active = false }
        let why = withErrorBuffer { error, capacity in
            type.pointee.activate?(instance, sampleRate, UInt32(maxFrames), error, capacity) ?? 0
        }
        if let why { throw EngineError(nodeID: nodeID, "\(typeID): activate failed: \(why)") }
        active = true
    }

    var maxFramesPerDecode: Int { max(Int(ext.max_frames_per_decode?(instance) ?? 0), 1) }

    var latency: Int { active ? Int(ext.decoder_latency?(instance) ?? 0) : 0 }

    func openStream(_ info: CompressedStreamInfo) -> String? {
        guard let open = streamExt?.open_stream else { return nil }
        return info.codec.withCString { codec in
            info.extradata.withUnsafeBufferPointer { extra in
                var c = agraph_stream_info_t(
                    codec: codec, sample_rate: UInt32(clamping: info.sampleRate), channels: UInt32(clamping: info.channels),
                    channel_mask: info.channelMask, codec_tag: info.codecTag,
                    bits_per_coded_sample: UInt32(clamping: info.bitsPerCodedSample),
                    bits_per_raw_sample: UInt32(clamping: info.bitsPerRawSample),
                    block_align: UInt32(clamping: info.blockAlign), frame_size: UInt32(clamping: info.frameSize),
                    profile: Int32(clamping: info.profile), bit_rate: Int64(info.bitRate),
                    extradata: extra.isEmpty ? nil : extra.baseAddress, extradata_size: UInt32(clamping: extra.count),
                    reserved0: 0)
                return withErrorBuffer { error, capacity in open(instance, &c, error, capacity) }
            }
        }
    }

    func trimNextFrame(skipStart: Int, discardEnd: Int) {
        streamExt?.trim_next_frame?(instance, UInt32(clamping: skipStart), UInt32(clamping: discardEnd))
    }

    func decode(_ bytes: UnsafeBufferPointer<UInt8>?, timestamp: Int,
                into pcm: UnsafePointer<UnsafeMutablePointer<Float>?>, capacity: Int) -> FrameDecodeStatus {
        var written: UInt32 = 0
        let status = ext.decode?(instance, bytes?.baseAddress, UInt32(bytes?.count ?? 0), Int64(timestamp),
                                 pcm, UInt32(capacity), &written) ?? Int32(AGRAPH_DECODE_FATAL.rawValue)
        switch status {
        case Int32(AGRAPH_DECODE_OK.rawValue): return .ok(frames: min(Int(written), capacity))
        case Int32(AGRAPH_DECODE_BAD_FRAME.rawValue): return .badFrame
        default: return .fatal
        }
    }

    func flush() { ext.flush?(instance) }

    var lastError: String? {
        guard let text = ext.last_error?(instance) else { return nil }
        let s = truncatedString(text)
        return s.isEmpty ? nil : s
    }

    var concealedFrames: Int {
        active ? Int(clamping: streamExt?.concealed_frames?(instance) ?? 0) : 0
    }

    /// Runs a C call that may write a reason into an error buffer; returns
    /// that reason when it returned 0, else nil.
    private func withErrorBuffer(_ body: (UnsafeMutablePointer<CChar>, UInt32) -> Int32) -> String? {
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        guard body(error, UInt32(AGRAPH_ERROR_CAPACITY)) == 0 else { return nil }
        error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
        let why = String(cString: error)
        return why.isEmpty ? "no reason given" : why
    }
}
