import AudioGraphCore
import CAGraphAllocCount

/// Counts heap allocations made by one thread: the proof that a real-time
/// path allocates nothing. The counter is the product's own
/// (`CAGraphAllocCount`, also behind `agraph check-plugin`): it replaces
/// malloc in the test bundle, counts per thread, and calls glibc's
/// allocator. Why not ordo-one/malloc-interposer: it counts for the whole
/// process and must be LD_PRELOADed, where these tests count only the
/// rendering thread while others allocate freely.
public enum MallocCounter {
    /// Whether allocations are intercepted in this process (not under TSan/ASan).
    public static var isAvailable: Bool { agraph_alloc_count_available() != 0 }

    /// Runs `body` on the calling thread and returns how many allocations it
    /// made while counted. `body` may pause the count with `endThread()` …
    /// `beginThread()` (e.g. around posting a parameter change, a control
    /// thread's work): every counted stretch is summed, not just the last
    /// (the sum is taken from the running total, which `beginThread` does
    /// not reset). [any thread; counts only the calling thread, and no
    /// other thread may count at the same time]
    public static func count(_ body: () throws -> Void) rethrows -> Int {
        let before = total
        agraph_alloc_count_begin()
        defer { _ = agraph_alloc_count_end() }
        try body()
        _ = agraph_alloc_count_end()
        return total - before
    }

    /// Marks the calling thread as counted until `endThread()`. [that thread]
    public static func beginThread() { agraph_alloc_count_begin() }
    /// Stops counting the calling thread; its allocations so far stay in
    /// `total`. [that thread]
    public static func endThread() { _ = agraph_alloc_count_end() }
    /// Whether the calling thread is counted (a `beginThread()` not yet
    /// ended). [that thread]
    public static var isCountingThisThread: Bool { agraph_alloc_count_active() != 0 }
    /// Allocations by counted threads since `reset()`. [any thread]
    public static var total: Int { Int(agraph_alloc_count_total()) }
    /// [any thread]
    public static func reset() { agraph_alloc_count_reset() }
}

extension MallocCounter {
    /// Allocations on the calling thread while it renders `blocks` blocks
    /// of `engine`, cycling through `sizes` (as after `jack_bufsize`), and
    /// every `every` blocks posts the next of `changes` outside the count
    /// (posting is a control thread's work; applying it, in the next
    /// render, is counted). `between` runs outside the count at the same
    /// moments (e.g. waiting for a feeder). [the rendering thread]
    public static func countRendering(_ engine: Engine, blocks: Int = 10_000, sizes: [Int],
                                      changes: [ParameterChange] = [], every: Int = 100,
                                      between: () -> Void = {}) -> Int {
        count {
            for i in 0..<blocks {
                if i % every == 0 {
                    endThread()
                    if !changes.isEmpty { engine.post(changes[(i / every) % changes.count]) }
                    between()
                    beginThread()
                }
                engine.render(frames: sizes[i % sizes.count])
            }
        }
    }
}
