/// What a node learns when the engine is built.
public struct PrepareContext: Sendable {
    public var sampleRate: Double
    /// The largest block `render(frames:)` will ever be asked for.
    public var maxFrames: Int
    public init(sampleRate: Double, maxFrames: Int) {
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
    }
}

/// The part of a node that runs on the audio thread.
///
/// Lifecycle: created on the main thread, `prepare` once (the only place a
/// node allocates), then `render`/`apply` on the audio thread any number of
/// times, then released on the main thread after the engine stops.
///
/// Threading, the CLAP way:
/// - `prepare`: [main-thread & !active]. A node with one output (or none)
///   implements `prepare(inputs:output:context:)`; a node with several
///   output ports implements `prepare(inputs:outputs:context:)`, which the
///   engine calls (its default forwards to the first).
/// - `render`, `apply`: [audio-thread & active]; must not allocate, lock,
///   log, print, do I/O or wait. Use `Kernels` for the loops.
/// - `latency`, `backgroundJob`: [main-thread]
///
/// Keep audio-thread state in plain stored properties or buffers allocated
/// in `init`/`prepare`. Generic code reached for the first time on the audio
/// thread (an `Array` of a struct used through a protocol, in a debug build)
/// makes the Swift runtime instantiate metadata, which locks and allocates;
/// the malloc-counting test catches it.
public protocol RenderNode: AnyObject {
    /// Binds the buses this node reads and writes. `inputs` follows the
    /// node's input ports in order; `output` is nil for sinks.
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws
    /// Binds the buses of a node with any number of output ports:
    /// `outputs` follows the node's output ports in order (empty for
    /// sinks). The engine calls this one; the default calls
    /// `prepare(inputs:output:context:)` with the first output.
    func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws    /// Renders `frames` (≤ maxFrames) frames: reads the input buses, writes
    /// the output bus and its `BusState`; zeroes output past `validFrames`.
    func render(frames: Int)
    /// Applies a parameter change at the start of a block.
    func apply(_ change: ParameterChange)
    /// Frames this node delays its signal by.
    var latency: Int { get }
    /// Work this node needs off the audio thread (file reading, writing), if any.
    var backgroundJob: (any BackgroundJob)? { get }
    /// The memory `render` reads in every block besides the node object
    /// itself and its buses: its state and tables, in the order it reads
    /// them. A live engine prefetches it at the start of each cycle (see
    /// `Engine.prefetchHotMemory`), so that these cache misses overlap
    /// instead of following one another. A hint only: leaving it out
    /// changes no result. [main-thread; after `prepare`; the regions must stay allocated while the
    /// engine lives]
    var hotMemory: [UnsafeRawBufferPointer] { get }
    /// Whether the engine may give this node's first output the bus of its
    /// one input (when nothing reads that input after it): `render` reads
    /// each input sample before it writes the output sample of the same
    /// channel and frame, writes no other, and reads nothing of its input
    /// after writing its output (an elementwise gain). The output's state
    /// is written over the input's. Default false. [main-thread; before `prepare`]
    var processesInPlace: Bool { get }
}

extension RenderNode {
    public func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws {
        if outputs.count > 1 {
            throw EngineError("this node has \(outputs.count) output buses but prepares only one (implement prepare(inputs:outputs:context:))")
        }
        try prepare(inputs: inputs, output: outputs.first, context: context)
    }
    /// For nodes that implement only `prepare(inputs:outputs:context:)`.
    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        try prepare(inputs: inputs, outputs: output.map { [$0] } ?? [], context: context)
    }
    public func apply(_ change: ParameterChange) {}
    public var latency: Int { 0 }
    public var backgroundJob: (any BackgroundJob)? { nil }
    public var hotMemory: [UnsafeRawBufferPointer] { [] }
    public var processesInPlace: Bool { false }
}

extension UnsafeRawBufferPointer {
    /// The memory of `count` values at `pointer`, for `RenderNode.hotMemory`. [any-thread]
    @inlinable
    public init<T>(hot pointer: UnsafePointer<T>, count: Int = 1) {
        self.init(start: UnsafeRawPointer(pointer), count: MemoryLayout<T>.stride * count)
    }

    @inlinable
    public init<T>(hot pointer: UnsafeMutablePointer<T>, count: Int = 1) {
        self.init(hot: UnsafePointer(pointer), count: count)
    }
}

