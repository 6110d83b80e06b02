import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// Whole lines from a file descriptor (stdin at a prompt), polled from the
/// main loop: split by `LineSplitter` (64 KiB limit, CRLF accepted). At the
/// end of input the last, unterminated line comes with `ended`; after it,
/// a poll only waits out its timeout. [main-thread]
public struct LineReader {
    public let fd: Int32
    /// Whether the input has not ended yet.
    public private(set) var isOpen = true
    private var lines = LineSplitter()
    /// One read's worth, reused.
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    /// What a poll got.
    public enum Input {
        /// The whole lines read (maybe none: nothing came in time).
        case lines([LineSplitter.Line])
        /// The input ended; the lines it still held.
        case ended([LineSplitter.Line])
    }

    public init(fd: Int32 = STDIN_FILENO) { self.fd = fd }

    /// Waits up to `timeout` seconds for input and returns the whole lines read.
    public mutating func poll(timeout: Double) -> Input {
        guard isOpen else {
            usleep(UInt32(timeout * 1e6))
            return .lines([])
        }
        var fds = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&fds, 1, Int32(timeout * 1000)) > 0 else { return .lines([]) }
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return .lines([]) }
        if n <= 0 {
            isOpen = false
            return .ended(lines.finish())
        }
        return .lines(lines.feed(buffer[0..<n]))
    }
}
