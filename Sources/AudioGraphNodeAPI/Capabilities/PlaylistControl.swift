// What a playlist takes and tells, as values: its items, the commands that
// edit it while it plays (`playlist NODE add|insert|remove|move|next|clear|
// list` at `agraph run`'s prompt, the same through the control surface),
// and the events at item boundaries.

/// One item of a playlist: a media file and the part of it that plays.
public struct PlaylistItem: Sendable, Equatable {
    /// The file, absolute.
    public var path: String
    /// Where it starts playing, in seconds of the file.
    public var start: Double
    /// Where it stops, in seconds of the file (nil: its end).
    public var end: Double?
    /// Gain in dB.
    public var gain: Double

    public init(path: String, start: Double = 0, end: Double? = nil, gain: Double = 0) {
        self.path = path
        self.start = start
        self.end = end
        self.gain = gain
    }

    /// The file's name, for messages.
    public var name: String { path.split(separator: "/").last.map(String.init) ?? path }
}

/// A command for a playlist while it plays. Indexes count from 0 in the
/// list as it is when the command arrives.
public enum PlaylistCommand: Sendable, Equatable {
    /// Append an item.
    case add(PlaylistItem)
    /// Put an item at `index` (0…count; count appends).
    case insert(PlaylistItem, at: Int)
    /// Take out the item at `index` (what plays of it plays on; `next` skips it).
    case remove(at: Int)
    /// Move the item at `from` to `to` (its index afterwards).
    case move(from: Int, to: Int)
    /// Skip what is playing now: the next item starts at once.
    case next
    /// Take out every item (what plays now plays to its end).
    case clear
    /// Show the list and which item is playing.
    case list
}

/// Why a playlist command was refused, in words for the user.
public struct PlaylistError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Something that happened at an item boundary, in the order the audio
/// reaches it: an event is published when the playlist's output has played
/// up to the point where it happened, not when the worker read ahead to it.
public struct PlaylistEvent: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The item's first sample plays.
        case started
        /// The item played to its end (or to its `end`).
        case ended
        /// `next` cut the item short.
        case skipped
        /// The item could not be played (a missing or damaged file, a
        /// stream the decoder refused); playback goes on with the next.
        case failed(reason: String)
    }

    /// The playlist node.
    public var node: String
    /// Counts the node's events from 1.
    public var sequence: Int
    public var kind: Kind
    /// The item's index in the list when it started (or failed).
    public var item: Int
    public var path: String

    public init(node: String, sequence: Int, kind: Kind, item: Int, path: String) {
        self.node = node
        self.sequence = sequence
        self.kind = kind
        self.item = item
        self.path = path
    }

    /// One line: `pl: item 2 started: /music/b.flac`,
    /// `pl: item 3 failed: cannot read /music/c.flac: no such file or directory`.
    public var description: String {
        switch kind {
        case .started: "\(node): item \(item) started: \(path)"
        case .ended: "\(node): item \(item) ended: \(path)"
        case .skipped: "\(node): item \(item) skipped: \(path)"
        case .failed(let reason): "\(node): item \(item) failed: " + (reason.contains(path) ? reason : "\(path): \(reason)")
        }
    }
}

/// The list as it stands, for `list`.
public struct PlaylistSnapshot: Sendable, Equatable, CustomStringConvertible {
    public var node: String
    public var items: [PlaylistItem]
    /// The index of the item being heard, when it is still in the list.
    public var playing: Int?
    /// The index of the item that starts next (== count: none, or the
    /// first again when looping).
    public var next: Int
    /// The playlist has played to its end.
    public var ended: Bool

    public init(node: String, items: [PlaylistItem], playing: Int?, next: Int, ended: Bool) {
        self.node = node
        self.items = items
        self.playing = playing
        self.next = next
        self.ended = ended
    }

    /// One line per item, the playing one marked `>`, the next one `+`.
    public var description: String {
        if items.isEmpty { return "\(node): no items" + (ended ? " (ended)" : "") }
        return items.enumerated().map { i, item in
            let mark = i == playing ? ">" : (i == next ? "+" : " ")
            var facts: [String] = []
            if item.start > 0 { facts.append("from \(seconds(item.start)) s") }
            if let end = item.end { facts.append("to \(seconds(end)) s") }
            if item.gain != 0 { facts.append("\(seconds(item.gain)) dB") }
            return "\(mark) \(i) \(item.path)" + (facts.isEmpty ? "" : " (" + facts.joined(separator: ", ") + ")")
        }.joined(separator: "\n") + (ended ? "\n\(node): ended" : "")
    }

    private func seconds(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}

/// A node that plays a list of items and takes `PlaylistCommand`s.
/// [control-thread]
public protocol PlaylistControlling: AnyObject {
    var nodeID: String { get }
    /// Runs a command; returns what it did, in words.
    func perform(_ command: PlaylistCommand) throws(PlaylistError) -> String
    /// The node's events with a sequence number above `sequence` (the most
    /// recent few hundred are kept), oldest first.
    func events(after sequence: Int) -> [PlaylistEvent]
    /// The list now.
    var snapshot: PlaylistSnapshot { get }
}

/// Which playlist events a reader has seen: each reader (the console, the
/// live graph's event stream, a test) keeps its own. [any-thread; its owner's thread]
public struct PlaylistEventCursor: Sendable {
    /// The last sequence number seen, by playlist node.
    public var seen: [String: Int] = [:]
    public init() {}

    /// The events of `playlists` not seen yet, each node's in order, nodes
    /// in the order given; marks them seen.
    public mutating func take(from playlists: [any PlaylistControlling]) -> [PlaylistEvent] {
        var out: [PlaylistEvent] = []
        for p in playlists {
            let new = p.events(after: seen[p.nodeID] ?? 0)
            if let last = new.last { seen[p.nodeID] = last.sequence }
            out += new
        }
        return out
    }
}