/// Work a node needs done off the audio thread, on the engine's worker thread.
///
/// A job sits on one side of an `SPSCRing`: a file source produces into it,
/// a file sink consumes from it; the node's `render` is the other side.
public protocol BackgroundJob: AnyObject, Sendable {
    /// Does one bounded step of work (read or write one chunk). Returns true
    /// when it did something, false when it had nothing to do.
    /// [worker-thread]
    func service() -> Bool
    /// Whether the audio side can render `frames` more frames without an
    /// underrun or an overflow (or the stream has ended). Offline rendering
    /// waits for this before each block; live rendering never waits.
    /// [control-thread; an estimate]
    func isReady(forFrames frames: Int) -> Bool
    /// Brings the job to rest after rendering stopped: a sink writes what
    /// remains and closes its file. Runs after the worker thread has exited.
    /// [control-thread & !rendering]
    func finish() throws

    /// `finish()`, told whether rendering ran to its end (`completed`) or
    /// was interrupted or failed; returns notices for the user that are not
    /// errors (an output kept under a partial name, a skipped decoding
    /// error). The default calls `finish()`. [control-thread & !rendering]
    func finish(completed: Bool) throws -> [String]

    /// Whether the job hit an error that makes going on pointless (an input
    /// that cannot be decoded, with `onError: "fail"`): an offline render
    /// stops at the next block. [any-thread]
    var hasFailed: Bool { get }
}

extension BackgroundJob {
    public func finish(completed: Bool) throws -> [String] {
        try finish()
        return []
    }

    public var hasFailed: Bool { false }
}

extension BusState {
    /// The state of a node's output when it simply follows its inputs: the
    /// longest valid span, ended when every input has ended.
    @inlinable
    public static func merging(_ inputs: [AudioBus]) -> BusState {
        var s = BusState(validFrames: 0, ended: true)
        var i = 0
        while i < inputs.count {
            let t = inputs[i].state
            if t.validFrames > s.validFrames { s.validFrames = t.validFrames }
            if !t.ended { s.ended = false }
            i += 1
        }
        return s
    }
}

/// A node that can jump to another position in its stream (a file, a decoder).
public protocol SeekableNode: AnyObject {
    /// Asks the node to continue from `frame` (at the graph's rate): buffered
    /// audio not yet played is dropped, the reader restarts there, and the
    /// output resumes within a period or two. Returns false when the frame is
    /// out of range. [control-thread]
    func seek(toFrame frame: Int) -> Bool
    /// Length of the stream in frames, when known. [any-thread]
    var lengthFrames: Int? { get }
}

/// A background job that can hold a small, adjustable fill instead of a
/// full ring: live rendering keeps latency and seek response low this way.
public protocol FillTargeting: AnyObject {
    /// Frames the job keeps buffered ahead of the audio thread. [any-thread]
    func setTargetFill(frames: Int)
    var targetFill: Int { get }
}

/// A job that has work only now and then (an LV2 plugin's scheduled work,
/// its log messages; a file reader, offline, once its ring has room for a
/// chunk): the engine wakes its thread after a block only when
/// `hasWork`, not after every block (each wake-up of a worker thread costs
/// the audio thread a futex call; the thread's idle timer still runs it).
public protocol OnDemandJob: BackgroundJob {
    /// Whether `service` has something to do. [audio-thread; realtime-safe: atomics only]
    var hasWork: Bool { get }
}

/// A node that decodes media: it counts the frames it found damaged and
/// concealed (played as silence or by the decoder's own concealment).
/// [any-thread]
public protocol DamageCounting: AnyObject {
    var damagedFrames: Int { get }
}

/// A source whose stream is at another rate than the graph's and is
/// converted on its way in (a `media` file at 44.1 kHz in a 48 kHz graph):
/// the status line says so. [any-thread]
public protocol RateConverting: AnyObject {
    /// The source's own rate, in Hz, when it differs from the graph's (nil: no conversion).
    var convertedFromRate: Double? { get }
}

/// A node that hands its input to a ring a background job drains (a
/// `file-out`): frames that find the ring full, because the job fell
/// behind, are dropped, and counted.
public protocol DropCounting: AnyObject {
    /// Frames dropped so far. [any-thread]
    var droppedFrames: Int { get }
}

/// A node fed from a ring that can run dry: it counts underruns.
public protocol UnderrunCounting: AnyObject {
    /// Blocks in which the node found too little audio. [any-thread]
    var underrunCount: Int { get }
}

/// One compressed frame as read from a stream.
public struct CompressedFrame: Sendable {
    /// The whole frame as a decoder is fed it (for AC-4 sync frames: sync
    /// word through CRC).
    public var bytes: ArraySlice<UInt8>
    /// Frame number among the stream's valid frames.
    public var index: Int
    /// Position of the frame's first sample, in samples at `sampleRate`.
    public var timestamp: Int
    public var samplesPerFrame: Int
    public var sampleRate: Double
    /// Decodable on its own: a place to start after a seek.
    public var isIndependent: Bool
    /// Samples of this frame's decoded output that are not part of the
    /// presentation, at the stream's coded rate: at its start (encoder
    /// delay: AAC priming, Opus pre-skip) and at its end (padding of the
    /// last frame). From the container; 0 when none.
    public var skipStart: Int
    public var discardEnd: Int

