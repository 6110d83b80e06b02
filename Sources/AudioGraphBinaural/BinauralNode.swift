import AudioGraphCore
import Synchronization

/// A head orientation on its way from the audio thread to the worker.
struct OrientationRequest: BitwiseCopyable {
    /// Counts the requests of one node: 1, 2, …
    var generation: Int
    var yaw: Double
    var pitch: Double
    var roll: Double
}

/// How filter sets move between the audio thread and the worker, lock-free.
///
/// There are `FilterSlots.count` (4) slots. The audio thread holds the
/// active one and, while crossfading, the previous one; the worker holds
/// the rest, minus at most one waiting in `mailbox`. So the worker always
/// has a slot to compute into (4 − 2 − 1), and never waits for the audio
/// thread.
/// - `requests` (audio → worker, SPSC): the latest head orientation, at
///   most one per block; the worker reads them all and computes the last
///   (changes made while it computes coalesce to the latest).
/// - `mailbox` (worker → audio): the slot of the newest finished set, or
///   −1. The worker swaps its new slot in and takes back a slot the audio
///   thread never picked up; the audio thread swaps −1 in when it takes it.
/// - `releases` (audio → worker, SPSC): slots the audio thread is done
///   with (the previous set, at the end of a crossfade).
/// - `requested` / `completed`: the generation last sent, and the
///   generation of the set last put in the mailbox. Offline rendering waits
///   until they match before each block (`BinauralJob.isReady`), so a
///   rotation lands in the same block however the threads are timed.
final class BinauralHandoff: @unchecked Sendable {
    let mailbox = Atomic<Int>(-1)
    let releases = SPSCRing<Int>(minimumCapacity: FilterSlots.count)
    let requests = SPSCRing<OrientationRequest>(minimumCapacity: 64)
    let requested = Atomic<Int>(0)
    let completed = Atomic<Int>(0)

    /// Runs each ring's generic paths once, so that the Swift runtime makes
    /// their metadata now and not on the audio thread later. [main-thread; before the worker
    /// starts]
    func warmUp() {
        var r = OrientationRequest(generation: 0, yaw: 0, pitch: 0, roll: 0)
        _ = requests.push(r)
        _ = requests.pop(into: &r)
        var s = 0
        _ = releases.push(s)
        _ = releases.pop(into: &s)
    }
}

/// The worker side of a `binaural` node: computes the filter set of the
/// latest head orientation into a free slot and posts it.
final class BinauralJob: BackgroundJob, @unchecked Sendable {
    let handoff: BinauralHandoff
    let builder: FilterBuilder
    /// Slots this side holds. [worker-thread]
    private var free: [Int]
    private var latest: OrientationRequest?
    private var computed = 0

    /// - Parameter free: the slots not in use by the audio thread.
    /// [main-thread]
    init(handoff: BinauralHandoff, builder: FilterBuilder, free: [Int]) {
        self.handoff = handoff
        self.builder = builder
        self.free = free
        self.free.reserveCapacity(FilterSlots.count)
    }

    /// [worker-thread]
    func service() -> Bool {
        var worked = false
        var slot = 0
        while handoff.releases.pop(into: &slot) {
            free.append(slot)
            worked = true
        }
        var request = OrientationRequest(generation: 0, yaw: 0, pitch: 0, roll: 0)
        while handoff.requests.pop(into: &request) { latest = request }
        guard let next = latest, next.generation > computed, let target = free.popLast() else { return worked }
        builder.build(HeadOrientation(yaw: next.yaw, pitch: next.pitch, roll: next.roll), into: target)
        let unclaimed = handoff.mailbox.exchange(target, ordering: .acquiringAndReleasing)
        if unclaimed >= 0 { free.append(unclaimed) }
        computed = next.generation
        handoff.completed.store(next.generation, ordering: .releasing)
        return true
    }

    /// True when the set for the latest orientation the audio thread sent
    /// is ready for it. [control-thread]
    func isReady(forFrames frames: Int) -> Bool {
        handoff.completed.load(ordering: .acquiring) >= handoff.requested.load(ordering: .acquiring)
    }

    /// [control-thread & !rendering]
    func finish() throws {}
}

