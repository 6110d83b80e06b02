import CJack
import Synchronization

/// One JACK client's side of the process cycle: its handle, its ports by
/// slot (where the cycle fetches its buffers) and its part in a handover.
///
/// A session has one. An NSM rename opens the new client beside the old
/// one (make before break) and hands the cycle over between two cycles, so
/// for a moment there are two, and JACK may run their callbacks at the same
/// time on two cores. Exactly one of them renders each cycle: the outgoing
/// client, in a cycle after the owner asked it to (`handOver(to:)`),
/// renders that cycle, then sets the frame where the next cycle starts as
/// its own end and the incoming client's start. The incoming client is
/// silent until a cycle starts at that frame; the outgoing one is silent
/// from then on. Both read the frame from the same cycle
/// (`jack_last_frame_time`), and the frame is written in a cycle before
/// the one it names, so no cycle is rendered twice or not at all.
///
/// Threading: `init`, `handOver(to:)`, `renderEveryCycle()`,
/// `hasTakenOver`: [owner-thread]; `isHandingOver`, `renders`, `rendered`:
/// [audio-thread; of this side's client]; `ports` and `portCount`: the
/// owner thread before the client is active, then that audio thread.
final class ClientSide: @unchecked Sendable {
    let handle: OpaquePointer
    /// The cycle, for the callbacks (unretained; `cycle` keeps it).
    let cycleRef: Unmanaged<ProcessCycle>
    private let cycle: ProcessCycle
    /// Registered ports by slot; nil for a slot a reload gave up.
    let ports: UnsafeMutablePointer<OpaquePointer?>
    @exclusivity(unchecked) var portCount: Int

    /// `startsAt`: renders every cycle (no handover involves this client).
    static let always = -2
    /// `startsAt`: renders nothing yet (the outgoing client has the cycle).
    static let notYet = -1
    /// `always`, `notYet`, or the frame (a `jack_nframes_t`) of the first
    /// cycle this client renders.
    private let startsAt: Atomic<Int>
    /// The incoming side (unretained: the session holds it), once asked.
    private let handTo = Atomic<UnsafeMutableRawPointer?>(nil)
    /// The frame of the first cycle this client no longer renders, or -1.
    /// [audio-thread]
    @exclusivity(unchecked) private var endsAt = -1
    /// The incoming client has rendered a cycle.
    private let tookOver = Atomic<Bool>(false)

    /// - Parameter incoming: renders nothing until a handover gives it the
    ///   cycle. [owner-thread]
    init(cycle: ProcessCycle, client: OpaquePointer, ports registered: [OpaquePointer?], incoming: Bool = false) {
        handle = client
        self.cycle = cycle
        cycleRef = .passUnretained(cycle)
        ports = .allocate(capacity: JACKPortBinder.capacity)
        ports.initialize(repeating: nil, count: JACKPortBinder.capacity)
        for (i, p) in registered.enumerated() { ports[i] = p }
        portCount = registered.count
        startsAt = Atomic(incoming ? Self.notYet : Self.always)
    }

    deinit { ports.deallocate() }

    // MARK: owner side [owner-thread]

    /// Asks this client to give the cycle to `incoming` after the next
    /// cycle it renders. `incoming` must stay alive while this client is
    /// active.
    func handOver(to incoming: ClientSide) {
        handTo.store(Unmanaged.passUnretained(incoming).toOpaque(), ordering: .releasing)
    }

    /// Whether this (incoming) client has rendered a cycle.
    var hasTakenOver: Bool { tookOver.load(ordering: .acquiring) }

    /// This client renders every cycle from now on: the other client is
    /// deactivated (or the handover never began and the other one is
    /// gone).
    func renderEveryCycle() { startsAt.store(Self.always, ordering: .releasing) }

    // MARK: audio side [audio-thread; of this client]

    /// Whether a handover involves this client (two loads of its own line).
    @inline(__always)
    var isHandingOver: Bool {
        startsAt.load(ordering: .relaxed) != Self.always || handTo.load(ordering: .relaxed) != nil
    }

    /// Whether this client renders the cycle of `frames` under way.
    func renders(frames: UInt32) -> Bool {
        let now = jack_last_frame_time(handle)
        let start = startsAt.load(ordering: .acquiring)
        if start == Self.notYet { return false }
        if start >= 0 && Self.isBefore(now, UInt32(truncatingIfNeeded: start)) { return false }
        if endsAt >= 0 && !Self.isBefore(now, UInt32(truncatingIfNeeded: endsAt)) { return false }
        if start >= 0 && !tookOver.load(ordering: .relaxed) {
            tookOver.store(true, ordering: .releasing)
            cycleRef._withUnsafeGuaranteedRef { $0.monitorWakeup.signal() }
        }
        return true
    }

    /// After a cycle this client rendered: when asked to hand over and not
    /// done yet, the next cycle is the incoming client's.
    func rendered(frames: UInt32) {
        guard endsAt < 0, let raw = handTo.load(ordering: .acquiring) else { return }
        let next = jack_last_frame_time(handle) &+ frames
        endsAt = Int(next)
        Unmanaged<ClientSide>.fromOpaque(raw)._withUnsafeGuaranteedRef {
            $0.startsAt.store(Int(next), ordering: .releasing)
        }
    }

    /// `a` comes before `b` on JACK's wrapping frame clock.
    @inline(__always)
    static func isBefore(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) < 0 }
}
