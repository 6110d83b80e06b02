import Synchronization

/// One parameter change on its way to the audio thread.
public struct ParameterChange: Sendable, Equatable, BitwiseCopyable {
    /// Index of the node in the engine's schedule.
    public var node: Int32
    /// The node's own parameter index (its position in its descriptor).
    public var parameter: Int32
    /// Element of an array parameter (e.g. `gains[1]`), or -1 for the whole value.
    public var element: Int32
    public var value: Double

    public init(node: Int32, parameter: Int32, element: Int32 = -1, value: Double) {
        self.node = node
        self.parameter = parameter
        self.element = element
        self.value = value
    }
}

/// Carries parameter changes from control threads to the audio thread.
///
/// Many control threads may `post` (they serialise on a mutex, which only
/// non-realtime threads ever touch); one audio thread drains the queue at
/// the start of each block, lock-free.
public final class ParameterQueue: @unchecked Sendable {
    private let ring: SPSCRing<ParameterChange>
    private let producers = Locked<Void>(())
    /// Changes refused because the queue was full.
    public let dropped = Atomic<Int>(0)

    /// [main-thread]
    public init(capacity: Int = 1024) {
        ThreadRole.check(.main)
        ring = SPSCRing(minimumCapacity: capacity)
    }

    /// Queues a change; false when the queue is full. [control-thread]
    @discardableResult
    public func post(_ change: ParameterChange) -> Bool {
        ThreadRole.check(.control)
        let ok = producers.withLock { _ in ring.push(change) }
        if !ok { dropped.add(1, ordering: .relaxed) }
        return ok
    }

    /// Changes queued since the start: right after a `post` that
    /// succeeded, at least that change's number (counting from 1).
    /// [any-thread]
    public var postedCount: Int { ring.writePosition }

    /// Changes the audio thread has taken off the queue since the start,
    /// each at the start of the block it applies them to: change number
    /// `n` has been applied once `takenCount >= n`. [any-thread]
    public var takenCount: Int { ring.readPosition }

    /// Next queued change. [audio-thread]
    @inline(__always)
    public func next(into change: inout ParameterChange) -> Bool { ThreadRole.check(.audio); return ring.pop(into: &change) }
}
