/// Decoded PCM straight into the block being rendered: what a decoder
/// writes into in an offline render, on the thread that renders, in place
/// of a `FeedRing` and a worker thread (`RenderThreadJob`).
///
/// A block: `begin` puts the frames carried over from the last block
/// first; the decoder then writes frames (`DecodedPCMOutput.write`) while
/// `needsFrames`, each straight into the output bus after the ones before;
/// the frames of the last decode beyond the block wait in a small planar
/// carry for the next one; `end` sets the bus's state (ended once the
/// stream has ended and every frame is out). One copy per frame: the
/// decoder's planar buffer into the bus.
/// [audio-thread; the thread that renders, which is marked worker while its decoder writes]
public final class DirectFeed: DecodedPCMOutput {
    /// Channels the decoder writes.
    public let channels: Int
    private let bus: AudioBus
    /// Planar carry: `channels` runs of `carryCapacity` frames.
    private let carry: UnsafeMutablePointer<Float>
    private let carryCapacity: Int
    private var carryStart = 0
    private var carryCount = 0
    /// Frames of the current block written so far, and its length.
    private var filled = 0
    private var blockFrames = 0
    private var ended = false
    /// Blocks that ended short without the stream's end (a decoder that
    /// gave nothing): played as silence, as a ring's underrun.
    public private(set) var shortBlocks = 0

    /// - Parameter framesPerDecode: the most frames one decode writes.
    /// [main-thread]
    public init(channels: Int, bus: AudioBus, framesPerDecode: Int) {
        ThreadRole.check(.main)
        self.channels = max(channels, 1)
        self.bus = bus
        carryCapacity = 2 * max(framesPerDecode, 1)
        carry = .allocateZeroed(self.channels * carryCapacity)
    }

    deinit { carry.deallocate() }

    /// Starts a block of `frames` frames with the frames carried over.
    /// [audio-thread]
    public func begin(frames: Int) {
        ThreadRole.check(.audio)
        blockFrames = frames
        let n = carryCount < frames ? carryCount : frames
        filled = 0
        if n > 0 {
            copyIntoBus(from: carry + carryStart, stride: carryCapacity, count: channels, frames: n)
            carryStart += n
            carryCount -= n
        }
        if carryCount == 0 { carryStart = 0 }
    }

    /// Whether the block wants more frames from the decoder. [any-thread; the thread that renders]
    public var needsFrames: Bool { filled < blockFrames && !ended }

    /// Ends the block: silence after the frames written; the bus's state.
    /// [audio-thread]
    public func end() {
        ThreadRole.check(.audio)
        if filled < blockFrames { bus.clear(from: filled, to: blockFrames) }
        if filled < blockFrames && ended && carryCount == 0 {
            bus.state = BusState(validFrames: filled, ended: true)
        } else {
            if filled < blockFrames { shortBlocks += 1 }
            bus.state = BusState(validFrames: blockFrames, ended: false)
        }
    }

    /// No more frames will come (after those carried). [any-thread; the thread that renders]
    public func markEnd() { ended = true }

    /// Drops the frames carried (a seek) and clears the end. [any-thread; the thread that renders]
    public func flush() {
        carryStart = 0
        carryCount = 0
        ended = false
    }

    // MARK: DecodedPCMOutput

    /// The rest of the block and the carry's room. [any-thread; the thread that renders]
    public var writableFrames: Int { (blockFrames - filled) + (carryCapacity - carryStart - carryCount) }

    /// Takes `frames` planar frames: as many as the block still wants into
    /// the bus, the rest into the carry. [any-thread; the thread that renders]
    public func write(_ planes: UnsafePointer<UnsafeMutablePointer<Float>?>, count: Int, offset: Int, frames: Int) {
        let intoBus = min(frames, blockFrames - filled)
        if intoBus > 0 {
            var c = 0
            while c < bus.channels {
                let dst = bus.channel(c) + filled
                if c < count, c < channels, let src = planes[c] {
                    Kernels.copy(src + offset, to: dst, count: intoBus)
                } else {
                    Kernels.fill(dst, count: intoBus, value: 0)
                }
                c += 1
            }
            filled += intoBus
        }
        let rest = min(frames - intoBus, carryCapacity - carryStart - carryCount)
        if rest > 0 {
            let at = carryStart + carryCount
            for c in 0..<channels {
                let dst = carry + c * carryCapacity + at
                if c < count, let src = planes[c] {
                    Kernels.copy(src + offset + intoBus, to: dst, count: rest)
                } else {
                    Kernels.fill(dst, count: rest, value: 0)
                }
            }
            carryCount += rest
        }
    }

    /// Copies `frames` frames of `count` planar runs `stride` apart into
    /// the bus after the frames written (silence in channels beyond them).
    private func copyIntoBus(from src: UnsafeMutablePointer<Float>, stride: Int, count: Int, frames: Int) {
        var c = 0
        while c < bus.channels {
            let dst = bus.channel(c) + filled
            if c < count {
                Kernels.copy(src + c * stride, to: dst, count: frames)
            } else {
                Kernels.fill(dst, count: frames, value: 0)
            }
            c += 1
        }
        filled += frames
    }
}
