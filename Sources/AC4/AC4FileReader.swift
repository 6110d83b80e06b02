#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an AC-4 file could not be read. `description` names the file and the
/// reason ("ChannelCheck.ac4: cannot open: No such file or directory").
public struct AC4FileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What went wrong, in words.
    public var reason: String
    /// The C library's error number, when one applies.
    public var errorNumber: Int32?

    public init(path: String, reason: String, errorNumber: Int32? = nil) {
        self.path = path
        self.reason = reason
        self.errorNumber = errorNumber
    }

    public var description: String { "\(path): \(reason)" }
}

/// An `.ac4` file read whole into memory (such files are small: about
/// 40 kB per second at 320 kb/s), iterated as sync frames.
///
/// ```swift
/// let file = try AC4FileReader(path: "ChannelCheck.ac4")
/// let result = file.readAll()      // frames + statistics
/// for frame in file { … }          // or iterate
/// ```
/// A pure value. [any-thread]
public struct AC4FileReader: Sequence, Sendable {
    /// The file read.
    public let path: String
    /// Its contents.
    public let bytes: [UInt8]

    /// Reads `path` whole; throws `AC4FileError` when it cannot be opened or
    /// read, is a directory or other non-regular file (a FIFO is refused
    /// before opening, so this never waits), or is larger than
    /// `maximumFileSize`.
    public init(path: String) throws(AC4FileError) {
        self.path = path
        self.bytes = try Self.readFile(path)
    }

    /// A reader over the file's bytes.
    public func makeIterator() -> AC4SyncFrameReader { AC4SyncFrameReader(bytes) }

    /// Every frame of the file and what the reader counted.
    public func readAll() -> AC4ReadResult { AC4SyncFrameReader.readAll(bytes) }

    private static func message(_ err: Int32) -> String {
        guard let s = strerror(err) else { return "error \(err)" }
        return String(cString: s)
    }

    /// The largest file the reader takes into memory: 1 GiB. AC-4 runs at
    /// about 40 kB per second (320 kb/s), so that is over 7 hours even at
    /// 1 Mb/s; anything larger is refused before reading.
    public static let maximumFileSize = 1 << 30

    /// "is a named pipe (FIFO)": what a non-regular file is, for messages.
    static func kindDescription(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "is a directory"
        case S_IFIFO: "is a named pipe (FIFO)"
        case S_IFCHR: "is a character device"
        case S_IFBLK: "is a block device"
        case S_IFSOCK: "is a socket"
        default: "is not a regular file"
        }
    }

    /// Refuses anything but a regular file of at most `limit` bytes.
    static func check(_ st: stat, _ path: String, limit: Int) throws(AC4FileError) {
        let kind = st.st_mode & S_IFMT
        if kind == S_IFDIR { throw AC4FileError(path: path, reason: "is a directory, not an AC-4 file") }
        if kind != S_IFREG {
            throw AC4FileError(path: path, reason: "\(kindDescription(st.st_mode)), not a regular file: an AC-4 input must be a regular file (it is read whole before use)")
        }
        if Int(st.st_size) > limit { throw tooLarge(path, size: "is \(st.st_size) bytes", limit: limit) }
    }

    static func tooLarge(_ path: String, size: String, limit: Int) -> AC4FileError {
        let gib = limit % (1 << 30) == 0 ? "\(limit >> 30) GiB (\(limit) bytes)" : "\(limit) bytes"
        return AC4FileError(path: path, reason: "\(size), more than the \(gib) an AC-4 file may have: it is read whole into memory, and AC-4 takes about 40 kB per second of audio")
    }

    /// Reads `path` whole. A FIFO, device or socket is refused before it is
    /// opened (opening a FIFO would wait for a writer), and so is a file
    /// over `limit` bytes. The type and size are checked again on the open
    /// descriptor, which is opened non-blocking in case the path was
    /// replaced in between; blocking mode is restored for reading. [any-thread]
    static func readFile(_ path: String, limit: Int = maximumFileSize) throws(AC4FileError) -> [UInt8] {
        var st = stat()
        if stat(path, &st) != 0 {
            let e = errno
            throw AC4FileError(path: path, reason: "cannot open: \(message(e))", errorNumber: e)
        }
        try check(st, path, limit: limit)
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } while fd < 0 && errno == EINTR
        if fd < 0 {
            let e = errno
            throw AC4FileError(path: path, reason: "cannot open: \(message(e))", errorNumber: e)
        }
        defer { close(fd) }
        if fstat(fd, &st) != 0 {
            let e = errno
            throw AC4FileError(path: path, reason: "cannot stat: \(message(e))", errorNumber: e)
        }
        try check(st, path, limit: limit)
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 {
            let e = errno
            throw AC4FileError(path: path, reason: "cannot set blocking mode: \(message(e))", errorNumber: e)
        }
        var result: [UInt8] = []
        result.reserveCapacity(Int(st.st_size))
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            // Never more than limit + 1 bytes, even if the file grows while read.
            let want = Swift.min(chunk.count, limit + 1 - result.count)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw AC4FileError(path: path, reason: "read error: \(message(e))", errorNumber: e)
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
            if result.count > limit { throw tooLarge(path, size: "grew past \(limit) bytes while read", limit: limit) }
        }
        return result
    }
}
