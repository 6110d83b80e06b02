import CFraming
/// One AC-4 sync frame the reader accepted: its place in the buffer, its
/// TOC fields and its timestamp. A pure value. [any-thread]
///
/// ```
/// offset            sync_word  (0xAC40, or 0xAC41 when a CRC follows)
/// offset + 2        frame_size (16 bits; 0xFFFF escapes to a 24-bit size after it)
/// payloadRange      raw_ac4_frame (frameSize bytes)
/// payloadRange.end  crc_word   (hasCRC only)
/// ```
public struct AC4Frame: Sendable, Hashable {
    /// Frame number among the valid frames, from 0.
    public var index: Int
    /// Byte offset of the sync word in the buffer.
    public var offset: Int
    /// 0xAC40 (no CRC) or 0xAC41 (CRC word after the frame).
    public var syncWord: UInt16
    /// Size of `raw_ac4_frame` in bytes (the `frame_size` field).
    public var frameSize: Int
    /// Sync word plus size field(s): 4 bytes, or 7 with the 24-bit size.
    public var headerLength: Int
    /// The bytes of `raw_ac4_frame` in the buffer (what MP4 carries as one sample).
    public var payloadRange: Range<Int>
    /// Sync word through CRC word: the whole sync frame, what a DAA
    /// "simple transport" (type 0) decoder is fed.
    public var wholeFrame: Range<Int>
    /// The `raw_ac4_frame` bytes (a slice sharing the buffer's storage;
    /// its indices are `payloadRange`).
    public var payload: ArraySlice<UInt8>
    /// The stored `crc_word` (already verified), when `hasCRC`.
    public var crcWord: UInt16?
    /// The first TOC fields.
    public var toc: AC4TOC
    /// Position in samples: the sum of `toc.samplesPerFrame` of all previous
    /// valid frames (see `AC4TOC.samplesPerFrame` for where that is an approximation).
    public var timestamp: Int

    /// Whether a CRC word follows the frame (`syncWord == 0xAC41`).
    public var hasCRC: Bool { syncWord == AC4SyncFrameReader.syncWordCRC }
    /// Length of the whole sync frame in bytes.
    public var length: Int { wholeFrame.count }
}

/// Bytes at the end of the data that form no valid frame.
public struct AC4TruncatedTail: Sendable, Hashable {
    /// Where the tail starts: the end of the last valid frame (0 if none).
    public var offset: Int
    /// Bytes from `offset` to the end of the data.
    public var bytes: Int
    /// Where a frame that the data ends inside begins (a sync word whose
    /// declared size runs past the end), if there is one.
    public var partialFrameOffset: Int?
    /// That frame's declared whole length in bytes, when its size field was
    /// complete.
    public var declaredFrameLength: Int?

    public init(offset: Int, bytes: Int, partialFrameOffset: Int? = nil, declaredFrameLength: Int? = nil) {
        self.offset = offset
        self.bytes = bytes
        self.partialFrameOffset = partialFrameOffset
        self.declaredFrameLength = declaredFrameLength
    }

    /// Whether the data ends inside a frame (as opposed to trailing garbage).
    public var hasPartialFrame: Bool { partialFrameOffset != nil }
}

/// Spacing of I-frames, in frames between consecutive I-frames.
public struct AC4IFrameSpacing: Sendable, Hashable {
    public var min: Int
    public var max: Int
    /// The most frequent spacing (the smallest of equally frequent ones).
    public var typical: Int

    public init(min: Int, max: Int, typical: Int) {
        self.min = min
        self.max = max
        self.typical = typical
    }
}

