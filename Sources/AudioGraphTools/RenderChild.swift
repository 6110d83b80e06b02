import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// One `agraph render` child process of `agraph render --each`: the
/// `agraph` executable started with `posix_spawn`, stdin and stdout on
/// /dev/null, stderr on a pipe that the parent reads while it runs. The
/// child stays in the parent's process group, so Ctrl-C on a terminal
/// reaches every render at once; a SIGTERM sent to the parent alone is
/// passed on with `terminate()`; a parent killed outright takes its
/// children with it (`AGRAPH_BATCH_PARENT`: the render sets
/// `PR_SET_PDEATHSIG`, agraph's `BatchLeftovers.dieWithParent`).
/// [main-thread; every method, on the thread that started it]
public final class RenderChild {
    public let pid: pid_t
    /// The read end of the child's stderr (non-blocking); -1 once closed.
    public private(set) var stderrFD: Int32
    /// What the child wrote to stderr, up to `maximumText` bytes.
    public private(set) var text: [UInt8] = []
    public private(set) var textTruncated = false
    /// The wait status once reaped.
    public private(set) var status: Int32?
    /// When it was started (`MonotonicClock.seconds()`).
    public let started = MonotonicClock.seconds()

    public static let maximumText = 64 * 1024

    /// The executable running now (`/proc/self/exe`, resolved once so that
    /// every child runs the same file even if the build is replaced): what
    /// `agraph` itself passes as the executable of its renders.
    /// [any-thread]
    public static let currentExecutable: String = {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "/proc/self/exe" }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Starts `executable` (an `agraph`) with `arguments` (without
    /// argv[0]), its environment this process's with
    /// `AGRAPH_BATCH_PARENT` set to this process. [main-thread]
    /// - Throws: `ChildError` when no pipe or process could be made.
    public init(executable: String, arguments: [String]) throws(ChildError) {
        ThreadRole.check(.main)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw ChildError("cannot make a pipe: \(FileChecks.errorText(errno))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The parent ignores SIGPIPE; a render should not inherit that, nor
        // a signal mask of the spawning thread (`ThreadSignals`).
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // The render dies with this process (PR_SET_PDEATHSIG in the child).
        var variables: [String] = []
        var e = environ
        while let entry = e.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix(BatchLeftovers.parentVariable + "=") { variables.append(text) }
            e += 1
        }
        variables.append("\(BatchLeftovers.parentVariable)=\(getpid())")
        let envp = variables.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        var child = pid_t()
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw ChildError("cannot start \(executable): \(FileChecks.errorText(rc))")
        }
        pid = child
        stderrFD = fds[0]
    }

    deinit {
        if stderrFD >= 0 { close(stderrFD) }
    }

    /// Reads what the child has written; closes the pipe at its end.
    /// [main-thread]
    public func readAvailable() {
        ThreadRole.check(.main)
        guard stderrFD >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(stderrFD, $0.baseAddress, $0.count) }
            if n > 0 {
                let room = Self.maximumText - text.count
                text += buffer[..<min(n, max(room, 0))]
                if n > room { textTruncated = true }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                close(stderrFD)
                stderrFD = -1
            }
            return
        }
    }

    /// Whether the child has exited (reaps it when it has). [main-thread]
    public func reap() -> Bool {
        ThreadRole.check(.main)
        if status != nil { return true }
        var waited: Int32 = 0
        var rc: pid_t
        repeat { rc = waitpid(pid, &waited, WNOHANG) } while rc < 0 && errno == EINTR
        if rc == pid {
            status = waited
        } else if rc < 0 {
            status = 0x7f00   // not our child any more (ECHILD)
        }
        return status != nil
    }

    /// Asks the child to stop: its render ends at the next block, closing
    /// its files, and exits 130. [main-thread]
    public func terminate() {
        ThreadRole.check(.main)
        if status == nil { kill(pid, SIGTERM) }
    }

    /// The exit status; nil while it runs or when a signal ended it.
    /// [main-thread]
    public var exitStatus: Int32? {
        ThreadRole.check(.main)
        guard let status, status & 0x7f == 0 else { return nil }
        return (status >> 8) & 0xff
    }

    /// The signal that ended it, if one did. [main-thread]
    public var signal: Int32? {
        ThreadRole.check(.main)
        guard let status, status & 0x7f != 0, status & 0x7f != 0x7f else { return nil }
        return status & 0x7f
    }

    /// Its stderr as lines, empty ones dropped. [main-thread]
    public var lines: [String] {
        ThreadRole.check(.main)
        var lines = String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        if textTruncated { lines.append("… (more was written)") }
        return lines
    }

    /// Why a render could not be started.
    public struct ChildError: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }
}
