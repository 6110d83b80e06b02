import AC4
import Foundation
import TestSupport
import XCTest

/// The AC-4 sync-frame reader: facts of the real test file, resync on damaged
/// copies of it, synthetic streams (24-bit sizes, version extension, sequence
/// wrap), CRC-16 known answers, the index and the file reader's errors.
final class AC4Tests: XCTestCase {
    struct MissingMedia: Error, CustomStringConvertible {
        let path: String
        var description: String { "test media missing: \(path)" }
    }

    /// `Tests/Media/ChannelCheck.ac4`, found from the package root.
    static let channelCheckPath: String = TestMedia.channelCheck

    /// The bytes of ChannelCheck.ac4; fails the test (not skips) when missing.
    func channelCheck(file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        guard FileManager.default.fileExists(atPath: Self.channelCheckPath) else {
            XCTFail("ChannelCheck.ac4 is missing: expected at \(Self.channelCheckPath) (Tests/Media/ in the repository)",
                    file: file, line: line)
            throw MissingMedia(path: Self.channelCheckPath)
        }
        return try AC4FileReader(path: Self.channelCheckPath).bytes
    }

    /// `count` bytes from a fixed-seed generator, none of them 0xAC (so no sync word can appear).
    func garbage(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
        var state = seed
        var out: [UInt8] = []
        while out.count < count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let b = UInt8(truncatingIfNeeded: state >> 33)
            if b != 0xAC { out.append(b) }
        }
        return out
    }

    /// Frames + skipped + tail account for every byte.
    func assertAccounted(_ r: AC4ReadResult, _ total: Int, file: StaticString = #filePath, line: UInt = #line) {
        let s = r.statistics
        XCTAssertEqual(s.frameBytes + s.skippedBytes + (s.truncatedTail?.bytes ?? 0), total,
                       "every byte is in a frame, skipped, or in the tail", file: file, line: line)
        XCTAssertEqual(r.frames.map(\.length).reduce(0, +), s.frameBytes, file: file, line: line)
    }

    // MARK: ChannelCheck.ac4

    /// Facts of ChannelCheck.ac4 (cross-checked with an independent Python
    /// scan of the file): 846 frames of 2048 samples at 48 kHz
    /// (frame_rate_index 13) = 1 732 608 samples = 36.096 s; bitstream
    /// version 2; CRC on every frame; sequence counters 1020, 1, 2, … 845
    /// (one wrap, no gap); an I-frame every 24 frames (0, 24, …, 840 = 36).
    func testChannelCheckFacts() throws {
        let bytes = try channelCheck()
        XCTAssertEqual(bytes.count, 1_449_633)
        let r = AC4SyncFrameReader.readAll(bytes)
        let s = r.statistics
        XCTAssertEqual(s.validFrames, 846)
        XCTAssertEqual(r.frames.count, 846)
        XCTAssertEqual(s.framesWithCRC, 846)
        XCTAssertEqual(s.crcErrors, 0)
        XCTAssertEqual(s.tocErrors, 0)
        XCTAssertEqual(s.skippedBytes, 0)
        XCTAssertEqual(s.resyncs, 0)
        XCTAssertEqual(s.sequenceGaps, 0)
        XCTAssertEqual(s.splices, 0)
        XCTAssertNil(s.truncatedTail)
        XCTAssertEqual(s.bitstreamVersions, [2])
        XCTAssertEqual(s.totalSamples, 846 * 2048)
        XCTAssertEqual(s.durationSeconds, 36.096, accuracy: 1e-9)
        XCTAssertEqual(s.iFrames, 36)
        XCTAssertEqual(s.iFrameIndices, Array(stride(from: 0, through: 840, by: 24)))
        XCTAssertEqual(s.iFrameSpacing, AC4IFrameSpacing(min: 24, max: 24, typical: 24))
        assertAccounted(r, bytes.count)

        let toc = try XCTUnwrap(s.firstTOC)
        XCTAssertEqual(toc.bitstreamVersion, 2)
        XCTAssertEqual(toc.sequenceCounter, 1020)
        XCTAssertEqual(toc.waitFrames, 6)
        XCTAssertEqual(toc.fsIndex, 1)
        XCTAssertEqual(toc.sampleRate, 48_000)
        XCTAssertEqual(toc.frameRateIndex, 13)
        XCTAssertEqual(toc.framesPerSecond, 23.4375)
        XCTAssertEqual(toc.samplesPerFrame, 2048)
        XCTAssertTrue(toc.samplesPerFrameIsExact)
        XCTAssertTrue(toc.isIFrame)

        // Frames tile the file; sizes, sequence, timestamps, all consistent.
        var expectedOffset = 0
        for (i, f) in r.frames.enumerated() {
            XCTAssertEqual(f.index, i)
            XCTAssertEqual(f.offset, expectedOffset)
            XCTAssertEqual(f.syncWord, 0xAC41)
            XCTAssertTrue(f.hasCRC)
            XCTAssertEqual(f.headerLength, 4)
            XCTAssertEqual(f.wholeFrame, f.offset..<(f.offset + 4 + f.frameSize + 2))
            XCTAssertEqual(f.payloadRange, (f.offset + 4)..<(f.offset + 4 + f.frameSize))
            XCTAssertEqual(f.payload.count, f.frameSize)
            XCTAssertEqual(f.payload.startIndex, f.payloadRange.lowerBound)
            XCTAssertEqual(f.toc.sequenceCounter, i == 0 ? 1020 : i)
            XCTAssertEqual(f.timestamp, i * 2048)
            XCTAssertEqual(f.toc.isIFrame, i % 24 == 0)
            expectedOffset = f.wholeFrame.upperBound
        }
        XCTAssertEqual(expectedOffset, bytes.count)
        XCTAssertEqual(r.frames.map(\.frameSize).min(), 715)
        XCTAssertEqual(r.frames.map(\.frameSize).max(), 2664)
    }

    /// The CRC property of the doc on every real frame: CRC over
    /// frame_size … crc_word is 0, and the CRC over frame_size … frame is the stored word.
    func testCRCPropertyOnEveryRealFrame() throws {
        let bytes = try channelCheck()
        var n = 0
        for f in AC4SyncFrameReader(bytes) {
            XCTAssertEqual(AC4CRC16.checksum(bytes[(f.offset + 2)..<f.wholeFrame.upperBound]), 0)
            XCTAssertEqual(AC4CRC16.checksum(bytes[(f.offset + 2)..<f.payloadRange.upperBound]), f.crcWord)
            n += 1
        }
        XCTAssertEqual(n, 846)
    }

    func testFileReaderIteratesLikeTheBufferReaderAndOverARawBuffer() throws {
        let bytes = try channelCheck()
        let file = try AC4FileReader(path: Self.channelCheckPath)
        XCTAssertEqual(file.path, Self.channelCheckPath)
        XCTAssertEqual(file.readAll(), AC4SyncFrameReader.readAll(bytes))
        XCTAssertEqual(Array(file).count, 846)
        var raw = bytes.withUnsafeBytes { AC4SyncFrameReader($0) }
        var n = 0
        while raw.next() != nil { n += 1 }
        XCTAssertTrue(raw.isFinished)
        XCTAssertEqual(n, 846)
        XCTAssertEqual(raw.statistics.validFrames, 846)
        XCTAssertNil(raw.next(), "stays finished")
    }

    // MARK: damaged copies

    /// (a) Bytes flipped inside one frame's payload: that frame alone is a CRC
    /// error, its bytes are skipped, the others are read; its absence is a sequence gap.
    func testFlippedBytesMakeExactlyOneCRCError() throws {
        let bytes = try channelCheck()
        let frames = AC4SyncFrameReader.readAll(bytes).frames
        let victim = frames[100]
        var damaged = bytes
        for k in [10, 11, 500, victim.frameSize - 3] { damaged[victim.payloadRange.lowerBound + k] ^= 0x5A }
        let r = AC4SyncFrameReader.readAll(damaged)
        let s = r.statistics
        XCTAssertEqual(s.validFrames, 845)
        XCTAssertEqual(s.crcErrors, 1)
        XCTAssertEqual(s.crcErrorOffsets, [victim.offset])
        XCTAssertEqual(s.skippedBytes, victim.length)
        XCTAssertEqual(s.resyncs, 1)
        XCTAssertEqual(s.sequenceGaps, 1)
        XCTAssertEqual(s.sequenceGapFrameIndices, [100])
        XCTAssertNil(s.truncatedTail)
        XCTAssertEqual(r.frames.map(\.offset), frames.filter { $0.index != 100 }.map(\.offset))
        assertAccounted(r, damaged.count)
    }

    /// A flipped bit in the size field: the frame cannot be found; the
    /// reader resyncs on the next one.
    func testCorruptSizeFieldResyncs() throws {
        let bytes = try channelCheck()
        let frames = AC4SyncFrameReader.readAll(bytes).frames
        let victim = frames[300]
        var damaged = bytes
        damaged[victim.offset + 3] ^= 0x01
        let r = AC4SyncFrameReader.readAll(damaged)
        XCTAssertEqual(r.statistics.validFrames, 845)
        XCTAssertEqual(r.statistics.skippedBytes, victim.length)
        XCTAssertEqual(r.statistics.resyncs, 1)
        XCTAssertEqual(r.frames[300].offset, frames[301].offset)
        assertAccounted(r, damaged.count)
    }

    /// (b) 1000 bytes of garbage between two frames: exactly those are skipped, in one resync.
    func testGarbageBetweenFramesIsSkipped() throws {
        let bytes = try channelCheck()
        let frames = AC4SyncFrameReader.readAll(bytes).frames
        let at = frames[401].offset
        let junk = garbage(1000)
        XCTAssertFalse(junk.contains(0xAC))
        let damaged = Array(bytes[..<at]) + junk + Array(bytes[at...])
        let r = AC4SyncFrameReader.readAll(damaged)
        let s = r.statistics
        XCTAssertEqual(s.validFrames, 846)
        XCTAssertEqual(s.skippedBytes, 1000)
        XCTAssertEqual(s.resyncs, 1)
        XCTAssertEqual(s.crcErrors, 0)
        XCTAssertEqual(s.sequenceGaps, 0)
        XCTAssertNil(s.truncatedTail)
        XCTAssertEqual(r.frames[400].offset, frames[400].offset)
        XCTAssertEqual(r.frames[401].offset, at + 1000)
        XCTAssertEqual(r.frames[401].timestamp, 401 * 2048, "garbage takes no time")
        assertAccounted(r, damaged.count)
    }

    /// Garbage that contains sync words (0xAC41 with sizes that fit) is still skipped exactly.
    func testGarbageWithFalseSyncWordsIsSkipped() throws {
        let bytes = try channelCheck()
        let frames = AC4SyncFrameReader.readAll(bytes).frames
        let at = frames[200].offset
        var junk = garbage(3000, seed: 7)
        for k in stride(from: 0, to: 2900, by: 97) { junk[k] = 0xAC; junk[k + 1] = 0x41; junk[k + 2] = 0x00 }
        let damaged = Array(bytes[..<at]) + junk + Array(bytes[at...])
        let r = AC4SyncFrameReader.readAll(damaged)
        XCTAssertEqual(r.statistics.validFrames, 846)
        XCTAssertEqual(r.statistics.skippedBytes, 3000)
        XCTAssertEqual(r.statistics.resyncs, 1)
        XCTAssertEqual(r.statistics.sequenceGaps, 0)
        assertAccounted(r, damaged.count)
    }

    /// (c) One whole frame cut out: one frame fewer, one sequence gap, nothing skipped.
    func testCutFrameIsASequenceGap() throws {
        let bytes = try channelCheck()
        let frames = AC4SyncFrameReader.readAll(bytes).frames
        let cut = frames[50]
        let damaged = Array(bytes[..<cut.offset]) + Array(bytes[cut.wholeFrame.upperBound...])
        let r = AC4SyncFrameReader.readAll(damaged)
        let s = r.statistics
        XCTAssertEqual(s.validFrames, 845)
        XCTAssertEqual(s.sequenceGaps, 1)
        XCTAssertEqual(s.sequenceGapFrameIndices, [50])
        XCTAssertEqual(s.skippedBytes, 0)
        XCTAssertEqual(s.crcErrors, 0)
        XCTAssertEqual(s.resyncs, 0)
        XCTAssertEqual(r.frames[50].toc.sequenceCounter, 51)
        XCTAssertEqual(r.frames[50].timestamp, 50 * 2048)
        assertAccounted(r, damaged.count)
    }

    /// (d) The file cut in the middle of the last frame: the tail is reported,
    /// the frame is not yielded.
    func testTruncatedLastFrameIsReportedNotUsed() throws {
        let bytes = try channelCheck()
        let last = try XCTUnwrap(AC4SyncFrameReader.readAll(bytes).frames.last)
        let keep = last.offset + last.length / 2
        let r = AC4SyncFrameReader.readAll(Array(bytes[..<keep]))
        let s = r.statistics
        XCTAssertEqual(s.validFrames, 845)
        XCTAssertEqual(r.frames.last?.index, 844)
        XCTAssertEqual(s.skippedBytes, 0)
        XCTAssertEqual(s.crcErrors, 0)
        let tail = try XCTUnwrap(s.truncatedTail)
        XCTAssertEqual(tail.offset, last.offset)
        XCTAssertEqual(tail.bytes, last.length / 2)
        XCTAssertTrue(tail.hasPartialFrame)
        XCTAssertEqual(tail.partialFrameOffset, last.offset)
        XCTAssertEqual(tail.declaredFrameLength, last.length)
        assertAccounted(r, keep)

        // Cut inside the size field: still a partial frame, length unknown.
        let r2 = AC4SyncFrameReader.readAll(Array(bytes[..<(last.offset + 3)]))
        XCTAssertEqual(r2.statistics.validFrames, 845)
        XCTAssertEqual(r2.statistics.truncatedTail?.bytes, 3)
        XCTAssertEqual(r2.statistics.truncatedTail?.partialFrameOffset, last.offset)
        XCTAssertNil(r2.statistics.truncatedTail?.declaredFrameLength)
    }

    /// Trailing garbage without a sync word: a tail, but no partial frame.
    func testTrailingGarbageIsATailWithoutPartialFrame() throws {
        let bytes = try channelCheck()
        let r = AC4SyncFrameReader.readAll(bytes + garbage(300))
        XCTAssertEqual(r.statistics.validFrames, 846)
        XCTAssertEqual(r.statistics.truncatedTail, AC4TruncatedTail(offset: bytes.count, bytes: 300))
        XCTAssertEqual(r.statistics.truncatedTail?.hasPartialFrame, false)
        XCTAssertEqual(r.statistics.skippedBytes, 0)
    }

    /// (e) Garbage at the very start: skipped, the first frame is still index 0 at timestamp 0.
    func testGarbageAtStart() throws {
        let bytes = try channelCheck()
        let damaged = garbage(777, seed: 42) + bytes
        let r = AC4SyncFrameReader.readAll(damaged)
        let s = r.statistics
        XCTAssertEqual(s.validFrames, 846)
        XCTAssertEqual(s.skippedBytes, 777)
        XCTAssertEqual(s.resyncs, 1)
        XCTAssertEqual(s.crcErrors, 0)
        XCTAssertEqual(s.sequenceGaps, 0)
        XCTAssertEqual(r.frames.first?.offset, 777)
        XCTAssertEqual(r.frames.first?.index, 0)
        XCTAssertEqual(r.frames.first?.timestamp, 0)
        assertAccounted(r, damaged.count)
    }

    func testNoValidFrame() {
        let r = AC4SyncFrameReader.readAll(garbage(5000))
        XCTAssertEqual(r.statistics.validFrames, 0)
        XCTAssertNil(r.statistics.firstTOC)
        XCTAssertEqual(r.statistics.truncatedTail?.bytes, 5000)
        XCTAssertEqual(AC4SyncFrameReader.readAll([]).statistics, AC4Statistics())
    }

    // MARK: synthetic streams

    func rawFrame(_ toc: AC4TOC, size: Int, fill: UInt8 = 0x33) -> [UInt8] {
        let head = toc.encodedFields()
        return head + [UInt8](repeating: fill, count: size - head.count)
    }

    /// (f) 24-bit sizes (frame_size 0xFFFF escape), frames without CRC, the
    /// bitstream_version extension and wait_frames, read correctly.
    func testSyntheticStreamWith24BitSizes() throws {
        let tocA = AC4TOC(bitstreamVersion: 2, sequenceCounter: 1, fsIndex: 1, frameRateIndex: 13, isIFrame: true)
        let tocB = AC4TOC(bitstreamVersion: 4, sequenceCounter: 2, waitFrames: 2, fsIndex: 1, frameRateIndex: 13, isIFrame: false)
        let tocC = AC4TOC(bitstreamVersion: 2, sequenceCounter: 3, waitFrames: 0, fsIndex: 1, frameRateIndex: 2, isIFrame: true)
        let tocD = AC4TOC(bitstreamVersion: 9, sequenceCounter: 4, fsIndex: 0, frameRateIndex: 13, isIFrame: false)
        let rawA = rawFrame(tocA, size: 70_000, fill: 0x11)
        let rawB = rawFrame(tocB, size: 1500, fill: 0x22)
        let rawC = rawFrame(tocC, size: 300, fill: 0x44)
        let rawD = rawFrame(tocD, size: 100, fill: 0x55)
        let a = AC4SyncFrameWriter.syncFrame(raw: rawA)
        let b = AC4SyncFrameWriter.syncFrame(raw: rawB)
        let c = AC4SyncFrameWriter.syncFrame(raw: rawC, withCRC: true, forceLongSize: true)
        let d = AC4SyncFrameWriter.syncFrame(raw: rawD, withCRC: false)
        XCTAssertEqual(Array(a[0..<7]), [0xAC, 0x41, 0xFF, 0xFF, 0x01, 0x11, 0x70])
        XCTAssertEqual(Array(c[0..<7]), [0xAC, 0x41, 0xFF, 0xFF, 0x00, 0x01, 0x2C])
        XCTAssertEqual(Array(d[0..<4]), [0xAC, 0x40, 0x00, 0x64])
        // The CRC covers both size fields: frame_size … crc_word gives 0.
        XCTAssertEqual(AC4CRC16.checksum(a[2...]), 0)
        let stream = a + b + c + d
        let r = AC4SyncFrameReader.readAll(stream)
        XCTAssertEqual(r.frames.count, 4)
        XCTAssertEqual(r.statistics.crcErrors, 0)
        XCTAssertEqual(r.statistics.skippedBytes, 0)
        XCTAssertEqual(r.statistics.sequenceGaps, 0)
        XCTAssertNil(r.statistics.truncatedTail)
        XCTAssertEqual(r.statistics.framesWithCRC, 3)
        XCTAssertEqual(r.statistics.bitstreamVersions, [2, 4, 9])
        XCTAssertEqual(r.statistics.iFrameIndices, [0, 2])

        let f = r.frames
        XCTAssertEqual(f.map(\.toc), [tocA, tocB, tocC, tocD])
        XCTAssertEqual(f.map(\.frameSize), [70_000, 1500, 300, 100])
        XCTAssertEqual(f.map(\.headerLength), [7, 4, 7, 4])
        XCTAssertEqual(f.map(\.offset), [0, a.count, a.count + b.count, a.count + b.count + c.count])
        XCTAssertEqual(f.map(\.hasCRC), [true, true, true, false])
        XCTAssertEqual(f.map(\.length), [a.count, b.count, c.count, d.count])
        XCTAssertEqual(a.count, 2 + 2 + 3 + 70_000 + 2)
        XCTAssertEqual(Array(f[0].payload), rawA)
        XCTAssertEqual(Array(f[2].payload), rawC)
        XCTAssertEqual(Array(f[3].payload), rawD)
        XCTAssertNil(f[3].crcWord)
        XCTAssertEqual(f[2].toc.samplesPerFrame, 1920, "25 fps at 48 kHz")
        XCTAssertEqual(f[3].toc.sampleRate, 44_100)
        XCTAssertEqual(f[3].toc.samplesPerFrame, 2048)
        XCTAssertEqual(f.map(\.timestamp), [0, 2048, 4096, 4096 + 1920])
        XCTAssertEqual(r.statistics.totalSamples, 4096 + 1920 + 2048)
        XCTAssertEqual(r.statistics.durationSeconds, 4096.0 / 48000 + 1920.0 / 48000 + 2048.0 / 44100, accuracy: 1e-12)

        // A damaged 24-bit frame is a CRC error of its whole length.
        var damaged = stream
        damaged[30_000] ^= 0xFF
        let rd = AC4SyncFrameReader.readAll(damaged)
        XCTAssertEqual(rd.frames.count, 3)
        XCTAssertEqual(rd.statistics.crcErrors, 1)
        XCTAssertEqual(rd.statistics.skippedBytes, a.count)
        assertAccounted(rd, damaged.count)
    }

    func testSequenceWrapSpliceAndGap() {
        func stream(_ counters: [Int]) -> AC4Statistics {
            let bytes = counters.flatMap { seq in
                AC4SyncFrameWriter.syncFrame(raw: rawFrame(
                    AC4TOC(bitstreamVersion: 2, sequenceCounter: seq, fsIndex: 1, frameRateIndex: 13, isIFrame: false), size: 40))
            }
            return AC4SyncFrameReader.readAll(bytes).statistics
        }
        let wrap = stream([1018, 1019, 1020, 1, 2])
        XCTAssertEqual(wrap.validFrames, 5)
        XCTAssertEqual(wrap.sequenceGaps, 0)
        let splice = stream([5, 6, 0, 300, 301])
        XCTAssertEqual(splice.splices, 1)
        XCTAssertEqual(splice.sequenceGaps, 0)
        let gaps = stream([5, 6, 9, 10, 1020, 2, 0, 1])
        XCTAssertEqual(gaps.sequenceGaps, 3, "6→9, 10→1020, 1020→2")
        XCTAssertEqual(gaps.sequenceGapFrameIndices, [2, 4, 5])
        XCTAssertEqual(gaps.splices, 1)
        XCTAssertEqual(stream([1020, 0]).sequenceGaps, 0)
        XCTAssertEqual(stream([1020, 1021]).sequenceGaps, 1)
    }

    // MARK: TOC

    func testFrameRateTable() {
        func toc(_ i: Int, fs: Int = 1) -> AC4TOC {
            AC4TOC(bitstreamVersion: 2, sequenceCounter: 1, fsIndex: fs, frameRateIndex: i, isIFrame: true)
        }
        XCTAssertEqual((0...13).map { toc($0).samplesPerFrame },
                       [2002, 2000, 1920, 1602, 1600, 1001, 1000, 960, 801, 800, 480, 400, 400, 2048])
        XCTAssertEqual((0...13).filter { !toc($0).samplesPerFrameIsExact }, [3, 8, 11])
        XCTAssertEqual(toc(3).exactSamplesPerFrame, 1601.6, accuracy: 1e-9)
        XCTAssertEqual(toc(0).framesPerSecond, 23.976, accuracy: 1e-3)
        XCTAssertEqual(toc(13).framesPerSecond, 23.4375)
        XCTAssertEqual(toc(13, fs: 0).framesPerSecond, 44_100.0 / 2048)
        XCTAssertEqual(toc(13, fs: 0).samplesPerFrame, 2048)
        XCTAssertTrue(toc(13, fs: 0).samplesPerFrameIsExact)
        XCTAssertFalse(toc(1, fs: 0).samplesPerFrameIsExact)
    }

    func testTOCParsing() throws {
        for version in [0, 1, 2, 3, 4, 6, 7, 8, 20, 100] {
            for wait in [nil, 0, 5] as [Int?] {
                let t = AC4TOC(bitstreamVersion: version, sequenceCounter: 777, waitFrames: wait,
                               fsIndex: 1, frameRateIndex: 9, isIFrame: true)
                XCTAssertEqual(try AC4TOC.parse(t.encodedFields()).get(), t, "version \(version) wait \(String(describing: wait))")
            }
        }
        // Hand-made bits: bitstream_version 3, then variable_bits(2) = 01 and stop bit 0 → 3 + 1 = 4;
        // sequence_counter 3; b_wait_frames 0; fs_index 1; frame_rate_index 13; b_iframe_global 1.
        let bits = "11" + "010" + "0000000011" + "0" + "1" + "1101" + "1" + "00"
        let bytes = stride(from: 0, to: bits.count, by: 8).map { i -> UInt8 in
            let s = bits.index(bits.startIndex, offsetBy: i)
            return UInt8(bits[s..<bits.index(s, offsetBy: 8)], radix: 2)!
        }
        XCTAssertEqual(try AC4TOC.parse(bytes).get(),
                       AC4TOC(bitstreamVersion: 4, sequenceCounter: 3, fsIndex: 1, frameRateIndex: 13, isIFrame: true))
        XCTAssertEqual(AC4TOC.parse([0x80]), .failure(.truncated))
        let reserved = AC4TOC(bitstreamVersion: 2, sequenceCounter: 1, fsIndex: 1, frameRateIndex: 14, isIFrame: false)
        XCTAssertEqual(AC4TOC.parse(reserved.encodedFields()), .failure(.reservedFrameRateIndex(14)))

        // A frame with a good CRC but an unreadable TOC is skipped and counted.
        let bad = AC4SyncFrameWriter.syncFrame(raw: reserved.encodedFields() + [0, 0, 0])
        let good = AC4SyncFrameWriter.syncFrame(raw: rawFrame(
            AC4TOC(bitstreamVersion: 2, sequenceCounter: 2, fsIndex: 1, frameRateIndex: 13, isIFrame: true), size: 20))
        let r = AC4SyncFrameReader.readAll(bad + good)
        XCTAssertEqual(r.frames.count, 1)
        XCTAssertEqual(r.statistics.tocErrors, 1)
        XCTAssertEqual(r.statistics.skippedBytes, bad.count)
    }

    // MARK: CRC-16

    func testCRC16KnownAnswers() {
        XCTAssertEqual(AC4CRC16.checksum(Array("123456789".utf8)), 0xFEE8, "CRC-16/UMTS check value")
        XCTAssertEqual(AC4CRC16.checksum([UInt8]()), 0)
        XCTAssertEqual(AC4CRC16.checksum([0x00]), 0)
        XCTAssertEqual(AC4CRC16.checksum([0x01]), 0x8005, "one bit shifted through: the polynomial")
        XCTAssertEqual(AC4CRC16.checksum([0x41]), 0x0186)
        XCTAssertEqual(AC4CRC16.checksum([0x80]), 0x8303)
        XCTAssertEqual(AC4CRC16.checksum([0xFF, 0xFF]), 0x800D)
        XCTAssertEqual(AC4CRC16.checksum(Array(0...255) as [UInt8]), 0x3B7A)
        // Incremental = one shot.
        let data = Array("The quick brown fox jumps over the lazy dog".utf8)
        XCTAssertEqual(AC4CRC16.update(AC4CRC16.checksum(data[..<10]), data[10...]), AC4CRC16.checksum(data))
        // Appending the CRC (big-endian) gives 0.
        let crc = AC4CRC16.checksum(data)
        XCTAssertEqual(AC4CRC16.checksum(data + [UInt8(crc >> 8), UInt8(crc & 0xFF)]), 0)
    }

    // MARK: index

    func testIndexFindsIFrameAtOrBeforeSample() throws {
        let bytes = try channelCheck()
        let result = AC4SyncFrameReader.readAll(bytes)
        let index = result.index
        XCTAssertEqual(index, AC4Index(bytes: bytes))
        XCTAssertEqual(index.entries.count, 846)
        XCTAssertEqual(index.totalSamples, 846 * 2048)
        XCTAssertEqual(index.iFrames.map(\.frameIndex), Array(stride(from: 0, through: 840, by: 24)))
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 0)?.frameIndex, 0)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 24 * 2048 - 1)?.frameIndex, 0)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 24 * 2048)?.frameIndex, 24)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 30 * 2048 + 5)?.frameIndex, 24)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 30 * 2048 + 5)?.timestamp, 24 * 2048)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 30 * 2048 + 5)?.offset, result.frames[24].offset)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 30 * 2048 + 5)?.wholeFrame, result.frames[24].wholeFrame)
        XCTAssertEqual(index.iFrame(atOrBeforeSample: 10_000_000)?.frameIndex, 840)
        XCTAssertNil(index.iFrame(atOrBeforeSample: -1))
        XCTAssertEqual(index.frame(containingSample: 0)?.frameIndex, 0)
        XCTAssertEqual(index.frame(containingSample: 30 * 2048 + 5)?.frameIndex, 30)
        XCTAssertEqual(index.frame(containingSample: 846 * 2048 - 1)?.frameIndex, 845)
        XCTAssertNil(index.frame(containingSample: 846 * 2048))
        XCTAssertNil(AC4Index(frames: []).iFrame(atOrBeforeSample: 0))
    }

    // MARK: file errors

    func testFileReaderErrorsNameTheFileAndReason() throws {
        let dir = try TemporaryDirectory("ac4-test")
        let missing = dir.file("missing.ac4")
        XCTAssertThrowsError(try AC4FileReader(path: missing)) { error in
            XCTAssertEqual("\(error)", "\(missing): cannot open: No such file or directory")
        }
        XCTAssertThrowsError(try AC4FileReader(path: dir.path)) { error in
            XCTAssertEqual("\(error)", "\(dir.path): is a directory, not an AC-4 file")
        }
        let empty = dir.file("empty.ac4")
        XCTAssertTrue(FileManager.default.createFile(atPath: empty, contents: Data()))
        XCTAssertEqual(try AC4FileReader(path: empty).bytes, [])
    }
}
