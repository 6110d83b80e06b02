import AudioGraphCore
import CSndFile

extension SoundFile {
    /// The containers (and codecs) `file-out` writes: what libsndfile writes.
    public enum Container: String, Sendable, CaseIterable {
        /// WAV, written as RF64 and downgraded to WAV on closing when under 4 GiB.
        case wav
        /// Sony Wave64.
        case w64
        /// RF64 (EBU Tech 3306), kept RF64 whatever the size.
        case rf64
        case aiff
        /// Apple Core Audio Format.
        case caf
        case flac
        /// Ogg Vorbis.
        case ogg
        /// Ogg Opus.
        case opus
        /// MPEG-1/2 Layer III.
        case mp3

        /// The container a file name's extension stands for, if any.
        public init?(extensionOf path: String) {
            guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
            switch path[path.index(after: dot)...].lowercased() {
            case "wav", "wave": self = .wav
            case "w64": self = .w64
            case "rf64": self = .rf64
            case "aif", "aiff", "aifc": self = .aiff
            case "caf": self = .caf
            case "flac": self = .flac
            case "ogg", "oga": self = .ogg
            case "opus": self = .opus
            case "mp3": self = .mp3
            default: return nil
            }
        }

        /// The extensions `init(extensionOf:)` knows, for messages.
        public static let extensions = ".wav, .w64, .rf64, .aif/.aiff, .caf, .flac, .ogg/.oga (Vorbis), .opus, .mp3"

        /// A lossy codec: the encoder takes float and `sampleFormat` does not apply.
        public var isLossy: Bool { self == .ogg || self == .opus || self == .mp3 }

        /// The sample formats it holds; empty for lossy codecs.
        public var sampleFormats: [SampleFormat] {
            switch self {
            case .flac: [.int24, .int16]
            case .ogg, .opus, .mp3: []
            default: SampleFormat.allCases
            }
        }

        /// The default sample format: float32 where it exists, else int24.
        public var defaultSampleFormat: SampleFormat? { sampleFormats.first }

        /// libsndfile's format word.
        func sndfileFormat(_ sample: SampleFormat?) -> Int32 {
            let subtype: Int32 = switch sample {
            case .float32?: Int32(SF_FORMAT_FLOAT)
            case .int24?: Int32(SF_FORMAT_PCM_24)
            case .int16?, nil: Int32(SF_FORMAT_PCM_16)
            }
            switch self {
            case .wav, .rf64: return Int32(SF_FORMAT_RF64) | subtype
            case .w64: return Int32(SF_FORMAT_W64) | subtype
            case .aiff: return Int32(SF_FORMAT_AIFF) | subtype
            case .caf: return Int32(SF_FORMAT_CAF) | subtype
            case .flac: return Int32(SF_FORMAT_FLAC) | subtype
            case .ogg: return Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_VORBIS)
            case .opus: return Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_OPUS)
            case .mp3: return Int32(SF_FORMAT_MPEG) | Int32(SF_FORMAT_MPEG_LAYER_III)
            }
        }

        /// Why this container cannot hold `sample` samples, in words; nil
        /// when it can (nil `sample`: the codec's own). [any-thread]
        public func sampleProblem(_ sample: SampleFormat?) -> String? {
            guard let sample, !sampleFormats.contains(sample) else { return nil }
            if sampleFormats.isEmpty { return "\(rawValue) is a lossy codec: leave out \"sampleFormat\"" }
            let kinds = sampleFormats.map(\.rawValue).joined(separator: " or ")
            return self == .flac
                ? "FLAC holds integer samples only: \(kinds), not \(sample.rawValue) (or \"format\": \"wav\")"
                : "\(rawValue) holds \(kinds) samples, not \(sample.rawValue)"
        }

        /// Why this container cannot hold `channels` channels of `sample`
        /// at `sampleRate`, in words; nil when it can. [any-thread]
        public func problem(sample: SampleFormat?, channels: Int, sampleRate: Double) -> String? {
            if let problem = sampleProblem(sample) { return problem }
            switch self {
            case .flac where channels > 8: return "FLAC holds at most 8 channels; the stream has \(channels): use \"format\": \"wav\""
            case .mp3 where channels > 2: return "MP3 holds at most 2 channels; the stream has \(channels)"
            case .opus where ![8000.0, 12000, 16000, 24000, 48000].contains(sampleRate):
                return "Opus runs at 8000, 12000, 16000, 24000 or 48000 Hz; the graph runs at \(Int(sampleRate)) Hz"
            case .opus where channels > 8, .ogg where channels > 8: return "\(rawValue) holds at most 8 channels here; the stream has \(channels)"
            default: break
            }
            // libsndfile writes WAV (float32, int24, int16) of 1 to 1024
            // channels (SF_MAX_CHANNELS) at any whole rate; asking it would
            // load it into every `agraph validate` (it is loaded on first use).
            if self == .wav, (1...1024).contains(channels), sampleRate >= 1, sampleRate <= Double(Int32.max),
               sampleRate.rounded() == sampleRate {
                return nil
            }
            var info = SF_INFO()
            info.channels = Int32(channels)
            info.samplerate = Int32(sampleRate)
            info.format = sndfileFormat(sample)
            if sf_format_check(&info) == 0 {
                return "this libsndfile cannot write \(rawValue) with \(channels) channels at \(Int(sampleRate)) Hz"
            }
            return nil
        }

        /// Whether the file's channel order is Vorbis's (Ogg Vorbis, Opus)
        /// rather than WAV's.
        var usesVorbisOrder: Bool { self == .ogg || self == .opus }
    }

    public enum SampleFormat: String, Sendable, CaseIterable { case float32, int24, int16 }
}

