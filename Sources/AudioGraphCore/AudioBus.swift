/// Per-block state of a stream, written by the node that produces it.
public struct BusState: Sendable, Equatable {
    /// Frames of real signal in the current block. Equal to the block size
    /// while the stream runs; smaller in the block where it ends; 0 after.
    /// Samples past `validFrames` are zero.
    public var validFrames: Int
    /// The stream has ended (in this block or earlier).
    public var ended: Bool

    public init(validFrames: Int = 0, ended: Bool = false) {
        self.validFrames = validFrames
        self.ended = ended
    }
}

/// A view of one node output: non-interleaved Float32 channels of
/// `capacity` frames each, plus its `BusState`.
///
/// The memory belongs to a `BusPool` allocated when the engine is built;
/// an `AudioBus` is a pair of pointers into it, cheap to copy and safe to
/// use on the audio thread. It is valid as long as the engine that made it.
public struct AudioBus: @unchecked Sendable {
    public let channels: Int
    /// Frames per channel: the largest block the engine may render.
    public let capacity: Int
    /// Distance between channels in samples: `capacity` plus padding, so
    /// that channels of large capacity (a power of two) do not all start
    /// on the same cache sets and evict each other.
    @usableFromInline let stride: Int
    @usableFromInline let base: UnsafeMutablePointer<Float>
    @usableFromInline let statePointer: UnsafeMutablePointer<BusState>

    @inlinable
    init(channels: Int, capacity: Int, stride: Int, base: UnsafeMutablePointer<Float>, state: UnsafeMutablePointer<BusState>) {
        self.channels = channels
        self.capacity = capacity
        self.stride = stride
        self.base = base
        self.statePointer = state
    }

    /// The samples of channel `index`. [any thread that owns the bus in this phase]
    @inlinable
    public func channel(_ index: Int) -> UnsafeMutablePointer<Float> {
        base + index * stride
    }

    /// The block state. [audio-thread while rendering]
    @inlinable
    public var state: BusState {
        get { statePointer.pointee }
        nonmutating set { statePointer.pointee = newValue }
    }

    /// Zeroes every channel from `from` to `to` frames. [audio-thread]
    @inlinable
    public func clear(from: Int = 0, to: Int) {
        guard to > from else { return }
        for c in 0..<channels { Kernels.fill(channel(c) + from, count: to - from, value: 0) }
    }
}

/// Owns the memory of every bus of an engine. Allocates only in `init`.
public final class BusPool: @unchecked Sendable {
    public let capacity: Int
    private let samples: UnsafeMutablePointer<Float>
    private let states: UnsafeMutablePointer<BusState>
    public let buses: [AudioBus]

    /// Padding between channels, in samples (128 bytes: two cache lines).
    public static let channelPadding = 32

    /// Allocates one bus per entry of `channelCounts`, zeroed. [main-thread]
    public init(channelCounts: [Int], capacity: Int) {
        self.capacity = capacity
        let stride = capacity + Self.channelPadding
        let total = max(channelCounts.reduce(0, +) * stride, 1)
        samples = .allocateZeroed(total)
        states = .allocate(capacity: max(channelCounts.count, 1))
        states.initialize(repeating: BusState(), count: max(channelCounts.count, 1))
        var offset = 0
        var made: [AudioBus] = []
        for (i, n) in channelCounts.enumerated() {
            made.append(AudioBus(channels: n, capacity: capacity, stride: stride, base: samples + offset, state: states + i))
            offset += n * stride
        }
        buses = made
    }

    deinit {
        samples.deallocate()
        states.deallocate()
    }
}
