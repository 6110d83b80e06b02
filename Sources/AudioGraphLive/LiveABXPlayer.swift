import AudioGraph
import AudioGraphJACK
import AudioGraphTools
#if canImport(Glibc)
import Glibc
#endif

/// Plays `agraph abx`'s trials on an `ab` node of a graph running in JACK:
/// sets its `select`; a switch to or from X goes through silence held for
/// the node's crossfade and three periods of rendered audio. [main-thread]
public final class LiveABXPlayer: ABXPlayer {
    public let live: RunningGraph
    public let node: String

    public init(live: RunningGraph, node: String) {
        self.live = live
        self.node = node
    }

    public func select(_ input: Int) throws {
        try live.control.set("\(node).select", Double(input))
    }

    public func selectThroughSilence(_ input: Int) throws {
        // Hold the silence for the fade and two periods of *rendered* audio:
        // the engine's frame count, not the wall clock, which a loaded
        // machine (or a non-realtime server) stretches away from it.
        let before = live.status().frames
        try select(-1)
        let fadeMs = (try? live.control.get("\(node).crossfadeMs").value) ?? 50
        let period = max(live.status().bufferSize, 256)
        // The change applies at the start of the next cycle: one more period.
        let until = before + Int(fadeMs / 1000 * live.graph.sampleRate) + 3 * period
        let deadline = MonotonicClock.seconds() + 5 + fadeMs / 1000
        while live.status().frames < until && MonotonicClock.seconds() < deadline {
            usleep(2_000)
        }
        try select(input)
    }
}
