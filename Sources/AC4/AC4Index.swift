/// Where each frame of an AC-4 stream is and when it plays: for seeking
/// (start decoding at an I-frame at or before the target sample, then trim
/// to the exact sample). A pure value. [any-thread]
public struct AC4Index: Sendable, Hashable {
    /// One frame.
    public struct Entry: Sendable, Hashable {
        /// Frame number among valid frames.
        public var frameIndex: Int
        /// Byte offset of the sync word.
        public var offset: Int
        /// The whole sync frame's byte range.
        public var wholeFrame: Range<Int>
        /// First sample of the frame.
        public var timestamp: Int
        /// Samples the frame stands for.
        public var samples: Int
        /// Whether decoding may start here.
        public var isIFrame: Bool
    }

    /// Every frame, in order.
    public private(set) var entries: [Entry]
    /// Positions in `entries` of the I-frames.
    public private(set) var iFramePositions: [Int]

    /// Indexes `frames` (in reading order).
    public init<S: Sequence>(frames: S) where S.Element == AC4Frame {
        let entries = frames.map {
            Entry(frameIndex: $0.index, offset: $0.offset, wholeFrame: $0.wholeFrame,
                  timestamp: $0.timestamp, samples: $0.toc.samplesPerFrame, isIFrame: $0.toc.isIFrame)
        }
        self.entries = entries
        iFramePositions = entries.indices.filter { entries[$0].isIFrame }
    }

    /// Reads and indexes `bytes`.
    public init(bytes: [UInt8]) { self.init(frames: AC4SyncFrameReader(bytes)) }

    /// Samples in all frames.
    public var totalSamples: Int { entries.last.map { $0.timestamp + $0.samples } ?? 0 }

    /// The I-frames.
    public var iFrames: [Entry] { iFramePositions.map { entries[$0] } }

    /// The frame that contains `sample` (0 ≤ sample < totalSamples), else nil.
    public func frame(containingSample sample: Int) -> Entry? {
        guard sample >= 0, sample < totalSamples, let i = lastPosition(in: entries.indices, atOrBefore: sample) else {
            return nil
        }
        return entries[i]
    }

    /// The last I-frame that starts at or before `sample`: where to start
    /// decoding to reach `sample` (samples past the end give the last
    /// I-frame). Nil when no I-frame starts at or before it.
    public func iFrame(atOrBeforeSample sample: Int) -> Entry? {
        iFramePosition(atOrBeforeSample: sample).map { entries[$0] }
    }

    /// Where in `entries` that I-frame is (see `iFrame(atOrBeforeSample:)`):
    /// a binary search, O(log n).
    public func iFramePosition(atOrBeforeSample sample: Int) -> Int? {
        lastPosition(in: iFramePositions.indices, atOrBefore: sample, map: { iFramePositions[$0] })
            .map { iFramePositions[$0] }
    }

    /// Binary search: the last position in `range` whose entry's timestamp ≤ sample.
    private func lastPosition(in range: Range<Int>, atOrBefore sample: Int, map: (Int) -> Int = { $0 }) -> Int? {
        var lo = range.lowerBound, hi = range.upperBound  // answer in [lo - 1, hi)
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[map(mid)].timestamp <= sample { lo = mid + 1 } else { hi = mid }
        }
        return lo > range.lowerBound ? lo - 1 : nil
    }
}
