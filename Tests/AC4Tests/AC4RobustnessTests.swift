@testable import AC4
import AudioGraph
import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 7, items 4 and 5: the reader's work is linear in the data whatever
/// it holds (same frames and statistics as a plain check at every
/// position), and a FIFO or oversized file is refused at once.
final class AC4RobustnessTests: XCTestCase {
    // MARK: a plain reference

    /// One frame as the reference finds it.
    struct ReferenceFrame: Equatable {
        var offset: Int
        var end: Int
        var syncWord: UInt16
        var frameSize: Int
        var headerLength: Int
        var toc: AC4TOC
    }

    /// What the reference counts: the reader's search-level statistics.
    struct ReferenceResult: Equatable {
        var frames: [ReferenceFrame] = []
        var crcErrorOffsets: [Int] = []
        var tocErrors = 0
        var skippedBytes = 0
        var resyncs = 0
        var tail: AC4TruncatedTail?
    }

    /// The reader's rules written the straightforward way: at every
    /// position, parse a header and run the CRC over the whole candidate
    /// (quadratic on hostile data; for modest inputs only).
    static func reference(_ b: [UInt8]) -> ReferenceResult {
        var r = ReferenceResult()
        func isSync(_ p: Int) -> Bool { p + 2 <= b.count && b[p] == 0xAC && (b[p + 1] == 0x40 || b[p + 1] == 0x41) }
        var position = 0
        var crcErrorEnd = 0
        while true {
            var partial: (offset: Int, length: Int?)?
            var hit: ReferenceFrame?
            var p = position
            scan: while p < b.count {
                defer { p += 1 }
                guard isSync(p) else { continue }
                let hasCRC = b[p + 1] == 0x41
                guard p + 4 <= b.count else { if partial == nil { partial = (p, nil) }; continue }
                var size = Int(b[p + 2]) << 8 | Int(b[p + 3])
                var header = 4
                if size == 0xFFFF {
                    guard p + 7 <= b.count else { if partial == nil { partial = (p, nil) }; continue }
                    size = Int(b[p + 4]) << 16 | Int(b[p + 5]) << 8 | Int(b[p + 6])
                    header = 7
                }
                guard size > 0 else { continue }
                let end = p + header + size + (hasCRC ? 2 : 0)
                guard end <= b.count else { if partial == nil { partial = (p, end - p) }; continue }
                let chained = end == b.count || isSync(end)
                if hasCRC {
                    if AC4CRC16.checksum(b[(p + 2)..<end]) != 0 {
                        if chained && p >= crcErrorEnd {
                            r.crcErrorOffsets.append(p)
                            crcErrorEnd = end
                        }
                        continue
                    }
                } else if !chained {
                    continue
                }
                switch AC4TOC.parse(b[(p + header)..<(p + header + size)]) {
                case .success(let toc):
                    hit = ReferenceFrame(offset: p, end: end, syncWord: hasCRC ? 0xAC41 : 0xAC40,
                                         frameSize: size, headerLength: header, toc: toc)
                    break scan
                case .failure:
                    if hasCRC { r.tocErrors += 1 }
                }
            }
            guard let f = hit else {
                if position < b.count {
                    r.tail = AC4TruncatedTail(offset: position, bytes: b.count - position,
                                              partialFrameOffset: partial?.offset, declaredFrameLength: partial?.length)
                }
                return r
            }
            if f.offset > position {
                r.skippedBytes += f.offset - position
                r.resyncs += 1
            }
            r.frames.append(f)
            position = f.end
        }
    }

    /// Reads `bytes` as the reader does by default, with the CRC range table
    /// from the first candidate, and with direct CRCs only: all three must
    /// agree in everything, and with `reference` when given.
    @discardableResult
    func assertEquivalent(_ bytes: [UInt8], reference expected: ReferenceResult? = nil, _ what: String,
                          file: StaticString = #filePath, line: UInt = #line) -> AC4ReadResult {
        func read(_ budget: Int?) -> AC4ReadResult {
            var reader = budget.map { AC4SyncFrameReader(bytes, directCRCBudget: $0) } ?? AC4SyncFrameReader(bytes)
            var frames: [AC4Frame] = []
            while let f = reader.next() { frames.append(f) }
            return AC4ReadResult(frames: frames, statistics: reader.statistics)
        }
        let standard = read(nil)
        XCTAssertEqual(read(0), standard, "\(what): table from the first CRC", file: file, line: line)
        XCTAssertEqual(read(.max), standard, "\(what): direct CRCs only", file: file, line: line)
        if let expected {
            let s = standard.statistics
            let got = ReferenceResult(
                frames: standard.frames.map {
                    ReferenceFrame(offset: $0.offset, end: $0.wholeFrame.upperBound, syncWord: $0.syncWord,
                                   frameSize: $0.frameSize, headerLength: $0.headerLength, toc: $0.toc)
                },
                crcErrorOffsets: s.crcErrorOffsets, tocErrors: s.tocErrors, skippedBytes: s.skippedBytes,
                resyncs: s.resyncs, tail: s.truncatedTail)
            XCTAssertEqual(got, expected, "\(what): same as the reference", file: file, line: line)
            XCTAssertEqual(s.crcErrors, expected.crcErrorOffsets.count, file: file, line: line)
            XCTAssertEqual(s.validFrames, expected.frames.count, file: file, line: line)
        }
        return standard
    }

