import AudioGraphCore
import CSndFile
import GraphFile

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
    /// Frames in the file (reading; 0 when the file does not say, see
    /// `isLengthKnown`); frames written so far (writing).
    public private(set) var frames: Int
    /// Reading: whether the file states its length (a FLAC whose writer
    /// never finished has no total).
    public let isLengthKnown: Bool
    /// Reading: the frames the file's header declares, when that is more
    /// than the data holds (a truncated WAV: libsndfile plays what is there
    /// and says nothing). nil when the header and the data agree.
    public let declaredFrames: Int?
    /// Reading: frames read so far (the position after the last read).
    public private(set) var position = 0
    /// The container written (writing only).
    public let container: Container?
    private var handle: OpaquePointer?

    /// Opens `path` for reading. A FIFO, device or directory is refused
    /// before it is opened, so nothing blocks. [main-thread]
    public init(reading path: String) throws(SoundFileError) {
        if let problem = FileChecks.readableFileProblem(path) { throw SoundFileError(path: path, message: problem) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw SoundFileError(path: path, message: FileChecks.errorText(errno)) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(fd)
            throw SoundFileError(path: path, message: "not a regular file")
        }
        // Reads block normally from here (a regular file never blocks anyway).
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var info = SF_INFO()
        guard let h = sf_open_fd(fd, Int32(SFM_READ), &info, Int32(SF_TRUE)) else {
            // sf_open_fd closes the descriptor on failure when asked to.
            throw SoundFileError(path: path, message: Self.lastError(nil))
        }
        self.path = path
        handle = h
        channels = Int(info.channels)
        sampleRate = Double(info.samplerate)
        isLengthKnown = info.frames >= 0 && info.frames < Int64.max
        frames = isLengthKnown ? Int(info.frames) : 0
        container = nil
        declaredFrames = Self.declaredWAVFrames(path: path, actualFrames: frames, channels: channels)
    }

    /// Creates (or truncates) `path` for writing. The header is rewritten
    /// after every write, so the file stays valid if the process dies. WAV
    /// is written as RF64 and downgraded to plain WAV on closing when it
    /// stayed under 4 GiB, so a long render never wraps its header.
    /// [main-thread]
    public init(writing path: String, container: Container, sampleFormat: SampleFormat,
                channels: Int, sampleRate: Double) throws(SoundFileError) {
        if path.utf8.contains(0) { throw SoundFileError(path: path, message: "the path contains a NUL character") }
        var info = SF_INFO()
        info.channels = Int32(channels)
        info.samplerate = Int32(sampleRate)
        let major = container == .wav ? SF_FORMAT_RF64 : SF_FORMAT_FLAC
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
        self.container = container
        frames = 0
        isLengthKnown = true
        declaredFrames = nil
        if container == .wav { sf_command(h, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, Int32(SF_TRUE)) }
        sf_command(h, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE))
        sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
    }

    deinit { try? close() }

    private static func lastError(_ h: OpaquePointer?) -> String {
        String(cString: sf_strerror(h))
    }

    /// Reads up to `count` interleaved frames; 0 at end of file or after an
    /// error (see `readError`). [owner thread]
    public func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) -> Int {
        guard let h = handle else { return 0 }
        let n = max(Int(sf_readf_float(h, buffer, sf_count_t(count))), 0)
        position += n
        return n
    }

    /// Why reading stopped early, once `read` has returned less than asked:
    /// libsndfile's decoding error, or a file shorter than its header says.
    /// nil at a clean end of file. [owner thread]
    public var readError: String? {
        guard let h = handle else { return nil }
        let seconds = formatFixed(Double(position) / max(sampleRate, 1), 3)
        if sf_error(h) != 0 {
            return "decoding error at frame \(position) (\(seconds) s): \(Self.lastError(h))"
        }
        if let declared = declaredFrames, position < declared {
            return "the file ends at frame \(position) (\(seconds) s) but its header declares \(declared) frames: it is truncated"
        }
        if isLengthKnown, position < frames {
            return "the data ends at frame \(position) (\(seconds) s) of \(frames): the file is truncated or damaged"
        }
        return nil
    }

    /// Moves the read position to `frame`. [owner thread]
    public func seek(toFrame frame: Int) throws(SoundFileError) {
        guard let h = handle else { return }
        let at = sf_seek(h, sf_count_t(frame), SEEK_SET)
        if at < 0 {
            throw SoundFileError(path: path, message: "cannot seek to frame \(frame): \(Self.lastError(h))")
        }
        position = Int(at)
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

    /// For a RIFF WAV file whose `data` chunk declares more bytes than the
    /// file holds: the declared frames. nil for other files, for streamed
    /// WAV (size 0 or 0xFFFFFFFF, and RF64) and when the sizes agree.
    static func declaredWAVFrames(path: String, actualFrames: Int, channels: Int) -> Int? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        var header = [UInt8](repeating: 0, count: 65536)
        let n = header.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
        fseeko(f, 0, SEEK_END)
        let fileSize = Int(ftello(f))
        guard n >= 12, header[0..<4] == [0x52, 0x49, 0x46, 0x46][...], header[8..<12] == [0x57, 0x41, 0x56, 0x45][...] else {
            return nil
        }
        func le32(_ i: Int) -> Int {
            Int(header[i]) | Int(header[i + 1]) << 8 | Int(header[i + 2]) << 16 | Int(header[i + 3]) << 24
        }
        var blockAlign = 0
        var p = 12
        while p + 8 <= n {
            let id = header[p..<(p + 4)]
            let size = le32(p + 4)
            if id == [0x66, 0x6D, 0x74, 0x20][...], p + 8 + 14 <= n {            // "fmt "
                blockAlign = Int(header[p + 8 + 12]) | Int(header[p + 8 + 13]) << 8
            } else if id == [0x64, 0x61, 0x74, 0x61][...] {                     // "data"
                guard size != 0, size != 0xFFFF_FFFF, blockAlign > 0 else { return nil }
                let available = fileSize - (p + 8)
                guard size > available else { return nil }
                let declared = size / blockAlign
                return declared > actualFrames ? declared : nil
            }
            p += 8 + size + (size & 1)
        }
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#endif
