import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// The loudness thread of `FileLoudness.measure`: feeds filled buffers to
/// `ProgrammeLoudness` in order, and hands them back.
///
/// The reading thread (the owner) fills slot k, `submit`s it, and before
/// filling a slot again waits for a free one; the worker waits for a
/// filled slot, measures it and frees it. Slots are used in turn, so the
/// order is kept. `finish` sends an empty slot (the end) and joins.
///
/// Threading: `init`, `start`, `waitForFreeSlot`, `buffer`, `submit`,
/// `finish` [main-thread]; the worker only runs `loop`.
final class LoudnessWorker: @unchecked Sendable {
    let meter: ProgrammeLoudness
    let scanner: TruePeakScanner
    let slots: Int
    let storage: UnsafeMutablePointer<Float>
    let slotSamples: Int
    /// Frames in each slot (0: the end); written before `filledSlots.signal()`,
    /// read after its wait.
    let frames: UnsafeMutablePointer<Int>
    let freeSlots = Wakeup()
    let filledSlots = Wakeup()
    var thread: pthread_t?

    /// [main-thread]
    init(meter: ProgrammeLoudness, scanner: TruePeakScanner, slots: Int, slotSamples: Int) {
        self.meter = meter
        self.scanner = scanner
        self.slots = slots
        self.slotSamples = slotSamples
        storage = .allocate(capacity: slots * slotSamples)
        frames = .allocate(capacity: slots)
        frames.initialize(repeating: 0, count: slots)
        for _ in 0..<slots { freeSlots.signal() }
    }

    deinit {
        storage.deallocate()
        frames.deallocate()
    }

    /// [main-thread]
    func start() {
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&t, nil, { raw in
                guard let raw else { return nil }
                Unmanaged<LoudnessWorker>.fromOpaque(raw).takeRetainedValue().loop()
                return nil
            }, box.toOpaque())
        }
        if rc == 0 { thread = t } else { box.release() }
    }

    /// Slot `k`'s buffer. [main-thread]
    func buffer(_ k: Int) -> UnsafeMutablePointer<Float> { storage + k * slotSamples }

    /// Blocks until the worker has a slot free (one is used per `submit`). [main-thread]
    func waitForFreeSlot() {
        while !freeSlots.wait(timeout: 1) {}
    }

    /// Hands slot `k` with `n` frames to the worker (or measures it here
    /// when no thread could be started). [main-thread]
    func submit(slot k: Int, frames n: Int) {
        frames[k] = n
        if thread == nil {
            measure(k, n)
            freeSlots.signal()
        } else {
            filledSlots.signal()
        }
    }

    /// Ends the stream at slot `k` (the next in turn, free: the caller
    /// waited for it) and joins the worker. [main-thread]
    func finish(slot k: Int) {
        guard let t = thread else { return }
        frames[k] = 0
        filledSlots.signal()
        pthread_join(t, nil)
        thread = nil
    }

    private func measure(_ k: Int, _ n: Int) {
        meter.add(interleaved: buffer(k), frames: n)
        scanner.add(interleaved: buffer(k), frames: n)
    }

    /// [worker-thread]
    private func loop() {
        var k = 0
        while true {
            while !filledSlots.wait(timeout: 1) {}
            let n = frames[k]
            if n == 0 { return }
            measure(k, n)
            freeSlots.signal()
            k = (k + 1) % slots
        }
    }
}
