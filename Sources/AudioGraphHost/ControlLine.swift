// The live console's input: a bounded, linear line splitter (bytes in,
// complete lines out) and the control-line parser (a line in, a typed
// command out). Both are free of JACK and I/O, so they are unit-tested and
// fuzzed on their own; `agraph run` feeds stdin through them and executes
// the commands on its `RunningGraph`.

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Lines

/// Splits a byte stream into lines, however the bytes arrive in chunks.
///
/// - A line ends at LF; a CR right before the LF is dropped, so CRLF and LF
///   line ends read the same (even with the CR and LF in different chunks).
/// - Only newly fed bytes are scanned: the work is linear in the input,
///   whatever the chunk sizes.
/// - A line longer than `limit` bytes (CR and LF not counted) is reported
///   once, as `.tooLong` with its length, when its LF (or the end of input)
///   arrives. Its bytes are counted and dropped, never buffered: memory
///   stays within `limit` + 1 bytes however long the line is.
/// - Bytes that are not UTF-8 become U+FFFD in the line's text.
///
/// [any-thread; the object's owning thread]
public struct LineSplitter: Sendable {
    /// The default line limit: 64 KiB.
    public static let defaultLimit = 65_536

    /// One line out of the splitter.
    public enum Line: Sendable, Equatable {
        /// A complete line, without its line end.
        case text(String)
        /// A line longer than the limit, dropped; `bytes` is its length
        /// (without the line end).
        case tooLong(bytes: Int, limit: Int)

        /// The error to show for a dropped line, or nil for text.
        public var errorMessage: String? {
            switch self {
            case .text: nil
            case .tooLong(let bytes, let limit): "line too long: \(bytes) bytes, limit \(limit)"
            }
        }
    }

    /// The longest line accepted, in bytes.
    public let limit: Int
    /// The current line so far (at most `limit` + 1 bytes: a trailing CR may
    /// wait for its LF), unless it is being dropped. Its capacity is kept
    /// from line to line, so it stays under twice that.
    private var pending: [UInt8] = []
    /// Whether the current line went over the limit and is being dropped.
    private var dropping = false
    /// The length of the line being dropped so far, CRs included.
    private var droppedBytes = 0
    /// Whether the last byte of the line being dropped was a CR.
    private var droppedEndsInCR = false

    /// `limit`: the longest line accepted, in bytes (at least 1).
    public init(limit: Int = LineSplitter.defaultLimit) {
        self.limit = max(limit, 1)
    }

    /// Whether a partial line is waiting for its line end.
    public var hasPartialLine: Bool { dropping || !pending.isEmpty }

    /// Feeds the next bytes; returns the lines they complete, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [Line] {
        if let lines = bytes.withContiguousStorageIfAvailable({ feed(buffer: $0) }) { return lines }
        return Array(bytes).withUnsafeBufferPointer { feed(buffer: $0) }
    }

    /// Feeds the next bytes; returns the lines they complete, in order.
    public mutating func feed(buffer bytes: UnsafeBufferPointer<UInt8>) -> [Line] {
        var lines: [Line] = []
        guard let base = bytes.baseAddress else { return lines }
        var start = 0
        while start < bytes.count {
            // memchr: fast in debug builds too.
            let newline = memchr(base + start, 0x0A, bytes.count - start)
                .map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base }
            take(UnsafeBufferPointer(rebasing: bytes[start..<(newline ?? bytes.count)]))
            guard let newline else { break }
            lines.append(endLine())
            start = newline + 1
        }
        return lines
    }

    /// The end of the input: returns the last line if it had no line end.
    public mutating func finish() -> [Line] {
        hasPartialLine ? [endLine()] : []
    }

    /// Adds bytes of the current line (no LF among them).
    private mutating func take(_ piece: UnsafeBufferPointer<UInt8>) {
        guard !piece.isEmpty else { return }
        if !dropping && pending.count + piece.count > limit + 1 {
            // Over the limit even if the last byte turns out to be a CR
            // before an LF: drop the line from here on.
            dropping = true
            droppedBytes = pending.count
            pending.removeAll(keepingCapacity: true)
        }
        if dropping {
            droppedBytes += piece.count
            droppedEndsInCR = piece.last == UInt8(ascii: "\r")
        } else {
            pending.append(contentsOf: piece)
        }
    }

    /// Completes the current line and starts the next one.
    private mutating func endLine() -> Line {
        defer {
            pending.removeAll(keepingCapacity: true)
            dropping = false
            droppedBytes = 0
            droppedEndsInCR = false
        }
        if dropping {
            return .tooLong(bytes: droppedBytes - (droppedEndsInCR ? 1 : 0), limit: limit)
        }
        var count = pending.count
        if pending.last == UInt8(ascii: "\r") { count -= 1 }
        if count > limit { return .tooLong(bytes: count, limit: limit) }
        return .text(String(decoding: pending[..<count], as: UTF8.self))
    }
}

// MARK: - Commands

/// A command of the live console (`agraph run`'s stdin).
public enum ControlCommand: Sendable, Equatable {
    /// `set NODE.PARAM VALUE`: VALUE is a number, true/false or a choice's
    /// option name, resolved against the parameter by the running graph.
    /// The address is parsed here, once (`ParameterAddress(parsing:)`).
    case set(address: ParameterAddress, value: String)
    /// `get NODE.PARAM`
    case get(address: ParameterAddress)
    /// `seek [NODE] SECONDS`: nil node means every seekable source.
    /// `seconds` is finite and ≥ 0.
    case seek(node: String?, seconds: Double)
    case pause
    case play
    case status
    /// `quit` or `exit`
    case quit
    case help
    /// `playlist NODE add|insert|remove|move|next|clear|list …`; a relative
    /// path is as typed (the control surface resolves it against the
    /// working directory).
    case playlist(node: String, PlaylistCommand)
    /// `reload [FILE]`: hot reload of the running graph's file (or FILE),
    /// run by the host (`RunningGraph.reload`), not the control surface.
    case reload(file: String?)
}

