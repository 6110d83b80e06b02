import AudioGraphHost
import CJack
import Synchronization

// Following JACK's transport (sources with `transport: "follow"`, or all
// of them with `RunningGraph.Options.transport`).
//
// Two sides, one role each:
// - `JACKTransport`, on JACK's process thread: reads the transport with
//   `jack_transport_query` at the start of each cycle and decides whether
//   the following sources play this cycle (`Engine.transportHeld`). They
//   play only while the transport rolls and they are where it is. When
//   they are not (a locate, a start from elsewhere), it asks for a locate
//   by storing one atomic word and posting a semaphore; it never waits.
//   As a slow-sync client (`jack_set_sync_callback`) it keeps a starting
//   transport from rolling until the sources are at its frame, so that
//   they play from exactly there.
// - `TransportDriver`, on a thread of its own: carries out those requests
//   (each follower's `locate`, which its worker job serves), watches until
//   every follower has refilled at the new position, and answers with one
//   atomic word.
//
// Why a slow-sync client: a locate needs a file seek and a refill, work
// for the worker thread, some milliseconds. JACK's slow-sync protocol is
// made for that: a transport that starts (or is located while rolling)
// waits in `JackTransportStarting` until every slow-sync client says it is
// ready (or the server's sync timeout, 2 s by default, expires). A locate
// while stopped is seen in the process callback (JACK2 calls no sync
// callback then) and carried out before anyone presses play.
//
// When the transport rolls and the sources are not where it is (the sync
// timeout expired, the graph was paused, or the transport already rolled
// when the graph started), the sources are held and located a little
// ahead of the transport, at a whole number of periods (0.2 s or more),
// and resume exactly when the transport reaches that frame: late, but
// sample-aligned.

/// The audio-thread side of following JACK's transport.
///
/// Threading: `observe`, `advance`, `sync`: [audio-thread] (JACK calls the
/// sync callback on the process thread, just before the process
/// callback); `request`: the audio thread writes, the driver reads;
/// `answer`: the driver writes, the audio thread reads; `state`, `frame`,
/// `located`: the audio thread writes, [any-thread] reads.
final class JACKTransport: @unchecked Sendable {
    let sampleRate: Double
    /// Posted when a locate is asked for; the driver thread waits on it.
    let wakeup: Wakeup
    /// The transport state of the last cycle (`jack_transport_state_t`,
    /// -1 before the first).
    let state = Atomic<Int>(-1)
    /// The transport frame at the start of the last cycle.
    let frame = Atomic<Int>(0)
    /// Whether the followers were at the transport's frame in the last cycle.
    let located = Atomic<Bool>(true)
    /// The last locate asked for: sequence number << 32 | transport frame.
    let request = Atomic<UInt64>(0)
    /// The last locate carried out (the followers are there, refilled),
    /// packed as `request`.
    let answer = Atomic<UInt64>(0)

    // [audio-thread]
    /// The sequence number of the last request.
    private var sequence: UInt32 = 0
    /// The frame of the last request.
    private var wanted: UInt32 = 0
    /// Whether the last request has been carried out: the followers are at
    /// `position`.
    private var primed = true
    /// The transport frame the followers play next (when `primed`). The
    /// sources start where transport frame 0 is.
    private var position: UInt32 = 0
    private var lastState = JackTransportStopped
    private var lastFrame: UInt32 = 0
    /// Where `jack_transport_query` writes (allocated once).
    private let query: UnsafeMutablePointer<jack_position_t>

    /// [owner-thread]
    init(sampleRate: Double) {
        self.sampleRate = sampleRate
        wakeup = Wakeup()
        query = .allocate(capacity: 1)
        query.initialize(to: jack_position_t())
    }

    deinit { query.deallocate() }

    /// Reads the transport for this cycle and publishes it. [audio-thread]
    @inline(__always)
    func observe(_ client: OpaquePointer) {
        lastState = jack_transport_query(client, query)
        lastFrame = query.pointee.frame
        state.store(Int(lastState.rawValue), ordering: .relaxed)
        frame.store(Int(lastFrame), ordering: .relaxed)
    }

    /// Whether the followers play this cycle of `n` frames (they are where
    /// the rolling transport is); asks for a locate when they are not and
    /// none that would bring them there is under way. [audio-thread; after `observe`, in a cycle
    /// that renders]
    @inline(__always)
    func advance(frames n: UInt32) -> Bool {
        absorbAnswer()
        let f = lastFrame
        var plays = false
        if lastState == JackTransportRolling {
            if primed && f == position {
                position &+= n
                plays = true
            } else if !headingTo(f, period: n) {
                ask(f &+ lead(period: n))
            }
        } else if !(primed && position == f) && !(!primed && wanted == f) {
            // Stopped or starting: be where it will start from.
            ask(f)
        }
        located.store(plays || (primed && position == f), ordering: .relaxed)
        return plays
    }

