import AudioGraph
import CAGraphPlugin
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A decoder plugin instance (`AGRAPH_EXT_DECODER`) in an engine.
///
/// The audio thread only takes PCM from a ring (`FeedRing`); everything else
/// runs on the worker thread in a `DecoderJob`: reading compressed frames
/// from the upstream source's cursor, calling the plugin's `decode`, live
/// parameter changes, seeking (flush, restart at the independent frame at
/// or before the target, discard up to the exact sample) and draining at
/// the end of the stream.
final class PluginDecoderNode: RenderNode, SeekableNode, UnderrunCounting, DamageCounting, HostedPluginInstance {
    let type: UnsafePointer<agraph_node_type_t>
    let instance: OpaquePointer
    /// The node's host table (ABI 1.2); outlives the instance.
    let host: PluginHost
    let routeExt: agraph_output_route_ext_t?
    let ext: agraph_decoder_ext_t
    /// AGRAPH_EXT_DECODER_STREAM (1.3), when the plugin offers it.
    let streamExt: agraph_decoder_stream_ext_t?
    /// The part of the stream that plays (the source's start, end, loop).
    let window: PlaybackWindow
    let typeID: String
    let nodeID: String
    let channels: Int
    let cursor: any CompressedFrameCursor
    let liveMask: [Bool]
    var active = false
    var feed: FeedRing?
    var job: DecoderJob?
    var output: AudioBus?

    /// [main-thread]
    init(type: UnsafePointer<agraph_node_type_t>, instance: OpaquePointer, typeID: String, nodeID: String,
         source: any CompressedFrameSource, channels: Int, host: PluginHost) throws {
        self.type = type
        self.instance = instance
        self.host = host
        routeExt = routeExtension(type, instance)
        self.typeID = typeID
        self.nodeID = nodeID
        self.channels = channels
        let t = type.pointee
        liveMask = (0..<Int(t.param_count)).map { t.params[$0].flags & UInt32(AGRAPH_PARAM_LIVE) != 0 }
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
        window = source.playback
        do {
            cursor = try source.makeCursor()
        } catch {
            t.destroy?(instance)
            throw EngineError(nodeID: nodeID, "cannot read the compressed input: \(error)")
        }
    }

    deinit {
        if active { type.pointee.deactivate?(instance) }
        type.pointee.destroy?(instance)
    }

    /// Activates the instance and builds the ring and the job. [main-thread & !active]
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        self.output = output
        sampleRateForGaps = context.sampleRate
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        if active { type.pointee.deactivate?(instance); active = false }
        guard type.pointee.activate?(instance, context.sampleRate, UInt32(context.maxFrames), error,
                                     UInt32(AGRAPH_ERROR_CAPACITY)) != 0 else {
            error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
            let why = String(cString: error)
            throw EngineError(nodeID: nodeID, "\(typeID): activate failed: \(why.isEmpty ? "no reason given" : why)")
        }
        active = true
        let perDecode = max(Int(ext.max_frames_per_decode?(instance) ?? 0), 1)
        let ring = FeedRing(channels: channels,
                            capacityFrames: max(Int(context.sampleRate / 2), 4 * perDecode, 2 * context.maxFrames),
                            maxFrames: context.maxFrames)
        feed = ring
        job = DecoderJob(node: self, feed: ring, framesPerDecode: perDecode)
    }

    func render(frames: Int) {
        guard let feed, let output else { return }
        feed.render(into: output, frames: frames)
    }

    /// Live parameters go to the worker thread, which applies them between
    /// two frames (the decoder extension's threading rule). [audio-thread]
    func apply(_ change: ParameterChange) {
        let i = Int(change.parameter)
        guard i >= 0, i < liveMask.count, liveMask[i] else { return }
        _ = job?.parameters.push(change)
    }

    var backgroundJob: (any BackgroundJob)? { job }

    /// The graph's rate, for judging timestamp gaps. [worker-thread]
    var sampleRateForGaps: Double = 48_000

    /// What the decoder itself delays the signal by (after its own
    /// trimming). The ring ahead of the audio thread is prefetch, not
    /// delay: it adds nothing, as for a `file` source. [main-thread]
    var latency: Int {
        active ? Int(ext.decoder_latency?(instance) ?? 0) : 0
    }

    func seek(toFrame frame: Int) -> Bool {
        guard let job, frame >= 0 else { return false }
        job.requestSeek(toSample: frame)
        return true
    }

    var lengthFrames: Int? { nil }

    var underrunCount: Int { feed?.underruns.load(ordering: .relaxed) ?? 0 }

    /// Frames the decoder refused as corrupt (played as silence). [any thread]
    var badFrames: Int { job?.badFrames.load(ordering: .relaxed) ?? 0 }

    var damagedFrames: Int {
        badFrames + (active ? Int(clamping: streamExt?.concealed_frames?(instance) ?? 0) : 0)
    }
}

