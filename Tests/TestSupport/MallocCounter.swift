import CMallocCounter

/// Counts heap allocations made by one thread: the proof that a real-time
/// path allocates nothing. See `CMallocCounter.h` for how and why.
public enum MallocCounter {
    /// Whether allocations are intercepted in this process (not under TSan/ASan).
    public static var isAvailable: Bool { agraph_malloc_counter_available() != 0 }

    /// Runs `body` on the calling thread and returns how many allocations it made.
    /// [any thread; counts only the calling thread]
    public static func count(_ body: () throws -> Void) rethrows -> Int {
        agraph_malloc_counter_reset()
        agraph_malloc_counter_thread_begin()
        defer { agraph_malloc_counter_thread_end() }
        try body()
        return Int(agraph_malloc_counter_total())
    }

    /// Marks the calling thread as counted until `endThread()`. [that thread]
    public static func beginThread() { agraph_malloc_counter_thread_begin() }
    /// [that thread]
    public static func endThread() { agraph_malloc_counter_thread_end() }
    /// Allocations by counted threads since `reset()`. [any thread]
    public static var total: Int { Int(agraph_malloc_counter_total()) }
    /// [any thread]
    public static func reset() { agraph_malloc_counter_reset() }
}
