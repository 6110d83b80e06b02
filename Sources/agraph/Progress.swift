import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// Progress on stderr, for `agraph render` and `agraph analyze`, counted in
/// seconds of audio.
///
/// - On a terminal (isatty(2)) with the length known: a bar redrawn ten
///   times a second, `[#######-------]  42%  16.1 / 38.0 s  85x  0:03 left`.
/// - On a terminal without a length: `16.1 s  85x`.
/// - Not on a terminal: a plain line every 2 s,
///   `progress: 42% (16.1 of 38.0 s), 85x real time, 3 s left`.
///
/// [main-thread]
final class ProgressBar {
    /// Shown before the bar (e.g. "analysis 1/1"); may change between updates.
    var label: String
    /// Seconds of audio in all; nil when not known.
    var total: Double?
    let enabled: Bool
    let isTerminal: Bool
    private var started = MonotonicClock.seconds()
    private var lastPrint: Double
    private var drew = false
    private let interval: Double

    init(label: String = "", total: Double?, enabled: Bool, isTerminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        self.total = total.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        self.enabled = enabled
        self.isTerminal = isTerminal
        interval = isTerminal ? 0.1 : 2.0
        lastPrint = started
    }

    /// Starts counting speed and time left again (a new pass).
    func restart(label: String, total: Double?) {
        if drew && isTerminal { writeStderr("\n") }
        drew = false
        self.label = label
        self.total = total.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        started = MonotonicClock.seconds()
        lastPrint = started
    }

    /// `done` seconds of audio processed so far.
    func update(_ done: Double) {
        guard enabled else { return }
        let now = MonotonicClock.seconds()
        guard now - lastPrint >= interval else { return }
        lastPrint = now
        let text = Self.line(label: label, done: done, total: total, elapsed: now - started, terminal: isTerminal)
        if isTerminal {
            writeStderr("\r" + text + "\u{1B}[K")
            drew = true
        } else {
            writeStderr(text + "\n")
        }
    }

    /// Ends the bar's line (a terminal only).
    func finish() {
        if enabled && isTerminal && drew { writeStderr("\n") }
        drew = false
    }

    /// One progress line (without "\r" or "\n"). [any-thread]
    static func line(label: String, done: Double, total: Double?, elapsed: Double, terminal: Bool) -> String {
        let speed = done / max(elapsed, 1e-9)
        let prefix = label.isEmpty ? "" : label + "  "
        guard let total else {
            return terminal
                ? "\(prefix)\(formatFixed(done, 1)) s  \(formatFixed(speed, 0))x"
                : "progress: \(prefix)\(formatFixed(done, 1)) s, \(formatFixed(speed, 0))x real time"
        }
        let fraction = min(max(done / total, 0), 1)
        let percent = Int((fraction * 100).rounded(.down))
        let left = speed > 0 ? (total - min(done, total)) / speed : .infinity
        if terminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
            return "\(prefix)\(bar) \(percent)%  \(formatFixed(done, 1)) / \(formatFixed(total, 1)) s  \(formatFixed(speed, 0))x  \(clock(left)) left"
        }
        return "progress: \(prefix)\(percent)% (\(formatFixed(done, 1)) of \(formatFixed(total, 1)) s), \(formatFixed(speed, 0))x real time, \(clock(left)) left"
    }

    /// `m:ss` (or `h:mm:ss`); "--:--" when not known.
    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e7 else { return "--:--" }
        let s = Int(seconds.rounded(.up))
        let two = { (v: Int) in v < 10 ? "0\(v)" : "\(v)" }
        return s >= 3600 ? "\(s / 3600):\(two(s / 60 % 60)):\(two(s % 60))" : "\(s / 60):\(two(s % 60))"
    }
}
