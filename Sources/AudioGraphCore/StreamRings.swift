import Synchronization

/// Audio from a worker thread to the audio thread: interleaved frames in an
/// `SPSCRing`, plus an end-of-stream flag and an underrun count.
///
/// The producer (worker) writes whole frames and calls `markEnd()` after
/// the last one. The consumer (audio thread) `render`s into a bus: frames
/// that have not arrived yet become silence and an underrun, never a wait.
public final class FeedRing: @unchecked Sendable {
    public let channels: Int
    public let ring: SPSCRing<Float>
    private let ended = Atomic<Bool>(false)
    /// Blocks in which the audio thread found too little audio. [any-thread]
    public let underruns = Atomic<Int>(0)
    /// Frames of silence played in place of missing audio. [any-thread]
    public let missingFrames = Atomic<Int>(0)
    /// Interleaved scratch for the consumer, sized for `maxFrames`.
    private let scratch: UnsafeMutablePointer<Float>
    private let scratchFrames: Int
    /// Flush protocol (seek): the producer publishes the ring position up
    /// to which everything is stale, then bumps `flushGeneration`; the
    /// consumer drops up to that position when it sees a new generation.
    private let flushPosition = Atomic<Int>(0)
    private let flushGeneration = Atomic<Int>(0)
    private var seenFlushGeneration = 0
    /// Whether the stream keeps time through an underrun: the frames that
    /// arrive too late are dropped when they come, so that frame `p` of the
    /// stream still plays at the block it is due in (a source that follows
    /// the JACK transport stays on the transport's frame). Off: an underrun
    /// delays the rest of the stream by the silence played. [any-thread; set: any thread; read:
    /// the audio thread]
    public let keepsTime = Atomic<Bool>(false)
    /// Frames played as silence while keeping time, not yet dropped from
    /// the ring; a flush clears the debt. [audio-thread]
    private var owedFrames = 0

    /// - Parameters:
    ///   - capacityFrames: frames the ring holds.
    ///   - maxFrames: the largest block the consumer renders.
    /// [main-thread]
    public init(channels: Int, capacityFrames: Int, maxFrames: Int) {
        ThreadRole.check(.main)
        self.channels = channels
        ring = SPSCRing(minimumCapacity: capacityFrames * channels)
        scratchFrames = maxFrames
        scratch = .allocateZeroed(maxFrames * channels)
    }

    deinit { scratch.deallocate() }

    // MARK: producer side [worker-thread]

    /// Whole frames that fit now.
    public var writableFrames: Int { ring.writable / channels }

    /// Frames buffered and not yet played; after a `flush`, only those
    /// written since (the stale ones are dropped at the consumer's next
    /// block). [any-thread; an estimate]
    public var bufferedFrames: Int {
        let from = max(ring.readPosition, flushPosition.load(ordering: .acquiring))
        return max(ring.writePosition &- from, 0) / channels
    }

    /// Writes `frames` interleaved frames if they fit whole; returns frames written.
    @discardableResult
    public func write(_ interleaved: UnsafePointer<Float>, frames: Int) -> Int {
        let n = min(frames, writableFrames)
        if n <= 0 { return 0 }
        ring.write(interleaved, count: n * channels)
        return n
    }

    /// No more frames will come.
    public func markEnd() { ended.store(true, ordering: .releasing) }

    /// Everything written so far is stale (a seek): the consumer drops it
    /// at its next block, and frames written from now on follow. Clears a
    /// previous end of stream. [producer]
    public func flush() {
        ended.store(false, ordering: .releasing)
        flushPosition.store(ring.writePosition, ordering: .releasing)
        flushGeneration.add(1, ordering: .releasing)
    }

    /// Whether `markEnd()` was called. [any-thread]
    public var isEnded: Bool { ended.load(ordering: .acquiring) }

    // MARK: consumer side [audio-thread]

    /// Drops what a `flush` made stale, if one came since the last call;
    /// returns whether one did. A consumer that is held (not rendering,
    /// e.g. while a transport stands still) calls it each block, so that
    /// the producer has room to refill after a seek. [audio-thread]
    @discardableResult
    public func discardStale() -> Bool {
        ThreadRole.check(.audio)
        let generation = flushGeneration.load(ordering: .acquiring)
        guard generation != seenFlushGeneration else { return false }
        seenFlushGeneration = generation
        owedFrames = 0
        let stale = flushPosition.load(ordering: .relaxed) &- ring.readPosition
        if stale > 0 { ring.discard(stale) }
        return true
    }

