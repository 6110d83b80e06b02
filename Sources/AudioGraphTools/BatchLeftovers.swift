import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// The temporary outputs of `agraph render --each`, and what a batch that
/// died without cleaning up (kill -9, a power cut) left of them.
///
/// A render writes `DIR/.song.wav.partial-HOST-PID` (HOST: this machine's
/// name, PID: the batch process), through the render's own
/// `….agraph-XXXXXX.part`. The next batch over the same folder removes
/// such files whose HOST is this machine and whose PID no longer runs, and
/// says so; files of another machine (a job array sharing the folder) or
/// of a batch still running are left alone. [main-thread]
public enum BatchLeftovers {
    /// This machine's name as it goes into a file name: letters, digits,
    /// `.`, `_` and `-` kept, anything else `_`.
    public static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return safe.isEmpty ? "localhost" : safe
    }()

    /// The temporary name of the output `name` in `directory`, for the
    /// batch process `pid`.
    public static func temporary(_ name: String, in directory: String, pid: pid_t = getpid()) -> String {
        directory + "/.\(name).partial-\(host)-\(pid)"
    }

    /// A leftover's batch: the PID in `.NAME.partial-HOST-PID` (optionally
    /// followed by a render's `.agraph-XXXXXX.part`), when HOST is this
    /// machine; nil for any other name.
    public static func owner(ofName name: String) -> pid_t? {
        guard name.hasPrefix("."), let m = name.firstMatch(of: #/\.partial-(.+)-([0-9]{1,10})(\.agraph-[A-Za-z0-9]{6}\.part)?$/#),
              String(m.output.1) == host, let pid = pid_t(m.output.2), pid > 0 else { return nil }
        return pid
    }

    /// Removes the leftovers in `directory` of batches of this machine that
    /// no longer run; returns the names removed.
    public static func removeDead(in directory: String) -> [String] {
        guard let folder = opendir(directory) else { return [] }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            names.append(name)
        }
        closedir(folder)
        var removed: [String] = []
        for name in names.sorted() {
            guard let pid = owner(ofName: name), pid != getpid(), !isRunning(pid) else { continue }
            var st = stat()
            // Regular files only: a folder or a link of that name is not ours.
            guard lstat(directory + "/" + name, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            if unlink(directory + "/" + name) == 0 { removed.append(name) }
        }
        return removed
    }

    /// Whether a process `pid` exists (one of another user counts too).
    public static func isRunning(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// The environment variable that tells a render its batch's PID.
    public static let parentVariable = "AGRAPH_BATCH_PARENT"
}