/// Channel positions as libsndfile names them (`SF_CHANNEL_MAP_*`), and how
/// the project's layouts sit in files: which position each file channel
/// holds and in what order, both ways. [any-thread]
///
/// The project's layouts, in its channel order:
/// mono `C`; stereo `L R`; 5.1 `L R C LFE Ls Rs`; 7.1 `L R C LFE Ls Rs Lb Rb`
/// (Ls/Rs side, Lb/Rb back surrounds). WAV, FLAC, CAF and AIFF files put
/// the back pair before the side pair (the WAVE_FORMAT_EXTENSIBLE bit
/// order); Ogg Vorbis and Opus use Vorbis's order (L C R …, LFE last).
enum ChannelMap {
    typealias Position = Int32
    static let mono = Int32(SF_CHANNEL_MAP_MONO)
    static let left = Int32(SF_CHANNEL_MAP_LEFT)
    static let right = Int32(SF_CHANNEL_MAP_RIGHT)
    static let center = Int32(SF_CHANNEL_MAP_CENTER)
    static let lfe = Int32(SF_CHANNEL_MAP_LFE)
    static let rearLeft = Int32(SF_CHANNEL_MAP_REAR_LEFT)
    static let rearRight = Int32(SF_CHANNEL_MAP_REAR_RIGHT)
    static let sideLeft = Int32(SF_CHANNEL_MAP_SIDE_LEFT)
    static let sideRight = Int32(SF_CHANNEL_MAP_SIDE_RIGHT)

    /// libsndfile also says FRONT_LEFT etc.; WAVE_FORMAT_EXTENSIBLE does not
    /// tell them apart from LEFT.
    static func normalised(_ p: Position) -> Position {
        switch p {
        case Int32(SF_CHANNEL_MAP_FRONT_LEFT): left
        case Int32(SF_CHANNEL_MAP_FRONT_RIGHT): right
        case Int32(SF_CHANNEL_MAP_FRONT_CENTER): center
        default: p
        }
    }