    /// Fills `frames` frames of `bus` from the ring and sets its state.
    public func render(into bus: AudioBus, frames: Int) {
        let flushed = discardStale()
        // Read the flag first: if it was set, everything before it is in the ring.
        let endSeen = ended.load(ordering: .acquiring)
        let want = frames < scratchFrames ? frames : scratchFrames
        var available = ring.readable / channels
        if owedFrames > 0 {
            // Keeping time: what came too late was due in earlier blocks.
            let late = owedFrames < available ? owedFrames : available
            ring.discard(late * channels)
            owedFrames -= late
            available -= late
        }
        let n = want < available ? want : available
        if n > 0 { ring.read(into: scratch, count: n * channels) }
        var c = 0
        while c < bus.channels {
            if c < channels {
                Kernels.deinterleave(scratch, stride: channels, channel: c, to: bus.channel(c), count: n)
            } else {
                Kernels.fill(bus.channel(c), count: n, value: 0)
            }
            if n < frames { Kernels.fill(bus.channel(c) + n, count: frames - n, value: 0) }
            c += 1
        }
        if n < frames && endSeen && ring.readable == 0 {
            bus.state = BusState(validFrames: n, ended: true)
        } else {
            // Right after a flush the producer is still refilling: that
            // silence is the seek, not an underrun.
            if n < frames && !flushed {
                underruns.add(1, ordering: .relaxed)
                missingFrames.add(frames - n, ordering: .relaxed)
                if keepsTime.load(ordering: .relaxed) { owedFrames += frames - n }
            }
            bus.state = BusState(validFrames: frames, ended: false)
        }
    }
}

/// Audio from the audio thread to a worker thread (a file sink's path):
/// interleaved frames in an `SPSCRing`; what does not fit is counted as
/// dropped, never waited for.
public final class DrainRing: @unchecked Sendable {
    public let channels: Int
    public let ring: SPSCRing<Float>
    private let ended = Atomic<Bool>(false)
    /// Frames the audio thread could not hand over (ring full). [any-thread]
    public let droppedFrames = Atomic<Int>(0)
    private let scratch: UnsafeMutablePointer<Float>
    private let scratchFrames: Int

    /// [main-thread]
    public init(channels: Int, capacityFrames: Int, maxFrames: Int) {
        ThreadRole.check(.main)
        self.channels = channels
        ring = SPSCRing(minimumCapacity: capacityFrames * channels)
        scratchFrames = maxFrames
        scratch = .allocateZeroed(maxFrames * channels)
    }

    deinit { scratch.deallocate() }

    // MARK: producer side [audio-thread]

    /// Hands over the bus's valid frames from frame `start` on (the ones
    /// before it are left out), at most `limit` of them; marks the end when
    /// the bus has ended. Returns the frames handed over or dropped.
    @discardableResult
    public func capture(_ bus: AudioBus, from start: Int = 0, limit: Int = Int.max) -> Int {
        let state = bus.state
        let from = start < 0 ? 0 : (start < state.validFrames ? start : state.validFrames)
        let valid = state.validFrames - from
        let capped = valid < limit ? valid : (limit > 0 ? limit : 0)
        let n = capped < scratchFrames ? capped : scratchFrames
        if n > 0 {
            if channels == 2 && bus.channels >= 2 {
                Kernels.interleave2(bus.channel(0) + from, bus.channel(1) + from, to: scratch, count: n)
            } else {
                var c = 0
                while c < channels {
                    if c < bus.channels {
                        Kernels.interleave(bus.channel(c) + from, to: scratch, stride: channels, channel: c, count: n)
                    }
                    c += 1
                }
            }
            let fit = ring.writable / channels
            let w = n < fit ? n : fit
            if w > 0 { ring.write(scratch, count: w * channels) }
            if w < n { droppedFrames.add(n - w, ordering: .relaxed) }
        }
        if state.ended { ended.store(true, ordering: .releasing) }
        return n > 0 ? n : 0
    }

    /// Whole frames that fit now. [any-thread; an estimate]
    public var writableFrames: Int { ring.writable / channels }

    // MARK: consumer side [worker-thread]

    /// Frames waiting to be taken.
    public var readableFrames: Int { ring.readable / channels }

    /// Takes up to `frames` frames into `buffer`; returns frames taken.
    public func take(into buffer: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let n = min(frames, readableFrames)
        if n <= 0 { return 0 }
        ring.read(into: buffer, count: n * channels)
        return n
    }

    /// The producer saw the end of its stream. [any-thread]
    public var isEnded: Bool { ended.load(ordering: .acquiring) }
}

extension UnsafeMutablePointer where Pointee == Float {
    /// `count` samples of silence; the caller deallocates. [main-thread]
    static func allocateZeroed(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: max(count, 1))
        p.initialize(repeating: 0, count: max(count, 1))
        return p
    }
}
