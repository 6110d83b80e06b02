import Synchronization

/// Latency compensation: where paths of different latency meet (a node with
/// several inputs), the engine delays the shorter ones so that the signals
/// stay aligned, as JUCE's `AudioProcessorGraph` and Ardour do.
///
/// One `DelayLine` sits in front of one input port of one node. It owns a
/// ring of `capacity` frames per channel and an output bus of its own (the
/// node reads that bus instead of its source's), both allocated when the
/// engine is built. Rendering only copies.
///
/// Threading:
/// - `init`: [main-thread]
/// - `render`: [audio-thread]; no allocation, lock, I/O or waiting.
/// - `setDelay`, `delay`: [main-thread] (the audio thread reads the delay
///   through an atomic at the start of each block).
public final class DelayLine: @unchecked Sendable {
    /// The schedule step whose input this line delays.
    public let step: Int
    /// The input port of that step.
    public let port: Int
    public let channels: Int
    /// The largest delay this line can hold, in frames.
    public let maximumDelay: Int
    /// Ring length per channel: `maximumDelay + maxFrames`.
    let capacity: Int
    let source: AudioBus
    /// What the node reads.
    public let output: AudioBus
    private let pool: BusPool
    private let ring: UnsafeMutablePointer<Float>
    private let requestedDelay: Atomic<Int>
    /// Where the next block is written, in the ring. [audio-thread]
    private var writeIndex = 0
    /// Input frames seen so far. [audio-thread]
    private var inputPosition = 0
    /// The input position where the source's stream ended, once it has.
    /// [audio-thread]
    private var endPosition = Int.max

    /// [main-thread]
    init(step: Int, port: Int, source: AudioBus, delay: Int, maximumDelay: Int, maxFrames: Int) {
        self.step = step
        self.port = port
        self.source = source
        channels = source.channels
        self.maximumDelay = max(maximumDelay, delay, 0)
        capacity = self.maximumDelay + maxFrames
        ring = .allocateZeroed(max(capacity * channels, 1))
        pool = BusPool(channelCounts: [channels], capacity: maxFrames)
        output = pool.buses[0]
        requestedDelay = Atomic(min(max(delay, 0), self.maximumDelay))
    }

    deinit { ring.deallocate() }

    /// The delay in frames. [main-thread]
    public var delay: Int { ThreadRole.check(.main); return requestedDelay.load(ordering: .relaxed) }

    /// Sets the delay, clamped to `0...maximumDelay`; returns whether it
    /// fitted. Takes effect at the next block. [main-thread]
    @discardableResult
    public func setDelay(_ frames: Int) -> Bool {
        ThreadRole.check(.main)
        requestedDelay.store(min(max(frames, 0), maximumDelay), ordering: .relaxed)
        return frames <= maximumDelay
    }

    /// Delays this block of the source into `output`. [audio-thread]
    @inline(__always)
    func render(frames n: Int) {
        pool.setBlockFrames(n)
        let d = requestedDelay.load(ordering: .relaxed)
        var c = 0
        while c < channels {
            Self.delay(source.channel(c), into: output.channel(c), ring: ring + c * capacity,
                       capacity: capacity, writeIndex: writeIndex, delay: d, count: n)
            c += 1
        }
        writeIndex = (writeIndex + n) % capacity
        // The stream's end moves by the delay too: the output is the input
        // from `inputPosition - d` on.
        let state = source.state
        if state.ended {
            if endPosition == Int.max { endPosition = inputPosition + state.validFrames }
        } else {
            endPosition = Int.max
        }
        let outStart = inputPosition - d
        if endPosition == Int.max {
            output.state = BusState(validFrames: n, ended: false)
        } else {
            let left = endPosition - outStart
            output.state = BusState(validFrames: left <= 0 ? 0 : (left < n ? left : n), ended: left <= n)
        }
        inputPosition += n
    }

    /// Writes `count` frames of `src` into the ring at `writeIndex` and
    /// reads `count` frames from `delay` frames before them into `dst`.
    /// `capacity` ≥ `delay + count`.
    @_noLocks
    static func delay(_ src: UnsafePointer<Float>, into dst: UnsafeMutablePointer<Float>,
                      ring: UnsafeMutablePointer<Float>, capacity: Int, writeIndex: Int, delay: Int, count: Int) {
        Kernels.ringWrite(src, count: count, ring: ring, capacity: capacity, at: writeIndex)
        Kernels.ringRead(ring, capacity: capacity, at: writeIndex, delay: delay, count: count, into: dst)
    }
}