/// What an `AC4SyncFrameReader` counted while reading. A pure value. [any-thread]
///
/// Byte accounting: `frameBytes + skippedBytes + (truncatedTail?.bytes ?? 0)`
/// is the size of the data once the reader has finished.
public struct AC4Statistics: Sendable, Hashable {
    /// Frames accepted (sync word, size that fits, CRC when present, readable TOC).
    public var validFrames = 0
    /// Of those, frames with a CRC word.
    public var framesWithCRC = 0
    /// Bytes in valid frames (sync word through CRC).
    public var frameBytes = 0
    /// Frames whose sync word and size looked valid — the frame fits and the
    /// next frame's sync word (or the end of the data) follows it — but whose
    /// CRC did not match. Their bytes are part of `skippedBytes`.
    public var crcErrors = 0
    /// Byte offsets of those frames.
    public var crcErrorOffsets: [Int] = []
    /// Frames whose CRC matched but whose TOC could not be read (too short, or
    /// a reserved frame_rate_index); skipped.
    public var tocErrors = 0
    /// Bytes passed over while searching for the next valid frame (garbage,
    /// damaged frames), not counting the truncated tail.
    public var skippedBytes = 0
    /// Runs of skipped bytes: how often the reader had to search for a frame
    /// (at the start of the data too).
    public var resyncs = 0
    /// Consecutive valid frames whose sequence counters do not follow
    /// (1 … 1020, 1020 → 1; a frame after a splice (0) may have any value).
    public var sequenceGaps = 0
    /// Indices of the frames after each gap.
    public var sequenceGapFrameIndices: [Int] = []
    /// Frames with sequence counter 0 (splice points).
    public var splices = 0
    /// Bytes at the end that form no valid frame, if any (set when reading ends).
    public var truncatedTail: AC4TruncatedTail?
    /// Indices of the I-frames (`b_iframe_global`).
    public var iFrameIndices: [Int] = []
    /// The distinct bitstream versions seen, ascending. (Kept as a set, so
    /// that each frame is counted in constant time however many versions
    /// a damaged or hostile stream shows; sorted on each read.)
    public var bitstreamVersions: [Int] {
        get { bitstreamVersionSet.sorted() }
        set { bitstreamVersionSet = Set(newValue) }
    }
    /// The distinct bitstream versions seen.
    var bitstreamVersionSet: Set<Int> = []
    /// The TOC of the first valid frame.
    public var firstTOC: AC4TOC?
    /// Sum of `samplesPerFrame` of the valid frames.
    public var totalSamples = 0
    /// Sum of each valid frame's `samplesPerFrame / sampleRate`, in seconds.
    public var durationSeconds = 0.0

    public init() {}

    /// Number of I-frames.
    public var iFrames: Int { iFrameIndices.count }

    /// Frames between consecutive I-frames; nil with fewer than two I-frames.
    public var iFrameSpacing: AC4IFrameSpacing? {
        guard iFrameIndices.count >= 2 else { return nil }
        var counts: [Int: Int] = [:]
        for (a, b) in zip(iFrameIndices, iFrameIndices.dropFirst()) { counts[b - a, default: 0] += 1 }
        let typical = counts.max { l, r in l.value != r.value ? l.value < r.value : l.key > r.key }!.key
        return AC4IFrameSpacing(min: counts.keys.min()!, max: counts.keys.max()!, typical: typical)
    }
}

/// Reads AC-4 sync frames from bytes in memory, robustly.
///
/// Iterating yields every valid frame in order. A frame is valid when it
/// starts with 0xAC40 or 0xAC41, its size fits the data, its CRC matches
/// (0xAC41), or — without a CRC (0xAC40) — the next sync word or the end of
/// the data follows it, and its TOC can be read. Anything else is passed over
/// one byte at a time until the next valid frame (resync); `statistics`
/// counts the skipped bytes, CRC errors, sequence gaps, I-frames, and, once
/// iteration has ended, a truncated tail (a last frame that the data ends
/// inside is reported there, never yielded).
///
/// **Cost.** Linear in the size of the data, whatever it holds. Every
/// position where a sync word with a complete header appears is a candidate
/// whose CRC must be checked, and hostile data (repeated `AC 41`, sizes of
/// up to 16 MiB) makes almost every other byte one. The CRCs of candidates
/// are computed directly until the bytes fed that way reach the size of the
/// data — which a valid stream, each frame checked once, never exceeds —
/// and from then on in constant time each from tables of prefix CRCs
/// (`AC4CRC16.RangeTable`, 2 bytes of memory per byte of data, built
/// once). So the CRC touches at most about 2 bytes per byte of data, and
/// every other step per position is constant.
///
/// A value type: copies read independently (they share the buffer's
/// storage, and the CRC tables once built). [any-thread]
public struct AC4SyncFrameReader: Sequence, IteratorProtocol, Sendable {
    /// Sync word of a frame without CRC.
    public static let syncWordPlain: UInt16 = 0xAC40
    /// Sync word of a frame followed by a CRC word.
    public static let syncWordCRC: UInt16 = 0xAC41
    /// The `frame_size` value that announces a 24-bit size.
    public static let longSizeEscape = 0xFFFF

