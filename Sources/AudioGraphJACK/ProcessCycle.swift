import AudioGraph
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
    let engine: Engine
    let binder: JACKPortBinder
    let maxFrames: Int
    private var ports: UnsafeMutablePointer<OpaquePointer?>
    private var portCount = 0
    private var outputSlots: UnsafeMutablePointer<Int>
    private var outputCount = 0
    let paused = Atomic<Bool>(false)
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
    private var endSignalled = false
    /// `Options.threadInit`.
    let threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    /// The client whose process thread this is. [set before activation]
    var clientHandle: OpaquePointer?
    /// JACK's transport, when sources follow it. [set before activation]
    var transport: JACKTransport?
    /// The reason JACK gave, copied without allocating.
    private let reasonBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
    let measure: Bool
    let cycleTimes = SPSCRing<UInt32>(minimumCapacity: 1 << 16)

    init(engine: Engine, binder: JACKPortBinder, maxFrames: Int, measure: Bool,
         threadInit: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?, wakeup: Wakeup) {
        self.threadInit = threadInit
        monitorWakeup = wakeup
        self.engine = engine
        self.binder = binder
        self.maxFrames = maxFrames
        self.measure = measure
        ports = .allocate(capacity: JACKPortBinder.capacity)
        ports.initialize(repeating: nil, count: JACKPortBinder.capacity)
        outputSlots = .allocate(capacity: JACKPortBinder.capacity)
        outputSlots.initialize(repeating: 0, count: JACKPortBinder.capacity)
        reasonBuffer.initialize(repeating: 0, count: 256)
    }

    deinit {
        ports.deallocate()
        outputSlots.deallocate()
        reasonBuffer.deallocate()
    }

    /// [owner-thread, while the client is not active]
    func bind(ports registered: [OpaquePointer], client: OpaquePointer) {
        clientHandle = client
        for (i, p) in registered.enumerated() { ports[i] = p }
        portCount = registered.count
        outputCount = 0
        for (i, p) in binder.ports.enumerated() where !p.isInput {
            outputSlots[outputCount] = i
            outputCount += 1
        }
    }

    var shutdownReason: String { String(cString: reasonBuffer) }

    /// One JACK cycle. [audio-thread]
    @inline(__always)
    func run(_ frames: UInt32) {
        let start = measure ? MonotonicClock.nanoseconds() : 0
        let n = Int(frames)
        var i = 0
        while i < portCount {
            binder.buffers[i] = jack_port_get_buffer(ports[i], frames)?.assumingMemoryBound(to: Float.self)
            i += 1
        }
        let transport = self.transport
        if let transport, let client = clientHandle { transport.observe(client) }
        if n > maxFrames || paused.load(ordering: .relaxed) {
            if n > maxFrames { oversizedCycles.add(1, ordering: .relaxed) }
            transport?.standStill()
            i = 0
            while i < outputCount {
                if let b = binder.buffers[outputSlots[i]] { Kernels.fill(b, count: n, value: 0) }
                i += 1
            }
        } else {
            if let transport { engine.transportHeld = !transport.advance(frames: frames) }
            engine.render(frames: n)
            // Tell the monitor at once, not at its next timeout.
            if !endSignalled && engine.isFinished {
                endSignalled = true
                monitorWakeup.signal()
            }
        }
        if measure {
            let took = MonotonicClock.nanoseconds() &- start
            _ = cycleTimes.push(UInt32(truncatingIfNeeded: min(took, UInt64(UInt32.max))))
        }
    }

    /// [any JACK thread]
    func noteShutdown(_ reason: UnsafePointer<CChar>?) {
        if let reason { strncpy(reasonBuffer, reason, 255) }
        serverGone.store(true, ordering: .releasing)
        monitorWakeup.signal()
    }
}

// MARK: C callbacks (they never return non-zero: JACK would stop calling)

private func cycle(_ arg: UnsafeMutableRawPointer?) -> ProcessCycle? {
    arg.map { Unmanaged<ProcessCycle>.fromOpaque($0).takeUnretainedValue() }
}

/// [audio-thread]
let processCallback: JackProcessCallback = { frames, arg in
    cycle(arg)?.run(frames)
    return 0
}

/// [every thread libjack starts for the client: JACK2 calls the thread-init
/// callback on its notification threads too] On the process thread only:
/// marks it as the audio thread (`ThreadRole`), then runs
/// `Options.threadInit`.
let threadInitCallback: JackThreadInitCallback = { arg in
    guard let c = cycle(arg), let handle = c.clientHandle,
          pthread_equal(pthread_self(), jack_client_thread_id(handle)) != 0 else { return }
    ThreadRole.mark(.audio)
    c.threadInit?(nil)
}

/// [a JACK thread] Buffers were sized for `maxFrames`: only note the size.
let bufferSizeCallback: JackBufferSizeCallback = { frames, arg in
    if let c = cycle(arg) {
        c.bufferSize.store(Int(frames), ordering: .relaxed)
        c.monitorWakeup.signal()
    }
    return 0
}

/// [a JACK thread]
let xrunCallback: JackXRunCallback = { arg in
    if let c = cycle(arg) {
        c.xruns.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
    return 0
}

/// [a JACK thread] The server is gone: set a flag; the main thread reports.
let shutdownCallback: JackInfoShutdownCallback = { _, reason, arg in
    cycle(arg)?.noteShutdown(reason)
}

/// [JACK's notification thread]
let portConnectCallback: JackPortConnectCallback = { _, _, _, arg in
    if let c = cycle(arg) {
        c.connectionEpoch.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
}

/// [JACK's notification thread] A port appeared or went away somewhere:
/// the owner thread restores remembered connections.
let portRegistrationCallback: JackPortRegistrationCallback = { _, _, arg in
    if let c = cycle(arg) {
        c.registrationEpoch.add(1, ordering: .relaxed)
        c.monitorWakeup.signal()
    }
}

/// [JACK's notification thread] Reads the latency plan the owner thread
/// published; never calls into nodes.
let latencyCallback: JackLatencyCallback = { mode, arg in
    guard let arg else { return }
    Unmanaged<LatencyPublisher>.fromOpaque(arg).takeUnretainedValue().report(mode: mode)
}
