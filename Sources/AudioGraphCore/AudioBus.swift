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

/// Where a bus's channels are this block: channel `c` starts at
/// `base + c * stride`. Rewritten when the block size changes.
public struct BusLayout: @unchecked Sendable {
    public var base: UnsafeMutablePointer<Float>
    public var stride: Int
}

/// A view of one node output: non-interleaved Float32 channels of up to
/// `capacity` frames each, plus its `BusState`.
///
/// The memory belongs to a `BusPool` allocated when the engine is built;
/// an `AudioBus` is a pair of pointers into it, cheap to copy and safe to
/// use on the audio thread. It is valid as long as the engine that made it.
/// Its samples are valid within one block only: call `channel(_:)` in each
/// `render`, never keep the pointer (the layout follows the block size).
public struct AudioBus: @unchecked Sendable {
    public let channels: Int
    /// Frames per channel: the largest block the engine may render.
    public let capacity: Int
    @usableFromInline let layout: UnsafeMutablePointer<BusLayout>
    @usableFromInline let statePointer: UnsafeMutablePointer<BusState>

    @inlinable
    init(channels: Int, capacity: Int, layout: UnsafeMutablePointer<BusLayout>, state: UnsafeMutablePointer<BusState>) {
        self.channels = channels
        self.capacity = capacity
        self.layout = layout
        self.statePointer = state
    }

    /// The samples of channel `index` for the current block.
    /// [any-thread; the thread that owns the bus in this phase]
    @inlinable
    public func channel(_ index: Int) -> UnsafeMutablePointer<Float> {
        let l = layout.pointee
        return l.base + index * l.stride
    }

    /// The block state. [audio-thread & rendering]
    @inlinable
    public var state: BusState {
        get { ThreadRole.check(.audio); return statePointer.pointee }
        nonmutating set { statePointer.pointee = newValue }
    }

    /// Zeroes every channel from `from` to `to` frames. [audio-thread]
    @inlinable
    public func clear(from: Int = 0, to: Int) {
        ThreadRole.check(.audio)
        guard to > from else { return }
        for c in 0..<channels { Kernels.fill(channel(c) + from, count: to - from, value: 0) }
    }
}

/// Owns the memory of every bus of an engine. Allocates only in `init`.
///
/// The memory holds every channel at full `capacity`, but the channels are
/// laid out one after another at a stride of the *current* block size
/// (rounded up, plus padding): the audio of a block then sits in a few
/// contiguous pages instead of one page per channel, and no two channels
/// share cache sets. `setBlockFrames` moves to a new stride without
/// allocating.
public final class BusPool: @unchecked Sendable {
    public let capacity: Int
    private let samples: UnsafeMutablePointer<Float>
    private let states: UnsafeMutablePointer<BusState>
    let layouts: UnsafeMutablePointer<BusLayout>
    /// First global channel index of each bus.
    let firstChannel: UnsafeMutablePointer<Int>
    let busCount: Int
    public let buses: [AudioBus]
    /// The block size the layout is for, behind a pointer: a class's stored
    /// `var` costs a dynamic exclusivity check per access on the audio thread.
    private let currentBlockFrames: UnsafeMutablePointer<Int>
    /// The block size the layout is for. [audio-thread]
    public var blockFrames: Int { ThreadRole.check(.audio); return currentBlockFrames.pointee }

    /// Padding between channels, in samples (128 bytes: two cache lines).
    public static let channelPadding = 32

    /// Allocates one bus per entry of `channelCounts`, zeroed, laid out for
    /// `capacity` frames. [main-thread]
    public init(channelCounts: [Int], capacity: Int) {
        ThreadRole.check(.main)
        self.capacity = capacity
        let total = max(channelCounts.reduce(0, +) * Self.stride(for: capacity), 1)
        samples = .allocateZeroed(total)
        busCount = channelCounts.count
        let n = max(busCount, 1)
        states = .allocate(capacity: n)
        states.initialize(repeating: BusState(), count: n)
        layouts = .allocate(capacity: n)
        layouts.initialize(repeating: BusLayout(base: samples, stride: 0), count: n)
        firstChannel = .allocate(capacity: n)
        firstChannel.initialize(repeating: 0, count: n)
        currentBlockFrames = .allocate(capacity: 1)
        currentBlockFrames.initialize(to: 0)
        var channel = 0
        var made: [AudioBus] = []
        for (i, c) in channelCounts.enumerated() {
            firstChannel[i] = channel
            channel += c
            made.append(AudioBus(channels: c, capacity: capacity, layout: layouts + i, state: states + i))
        }
        buses = made
        setBlockFrames(capacity)
    }

    deinit {
        samples.deallocate()
        states.deallocate()
        layouts.deallocate()
        firstChannel.deallocate()
        currentBlockFrames.deallocate()
    }

    /// The layouts and states of every bus (read in every block). [any-thread]
    public var hotMemory: [UnsafeRawBufferPointer] {
        let n = max(busCount, 1)
        return [UnsafeRawBufferPointer(hot: layouts, count: n), UnsafeRawBufferPointer(hot: states, count: n),
                UnsafeRawBufferPointer(hot: currentBlockFrames)]
    }

    /// Channel stride for blocks of `frames`: a multiple of 16 samples (64
    /// bytes) plus the padding. [any-thread]
    @inlinable
    public static func stride(for frames: Int) -> Int {
        (frames + 15) / 16 * 16 + channelPadding
    }

    /// Lays the channels out for blocks of `frames` (≤ capacity). Bus
    /// contents do not survive it. [audio-thread | main-thread; between blocks, or before
    /// the engine renders (a pool's init, a reload's new engine on the owner thread)]
    public func setBlockFrames(_ frames: Int) {
        ThreadRole.check(.audio, .main)
        let f = frames < capacity ? frames : capacity
        if f == currentBlockFrames.pointee { return }
        currentBlockFrames.pointee = f
        let stride = Self.stride(for: f)
        var i = 0
        while i < busCount {
            layouts[i] = BusLayout(base: samples + firstChannel[i] * stride, stride: stride)
            i += 1
        }
    }
}