    /// The data being read.
    public let bytes: [UInt8]
    /// What was counted so far; complete once `next()` has returned nil.
    public private(set) var statistics = AC4Statistics()
    /// Whether `next()` has returned nil.
    public private(set) var isFinished = false

    private var position = 0
    private var nextIndex = 0
    private var nextTimestamp = 0
    private var lastSequence: Int?
    private var crcErrorEnd = 0
    /// Bytes the CRC may still be fed directly before the range table is built.
    private var directCRCBudget: Int
    /// Prefix CRCs of `bytes`, built when `directCRCBudget` runs out.
    private var crcTable: AC4CRC16.RangeTable?
    /// `crcTable`'s view, kept alive by `crcTable`.
    private var crcView: AC4CRC16.RangeTable.View?
    /// Bytes the CRC has processed so far: those fed directly plus the
    /// entries of the range table (once built). The reader's dominant work,
    /// at most about `2 × bytes.count` (plus two multiplies per candidate
    /// once the table is built); `bytes.count` minus the sync words on a
    /// valid stream.
    public private(set) var crcWork = 0

    /// Reads from `bytes`.
    public init(_ bytes: [UInt8]) { self.init(bytes, directCRCBudget: bytes.count) }

    /// Reads from a copy of `buffer`.
    public init(_ buffer: UnsafeRawBufferPointer) { self.init(Array(buffer)) }

    /// Reads from `bytes`, feeding the CRC directly for up to
    /// `directCRCBudget` bytes before building the range table (0: use the
    /// table from the first CRC; `Int.max`: never). The result is the same
    /// for any budget; only the cost differs. For tests.
    init(_ bytes: [UInt8], directCRCBudget: Int) {
        self.bytes = bytes
        self.directCRCBudget = directCRCBudget
    }

    /// Reads every frame of `bytes`.
    public static func readAll(_ bytes: [UInt8]) -> AC4ReadResult {
        var reader = AC4SyncFrameReader(bytes)
        var frames: [AC4Frame] = []
        while let f = reader.next() { frames.append(f) }
        return AC4ReadResult(frames: frames, statistics: reader.statistics)
    }

    /// The next valid frame, or nil at the end of the data.
    public mutating func next() -> AC4Frame? {
        if isFinished { return nil }
        let data = bytes
        let found: (Candidate, AC4TOC)? = data.withUnsafeBufferPointer { b in search(b) }
        guard let (c, toc) = found else {
            isFinished = true
            return nil
        }
        let skipped = c.offset - position
        if skipped > 0 {
            statistics.skippedBytes += skipped
            statistics.resyncs += 1
        }
        position = c.end
        let frame = AC4Frame(
            index: nextIndex, offset: c.offset, syncWord: c.syncWord, frameSize: c.size,
            headerLength: c.headerLength, payloadRange: c.payload, wholeFrame: c.offset..<c.end,
            payload: bytes[c.payload],
            crcWord: c.hasCRC ? UInt16(bytes[c.end - 2]) << 8 | UInt16(bytes[c.end - 1]) : nil,
            toc: toc, timestamp: nextTimestamp)
        record(frame)
        nextIndex += 1
        nextTimestamp += toc.samplesPerFrame
        return frame
    }

    private mutating func record(_ frame: AC4Frame) {
        let toc = frame.toc
        statistics.validFrames += 1
        if frame.hasCRC { statistics.framesWithCRC += 1 }
        statistics.frameBytes += frame.length
        if statistics.firstTOC == nil { statistics.firstTOC = toc }
        statistics.bitstreamVersionSet.insert(toc.bitstreamVersion)
        if toc.isIFrame { statistics.iFrameIndices.append(frame.index) }
        statistics.totalSamples += toc.samplesPerFrame
        statistics.durationSeconds += Double(toc.samplesPerFrame) / Double(toc.sampleRate)
        let s = toc.sequenceCounter
        if s == 0 {
            statistics.splices += 1
        } else if let last = lastSequence, last != 0 {
            if agraph_ac4_sequence_follows(UInt32(last), UInt32(s)) == 0 {
                statistics.sequenceGaps += 1
                statistics.sequenceGapFrameIndices.append(frame.index)
            }
        }
        lastSequence = s
    }

