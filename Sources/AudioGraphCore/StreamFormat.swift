/// The channel-layout tag a stream carries: what its channels mean.
///
/// The tag travels with the stream from node to node. `binaural` is two
/// channels already virtualized for headphones: a node that virtualizes
/// refuses it so that nothing is virtualized twice.
public enum ChannelLayout: String, Sendable, CaseIterable, CustomStringConvertible {
    case mono
    case stereo
    case binaural
    case surround51 = "5.1"
    case surround71 = "7.1"
    /// Channels with no spatial meaning; any count.
    case discrete

    /// The channel count the layout implies, or nil for `discrete`.
    public var channelCount: Int? {
        switch self {
        case .mono: 1
        case .stereo, .binaural: 2
        case .surround51: 6
        case .surround71: 8
        case .discrete: nil
        }
    }

    /// The default layout for a bare channel count.
    public static func `default`(forChannels channels: Int) -> ChannelLayout {
        switch channels {
        case 1: .mono
        case 2: .stereo
        case 6: .surround51
        case 8: .surround71
        default: .discrete
        }
    }

    /// Short channel labels, used for port names and diagnostics.
    public func channelLabels(count: Int) -> [String] {
        switch self {
        case .mono: ["M"]
        case .stereo, .binaural: ["L", "R"]
        case .surround51: ["L", "R", "C", "LFE", "Ls", "Rs"]
        case .surround71: ["L", "R", "C", "LFE", "Ls", "Rs", "Lb", "Rb"]
        case .discrete: (1...max(count, 1)).map(String.init)
        }
    }

    public var description: String { rawValue }
}

/// What a link carries: PCM audio in the engine's buses, or compressed
/// frames of a codec that a decoder node reads off the audio thread.
public enum StreamEncoding: Sendable, Hashable, CustomStringConvertible {
    case pcm
    /// Whole compressed frames, e.g. "ac4-sync" (AC-4 sync frames) or
    /// "ac4-raw" (raw AC-4 frames as MP4 carries them).
    case frames(codec: String)

    public var description: String {
        switch self {
        case .pcm: "PCM audio"
        case .frames(let codec): "compressed \(codec) frames"
        }
    }
}

/// What flows on a link: channel count, sample rate, layout tag, encoding.
public struct StreamFormat: Sendable, Hashable, CustomStringConvertible {
    public var channels: Int
    public var sampleRate: Double
    public var layout: ChannelLayout
    public var encoding: StreamEncoding

    /// - Parameters:
    ///   - layout: defaults to the usual layout for `channels`.
    public init(channels: Int, sampleRate: Double, layout: ChannelLayout? = nil, encoding: StreamEncoding = .pcm) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.layout = layout ?? .default(forChannels: channels)
        self.encoding = encoding
    }

    /// A stream of compressed frames (no PCM in the engine's buses).
    /// `channels` and `layout`: what the frames decode to, when the source
    /// knows (a demuxer's stream parameters); a decoder whose output follows
    /// its input takes them. 0 when not known (AC-4: the decoder decides).
    public static func frames(codec: String, sampleRate: Double, channels: Int = 0,
                              layout: ChannelLayout = .discrete) -> StreamFormat {
        StreamFormat(channels: channels, sampleRate: sampleRate, layout: layout, encoding: .frames(codec: codec))
    }

    public var description: String {
        switch encoding {
        case .pcm: "\(channels) ch \(layout) @ \(Int(sampleRate)) Hz"
        case .frames(let codec): "\(codec) frames @ \(Int(sampleRate)) Hz"
        }
    }
}
