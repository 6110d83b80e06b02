import XCTest
import AudioGraphCore
import Synchronization

final class RingBufferTests: XCTestCase {
    func testCapacityIsAPowerOfTwoAndFillsCompletely() {
        let ring = SPSCRing<Int32>(minimumCapacity: 100)
        XCTAssertEqual(ring.capacity, 128)
        let data = (0..<200).map(Int32.init)
        XCTAssertEqual(ring.write(data, count: 200), 128, "writes what fits")
        XCTAssertEqual(ring.readable, 128)
        XCTAssertEqual(ring.writable, 0)
        var out = [Int32](repeating: -1, count: 200)
        XCTAssertEqual(ring.read(into: &out, count: 200), 128)
        XCTAssertEqual(Array(out[0..<128]), Array(data[0..<128]))
        XCTAssertEqual(ring.readable, 0)
    }

    func testWrapsAroundKeepingOrder() {
        let ring = SPSCRing<Float>(minimumCapacity: 16)
        var next: Float = 0, expected: Float = 0
        var buf = [Float](repeating: 0, count: 16)
        // Chunk sizes that don't divide the capacity force every wrap position.
        for step in 0..<500 {
            let n = [3, 7, 11, 5, 13][step % 5]
            let chunk = (0..<n).map { next + Float($0) }
            let w = ring.write(chunk, count: n)
            next += Float(w)
            let r = ring.read(into: &buf, count: [4, 9, 6][step % 3])
            for i in 0..<r {
                XCTAssertEqual(buf[i], expected)
                expected += 1
            }
        }
        XCTAssertGreaterThan(expected, 1000)
    }

    func testPushPopAndDiscard() {
        let ring = SPSCRing<ParameterChange>(minimumCapacity: 4)
        for i in 0..<4 { XCTAssertTrue(ring.push(ParameterChange(node: Int32(i), parameter: 0, value: Double(i)))) }
        XCTAssertFalse(ring.push(ParameterChange(node: 9, parameter: 0, value: 0)), "full")
        XCTAssertEqual(ring.discard(2), 2)
        var c = ParameterChange(node: -1, parameter: -1, value: 0)
        XCTAssertTrue(ring.pop(into: &c))
        XCTAssertEqual(c.node, 2)
        XCTAssertTrue(ring.pop(into: &c))
        XCTAssertEqual(c.value, 3)
        XCTAssertFalse(ring.pop(into: &c), "empty")
        XCTAssertEqual(ring.discard(5), 0)
    }
}

/// Two threads, one ring, every element checked in order. Run under
/// ThreadSanitizer by the test script (`swift test --sanitize=thread`):
/// a missing acquire/release would show as a data race on the storage.
final class RingBufferStressTests: XCTestCase {
    func testProducerAndConsumerThreadsSeeEveryElementInOrder() {
        let total = 2_000_000
        let ring = SPSCRing<UInt32>(minimumCapacity: 1024)
        let producerDone = Atomic<Bool>(false)
        let producer = Thread {
            var next: UInt32 = 0
            var chunk = [UInt32](repeating: 0, count: 300)
            var size = 1
            while Int(next) < total {
                size = size % 257 + 1
                let n = min(size, total - Int(next))
                for i in 0..<n { chunk[i] = next &+ UInt32(i) }
                let w = chunk.withUnsafeBufferPointer { ring.write($0.baseAddress!, count: n) }
                next &+= UInt32(w)
                if w == 0 { sched_yield() }
            }
            producerDone.store(true, ordering: .releasing)
        }
        producer.start()
        var expected: UInt32 = 0
        var errors = 0
        var buf = [UInt32](repeating: 0, count: 512)
        var size = 1
        while Int(expected) < total {
            size = size % 509 + 1
            let r = buf.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, count: size) }
            for i in 0..<r where buf[i] != expected &+ UInt32(i) { errors += 1 }
            expected &+= UInt32(r)
            if r == 0 { sched_yield() }
        }
        while !producerDone.load(ordering: .acquiring) { sched_yield() }
        XCTAssertEqual(errors, 0, "elements out of order or corrupted")
        XCTAssertEqual(Int(expected), total)
        XCTAssertEqual(ring.readable, 0)
    }
}

final class StreamRingTests: XCTestCase {
    func bus(channels: Int, frames: Int) -> (BusPool, AudioBus) {
        let pool = BusPool(channelCounts: [channels], capacity: frames)
        return (pool, pool.buses[0])
    }

