/// Wraps `raw_ac4_frame`s in sync frames (for tests and for re-muxing raw
/// frames from MP4 into `.ac4`). [any-thread]
public enum AC4SyncFrameWriter {
    /// The sync frame for `raw`: sync word (0xAC41 with CRC, else 0xAC40),
    /// `frame_size` (16-bit, or 0xFFFF and a 24-bit size when the size is
    /// 0xFFFF or more, or when `forceLongSize`), the frame, and the CRC word.
    /// `raw` must be 1 … 0xFFFFFF bytes.
    public static func syncFrame<C: Collection>(raw: C, withCRC: Bool = true, forceLongSize: Bool = false) -> [UInt8]
    where C.Element == UInt8 {
        let size = raw.count
        precondition(size > 0 && size <= 0xFF_FFFF, "raw_ac4_frame must be 1 … 16777215 bytes")
        var out: [UInt8] = [0xAC, withCRC ? 0x41 : 0x40]
        if size >= 0xFFFF || forceLongSize {
            out += [0xFF, 0xFF, UInt8(size >> 16), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF)]
        } else {
            out += [UInt8(size >> 8), UInt8(size & 0xFF)]
        }
        out.append(contentsOf: raw)
        if withCRC {
            let crc = AC4CRC16.checksum(out[2...])
            out += [UInt8(crc >> 8), UInt8(crc & 0xFF)]
        }
        return out
    }
}

extension AC4TOC {
    /// The TOC fields this value holds, encoded as `parse` reads them, padded
    /// with zero bits to whole bytes (the rest of a real TOC would follow).
    /// For synthetic test streams.
    public func encodedFields() -> [UInt8] {
        var bits: [Bool] = []
        func put(_ value: Int, _ n: Int) {
            for i in stride(from: n - 1, through: 0, by: -1) { bits.append((value >> i) & 1 == 1) }
        }
        if bitstreamVersion < 3 {
            put(bitstreamVersion, 2)
        } else {
            put(3, 2)
            // variable_bits(2) of bitstreamVersion - 3: chunks, most significant first.
            var chunks: [Int] = []
            var v = bitstreamVersion - 3
            while true {
                chunks.insert(v & 3, at: 0)
                v >>= 2
                if v == 0 { break }
                v -= 1
            }
            for (i, c) in chunks.enumerated() { put(c, 2); put(i < chunks.count - 1 ? 1 : 0, 1) }
        }
        put(sequenceCounter, 10)
        if let w = waitFrames {
            put(1, 1); put(w, 3)
            if w > 0 { put(0, 2) }
        } else {
            put(0, 1)
        }
        put(fsIndex, 1)
        put(frameRateIndex, 4)
        put(isIFrame ? 1 : 0, 1)
        while bits.count % 8 != 0 { bits.append(false) }
        return stride(from: 0, to: bits.count, by: 8).map { start in
            bits[start..<start + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        }
    }
}
