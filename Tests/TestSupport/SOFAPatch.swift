import Foundation

/// Hostile SOFA files for the tests, made at test time from a real one
/// (`Tests/Media/sphere-head-delays.sofa`) by rewriting the few HDF5
/// structures libmysofa reads: a dataset's one chunk (replaced by a new,
/// stored deflate stream appended to the file) and the declared number of
/// taps (`N`'s netCDF dimension name and `Data.IR`'s dataspace). No HDF5
/// library is needed; libmysofa checks no HDF5 checksums.
/// [any thread]
public struct SOFAPatch {
    public enum Failure: Error, CustomStringConvertible {
        case notFound(String)
        public var description: String {
            switch self { case .notFound(let what): "SOFAPatch: \(what)" }
        }
    }

    /// The file's bytes, as patched so far.
    public private(set) var bytes: [UInt8]

    /// The file at `path` (superblock version 2 or 3, as netCDF4 writes
    /// SOFA files).
    public init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure.notFound("cannot read \(path)") }
        bytes = [UInt8](data)
        guard bytes.count > 48, bytes[8] == 2 || bytes[8] == 3, bytes[9] == 8, bytes[10] == 8 else {
            throw Failure.notFound("\(path) has no HDF5 superblock of version 2 or 3 with 8-byte offsets")
        }
    }

    /// Writes the patched file to `path`.
    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Replaces the values of the dataset `name` (64-bit floats, stored
    /// in one chunk, such as `Data.SamplingRate` or `Data.Delay`) with
    /// `values`, as many as the chunk holds.
    public mutating func setValues(_ name: String, _ values: [Double]) throws {
        let header = try objectHeader(name)
        guard let layout = messages(at: header).first(where: { $0.type == 8 }),
              bytes[layout.offset] == 3, bytes[layout.offset + 1] == 2 else {
            throw Failure.notFound("\(name) is not stored in chunks")
        }
        let dimensions = Int(bytes[layout.offset + 2])
        let tree = Int(u64(layout.offset + 3))
        var chunkValues = 1
        for d in 0..<(dimensions - 1) { chunkValues *= Int(u32(layout.offset + 11 + 4 * d)) }
        guard Int(u32(layout.offset + 11 + 4 * (dimensions - 1))) == 8, chunkValues == values.count else {
            throw Failure.notFound("\(name)'s chunk holds \(chunkValues) values, not \(values.count) doubles")
        }
        guard tree + 24 < bytes.count, Array(bytes[tree..<(tree + 4)]) == Array("TREE".utf8), bytes[tree + 4] == 1,
              bytes[tree + 5] == 0, u16(tree + 6) == 1 else {
            throw Failure.notFound("\(name) has more than one chunk")
        }
        var raw: [UInt8] = []
        for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { raw += $0 } }
        let stream = Self.storedZlib(raw)
        let entry = tree + 24
        let child = entry + 8 + 8 * dimensions
        setU32(entry, UInt32(stream.count))
        setU64(child, UInt64(bytes.count))
        bytes += stream
        setU64(28, UInt64(bytes.count))   // the superblock's end-of-file address
    }

    /// Declares `taps` samples per response: `N`'s netCDF dimension name
    /// and the third dimension of `Data.IR`'s dataspace. libmysofa reads the
    /// file's own samples into the start of each response; the rest are 0.
    public mutating func setTaps(_ taps: Int) throws {
        let header = try objectHeader("Data.IR")
        guard let space = messages(at: header).first(where: { $0.type == 1 }), bytes[space.offset + 1] == 3 else {
            throw Failure.notFound("Data.IR has no three-dimensional dataspace")
        }
        let dims = space.offset + (bytes[space.offset] == 1 ? 8 : 4)
        let old = Int(u64(dims + 16))
        setU64(dims + 16, UInt64(taps))
        let prefix = Array("This is a netCDF dimension but not a netCDF variable.".utf8)
        let oldText = Array(String(repeating: " ", count: max(0, 10 - String(old).count)).utf8) + Array(String(old).utf8)
        let newText = String(taps)
        guard newText.count <= 10, let at = find(prefix + oldText) else {
            throw Failure.notFound("no netCDF dimension of \(old)")
        }
        let padded = Array((String(repeating: " ", count: 10 - newText.count) + newText).utf8)
        bytes.replaceSubrange((at + prefix.count)..<(at + prefix.count + 10), with: padded)
    }

    /// Renames the variable `name` to `newName` (the same length) wherever
    /// the file spells it (its link in the root group and any attribute
    /// naming it): libmysofa then finds no variable `name`.
    public mutating func renameVariable(_ name: String, to newName: String) throws {
        let old = Array(name.utf8), new = Array(newName.utf8)
        guard old.count == new.count, old != new else { throw Failure.notFound("\(newName) is not another name of \(name)'s length") }
        var from = 0, renamed = 0
        while let at = find(old, from: from) {
            bytes.replaceSubrange(at..<(at + old.count), with: new)
            from = at + old.count
            renamed += 1
        }
        guard renamed > 0 else { throw Failure.notFound("no variable named \(name)") }
    }

    // MARK: HDF5

    /// The object header the root group's link `name` points to.
    private func objectHeader(_ name: String) throws -> Int {
        let key = [UInt8(name.utf8.count)] + Array(name.utf8)
        var from = 0
        while let at = find(key, from: from) {
            let address = Int(truncatingIfNeeded: u64(at + key.count))
            if address >= 0, address + 4 < bytes.count, Array(bytes[address..<(address + 4)]) == Array("OHDR".utf8) {
                return address
            }
            from = at + 1
        }
        throw Failure.notFound("no link named \(name)")
    }

    /// The messages of the version 2 object header at `address`, with
    /// those of its continuation blocks: type and where its body starts.
    private func messages(at address: Int) -> [(type: UInt8, offset: Int, size: Int)] {
        let flags = bytes[address + 5]
        var pos = address + 6 + (flags & 0x20 != 0 ? 16 : 0)
        let sizeBytes = 1 << Int(flags & 3)
        var size = 0
        for i in 0..<sizeBytes { size |= Int(bytes[pos + i]) << (8 * i) }
        pos += sizeBytes
        var found: [(type: UInt8, offset: Int, size: Int)] = []
        var blocks = [(pos, pos + size)]
        while let (start, end) = blocks.first {
            blocks.removeFirst()
            var p = start
            while p < end - 4 {
                let type = bytes[p]
                let length = Int(u16(p + 1))
                let body = p + 4 + (flags & 4 != 0 ? 2 : 0)
                found.append((type, body, length))
                if type == 16 {   // continuation: an OCHK block
                    let at = Int(u64(body)), count = Int(u64(body + 8))
                    blocks.append((at + 4, at + count - 4))
                }
                p = body + length
            }
        }
        return found
    }

    /// A zlib stream holding `raw` in stored (uncompressed) deflate blocks.
    static func storedZlib(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var start = 0
        repeat {
            let n = min(65535, raw.count - start)
            let last = start + n == raw.count
            out += [last ? 1 : 0, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += raw[start..<(start + n)]
            start += n
        } while start < raw.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = (b << 16) | a
        return out + [UInt8(adler >> 24), UInt8((adler >> 16) & 0xFF), UInt8((adler >> 8) & 0xFF), UInt8(adler & 0xFF)]
    }

    private func find(_ needle: [UInt8], from: Int = 0) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, from <= bytes.count - needle.count else { return nil }
        for i in from...(bytes.count - needle.count) where bytes[i] == needle[0] {
            if Array(bytes[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
    private func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    private func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
    private func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
    private mutating func setU32(_ at: Int, _ v: UInt32) { for i in 0..<4 { bytes[at + i] = UInt8((v >> (8 * i)) & 0xFF) } }
    private mutating func setU64(_ at: Int, _ v: UInt64) { for i in 0..<8 { bytes[at + i] = UInt8((v >> (8 * i)) & 0xFF) } }
}