    func testFeedRingDeinterleavesAndCountsUnderruns() {
        let feed = FeedRing(channels: 2, capacityFrames: 64, maxFrames: 16)
        let (pool, out) = bus(channels: 2, frames: 16)
        _ = pool
        let frames: [Float] = (0..<20).flatMap { [Float($0), -Float($0)] }
        XCTAssertEqual(feed.write(frames, frames: 10), 10)
        feed.render(into: out, frames: 16)
        XCTAssertEqual(out.state, BusState(validFrames: 16, ended: false), "a missing frame is an underrun, not an end")
        XCTAssertEqual(feed.underruns.load(ordering: .relaxed), 1)
        XCTAssertEqual(feed.missingFrames.load(ordering: .relaxed), 6)
        for i in 0..<10 {
            XCTAssertEqual(out.channel(0)[i], Float(i))
            XCTAssertEqual(out.channel(1)[i], -Float(i))
        }
        for i in 10..<16 { XCTAssertEqual(out.channel(0)[i], 0, "silence for missing frames") }

        XCTAssertEqual(feed.write(frames, frames: 5), 5)
        feed.markEnd()
        feed.render(into: out, frames: 16)
        XCTAssertEqual(out.state, BusState(validFrames: 5, ended: true), "end after the last frame")
        XCTAssertEqual(feed.underruns.load(ordering: .relaxed), 1, "the end is no underrun")
    }

    /// A stream that keeps time (a transport follower): the frames that
    /// came too late are dropped when they arrive, so each frame still
    /// plays in the block it was due in; a flush (a locate) clears the debt.
    func testFeedRingThatKeepsTimeDropsWhatCameTooLate() {
        let feed = FeedRing(channels: 1, capacityFrames: 256, maxFrames: 16)
        feed.keepsTime.store(true, ordering: .relaxed)
        let (pool, out) = bus(channels: 1, frames: 16)
        _ = pool
        let numbered = (0..<200).map { Float($0 + 1) }
        feed.write(numbered, frames: 10)
        feed.render(into: out, frames: 16)
        XCTAssertEqual((0..<16).map { out.channel(0)[$0] }, (0..<10).map { Float($0 + 1) } + Array(repeating: 0, count: 6))
        // Frames 10…15 were due in that block: they arrive late, with more.
        numbered[10..<40].withUnsafeBufferPointer { feed.write($0.baseAddress!, frames: 30) }
        feed.render(into: out, frames: 16)
        XCTAssertEqual((0..<16).map { out.channel(0)[$0] }, (16..<32).map { Float($0 + 1) }, "block 2 plays frames 16…31")
        // Owed frames beyond what is buffered stay owed.
        feed.render(into: out, frames: 16)  // 8 buffered (32…39), 8 missing (40…47)
        XCTAssertEqual((0..<8).map { out.channel(0)[$0] }, (32..<40).map { Float($0 + 1) })
        numbered[40..<44].withUnsafeBufferPointer { feed.write($0.baseAddress!, frames: 4) }
        feed.render(into: out, frames: 16)  // 40…43 came too late; 48…63 missing
        XCTAssertEqual((0..<16).map { out.channel(0)[$0] }, Array(repeating: 0, count: 16))
        numbered[44..<80].withUnsafeBufferPointer { feed.write($0.baseAddress!, frames: 36) }
        feed.render(into: out, frames: 16)
        XCTAssertEqual((0..<16).map { out.channel(0)[$0] }, (64..<80).map { Float($0 + 1) }, "back on time at frame 64")
        XCTAssertEqual(feed.underruns.load(ordering: .relaxed), 3)
        // A flush (a locate) starts over: nothing owed.
        feed.render(into: out, frames: 16)  // owes 16
        feed.flush()
        numbered[100..<120].withUnsafeBufferPointer { feed.write($0.baseAddress!, frames: 20) }
        feed.render(into: out, frames: 16)
        XCTAssertEqual((0..<16).map { out.channel(0)[$0] }, (100..<116).map { Float($0 + 1) }, "from the located frame")

        // Not keeping time (the default): the late frames play late.
        let free = FeedRing(channels: 1, capacityFrames: 256, maxFrames: 16)
        free.write(numbered, frames: 10)
        free.render(into: out, frames: 16)
        numbered[10..<40].withUnsafeBufferPointer { free.write($0.baseAddress!, frames: 30) }
        free.render(into: out, frames: 16)
        XCTAssertEqual((0..<16).map { out.channel(0)[$0] }, (10..<26).map { Float($0 + 1) })
    }

