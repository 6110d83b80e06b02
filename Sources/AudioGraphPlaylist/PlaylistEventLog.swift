import AudioGraphCore
import AudioGraphNodeAPI

/// A playlist's events, from where the worker marks them to where control
/// threads read them. The worker reads ahead of the audio: it marks each
/// boundary at its place in the ring (the ring's write position), and a
/// mark becomes an event once the audio thread has read up to it. Nothing
/// here is touched by the audio thread.
///
/// Threading: every member: [main-thread | worker-thread | owner-thread | control-thread] (a lock).
final class PlaylistEventLog: @unchecked Sendable {
    /// A boundary the worker reached, at a position in the ring (samples).
    struct Mark: Sendable {
        var position: Int
        var kind: PlaylistEvent.Kind
        /// The queue entry's identity, its index when it started, its path.
        var id: Int
        var index: Int
        var path: String
    }

    private struct State {
        var pending: [Mark] = []
        var log: [PlaylistEvent] = []
        var sequence = 0
        /// The item being heard: its start was reached, its end not yet.
        var heard: Mark?
    }

    /// Events kept for readers that fall behind.
    static let kept = 512
    let node: String
    private let state = Locked(State())

    init(node: String) { self.node = node }

    /// The worker reached a boundary at ring position `position`. [worker-thread]
    func mark(_ kind: PlaylistEvent.Kind, id: Int, index: Int, path: String, at position: Int) {
        state.withLock { $0.pending.append(Mark(position: position, kind: kind, id: id, index: index, path: path)) }
    }

    /// The node's events above `sequence`, once the audio has read up to
    /// `readPosition` (`Int.max`: the stream has played to its end).
    func events(after sequence: Int, readPosition: Int) -> [PlaylistEvent] {
        state.withLock { s in
            Self.collect(&s, node: node, upTo: readPosition)
            return s.log.filter { $0.sequence > sequence }
        }
    }

    /// The item being heard once the audio has read up to `readPosition`.
    func heard(readPosition: Int) -> Mark? {
        state.withLock { s in
            Self.collect(&s, node: node, upTo: readPosition)
            return s.heard
        }
    }

    /// The ring is being flushed (`next`): what the audio reached by
    /// `readPosition` becomes events, the marks beyond it are dropped (their
    /// audio is never played). Returns the item being heard and the first
    /// item the worker started beyond it. [worker-thread]
    func cut(at readPosition: Int) -> (heard: Mark?, firstUnheard: Mark?) {
        state.withLock { s in
            Self.collect(&s, node: node, upTo: readPosition)
            let unheard = s.pending.first { $0.kind == .started }
            s.pending = []
            return (s.heard, unheard)
        }
    }

    /// Moves the marks the audio has reached into the log.
    private static func collect(_ s: inout State, node: String, upTo readPosition: Int) {
        var reached = 0
        for m in s.pending {
            // A start is heard once its first sample is read, anything
            // else once the audio before it is.
            guard m.position < readPosition || (m.position == readPosition && m.kind != .started) else { break }
            reached += 1
            s.sequence += 1
            s.log.append(PlaylistEvent(node: node, sequence: s.sequence, kind: m.kind, item: m.index, path: m.path))
            if m.kind == .started {
                s.heard = m
            } else if s.heard?.id == m.id {
                s.heard = nil
            }
        }
        guard reached > 0 else { return }
        s.pending.removeFirst(reached)
        if s.log.count > kept { s.log.removeFirst(s.log.count - kept) }
    }
}
