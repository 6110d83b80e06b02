import AudioGraphCore
import Foundation
import Synchronization
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The debug check of thread tags (docs/threads.md): a `[main-thread]`
/// entry point called from a thread marked audio trips it, naming the
/// function; from the main thread it does not; the default handler traps.
final class ThreadRoleCheckTests: XCTestCase {
    /// What the test handler saw.
    private static let seen = Mutex<[ThreadRoleViolation]>([])

    override func setUp() {
        Self.seen.withLock { $0.removeAll() }
        ThreadRole.violationHandler = { v in Self.seen.withLock { $0.append(v) } }
    }

    override func tearDown() {
        ThreadRole.violationHandler = nil
    }

    /// Runs `body` on a new thread marked `role` (nil: unmarked) and waits.
    private func onThread(_ role: ThreadRole?, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            ThreadRole.mark(role)
            body()
            ThreadRole.mark(nil)
            done.signal()
        }
        thread.start()
        done.wait()
    }

    private func violations() -> [ThreadRoleViolation] { Self.seen.withLock { $0 } }

    func testAMainThreadEntryPointCalledFromTheAudioThreadTripsTheCheck() throws {
        #if !DEBUG
        throw XCTSkip("the checks exist in debug builds only")
        #else
        // `BackgroundWorker.start` is [main-thread]: the engine starts its worker.
        let worker = BackgroundWorker(jobs: [])
        onThread(.audio) { worker.start() }
        let v = violations()
        XCTAssertEqual(v.count, 1, "one violation: \(v)")
        let first = try XCTUnwrap(v.first)
        XCTAssertEqual("\(first.function)", "start()")
        XCTAssertEqual("\(first.file)", "AudioGraphCore/BackgroundWorker.swift")
        XCTAssertEqual(first.expected, ThreadRoles(.main))
        XCTAssertEqual(first.actual, .audio)
        XCTAssertTrue(first.description.contains("start()") && first.description.contains("[main-thread]")
                      && first.description.contains("audio-thread"), first.description)
        #endif
    }

    func testTheSameCallFromTheMainThreadPasses() {
        XCTAssertNil(ThreadRole.marked, "the test thread never marked itself")
        let worker = BackgroundWorker(jobs: [])
        worker.start()
        onThread(nil) { worker.start() }
        XCTAssertEqual(violations().count, 0)
    }

    func testTheCompatibilityRule() throws {
        #if !DEBUG
        throw XCTSkip("the checks exist in debug builds only")
        #else
        // An owner thread does main-thread work in a live session, and sends commands.
        onThread(.owner) { ThreadRole.check(.main) }
        onThread(.owner) { ThreadRole.check(.control) }
        // A worker may call a [main-thread | worker-thread] function, not an [audio-thread] one.
        onThread(.worker) { ThreadRole.check(.main, .worker) }
        XCTAssertEqual(violations().count, 0)
        onThread(.worker) { ThreadRole.check(.audio) }
        // A control thread asks the owner thread: it may not call [main-thread] itself.
        onThread(.control) { ThreadRole.check(.main) }
        // An audio thread may not call an [owner-thread] function, nor a main one through three roles.
        onThread(.audio) { ThreadRole.check(.owner) }
        onThread(.audio) { ThreadRole.check(.main, .worker, .control) }
        let v = violations()
        XCTAssertEqual(v.map(\.actual), [.worker, .control, .audio, .audio])
        XCTAssertEqual(v.map { "\($0.expected)" },
                       ["audio-thread", "main-thread", "owner-thread", "main-thread | worker-thread | control-thread"])
        XCTAssertEqual(v.map(\.line), v.map(\.line).sorted(), "each names its own call's line")
        #endif
    }

    /// The check runs on the audio thread in debug builds: it allocates
    /// nothing, passing or not reaching the handler.
    func testTheCheckAllocatesNothing() throws {
        guard MallocCounter.isAvailable else { throw XCTSkip("allocation counting is off in this build") }
        let counted = Mutex<Int>(-1)
        onThread(.audio) {
            let n = MallocCounter.count {
                for _ in 0..<10_000 {
                    ThreadRole.check(.audio)
                    ThreadRole.check(.audio, .worker)
                    ThreadRole.check(.main, .audio, .worker)
                }
            }
            counted.withLock { $0 = n }
        }
        XCTAssertEqual(counted.withLock { $0 }, 0)
        XCTAssertEqual(violations().count, 0)
    }

    /// With no handler set, a violation traps, with a message on stderr
    /// naming the function, its tag and the caller's role. The trap is shown
    /// in a child: this test's own executable, run again for this test only,
    /// with `AGRAPH_TEST_THREAD_ROLE_TRAP` set.
    func testTheDefaultHandlerTraps() throws {
        #if !DEBUG
        throw XCTSkip("the checks exist in debug builds only")
        #else
        if getenv("AGRAPH_TEST_THREAD_ROLE_TRAP") != nil {
            ThreadRole.violationHandler = nil
            let worker = BackgroundWorker(jobs: [])
            onThread(.audio) { worker.start() }
            XCTFail("the check did not trap")
            return
        }
        let executable = try XCTUnwrap(Bundle.main.executablePath ?? CommandLine.arguments.first)
        let dir = try TemporaryDirectory()
        let errPath = dir.file("stderr.txt")
        let child = try ChildProcess([executable, "AudioGraphCoreTests.ThreadRoleCheckTests/testTheDefaultHandlerTraps"],
                                     environment: ["AGRAPH_TEST_THREAD_ROLE_TRAP": "1", "SWIFT_BACKTRACE": "enable=no",
                                                   "AGRAPH_THREAD_CHECKS": "trap"],
                                     stdout: .null, stderr: .file(errPath))
        XCTAssertTrue(child.waitUntilExit(timeout: 120), "the child ended")
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        XCTAssertTrue([SIGILL, SIGTRAP].contains(child.terminationStatus),
                      "the child died of a trap, not status \(child.terminationStatus):\n\(stderr.suffix(2000))")
        XCTAssertTrue(stderr.contains("thread role violation: start() (AudioGraphCore/BackgroundWorker.swift:"),
                      String(stderr.suffix(2000)))
        XCTAssertTrue(stderr.contains("is [main-thread], called on a thread marked audio-thread"), String(stderr.suffix(2000)))
        #endif
    }
}
