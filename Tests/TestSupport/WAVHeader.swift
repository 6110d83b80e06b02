import Foundation

/// What the tests read straight from a WAV file's chunks.
public enum WAVHeader {
    /// The channel mask (`dwChannelMask`) of a WAVE_FORMAT_EXTENSIBLE
    /// file's `fmt ` chunk, or nil for another format tag or no such chunk.
    public static func channelMask(_ path: String) throws -> UInt32? {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var p = 12
        while p + 8 <= bytes.count {
            let id = String(decoding: bytes[p..<(p + 4)], as: UTF8.self)
            let size = Int(bytes[p + 4]) | Int(bytes[p + 5]) << 8 | Int(bytes[p + 6]) << 16 | Int(bytes[p + 7]) << 24
            if id == "fmt " {
                let body = p + 8
                guard size >= 24, body + 24 <= bytes.count, bytes[body] == 0xFE, bytes[body + 1] == 0xFF else { return nil }
                return (body + 20..<body + 24).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[$1]) }
            }
            p += 8 + size + (size & 1)
        }
        return nil
    }
}