    /// A cycle in which the graph does not render (paused, or a period
    /// larger than it was prepared for): the followers stay where they are,
    /// located only if the transport is there too. [audio-thread; after `observe`]
    @inline(__always)
    func standStill() {
        absorbAnswer()
        located.store(primed && position == lastFrame, ordering: .relaxed)
    }

    /// The followers changed (a reload brought a new one, which starts at
    /// its beginning): locates them all again, as a locate would.
    /// [audio-thread; at a reload's swap]
    func followersChanged() { ask(lastFrame) }

    /// The slow-sync answer: ready when the followers are at the frame the
    /// transport starts from. [audio-thread; JACK's sync callback]
    @inline(__always)
    func sync(state s: jack_transport_state_t, frame f: UInt32) -> Bool {
        absorbAnswer()
        // Rolling: the sync timeout expired; `advance` catches up.
        if s == JackTransportRolling { return true }
        if primed && position == f { return true }
        if primed || wanted != f { ask(f) }
        return false
    }

    /// Whether the followers are (or are being) located at a frame the
    /// rolling transport reaches at the start of a coming cycle, soon.
    @inline(__always)
    private func headingTo(_ f: UInt32, period n: UInt32) -> Bool {
        let target = primed ? position : wanted
        let ahead = target &- f
        return n > 0 && ahead > 0 && ahead % n == 0 && ahead <= 4 &* lead(period: n)
    }

    /// How far ahead of a rolling transport to locate: 0.2 s, rounded up
    /// to whole periods (the transport moves a period per cycle).
    @inline(__always)
    private func lead(period n: UInt32) -> UInt32 {
        guard n > 0 else { return 0 }
        let want = UInt32(min(max(sampleRate * 0.2, 1), 1e9))
        return (want / n + 1) &* n
    }

    @inline(__always)
    private func ask(_ f: UInt32) {
        sequence &+= 1
        wanted = f
        primed = false
        request.store(UInt64(sequence) << 32 | UInt64(f), ordering: .releasing)
        wakeup.signal()
    }

    @inline(__always)
    private func absorbAnswer() {
        guard !primed else { return }
        let a = answer.load(ordering: .acquiring)
        if UInt32(truncatingIfNeeded: a >> 32) == sequence {
            primed = true
            position = UInt32(truncatingIfNeeded: a)
        }
    }

    /// The state as `status` shows it. [any-thread]
    var reading: TransportReading.State {
        switch state.load(ordering: .relaxed) {
        case Int(JackTransportRolling.rawValue): .rolling
        case Int(JackTransportStarting.rawValue), Int(JackTransportNetStarting.rawValue): .starting
        default: .stopped
        }
    }
}

/// [audio-thread] JACK's sync callback of a slow-sync client.
let transportSyncCallback: JackSyncCallback = { state, position, arg in
    guard let arg, let position else { return 1 }
    let t = Unmanaged<JACKTransport>.fromOpaque(arg).takeUnretainedValue()
    return t.sync(state: state, frame: position.pointee.frame) ? 1 : 0
}

/// Carries out the locates the audio thread asks for: moves every follower
/// (`TransportFollowing.locate`), wakes the worker, and answers once each
/// has refilled at the new position.
///
/// Threading: `tick`: [any-thread; the driver's thread] (an `OwnerThread` of its own:
/// JACK's client stays with the session's owner thread; the driver makes
/// no JACK call).
final class TransportDriver: @unchecked Sendable {
    let transport: JACKTransport
    /// The followers and the worker that serves them; a reload replaces
    /// both. [any-thread; the owner thread writes, the driver's thread reads]
    private let state: Locked<(followers: [any TransportFollowing], worker: BackgroundWorker)>
    /// Frames a follower must hold before it counts as located.
    let readyFrames: () -> Int
    /// The last request moved to.
    private var handled: UInt64 = 0
    /// The request moved to and not yet answered.
    private var awaiting: UInt64?

    init(transport: JACKTransport, followers: [any TransportFollowing], worker: BackgroundWorker,
         readyFrames: @escaping () -> Int) {
        self.transport = transport
        state = Locked((followers, worker))
        self.readyFrames = readyFrames
    }

    /// A reload's followers and worker. [owner-thread]
    func update(followers: [any TransportFollowing], worker: BackgroundWorker) {
        state.withLock { $0 = (followers, worker) }
    }

    /// Moves the followers for a new request; answers when they are there.
    /// Returns whether it is waiting for them (tick again soon).
    func tick() -> Bool {
        let (followers, worker) = state.withLock { ($0.followers, $0.worker) }
        let r = transport.request.load(ordering: .acquiring)
        if r != handled {
            handled = r
            let frame = Int(UInt32(truncatingIfNeeded: r))
            for f in followers { f.locate(toTransportFrame: frame) }
            worker.wake()
            awaiting = r
        }
        guard let a = awaiting else { return false }
        let frames = readyFrames()
        guard followers.allSatisfy({ $0.isLocated(readyFor: frames) }) else { return true }
        // A newer request may have come meanwhile: the audio thread only
        // takes the answer to its last one.
        transport.answer.store(a, ordering: .releasing)
        awaiting = nil
        return false
    }
}
