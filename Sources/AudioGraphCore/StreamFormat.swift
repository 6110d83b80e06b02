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
    /// Setting a layout other than 5.1 clears `surroundsAreBack`.
    public var layout: ChannelLayout {
        didSet { if layout != .surround51 { surroundsAreBack = false } }
    }
    public var encoding: StreamEncoding
    /// A 5.1 stream whose surrounds are back speakers (FL FR FC LFE BL BR:
    /// WAVE channel mask 0x3F, FFmpeg's "5.1") rather than side ones (the
    /// default: 0x60F, FFmpeg's "5.1(side)"). The project's 5.1 is one layout
    /// either way (Ls/Rs are mixed, metered and virtualized alike); this only
    /// says which positions a file written from the stream declares. Set by
    /// the sources that read it from a file (`file`, `media`), kept by nodes
    /// that pass the 5.1 through; a node that makes a new 5.1 (an upmix, a
    /// 7.1 downmix, a mixer of unlike inputs) makes side. Always false for
    /// other layouts. [any-thread]
    public var surroundsAreBack: Bool {
        didSet { if layout != .surround51 { surroundsAreBack = false } }
    }

    /// - Parameters:
    ///   - layout: defaults to the usual layout for `channels`.
    public init(channels: Int, sampleRate: Double, layout: ChannelLayout? = nil, encoding: StreamEncoding = .pcm) {
        self.init(channels: channels, sampleRate: sampleRate, layout: layout, encoding: encoding, surroundsAreBack: false)
    }

    /// - Parameters:
    ///   - layout: defaults to the usual layout for `channels`.
    ///   - surroundsAreBack: for 5.1 only (ignored for other layouts).
    public init(channels: Int, sampleRate: Double, layout: ChannelLayout? = nil, encoding: StreamEncoding = .pcm,
                surroundsAreBack: Bool) {
        self.channels = channels
        self.sampleRate = sampleRate
        let layout = layout ?? .default(forChannels: channels)
        self.layout = layout
        self.encoding = encoding
        self.surroundsAreBack = surroundsAreBack && layout == .surround51
    }

    /// A stream of compressed frames (no PCM in the engine's buses).
    /// `channels` and `layout`: what the frames decode to, when the source
    /// knows (a demuxer's stream parameters); a decoder whose output follows
    /// its input takes them. 0 when not known (AC-4: the decoder decides).
    public static func frames(codec: String, sampleRate: Double, channels: Int = 0,
                              layout: ChannelLayout = .discrete) -> StreamFormat {
        frames(codec: codec, sampleRate: sampleRate, channels: channels, layout: layout, surroundsAreBack: false)
    }

    /// The same, for a 5.1 whose surrounds may be the back pair.
    public static func frames(codec: String, sampleRate: Double, channels: Int = 0,
                              layout: ChannelLayout = .discrete, surroundsAreBack: Bool) -> StreamFormat {
        StreamFormat(channels: channels, sampleRate: sampleRate, layout: layout, encoding: .frames(codec: codec),
                     surroundsAreBack: surroundsAreBack)
    }

    public var description: String {
        switch encoding {
        case .pcm: "\(channels) ch \(layout) @ \(Int(sampleRate)) Hz"
        case .frames(let codec): "\(codec) frames @ \(Int(sampleRate)) Hz"
        }
    }
}
