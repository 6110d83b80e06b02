import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

/// libmysofa's reading of a SOFA file tried first in a bounded process of
/// its own, `agraph-sofa-check` (Sources/agraph-sofa-check): `HRTFSet`
/// loads a file in-process only when that read and checked it.
///
/// libmysofa 1.3.1 reads what a file's HDF5 structures declare, not what
/// the file holds: a 72 KB set with one attribute's dataspace changed to
/// 0x20000001 elements keeps `mysofa_load` busy for minutes, a small file
/// declaring huge chunked dimensions makes it allocate up to 4 GiB, and a
/// crash in it would end the whole process (in `agraph run`, a reload would
/// kill the live graph). The checker runs under RLIMIT_AS 1 GiB and
/// RLIMIT_CPU 10 s, is killed (SIGKILL) after `timeout` seconds of wall
/// time, and dies with the thread that started it.
///
/// Started with `posix_spawn` (no fork: the process may run a JACK client),
/// with an empty signal mask and default dispositions, in a process group
/// of its own (a terminal's Ctrl-C is agraph's to handle), stdin, stdout
/// and stderr on /dev/null.
///
/// The checker is `AGRAPH_SOFA_CHECK` when that is set, else
/// `agraph-sofa-check` beside the running executable (where SwiftPM builds
/// it, beside `agraph` and the test runner). When neither exists (the fuzz
/// build, which builds its target alone), files are loaded in-process
/// unchecked, as before. [main-thread | worker-thread | owner-thread | control-thread]
public enum SOFACheck {
    /// Wall-clock seconds the checker is given.
    public static let timeout = 5.0

    /// The checker's path, or nil when there is none (the file is then
    /// loaded in-process unchecked). Resolved once. [any-thread]
    public static let executable: String? = {
        if let given = getenv("AGRAPH_SOFA_CHECK"), given.pointee != 0 {
            return String(cString: given)
        }
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let exe = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = exe.lastIndex(of: "/") else { return nil }
        let path = String(exe[..<slash]) + "/agraph-sofa-check"
        return access(path, X_OK) == 0 ? path : nil
    }()

    /// Why libmysofa cannot read `path` (the reason, without the path), or
    /// nil when the checker read and checked it, or there is no checker.
    /// Blocks up to `timeout` seconds. [main-thread | worker-thread]
    public static func problem(path: String) -> String? {
        ThreadRole.check(.main, .worker)
        guard let checker = executable else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        // The spawning thread may block SIGINT/SIGTERM/SIGHUP (ThreadSignals)
        // and the process ignore SIGPIPE: the checker gets neither.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGXCPU, SIGSEGV, SIGBUS, SIGABRT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)

        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(checker), strdup(path), nil]
        defer { argv.forEach { free($0) } }
        var child = pid_t()
        let rc = posix_spawn(&child, checker, &actions, &attributes, argv, environ)
        guard rc == 0 else {
            return "cannot start \(checker) to read it safely first: \(String(cString: strerror(rc)))"
        }

        // Waited for with short sleeps: a good set takes a few milliseconds.
        let started = MonotonicClock.seconds()
        var pause: UInt32 = 500
        var status: Int32 = 0
        while true {
            let waited = waitpid(child, &status, WNOHANG)
            if waited == child { break }
            if waited < 0 {
                if errno == EINTR { continue }
                return nil   // reaped elsewhere (SIGCHLD ignored): its verdict is lost
            }
            if MonotonicClock.seconds() - started > timeout {
                kill(child, SIGKILL)
                while waitpid(child, &status, 0) < 0 && errno == EINTR {}
                return "libmysofa did not finish reading it within \(Int(timeout)) s "
                    + "(its HDF5 structures declare far more than the file holds)"
            }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        let signal = status & 0x7f
        if signal != 0 {
            return "libmysofa crashed (signal \(signal)) or ran out of its memory limit reading it"
        }
        let code = (status >> 8) & 0xff
        switch code {
        case 0: return nil
        case 100..<200: return "libmysofa: " + HRTFSet.describe(10000 + code - 100)
        case 99: return "libmysofa: " + HRTFSet.describe(-1)
        case 1..<98: return "libmysofa: " + HRTFSet.describe(code)
        case 125: return "\(checker) did not take its command line"
        default: return "libmysofa: error (\(checker) exit status \(code))"
        }
    }
}
