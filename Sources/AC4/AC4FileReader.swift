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
/// A pure value. [any thread]
public struct AC4FileReader: Sequence, Sendable {
    /// The file read.
    public let path: String
    /// Its contents.
    public let bytes: [UInt8]

    /// Reads `path` whole; throws `AC4FileError` when it cannot be opened or
    /// read, or is a directory or other non-regular file.
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

    static func readFile(_ path: String) throws(AC4FileError) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        if fd < 0 {
            let e = errno
            throw AC4FileError(path: path, reason: "cannot open: \(message(e))", errorNumber: e)
        }
        defer { close(fd) }
        var st = stat()
        if fstat(fd, &st) != 0 {
            let e = errno
            throw AC4FileError(path: path, reason: "cannot stat: \(message(e))", errorNumber: e)
        }
        let kind = st.st_mode & S_IFMT
        if kind == S_IFDIR { throw AC4FileError(path: path, reason: "is a directory, not an AC-4 file") }
        if kind != S_IFREG { throw AC4FileError(path: path, reason: "not a regular file") }
        var result: [UInt8] = []
        result.reserveCapacity(Int(st.st_size))
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw AC4FileError(path: path, reason: "read error: \(message(e))", errorNumber: e)
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }
}
