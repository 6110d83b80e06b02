import CSndFile

/// An error from libsndfile, with the path and libsndfile's own words.
public struct SoundFileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "\(path): \(message)" }
}

/// A libsndfile handle. Not thread-safe: one thread at a time (the worker
/// thread while rendering, the main thread before and after).
public final class SoundFile: @unchecked Sendable {
    public enum Container: String, Sendable, CaseIterable { case wav, flac }
    public enum SampleFormat: String, Sendable, CaseIterable { case float32, int24, int16 }

    public let path: String
    public let channels: Int
    public let sampleRate: Double
    /// Frames in the file (reading); frames written so far (writing).
    public private(set) var frames: Int
    private var handle: OpaquePointer?

    /// Opens `path` for reading. [main-thread]
    public init(reading path: String) throws(SoundFileError) {
        var info = SF_INFO()
        guard let h = sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(path: path, message: Self.lastError(nil))
        }
        self.path = path
        handle = h
        channels = Int(info.channels)
        sampleRate = Double(info.samplerate)
        frames = Int(info.frames)
    }

    /// Creates (or truncates) `path` for writing. The header is rewritten
    /// after every write, so the file stays valid if the process dies.
    /// [main-thread]
    public init(writing path: String, container: Container, sampleFormat: SampleFormat,
                channels: Int, sampleRate: Double) throws(SoundFileError) {
        var info = SF_INFO()
        info.channels = Int32(channels)
        info.samplerate = Int32(sampleRate)
        let major = container == .wav ? SF_FORMAT_WAV : SF_FORMAT_FLAC
        let minor: Int32 = switch sampleFormat {
        case .float32: Int32(SF_FORMAT_FLOAT)
        case .int24: Int32(SF_FORMAT_PCM_24)
        case .int16: Int32(SF_FORMAT_PCM_16)
        }
        info.format = Int32(major) | minor
        guard sf_format_check(&info) != 0 else {
            throw SoundFileError(path: path, message: "\(container) cannot hold \(sampleFormat) samples")
        }
        guard let h = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw SoundFileError(path: path, message: Self.lastError(nil))
        }
        self.path = path
        handle = h
        self.channels = channels
        self.sampleRate = sampleRate
        frames = 0
        sf_command(h, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE))
        sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
    }

    deinit { try? close() }

    private static func lastError(_ h: OpaquePointer?) -> String {
        String(cString: sf_strerror(h))
    }

    /// Reads up to `count` interleaved frames; 0 at end of file. [owner thread]
    public func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) -> Int {
        guard let h = handle else { return 0 }
        return Int(sf_readf_float(h, buffer, sf_count_t(count)))
    }

    /// Moves the read position to `frame`. [owner thread]
    public func seek(toFrame frame: Int) throws(SoundFileError) {
        guard let h = handle else { return }
        if sf_seek(h, sf_count_t(frame), SEEK_SET) < 0 {
            throw SoundFileError(path: path, message: "cannot seek to frame \(frame): \(Self.lastError(h))")
        }
    }

    /// Writes `count` interleaved frames. [owner thread]
    public func write(_ buffer: UnsafePointer<Float>, frames count: Int) throws(SoundFileError) {
        guard let h = handle, count > 0 else { return }
        let n = Int(sf_writef_float(h, buffer, sf_count_t(count)))
        frames += max(n, 0)
        if n != count {
            throw SoundFileError(path: path, message: "short write (\(n) of \(count) frames): \(Self.lastError(h))")
        }
    }

    /// Finalises the header and closes. Idempotent. [owner thread]
    public func close() throws(SoundFileError) {
        guard let h = handle else { return }
        handle = nil
        if sf_close(h) != 0 {
            throw SoundFileError(path: path, message: "error closing: \(Self.lastError(nil))")
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
