#if canImport(Glibc)
import Glibc
#endif

/// Watches a file by its modification time and size, polled from the main
/// loop (a non-realtime thread). A file that goes away is said once; when
/// it comes back, it counts as changed. [main-thread]
public struct FileWatcher {
    public let path: String
    private var last: (Int, Int, Int)?
    /// The file was gone at the last poll.
    private var gone = false

    public enum Change { case unchanged, changed, vanished }

    public init(path: String) {
        self.path = path
        last = Self.stamp(path)
    }

    static func stamp(_ path: String) -> (Int, Int, Int)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec), Int(st.st_size))
    }

    /// What happened to the file since the last poll: changed (or back
    /// after it was gone), gone (said once until it comes back), or nothing.
    public mutating func poll() -> Change {
        guard let now = Self.stamp(path) else {
            if gone { return .unchanged }
            gone = true
            return .vanished
        }
        defer { last = now }
        if gone {
            gone = false
            return .changed
        }
        guard let last else { return .unchanged }
        return last != now ? .changed : .unchanged
    }
}
