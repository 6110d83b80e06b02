import Synchronization

/// A lock-free single-producer/single-consumer ring buffer of plain values.
///
/// Contract (as `jack/ringbuffer.h` states it): exactly one thread writes
/// and exactly one thread reads at a time. Either may be the audio thread;
/// no operation allocates, locks or waits. The producer owns `writeIndex`,
/// the consumer owns `readIndex`; each publishes its index with release
/// ordering and reads the other's with acquire ordering, so the elements
/// written before an index moves are visible to the other side once it sees
/// the move.
///
/// Indices grow without wrapping (Int is 64-bit) and are reduced modulo the
/// capacity, a power of two, so "full" and "empty" need no spare slot.
///
/// The typed methods forward to `RingKernel`, whose non-generic `@_noLocks`
/// functions do the index arithmetic and the copying on raw bytes.
public final class SPSCRing<Element: BitwiseCopyable>: @unchecked Sendable {
    /// Slots in the ring: a power of two.
    public let capacity: Int
    @usableFromInline let storage: UnsafeMutableRawPointer
    @usableFromInline let writeIndex = Atomic<Int>(0)
    @usableFromInline let readIndex = Atomic<Int>(0)

    /// - Parameter minimumCapacity: rounded up to a power of two. [main-thread]
    public init(minimumCapacity: Int) {
        ThreadRole.check(.main)
        var c = 1
        while c < max(minimumCapacity, 1) { c <<= 1 }
        capacity = c
        storage = .allocate(byteCount: c * MemoryLayout<Element>.stride, alignment: max(MemoryLayout<Element>.alignment, 16))
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: c * MemoryLayout<Element>.stride)
    }

    deinit { storage.deallocate() }

    @inlinable var layout: RingKernel.Layout {
        RingKernel.Layout(storage: storage, capacity: capacity, stride: MemoryLayout<Element>.stride)
    }

    /// Elements written since the start. [producer; an estimate elsewhere]
    @inlinable public var writePosition: Int { writeIndex.load(ordering: .acquiring) }

    /// Elements read or discarded since the start. [consumer; an estimate elsewhere]
    @inlinable public var readPosition: Int { readIndex.load(ordering: .acquiring) }

    /// Elements ready to read. [any-thread; the consumer; an estimate on other threads]
    @inlinable public var readable: Int { RingKernel.readable(writeIndex, readIndex) }

    /// Free slots. [any-thread; the producer; an estimate on other threads]
    @inlinable public var writable: Int { capacity &- RingKernel.readable(writeIndex, readIndex) }

    /// Writes up to `count` elements; returns how many fit. [producer]
    @inlinable @discardableResult
    public func write(_ source: UnsafePointer<Element>, count: Int) -> Int {
        RingKernel.write(layout, writeIndex, readIndex, UnsafeRawPointer(source), count)
    }

    /// Writes one element if there is room. [producer]
    @inlinable
    public func push(_ value: Element) -> Bool {
        withUnsafePointer(to: value) { write($0, count: 1) == 1 }
    }

    /// Reads up to `count` elements; returns how many were read. [consumer]
    @inlinable @discardableResult
    public func read(into destination: UnsafeMutablePointer<Element>, count: Int) -> Int {
        RingKernel.read(layout, writeIndex, readIndex, UnsafeMutableRawPointer(destination), count)
    }

    /// Reads one element into `value`; false when empty. [consumer]
    @inlinable
    public func pop(into value: inout Element) -> Bool {
        withUnsafeMutablePointer(to: &value) { read(into: $0, count: 1) == 1 }
    }

    /// Drops up to `count` readable elements; returns how many. [consumer]
    @inlinable @discardableResult
    public func discard(_ count: Int) -> Int {
        RingKernel.discard(writeIndex, readIndex, count)
    }
}

/// The ring's work on raw bytes: non-generic, so it can be `@_noLocks`.
/// [any-thread; the producer or the consumer, as each function says]
public enum RingKernel {
    public struct Layout {
        public var storage: UnsafeMutableRawPointer
        public var capacity: Int
        public var stride: Int
        @inlinable
        public init(storage: UnsafeMutableRawPointer, capacity: Int, stride: Int) {
            self.storage = storage
            self.capacity = capacity
            self.stride = stride
        }
    }

    /// [either side]
    @inlinable @_noLocks
    public static func readable(_ writeIndex: borrowing Atomic<Int>, _ readIndex: borrowing Atomic<Int>) -> Int {
        writeIndex.load(ordering: .acquiring) &- readIndex.load(ordering: .acquiring)
    }

    /// [producer]
    @inlinable @_noLocks
    public static func write(_ l: Layout, _ writeIndex: borrowing Atomic<Int>, _ readIndex: borrowing Atomic<Int>,
                             _ source: UnsafeRawPointer, _ count: Int) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let r = readIndex.load(ordering: .acquiring)
        let free = l.capacity &- (w &- r)
        let n = count < free ? count : free
        if n <= 0 { return 0 }
        let start = w & (l.capacity - 1)
        let first = n < l.capacity - start ? n : l.capacity - start
        (l.storage + start * l.stride).copyMemory(from: source, byteCount: first * l.stride)
        if n > first {
            l.storage.copyMemory(from: source + first * l.stride, byteCount: (n - first) * l.stride)
        }
        writeIndex.store(w &+ n, ordering: .releasing)
        return n
    }

    /// [consumer]
    @inlinable @_noLocks
    public static func read(_ l: Layout, _ writeIndex: borrowing Atomic<Int>, _ readIndex: borrowing Atomic<Int>,
                            _ destination: UnsafeMutableRawPointer, _ count: Int) -> Int {
        let r = readIndex.load(ordering: .relaxed)
        let w = writeIndex.load(ordering: .acquiring)
        let available = w &- r
        let n = count < available ? count : available
        if n <= 0 { return 0 }
        let start = r & (l.capacity - 1)
        let first = n < l.capacity - start ? n : l.capacity - start
        destination.copyMemory(from: l.storage + start * l.stride, byteCount: first * l.stride)
        if n > first {
            (destination + first * l.stride).copyMemory(from: l.storage, byteCount: (n - first) * l.stride)
        }
        readIndex.store(r &+ n, ordering: .releasing)
        return n
    }

    /// [consumer]
    @inlinable @_noLocks
    public static func discard(_ writeIndex: borrowing Atomic<Int>, _ readIndex: borrowing Atomic<Int>, _ count: Int) -> Int {
        let r = readIndex.load(ordering: .relaxed)
        let available = writeIndex.load(ordering: .acquiring) &- r
        let n = count < available ? count : available
        if n <= 0 { return 0 }
        readIndex.store(r &+ n, ordering: .releasing)
        return n
    }
}
