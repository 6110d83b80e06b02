import CFFmpeg

/// The codec names the `media` source gives its streams: FFmpeg's, except
/// for AC-4, which the project calls "ac4-raw" (raw frames as MP4 stores
/// them, ETSI TS 103 190-2 Annex E; `.ac4` files hold "ac4-sync" frames).
///
/// FFmpeg before 7.1 (Debian 12 has 5.1) has no AC-4 codec id: its MP4
/// demuxer reads an `ac-4` sample entry's samples, timestamps, sample rate
/// and channel count, but names the codec "none" with the fourcc `ac-4` as
/// its tag (and skips the `dac4` box: no extradata). The tag alone says what
/// the samples are. Newer FFmpeg names it "ac4". [any-thread]
enum MediaCodecNames {
    /// The ISO BMFF sample entry type of AC-4, as FFmpeg stores a fourcc
    /// (first character in the low byte).
    static let ac4SampleEntry: UInt32 = fourCC("ac-4")

    static func fourCC(_ text: StaticString) -> UInt32 {
        let b = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        return b.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// The project's name for a stream's codec.
    static func name(_ id: AVCodecID, tag: UInt32) -> String {
        if id == AV_CODEC_ID_NONE && tag == ac4SampleEntry { return "ac4-raw" }
        let name = String(cString: avcodec_get_name(id))
        return name == "ac4" ? "ac4-raw" : name
    }
}
