// The OSC errors a console shows: every `/agraph/error` the server sends
// is also kept here as a line, for the host to print as it prints its own
// console's errors (`agraph run --osc` does, on stderr). A flood of bad
// packets must not flood the console: at most `perWindow` lines a window,
// then one line counting the ones not shown.

import Synchronization

/// The OSC errors waiting to be shown, rate-limited.
///
/// Threading: `record`: [control-thread]; `take`: [any-thread] (the host's
/// main thread).
final class OSCErrorLog: Sendable {
    /// Lines shown per window at most.
    static let perWindow = 5
    /// The window, s.
    static let window = 1.0

    private struct State {
        var lines: [String] = []
        var windowStart = -Double.infinity
        var shownInWindow = 0
        var suppressed = 0
    }

    private let state = Mutex(State())

    /// One error sent to `sender` about `address`. `now`: monotonic seconds.
    func record(address: String, message: String, sender: String, now: Double) {
        state.withLock { s in
            if now - s.windowStart >= Self.window {
                Self.closeWindow(&s)
                s.windowStart = now
                s.shownInWindow = 0
            }
            guard s.shownInWindow < Self.perWindow else {
                s.suppressed += 1
                return
            }
            s.shownInWindow += 1
            s.lines.append(Self.printable("OSC from \(sender): \(address.isEmpty ? "" : address + ": ")\(message)"))
        }
    }

    /// The lines not taken yet (and the count of those not shown, once
    /// their window is over). `now`: monotonic seconds.
    func take(now: Double) -> [String] {
        state.withLock { s in
            if now - s.windowStart >= Self.window { Self.closeWindow(&s) }
            defer { s.lines.removeAll() }
            return s.lines
        }
    }

    private static func closeWindow(_ s: inout State) {
        guard s.suppressed > 0 else { return }
        s.lines.append("OSC: \(s.suppressed) more error\(s.suppressed == 1 ? "" : "s") in \(formatSeconds(window)) s not shown")
        s.suppressed = 0
    }

    /// `text` with control characters (a sender's escape sequences) shown
    /// as `\u{…}`, so nothing a packet holds drives the terminal.
    static func printable(_ text: String) -> String {
        var out = ""
        for u in text.unicodeScalars {
            if u.value < 0x20 || (0x7F...0x9F).contains(u.value) {
                out += "\\u{" + String(u.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(u)
            }
        }
        return out
    }

    private static func formatSeconds(_ s: Double) -> String {
        s == s.rounded() ? String(Int(s)) : String(s)
    }
}