/// The audio-thread side of a `binaural` node: the partitioned convolution
/// and the crossfade. Made in `prepare`; all memory allocated in `init`.
///
/// Per segment (the part of a render call inside one partition, `m`
/// frames from position `pos`):
/// 1. each convolved channel's block [previous partition | current
///    partition so far, zero-padded] is transformed (2P real DFT) into the
///    frequency-domain delay line, at the current partition's place;
/// 2. at a partition's start, each ear's tail T = Σ_{k≥1} Σ_c X_c[j−k] ·
///    H_c[k] is summed once (the older partitions' share of the whole
///    partition's output);
/// 3. each ear: Y = T + Σ_c X_c[j] · H_c[0], one inverse DFT, and samples
///    P + pos … P + pos + m − 1 are the output (overlap-save).
/// So any call size works with no latency, and a call costs at most
/// ⌈n / P⌉ + 1 segments. When a new filter set arrives, both sets render
/// (from the same delay line, so the new one has no build-up) and the
/// output crossfades linearly from the old to the new over P samples.
final class BinauralConvolver {
    struct State {
        /// Samples of the current partition received.
        var pos = 0
        /// The current partition's number j (its delay-line place is j mod K).
        var partition = 0
        var active: Int
        /// The set being faded out, or −1.
        var old = -1
        var fadePos = 0
        var yaw: Double
        var pitch: Double
        var roll: Double
        /// The orientation changed since it was last sent.
        var dirty = false
        var generation = 0
        var inputPosition = 0
        var endPosition = Int.max
        /// Filter sets taken from the worker so far.
        var taken = 0
    }

    let geometry: ConvolutionGeometry
    let slots: FilterSlots
    let handoff: BinauralHandoff
    let lfeGain: Float
    /// Frames of a crossfade (P).
    let fadeLength: Int
    let convolvedCount: Int
    let lfeCount: Int
    private let state: UnsafeMutablePointer<State>
    /// Input channel of each convolved channel, then of each LFE channel.
    private let convolved: UnsafeMutablePointer<Int>
    private let lfeChannels: UnsafeMutablePointer<Int>
    private let forward: RealDFT
    private let inverse: RealDFT
    /// Per convolved channel, 2P samples: [previous partition | current].
    private let time: UnsafeMutablePointer<Float>
    /// Per convolved channel, K split spectra: the delay line.
    private let delayLine: UnsafeMutablePointer<Float>
    /// Two split spectra (left, right).
    private let accumulator: UnsafeMutablePointer<Float>
    /// Interleaved spectrum for av_tx (2P + 2 floats).
    private let spectrum: UnsafeMutablePointer<Float>
    /// The inverse DFT's output (2P).
    private let block: UnsafeMutablePointer<Float>
    /// The fading-out set's output, P per ear.
    private let fadingOut: UnsafeMutablePointer<Float>

    /// - Parameters:
    ///   - convolved: the input channels rendered through HRTFs, in the
    ///     order of the builder's directions.
    ///   - lfe: the input channels added to both ears with `lfeGain`.
    ///   - active: the slot holding the first filter set.
    /// [main-thread]
    init(geometry g: ConvolutionGeometry, slots: FilterSlots, handoff: BinauralHandoff, convolved: [Int], lfe: [Int],
         lfeGain: Float, active: Int, orientation: HeadOrientation) throws(DFTError) {
        geometry = g
        self.slots = slots
        self.handoff = handoff
        self.lfeGain = lfeGain
        fadeLength = g.partition
        convolvedCount = convolved.count
        lfeCount = lfe.count
        state = .allocate(capacity: 1)
        state.initialize(to: State(active: active, yaw: orientation.yaw, pitch: orientation.pitch, roll: orientation.roll))
        self.convolved = .allocate(capacity: max(convolved.count, 1))
        self.convolved.initialize(repeating: 0, count: max(convolved.count, 1))
        for (i, c) in convolved.enumerated() { self.convolved[i] = c }
        lfeChannels = .allocate(capacity: max(lfe.count, 1))
        lfeChannels.initialize(repeating: 0, count: max(lfe.count, 1))
        for (i, c) in lfe.enumerated() { lfeChannels[i] = c }
        forward = try RealDFT(length: g.fftLength, inverse: false)
        inverse = try RealDFT(length: g.fftLength, inverse: true)
        time = AlignedFloats.make(g.channels * g.fftLength)
        delayLine = AlignedFloats.make(g.channels * g.partitions * g.spectrumFloats)
        accumulator = AlignedFloats.make(2 * g.spectrumFloats)
        spectrum = AlignedFloats.make(g.fftLength + 2 * 16)
        block = AlignedFloats.make(g.fftLength)
        fadingOut = AlignedFloats.make(2 * g.partition)
    }

