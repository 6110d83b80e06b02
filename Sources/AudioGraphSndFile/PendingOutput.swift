import CFraming
import AudioGraphNodeAPI
#if canImport(Glibc)
import Glibc
#endif

/// An output file written under a temporary name in its own folder and
/// renamed into place once complete (POSIX `rename` is atomic within a
/// file system): an interrupted or failed render never leaves a truncated
/// file under the final name, and an existing file there stays untouched
/// until the new one is whole. [main-thread]
public final class PendingOutput: @unchecked Sendable {
    /// Where the file belongs.
    public let finalPath: String
    /// Where it is written meanwhile: `NAME.agraph-XXXXXX.part` beside it.
    public let temporaryPath: String
    public private(set) var isCommitted = false

    /// Creates the (empty) temporary file, readable as the user's umask
    /// allows, like any file the user creates.
    public init(finalPath: String) throws(SoundFileError) {
        self.finalPath = finalPath
        var template = Array((finalPath + ".agraph-XXXXXX.part").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buf in buf.baseAddress.map { mkstemps($0, 5) } ?? -1 }
        guard fd >= 0 else {
            throw SoundFileError(path: finalPath, message: "cannot create a temporary file beside it: \(FileChecks.errorText(errno))")
        }
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        close(fd)
        temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Renames the finished file into place, replacing what was there.
    public func commit() throws(SoundFileError) {
        guard !isCommitted else { return }
        guard rename(temporaryPath, finalPath) == 0 else {
            throw SoundFileError(path: finalPath, message: "cannot move the finished file \(temporaryPath) into place: \(FileChecks.errorText(errno))")
        }
        isCommitted = true
    }
}

/// Repairs a FLAC file whose encoder could not finish (a write error such
/// as a full disk): STREAMINFO then says 0 samples and the last frame may
/// be cut. Keeps every complete frame (each checked by its CRC-16), cuts
/// the file after the last one, and writes their sample count into
/// STREAMINFO, so that the file decodes to exactly what was kept.
/// [main-thread | worker-thread; on a closed file]
enum FLACRepair {
    /// The frames (samples per channel) kept, or nil when the file is not a
    /// FLAC stream this can read.
    static func repair(path: String) -> Int? {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(st.st_size)
        guard size >= 42 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        var got = 0
        while got < size {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, size - got, off_t(got)) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return nil }
            got += n
        }
        guard let (kept, end) = scan(bytes) else { return nil }
        if end < size { guard ftruncate(fd, off_t(end)) == 0 else { return nil } }
        // STREAMINFO body starts at byte 8; total samples: 36 bits from
        // the low nibble of body byte 13 through body byte 17.
        var field = [UInt8](bytes[21...25])
        field[0] = (field[0] & 0xF0) | UInt8((kept >> 32) & 0x0F)
        field[1] = UInt8((kept >> 24) & 0xFF)
        field[2] = UInt8((kept >> 16) & 0xFF)
        field[3] = UInt8((kept >> 8) & 0xFF)
        field[4] = UInt8(kept & 0xFF)
        let w = field.withUnsafeBytes { pwrite(fd, $0.baseAddress, 5, 21) }
        guard w == 5 else { return nil }
        fsync(fd)
        return kept
    }

    /// The samples in complete frames and the byte offset where the last
    /// complete frame ends. Linear: one CRC-16 runs along the data and a
    /// frame is complete where a valid frame header (or the end of the data)
    /// follows and the CRC over the frame is 0.
    static func scan(_ b: [UInt8]) -> (samples: Int, end: Int)? {
        guard b.count >= 42, b[0] == 0x66, b[1] == 0x4C, b[2] == 0x61, b[3] == 0x43 else { return nil }   // "fLaC"
        guard b[4] & 0x7F == 0 else { return nil }                                                      // STREAMINFO first
        // Skip the metadata blocks.
        var p = 4
        while true {
            guard p + 4 <= b.count else { return nil }
            let last = b[p] & 0x80 != 0
            let length = Int(b[p + 1]) << 16 | Int(b[p + 2]) << 8 | Int(b[p + 3])
            p += 4 + length
            if last { break }
        }
        guard p <= b.count else { return nil }
        var samples = 0
        var goodEnd = p
        guard var current = header(b, p) else { return (0, p) }
        var crc: UInt16 = 0
        var q = p
        while q < b.count {
            crc = (crc << 8) ^ crc16Table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ b[q])]
            q += 1
            // A frame is at least its header plus 2 CRC bytes.
            if crc == 0, q - current.offset > current.length + 1 {
                if q == b.count {
                    samples += current.blockSize
                    goodEnd = q
                    break
                }
                if let next = header(b, q) {
                    samples += current.blockSize
                    goodEnd = q
                    current = next
                    crc = 0
                    // Continue the CRC from the new frame's start.
                    continue
                }
            }
        }
        return (samples, goodEnd)
    }

    struct FrameHeader { var offset: Int; var length: Int; var blockSize: Int }

    /// A frame header at `p` whose CRC-8 matches, with its block size.
    static func header(_ b: [UInt8], _ p: Int) -> FrameHeader? {
        guard p + 6 <= b.count, b[p] == 0xFF, b[p + 1] & 0xFE == 0xF8 else { return nil }
        let blockCode = Int(b[p + 2] >> 4)
        let rateCode = Int(b[p + 2] & 0x0F)
        guard blockCode != 0, rateCode != 15, b[p + 3] & 0x01 == 0 else { return nil }
        var i = p + 4
        // The frame or sample number, UTF-8-like: 1 to 7 bytes.
        let lead = b[i]
        var extra = 0
        if lead & 0x80 == 0 { extra = 0 } else if lead & 0xE0 == 0xC0 { extra = 1 } else if lead & 0xF0 == 0xE0 { extra = 2 }
        else if lead & 0xF8 == 0xF0 { extra = 3 } else if lead & 0xFC == 0xF8 { extra = 4 } else if lead & 0xFE == 0xFC { extra = 5 }
        else if lead == 0xFE { extra = 6 } else { return nil }
        i += 1 + extra
        var blockSize: Int
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (blockCode - 2)
        case 6:
            guard i < b.count else { return nil }
            blockSize = Int(b[i]) + 1; i += 1
        case 7:
            guard i + 1 < b.count else { return nil }
            blockSize = (Int(b[i]) << 8 | Int(b[i + 1])) + 1; i += 2
        default: blockSize = 256 << (blockCode - 8)
        }
        switch rateCode {
        case 12: i += 1
        case 13, 14: i += 2
        default: break
        }
        guard i < b.count else { return nil }
        var crc8: UInt8 = 0
        for k in p..<i {
            crc8 ^= b[k]
            for _ in 0..<8 { crc8 = crc8 & 0x80 != 0 ? (crc8 << 1) ^ 0x07 : crc8 << 1 }
        }
        guard crc8 == b[i] else { return nil }
        return FrameHeader(offset: p, length: i + 1 - p, blockSize: blockSize)
    }

    /// FLAC's frame footer CRC: CRC-16/0x8005 from 0, the table AC-4 uses
    /// too (`agraph_framing.h`).
    static let crc16Table: [UInt16] = Array(UnsafeBufferPointer(start: agraph_crc16_table(), count: 256))
}
