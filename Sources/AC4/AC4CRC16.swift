import CFraming

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
/// Table-driven: one 256-entry table, one lookup per byte. [any-thread]
public enum AC4CRC16 {
    /// The generator polynomial without its x^16 term.
    public static let polynomial = UInt16(AGRAPH_CRC16_POLYNOMIAL)

    /// `table[b]` is the CRC register after shifting byte `b` through a zero
    /// register: the one table of `agraph_framing.h` (CFraming), which the
    /// DAA plugin and the FLAC repair use too.
    @usableFromInline static let table: [UInt16] = Array(UnsafeBufferPointer(start: agraph_crc16_table(), count: 256))

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

    /// `a · b mod G`: a carry-less 16 × 16-bit product, reduced by feeding
    /// its high half two zero bytes (`h · x^16 mod G`) through `t` (the
    /// CRC table).
    @inline(__always)
    static func multiply(_ a: UInt16, _ b: UInt16, _ t: UnsafePointer<UInt16>) -> UInt16 {
        let wide = UInt32(a)
        let bits = UInt32(b)
        var product: UInt32 = 0
        var i: UInt32 = 0
        while i < 16 {   // branch-free; unrolled by the optimizer
            product ^= (wide << i) & (0 &- ((bits >> i) & 1))
            i &+= 1
        }
        var r = UInt16(truncatingIfNeeded: product >> 16)
        r = (r << 8) ^ t[Int(r >> 8)]
        r = (r << 8) ^ t[Int(r >> 8)]
        return r ^ UInt16(truncatingIfNeeded: product)
    }

    /// `a · b mod G`.
    static func multiply(_ a: UInt16, _ b: UInt16) -> UInt16 {
        table.withUnsafeBufferPointer { t in
            // The table always has 256 entries.
            t.baseAddress.map { multiply(a, b, $0) } ?? 0
        }
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
    /// `P[i]` for every i, and `x^(8n) mod G` for every length n as the
    /// product of two small tables' entries (n mod 4096 and n / 4096).
    /// Immutable once built (one allocation, written only by `init`):
    /// shared by copies of a reader, and read through `View` without
    /// reference counting. [any-thread]
    final class RangeTable: @unchecked Sendable {
        /// Lengths below this take one power from `low`; longer ones multiply by `high` too.
        static let lowCount = 4096

        /// Prefix CRCs, then the two power tables, then a copy of the CRC table.
        private let storage: UnsafeMutableBufferPointer<UInt16>
        /// Raw pointers into `storage`; valid while this table lives.
        let view: View

        /// The tables, read without reference counting. Valid only while
        /// the `RangeTable` it came from is alive (the reader keeps both).
        struct View: @unchecked Sendable {
            /// `prefix[i]` = CRC of `buffer[0..<i]`, for i in 0...count.
            let prefix: UnsafePointer<UInt16>
            let count: Int
            /// `low[n]` = x^(8n) mod G, for n in 0..<lowCount.
            let low: UnsafePointer<UInt16>
            /// `high[k]` = x^(8 · 4096 · k) mod G, for k in 0...count / 4096.
            let high: UnsafePointer<UInt16>
            /// The CRC table (256 entries).
            let crcTable: UnsafePointer<UInt16>

            /// The CRC of `buffer[range]` (the buffer the table was built
            /// from); `range` must lie within it.
            @inline(__always)
            func checksum(_ range: Range<Int>) -> UInt16 {
                precondition(range.lowerBound >= 0 && range.upperBound <= count, "range outside the table")
                let n = range.count
                let k = n / RangeTable.lowCount
                let lowPower = low[n - k * RangeTable.lowCount]
                let power = k == 0 ? lowPower : AC4CRC16.multiply(lowPower, high[k], crcTable)
                return prefix[range.upperBound] ^ AC4CRC16.multiply(prefix[range.lowerBound], power, crcTable)
            }
        }

        /// Table entries computed to build it, one CRC table step or one
        /// multiply each: `count + 1 + 4096 + count / 4096 + 1`.
        let work: Int

        /// Builds the tables for `buffer`.
        init(_ buffer: UnsafeBufferPointer<UInt8>) {
            let count = buffer.count
            let lowCount = Self.lowCount
            let highCount = count / lowCount + 1
            let storage = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: count + 1 + lowCount + highCount + 256)
            guard let base = storage.baseAddress else {
                preconditionFailure("allocation of a non-empty buffer has an address")
            }
            let prefix = base, low = base + (count + 1), high = low + lowCount, crc = high + highCount
            AC4CRC16.table.withUnsafeBufferPointer { t in
                for k in 0..<256 { crc[k] = t[k] }
            }
            var r: UInt16 = 0
            prefix[0] = 0
            for i in 0..<count {
                r = (r << 8) ^ crc[Int(UInt8(truncatingIfNeeded: r >> 8) ^ buffer[i])]
                prefix[i + 1] = r
            }
            r = 1
            for n in 0..<lowCount {
                low[n] = r
                r = (r << 8) ^ crc[Int(r >> 8)]
            }
            let step = r   // x^(8 · 4096)
            high[0] = 1
            for k in 1..<highCount { high[k] = AC4CRC16.multiply(high[k - 1], step, crc) }
            self.storage = storage
            work = count + 1 + lowCount + highCount
            view = View(prefix: prefix, count: count, low: low, high: high, crcTable: crc)
        }

        deinit { storage.deallocate() }
    }
}
