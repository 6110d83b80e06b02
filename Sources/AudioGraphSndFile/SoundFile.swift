import AudioGraphCore
import CSndFile
import AudioGraphNodeAPI

/// An error from libsndfile, with the path and libsndfile's own words.
public struct SoundFileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "\(path): \(message)" }
}

/// A libsndfile handle. Not thread-safe: one thread at a time (the worker
/// thread while rendering, the main thread before and after).
public final class SoundFile: @unchecked Sendable {
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
    /// What the channels are: read from the file's channel map (or its
    /// container's standard order), or the layout written.
    public let layout: ChannelLayout
    /// A 5.1 whose surrounds are the back pair: reading, the file's own
    /// channel map says so (WAV mask 0x3F; a file without a map is read as
    /// side, as before); writing, the map written. See
    /// `StreamFormat.surroundsAreBack`.
    public let surroundsAreBack: Bool
    /// How channels move between the file's order and the project's; nil
    /// when they are the same. Reading: for each stream channel, the file
    /// channel it comes from. Writing: for each file channel, the stream
    /// channel it takes. `read` and `write` reorder.
    let channelOrder: [Int]?
    /// Interleaved frames reordered for `write`. [any-thread; the object's owning thread]
    private var reorderScratch: [Float] = []
    private var handle: OpaquePointer?

    /// Opens `path` for reading. A FIFO, device or directory is refused
    /// before it is opened, so nothing blocks. [main-thread]
    public init(reading path: String) throws(SoundFileError) {
        ThreadRole.check(.main)
        if let problem = FileChecks.readableFileProblem(path) { throw SoundFileError(path: path, message: problem) }
        // libsndfile is loaded the first time a graph reads or writes a file (CLazyLibs).
        if let missing = LazyLibrary.require(.sndfile, for: "reading sound files") { throw SoundFileError(path: path, message: missing) }
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
        var map = [Int32](repeating: 0, count: max(channels, 1))
        let mapped = map.withUnsafeMutableBytes { sf_command(h, Int32(SFC_GET_CHANNEL_MAP_INFO), $0.baseAddress, Int32($0.count)) } == SF_TRUE
        let vorbisOrder = info.format & Int32(SF_FORMAT_TYPEMASK) == Int32(SF_FORMAT_OGG)
        let ownMap = mapped && !map.contains(0)
        let positions = ownMap ? map
            : ChannelMap.containerDefault(channels: channels, vorbisOrder: vorbisOrder)
        if let positions, positions.count == channels {
            let (found, order, back) = ChannelMap.layout(ofFile: positions)
            layout = found
            surroundsAreBack = back && ownMap
            channelOrder = order == Array(0..<channels) ? nil : order
        } else {
            layout = .default(forChannels: channels)
            surroundsAreBack = false
            channelOrder = nil
        }
    }

