// libFuzzer target: the `media` source's open and read path on mutated
// bytes: `MediaFile(path:)` (libavformat's probe and stream description)
// on the bytes written to a scratch file, then a cursor over every audio
// stream the node would take (one with a sample rate; validation refuses
// the others) read to its end (at most `maximumFrames` frames), a seek
// back to the start and a few frames more. Any input must open or give an
// error, and read as frames or end: no crash, no hang. See Fuzz/README.md.

import AudioGraphMedia
import Foundation
import FuzzSupport

/// Frames read per stream and input: the inputs are at most 64 KiB, so a
/// real stream ends long before; a demuxer that makes frames out of
/// nothing is stopped here.
let maximumFrames = 20_000

let inputPath = (fuzzScratchFolder ?? NSTemporaryDirectory()) + "/input.media"

enum Target: FuzzTarget {
    /// One input. [main-thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard FileManager.default.createFile(atPath: inputPath, contents: Data(buffer: bytes)) else { return }
        let file: MediaFile
        do { file = try MediaFile(path: inputPath) } catch { _ = error.message; return }
        _ = file.defaultAudioStream
        // As the node takes them: audio with a sample rate (validation refuses the others).
        for stream in file.streams where stream.kind == "audio" && stream.sampleRate > 0 {
            _ = file.presentationFrames(of: stream, sampleRate: 48000)
            // A cursor owns the file: one at a time, each on a file of its own.
            let own: MediaFile
            do { own = try MediaFile(path: inputPath) } catch { continue }
            guard let cursor = try? own.cursor(over: stream, graphRate: 48000) else { continue }
            var read = 0
            while read < maximumFrames, let frame = cursor.next() {
                _ = frame
                read += 1
            }
            _ = cursor.streamInfo
            if cursor.seek(toSample: 0) != nil {
                for _ in 0..<4 { guard cursor.next() != nil else { break } }
            }
        }
    }

    /// Small synthetic media for the seed corpus (`fuzz-media
    /// --write-seeds FOLDER`): WAVs (16-bit stereo, float mono, 24-bit
    /// 5.1, one cut short), a few hundred bytes each; scripts/fuzz adds
    /// short files of other containers made by the ffmpeg CLI.
    static var seeds: [String: [UInt8]] {
        [
            "pcm16-stereo.wav": wav(format: 1, channels: 2, bits: 16, frames: 64),
            "float-mono.wav": wav(format: 3, channels: 1, bits: 32, frames: 64),
            "pcm24-5.1.wav": wav(format: 1, channels: 6, bits: 24, frames: 16),
            "truncated.wav": Array(wav(format: 1, channels: 2, bits: 16, frames: 64).prefix(60)),
        ]
    }
}

/// A RIFF/WAVE file of a quiet ramp.
func wav(format: UInt16, channels: UInt16, bits: UInt16, frames: Int) -> [UInt8] {
    func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    let blockAlign = channels * bits / 8
    var data: [UInt8] = []
    for i in 0..<(frames * Int(channels)) {
        for b in 0..<Int(bits / 8) { data.append(UInt8(truncatingIfNeeded: (i * 37) >> (b * 3))) }
    }
    let fmt = le16(format) + le16(channels) + le32(48000) + le32(48000 * UInt32(blockAlign)) + le16(blockAlign) + le16(bits)
    let body = Array("WAVE".utf8) + Array("fmt ".utf8) + le32(UInt32(fmt.count)) + fmt + Array("data".utf8) + le32(UInt32(data.count)) + data
    return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
}