/// Why a control line is not a command, in words for the user.
public struct ControlLineError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Parses the live console's command lines. [any-thread]
public enum ControlLine {
    /// The commands, one a line, as `help` shows them.
    public static let help = """
        set NODE.PARAM VALUE   change a live parameter (e.g. set mix.gains[1] -6; set g.mute true)
        get NODE.PARAM         show a parameter's value
        seek [NODE] SECONDS    move a file source (or every seekable source)
        pause | play           hold the sources and output silence | go on
        status                 position, peak levels, xruns, underruns, DSP load
        playlist NODE add PATH [START [END [GAIN]]]          append an item (END "-": to its end; GAIN in dB)
        playlist NODE insert INDEX PATH [START [END [GAIN]]] put an item at INDEX (0 = first)
        playlist NODE remove INDEX | move FROM TO            take out or move an item
        playlist NODE next | clear | list                    skip what plays | empty the list | show it
        reload [FILE]          load the graph file again (or FILE) while playing: kept nodes keep their state
        quit                   stop cleanly (so does Ctrl-C)
        """

    /// The longest part of a line quoted back in an error message.
    static let quoteLimit = 40

    /// The command on `line`, or nil for a blank line. Words are separated
    /// by whitespace; leading and trailing whitespace (a CR included) is
    /// ignored.
    public static func parse(_ line: String) throws(ControlLineError) -> ControlCommand? {
        // A NUL is no separator: "-3\0garbage" must not read as -3.
        if let nul = line.utf8.firstIndex(of: 0) {
            let column = line.utf8.distance(from: line.utf8.startIndex, to: nul) + 1
            throw ControlLineError("the line has a NUL byte at column \(column); nothing was done")
        }
        let words = line.split(whereSeparator: \.isWhitespace)
        guard let command = words.first else { return nil }
        let arguments = words.dropFirst()
        switch command {
        case "set":
            guard arguments.count == 2 else {
                throw ControlLineError("set takes a parameter and a value: set NODE.PARAM VALUE")
            }
            return .set(address: try address(arguments[arguments.startIndex]),
                        value: String(arguments[arguments.startIndex + 1]))
        case "get":
            guard arguments.count == 1 else { throw ControlLineError("get takes a parameter: get NODE.PARAM") }
            return .get(address: try address(arguments[arguments.startIndex]))
        case "seek":
            guard arguments.count == 1 || arguments.count == 2 else {
                throw ControlLineError("seek takes a position in seconds: seek [NODE] SECONDS")
            }
            let node = arguments.count == 2 ? String(arguments[arguments.startIndex]) : nil
            return .seek(node: node, seconds: try seconds(arguments[arguments.endIndex - 1]))
        case "pause": try noArguments(command, arguments); return .pause
        case "play": try noArguments(command, arguments); return .play
        case "status": try noArguments(command, arguments); return .status
        case "quit", "exit": try noArguments(command, arguments); return .quit
        case "help": return .help
        case "playlist": return try PlaylistLine.parse(line)
        case "reload":
            guard arguments.count <= 1 else { throw ControlLineError("reload takes at most a file: reload [FILE]") }
            return .reload(file: arguments.first.map(String.init))
        default:
            throw ControlLineError("unknown command '\(quoted(command))'; type 'help'")
        }
    }

    private static func noArguments(_ command: Substring, _ arguments: ArraySlice<Substring>) throws(ControlLineError) {
        guard arguments.isEmpty else { throw ControlLineError("'\(command)' takes no arguments") }
    }

    /// `NODE.PARAM` or `NODE.PARAM[i]`, parsed (the one parser,
    /// `ParameterAddress(parsing:)`); the running graph resolves it.
    private static func address(_ word: Substring) throws(ControlLineError) -> ParameterAddress {
        do { return try ParameterAddress(parsing: String(word)) } catch { throw ControlLineError(error.message) }
    }

    /// A position in seconds: a finite number ≥ 0.
    private static func seconds(_ word: Substring) throws(ControlLineError) -> Double {
        guard let value = number(word), !value.isNaN else {
            throw ControlLineError("seek: '\(quoted(word))' is not a number of seconds: seek [NODE] SECONDS")
        }
        guard value.isFinite else {
            throw ControlLineError("seek: '\(quoted(word))' is not a finite number of seconds")
        }
        guard value >= 0 else {
            throw ControlLineError("seek: the position must not be negative (got \(quoted(word)) s)")
        }
        return value == 0 ? 0 : value  // -0 reads as 0
    }

    /// `word` as a number, or nil. Swift's `Double(_:)` reads its text as a
    /// C string and stops at a NUL ("-3\0garbage" reads -3): a word with a
    /// NUL in it is no number here. [any-thread]
    public static func number(_ word: some StringProtocol) -> Double? {
        guard !word.utf8.contains(0) else { return nil }
        return Double(word)
    }

    /// `text`, shortened with an ellipsis when longer than `quoteLimit`
    /// characters.
    static func quoted(_ text: Substring) -> String {
        let prefix = text.prefix(quoteLimit)
        return prefix.endIndex == text.endIndex ? String(text) : String(prefix) + "…"
    }
}