    deinit {
        state.deallocate()
        convolved.deallocate()
        lfeChannels.deallocate()
        for p in [time, delayLine, accumulator, spectrum, block, fadingOut] { AlignedFloats.free(p) }
    }

    /// Filter sets taken from the worker so far (rotations rendered).
    /// [audio-thread; an estimate elsewhere]
    var setsTaken: Int { state.pointee.taken }

    /// The orientation parameters: 0 yaw, 1 pitch, 2 roll. [audio-thread]
    @inline(__always)
    func setOrientation(_ which: Int, _ degrees: Double) {
        switch which {
        case 0: state.pointee.yaw = degrees
        case 1: state.pointee.pitch = degrees
        default: state.pointee.roll = degrees
        }
        state.pointee.dirty = true
    }

    /// Renders `n` frames of `input` into `output`'s two channels and sets
    /// its state. [audio-thread]
    func render(input: AudioBus, output: AudioBus, frames n: Int) {
        let st = state
        let left = output.channel(0), right = output.channel(1)
        // A new filter set: start crossfading to it (one at a time).
        if st.pointee.old < 0 && handoff.mailbox.load(ordering: .relaxed) >= 0 {
            let next = handoff.mailbox.exchange(-1, ordering: .acquiringAndReleasing)
            if next >= 0 {
                st.pointee.old = st.pointee.active
                st.pointee.active = next
                st.pointee.fadePos = 0
                st.pointee.taken += 1
                // Mid-partition, its tail is needed now (at a partition's
                // start the segment sums it).
                if st.pointee.pos != 0 { sumTail(next) }
            }
        }
        if convolvedCount > 0 {
            var done = 0
            let p = geometry.partition
            while done < n {
                let room = p - st.pointee.pos
                let m = n - done < room ? n - done : room
                segment(input, left + done, right + done, offset: done, count: m)
                done += m
            }
        } else {
            Kernels.fill(left, count: n, value: 0)
            Kernels.fill(right, count: n, value: 0)
        }
        var l = 0
        while l < lfeCount {
            let src = input.channel(lfeChannels[l])
            Kernels.addScaled(src, to: left, count: n, gain: lfeGain)
            Kernels.addScaled(src, to: right, count: n, gain: lfeGain)
            l += 1
        }
        // The stream ends when the input has and the responses have rung out.
        let inState = input.state
        if inState.ended {
            if st.pointee.endPosition == Int.max { st.pointee.endPosition = st.pointee.inputPosition + inState.validFrames }
        } else {
            st.pointee.endPosition = Int.max
        }
        let start = st.pointee.inputPosition
        st.pointee.inputPosition += n
        var out = BusState(validFrames: n, ended: false)
        if st.pointee.endPosition != Int.max {
            let remaining = st.pointee.endPosition + geometry.irLength - 1 - start
            out = BusState(validFrames: remaining <= 0 ? 0 : (remaining < n ? remaining : n), ended: remaining <= n)
            if out.validFrames < n { output.clear(from: out.validFrames, to: n) }
        }
        output.state = out
        // Send the latest orientation once per block.
        if st.pointee.dirty {
            let generation = st.pointee.generation + 1
            if handoff.requests.push(OrientationRequest(generation: generation, yaw: st.pointee.yaw,
                                                        pitch: st.pointee.pitch, roll: st.pointee.roll)) {
                st.pointee.generation = generation
                st.pointee.dirty = false
                handoff.requested.store(generation, ordering: .releasing)
            }
        }
    }