/// The worker-thread side of a decoder node. [worker-thread, except
/// `requestSeek`/`setTargetFill` (any thread) and `parameters` (the audio
/// thread pushes)]
final class DecoderJob: BackgroundJob, FillTargeting, @unchecked Sendable {
    unowned let node: PluginDecoderNode
    let feed: FeedRing
    let framesPerDecode: Int
    /// Live parameter changes from the audio thread.
    let parameters = SPSCRing<ParameterChange>(minimumCapacity: 256)
    let badFrames = Atomic<Int>(0)
    /// The decoder's words for the last bad frame (its `last_error`).
    /// [worker-thread writes; read after stop]
    private(set) var lastBadFrame: String?
    private let target = Atomic<Int>(Int.max)
    private let pendingSeek = Atomic<Int>(-1)
    /// Planar PCM the plugin writes into, and its interleaved copy.
    private let planar: UnsafeMutablePointer<Float>
    private let channelPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    private let interleaved: UnsafeMutablePointer<Float>
    private var discard = 0
    private var done = false
    /// The graph-rate position of the next sample written to the ring
    /// (for the playback window's end and loop).
    private var position = 0
    /// The stream's parameters went to the decoder (`open_stream`).
    private var streamOpened = false
    /// The last fatal error, if decoding stopped. [worker-thread writes; read after stop]
    private(set) var failure: String?

    init(node: PluginDecoderNode, feed: FeedRing, framesPerDecode: Int) {
        self.node = node
        self.feed = feed
        self.framesPerDecode = framesPerDecode
        let channels = node.channels
        planar = .allocate(capacity: channels * framesPerDecode)
        planar.initialize(repeating: 0, count: channels * framesPerDecode)
        channelPointers = .allocate(capacity: max(channels, 1))
        for c in 0..<channels { (channelPointers + c).initialize(to: planar + c * framesPerDecode) }
        interleaved = .allocate(capacity: channels * framesPerDecode)
        let w = node.window
        if w.start > 0 { pendingSeek.store(w.start, ordering: .relaxed) }
    }

    deinit {
        planar.deallocate()
        channelPointers.deallocate()
        interleaved.deallocate()
    }

    func setTargetFill(frames: Int) { target.store(max(frames, 1), ordering: .relaxed) }
    var targetFill: Int { target.load(ordering: .relaxed) }

    /// [control-thread]
    func requestSeek(toSample sample: Int) { pendingSeek.store(sample, ordering: .releasing) }

    func service() -> Bool {
        var worked = applyParameters()
        if !streamOpened {
            streamOpened = true
            if let why = openStream() {
                failure = "\(node.typeID) '\(node.nodeID)': \(why)"
                done = true
                feed.markEnd()
                return true
            }
        }
        let seekTo = pendingSeek.exchange(-1, ordering: .acquiring)
        if seekTo >= 0 {
            worked = true
            feed.flush()
            restart(at: seekTo)
        }
        guard !done else { return worked }
        let goal = target.load(ordering: .relaxed)
        if goal < Int.max && feed.bufferedFrames >= goal { return worked }
        guard feed.writableFrames >= framesPerDecode else { return worked }
        var written: UInt32 = 0
        if let frame = node.cursor.next() {
            concealGap(before: frame)
            if frame.skipStart > 0 || frame.discardEnd > 0, let trim = node.streamExt?.trim_next_frame {
                trim(node.instance, UInt32(clamping: frame.skipStart), UInt32(clamping: frame.discardEnd))
            }
            let status = frame.bytes.withUnsafeBufferPointer { bytes in
                node.ext.decode?(node.instance, bytes.baseAddress, UInt32(bytes.count), Int64(frame.timestamp),
                                 channelPointers, UInt32(framesPerDecode), &written) ?? Int32(AGRAPH_DECODE_FATAL.rawValue)
            }
            switch status {
            case Int32(AGRAPH_DECODE_OK.rawValue):
                emit(Int(written))
            case Int32(AGRAPH_DECODE_BAD_FRAME.rawValue):
                badFrames.add(1, ordering: .relaxed)
                lastBadFrame = decoderError()
                emitSilence(min(frame.samplesPerFrame, framesPerDecode))
            default:
                let why = decoderError().map { ": \($0)" } ?? ""
                failure = "\(node.typeID) '\(node.nodeID)': the decoder stopped at frame \(frame.index)\(why)"
                done = true
                feed.markEnd()
            }
        } else {
            // End of stream: take what the decoder still holds back.
            var rounds = 0
            repeat {
                written = 0
                let status = node.ext.decode?(node.instance, nil, 0, -1, channelPointers, UInt32(framesPerDecode), &written)
                if status != Int32(AGRAPH_DECODE_OK.rawValue) { break }
                emit(Int(written))
                rounds += 1
            } while written > 0 && rounds < 64 && feed.writableFrames >= framesPerDecode && !done
            endOfWindow()
        }
        return true
    }

    /// Where the next frame should start if none is missing (graph
    /// samples; nil after a restart or when timestamps are unknown).
    private var nextTimestamp: Int?

