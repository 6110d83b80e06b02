import AC4
import TestSupport

/// A small ISO BMFF (MP4) writer for the tests: one audio track of raw AC-4
/// frames, as ETSI TS 103 190-2 Annex E binds AC-4 to the ISO base media
/// file format (FFmpeg muxes no AC-4 here, so the tests make their own):
///
/// ```
/// ftyp
/// moov  mvhd
///       trak  tkhd
///             mdia  mdhd, hdlr 'soun'
///                   minf  smhd, dinf/dref/'url '
///                         stbl  stsd('ac-4' AudioSampleEntry + 'dac4')
///                               stts, stsc, stsz, stco, stss (the I-frames)
/// mdat  the raw frames, in chunks of `framesPerChunk`
/// ```
///
/// Each sample is one `raw_ac4_frame`: a sync frame's payload without sync
/// word, frame size and CRC (docs/ac4-sync-frames.md). The media time scale
/// is the sample rate, each sample lasting its frame's samples (from the
/// TOC). The 'dac4' box holds an `ac4_dsi_v1` with the stream's fields
/// (version, fs_index, frame_rate_index, bit rate) and no presentation
/// descriptions (`n_presentations` 0): a real muxer describes each
/// presentation, but nothing here reads them (the DAA interface takes no
/// DSI, and FFmpeg 5.1 skips the box). A pure function. [any thread]
enum AC4MP4Writer {
    struct Frame {
        var raw: [UInt8]
        var samples: Int
        var isIFrame: Bool
    }

    /// The raw frames of a sync-frame file, in order, with their lengths
    /// and I-frame flags from the TOC.
    static func frames(ofSyncFrameFile path: String) throws -> (frames: [Frame], toc: AC4TOC) {
        let reader = try AC4FileReader(path: path)
        let all = reader.readAll().frames
        guard let first = all.first else { throw AC4MP4WriterError("\(path) holds no AC-4 sync frame") }
        return (all.map { Frame(raw: Array($0.payload), samples: $0.toc.samplesPerFrame, isIFrame: $0.toc.isIFrame) },
                first.toc)
    }

    /// The whole file.
    static func file(frames: [Frame], toc: AC4TOC, channelCount: Int = 2, framesPerChunk: Int = 10) -> [UInt8] {
        let ftyp = box("ftyp", Array("mp42".utf8) + u32(0) + Array("mp42isomdby1".utf8))
        let chunks = stride(from: 0, to: frames.count, by: framesPerChunk).map { Array(frames[$0..<min($0 + framesPerChunk, frames.count)]) }
        // moov's size does not depend on the chunk offsets' values: build it
        // once to learn where mdat's data starts, then with the offsets.
        func moov(dataStart: Int) -> [UInt8] {
            var offsets: [Int] = []
            var at = dataStart
            for chunk in chunks {
                offsets.append(at)
                at += chunk.reduce(0) { $0 + $1.raw.count }
            }
            return self.moov(frames: frames, chunks: chunks, offsets: offsets, toc: toc, channelCount: channelCount)
        }
        let size = moov(dataStart: 0).count
        let data = frames.flatMap(\.raw)
        return ftyp + moov(dataStart: ftyp.count + size + 8) + box("mdat", data)
    }

    // MARK: boxes

