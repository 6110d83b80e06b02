#if canImport(Glibc)
import Glibc
#endif

/// Where the live application's text goes: replies and playlist events on
/// one stream (stdout), messages, errors and the status line on the other
/// (stderr). `standard` writes them unbuffered to file descriptors 1 and 2;
/// a test gives closures that keep them. [main-thread | worker-thread | owner-thread |
/// control-thread]
public struct TextOutput: Sendable {
    /// Writes text as it is to the reply stream.
    public var writeOut: @Sendable (String) -> Void
    /// Writes text as it is to the message stream.
    public var writeErr: @Sendable (String) -> Void
    /// Whether the message stream is a terminal (the status line is then
    /// redrawn in place).
    public var isTerminal: Bool

    public init(writeOut: @escaping @Sendable (String) -> Void, writeErr: @escaping @Sendable (String) -> Void,
                isTerminal: Bool = false) {
        self.writeOut = writeOut
        self.writeErr = writeErr
        self.isTerminal = isTerminal
    }

    /// Stdout and stderr, written unbuffered.
    public static let standard = TextOutput(
        writeOut: { writeAll(STDOUT_FILENO, $0) },
        writeErr: { writeAll(STDERR_FILENO, $0) },
        isTerminal: isatty(STDERR_FILENO) == 1)

    /// One line on the message stream (a newline added unless it ends with one).
    public func error(_ line: String) {
        writeErr(line.hasSuffix("\n") ? line : line + "\n")
    }

    /// Writes all of `text` to `fd`, again after EINTR; stops at another error.
    public static func writeAll(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buf in buf.baseAddress.map { write(fd, $0 + offset, buf.count - offset) } ?? 0 }
            if n <= 0 { if errno == EINTR { continue }; return }
            offset += n
        }
    }
}