    /// Frames missing from the stream (a damaged container lost packets:
    /// the next frame starts later than the last one ended) are counted as
    /// damaged and their time played as silence, so that what follows
    /// stays in place.
    private func concealGap(before frame: CompressedFrame) {
        defer {
            nextTimestamp = frame.timestamp == Int.min ? nil : frame.timestamp + frame.samplesPerFrame
        }
        guard let expected = nextTimestamp, frame.timestamp != Int.min, frame.samplesPerFrame > 0 else { return }
        let gap = frame.timestamp - expected
        guard gap > frame.samplesPerFrame / 2 else { return }
        // A jump of more than a minute is a broken timestamp, not a gap.
        guard gap < Int(node.sampleRateForGaps * 60) else { return }
        badFrames.add(max(1, (gap + frame.samplesPerFrame / 2) / frame.samplesPerFrame), ordering: .relaxed)
        lastBadFrame = "\(gap) samples of the stream missing before frame \(frame.index)"
        node.ext.flush?(node.instance)
        var left = gap
        while left > 0 && feed.writableFrames >= framesPerDecode {
            let n = min(left, framesPerDecode)
            emitSilence(n)
            left -= n
        }
    }

    /// Flushes the decoder and goes on from graph sample `sample`: the
    /// cursor starts at a frame at or before it and the PCM before it is
    /// discarded. Past the end: the stream ends (or loops).
    private func restart(at sample: Int) {
        node.ext.flush?(node.instance)
        nextTimestamp = nil
        if let start = node.cursor.seek(toSample: sample) {
            discard = max(sample - start, 0)
            position = sample
            done = false
        } else {
            discard = 0
            done = true
            feed.markEnd()
        }
    }

    /// The stream or the window ended: loop to the window's start, or end.
    private func endOfWindow() {
        let w = node.window
        if w.loops, position > w.start {
            restart(at: w.start)
        } else {
            done = true
            feed.markEnd()
        }
    }

    /// Gives the decoder the stream's parameters (AGRAPH_EXT_DECODER_STREAM),
    /// when the source has them; returns why it refused them.
    private func openStream() -> String? {
        guard let info = node.cursor.streamInfo, let open = node.streamExt?.open_stream else { return nil }
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        let ok = info.codec.withCString { codec in
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
                return open(node.instance, &c, error, UInt32(AGRAPH_ERROR_CAPACITY))
            }
        }
        if ok != 0 { return nil }
        error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
        let why = String(cString: error)
        return "the decoder refused the stream (\(info.codec), \(info.channels) ch, \(info.sampleRate) Hz): \(why.isEmpty ? "no reason given" : why)"
    }

    /// The plugin's words for its last failure, if it gives any.
    private func decoderError() -> String? {
        guard let text = node.ext.last_error?(node.instance) else { return nil }
        let s = truncatedString(text)
        return s.isEmpty ? nil : s
    }

    /// Applies live parameter changes queued by the audio thread.
    private func applyParameters() -> Bool {
        var change = ParameterChange(node: -1, parameter: -1, value: 0)
        var any = false
        while parameters.pop(into: &change) {
            node.type.pointee.set_parameter?(node.instance, UInt32(change.parameter), change.value)
            any = true
        }
        return any
    }

    /// Interleaves `n` decoded frames (after the seek discard) into the ring.
    private func emit(_ n: Int) {
        let n = min(n, framesPerDecode)
        let skip = min(discard, n)
        discard -= skip
        var count = n - skip
        if let end = node.window.end { count = min(count, max(end - position, 0)) }
        guard count > 0 else {
            if let end = node.window.end, position >= end { endOfWindow() }
            return
        }
        let channels = node.channels
        for c in 0..<channels {
            Kernels.interleave(planar + c * framesPerDecode + skip, to: interleaved, stride: channels, channel: c, count: count)
        }
        feed.write(interleaved, frames: count)
        position += count
        if let end = node.window.end, position >= end { endOfWindow() }
    }

    private func emitSilence(_ n: Int) {
        for c in 0..<node.channels { Kernels.fill(planar + c * framesPerDecode, count: n, value: 0) }
        emit(n)
    }

    func isReady(forFrames frames: Int) -> Bool {
        done || feed.bufferedFrames >= min(frames, target.load(ordering: .relaxed))
    }

    /// Reports a fatal decoder error in the decoder's words. (Bad frames
    /// are corrupt media: counted and played as silence, not an error.)
    func finish() throws {
        if let failure { throw EngineError(nodeID: node.nodeID, failure) }
    }

    /// Names the damage found, if any (`agraph render` prints it).
    func finish(completed: Bool) throws -> [String] {
        try finish()
        let bad = node.damagedFrames
        guard bad > 0 else { return [] }
        return ["'\(node.nodeID)': \(bad) damaged frame\(bad == 1 ? "" : "s") concealed\(lastBadFrame.map { " (last: \($0))" } ?? "")"]
    }
}
