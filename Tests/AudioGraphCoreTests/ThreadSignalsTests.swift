import AudioGraphCore
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Signals stay on the main thread: threads started inside
/// `ThreadSignals.blockedInNewThreads` block SIGINT, SIGTERM and SIGHUP;
/// the caller's own mask is as it was.
final class ThreadSignalsTests: XCTestCase {
    /// What the started thread found blocked (a bit per signal), or -1.
    static let seen = Atomic<Int>(-1)

    static func bits(_ signals: [Int32]) -> Int { signals.reduce(0) { $0 | (1 << Int($1)) } }

    func testAThreadStartedInsideBlocksTheSignalsAndTheCallerKeepsItsMask() throws {
        let before = ThreadSignals.blockedHere
        var t = pthread_t()
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&t, nil, { _ in
                ThreadSignalsTests.seen.store(ThreadSignalsTests.bits(ThreadSignals.blockedHere), ordering: .releasing)
                return nil
            }, nil)
        }
        XCTAssertEqual(rc, 0)
        pthread_join(t, nil)
        XCTAssertEqual(Self.seen.load(ordering: .acquiring), Self.bits([SIGINT, SIGTERM, SIGHUP]))
        XCTAssertEqual(ThreadSignals.blockedHere, before, "the caller's mask is restored")

        // A thread started outside blocks what its creator blocks (here:
        // whatever the test runner's thread blocks, not necessarily all).
        Self.seen.store(-1, ordering: .relaxed)
        var u = pthread_t()
        XCTAssertEqual(pthread_create(&u, nil, { _ in
            ThreadSignalsTests.seen.store(ThreadSignalsTests.bits(ThreadSignals.blockedHere), ordering: .releasing)
            return nil
        }, nil), 0)
        pthread_join(u, nil)
        XCTAssertEqual(Self.seen.load(ordering: .acquiring), Self.bits(before))
    }
}
