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
        update(0, buffer, range)
    }

    /// Continues a CRC over `buffer[range]`, without copying.
    static func update(_ crc: UInt16, _ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt16 {
        var crc = crc
        table.withUnsafeBufferPointer { t in
            for i in range {
                crc = (crc << 8) ^ t[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ buffer[i])]
            }
        }
        return crc
    }

    // MARK: CRC arithmetic
    //
    // Without bit reflection, initial value or final XOR, the CRC register
    // is the message as a polynomial over GF(2) times x^16, mod G (G = x^16
    // + 0x8005). Feeding byte b to register r gives (r·x^8 + b·x^16) mod G,
    // so feeding a zero byte multiplies by x^8. Hence, with P[i] the CRC of
    // bytes[0..<i]:  CRC(bytes[a..<e]) = P[e] XOR (P[a] · x^(8(e-a)) mod G).

    /// The register after feeding one zero byte: `r · x^8 mod G`.
    @inline(__always)
    static func shiftZeroByte(_ r: UInt16, _ t: UnsafeBufferPointer<UInt16>) -> UInt16 {
        (r << 8) ^ t[Int(r >> 8)]
    }

    /// `a · b mod G`: a carry-less 16 × 16-bit product, reduced by feeding
    /// its high half two zero bytes (`h · x^16 mod G`).
    static func multiply(_ a: UInt16, _ b: UInt16) -> UInt16 {
        var product: UInt32 = 0
        let wide = UInt32(a)
        var bits = UInt32(b)
        var shift: UInt32 = 0
        while bits != 0 {
            product ^= (wide << shift) & (0 &- (bits & 1))
            bits >>= 1
            shift += 1
        }
        return table.withUnsafeBufferPointer { t in
            shiftZeroByte(shiftZeroByte(UInt16(truncatingIfNeeded: product >> 16), t), t)
        } ^ UInt16(truncatingIfNeeded: product)
    }

    /// `x^(8·n) mod G`, by square and multiply (a few dozen steps for any n ≥ 0).
    static func powerOfByteShift(_ n: Int) -> UInt16 {
        var result: UInt16 = 1
        var base: UInt16 = 0x0100   // x^8
        var n = n
        while n > 0 {
            if n & 1 != 0 { result = multiply(result, base) }
            base = multiply(base, base)
            n >>= 1
        }
        return result
    }

    /// The CRC of any byte range of one buffer in constant time, from
    /// tables built once in time linear in the buffer's length: prefix CRCs
    /// `P[i]` for every i, and `x^(8n) mod G` for every length n up to
    /// `maxLength`. Immutable once built: shared by copies of a reader.
    /// [any thread]
    final class RangeTable: Sendable {
        /// `prefix[i]` = CRC of `buffer[0..<i]`, for i in 0...count.
        let prefix: [UInt16]
        /// `powers[n]` = x^(8n) mod G, for n in 0...maxLength.
        let powers: [UInt16]

        /// Table bytes computed to build it: one CRC table step per entry,
        /// about `count + min(count, maxLength)`.
        var work: Int { prefix.count + powers.count }

        /// Builds the tables for `buffer`, for ranges up to `maxLength` bytes long.
        init(_ buffer: UnsafeBufferPointer<UInt8>, maxLength: Int) {
            let count = buffer.count
            prefix = [UInt16](unsafeUninitializedCapacity: count + 1) { p, initialized in
                AC4CRC16.table.withUnsafeBufferPointer { t in
                    var crc: UInt16 = 0
                    p[0] = 0
                    for i in 0..<count {
                        crc = (crc << 8) ^ t[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ buffer[i])]
                        p[i + 1] = crc
                    }
                }
                initialized = count + 1
            }
            let lengths = Swift.max(0, Swift.min(count, maxLength)) + 1
            powers = [UInt16](unsafeUninitializedCapacity: lengths) { p, initialized in
                AC4CRC16.table.withUnsafeBufferPointer { t in
                    var r: UInt16 = 1
                    for n in 0..<lengths {
                        p[n] = r
                        r = AC4CRC16.shiftZeroByte(r, t)
                    }
                }
                initialized = lengths
            }
        }

        /// The CRC of `buffer[range]` (the buffer the table was built from).
        /// `range` must lie within it.
        func checksum(_ range: Range<Int>) -> UInt16 {
            let n = range.count
            let head = prefix[range.lowerBound]
            let shifted = n < powers.count ? AC4CRC16.multiply(head, powers[n])
                                           : AC4CRC16.multiply(head, AC4CRC16.powerOfByteShift(n))
            return prefix[range.upperBound] ^ shifted
        }
    }
}
