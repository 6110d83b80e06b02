import AudioGraphHost
import CAGraphPlugin
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A decoder plugin instance (`AGRAPH_EXT_DECODER`) in an engine.
///
/// The audio thread only takes PCM from a ring (`FeedRing`); everything else
/// runs on the worker thread in a `DecoderJob`: a `DecodedStream` reads
/// compressed frames from the upstream source's cursor and calls the
/// plugin's `decode` (through `PluginFrameDecoder`); the job adds live
/// parameter changes, seeking (flush, restart at the independent frame at
/// or before the target, discard up to the exact sample) and the end of
/// the stream.
final class PluginDecoderNode: RenderNode, SeekableNode, UnderrunCounting, DamageCounting, HostedPluginInstance,
                               TransportFollowing {
    let decoder: PluginFrameDecoder
    let routeExt: agraph_output_route_ext_t?
    /// The part of the stream that plays (the source's start, end, loop).
    let window: PlaybackWindow
    /// The source's `transport` parameter: the decoder follows for it.
    let transportMode: TransportMode
    let typeID: String
    let nodeID: String
    let channels: Int
    let cursor: any CompressedFrameCursor
    /// The file decoded, for messages (the source's `mediaPath`).
    let mediaPath: String?
    /// Damaged frames end an offline render with an error (`onError:
    /// "fail"`); else they are concealed and reported as a warning.
    let failsOnDamage: Bool
    let liveMask: [Bool]
    var feed: FeedRing?
    var job: DecoderJob?
    var output: AudioBus?

    var instance: OpaquePointer { decoder.instance }
    var host: PluginHost { decoder.host }
    var type: UnsafePointer<agraph_node_type_t> { decoder.type }

    /// [main-thread]
    init(type: UnsafePointer<agraph_node_type_t>, instance: OpaquePointer, typeID: String, nodeID: String,
         source: any CompressedFrameSource, channels: Int, host: PluginHost, failsOnDamage: Bool = false) throws {
        self.failsOnDamage = failsOnDamage
        mediaPath = source.mediaPath
        decoder = try PluginFrameDecoder(type: type, instance: instance, host: host, typeID: typeID, nodeID: nodeID,
                                         channels: channels)
        routeExt = routeExtension(type, instance)
        self.typeID = typeID
        self.nodeID = nodeID
        self.channels = channels
        let t = type.pointee
        liveMask = (0..<Int(t.param_count)).map { t.params[$0].flags & UInt32(AGRAPH_PARAM_LIVE) != 0 }
        window = source.playback
        transportMode = source.transportMode
        do {
            cursor = try source.makeCursor()
        } catch {
            throw EngineError(nodeID: nodeID, "cannot read the compressed input: \(error)")
        }
    }

    /// Activates the instance and builds the ring and the job. [main-thread & !active]
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        self.output = output
        try decoder.activate(sampleRate: context.sampleRate, maxFrames: context.maxFrames)
        let perDecode = decoder.maxFramesPerDecode
        let ring = FeedRing(channels: channels,
                            capacityFrames: max(Int(context.sampleRate / 2), 4 * perDecode, 2 * context.maxFrames),
                            maxFrames: context.maxFrames)
        feed = ring
        let stream = DecodedStream(cursor: cursor, decoder: decoder, window: window, framesPerDecode: perDecode,
                                   sampleRate: context.sampleRate)
        job = DecoderJob(node: self, stream: stream, feed: ring)
    }

    func render(frames: Int) {
        if let job, job.direct != nil {
            job.renderDirect(frames: frames)
            return
        }
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

    /// What the decoder itself delays the signal by (after its own
    /// trimming). The ring ahead of the audio thread is prefetch, not
    /// delay: it adds nothing, as for a `file` source. [main-thread]
    var latency: Int { decoder.latency }

    func seek(toFrame frame: Int) -> Bool {
        guard let job, frame >= 0 else { return false }
        job.requestSeek(toSample: frame)
        return true
    }

    var lengthFrames: Int? { nil }

    /// Transport frame F plays the stream's sample start + F (wrapped into
    /// the window when it loops and its end is known); past the end, the
    /// stream has ended. [control-thread]
    func locate(toTransportFrame frame: Int) {
        feed?.keepsTime.store(true, ordering: .relaxed)
        job?.requestSeek(toSample: window.sample(forTransportFrame: frame))
    }

    /// [audio-thread]
    func renderHeld(frames: Int) { renderHeld(feed: feed, output: output, frames: frames) }

    func isLocated(readyFor frames: Int) -> Bool {
        guard let job else { return true }
        return job.seeks.isSettled && job.isReady(forFrames: frames)
    }

    var underrunCount: Int { (feed?.underruns.load(ordering: .relaxed) ?? 0) + (job?.direct?.shortBlocks ?? 0) }

    /// Frames the decoder refused as corrupt (played as silence). [any-thread]
    var badFrames: Int { job?.stream.badFrames.count ?? 0 }

    var damagedFrames: Int { badFrames + decoder.concealedFrames }
}