    /// A sync header whose frame fits the data.
    private struct Candidate {
        var offset: Int
        var syncWord: UInt16
        var size: Int
        var headerLength: Int
        var end: Int
        var hasCRC: Bool { syncWord == AC4SyncFrameReader.syncWordCRC }
        var payload: Range<Int> { (offset + headerLength)..<(offset + headerLength + size) }
    }

    private enum Header {
        case none
        /// A sync word whose frame runs past the end (length nil: size field cut too).
        case incomplete(length: Int?)
        case complete(Candidate)
    }

    private static func isSyncWord(_ b: UnsafeBufferPointer<UInt8>, _ p: Int) -> Bool {
        p + 2 <= b.count && b[p] == 0xAC && (b[p + 1] & 0xFE) == 0x40
    }

    private static func header(_ b: UnsafeBufferPointer<UInt8>, _ p: Int) -> Header {
        guard isSyncWord(b, p) else { return .none }
        let sync = UInt16(b[p]) << 8 | UInt16(b[p + 1])
        let crcBytes = sync == syncWordCRC ? 2 : 0
        guard p + 4 <= b.count else { return .incomplete(length: nil) }
        var size = Int(b[p + 2]) << 8 | Int(b[p + 3])
        var headerLength = 4
        if size == longSizeEscape {
            guard p + 7 <= b.count else { return .incomplete(length: nil) }
            size = Int(b[p + 4]) << 16 | Int(b[p + 5]) << 8 | Int(b[p + 6])
            headerLength = 7
        }
        guard size > 0 else { return .none }
        let end = p + headerLength + size + crcBytes
        guard end <= b.count else { return .incomplete(length: end - p) }
        return .complete(Candidate(offset: p, syncWord: sync, size: size, headerLength: headerLength, end: end))
    }

    /// Finds the next valid frame from `position`, counting CRC and TOC
    /// errors on the way; sets the truncated tail when there is none.
    private mutating func search(_ b: UnsafeBufferPointer<UInt8>) -> (Candidate, AC4TOC)? {
        var p = position
        var partial: (offset: Int, length: Int?)?
        while p < b.count {
            switch Self.header(b, p) {
            case .none:
                break
            case .incomplete(let length):
                if partial == nil { partial = (p, length) }
            case .complete(let c):
                let chained = c.end == b.count || Self.isSyncWord(b, c.end)
                if c.hasCRC {
                    if crc(b, (p + 2)..<c.end) != 0 {
                        if chained && p >= crcErrorEnd {
                            statistics.crcErrors += 1
                            statistics.crcErrorOffsets.append(p)
                            crcErrorEnd = c.end
                        }
                        break
                    }
                } else if !chained {
                    break
                }
                switch AC4TOC.parse(UnsafeBufferPointer(rebasing: b[c.payload])) {
                case .success(let toc):
                    return (c, toc)
                case .failure:
                    if c.hasCRC { statistics.tocErrors += 1 }
                }
            }
            p += 1
        }
        if position < b.count {
            statistics.truncatedTail = AC4TruncatedTail(
                offset: position, bytes: b.count - position,
                partialFrameOffset: partial?.offset, declaredFrameLength: partial?.length)
        }
        return nil
    }
}

extension AC4SyncFrameReader {
    /// The CRC of `b[range]`: directly while the budget lasts, else from the
    /// range table (built here, once).
    private mutating func crc(_ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt16 {
        if let view = crcView { return view.checksum(range) }
        if range.count <= directCRCBudget {
            directCRCBudget -= range.count
            crcWork += range.count
            return AC4CRC16.checksum(b, range)
        }
        let table = AC4CRC16.RangeTable(b)
        crcTable = table
        crcView = table.view
        crcWork += table.work
        return table.view.checksum(range)
    }
}

/// Every frame of some data and what the reader counted.
public struct AC4ReadResult: Sendable, Hashable {
    public var frames: [AC4Frame]
    public var statistics: AC4Statistics

    public init(frames: [AC4Frame], statistics: AC4Statistics) {
        self.frames = frames
        self.statistics = statistics
    }

    /// Offsets, timestamps and I-frames of `frames`, for seeking.
    public var index: AC4Index { AC4Index(frames: frames) }
}