    /// Creates (or truncates) `path` for writing. The header is rewritten
    /// after every write, so the file stays valid if the process dies. WAV
    /// is written as RF64 and downgraded to plain WAV on closing when it
    /// stayed under 4 GiB, so a long render never wraps its header. The
    /// layout is written as the file's channel map (a 5.1 WAV gets channel
    /// mask 0x60F, or 0x3F when `surroundsAreBack`) and channels are put in
    /// the container's order.
    /// - Parameter sampleFormat: nil for lossy codecs (and the container's default).
    /// [main-thread]
    public init(writing path: String, container: Container, sampleFormat: SampleFormat?,
                channels: Int, sampleRate: Double, layout: ChannelLayout? = nil,
                surroundsAreBack: Bool = false) throws(SoundFileError) {
        ThreadRole.check(.main)
        if path.utf8.contains(0) { throw SoundFileError(path: path, message: "the path contains a NUL character") }
        let sample = container.isLossy ? nil : sampleFormat ?? container.defaultSampleFormat
        if let problem = container.problem(sample: sample, channels: channels, sampleRate: sampleRate) {
            throw SoundFileError(path: path, message: problem)
        }
        if let missing = LazyLibrary.require(.sndfile, for: "writing sound files") { throw SoundFileError(path: path, message: missing) }
        var info = SF_INFO()
        info.channels = Int32(channels)
        info.samplerate = Int32(sampleRate)
        info.format = container.sndfileFormat(sample)
        // Opened here rather than by libsndfile (which opens with O_TRUNC):
        // a file that is already empty (a PendingOutput's temporary file)
        // is not truncated, because ext4 flushes a file truncated to 0 when
        // it is closed (auto_da_alloc), and the writer then did the
        // kernel's writeback of the whole render itself: ~1 % of a 10-minute
        // decode's CPU and more of its wall time (issue #24, perf). A file
        // with data in it is truncated as O_TRUNC would.
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw SoundFileError(path: path, message: "cannot open it for writing: \(FileChecks.errorText(errno))") }
        var st = stat()
        if fstat(fd, &st) == 0, st.st_size > 0, ftruncate(fd, 0) != 0 {
            let e = errno
            Glibc.close(fd)
            throw SoundFileError(path: path, message: "cannot empty it for writing: \(FileChecks.errorText(e))")
        }
        // sf_open_fd closes the descriptor on failure when asked to.
        guard let h = sf_open_fd(fd, Int32(SFM_WRITE), &info, Int32(SF_TRUE)) else {
            throw SoundFileError(path: path, message: Self.lastError(nil))
        }
        let layout = layout ?? .default(forChannels: channels)
        let back = surroundsAreBack && layout == .surround51
        let placement = ChannelMap.fileOrder(for: layout, channels: channels, container: container,
                                             surroundsAreSides: !back)
        if var positions = placement?.positions, positions.count > 2, !container.usesVorbisOrder, container != .flac {
            _ = positions.withUnsafeMutableBytes { sf_command(h, Int32(SFC_SET_CHANNEL_MAP_INFO), $0.baseAddress, Int32($0.count)) }
        }
        self.layout = layout
        self.surroundsAreBack = back
        channelOrder = placement.flatMap { $0.order == Array(0..<channels) ? nil : $0.order }
        self.path = path
        handle = h
        self.channels = channels
        self.sampleRate = sampleRate
        self.container = container
        frames = 0
        isLengthKnown = true
        declaredFrames = nil
        if container == .wav { sf_command(h, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, Int32(SF_TRUE)) }
        // Lossy streams carry no length header to update (and libsndfile's
        // Ogg writer breaks when asked to).
        if !container.isLossy { sf_command(h, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE)) }
        sf_command(h, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
    }

    deinit { try? close() }

    private static func lastError(_ h: OpaquePointer?) -> String {
        String(cString: sf_strerror(h))
    }

    /// Reads up to `count` interleaved frames; 0 at end of file or after an
    /// error (see `readError`). [any-thread; the object's owning thread]
    public func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) -> Int {
        guard let h = handle else { return 0 }
        let n = max(Int(sf_readf_float(h, buffer, sf_count_t(count))), 0)
        position += n
        if let order = channelOrder, n > 0 {
            // Into the project's channel order, a frame at a time.
            var frame = [Float](repeating: 0, count: channels)
            for f in 0..<n {
                let base = buffer + f * channels
                for c in 0..<channels { frame[c] = base[order[c]] }
                for c in 0..<channels { base[c] = frame[c] }
            }
        }
        return n
    }

    /// Why reading stopped early, once `read` has returned less than asked:
    /// libsndfile's decoding error, or a file shorter than its header says.
    /// nil at a clean end of file. [any-thread; the object's owning thread]
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

    /// Moves the read position to `frame`. [any-thread; the object's owning thread]
    public func seek(toFrame frame: Int) throws(SoundFileError) {
        guard let h = handle else { return }
        let at = sf_seek(h, sf_count_t(frame), SEEK_SET)
        if at < 0 {
            throw SoundFileError(path: path, message: "cannot seek to frame \(frame): \(Self.lastError(h))")
        }
        position = Int(at)
    }

    /// Writes `count` interleaved frames. [any-thread; the object's owning thread]
    public func write(_ buffer: UnsafePointer<Float>, frames count: Int) throws(SoundFileError) {
        guard let h = handle, count > 0 else { return }
        let n: Int
        if let order = channelOrder {
            // Into the file's channel order.
            if reorderScratch.count < count * channels { reorderScratch = [Float](repeating: 0, count: count * channels) }
            n = reorderScratch.withUnsafeMutableBufferPointer { out in
                guard let o = out.baseAddress else { return 0 }
                for f in 0..<count {
                    for c in 0..<channels { o[f * channels + c] = buffer[f * channels + order[c]] }
                }
                return Int(sf_writef_float(h, o, sf_count_t(count)))
            }
        } else {
            n = Int(sf_writef_float(h, buffer, sf_count_t(count)))
        }
        frames += max(n, 0)
        if n != count {
            throw SoundFileError(path: path, message: "short write (\(n) of \(count) frames): \(Self.lastError(h))")
        }
    }

    /// Whether libsndfile rewrites the header after every write, so that a
    /// file cut off by a crash reads whole up to its last write (on for
    /// lossless containers; lossy ones carry no length to update).
    /// [any-thread; the object's owning thread]
    public var updatesHeaderOnEveryWrite: Bool {
        get { !(container?.isLossy ?? true) && headerAuto }
        set {
            guard let h = handle, container?.isLossy == false else { return }
            headerAuto = newValue
            sf_command(h, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(newValue ? SF_TRUE : SF_FALSE))
        }
    }
    private var headerAuto = true

    /// Rewrites the header for the frames written so far (lossless
    /// containers). [any-thread; the object's owning thread]
    public func updateHeaderNow() {
        guard let h = handle, container?.isLossy == false else { return }
        sf_command(h, Int32(SFC_UPDATE_HEADER_NOW), nil, 0)
    }

    /// Finalises the header and closes. Idempotent. [any-thread; the object's owning thread]
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
