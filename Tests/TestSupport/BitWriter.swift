/// Bits most significant first, for the bitstreams tests write by hand
/// (AC-4's `dac4` box, HE-AAC's SBR and PS payloads); `bytes` pads the
/// last byte with zeros.
public struct BitWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var used = 8

    public init() {}

    /// How many bits have been written.
    public var count: Int { bytes.count * 8 - (8 - used) }

    /// The `count` low bits of `value`, most significant first.
    public mutating func put(_ value: Int, _ count: Int) {
        for i in stride(from: count - 1, through: 0, by: -1) {
            if used == 8 { bytes.append(0); used = 0 }
            if value >> i & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80) >> UInt8(used) }
            used += 1
        }
    }

    /// A code given as a string of "0" and "1" (Huffman codes as the
    /// standards print them).
    public mutating func put(code: String) {
        for c in code.utf8 {
            precondition(c == UInt8(ascii: "0") || c == UInt8(ascii: "1"), "not a binary code: \(code)")
            put(c == UInt8(ascii: "1") ? 1 : 0, 1)
        }
    }

    /// Every bit another writer holds, after these.
    public mutating func append(_ other: BitWriter) {
        for i in 0..<other.count { put(other.bit(i), 1) }
    }

    /// Bit `i` (0 is the first written).
    public func bit(_ i: Int) -> Int { Int((bytes[i >> 3] >> UInt8(7 - (i & 7))) & 1) }

    /// Zero bits up to the next byte boundary.
    public mutating func alignWithZeros() {
        if used != 8 { put(0, 8 - used) }
    }
}
