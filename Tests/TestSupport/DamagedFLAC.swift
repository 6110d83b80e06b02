import Foundation

/// A damaged FLAC for the tests of damaged input (issue 22 item 10), made
/// with the ffmpeg tool: 2 s of a 440 Hz sine, stereo, 48 kHz, written whole
/// to `intact`, and its first 30 % followed by 20,000 bytes of pseudo-random
/// garbage written to `damaged`. Throws `Unavailable` when ffmpeg is
/// missing or cannot make the file (the callers skip).
public enum DamagedFLAC {
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    public static func make(intact: String, damaged: String) throws {
        guard let ffmpeg = findExecutable("ffmpeg") else { throw Unavailable(description: "ffmpeg is not installed (scripts/test installs it)") }
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=2:sample_rate=48000",
                                     "-ac", "2", intact])
        guard r.status == 0 else { throw Unavailable(description: "ffmpeg could not make a FLAC: \(r.stderr)") }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: intact)))
        var state: UInt32 = 12345
        let garbage = (0..<20_000).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        try Data(bytes[0..<(bytes.count * 3 / 10)] + garbage).write(to: URL(fileURLWithPath: damaged))
    }
}
