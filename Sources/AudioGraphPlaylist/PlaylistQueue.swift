import AudioGraphCore
import AudioGraphNodeAPI

/// A playlist's list and its place in it, shared by the control threads
/// that edit it and the worker that takes the next item from it at each
/// boundary. Edits change the list at once; the item playing plays on, and
/// the list only decides what starts next.
///
/// Threading: every member: [main-thread | worker-thread | owner-thread | control-thread] (a lock).
final class PlaylistQueue: @unchecked Sendable {
    /// An item with the identity it keeps through edits.
    struct Entry: Sendable {
        var id: Int
        var item: PlaylistItem
    }

    struct State {
        var entries: [Entry]
        /// The index of the item that starts next.
        var next = 0
        var lastID = 0
        /// The entry the worker decodes now (nil between items).
        var current: Int?
        /// The playlist has played to its end: edits have no effect.
        var ended = false
    }

    private let state: Locked<State>

    init(_ items: [PlaylistItem]) {
        var s = State(entries: [])
        for item in items {
            s.lastID += 1
            s.entries.append(Entry(id: s.lastID, item: item))
        }
        state = Locked(s)
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// The list, and which entry starts next. [control-thread]
    var contents: (entries: [Entry], next: Int, ended: Bool) {
        state.withLock { ($0.entries, $0.next, $0.ended) }
    }

    /// Applies an edit (`add`, `insert`, `remove`, `move`, `clear`); the
    /// item being decoded, moved, is followed by the one after its new
    /// place. Returns what it did, in words. [control-thread]
    func edit(_ command: PlaylistCommand) throws(PlaylistError) -> String {
        try state.withLock { (s: inout State) throws(PlaylistError) -> String in
            guard !s.ended else { throw PlaylistError("the playlist has played to its end") }
            func check(_ index: Int, _ what: String, upTo limit: Int) throws(PlaylistError) {
                guard index >= 0, index <= limit else {
                    throw PlaylistError(s.entries.isEmpty && limit < 0
                        ? "\(what) \(index): the playlist is empty"
                        : "\(what) \(index): the playlist has \(s.entries.count) item\(s.entries.count == 1 ? "" : "s") (indexes 0…\(limit))")
                }
            }
            switch command {
            case .add(let item):
                s.lastID += 1
                s.entries.append(Entry(id: s.lastID, item: item))
                return "added item \(s.entries.count - 1): \(item.path)"
            case .insert(let item, let index):
                try check(index, "insert at", upTo: s.entries.count)
                s.lastID += 1
                Self.insert(Entry(id: s.lastID, item: item), at: index, into: &s)
                return "inserted item \(index): \(item.path)"
            case .remove(let index):
                try check(index, "remove", upTo: s.entries.count - 1)
                let gone = Self.remove(at: index, from: &s)
                return "removed item \(index): \(gone.item.path)"
            case .move(let from, let to):
                try check(from, "move", upTo: s.entries.count - 1)
                try check(to, "move to", upTo: s.entries.count - 1)
                let entry = Self.remove(at: from, from: &s)
                Self.insert(entry, at: to, into: &s)
                if entry.id == s.current { s.next = to + 1 }
                return "moved item \(from) to \(to): \(entry.item.path)"
            case .clear:
                let n = s.entries.count
                s.entries = []
                s.next = 0
                return "cleared \(n) item\(n == 1 ? "" : "s")"
            case .next, .list:
                throw PlaylistError("not an edit of the list")
            }
        }
    }

    /// Inserting before the next item keeps it next.
    private static func insert(_ entry: Entry, at index: Int, into s: inout State) {
        s.entries.insert(entry, at: index)
        if index < s.next { s.next += 1 }
    }

    /// Removing before the next item keeps it next.
    private static func remove(at index: Int, from s: inout State) -> Entry {
        if index < s.next { s.next -= 1 }
        return s.entries.remove(at: index)
    }

    /// The item that starts now, with its index; the one after it is next.
    /// After the last: the first again when `loop`, else nil (the end).
    /// [worker-thread]
    func takeNext(loop: Bool) -> (entry: Entry, index: Int)? {
        state.withLock { s in
            if s.next >= s.entries.count, loop { s.next = 0 }
            guard s.next < s.entries.count else { return nil }
            let index = s.next
            s.next += 1
            s.current = s.entries[index].id
            return (s.entries[index], index)
        }
    }

    /// The item being decoded ended (or failed). [worker-thread]
    func finishCurrent() { state.withLock { $0.current = nil } }

    /// Makes `id` start next again (a `next` while the worker had read
    /// ahead into it): it follows the item that was skipped. [worker-thread]
    func replay(_ id: Int) {
        state.withLock { s in
            if let i = s.entries.firstIndex(where: { $0.id == id }) { s.next = i }
        }
    }

    /// No more items will start. [worker-thread]
    func markEnded() { state.withLock { $0.ended = true } }

    /// Makes the item at `index` start next, the playlist not ended (a
    /// transport locate). [worker-thread]
    func restart(at index: Int) {
        state.withLock { s in
            s.next = index
            s.current = nil
            s.ended = false
        }
    }

    /// The index of entry `id`, if it is still in the list. [any-thread]
    func index(of id: Int) -> Int? {
        state.withLock { $0.entries.firstIndex { $0.id == id } }
    }
}
