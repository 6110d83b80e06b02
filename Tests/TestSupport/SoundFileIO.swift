import CSndFile

/// Reading and writing sound files in tests, straight through libsndfile, so
/// that tests check the product's files without going through its own
/// `SoundFile` wrapper.

/// A failure of `readSoundFile` or `writeSoundFile`, with libsndfile's words.
public struct SoundFileIOError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { "\(path): \(message)" }
}

/// Container and sample encoding for `writeSoundFile`.
public enum SoundFileFormat: String, Sendable, CaseIterable {
    case wavFloat32, wavInt24, wavInt16, flacInt24, flacInt16

    var sndfileFormat: Int32 {
        switch self {
        case .wavFloat32: Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_FLOAT)
        case .wavInt24: Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_PCM_24)
        case .wavInt16: Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_PCM_16)
        case .flacInt24: Int32(SF_FORMAT_FLAC) | Int32(SF_FORMAT_PCM_24)
        case .flacInt16: Int32(SF_FORMAT_FLAC) | Int32(SF_FORMAT_PCM_16)
        }
    }
}

/// Reads a whole sound file.
/// - Returns: the channel count, the sample rate, and the samples
///   interleaved (`samples.count == frames * channels`).
public func readSoundFile(_ path: String) throws(SoundFileIOError)
    -> (channels: Int, sampleRate: Double, samples: [Float])
{
    var info = SF_INFO()
    guard let handle = sf_open(path, Int32(SFM_READ), &info) else {
        throw SoundFileIOError(path: path, message: String(cString: sf_strerror(nil)))
    }
    defer { sf_close(handle) }
    let channels = Int(info.channels)
    let frames = Int(info.frames)
    var samples = [Float](repeating: 0, count: frames * channels)
    var done = 0
    while done < frames {
        let n = samples.withUnsafeMutableBufferPointer { buf in
            Int(sf_readf_float(handle, buf.baseAddress! + done * channels, sf_count_t(frames - done)))
        }
        if n <= 0 { break }
        done += n
    }
    if done < frames { samples.removeLast((frames - done) * channels) }
    return (channels, Double(info.samplerate), samples)
}

/// The samples of channel `channel` of interleaved `samples`.
public func deinterleave(_ samples: [Float], channels: Int, channel: Int) -> [Float] {
    precondition(channels > 0 && channel >= 0 && channel < channels, "channel out of range")
    return stride(from: channel, to: samples.count, by: channels).map { samples[$0] }
}

/// Writes interleaved `samples` (`count` a multiple of `channels`) to a new
/// file at `path`, replacing any file there.
public func writeSoundFile(
    _ path: String, format: SoundFileFormat, channels: Int, sampleRate: Double, samples: [Float]
) throws(SoundFileIOError) {
    try writeFrames(path, format: format, channels: channels, sampleRate: sampleRate, samples: samples) { h, p, n in
        sf_writef_float(h, p, n)
    }
}

/// Writes interleaved integer samples, left-aligned in 32 bits (a 24-bit
/// value `k` is passed as `k << 8`), so the file holds exactly these
/// values: libsndfile then reads each back as the float `k / 2^23`.
public func writeSoundFileIntegers(
    _ path: String, format: SoundFileFormat, channels: Int, sampleRate: Double, samples: [Int32]
) throws(SoundFileIOError) {
    try writeFrames(path, format: format, channels: channels, sampleRate: sampleRate, samples: samples) { h, p, n in
        sf_writef_int(h, p, n)
    }
}

/// Opens `path` for `format`, writes every frame with `write`, closes.
private func writeFrames<Sample>(
    _ path: String, format: SoundFileFormat, channels: Int, sampleRate: Double, samples: [Sample],
    write: (OpaquePointer, UnsafePointer<Sample>, sf_count_t) -> sf_count_t
) throws(SoundFileIOError) {
    guard channels > 0, samples.count % channels == 0 else {
        throw SoundFileIOError(path: path, message: "\(samples.count) samples do not make whole frames of \(channels) channels")
    }
    var info = SF_INFO()
    info.channels = Int32(channels)
    info.samplerate = Int32(sampleRate)
    info.format = format.sndfileFormat
    guard sf_format_check(&info) != 0 else {
        throw SoundFileIOError(path: path, message: "libsndfile cannot write \(format.rawValue) with \(channels) channels at \(sampleRate) Hz")
    }
    guard let handle = sf_open(path, Int32(SFM_WRITE), &info) else {
        throw SoundFileIOError(path: path, message: String(cString: sf_strerror(nil)))
    }
    let frames = samples.count / channels
    let written = samples.withUnsafeBufferPointer { buf in
        buf.baseAddress.map { frames == 0 ? 0 : Int(write(handle, $0, sf_count_t(frames))) } ?? 0
    }
    let message = written == frames ? nil : String(cString: sf_strerror(handle))
    let closed = sf_close(handle)
    if let message {
        throw SoundFileIOError(path: path, message: "short write (\(written) of \(frames) frames): \(message)")
    }
    if closed != 0 {
        throw SoundFileIOError(path: path, message: "error closing: \(String(cString: sf_strerror(nil)))")
    }
}

/// What a sound file's header says, without reading its audio: frames
/// (`Int64.max` when the file does not say), channels, rate.
public func soundFileInfo(_ path: String) throws(SoundFileIOError) -> (frames: Int, channels: Int, sampleRate: Double) {
    var info = SF_INFO()
    guard let handle = sf_open(path, Int32(SFM_READ), &info) else {
        throw SoundFileIOError(path: path, message: String(cString: sf_strerror(nil)))
    }
    sf_close(handle)
    return (Int(info.frames), Int(info.channels), Double(info.samplerate))
}
