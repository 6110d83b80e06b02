import AudioGraphCore
import AudioGraphJACK
import AudioGraphSndFile
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the tests set through the environment to make `agraph run` meet
/// conditions a test cannot otherwise bring about on demand. Nothing here
/// changes what is rendered.
enum TestHooks {
    /// `AGRAPH_TEST_HOLD_WRITERS=SECONDS` (0 < SECONDS ≤ 60): every
    /// `file-out`'s writer is held back for SECONDS after the graph starts
    /// (`FileSinkNode.holdWriter`), as a slow disk would hold it: its ring
    /// fills and the frames after that are dropped, and must be reported.
    /// [main-thread]
    static func holdWriters(of live: RunningGraph) {
        guard let raw = getenv("AGRAPH_TEST_HOLD_WRITERS"), let seconds = Double(String(cString: raw)),
              seconds > 0, seconds <= 60 else { return }
        @Sendable func sinks() -> [FileSinkNode] {
            let engine = live.engine
            return engine.ids.compactMap { engine.node($0) as? FileSinkNode }
        }
        for s in sinks() { s.holdWriter(true) }
        // Its thread blocks SIGINT, SIGTERM and SIGHUP: they stay the main thread's.
        ThreadSignals.blockedInNewThreads {
            Thread.detachNewThread {
                usleep(UInt32(seconds * 1e6))
                for s in sinks() { s.holdWriter(false) }
            }
        }
    }
}
