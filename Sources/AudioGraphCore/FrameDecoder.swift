/// What one `FrameDecoder.decode` call did.
public enum FrameDecodeStatus: Sendable, Equatable {
    /// PCM written: this many frames in every channel (0 while priming).
    case ok(frames: Int)
    /// The frame is corrupt: count it and play silence for its duration.
    case badFrame
    /// The decoder cannot go on (a stream it cannot follow).
    case fatal
}

/// A decoder instance that turns compressed frames into planar PCM at the
/// graph's rate, off the audio thread: a decoder plugin's instance behind
/// its decoder extensions (`AudioGraphPlugins`), driven by a
/// `DecodedStream`. The decoder node and the playlist use the same one.
///
/// Lifecycle: made and activated on the main thread; then every other
/// call on the worker thread that owns it, one at a time; released on the
/// main thread.
public protocol FrameDecoder: AnyObject {
    /// PCM channels every decode writes (a stream with fewer channels
    /// leaves the rest silent). [any-thread]
    var channels: Int { get }
    /// Makes the decoder ready for `sampleRate` (again, when it was
    /// active). [main-thread]
    func activate(sampleRate: Double, maxFrames: Int) throws
    /// The most frames one decode writes: the PCM buffers' size.
    /// [main-thread & active]
    var maxFramesPerDecode: Int { get }
    /// The decoder's own delay in frames, after what it trims itself.
    /// [main-thread & active]
    var latency: Int { get }
    /// Gives the decoder a container stream's parameters before its first
    /// frame (and again for another stream, after `flush`); returns why it
    /// refused them, or nil. A decoder that needs none ignores them.
    /// [worker-thread & active]
    func openStream(_ info: CompressedStreamInfo) -> String?
    /// Samples of the next frame's output that are not part of the
    /// presentation, at the stream's coded rate. [worker-thread & active]
    func trimNextFrame(skipStart: Int, discardEnd: Int)
    /// Decodes one frame (`bytes`; nil at the end of the stream: write what
    /// is held back) into `pcm`, `channels` buffers of `capacity` frames.
    /// `timestamp`: the frame's time in samples at the graph's rate
    /// (`Int.min`: unknown). [worker-thread & active]
    func decode(_ bytes: UnsafeBufferPointer<UInt8>?, timestamp: Int,
                into pcm: UnsafePointer<UnsafeMutablePointer<Float>?>, capacity: Int) -> FrameDecodeStatus
    /// Drops all state before frames from another position. [worker-thread & active]
    func flush()
    /// Why the last decode was bad or fatal, in the decoder's words.
    /// [worker-thread & active; between decodes]
    var lastError: String? { get }
    /// Frames the decoder concealed itself since activation. [any-thread]
    var concealedFrames: Int { get }
}

/// Where a `DecodedStream` puts its PCM: a ring to the audio thread, or a
/// playlist's mixing into its layout. [worker-thread]
public protocol DecodedPCMOutput: AnyObject {
    /// Frames that fit now.
    var writableFrames: Int { get }
    /// Takes `frames` frames of `channels` planar buffers, from `offset` in
    /// each; the caller checked that they fit.
    func write(_ channels: UnsafePointer<UnsafeMutablePointer<Float>?>, count: Int, offset: Int, frames: Int)
}
