import AudioGraph

/// A stand-in for the `ffmpeg` decoder plugin where plugins cannot load
/// (Swift plugins do not load into the ThreadSanitizer build): a node type
/// with the same id that decodes only 32-bit float PCM packets (float WAV
/// files), so that a playlist's threads run under the sanitizer. NOT the
/// plugin: it knows no other codec.
public struct FloatPCMDecoderDouble: FrameDecoderType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "ffmpeg", role: .processor, summary: "Decodes float PCM packets (a test double of the ffmpeg plugin).",
        inputs: .single, parameters: [], domain: .background, origin: "TestSupport", inputCodecs: ["pcm_f32le"])

    public func resolve(_ c: ResolveContext) -> StreamFormat? { nil }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        throw EngineError(nodeID: c.nodeID, "the decoder double only decodes for a playlist")
    }

    public func makeFrameDecoder(nodeID: String, channels: Int, sampleRate: Double) throws -> any FrameDecoder {
        Decoder(channels: channels)
    }

    /// [worker-thread, but `init`, `activate`, `maxFramesPerDecode`: main-thread]
    final class Decoder: FrameDecoder {
        let channels: Int
        var streamChannels = 1
        init(channels: Int) { self.channels = channels }

        func activate(sampleRate: Double, maxFrames: Int) throws {}
        var maxFramesPerDecode: Int { 8192 }
        var latency: Int { 0 }
        var lastError: String? { nil }
        var concealedFrames: Int { 0 }
        func flush() {}
        func trimNextFrame(skipStart: Int, discardEnd: Int) {}

        func openStream(_ info: CompressedStreamInfo) -> String? {
            guard info.codec == "pcm_f32le", info.channels <= channels else { return "not float PCM of up to \(channels) channels" }
            streamChannels = info.channels
            return nil
        }

        func decode(_ bytes: UnsafeBufferPointer<UInt8>?, timestamp: Int,
                    into pcm: UnsafePointer<UnsafeMutablePointer<Float>?>, capacity: Int) -> FrameDecodeStatus {
            guard let bytes, let base = bytes.baseAddress else { return .ok(frames: 0) }
            let frames = min(bytes.count / (4 * streamChannels), capacity)
            let raw = UnsafeRawPointer(base)
            for c in 0..<channels {
                guard let dst = pcm[c] else { continue }
                for i in 0..<frames {
                    dst[i] = c < streamChannels ? raw.loadUnaligned(fromByteOffset: 4 * (i * streamChannels + c), as: Float.self) : 0
                }
            }
            return .ok(frames: frames)
        }
    }
}
