// libFuzzer target: the AC-4 sync-frame reader (AC4SyncFrameReader.readAll,
// with its resync, CRC and TOC parsing, and the index built from it). Any
// input must read as frames and skipped bytes: no crash, no hang. The
// statistics must account for every byte. See Fuzz/README.md.
//
// Without libFuzzer, `fuzz-ac4 --write-seeds FOLDER` writes the synthetic
// streams of Fuzz/seeds/ac4.

import AC4
import Foundation
import FuzzSupport

enum Target: FuzzTarget {
    /// One input. [any thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        let input = Array(bytes)
        let result = AC4SyncFrameReader.readAll(input)
        var previousEnd = 0
        for frame in result.frames {
            precondition(frame.wholeFrame.lowerBound >= previousEnd && frame.wholeFrame.upperBound <= input.count,
                         "frame \(frame.index) at \(frame.wholeFrame) overlaps or leaves the input")
            precondition(frame.payloadRange.lowerBound >= frame.wholeFrame.lowerBound
                         && frame.payloadRange.upperBound <= frame.wholeFrame.upperBound, "payload outside its frame")
            previousEnd = frame.wholeFrame.upperBound
        }
        _ = result.index
        _ = result.statistics.iFrameSpacing
    }

    /// The synthetic streams of Fuzz/seeds/ac4 (`fuzz-ac4 --write-seeds FOLDER`).
    static var seeds: [String: [UInt8]] { seedStreams() }
}

/// Small synthetic streams for the seed corpus: valid frames with and
/// without CRC, 16- and 24-bit sizes, a resync after garbage, a CRC error,
/// a truncated tail.
func seedStreams() -> [String: [UInt8]] {
    func raw(_ toc: AC4TOC, size: Int, fill: UInt8) -> [UInt8] {
        let head = toc.encodedFields()
        return head + [UInt8](repeating: fill, count: max(size - head.count, 0))
    }
    func toc(_ seq: Int, version: Int = 2, wait: Int? = nil, fs: Int = 1, rate: Int = 13, iFrame: Bool = true) -> AC4TOC {
        AC4TOC(bitstreamVersion: version, sequenceCounter: seq, waitFrames: wait, fsIndex: fs,
               frameRateIndex: rate, isIFrame: iFrame)
    }
    let a = AC4SyncFrameWriter.syncFrame(raw: raw(toc(1), size: 40, fill: 0x11))
    let b = AC4SyncFrameWriter.syncFrame(raw: raw(toc(2, iFrame: false), size: 40, fill: 0x22))
    let c = AC4SyncFrameWriter.syncFrame(raw: raw(toc(3, version: 4, wait: 2), size: 60, fill: 0x33), withCRC: false)
    let d = AC4SyncFrameWriter.syncFrame(raw: raw(toc(4, wait: 0, rate: 2), size: 30, fill: 0x44), forceLongSize: true)
    let e = AC4SyncFrameWriter.syncFrame(raw: raw(toc(5, version: 9, fs: 0, iFrame: false), size: 20, fill: 0x55))
    var corrupt = b
    corrupt[10] ^= 0xFF
    return [
        "valid-crc.ac4": a + b + a,
        "mixed.ac4": a + b + c + d + e,
        "no-crc.ac4": c + c,
        "long-size.ac4": d + d,
        "garbage-then-frames.ac4": [0x00, 0xAC, 0x41, 0x12, 0xAC, 0x40] + a + b,
        "crc-error.ac4": a + corrupt + a,
        "truncated-tail.ac4": a + b + Array(a.prefix(a.count / 2)),
        "sequence-gap.ac4": a + e + b,
    ]
}