    /// One segment: `m` frames inside the current partition. [audio-thread]
    private func segment(_ input: AudioBus, _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>,
                         offset: Int, count m: Int) {
        let g = geometry
        let st = state
        let p = g.partition
        let pos = st.pointee.pos
        let place = st.pointee.partition % g.partitions
        var c = 0
        while c < convolvedCount {
            let t = time + c * g.fftLength
            Kernels.copy(input.channel(convolved[c]) + offset, to: t + p + pos, count: m)
            forward.run(t, spectrum)
            let x = delayLine + (c * g.partitions + place) * g.spectrumFloats
            ConvolutionKernels.deinterleave(spectrum, re: x, im: x + g.paddedBins, count: g.bins)
            c += 1
        }
        if pos == 0 {
            sumTail(st.pointee.active)
            if st.pointee.old >= 0 { sumTail(st.pointee.old) }
        }
        renderSet(st.pointee.active, left, right, pos: pos, count: m, place: place)
        let old = st.pointee.old
        if old >= 0 {
            renderSet(old, fadingOut, fadingOut + p, pos: pos, count: m, place: place)
            let step = 1 / Float(fadeLength)
            let from = Float(st.pointee.fadePos) * step
            ConvolutionKernels.crossfade(from: fadingOut, into: left, count: m, from: from, step: step)
            ConvolutionKernels.crossfade(from: fadingOut + p, into: right, count: m, from: from, step: step)
            st.pointee.fadePos += m
            if st.pointee.fadePos >= fadeLength {
                _ = handoff.releases.push(old)
                st.pointee.old = -1
            }
        }
        if pos + m == p {
            // The partition is complete: its spectrum stays in the delay
            // line; the block moves to the "previous" half.
            c = 0
            while c < convolvedCount {
                let t = time + c * g.fftLength
                Kernels.copy(t + p, to: t, count: p)
                Kernels.fill(t + p, count: p, value: 0)
                c += 1
            }
            st.pointee.partition += 1
            st.pointee.pos = 0
        } else {
            st.pointee.pos = pos + m
        }
    }

    /// Each ear's tail for `slot` at the current partition j:
    /// Σ_{k=1}^{K−1} Σ_c X_c[j − k] · H_c[k]. [audio-thread]
    private func sumTail(_ slot: Int) {
        let g = geometry
        let tl = slots.tail(slot, ear: 0), tr = slots.tail(slot, ear: 1)
        Kernels.fill(tl, count: g.spectrumFloats, value: 0)
        Kernels.fill(tr, count: g.spectrumFloats, value: 0)
        let j = state.pointee.partition
        var k = 1
        while k < g.partitions {
            let place = (j - k) % g.partitions + (j - k < 0 ? g.partitions : 0)
            var c = 0
            while c < convolvedCount {
                let x = delayLine + (c * g.partitions + place) * g.spectrumFloats
                ConvolutionKernels.multiplyAccumulate(x, slots.spectrum(slot, channel: c, ear: 0, partition: k),
                                                      slots.spectrum(slot, channel: c, ear: 1, partition: k),
                                                      tl, tr, count: g.paddedBins, stride: g.paddedBins)
                c += 1
            }
            k += 1
        }
    }

    /// The output of filter set `slot` for this segment into `left` and
    /// `right` (`m` samples each). [audio-thread]
    private func renderSet(_ slot: Int, _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>,
                           pos: Int, count m: Int, place: Int) {
        let g = geometry
        let accL = accumulator, accR = accumulator + g.spectrumFloats
        Kernels.copy(slots.tail(slot, ear: 0), to: accL, count: g.spectrumFloats)
        Kernels.copy(slots.tail(slot, ear: 1), to: accR, count: g.spectrumFloats)
        var c = 0
        while c < convolvedCount {
            let x = delayLine + (c * g.partitions + place) * g.spectrumFloats
            ConvolutionKernels.multiplyAccumulate(x, slots.spectrum(slot, channel: c, ear: 0, partition: 0),
                                                  slots.spectrum(slot, channel: c, ear: 1, partition: 0),
                                                  accL, accR, count: g.paddedBins, stride: g.paddedBins)
            c += 1
        }
        let start = g.partition + pos
        ConvolutionKernels.interleave(re: accL, im: accL + g.paddedBins, to: spectrum, count: g.bins)
        inverse.run(spectrum, block)
        Kernels.copy(block + start, to: left, count: m)
        ConvolutionKernels.interleave(re: accR, im: accR + g.paddedBins, to: spectrum, count: g.bins)
        inverse.run(spectrum, block)
        Kernels.copy(block + start, to: right, count: m)
    }
}
