#if canImport(Glibc)
import Glibc
#endif

/// Checks on the files a graph names, made before anything opens them: a
/// FIFO, a device or a directory given where a file is expected is refused
/// with a reason instead of blocking in `open` or reading without end.
/// [main-thread | worker-thread | owner-thread | control-thread]
public enum FileChecks {
    /// The largest graph file read: 16 MiB. Real graphs are a few kB; the
    /// limit only stops `agraph validate /dev/zero`-like mistakes.
    public static let maximumGraphFileBytes = 16 << 20

    /// What kind of thing `path` names, in words ("a directory", "a FIFO"…),
    /// or nil when it does not exist. Follows symbolic links.
    public static func kind(of path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return describe(mode: st.st_mode)
    }

    static func describe(mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }

    /// nil when `path` is a regular file this process may read; else why not
    /// ("no such file", "is a FIFO (named pipe), not a regular file", …).
    public static func readableFileProblem(_ path: String) -> String? {
        if path.utf8.contains(0) { return "the path contains a NUL character" }
        var st = stat()
        guard stat(path, &st) == 0 else { return errorText(errno) }
        guard st.st_mode & S_IFMT == S_IFREG else { return "it is \(describe(mode: st.st_mode)), not a regular file" }
        if access(path, R_OK) != 0 { return errorText(errno) }
        return nil
    }

    /// nil when a file could be written at `path`: an existing entry there
    /// is a regular file, and its folder exists and is writable, or is
    /// missing under a writable folder (rendering creates it); else why not.
    public static func writableFileProblem(_ path: String) -> String? {
        if path.utf8.contains(0) { return "the path contains a NUL character" }
        if path.hasSuffix("/") { return "it names a folder, not a file" }
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFREG else { return "it is \(describe(mode: st.st_mode)), not a regular file" }
            if access(path, W_OK) != 0 { return errorText(errno) }
            return nil
        }
        // The nearest folder that exists must be a folder we may write in.
        var folder = GraphPaths.folder(of: path)
        while stat(folder, &st) != 0 {
            guard errno == ENOENT, folder != "/" else { return "the folder \(folder) cannot be read: \(errorText(errno))" }
            folder = GraphPaths.folder(of: folder)
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { return "\(folder) is \(describe(mode: st.st_mode)), not a folder" }
        if access(folder, W_OK) != 0 { return "the folder \(folder) is not writable" }
        return nil
    }

    /// Creates the missing folders above `path` (like `mkdir -p`); returns
    /// the topmost folder it created, or nil when all existed.
    public static func createFolders(above path: String) throws(FileCheckError) -> String? {
        var missing: [String] = []
        var folder = GraphPaths.folder(of: path)
        var st = stat()
        while stat(folder, &st) != 0, folder != "/" {
            missing.append(folder)
            folder = GraphPaths.folder(of: folder)
        }
        for f in missing.reversed() where mkdir(f, 0o777) != 0 && errno != EEXIST {
            throw FileCheckError(path: f, reason: "cannot create the folder: \(errorText(errno))")
        }
        return missing.last
    }

    /// Reads a whole regular file of at most `maximumBytes` bytes. A FIFO,
    /// device or directory is refused before it is opened (and checked again
    /// on the open descriptor, so a swap in between cannot block).
    public static func readRegularFile(_ path: String, maximumBytes: Int) throws(FileCheckError) -> [UInt8] {
        if let problem = readableFileProblem(path) { throw FileCheckError(path: path, reason: problem) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw FileCheckError(path: path, reason: errorText(errno)) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileCheckError(path: path, reason: errorText(errno)) }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw FileCheckError(path: path, reason: "it is \(describe(mode: st.st_mode)), not a regular file")
        }
        guard Int(st.st_size) <= maximumBytes else {
            throw FileCheckError(path: path, reason: "it is \(Int(st.st_size)) bytes; the limit is \(maximumBytes) bytes (\(maximumBytes >> 20) MiB)")
        }
        var out = [UInt8]()
        out.reserveCapacity(Int(st.st_size))
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileCheckError(path: path, reason: "read error: \(errorText(errno))")
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            // The file grew while being read: stop at the limit all the same.
            if out.count > maximumBytes {
                throw FileCheckError(path: path, reason: "it is over the limit of \(maximumBytes) bytes (\(maximumBytes >> 20) MiB)")
            }
        }
        return out
    }

    /// `strerror` in words, lower-cased first letter ("no such file or directory").
    public static func errorText(_ code: Int32) -> String {
        guard let s = strerror(code) else { return "error \(code)" }
        let text = String(cString: s)
        guard let first = text.first else { return text }
        return first.lowercased() + text.dropFirst()
    }
}

/// A file that cannot be used, and why.
public struct FileCheckError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}

extension GraphPaths {
    /// The process's working directory ("/" when it cannot be read).
    public static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        return buffer.withUnsafeBufferPointer { $0.baseAddress.map { String(cString: $0) } ?? "/" }
    }

    /// The folder part of an absolute path ("/" for a file at the root).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let f = String(path[..<slash])
        return f.isEmpty ? "/" : f
    }

    /// The path with symbolic links and `..` resolved, for comparing two
    /// paths: `realpath` of the file when it exists, else of its folder
    /// plus the file name, else the normalised path itself.
    public static func canonical(_ path: String) -> String {
        if let r = realPath(path) { return r }
        let folder = folder(of: path)
        let name = path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]
        if let r = realPath(folder) { return (r == "/" ? "" : r) + "/" + name }
        return path
    }

    private static func realPath(_ path: String) -> String? {
        guard !path.utf8.contains(0), let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }
}