    /// A layout's positions in the project's channel order.
    static func positions(of layout: ChannelLayout, surroundsAreSides: Bool = true) -> [Position]? {
        switch layout {
        case .mono: [mono]
        case .stereo, .binaural: [left, right]
        case .surround51: surroundsAreSides ? [left, right, center, lfe, sideLeft, sideRight]
                                            : [left, right, center, lfe, rearLeft, rearRight]
        case .surround71: [left, right, center, lfe, sideLeft, sideRight, rearLeft, rearRight]
        case .discrete: nil
        }
    }

    /// The file's channel order for `channels` channels in a container
    /// with no channel map of its own (FLAC, Vorbis, WAV without a mask).
    static func containerDefault(channels: Int, vorbisOrder: Bool) -> [Position]? {
        switch (channels, vorbisOrder) {
        case (1, _): [mono]
        case (2, _): [left, right]
        case (6, false): [left, right, center, lfe, rearLeft, rearRight]
        case (8, false): [left, right, center, lfe, rearLeft, rearRight, sideLeft, sideRight]
        case (6, true): [left, center, right, rearLeft, rearRight, lfe]
        case (8, true): [left, center, right, sideLeft, sideRight, rearLeft, rearRight, lfe]
        default: nil
        }
    }

    /// The layout of a file whose channels hold `file` positions, and for
    /// each of the layout's channels the file channel it comes from. A map
    /// that is no layout of the project's: `discrete`, in file order.
    /// `surroundsAreBack`: a 5.1 whose surrounds are the back pair (mask 0x3F).
    static func layout(ofFile file: [Position]) -> (ChannelLayout, order: [Int], surroundsAreBack: Bool) {
        let file = file.map(normalised)
        let identity = Array(file.indices)
        let candidates: [(ChannelLayout, [Position], back: Bool)] = [
            (.mono, [mono], false), (.mono, [center], false),
            (.stereo, [left, right], false),
            (.surround51, positions(of: .surround51, surroundsAreSides: true) ?? [], false),
            (.surround51, positions(of: .surround51, surroundsAreSides: false) ?? [], true),
            (.surround71, positions(of: .surround71) ?? [], false),
        ]
        for (layout, wanted, back) in candidates where wanted.count == file.count && Set(wanted) == Set(file) && Set(file).count == file.count {
            let order = wanted.compactMap { file.firstIndex(of: $0) }
            return (layout, order, back)
        }
        return (.discrete, identity, false)
    }

    /// The positions a file of `container` gets for `layout`, in file
    /// order, and for each file channel the stream channel it takes; nil
    /// for a discrete stream (no map written). `surroundsAreSides`: which
    /// pair a 5.1's Ls/Rs are (side 0x60F, or back 0x3F).
    static func fileOrder(for layout: ChannelLayout, channels: Int, container: SoundFile.Container,
                          surroundsAreSides: Bool = true) -> (positions: [Position], order: [Int])? {
        guard let ours = positions(of: layout, surroundsAreSides: surroundsAreSides), ours.count == channels else { return nil }
        let file: [Position]
        if container.usesVorbisOrder {
            guard let v = containerDefault(channels: channels, vorbisOrder: true) else { return nil }
            // Vorbis's 5.1 has rear surrounds: side ones go in the same place.
            let sides = layout == .surround51 && surroundsAreSides
            file = v.map { p in sides && p == rearLeft ? sideLeft : sides && p == rearRight ? sideRight : p }
        } else {
            // WAVE_FORMAT_EXTENSIBLE order: ascending mask bits.
            let rank: [Position: Int] = [mono: 0, left: 1, right: 2, center: 3, lfe: 4, rearLeft: 5, rearRight: 6, sideLeft: 7, sideRight: 8]
            file = ours.sorted { (rank[$0] ?? 99) < (rank[$1] ?? 99) }
        }
        let order = file.compactMap { ours.firstIndex(of: $0) }
        guard order.count == channels else { return nil }
        return (file, order)
    }
}
