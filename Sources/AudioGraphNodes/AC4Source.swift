import AudioGraphCore
import AudioGraphNodeAPI
import AC4

/// `ac4`: reads an `.ac4` file (AC-4 sync frames) and emits whole frames,
/// with their timestamps, to a decoder node (e.g. `daa`). Its output is a
/// stream of compressed frames, not audio: validation refuses linking it to
/// an audio input.
public struct AC4SourceType: NodeType {
    public static let codec = "ac4-sync"

    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "ac4", role: .source,
        summary: "Reads AC-4 sync frames from an .ac4 file (CRC checked, resynced after damage) for a decoder node such as daa.",
        inputs: .none,
        parameters: [
            .init("path", .path, "The .ac4 file; relative to the graph file's folder."),
            .init("transport", .choice(TransportMode.names), default: .string(TransportMode.free.rawValue),
                  TransportMode.parameterHelp + " The decoder reading it follows: transport frame F plays the stream's sample F."),
        ],
        domain: .background)

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let path = c.parameters.string("path") else { return nil }
        let file: AC4FileReader
        do {
            file = try AC4FileReader(path: c.resolvePath(path))
        } catch {
            c.error(parameter: "path", "cannot read AC-4 file \(error)")
            return nil
        }
        let result = file.readAll()
        guard let toc = result.statistics.firstTOC, result.statistics.validFrames > 0 else {
            c.error(parameter: "path", "\(path) holds no valid AC-4 sync frame (is it an .ac4 file?)")
            return nil
        }
        if Double(toc.sampleRate) != c.sampleRate {
            c.error(parameter: "path", "\(path) is AC-4 at \(toc.sampleRate) Hz but the graph runs at \(Int(c.sampleRate)) Hz: set the graph's \"sampleRate\" to \(toc.sampleRate)")
            return nil
        }
        return .frames(codec: Self.codec, sampleRate: c.sampleRate)
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let path = c.parameters.string("path") else { throw EngineError(nodeID: c.nodeID, "no path") }
        let file = try AC4FileReader(path: c.resolvePath(path))
        let node = AC4SourceNode(bytes: file.bytes, sampleRate: c.sampleRate)
        node.transportMode = TransportMode(rawValue: c.parameters.string("transport") ?? "") ?? .free
        return node
    }
}

/// Holds the file's bytes and its frame index; decoders read it through
/// their own cursors, off the audio thread. Its render does nothing: a
/// compressed stream has no PCM channels in the engine.
public final class AC4SourceNode: RenderNode, CompressedFrameSource, @unchecked Sendable {
    public let bytes: [UInt8]
    public let index: AC4Index
    public let sampleRate: Double
    /// Its `transport` parameter. [main-thread; before the engine is built]
    public var transportMode = TransportMode.free
    var output: AudioBus?

    /// [main-thread]
    public init(bytes: [UInt8], sampleRate: Double) {
        ThreadRole.check(.main)
        self.bytes = bytes
        self.index = AC4Index(bytes: bytes)
        self.sampleRate = sampleRate
    }

    public var codec: String { AC4SourceType.codec }

    public func makeCursor() throws -> any CompressedFrameCursor { AC4Cursor(source: self) }

    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }

    public func render(frames: Int) {
        output?.state = BusState(validFrames: frames, ended: false)
    }
}

/// A reading position over an `AC4SourceNode`'s indexed frames.
/// [worker-thread; made on the main thread]
final class AC4Cursor: CompressedFrameCursor {
    let source: AC4SourceNode
    var position = 0

    init(source: AC4SourceNode) { self.source = source }

    func next() -> CompressedFrame? {
        let entries = source.index.entries
        guard position < entries.count else { return nil }
        let e = entries[position]
        position += 1
        return CompressedFrame(bytes: source.bytes[e.wholeFrame], index: e.frameIndex, timestamp: e.timestamp,
                               samplesPerFrame: e.samples, sampleRate: source.sampleRate, isIndependent: e.isIFrame)
    }

    func seek(toSample sample: Int) -> Int? {
        guard sample >= 0, sample < source.index.totalSamples,
              let position = source.index.iFramePosition(atOrBeforeSample: sample) else { return nil }
        self.position = position
        return source.index.entries[position].timestamp
    }
}
