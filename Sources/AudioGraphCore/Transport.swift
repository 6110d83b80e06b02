import Synchronization

// Following a transport (JACK's): which sources follow, how a source is
// moved to a transport frame and how the host learns it is there, and the
// seek requests a source's worker job carries out. The host side (reading
// the transport in the process callback, holding the followers while it
// stands still) lives in AudioGraphJACK; the engine only holds the
// following steps when told (`Engine.transportHeld`).

/// How a time-based source (`file`, `ac4`, `media`, `playlist`) relates to
/// a transport: its `transport` parameter, and the mode a host may impose
/// on every such source (`agraph run --transport`,
/// `RunningGraph.Options.transport`).
public enum TransportMode: String, Sendable, CaseIterable {
    /// Plays on its own from where it starts (the default).
    case free
    /// Follows the host's transport (JACK's): a locate moves it to the
    /// transport's frame, and it plays only while the transport rolls.
    case follow

    /// The words of the `transport` parameter, for node descriptors.
    public static let names = allCases.map(\.rawValue)

    /// The `transport` parameter's description, shared by the node types.
    public static let parameterHelp = "free (play on its own, the default) or follow (follow the JACK transport when run live: a locate moves it to the transport's frame, it plays only while the transport rolls; offline it plays as free)."
}

/// A source that can follow a transport. The host moves it to transport
/// frames (`locate`), waits until it is there (`isLocated`), and holds it
/// (not rendered: silence, its stream kept where it is) while the
/// transport does not roll.
///
/// Transport frame F plays what the source would play F frames after it
/// started: for a source with a `start`, `start` + F; wrapped into the
/// looped part when it loops and its length is known. Past the end, the
/// source plays silence (its stream has ended) until moved back.
public protocol TransportFollowing: AnyObject {
    /// The mode its `transport` parameter gives. [any-thread]
    var transportMode: TransportMode { get }
    /// Moves the source to where transport frame `frame` is: buffered
    /// audio is dropped and its reader restarts there. From its first
    /// locate on, the source keeps the transport's time through an
    /// underrun (`FeedRing.keepsTime`): audio that comes too late is
    /// dropped, not played late. [control-thread]
    func locate(toTransportFrame frame: Int)
    /// Whether the last `locate` has been carried out and at least
    /// `frames` frames from there are buffered (or the stream ends
    /// before). [control-thread]
    func isLocated(readyFor frames: Int) -> Bool
    /// A block while held, in place of `render`: silence on the output
    /// (running, not ended), nothing taken from the stream, but the audio
    /// a `locate` made stale dropped, so that the reader has room to
    /// refill. [audio-thread]
    func renderHeld(frames: Int)
}

extension TransportFollowing {
    /// `renderHeld` of a source fed from `feed` into `output`. [audio-thread]
    @inline(__always)
    public func renderHeld(feed: FeedRing?, output: AudioBus?, frames: Int) {
        ThreadRole.check(.audio)
        feed?.discardStale()
        guard let output else { return }
        output.clear(from: 0, to: frames)
        output.state = BusState(validFrames: frames, ended: false)
    }
}

/// Seek requests from control threads to one worker-thread job: the latest
/// frame asked wins, and the job says which request it has carried out, so
/// that a control thread can tell when the audio buffered is from the new
/// position (`isSettled`).
///
/// Threading: `request`, `isSettled`: [control-thread; may take a lock];
/// `take`, `done`: [worker-thread; atomics only].
public final class SeekRequests: @unchecked Sendable {
    /// The pending request: sequence number << 40 | frame, or -1.
    private let pending = Atomic<Int>(-1)
    /// The sequence number of the last request carried out.
    private let carriedOut = Atomic<Int>(0)
    /// The sequence number of the last request (under the lock, so that
    /// requests are stored in the order of their numbers).
    private let last = Locked<Int>(0)
    static let frameBits = 40
    static let frameMask = (1 << frameBits) - 1
    static let sequenceMask = (1 << (63 - frameBits)) - 1

    public init() {}

    /// Asks for a seek to `frame` (≥ 0; the job's own unit). [control-thread]
    public func request(_ frame: Int) {
        ThreadRole.check(.control)
        let f = min(max(frame, 0), Self.frameMask)
        last.withLock { seq in
            seq = (seq + 1) & Self.sequenceMask
            pending.store(seq << Self.frameBits | f, ordering: .releasing)
        }
    }

    /// Whether every request made so far has been carried out. [control-thread]
    public var isSettled: Bool {
        ThreadRole.check(.control)
        let seq = last.withLock { $0 }
        return pending.load(ordering: .acquiring) < 0 && carriedOut.load(ordering: .acquiring) == seq
    }

    /// Whether a request waits to be taken. [any-thread; atomics only]
    @inline(__always)
    public var hasPending: Bool { pending.load(ordering: .relaxed) >= 0 }

    /// The pending request, if any: its frame and the number to pass to
    /// `done` once it has been carried out. [worker-thread]
    @inline(__always)
    public func take() -> (frame: Int, sequence: Int)? {
        ThreadRole.check(.worker)
        let r = pending.exchange(-1, ordering: .acquiring)
        guard r >= 0 else { return nil }
        return (r & Self.frameMask, r >> Self.frameBits)
    }

    /// Request `sequence` has been carried out (the ring flushed, the
    /// reader moved). [worker-thread]
    @inline(__always)
    public func done(_ sequence: Int) { ThreadRole.check(.worker); carriedOut.store(sequence, ordering: .releasing) }
}

extension PlaybackWindow {
    /// The stream sample that transport frame `frame` plays: `start` +
    /// `frame`, wrapped into the window when it loops and its end is known.
    /// [any-thread]
    public func sample(forTransportFrame frame: Int) -> Int {
        let f = max(frame, 0)
        if loops, let end, end > start { return start + f % (end - start) }
        return start + f
    }
}
