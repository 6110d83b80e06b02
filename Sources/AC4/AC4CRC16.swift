/// The CRC of AC-4 sync frames (ETSI TS 103 190-1, Annex G).
///
/// CRC-16 with generator polynomial x^16 + x^15 + x^2 + 1 (0x8005), initial
/// value 0, no bit reflection, no final XOR (the parameter set known as
/// CRC-16/UMTS or CRC-16/BUYPASS; its check value over the ASCII bytes
/// "123456789" is 0xFEE8).
///
/// In a sync frame with `sync_word == 0xAC41` it covers the `frame_size`
/// field(s) and `raw_ac4_frame`, and the 16-bit `crc_word` follows the frame
/// most significant byte first. Because the CRC has no final XOR, running it
/// over `frame_size … crc_word` (the covered bytes plus the stored CRC) gives
/// 0 when the frame is intact; that is how the reader checks frames.
///
/// Table-driven: one 256-entry table, one lookup per byte. [any thread]
public enum AC4CRC16 {
    /// The generator polynomial without its x^16 term.
    public static let polynomial: UInt16 = 0x8005

    /// `table[b]` is the CRC register after shifting byte `b` through a zero register.
    @usableFromInline static let table: [UInt16] = (0..<256).map { byte -> UInt16 in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 {
            crc = (crc & 0x8000) != 0 ? (crc << 1) ^ polynomial : crc << 1
        }
        return crc
    }

    /// Continues a CRC computation over `bytes`, starting from `crc`
    /// (0 to start afresh).
    @inlinable
    public static func update<C: Collection>(_ crc: UInt16, _ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc = crc
        for b in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ b)]
        }
        return crc
    }

    /// The CRC of `bytes`.
    @inlinable
    public static func checksum<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        update(0, bytes)
    }

    /// The CRC of `buffer[range]`, without copying. Fast path for the reader.
    static func checksum(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt16 {
        var crc: UInt16 = 0
        table.withUnsafeBufferPointer { t in
            for i in range {
                crc = (crc << 8) ^ t[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ buffer[i])]
            }
        }
        return crc
    }
}