    func channelCheck() throws -> [UInt8] {
        guard FileManager.default.fileExists(atPath: AC4Tests.channelCheckPath) else {
            XCTFail("ChannelCheck.ac4 is missing: expected at \(AC4Tests.channelCheckPath)")
            throw AC4Tests.MissingMedia(path: AC4Tests.channelCheckPath)
        }
        return try AC4FileReader(path: AC4Tests.channelCheckPath).bytes
    }

    // MARK: (a) equivalence

    func testSameResultAsReferenceOnRealMedia() throws {
        let bytes = try channelCheck()
        let r = assertEquivalent(bytes, reference: Self.reference(bytes), "ChannelCheck.ac4")
        XCTAssertEqual(r.statistics.validFrames, 846)
        // A valid file never needs the range table: each frame's CRC is fed once.
        var reader = AC4SyncFrameReader(bytes)
        while reader.next() != nil {}
        XCTAssertEqual(reader.crcWork, bytes.count - 2 * 846, "sync words are not CRC'd, everything else once")
    }

    /// Damage of every kind the reader resyncs over, on windows of the real
    /// file: flipped bytes, cut and repeated ranges, garbage with sync words,
    /// fake headers with 16- and 24-bit sizes that fit or run past the end,
    /// frames re-wrapped without CRC, a cut tail.
    func testSameResultAsReferenceOnRandomlyDamagedCopies() throws {
        let original = try channelCheck()
        let frames = AC4SyncFrameReader.readAll(original).frames
        var rng = SplitMix64(seed: 0xAC4_2024)
        var totals = (frames: 0, crcErrors: 0, tocErrors: 0, skipped: 0, partial: 0, plain: 0)
        for copy in 0..<48 {
            let first = Int.random(in: 0..<(frames.count - 60), using: &rng)
            let last = first + Int.random(in: 8...50, using: &rng)
            var b = Array(original[frames[first].offset..<frames[last].wholeFrame.upperBound])
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let at = Int.random(in: 0...b.count, using: &rng)
                switch Int.random(in: 0..<9, using: &rng) {
                case 0:  // flipped bytes
                    for _ in 0..<Int.random(in: 1...8, using: &rng) where !b.isEmpty {
                        b[Int.random(in: 0..<b.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                    }
                case 1:  // a range cut out
                    let n = min(Int.random(in: 1...4000, using: &rng), b.count - at)
                    b.removeSubrange(at..<(at + n))
                case 2:  // a range repeated
                    let n = min(Int.random(in: 1...6000, using: &rng), b.count - at)
                    b.insert(contentsOf: b[at..<(at + n)], at: at)
                case 3:  // garbage sown with sync words and small sizes
                    var junk = (0..<Int.random(in: 1...3000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    for k in stride(from: 0, to: junk.count - 4, by: Int.random(in: 2...60, using: &rng)) {
                        junk[k] = 0xAC
                        junk[k + 1] = Bool.random(using: &rng) ? 0x41 : 0x40
                        junk[k + 2] = 0
                    }
                    b.insert(contentsOf: junk, at: at)
                case 4:  // a fake header whose size fits, or runs past the end
                    let size = Int.random(in: 1...(b.count + 100), using: &rng)
                    let long = size >= 0xFFFF || Bool.random(using: &rng)
                    let head: [UInt8] = long
                        ? [0xAC, 0x41, 0xFF, 0xFF, UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
                        : [0xAC, Bool.random(using: &rng) ? 0x41 : 0x40, UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
                    b.insert(contentsOf: head, at: at)
                case 5:  // repeated AC 41 / AC 40 runs
                    let unit: [UInt8] = Bool.random(using: &rng) ? [0xAC, 0x41] : [0xAC, 0x41, 0xAC, 0x40]
                    b.insert(contentsOf: Array(repeating: unit, count: Int.random(in: 1...400, using: &rng)).joined(), at: at)
                case 6:  // a real frame of the window without its CRC word (plain sync frame)
                    let f = frames[Int.random(in: first...last, using: &rng)]
                    b.insert(contentsOf: AC4SyncFrameWriter.syncFrame(raw: original[f.payloadRange], withCRC: false), at: at)
                case 7:  // the tail cut
                    b.removeSubrange(min(at, b.count)...)
                default:  // a real frame with a 24-bit size field
                    let f = frames[Int.random(in: first...last, using: &rng)]
                    b.insert(contentsOf: AC4SyncFrameWriter.syncFrame(raw: original[f.payloadRange], forceLongSize: true), at: at)
                }
            }
            let expected = Self.reference(b)
            let r = assertEquivalent(b, reference: expected, "damaged copy \(copy)")
            let s = r.statistics
            XCTAssertEqual(s.frameBytes + s.skippedBytes + (s.truncatedTail?.bytes ?? 0), b.count, "damaged copy \(copy)")
            totals.frames += s.validFrames
            totals.crcErrors += s.crcErrors
            totals.tocErrors += s.tocErrors
            totals.skipped += s.skippedBytes
            totals.partial += s.truncatedTail?.hasPartialFrame == true ? 1 : 0
            totals.plain += s.validFrames - s.framesWithCRC
        }
        // The damage reached every path the statistics count.
        XCTAssertGreaterThan(totals.frames, 500)
        XCTAssertGreaterThan(totals.crcErrors, 10)
        XCTAssertGreaterThan(totals.skipped, 10_000)
        XCTAssertGreaterThan(totals.partial, 0)
        XCTAssertGreaterThan(totals.plain, 0)
    }

    /// Short hostile patterns, small enough for the reference.
    func testSameResultAsReferenceOnSmallHostilePatterns() {
        let units: [[UInt8]] = [
            [0xAC, 0x41], [0xAC, 0x40], [0xAC, 0x41, 0xAC, 0x40], [0xAC, 0x41, 0x00, 0x02],
            [0xAC, 0x40, 0x00, 0x03], [0xAC, 0x41, 0xFF, 0xFF, 0x00, 0x00, 0x05], [0xAC, 0x40, 0x00, 0x01, 0xAC],
        ]
        for unit in units {
            for count in [1, 2, 3, 17, 400] {
                let b = Array(repeating: unit, count: count).joined().map { $0 }
                assertEquivalent(b, reference: Self.reference(b), "\(unit) × \(count)")
            }
        }
    }

    func testRangeCRCEqualsDirectCRC() {
        var rng = SplitMix64(seed: 7)
        let data = (0..<5000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        data.withUnsafeBufferPointer { b in
            let table = AC4CRC16.RangeTable(b)
            XCTAssertEqual(table.work, data.count + 1 + 4096 + 2)
            XCTAssertEqual(table.view.checksum(0..<data.count), AC4CRC16.checksum(data))
            XCTAssertEqual(table.view.checksum(1..<4097), AC4CRC16.checksum(data[1..<4097]), "exactly 4096: the high table")
            for _ in 0..<2000 {
                let a = Int.random(in: 0...data.count, using: &rng)
                let e = Int.random(in: a...data.count, using: &rng)
                XCTAssertEqual(table.view.checksum(a..<e), AC4CRC16.checksum(data[a..<e]), "\(a)..<\(e)")
            }
        }
        for n in [0, 1, 2, 15, 16, 255, 70_000] {
            XCTAssertEqual(AC4CRC16.powerOfByteShift(n), Self.slowPower(n), "x^(8·\(n))")
        }
        XCTAssertEqual(AC4CRC16.multiply(0x8005, 1), 0x8005)
        XCTAssertEqual(AC4CRC16.multiply(1, 0x1234), 0x1234)
    }

    /// x^(8n) mod G one zero byte at a time.
    static func slowPower(_ n: Int) -> UInt16 {
        var r: UInt16 = 1
        for _ in 0..<n { r = AC4CRC16.update(r, [0]) }
        return r
    }

    // MARK: (b) hostile inputs in linear time

    /// Reads `bytes` and checks a wall-clock bound (generous for a debug
    /// build; the old reader took about 16 s for 100 kB of `AC 41`, so tens
    /// of hours for these sizes) and the linear work measure.
    @discardableResult
    func assertLinear(_ bytes: [UInt8], _ what: String, seconds: Double = 10,
                      file: StaticString = #filePath, line: UInt = #line) -> AC4Statistics {
        let start = Date()
        var reader = AC4SyncFrameReader(bytes)
        var frames = 0
        while reader.next() != nil { frames += 1 }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertLessThan(elapsed, seconds, "\(what): \(bytes.count) bytes read in \(elapsed) s", file: file, line: line)
        XCTAssertLessThanOrEqual(reader.crcWork, 2 * bytes.count + 4096 + 2 + bytes.count / 4096,
                                 "\(what): CRC work \(reader.crcWork) for \(bytes.count) bytes", file: file, line: line)
        let s = reader.statistics
        XCTAssertEqual(s.frameBytes + s.skippedBytes + (s.truncatedTail?.bytes ?? 0), bytes.count, what, file: file, line: line)
        XCTAssertEqual(frames, s.validFrames, file: file, line: line)
        return s
    }

    static let hostileSize = 4 << 20

    func testRepeatedAC41IsLinear() {
        let b = [UInt8](unsafeUninitializedCapacity: Self.hostileSize) { p, n in
            for i in 0..<Self.hostileSize { p[i] = i & 1 == 0 ? 0xAC : 0x41 }
            n = Self.hostileSize
        }
        let s = assertLinear(b, "AC 41 repeated")
        XCTAssertEqual(s.validFrames, 0)
        XCTAssertEqual(s.truncatedTail?.bytes, b.count)
    }

    func testRepeatedAC41AC40PairsAreLinear() {
        let unit: [UInt8] = [0xAC, 0x41, 0xAC, 0x40]
        let b = [UInt8](unsafeUninitializedCapacity: Self.hostileSize) { p, n in
            for i in 0..<Self.hostileSize { p[i] = unit[i & 3] }
            n = Self.hostileSize
        }
        assertLinear(b, "AC 41 AC 40 repeated")
    }

    /// Fake sync words every 16 bytes, each with a 24-bit size claiming a
    /// 1 MiB frame (with a CRC, or without and chained to the next fake).
    func testFakeSyncWordsClaimingOneMebibyteFramesAreLinear() {
        for withCRC in [true, false] {
            var b: [UInt8] = []
            b.reserveCapacity(Self.hostileSize + 16)
            let size = 1 << 20
            let head: [UInt8] = [0xAC, withCRC ? 0x41 : 0x40, 0xFF, 0xFF, UInt8(size >> 16), 0, 0]
            while b.count < Self.hostileSize {
                b += head
                b += [UInt8](repeating: 0x55, count: 16 - head.count)
            }
            assertLinear(b, "1 MiB fakes, CRC \(withCRC)")
        }
    }

    /// A damaged 1.4 MB file behind 2 MB of `AC 41`: the frames are still found.
    func testRealFramesAfterHostilePrefix() throws {
        let bytes = try channelCheck()
        let prefix = (0..<(2 << 20)).map { $0 & 1 == 0 ? UInt8(0xAC) : 0x41 }
        let s = assertLinear(prefix + bytes, "AC 41 then ChannelCheck.ac4")
        XCTAssertEqual(s.validFrames, 846)
        XCTAssertEqual(s.skippedBytes, prefix.count)
    }

    /// Each frame with a bitstream version not seen before, in descending
    /// order: counting them stays linear (the versions are a set).
    func testManyDistinctBitstreamVersionsAreLinear() {
        let count = 40_000
        var b: [UInt8] = []
        b.reserveCapacity(count * 16)
        for k in 0..<count {
            let toc = AC4TOC(bitstreamVersion: 3 + count - k, sequenceCounter: 1 + k % 1020,
                             fsIndex: 1, frameRateIndex: 13, isIFrame: k % 24 == 0)
            b += AC4SyncFrameWriter.syncFrame(raw: toc.encodedFields() + [0])
        }
        let s = assertLinear(b, "distinct versions")
        XCTAssertEqual(s.validFrames, count)
        XCTAssertEqual(s.bitstreamVersions, Array(4...(3 + count)))
    }

    // MARK: (c) FIFOs and sizes

    /// Runs `body` on this thread; if it has not returned within `seconds`,
    /// opens the FIFO for writing (which lets a blocked `open` for reading
    /// return) and records a failure, so that a regression fails instead of
    /// hanging the suite.
    func withFIFOWatchdog(_ fifo: String, seconds: Double = 5, _ what: String, _ body: () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let unblocked = DispatchSemaphore(value: 0)
        let timedOut = Flag(false)
        Thread.detachNewThread {
            if done.wait(timeout: .now() + seconds) == .timedOut {
                timedOut.set(true)
                let fd = open(fifo, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
            }
            unblocked.signal()
        }
        let start = Date()
        body()
        let elapsed = Date().timeIntervalSince(start)
        done.signal()
        unblocked.wait()
        XCTAssertFalse(timedOut.get(), "\(what) blocked on the FIFO for \(seconds) s")
        XCTAssertLessThan(elapsed, 1, "\(what) took \(elapsed) s")
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Bool
        init(_ value: Bool) { self.value = value }
        func get() -> Bool { lock.withLock { value } }
        func set(_ v: Bool) { lock.withLock { value = v } }
    }

    func makeFIFO(_ dir: TemporaryDirectory, _ name: String = "stream.ac4") -> String {
        let path = dir.file(name)
        XCTAssertEqual(mkfifo(path, 0o600), 0, "mkfifo \(path)")
        return path
    }

    func testFileReaderRefusesAFIFOAtOnce() throws {
        let dir = try TemporaryDirectory("ac4-fifo")
        let fifo = makeFIFO(dir)
        var message = ""
        withFIFOWatchdog(fifo, "AC4FileReader") {
            do {
                _ = try AC4FileReader(path: fifo)
                message = "read"
            } catch {
                message = "\(error)"
            }
        }
        XCTAssertEqual(message, "\(fifo): is a named pipe (FIFO), not a regular file: an AC-4 input must be a regular file (it is read whole before use)")
    }

    func testAC4NodeValidationRefusesAFIFOOnItsPath() throws {
        let dir = try TemporaryDirectory("ac4-fifo")
        _ = makeFIFO(dir, "live.ac4")
        let graph = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "stream", "type": "ac4", "params": {"path": "live.ac4"}}],
             "links": []}
            """
        var message = ""
        withFIFOWatchdog(dir.file("live.ac4"), "validation of an ac4 node") {
            do {
                _ = try TestGraph.validate(graph, directory: dir.path)
                message = "valid"
            } catch {
                message = "\(error)"
            }
        }
        XCTAssertTrue(message.contains("/nodes/0/params/path"), message)
        XCTAssertTrue(message.contains("(node 'stream')"), message)
        XCTAssertTrue(message.contains("live.ac4: is a named pipe (FIFO), not a regular file"), message)
    }

    func testFileReaderRefusesDevicesAndOversizedFiles() throws {
        XCTAssertThrowsError(try AC4FileReader(path: "/dev/null")) { error in
            XCTAssertTrue("\(error)".hasPrefix("/dev/null: is a character device, not a regular file"), "\(error)")
        }
        let dir = try TemporaryDirectory("ac4-size")
        // A sparse file one byte over the limit: refused from its size, before reading.
        let big = dir.file("big.ac4")
        let fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(ftruncate(fd, off_t(AC4FileReader.maximumFileSize + 1)), 0)
        close(fd)
        let start = Date()
        XCTAssertThrowsError(try AC4FileReader(path: big)) { error in
            XCTAssertEqual("\(error)", "\(big): is 1073741825 bytes, more than the 1 GiB (1073741824 bytes) an AC-4 file may have: it is read whole into memory, and AC-4 takes about 40 kB per second of audio")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 1, "refused without reading")
        // The limit also bounds what is read.
        let small = dir.file("small.ac4")
        XCTAssertTrue(FileManager.default.createFile(atPath: small, contents: Data(count: 200)))
        XCTAssertThrowsError(try AC4FileReader.readFile(small, limit: 100)) { error in
            XCTAssertEqual("\(error)", "\(small): is 200 bytes, more than the 100 bytes an AC-4 file may have: it is read whole into memory, and AC-4 takes about 40 kB per second of audio")
        }
        XCTAssertEqual(try AC4FileReader.readFile(small, limit: 200).count, 200)
    }

    // MARK: index

    func testIndexGivesTheIFramePosition() throws {
        let index = AC4Index(bytes: try channelCheck())
        for sample in [0, 1, 24 * 2048 - 1, 24 * 2048, 30 * 2048 + 5, 846 * 2048 - 1, 10_000_000] {
            let position = try XCTUnwrap(index.iFramePosition(atOrBeforeSample: sample))
            XCTAssertEqual(index.entries[position], index.iFrame(atOrBeforeSample: sample))
        }
        XCTAssertNil(index.iFramePosition(atOrBeforeSample: -1))
    }
}
