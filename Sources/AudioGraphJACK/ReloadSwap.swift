import AudioGraphHost
import Synchronization

/// One hot reload's handover from the running engine to the new one,
/// made whole by the owner thread before the process callback sees it.
///
/// Design (docs/reload.md):
/// - Kept nodes are the same objects in both engines, prepared once, with
///   their buses (see `EngineReuse`). From the swap on, only the new engine
///   renders them, so each node renders once per cycle.
/// - During the crossfade, each cycle: the new engine renders everything
///   (kept and new nodes); the new signal on the *fade slots* (output ports
///   written by a replaced, added or removed `jack-out`) is saved; then the
///   old engine renders only its retired nodes (`Engine.renderRetired`),
///   which read the kept buses the new engine has just filled, and its
///   retired `jack-out`s write the old signal to those ports; the ports
///   then get old × (1 − g) + new × g, g rising linearly over the fade
///   (and one more cycle at g = 1, so that ports given up are left silent).
///   Ports written by kept `jack-out`s are not touched (their signal is
///   the same in both graphs).
/// - The swap is one atomic pointer exchange the callback does at the start
///   of a cycle; at the end of the fade it marks `done` and wakes the owner
///   thread, which then releases the old engine, stops the retired nodes'
///   worker and unregisters the ports given up.
///
/// Threading: made and released on the owner thread; `render` and the
/// fields it reads: [audio-thread] between `taken` and `done`.
final class ReloadSwap: @unchecked Sendable {
    let engine: Engine
    /// The engine replaced; nil once released. [owner-thread]
    var old: Engine?
    /// `old` for the audio thread (kept alive by `old` until `done`).
    private let oldUnowned: Unmanaged<Engine>
    /// One flag per step of the old engine: rendered in the crossfade.
    let retired: UnsafeMutablePointer<Bool>
    let fadeSlots: UnsafeMutablePointer<Int>
    let fadeCount: Int
    /// The new signal of each fade slot, for one cycle.
    private let scratch: UnsafeMutablePointer<Float>
    private let maxFrames: Int
    let fadeFrames: Int
    @exclusivity(unchecked) private var progress = 0
    /// The port table after the swap.
    let newPorts: UnsafeMutablePointer<OpaquePointer?>
    let newPortCount: Int
    let outputSlots: UnsafeMutablePointer<Int>
    let outputCount: Int
    /// Slots given up (no longer fetched after the fade).
    let removedSlots: UnsafeMutablePointer<Int>
    let removedCount: Int
    /// The transport the process callback follows from the swap on (nil
    /// when no source follows it).
    let transport: JACKTransport?
    /// A follower is new: locate every follower again at the swap.
    let relocateFollowers: Bool
    let taken = Atomic<Bool>(false)
    let done = Atomic<Bool>(false)

    /// [owner-thread]
    init(engine: Engine, old: Engine, retired: [Bool], fadeSlots: [Int], fadeFrames: Int,
         ports: [OpaquePointer?], outputSlots: [Int], removedSlots: [Int],
         transport: JACKTransport? = nil, relocateFollowers: Bool = false) {
        self.engine = engine
        self.transport = transport
        self.relocateFollowers = relocateFollowers
        self.old = old
        oldUnowned = Unmanaged.passUnretained(old)
        self.retired = .allocate(capacity: max(retired.count, 1))
        self.retired.initialize(repeating: false, count: max(retired.count, 1))
        for (i, r) in retired.enumerated() { self.retired[i] = r }
        fadeCount = fadeSlots.count
        self.fadeSlots = .allocate(capacity: max(fadeCount, 1))
        self.fadeSlots.initialize(repeating: 0, count: max(fadeCount, 1))
        for (i, s) in fadeSlots.enumerated() { self.fadeSlots[i] = s }
        maxFrames = engine.maxFrames
        scratch = .allocate(capacity: max(fadeCount, 1) * maxFrames)
        scratch.initialize(repeating: 0, count: max(fadeCount, 1) * maxFrames)
        self.fadeFrames = max(fadeFrames, 0)
        newPortCount = ports.count
        newPorts = .allocate(capacity: max(ports.count, 1))
        newPorts.initialize(repeating: nil, count: max(ports.count, 1))
        for (i, p) in ports.enumerated() { newPorts[i] = p }
        outputCount = outputSlots.count
        self.outputSlots = .allocate(capacity: max(outputCount, 1))
        self.outputSlots.initialize(repeating: 0, count: max(outputCount, 1))
        for (i, s) in outputSlots.enumerated() { self.outputSlots[i] = s }
        removedCount = removedSlots.count
        self.removedSlots = .allocate(capacity: max(removedCount, 1))
        self.removedSlots.initialize(repeating: 0, count: max(removedCount, 1))
        for (i, s) in removedSlots.enumerated() { self.removedSlots[i] = s }
    }

    deinit {
        retired.deallocate()
        fadeSlots.deallocate()
        scratch.deallocate()
        newPorts.deallocate()
        outputSlots.deallocate()
        removedSlots.deallocate()
    }

    /// One cycle of the crossfade; returns true when it is over. Both
    /// engines' transport followers are held when `transportHeld`.
    /// [audio-thread]
    func render(frames n: Int, binder: JACKPortBinder, transportHeld: Bool = false) -> Bool {
        let frames = n < maxFrames ? n : maxFrames
        engine.transportHeld = transportHeld
        oldUnowned._withUnsafeGuaranteedRef { $0.transportHeld = transportHeld }
        // One more cycle after the fade, at g = 1: ports given up then hold
        // silence, which JACK goes on mixing until they are unregistered.
        let over = progress >= fadeFrames
        var k = 0
        // Ports no new node writes must not keep last cycle's samples.
        while k < fadeCount {
            if let b = binder.buffers[fadeSlots[k]] { Kernels.fill(b, count: frames, value: 0) }
            k += 1
        }
        engine.render(frames: frames)
        k = 0
        while k < fadeCount {
            let s = scratch + k * maxFrames
            if let b = binder.buffers[fadeSlots[k]] {
                Kernels.copy(b, to: s, count: frames)
                Kernels.fill(b, count: frames, value: 0)
            }
            k += 1
        }
        oldUnowned._withUnsafeGuaranteedRef { $0.renderRetired(frames: frames, retired: retired) }
        k = 0
        let total = Float(max(fadeFrames, 1))
        while k < fadeCount {
            let s = scratch + k * maxFrames
            if let b = binder.buffers[fadeSlots[k]] {
                Self.crossfade(old: b, new: s, count: frames, from: progress, total: total)
            }
            k += 1
        }
        progress += frames
        return over
    }

    /// `old` ← old × (1 − g) + new × g, g = (start + i + 1) / total, at most 1.
    /// [audio-thread]
    @_noLocks
    static func crossfade(old: UnsafeMutablePointer<Float>, new: UnsafePointer<Float>, count: Int, from start: Int, total: Float) {
        var i = 0
        while i < count {
            let g = min(Float(start + i + 1) / total, 1)
            old[i] = old[i] * (1 - g) + new[i] * g
            i += 1
        }
    }
}