    func testDrainRingCountsWhatDoesNotFit() {
        let drain = DrainRing(channels: 1, capacityFrames: 8, maxFrames: 8)
        let (pool, bus) = bus(channels: 1, frames: 8)
        _ = pool
        for i in 0..<8 { bus.channel(0)[i] = Float(i) }
        bus.state = BusState(validFrames: 6, ended: false)
        drain.capture(bus)
        drain.capture(bus)
        XCTAssertEqual(drain.readableFrames, 8)
        XCTAssertEqual(drain.droppedFrames.load(ordering: .relaxed), 4)
        var out = [Float](repeating: 0, count: 8)
        XCTAssertEqual(drain.take(into: &out, frames: 8), 8)
        XCTAssertEqual(out, [0, 1, 2, 3, 4, 5, 0, 1])
        XCTAssertFalse(drain.isEnded)
        bus.state = BusState(validFrames: 0, ended: true)
        drain.capture(bus)
        XCTAssertTrue(drain.isEnded)
    }

    func testSmoothedGainRampsLinearlyToItsTarget() {
        var g = SmoothedGain(1, rampFrames: 100)
        g.setTarget(0)
        var values: [Float] = []
        g.process(count: 150, channels: 1) { _, start, n, from, step in
            for k in 0..<n { values.append(from + step * Float(k + 1)) }
            _ = start
        }
        XCTAssertEqual(values.count, 150)
        XCTAssertEqual(values[49], 0.5, accuracy: 1e-5)
        XCTAssertEqual(values[99], 0, accuracy: 1e-5)
        XCTAssertEqual(g.current, 0)
        XCTAssertFalse(g.isRamping)
    }
}

final class EngineTests: XCTestCase {
    final class Counter: RenderNode {
        var output: AudioBus?
        var value: Float = 0
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }
        func render(frames: Int) {
            guard let output else { return }
            for i in 0..<frames { output.channel(0)[i] = value; value += 1 }
            output.state = BusState(validFrames: frames, ended: value >= 100)
        }
        func apply(_ change: ParameterChange) { value = Float(change.value) }
    }
    final class Sink: RenderNode {
        var seen: [Float] = []
        var input: AudioBus?
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { input = inputs.first }
        func render(frames: Int) { if let input { seen += (0..<frames).map { input.channel(0)[$0] } } }
    }

    func testScheduleRunsInOrderAndFinishesAtEndOfStream() throws {
        let sink = Sink()
        let engine = try Engine(steps: [.init(id: "c", node: Counter(), inputs: [], outputChannels: 1),
                                        .init(id: "s", node: sink, inputs: [0], outputChannels: nil)],
                                sampleRate: 48000, maxFrames: 32)
        let result = OfflineRenderer(engine: engine).run()
        XCTAssertEqual(result.ending, .endOfStream)
        XCTAssertEqual(sink.seen.prefix(100), ArraySlice((0..<100).map(Float.init)))
        XCTAssertEqual(engine.framePosition, 128, "whole blocks were rendered")
    }

    func testParameterChangesApplyAtTheNextBlock() throws {
        let sink = Sink()
        let engine = try Engine(steps: [.init(id: "c", node: Counter(), inputs: [], outputChannels: 1),
                                        .init(id: "s", node: sink, inputs: [0], outputChannels: nil)],
                                sampleRate: 48000, maxFrames: 4)
        engine.render(frames: 4)
        engine.post(ParameterChange(node: 0, parameter: 0, value: 50))
        engine.render(frames: 4)
        XCTAssertEqual(sink.seen, [0, 1, 2, 3, 50, 51, 52, 53])
    }

    func testRefusesInputsFromLaterStepsOrSinks() {
        XCTAssertThrowsError(try Engine(steps: [.init(id: "s", node: Sink(), inputs: [1], outputChannels: nil),
                                                .init(id: "c", node: Counter(), inputs: [], outputChannels: 1)],
                                        sampleRate: 48000, maxFrames: 4))
        XCTAssertThrowsError(try Engine(steps: [.init(id: "s", node: Sink(), inputs: [], outputChannels: nil),
                                                .init(id: "t", node: Sink(), inputs: [0], outputChannels: nil)],
                                        sampleRate: 48000, maxFrames: 4))
        XCTAssertThrowsError(try Engine(steps: [], sampleRate: 48000, maxFrames: 0))
    }

    func testBlocksLargerThanMaxFramesAreClamped() throws {
        let sink = Sink()
        let engine = try Engine(steps: [.init(id: "c", node: Counter(), inputs: [], outputChannels: 1),
                                        .init(id: "s", node: sink, inputs: [0], outputChannels: nil)],
                                sampleRate: 48000, maxFrames: 8)
        engine.render(frames: 1000)
        XCTAssertEqual(sink.seen.count, 8)
    }
}
