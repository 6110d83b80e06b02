import XCTest
import AudioGraphCore
import Synchronization
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// An engine rendering its independent branches on several threads
/// (`Engine.useRenderThreads`) gives exactly the samples it gives on one,
/// allocates nothing in the block, and its helper threads live from
/// `RenderThreads.init` to `stop`.
final class ParallelRenderTests: XCTestCase {
    /// A source: a deterministic ramp-and-wrap signal of its own seed,
    /// ending after `length` frames (0: never).
    final class Source: RenderNode {
        var output: AudioBus?
        var n = 0
        let seed: Float
        let length: Int
        init(seed: Float, length: Int = 0) {
            self.seed = seed
            self.length = length
        }
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }
        func render(frames: Int) {
            guard let output else { return }
            var valid = frames
            if length > 0 { valid = max(0, min(frames, length - n)) }
            for c in 0..<output.channels {
                let p = output.channel(c)
                for i in 0..<frames {
                    p[i] = i < valid ? Float((n + i) % 97) * 0.01 * seed + Float(c) * 0.001 : 0
                }
            }
            n += frames
            output.state = BusState(validFrames: valid, ended: length > 0 && n >= length)
        }
    }

    /// A stateful filter (one pole) that does `passes` passes of work per
    /// block, with `latency` frames of declared latency.
    final class Filter: RenderNode {
        var input: AudioBus?
        var output: AudioBus?
        /// Per channel, allocated in `prepare` (an array's element set in a
        /// debug build allocates its accessor's frame).
        var state = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        let coefficient: Float
        let passes: Int
        let declaredLatency: Int
        init(_ coefficient: Float, passes: Int = 1, latency: Int = 0) {
            self.coefficient = coefficient
            self.passes = passes
            declaredLatency = latency
        }
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
            input = inputs.first
            self.output = output
            state.deallocate()
            state = .allocate(capacity: max(output?.channels ?? 0, 1))
            state.initialize(repeating: 0, count: max(output?.channels ?? 0, 1))
        }
        deinit { state.deallocate() }
        var latency: Int { declaredLatency }
        func render(frames: Int) {
            guard let input, let output else { return }
            for c in 0..<output.channels {
                let x = input.channel(min(c, input.channels - 1)), y = output.channel(c)
                var s = state[c]
                for _ in 0..<passes {
                    s = state[c]
                    for i in 0..<frames {
                        s = s * coefficient + x[i] * (1 - coefficient)
                        y[i] = s
                    }
                }
                state[c] = s
            }
            output.state = input.state
        }
    }

    /// Sums its inputs.
    final class Mix: RenderNode {
        var inputs: [AudioBus] = []
        var output: AudioBus?
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
            self.inputs = inputs
            self.output = output
        }
        func render(frames: Int) {
            guard let output else { return }
            for c in 0..<output.channels {
                let y = output.channel(c)
                for i in 0..<frames { y[i] = 0 }
                var k = 0
                while k < inputs.count {
                    let x = inputs[k].channel(min(c, inputs[k].channels - 1))
                    for i in 0..<frames { y[i] += x[i] }
                    k += 1
                }
            }
            output.state = BusState.merging(inputs)
        }
    }

    /// Keeps every sample of channel 0 it is fed (room made up front).
    final class Capture: RenderNode {
        var input: AudioBus?
        let samples: UnsafeMutablePointer<Float>
        let capacity: Int
        var count = 0
        init(capacity: Int) {
            self.capacity = capacity
            samples = .allocate(capacity: capacity)
        }
        deinit { samples.deallocate() }
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { input = inputs.first }
        func render(frames: Int) {
            guard let input else { return }
            let x = input.channel(0)
            for i in 0..<frames where count < capacity {
                samples[count] = x[i]
                count += 1
            }
        }
        var seen: [Float] { Array(UnsafeBufferPointer(start: samples, count: count)) }
    }

    /// Records whether two nodes of its kind ever render at the same time.
    final class Overlaps: Sendable {
        let inside = Atomic<Int>(0)
        let count = Atomic<Int>(0)
    }

    final class SerialProbe: RenderNode, SerialRenderNode {
        let seen: Overlaps
        var input: AudioBus?
        var output: AudioBus?
        init(_ seen: Overlaps) { self.seen = seen }
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
            input = inputs.first
            self.output = output
        }
        func render(frames: Int) {
            if seen.inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 { seen.count.add(1, ordering: .relaxed) }
            guard let input, let output else { return }
            // Long enough for another thread to come in, were it allowed.
            for _ in 0..<20 {
                for i in 0..<frames { output.channel(0)[i] = input.channel(0)[i] * 0.5 }
            }
            output.state = input.state
            seen.inside.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Passes its input through and counts the blocks it rendered on a
    /// thread other than the one that made it.
    final class ThreadProbe: RenderNode {
        let owner = pthread_self()
        let elsewhere: Overlaps
        var input: AudioBus?
        var output: AudioBus?
        init(_ elsewhere: Overlaps) { self.elsewhere = elsewhere }
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
            input = inputs.first
            self.output = output
        }
        func render(frames: Int) {
            if pthread_equal(pthread_self(), owner) == 0 { elsewhere.count.add(1, ordering: .relaxed) }
            guard let input, let output else { return }
            for i in 0..<frames { output.channel(0)[i] = input.channel(0)[i] }
            output.state = input.state
        }
    }

    /// Two independent branches of two filters each (one with latency, so
    /// the mixer's other input goes through a delay line), mixed, into a
    /// capture.
    func twoBranches(capture: Capture) throws -> Engine {
        try Engine(steps: [
            .init(id: "a", node: Source(seed: 1, length: 5000), inputs: [], outputChannels: 2),
            .init(id: "b", node: Source(seed: -0.7, length: 4000), inputs: [], outputChannels: 2),
            .init(id: "a1", node: Filter(0.9, passes: 4), inputs: [0], outputChannels: 2),
            .init(id: "b1", node: Filter(0.5, passes: 4, latency: 3), inputs: [1], outputChannels: 2),
            .init(id: "a2", node: Filter(0.3, passes: 4), inputs: [2], outputChannels: 2),
            .init(id: "b2", node: Filter(0.8, passes: 4), inputs: [3], outputChannels: 2),
            .init(id: "m", node: Mix(), inputs: [4, 5], outputChannels: 2),
            .init(id: "cap", node: capture, inputs: [6], outputChannels: nil),
        ], sampleRate: 48000, maxFrames: 256)
    }

    /// A diamond after a fan-out, then a second fan-out whose branches
    /// meet again: src → (p, q) → m1 → (r, s, t) → m2 → capture.
    func diamond(capture: Capture) throws -> Engine {
        try Engine(steps: [
            .init(id: "src", node: Source(seed: 0.9, length: 6000), inputs: [], outputChannels: 1),
            .init(id: "p", node: Filter(0.7, passes: 20), inputs: [0], outputChannels: 1),
            .init(id: "q", node: Filter(0.2, passes: 20, latency: 5), inputs: [0], outputChannels: 1),
            .init(id: "m1", node: Mix(), inputs: [1, 2], outputChannels: 1),
            .init(id: "r", node: Filter(0.95, passes: 10), inputs: [3], outputChannels: 1),
            .init(id: "s", node: Filter(0.4, passes: 10), inputs: [3], outputChannels: 1),
            .init(id: "t", node: Filter(0.6, passes: 10), inputs: [3], outputChannels: 1),
            .init(id: "m2", node: Mix(), inputs: [4, 5, 6, 3], outputChannels: 1),
            .init(id: "cap", node: capture, inputs: [7], outputChannels: nil),
        ], sampleRate: 48000, maxFrames: 256)
    }

    /// Renders blocks of varying size until the engine finishes.
    func renderToEnd(_ engine: Engine) {
        let sizes = [128, 64, 256, 1, 100, 128]
        var k = 0
        while !engine.isFinished && k < 10_000 {
            engine.render(frames: sizes[k % sizes.count])
            k += 1
        }
    }

    func samples(_ make: (Capture) throws -> Engine, threads: RenderThreads?) throws -> [Float] {
        let capture = Capture(capacity: 20_000)
        let engine = try make(capture)
        engine.useRenderThreads(threads)
        XCTAssertEqual(engine.rendersInParallel, threads != nil)
        renderToEnd(engine)
        return capture.seen
    }

    func testTwoIndependentBranchesGiveTheSameSamplesOnTwoThreadsAsOnOne() throws {
        let threads = try RenderThreads(helpers: 1)
        defer { threads.stop() }
        let one = try samples(twoBranches, threads: nil)
        XCTAssertGreaterThan(one.count, 5000)
        XCTAssertGreaterThan(one.map(abs).max() ?? 0, 0.1, "a signal, not silence")
        for _ in 0..<3 {
            let two = try samples(twoBranches, threads: threads)
            XCTAssertEqual(two.count, one.count)
            XCTAssertEqual(two, one, "threads=2 gives exactly the samples of threads=1")
        }
    }

    func testDiamondsGiveTheSameSamplesOnTwoAndThreeThreads() throws {
        let one = try samples(diamond, threads: nil)
        XCTAssertGreaterThan(one.count, 6000)
        for helpers in [1, 2] {
            let threads = try RenderThreads(helpers: helpers)
            defer { threads.stop() }
            let many = try samples(diamond, threads: threads)
            XCTAssertEqual(many, one, "\(helpers + 1) threads give exactly the samples of one")
        }
    }

    func testAChainStaysOnTheRenderingThread() throws {
        let threads = try RenderThreads(helpers: 1)
        defer { threads.stop() }
        let capture = Capture(capacity: 100)
        let engine = try Engine(steps: [
            .init(id: "a", node: Source(seed: 1), inputs: [], outputChannels: 1),
            .init(id: "f", node: Filter(0.5), inputs: [0], outputChannels: 1),
            .init(id: "cap", node: capture, inputs: [1], outputChannels: nil),
        ], sampleRate: 48000, maxFrames: 64)
        XCTAssertEqual(engine.independentBranches, 1)
        engine.useRenderThreads(threads)
        XCTAssertFalse(engine.rendersInParallel, "nothing to share: no helper is woken")
        XCTAssertEqual(try twoBranches(capture: Capture(capacity: 1)).independentBranches, 2)
        XCTAssertEqual(try diamond(capture: Capture(capacity: 1)).independentBranches, 3)
    }

    func testHelpersRenderBranches() throws {
        let threads = try RenderThreads(helpers: 1)
        defer { threads.stop() }
        let elsewhere = Overlaps()
        let engine = try Engine(steps: [
            .init(id: "a", node: Source(seed: 1), inputs: [], outputChannels: 1),
            .init(id: "b", node: Source(seed: 2), inputs: [], outputChannels: 1),
            .init(id: "fa", node: Filter(0.5, passes: 40), inputs: [0], outputChannels: 1),
            .init(id: "fb", node: Filter(0.5, passes: 40), inputs: [1], outputChannels: 1),
            .init(id: "pa", node: ThreadProbe(elsewhere), inputs: [2], outputChannels: 1),
            .init(id: "pb", node: ThreadProbe(elsewhere), inputs: [3], outputChannels: 1),
            .init(id: "m", node: Mix(), inputs: [4, 5], outputChannels: 1),
            .init(id: "cap", node: Capture(capacity: 1), inputs: [6], outputChannels: nil),
        ], sampleRate: 48000, maxFrames: 256)
        engine.useRenderThreads(threads)
        for _ in 0..<300 { engine.render(frames: 256) }
        XCTAssertGreaterThan(elsewhere.count.load(ordering: .relaxed), 0, "the helper took branches")
        XCTAssertLessThan(elsewhere.count.load(ordering: .relaxed), 600, "and the rendering thread took its share")
    }

    func testSerialNodesNeverRenderAtTheSameTime() throws {
        let threads = try RenderThreads(helpers: 1)
        defer { threads.stop() }
        let overlaps = Overlaps()
        let capture = Capture(capacity: 1)
        let engine = try Engine(steps: [
            .init(id: "a", node: Source(seed: 1), inputs: [], outputChannels: 1),
            .init(id: "b", node: Source(seed: 2), inputs: [], outputChannels: 1),
            .init(id: "sa", node: SerialProbe(overlaps), inputs: [0], outputChannels: 1),
            .init(id: "sb", node: SerialProbe(overlaps), inputs: [1], outputChannels: 1),
            .init(id: "m", node: Mix(), inputs: [2, 3], outputChannels: 1),
            .init(id: "cap", node: capture, inputs: [4], outputChannels: nil),
        ], sampleRate: 48000, maxFrames: 256)
        engine.useRenderThreads(threads)
        XCTAssertTrue(engine.rendersInParallel, "the sources still run side by side")
        for _ in 0..<500 { engine.render(frames: 256) }
        XCTAssertEqual(overlaps.count.load(ordering: .relaxed), 0)
    }

    func testTheBlockAllocatesNothingOnAnyThread() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        // The helpers count their own allocations from their first instruction on.
        let threads = try RenderThreads(helpers: 1, threadInit: { MallocCounter.beginThread() })
        defer { threads.stop() }
        // The control: the same graph on one thread.
        let serial = try diamond(capture: Capture(capacity: 1))
        for _ in 0..<4 { serial.render(frames: 256) }
        XCTAssertEqual(MallocCounter.countRendering(serial, blocks: 1000, sizes: [64, 256]), 0, "the nodes allocate nothing")
        let capture = Capture(capacity: 1)
        let engine = try diamond(capture: capture)
        engine.useRenderThreads(threads)
        // Warm-up: the Swift runtime instantiates metadata on first use.
        for _ in 0..<4 { engine.render(frames: 256) }
        let allocations = MallocCounter.countRendering(engine, blocks: 4000, sizes: [64, 256, 100, 1, 128])
        XCTAssertEqual(allocations, 0, "no allocation on the rendering thread or the helpers")
    }

    func testHelperThreadsLiveFromStartToStop() throws {
        let threads = try RenderThreads(helpers: 2)
        let ids = threads.threadIDs
        XCTAssertEqual(ids.count, 2)
        for tid in ids {
            let comm = try String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)
            XCTAssertEqual(comm.trimmingCharacters(in: .whitespacesAndNewlines), "agraph-render")
        }
        threads.stop()
        XCTAssertTrue(threads.threadIDs.isEmpty)
        // pthread_join returns once the kernel clears the thread's id, a
        // moment before it drops the task from /proc: allow 2 s for that.
        let deadline = Date().addingTimeInterval(2)
        var left = ids.filter { FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") }
        while !left.isEmpty, Date() < deadline {
            usleep(1000)
            left = left.filter { FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") }
        }
        XCTAssertEqual(left, [], "helper threads still listed in /proc/self/task 2 s after stop")
    }
}
