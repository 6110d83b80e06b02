import AudioGraphHost
import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The process cycle of a running graph and JACK's C callbacks. Everything
// here runs on JACK's threads: the process callback on the real-time
// thread (it only fetches port buffers and renders the engine), the others
// on JACK's notification threads (they only store into atomics and wake
// the owner thread, never call into nodes or plugins).

/// What JACK's callbacks touch: preallocated, atomics only.
final class ProcessCycle: @unchecked Sendable {
    /// The engine the callback renders: changed only by the audio thread,
    /// when it takes a reload's swap. [audio-thread; others: before activation]
    @exclusivity(unchecked) private(set) var engine: Engine {
        didSet { engineRef = .passUnretained(engine) }
    }
    /// `engine`, unretained, for the cycle: reading a class reference out
    /// of a stored property retains and releases it (atomic
    /// read-modify-writes on a line that is cold at the start of a cycle).
    @exclusivity(unchecked) private var engineRef: Unmanaged<Engine>
    /// A reload's swap waiting for the next cycle (unretained `ReloadSwap`;
    /// the session holds it until it is done). [any-thread; the owner thread stores, the audio
    /// thread takes]
    let pendingSwap = Atomic<UnsafeMutableRawPointer?>(nil)
    /// The swap whose crossfade runs. [audio-thread]
    @exclusivity(unchecked) private var fading: ReloadSwap?
    let binder: JACKPortBinder
    let maxFrames: Int
    private var outputSlots: UnsafeMutablePointer<Int>
    private var outputCount = 0
    let paused = Atomic<Bool>(false)
    /// `Options.duration` in frames: a cycle that starts at or past it
    /// renders nothing and outputs silence, as paused. [any-thread; set before activation, the
    /// audio thread reads]
    let lastFrame = Atomic<Int>(.max)
    /// The position reached `lastFrame`. [any-thread; the audio thread sets]
    let durationReached = Atomic<Bool>(false)
    let xruns = Atomic<Int>(0)
    let bufferSize = Atomic<Int>(0)
    let oversizedCycles = Atomic<Int>(0)
    let connectionEpoch = Atomic<Int>(0)
    let serverGone = Atomic<Bool>(false)
    /// Wakes the owner thread; JACK's callbacks signal it (sem_post never
    /// blocks or allocates).
    let monitorWakeup: Wakeup
    /// Ports registered or unregistered on the server (any client's).
    let registrationEpoch = Atomic<Int>(0)
    /// The end of stream was signalled to the monitor. [audio-thread]
    @exclusivity(unchecked) private var endSignalled = false
    /// `Options.threadInit`.
    let threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    /// JACK's transport, when sources follow it. [any-thread; set before activation, then the
    /// audio thread's: a reload's swap replaces it]
    @exclusivity(unchecked) var transport: JACKTransport? {
        didSet {
            // No closure: this runs on the audio thread when a swap is taken.
            if let transport { transportRef = .passUnretained(transport) } else { transportRef = nil }
        }
    }
    /// `transport`, unretained, for the cycle (as `engineRef`).
    @exclusivity(unchecked) private var transportRef: Unmanaged<JACKTransport>?
    /// The reason JACK gave, copied without allocating.
    private let reasonBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
    let measure: Bool
    /// `RunningGraph.Options.prefetchHotMemory`.
    let prefetch: Bool
    /// `Options.cycleProbe`.
    let probe: (@convention(c) () -> UInt64)?
    let cycleTimes = SPSCRing<CycleSample>(minimumCapacity: 1 << 16)
    /// How long the last reload's swap (`take`) took, in ns (with `measure`).
    let swapNanoseconds = Atomic<UInt64>(0)

    init(engine: Engine, binder: JACKPortBinder, maxFrames: Int, measure: Bool,
         probe: (@convention(c) () -> UInt64)? = nil, prefetch: Bool = true,
         threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?, wakeup: Wakeup) {
        self.threadInit = threadInit
        monitorWakeup = wakeup
        self.engine = engine
        engineRef = .passUnretained(engine)
        if prefetch { engine.prefetchDistance = Engine.livePrefetchDistance }
        self.binder = binder
        self.maxFrames = maxFrames
        self.measure = measure
        self.probe = probe
        self.prefetch = prefetch
        outputSlots = .allocate(capacity: JACKPortBinder.capacity)
        outputSlots.initialize(repeating: 0, count: JACKPortBinder.capacity)
        reasonBuffer.initialize(repeating: 0, count: 256)
    }

    deinit {
        outputSlots.deallocate()
        reasonBuffer.deallocate()
    }

    /// Takes the output slots from the binder's ports. [owner-thread & !rendering; while no client
    /// is active, or while the one that is does not render]
    func bindOutputs() {
        outputCount = 0
        for (i, p) in binder.ports.enumerated() where !p.isInput && !p.removed {
            outputSlots[outputCount] = i
            outputCount += 1
        }
    }