    static func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func u32(_ v: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(v >> $0 & 0xFF) } }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        u32(8 + payload.count) + Array(type.utf8) + payload
    }

    static func fullBox(_ type: String, version: Int = 0, flags: Int = 0, _ payload: [UInt8]) -> [UInt8] {
        box(type, [UInt8(version)] + Array(u32(flags).dropFirst()) + payload)
    }

    /// The unity matrix of mvhd and tkhd.
    static let matrix: [UInt8] = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x4000_0000].flatMap { u32($0) }

    static func moov(frames: [Frame], chunks: [[Frame]], offsets: [Int], toc: AC4TOC, channelCount: Int) -> [UInt8] {
        let rate = toc.sampleRate
        let duration = frames.reduce(0) { $0 + $1.samples }
        let mvhd = fullBox("mvhd", u32(0) + u32(0) + u32(rate) + u32(duration) + u32(0x10000) + u16(0x100)
                           + [UInt8](repeating: 0, count: 10) + matrix + [UInt8](repeating: 0, count: 24) + u32(2))
        let tkhd = fullBox("tkhd", flags: 3, u32(0) + u32(0) + u32(1) + u32(0) + u32(duration)
                           + [UInt8](repeating: 0, count: 8) + u16(0) + u16(0) + u16(0x100) + u16(0) + matrix + u32(0) + u32(0))
        let mdhd = fullBox("mdhd", u32(0) + u32(0) + u32(rate) + u32(duration) + u16(0x55C4) + u16(0))   // "und"
        let hdlr = fullBox("hdlr", u32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 12) + Array("SoundHandler\0".utf8))
        let dinf = box("dinf", fullBox("dref", u32(1) + fullBox("url ", flags: 1, [])))
        let stbl = box("stbl", stsd(toc: toc, channelCount: channelCount, bitRate: bitRate(frames, rate: rate))
                       + stts(frames) + stsc(chunks) + stsz(frames)
                       + fullBox("stco", u32(offsets.count) + offsets.flatMap { u32($0) })
                       + fullBox("stss", u32(frames.filter(\.isIFrame).count)
                                 + frames.indices.filter { frames[$0].isIFrame }.flatMap { u32($0 + 1) }))
        let minf = box("minf", fullBox("smhd", u32(0)) + dinf + stbl)
        return box("moov", mvhd + box("trak", tkhd + box("mdia", mdhd + hdlr + minf)))
    }

    /// The 'ac-4' AudioSampleEntry with its 'dac4' box.
    static func stsd(toc: AC4TOC, channelCount: Int, bitRate: Int) -> [UInt8] {
        let entry = box("ac-4", [UInt8](repeating: 0, count: 6) + u16(1) + u32(0) + u32(0)
                        + u16(channelCount) + u16(16) + u16(0) + u16(0) + u32(toc.sampleRate << 16)
                        + box("dac4", dsi(toc: toc, bitRate: bitRate)))
        return fullBox("stsd", u32(1) + entry)
    }

    /// `ac4_dsi_v1` with no presentations (see the type's comment).
    static func dsi(toc: AC4TOC, bitRate: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.put(1, 3)                                  // ac4_dsi_version
        bits.put(min(toc.bitstreamVersion, 127), 7)     // bitstream_version
        bits.put(toc.fsIndex, 1)
        bits.put(toc.frameRateIndex, 4)
        bits.put(0, 9)                                  // n_presentations
        if toc.bitstreamVersion > 1 { bits.put(0, 1) }  // b_program_id
        bits.put(2, 2)                                  // bit_rate_mode: average
        bits.put(bitRate, 32)                           // bit_rate
        bits.put(0xFFFF_FFFF, 32)                       // bit_rate_precision: unknown
        return bits.bytes                               // byte aligned
    }

    static func bitRate(_ frames: [Frame], rate: Int) -> Int {
        let samples = frames.reduce(0) { $0 + $1.samples }
        guard samples > 0 else { return 0 }
        return frames.reduce(0) { $0 + $1.raw.count } * 8 * rate / samples
    }

    /// Sample durations, run-length coded.
    static func stts(_ frames: [Frame]) -> [UInt8] {
        var runs: [(count: Int, delta: Int)] = []
        for f in frames {
            if let last = runs.last, last.delta == f.samples { runs[runs.count - 1].count += 1 } else { runs.append((1, f.samples)) }
        }
        return fullBox("stts", u32(runs.count) + runs.flatMap { u32($0.count) + u32($0.delta) })
    }

    /// Samples per chunk, one entry per change (first_chunk is 1-based).
    static func stsc(_ chunks: [[Frame]]) -> [UInt8] {
        var entries: [(first: Int, count: Int)] = []
        for (i, chunk) in chunks.enumerated() where entries.last?.count != chunk.count {
            entries.append((i + 1, chunk.count))
        }
        return fullBox("stsc", u32(entries.count) + entries.flatMap { u32($0.first) + u32($0.count) + u32(1) })
    }

    static func stsz(_ frames: [Frame]) -> [UInt8] {
        fullBox("stsz", u32(0) + u32(frames.count) + frames.flatMap { u32($0.raw.count) })
    }
}

struct AC4MP4WriterError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
