// Decoder nodes (ext/decoder.h, ext/decoder-stream.h): the protocols a
// decoder type implements and the values they pass.


/// The PCM buffers a decoder writes into: `channels` host buffers of
/// `capacity` frames. Valid only during `decode`. [worker-thread]
public struct PluginPCM {
    public let pointers: UnsafePointer<UnsafeMutablePointer<Float>?>
    public let channels: Int
    public let capacity: Int
    /// Channel `c`'s buffer (nil when the host gave none for it).
    @inlinable public func channel(_ c: Int) -> UnsafeMutablePointer<Float>? { pointers[c] }
}

/// What a `decode` call produced (`agraph_decode_status_t`).
public enum PluginDecodeResult {
    /// `frames` frames written to every channel (0 while priming; at the
    /// end of the stream, 0 means drained).
    case ok(frames: Int)
    /// The frame is corrupt: the host counts it, plays silence, goes on.
    case badFrame(String)
    /// The node cannot go on: the host stops it with this message.
    case fatal(String)
}

/// A decoder node (AGRAPH_DOMAIN_WORKER with AGRAPH_EXT_DECODER): it turns
/// compressed frames into PCM on the host's worker thread; `process` is
/// never called (nor exported). Timing contract as in the header: after
/// activate and after each flush the first PCM frame written is sample 0 of
/// the first frame fed; a decoder with a delay drops it itself and gives
/// the held-back tail when drained (`decode(nil, …)`).
public protocol PluginDecoder: PluginNode {
    /// The codec of the frames its input takes, e.g. "ac4-sync". [any-thread]
    static var inputCodec: String { get }

    /// Largest number of PCM frames one decode writes. [main-thread & active]
    var maxFramesPerDecode: Int { get }

    /// Decodes one frame (nil at the end of the stream: write what is held
    /// back). `timestamp`: the frame's first sample, -1 when unknown.
    /// [worker-thread & active]
    func decode(_ frame: UnsafeRawBufferPointer?, timestamp: Int, into pcm: PluginPCM) -> PluginDecodeResult

    /// Drops all state before frames from another position. [worker-thread & active]
    func flush()

    /// How far the PCM lags the timestamps (0 when the decoder trims its
    /// own delay). [main-thread & active]
    var decoderLatency: Int { get }
}

extension PluginDecoder {
    public func process(_ block: PluginBlock) {}
    public var decoderLatency: Int { 0 }
}

/// What a demuxer knows about the stream (`agraph_stream_info_t`); valid
/// only during `openStream`.
public struct PluginStreamInfo {
    public var codec: String
    public var sampleRate: Int
    public var channels: Int
    /// WAVE channel mask; 0 when the positions are unknown.
    public var channelMask: UInt64
    public var codecTag: UInt32
    public var bitsPerCodedSample: Int
    public var bitsPerRawSample: Int
    public var blockAlign: Int
    public var frameSize: Int
    /// -1 when unknown.
    public var profile: Int
    public var bitRate: Int
    /// Codec-specific configuration (valid during the call only).
    public var extradata: UnsafeRawBufferPointer?
}

/// A decoder fed by a demuxer (AGRAPH_EXT_DECODER_STREAM): it gets
/// the stream's parameters before the first frame, and the container's
/// trim (encoder delay, padding) before the frame it applies to.
public protocol PluginStreamDecoder: PluginDecoder {
    /// The stream's parameters; throwing stops the node with the error's
    /// text. [worker-thread & active]
    func openStream(_ stream: PluginStreamInfo) throws
    /// Drop `skipStart` samples at the start and `discardEnd` at the end of
    /// the next frame's output (coded rate). [worker-thread & active]
    func trimNextFrame(skipStart: Int, discardEnd: Int)
    /// Frames found damaged and concealed by the decoder itself. [any-thread]
    var concealedFrames: Int { get }
}