    public init(bytes: ArraySlice<UInt8>, index: Int, timestamp: Int, samplesPerFrame: Int,
                sampleRate: Double, isIndependent: Bool, skipStart: Int = 0, discardEnd: Int = 0) {
        self.bytes = bytes
        self.index = index
        self.timestamp = timestamp
        self.samplesPerFrame = samplesPerFrame
        self.sampleRate = sampleRate
        self.isIndependent = isIndependent
        self.skipStart = skipStart
        self.discardEnd = discardEnd
    }
}

/// What a demuxer knows about a compressed stream beside its frames: the
/// codec parameters a general decoder (libavcodec) is opened with.
public struct CompressedStreamInfo: Sendable, Equatable {
    /// FFmpeg's codec name ("aac", "eac3", "opus", "pcm_s24le"…).
    public var codec: String
    /// The coded rate (the graph's may differ).
    public var sampleRate: Int
    public var channels: Int
    /// WAVE channel mask of the coded channels (0: no positions known).
    public var channelMask: UInt64
    public var codecTag: UInt32
    public var bitsPerCodedSample: Int
    public var bitsPerRawSample: Int
    public var blockAlign: Int
    public var frameSize: Int
    /// -1 when unknown.
    public var profile: Int
    public var bitRate: Int
    /// Codec-specific configuration (AudioSpecificConfig, OpusHead, …).
    public var extradata: [UInt8]

    public init(codec: String, sampleRate: Int, channels: Int, channelMask: UInt64 = 0, codecTag: UInt32 = 0,
                bitsPerCodedSample: Int = 0, bitsPerRawSample: Int = 0, blockAlign: Int = 0, frameSize: Int = 0,
                profile: Int = -1, bitRate: Int = 0, extradata: [UInt8] = []) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.channelMask = channelMask
        self.codecTag = codecTag
        self.bitsPerCodedSample = bitsPerCodedSample
        self.bitsPerRawSample = bitsPerRawSample
        self.blockAlign = blockAlign
        self.frameSize = frameSize
        self.profile = profile
        self.bitRate = bitRate
        self.extradata = extradata
    }
}

/// Which part of a compressed stream plays, in samples at the graph's rate.
public struct PlaybackWindow: Sendable, Equatable {
    public var start: Int
    /// nil: to the end of the stream.
    public var end: Int?
    /// Start again at `start` after `end` (or the stream's end).
    public var loops: Bool

    public init(start: Int = 0, end: Int? = nil, loops: Bool = false) {
        self.start = start
        self.end = end
        self.loops = loops
    }

    public static let whole = PlaybackWindow()
}

/// A reading position in a compressed stream, owned by one decoder.
/// [worker-thread; created on the main thread]
public protocol CompressedFrameCursor: AnyObject {
    /// The next frame, or nil at the end of the stream.
    func next() -> CompressedFrame?
    /// Moves to the nearest independent frame at or before `sample`;
    /// returns that frame's timestamp, or nil when `sample` is past the end.
    /// (A cursor over a codec whose decoder needs frames before the target
    /// to settle, the MDCT codecs' overlap, starts that much earlier.)
    func seek(toSample sample: Int) -> Int?
    /// The stream's codec parameters, when a demuxer found them (nil for
    /// self-describing frames such as AC-4 sync frames).
    var streamInfo: CompressedStreamInfo? { get }
}

extension CompressedFrameCursor {
    public var streamInfo: CompressedStreamInfo? { nil }
}

/// A node that emits compressed frames (an `.ac4` file reader, an MP4
/// demuxer): its consumers read it directly off the audio thread.
public protocol CompressedFrameSource: AnyObject {
    /// e.g. "ac4-sync".
    var codec: String { get }
    /// A fresh cursor at the start of the stream. [main-thread]
    func makeCursor() throws -> any CompressedFrameCursor
    /// The part that plays (the `media` source's `start`, `end`, `loop`).
    var playback: PlaybackWindow { get }
    /// Its `transport` parameter: whether the decoders reading it follow
    /// the host's transport (`TransportFollowing`).
    var transportMode: TransportMode { get }
    /// The file the stream is read from, for messages about its damage;
    /// nil when it has none.
    var mediaPath: String? { get }
    /// Its `onError` parameter, "fail" or "skip" (what a decoder reading it
    /// does with damaged frames offline), when the source has one.
    var onError: String? { get }
}

extension CompressedFrameSource {
    public var playback: PlaybackWindow { .whole }
    public var transportMode: TransportMode { .free }
    public var mediaPath: String? { nil }
    public var onError: String? { nil }
}