/// The worker-thread side of a decoder node. [worker-thread; except `requestSeek`/`setTargetFill`
/// (any thread) and `parameters` (the audio thread pushes)]
///
/// Offline (`runOnRenderThread`), the same work runs inside the node's
/// `render`, on the thread that renders: the stream decodes the frames
/// the block needs straight into the output bus (`DirectFeed`), no ring
/// and no worker thread. That thread is marked worker while it drives the
/// decoder (the decoder extension's calls are [worker-thread]).
final class DecoderJob: BackgroundJob, RenderThreadJob, FillTargeting, DecodedPCMOutput, @unchecked Sendable {
    unowned let node: PluginDecoderNode
    let stream: DecodedStream
    let feed: FeedRing
    /// Live parameter changes from the audio thread.
    let parameters = SPSCRing<ParameterChange>(minimumCapacity: 256)
    private let target = Atomic<Int>(Int.max)
    /// Seeks asked for, in samples at the graph's rate.
    let seeks = SeekRequests()
    /// One decode's worth of interleaved PCM, on its way to the ring.
    private let interleaved: UnsafeMutablePointer<Float>
    /// The end of the stream went into the ring. [worker-thread]
    private var ended = false
    /// Offline: where the decoded frames go instead of the ring, on the
    /// thread that renders (nil: the ring, from a worker thread).
    private(set) var direct: DirectFeed?
    /// The last fatal error, if decoding stopped. [any-thread; the worker writes; read after stop]
    private(set) var failure: String?

    init(node: PluginDecoderNode, stream: DecodedStream, feed: FeedRing) {
        self.node = node
        self.stream = stream
        self.feed = feed
        interleaved = .allocate(capacity: max(node.channels, 1) * stream.framesPerDecode)
    }

    deinit { interleaved.deallocate() }

    func setTargetFill(frames: Int) { target.store(max(frames, 1), ordering: .relaxed) }
    var targetFill: Int { target.load(ordering: .relaxed) }

    /// [control-thread]
    func requestSeek(toSample sample: Int) { seeks.request(sample) }

    /// Decodes on the thread that renders from now on (an offline render).
    /// [main-thread & !rendering]
    func runOnRenderThread() -> Bool {
        guard direct == nil, let output = node.output else { return direct != nil }
        direct = DirectFeed(channels: node.channels, bus: output, framesPerDecode: stream.framesPerDecode)
        return true
    }

    /// Renders a block offline: decodes until the block is full or the
    /// stream has ended, as the worker would, marked worker meanwhile.
    /// [audio-thread; offline]
    func renderDirect(frames: Int) {
        guard let direct else { return }
        direct.begin(frames: frames)
        if direct.needsFrames {
            let role = ThreadRole.marked
            ThreadRole.mark(.worker)
            while direct.needsFrames && service() {}
            ThreadRole.mark(role)
        }
        direct.end()
    }

    func service() -> Bool {
        var worked = applyParameters()
        if let why = stream.openIfNeeded() {
            failure = "\(node.typeID) '\(node.nodeID)': \(why)"
            endStream()
            return true
        }
        if let request = seeks.take() {
            worked = true
            if let direct { direct.flush() } else { feed.flush() }
            ended = false
            stream.restart(at: request.frame)
            seeks.done(request.sequence)
        }
        if stream.isDone {
            if !ended {
                if let why = stream.failure { failure = "\(node.typeID) '\(node.nodeID)': \(why)" }
                endStream()
                worked = true
            }
            return worked
        }
        let goal = target.load(ordering: .relaxed)
        if direct == nil && goal < Int.max && feed.bufferedFrames >= goal { return worked }
        return stream.step(into: self) || worked
    }

    private func endStream() {
        ended = true
        if let direct { direct.markEnd() } else { feed.markEnd() }
    }

    // MARK: DecodedPCMOutput

    var writableFrames: Int { direct?.writableFrames ?? feed.writableFrames }

    /// Interleaves decoded frames into the ring (offline: hands them to
    /// the block being rendered).
    func write(_ channels: UnsafePointer<UnsafeMutablePointer<Float>?>, count: Int, offset: Int, frames: Int) {
        if let direct {
            direct.write(channels, count: count, offset: offset, frames: frames)
            return
        }
        let n = node.channels
        for c in 0..<n {
            if c < count, let src = channels[c] {
                Kernels.interleave(src + offset, to: interleaved, stride: n, channel: c, count: frames)
            }
        }
        feed.write(interleaved, frames: frames)
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

    func isReady(forFrames frames: Int) -> Bool {
        direct != nil || feed.isEnded || feed.bufferedFrames >= min(frames, target.load(ordering: .relaxed))
    }

    /// Damage found with `onError: "fail"`: an offline render stops at
    /// the next block (live playback goes on concealing). [any-thread]
    var hasFailed: Bool { node.failsOnDamage && node.damagedFrames > 0 }

    /// Reports a fatal decoder error in the decoder's words, and damage
    /// found with `onError: "fail"`. [control-thread & !rendering]
    func finish() throws {
        _ = try finish(completed: true)
    }

    /// Names the damage found, if any (`agraph render` prints it): an
    /// error with `onError: "fail"`, else a warning. [control-thread & !rendering]
    func finish(completed: Bool) throws -> [String] {
        if let failure { throw EngineError(nodeID: node.nodeID, failure) }
        let bad = node.damagedFrames
        guard bad > 0 else { return [] }
        let what = "damaged input \(node.mediaPath ?? "(the stream of '\(node.nodeID)')"): \(bad) damaged frame\(bad == 1 ? "" : "s") concealed"
            + (stream.lastBadFrame.map { " (last: \($0))" } ?? "")
        if node.failsOnDamage {
            throw EngineError(nodeID: node.nodeID, what + "; the render stopped there (onError: fail; --allow-damaged or onError: skip renders what decodes)")
        }
        return ["warning: '\(node.nodeID)': \(what) (onError: skip)"]
    }
}
