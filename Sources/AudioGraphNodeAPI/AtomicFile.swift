#if canImport(Glibc)
import Glibc
#endif

/// A small output (a report, a results file) written whole or not at all:
/// under a temporary name beside it (`NAME.agraph-XXXXXX.part`, created
/// new, never through a link), then renamed over the final name. `rename`
/// replaces whatever is at the final name, a symbolic link included,
/// without following it: a link planted there cannot make the write land
/// on the file it points to, and a failed write (a full disk) leaves the
/// old file as it was and no temporary behind. [main-thread]
public enum AtomicFile {
    /// Writes `bytes` to `path` (absolute or relative to the working
    /// directory); its folder must exist. The file gets the permissions
    /// the user's umask allows, like any file the user creates.
    /// - Throws: `FileCheckError` naming `path` and what failed.
    public static func write(_ bytes: [UInt8], to path: String) throws(FileCheckError) {
        if path.utf8.contains(0) { throw FileCheckError(path: path, reason: "the path contains a NUL character") }
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
            throw FileCheckError(path: path, reason: "it is a directory, not a file")
        }
        var template = Array((path + ".agraph-XXXXXX.part").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buf in buf.baseAddress.map { mkstemps($0, 5) } ?? -1 }
        guard fd >= 0 else {
            throw FileCheckError(path: path, reason: "cannot create a temporary file beside it: \(FileChecks.errorText(errno))")
        }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { b in b.baseAddress.map { Glibc.write(fd, $0 + written, b.count - written) } ?? 0 }
            if n < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += n
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw FileCheckError(path: path, reason: "cannot write it: \(FileChecks.errorText(failure)); nothing was changed there")
        }
    }
}