    var shutdownReason: String { String(cString: reasonBuffer) }

    /// One JACK cycle, called by `side`'s client. [audio-thread]
    @inline(__always)
    func run(_ frames: UInt32, side: ClientSide) {
        // A rename hands the cycle from one client to the other: only one
        // of them renders each cycle (`ClientSide`).
        if side.isHandingOver && !side.renders(frames: frames) {
            silence(side, frames: frames)
            return
        }
        let start = measure ? MonotonicClock.nanoseconds() : 0
        // First: the engine's state comes back from memory while libjack
        // finds the port buffers.
        if prefetch { engineRef._withUnsafeGuaranteedRef { $0.prefetchHotMemory() } }
        let n = Int(frames)
        if let raw = pendingSwap.exchange(nil, ordering: .acquiring) {
            let t0 = measure ? MonotonicClock.nanoseconds() : 0
            take(Unmanaged<ReloadSwap>.fromOpaque(raw).takeUnretainedValue(), side: side)
            if measure { swapNanoseconds.store(MonotonicClock.nanoseconds() &- t0, ordering: .relaxed) }
        }
        let ports = side.ports
        var i = 0
        while i < side.portCount {
            if let port = ports[i] {
                binder.buffers[i] = jack_port_get_buffer(port, frames)?.assumingMemoryBound(to: Float.self)
            } else {
                binder.buffers[i] = nil
            }
            i += 1
        }
        // Borrowed, not retained (no release call at the end of the cycle).
        let transportRef = self.transportRef
        if let transportRef { transportRef._withUnsafeGuaranteedRef { $0.observe(side.handle) } }
        // At `lastFrame` (`--duration`): held as paused from then on.
        let atEnd = engineRef._withUnsafeGuaranteedRef { $0.framePosition } >= lastFrame.load(ordering: .relaxed)
        if atEnd && !durationReached.load(ordering: .relaxed) {
            durationReached.store(true, ordering: .releasing)
            monitorWakeup.signal()
        }
        let holding = atEnd || paused.load(ordering: .relaxed)
        if let f = fading, n > maxFrames || holding {
            // Nothing to crossfade in silence: the swap is done at once.
            finish(f, side: side)
        }
        if n > maxFrames || holding {
            if n > maxFrames { oversizedCycles.add(1, ordering: .relaxed) }
            transportRef?._withUnsafeGuaranteedRef { $0.standStill() }
            i = 0
            while i < outputCount {
                if let b = binder.buffers[outputSlots[i]] { Kernels.fill(b, count: n, value: 0) }
                i += 1
            }
        } else if let f = fading {
            var held = false
            if let transportRef { held = transportRef._withUnsafeGuaranteedRef { !$0.advance(frames: frames) } }
            if f.render(frames: n, binder: binder, transportHeld: held) { finish(f, side: side) }
        } else {
            engineRef._withUnsafeGuaranteedRef { engine in
                if let transportRef { engine.transportHeld = transportRef._withUnsafeGuaranteedRef { !$0.advance(frames: frames) } }
                engine.render(frames: n)
                // Tell the monitor at once, not at its next timeout.
                if !endSignalled && engine.isFinished {
                    endSignalled = true
                    monitorWakeup.signal()
                }
            }
        }
        if measure {
            let took = MonotonicClock.nanoseconds() &- start
            var probed: UInt64 = 0
            if let probe { probed = probe() }
            _ = cycleTimes.push(CycleSample(nanoseconds: UInt32(truncatingIfNeeded: min(took, UInt64(UInt32.max))),
                                            probe: probed))
        }
        // A rename waits for this client to give the cycle up: the next
        // cycle is the other client's.
        if side.isHandingOver { side.rendered(frames: frames) }
    }

    /// Silence on `side`'s outputs: the other client renders this cycle.
    /// Touches nothing the rendering client uses (it may run at the same
    /// time on another core). [audio-thread]
    private func silence(_ side: ClientSide, frames: UInt32) {
        var i = 0
        while i < outputCount {
            if let port = side.ports[outputSlots[i]], let b = jack_port_get_buffer(port, frames) {
                Kernels.fill(b.assumingMemoryBound(to: Float.self), count: Int(frames), value: 0)
            }
            i += 1
        }
    }

    /// Takes a reload's swap at the start of a cycle: the new engine and
    /// port table from now on, the old engine's retired nodes rendered in
    /// the crossfade. No allocation: everything was made by the owner
    /// thread. [audio-thread]
    private func take(_ s: ReloadSwap, side: ClientSide) {
        var k = 0
        while k < s.newPortCount {
            if k >= side.portCount { side.ports[k] = s.newPorts[k] }
            k += 1
        }
        side.portCount = s.newPortCount
        k = 0
        while k < s.outputCount {
            outputSlots[k] = s.outputSlots[k]
            k += 1
        }
        outputCount = s.outputCount
        s.engine.continuePosition(from: engine)
        // Not rendered yet: this thread may still set it.
        if prefetch { s.engine.prefetchDistance = Engine.livePrefetchDistance }
        engine = s.engine
        transport = s.transport
        if s.relocateFollowers { s.transport?.followersChanged() }
        endSignalled = false
        fading = s
        s.taken.store(true, ordering: .releasing)
    }

