import AudioGraph
import Foundation
import Synchronization
import XCTest

/// The offline driver waits before each block until every background job
/// is ready; a job that never gets ready (issue 22: a looping playlist of
/// items with no frame spun in its worker) must not make that wait deaf to
/// `shouldStop` (SIGINT, SIGTERM in `agraph render`).
final class OfflineWaitTests: XCTestCase {
    /// A job that works without end and is never ready.
    final class NeverReady: BackgroundJob, @unchecked Sendable {
        let services = Atomic<Int>(0)
        func service() -> Bool { services.add(1, ordering: .relaxed); return true }
        func isReady(forFrames frames: Int) -> Bool { false }
        func finish() throws {}
    }

    /// A source whose background job is `NeverReady`.
    final class Waiting: RenderNode {
        let job = NeverReady()
        var output: AudioBus?
        func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }
        func render(frames: Int) { output?.state = BusState(validFrames: frames, ended: false) }
        var backgroundJob: (any BackgroundJob)? { job }
    }

    func testAStopDuringTheWaitForAJobThatNeverGetsReadyEndsTheRender() throws {
        let node = Waiting()
        let engine = try Engine(steps: [.init(id: "w", node: node, inputs: [], outputChannels: 1)],
                                sampleRate: 48000, maxFrames: 64)
        let done = Atomic<Bool>(false)
        let result = Mutex<OfflineRenderer.Result?>(nil)
        let started = Date()
        let thread = Thread {
            let r = OfflineRenderer(engine: engine).run(
                maxFrames: 48_000, shouldStop: { Date().timeIntervalSince(started) > 0.3 })
            result.withLock { $0 = r }
            done.store(true, ordering: .releasing)
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while !done.load(ordering: .acquiring) && Date() < deadline { usleep(10_000) }
        XCTAssertTrue(done.load(ordering: .acquiring), "the render still waited for the job 10 s after shouldStop said stop")
        guard let r = result.withLock({ $0 }) else { return }
        XCTAssertEqual(r.ending, .interrupted)
        XCTAssertEqual(r.frames, 0, "no block was rendered from a job that was never ready")
        XCTAssertGreaterThan(node.job.services.load(ordering: .relaxed), 0, "the worker ran the job while the driver waited")
    }

    func testTheWaitWithAStopConditionReturnsWhetherTheJobsAreReady() {
        let worker = BackgroundWorker(jobs: [NeverReady()])
        worker.start()
        defer { worker.stop() }
        let started = Date()
        XCTAssertFalse(worker.waitUntilReady(frames: 64, unless: { Date().timeIntervalSince(started) > 0.1 }))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }
}
