import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn` and reaped by `waitpid` on
/// the thread that asks about it.
///
/// The live tests use this instead of Foundation's `Process`, whose manager
/// thread reaps the child and releases the pipes and file handles it was
/// given: libFoundation and libdispatch are not instrumented, so under
/// ThreadSanitizer (`ignore_noninstrumented_modules=0`) those releases look
/// like races with the test's own use of the handles. Here no thread but
/// the caller's touches anything.
///
/// Like `Process`: the child runs in a process group of its own, inherits
/// no file descriptor above 2, and `terminationStatus` is the exit status,
/// or the signal number when a signal ended it.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A file, created or truncated.
        case file(String)
        /// A descriptor of this process (duplicated in the child).
        case descriptor(Int32)
        /// For stderr: the same open file as stdout (one offset, so the
        /// two do not write over each other in a file).
        case sameAsStdout
    }

    public let pid: pid_t
    public let executable: String
    /// Guards `status` (a pthread mutex: ThreadSanitizer sees it).
    private let lock = NSLock()
    /// The wait status once reaped.
    private var status: Int32?

    /// Starts `arguments[0]` (a path, or a name looked up on PATH).
    /// - Parameters:
    ///   - environment: added to this process's environment.
    ///   - directory: the child's working directory (this one's when nil).
    public init(_ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
                stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) throws {
        guard let first = arguments.first else { throw JACKTestError("no executable to run") }
        guard let path = first.contains("/") ? first : findExecutable(first) else {
            throw JACKTestError("\(first) is not installed")
        }
        executable = path

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let directory {
            guard let chdir = Self.addChdir else { throw JACKTestError("posix_spawn cannot change directory here") }
            guard chdir(&actions, directory) == 0 else { throw JACKTestError("cannot change to \(directory)") }
        }
        for (fd, stream) in [(STDIN_FILENO, stdin), (STDOUT_FILENO, stdout), (STDERR_FILENO, stderr)] {
            let rc: Int32
            switch stream {
            case .null:
                rc = posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0)
            case .file(let file):
                rc = posix_spawn_file_actions_addopen(&actions, fd, file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .descriptor(let source):
                rc = posix_spawn_file_actions_adddup2(&actions, source, fd)
            case .sameAsStdout:
                rc = posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, fd)
            }
            guard rc == 0 else { throw JACKTestError("posix_spawn file action for fd \(fd) failed (\(rc))") }
        }
        // Nothing else is inherited (Process closes every other descriptor too).
        if let closeFrom = Self.addCloseFrom {
            _ = closeFrom(&actions, 3)
        } else {
            for fd in Self.openDescriptors() where fd > 2 {
                posix_spawn_file_actions_addclose(&actions, fd)
            }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, SIGPIPE as a shell would give it (the
        // tests ignore it, to write safely to a child that has exited), and
        // no signal blocked: a child inherits the mask of the thread that
        // spawns it, and libjack, when its last client closes, blocks on
        // that thread what the thread that opened its first client blocked
        // (AudioGraph's owner thread blocks SIGINT, SIGTERM and SIGHUP).
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)

        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0)=\($1)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child = pid_t()
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw JACKTestError("cannot start \(path): \(String(cString: strerror(rc)))") }
        pid = child
    }

    deinit {
        // A child nobody waited for: do not leave a zombie.
        if isRunning {
            Glibc.kill(pid, SIGKILL)
            waitUntilExit()
        }
    }

    /// Whether the child has not exited yet (reaps it when it has).
    public var isRunning: Bool { reap() == nil }

    /// Sends `signal` unless the child is already reaped (its pid may be
    /// someone else's by then).
    public func send(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if status == nil { Glibc.kill(pid, signal) }
    }

    /// Waits until the child has exited and is reaped.
    public func waitUntilExit() {
        while reap() == nil { usleep(2_000) }
    }

    /// Waits up to `timeout` s; whether it exited.
    @discardableResult
    public func waitUntilExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while reap() == nil {
            if Date() > deadline { return false }
            usleep(2_000)
        }
        return true
    }

    /// The exit status, or the number of the signal that ended the child;
    /// -1 while it runs.
    public var terminationStatus: Int32 {
        guard let status = reap() else { return -1 }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// The wait status, or nil while the child runs.
    private func reap() -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var waited: Int32 = 0
        var rc: pid_t
        repeat { rc = waitpid(pid, &waited, WNOHANG) } while rc < 0 && errno == EINTR
        if rc == pid {
            status = waited
        } else if rc < 0 {
            status = 0x7f00  // not a child of ours any more (ECHILD): gone
        }
        return status
    }

    // glibc's posix_spawn_file_actions_addclosefrom_np and _addchdir_np are
    // behind _GNU_SOURCE, which Swift's Glibc module does not define.
    private typealias AddFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private typealias AddPath = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    private static let addCloseFrom: AddFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddFrom.self) }
    private static let addChdir: AddPath? = dlsym(nil, "posix_spawn_file_actions_addchdir_np")
        .map { unsafeBitCast($0, to: AddPath.self) }

    private static func openDescriptors() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
    }
}

/// A pipe whose ends are closed on exec (a child gets one only as a
/// standard stream).
public struct PipeEnds: Sendable {
    public let read: Int32
    public let write: Int32

    public init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw JACKTestError("pipe failed (errno \(errno))") }
        // (pipe2 is not in Swift's Glibc; a child spawned in between closes
        // them anyway: ChildProcess closes every descriptor above 2.)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        read = fds[0]
        write = fds[1]
    }
}