    /// Ends a swap's crossfade: the ports it gave up are no longer fetched;
    /// the owner thread may release the old engine and unregister them.
    /// [audio-thread]
    private func finish(_ s: ReloadSwap, side: ClientSide) {
        var k = 0
        while k < s.removedCount {
            let slot = s.removedSlots[k]
            side.ports[slot] = nil
            binder.buffers[slot] = nil
            k += 1
        }
        fading = nil
        s.done.store(true, ordering: .releasing)
        monitorWakeup.signal()
    }

    /// [any-thread; any JACK thread]
    func noteShutdown(_ reason: UnsafePointer<CChar>?) {
        if let reason { strncpy(reasonBuffer, reason, 255) }
        serverGone.store(true, ordering: .releasing)
        monitorWakeup.signal()
    }
}

/// One measured process cycle (`RunningGraph.takeCycleSamples`).
public struct CycleSample: Sendable, Equatable, BitwiseCopyable {
    /// How long the cycle took, from the callback's entry to its end.
    public var nanoseconds: UInt32
    /// `Options.cycleProbe` at the cycle's end.
    public var probe: UInt64
    public init(nanoseconds: UInt32, probe: UInt64) {
        self.nanoseconds = nanoseconds
        self.probe = probe
    }
}

// MARK: C callbacks (they never return non-zero: JACK would stop calling)

/// No closure (`Optional.map`) here: its generic metadata would be made the
/// first time two of JACK's threads call in, racing in the Swift runtime.
private func cycle(_ arg: UnsafeMutableRawPointer?) -> ProcessCycle? {
    guard let arg else { return nil }
    return Unmanaged<ProcessCycle>.fromOpaque(arg).takeUnretainedValue()
}

/// [audio-thread] Its argument is the client's `ClientSide`.
let processCallback: JackProcessCallback = { frames, arg in
    // Borrowed, not retained: the session keeps the side (and the side its
    // cycle) alive while the client is active.
    if let arg {
        Unmanaged<ClientSide>.fromOpaque(arg)._withUnsafeGuaranteedRef { side in
            side.cycleRef._withUnsafeGuaranteedRef { $0.run(frames, side: side) }
        }
    }
    return 0
}

/// [any-thread; every thread libjack starts for the client: JACK2 calls the thread-init callback
/// on its notification threads too] Its argument is the client's
/// `ClientSide`. On the process thread only: marks it as the audio thread
/// (`ThreadRole`), then runs `Options.threadInit`.
let threadInitCallback: JackThreadInitCallback = { arg in
    guard let arg else { return }
    let side = Unmanaged<ClientSide>.fromOpaque(arg).takeUnretainedValue()
    guard pthread_equal(pthread_self(), jack_client_thread_id(side.handle)) != 0 else { return }
    ThreadRole.mark(.audio)
    side.cycleRef.takeUnretainedValue().threadInit?(nil)
}

/// [any-thread; a JACK thread] Buffers were sized for `maxFrames`: only note the size.
let bufferSizeCallback: JackBufferSizeCallback = { frames, arg in
    if let c = cycle(arg) {
        c.bufferSize.store(Int(frames), ordering: .relaxed)
        c.monitorWakeup.signal()
    }
    return 0
}

/// [any-thread; a JACK thread]
let xrunCallback: JackXRunCallback = { arg in
    if let c = cycle(arg) {
        c.xruns.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
    return 0
}

/// [any-thread; a JACK thread] The server is gone: set a flag; the main thread reports.
let shutdownCallback: JackInfoShutdownCallback = { _, reason, arg in
    cycle(arg)?.noteShutdown(reason)
}

/// [any-thread; JACK's notification thread]
let portConnectCallback: JackPortConnectCallback = { _, _, _, arg in
    if let c = cycle(arg) {
        c.connectionEpoch.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
}

/// [any-thread; JACK's notification thread] A port appeared or went away somewhere:
/// the owner thread restores remembered connections.
let portRegistrationCallback: JackPortRegistrationCallback = { _, _, arg in
    if let c = cycle(arg) {
        c.registrationEpoch.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
}

/// [any-thread; JACK's notification thread] Reads the latency plan the owner thread
/// published; never calls into nodes.
let latencyCallback: JackLatencyCallback = { mode, arg in
    guard let arg else { return }
    Unmanaged<LatencyPublisher>.fromOpaque(arg).takeUnretainedValue().report(mode: mode)
}
