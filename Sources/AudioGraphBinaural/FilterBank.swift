import AudioGraphCore

/// The shape of one `binaural` node's convolution: uniformly partitioned
/// overlap-save. Every impulse response (length `irLength`) is cut into
/// `partitions` pieces of `partition` samples; each piece, zero-padded to
/// `fftLength` = 2 × `partition`, is kept as its spectrum of `bins` complex
/// values (split: `paddedBins` reals then `paddedBins` imaginaries).
struct ConvolutionGeometry: Sendable, Equatable {
    /// Input channels convolved (the LFE is not).
    var channels: Int
    /// P: frames per partition.
    var partition: Int
    /// K: partitions per impulse response.
    var partitions: Int
    /// Samples of the longest impulse response, delay included.
    var irLength: Int

    var fftLength: Int { 2 * partition }
    /// P + 1: the spectrum of a real block of 2P samples.
    var bins: Int { partition + 1 }
    /// `bins` rounded up to 16, so that vector loops need no remainder.
    var paddedBins: Int { (bins + 15) / 16 * 16 }
    /// Floats of one split spectrum (reals, then imaginaries).
    var spectrumFloats: Int { 2 * paddedBins }

    init(channels: Int, partition: Int, irLength: Int) {
        self.channels = channels
        self.partition = partition
        self.irLength = max(irLength, 1)
        partitions = (self.irLength + partition - 1) / partition
    }
}

/// Filter sets, each in a slot: for every convolved channel c, ear e (0
/// left, 1 right) and partition k, the spectrum H[c][e][k]; and per slot
/// the running tail of each ear (the sum over older partitions, kept by the
/// audio thread while the slot renders).
///
/// Ownership: the audio thread owns the slots it renders (the active set,
/// and the previous one while crossfading); the worker owns the slots it
/// computes into; a slot changes hands only through `BinauralHandoff`. The
/// memory is allocated once, in `init`. [main-thread; init, deinit]
final class FilterSlots: @unchecked Sendable {
    static let count = 4
    let geometry: ConvolutionGeometry
    /// Floats of one slot's spectra.
    let slotFloats: Int
    private let spectra: UnsafeMutablePointer<Float>
    private let tails: UnsafeMutablePointer<Float>

    init(geometry g: ConvolutionGeometry) {
        geometry = g
        slotFloats = max(g.channels * 2 * g.partitions * g.spectrumFloats, 1)
        spectra = AlignedFloats.make(Self.count * slotFloats)
        tails = AlignedFloats.make(Self.count * 2 * g.spectrumFloats)
    }

    deinit {
        AlignedFloats.free(spectra)
        AlignedFloats.free(tails)
    }

    /// The reals of H[c][ear][k] in `slot`; the imaginaries follow at
    /// `+ paddedBins`. [the slot's owner]
    @inline(__always)
    func spectrum(_ slot: Int, channel c: Int, ear: Int, partition k: Int) -> UnsafeMutablePointer<Float> {
        let g = geometry
        return spectra + slot * slotFloats + ((c * 2 + ear) * g.partitions + k) * g.spectrumFloats
    }

    /// The tail spectrum of `ear` for `slot`. [audio-thread]
    @inline(__always)
    func tail(_ slot: Int, ear: Int) -> UnsafeMutablePointer<Float> {
        tails + (slot * 2 + ear) * geometry.spectrumFloats
    }
}

/// Computes a filter set into a slot: the impulse responses of every
/// convolved channel's direction relative to the head, from the HRTF set,
/// partitioned and transformed. Owns its scratch memory and its own DFT.
/// [main-thread | worker-thread; the first set, in `prepare`: main; then the worker only]
final class FilterBuilder {
    let set: HRTFSet
    /// Room directions of the convolved channels, in order.
    let directions: [SpeakerDirection]
    let interpolate: Bool
    let slots: FilterSlots
    private let dft: RealDFT
    private let left: UnsafeMutablePointer<Float>
    private let right: UnsafeMutablePointer<Float>
    /// One ear's impulse response with its delay: `partitions × partition`.
    private let response: UnsafeMutablePointer<Float>
    private let block: UnsafeMutablePointer<Float>
    private let transformed: UnsafeMutablePointer<Float>
    /// The measurement each channel took in the last `build` (nearest or
    /// interpolation centre), in channel order.
    private(set) var lastMeasurements: [Int] = []

    init(set: HRTFSet, directions: [SpeakerDirection], interpolate: Bool, slots: FilterSlots) throws(DFTError) {
        self.set = set
        self.directions = directions
        self.interpolate = interpolate
        self.slots = slots
        let g = slots.geometry
        dft = try RealDFT(length: g.fftLength, inverse: false)
        left = AlignedFloats.make(set.filterLength)
        right = AlignedFloats.make(set.filterLength)
        response = AlignedFloats.make(g.partitions * g.partition)
        block = AlignedFloats.make(g.fftLength)
        transformed = AlignedFloats.make(g.fftLength + 2)
        lastMeasurements.reserveCapacity(directions.count)
    }

    deinit {
        for p in [left, right, response, block, transformed] { AlignedFloats.free(p) }
    }

    /// Fills `slot` with the set for `orientation`. [main-thread; before the worker starts, else
    /// worker-thread]
    func build(_ orientation: HeadOrientation, into slot: Int) {
        let g = slots.geometry
        let n = set.filterLength
        let scale = 1 / Float(g.fftLength)  // the inverse DFT is unscaled
        lastMeasurements.removeAll(keepingCapacity: true)
        // Every channel's responses in one call (with `interpolate`, one
        // resampling for all of them).
        let all = set.filters(for: directions.map { orientation.relative(azimuth: $0.azimuth, elevation: $0.elevation) },
                              interpolate: interpolate)
        for (c, responses) in all.enumerated() {
            responses.left.withUnsafeBufferPointer { Kernels.copy($0.baseAddress!, to: left, count: n) }
            responses.right.withUnsafeBufferPointer { Kernels.copy($0.baseAddress!, to: right, count: n) }
            lastMeasurements.append(responses.measurement)
            for ear in 0..<2 {
                let ir = ear == 0 ? left : right
                let delay = ear == 0 ? responses.delays.left : responses.delays.right
                let total = g.partitions * g.partition
                Kernels.fill(response, count: total, value: 0)
                let count = min(n, max(total - delay, 0))
                Kernels.copyScaled(ir, to: response + delay, count: count, gain: scale)
                for k in 0..<g.partitions {
                    Kernels.copy(response + k * g.partition, to: block, count: g.partition)
                    Kernels.fill(block + g.partition, count: g.partition, value: 0)
                    dft.run(block, transformed)
                    let h = slots.spectrum(slot, channel: c, ear: ear, partition: k)
                    ConvolutionKernels.deinterleave(transformed, re: h, im: h + g.paddedBins, count: g.bins)
                }
            }
        }
    }
}

/// The convolution's loops over split spectra. [audio-thread; any thread
/// on memory it owns]
enum ConvolutionKernels {
    /// `re[i] = src[2i]`, `im[i] = src[2i + 1]` for `count` values.
    @inline(__always) @_noLocks
    static func deinterleave(_ src: UnsafePointer<Float>, re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count {
            re[i] = src[2 * i]
            im[i] = src[2 * i + 1]
            i += 1
        }
    }

    /// `dst[2i] = re[i]`, `dst[2i + 1] = im[i]` for `count` values.
    @inline(__always) @_noLocks
    static func interleave(re: UnsafePointer<Float>, im: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count {
            dst[2 * i] = re[i]
            dst[2 * i + 1] = im[i]
            i += 1
        }
    }

    /// Both ears at once, split spectra of `count` bins:
    /// `accL += x · hL`, `accR += x · hR` (complex products). Each of
    /// `x`, `hL`, `hR`, `accL`, `accR` points at `count` reals followed, at
    /// `+ stride`, by `count` imaginaries.
    @inline(__always) @_noLocks
    static func multiplyAccumulate(_ x: UnsafePointer<Float>, _ hL: UnsafePointer<Float>, _ hR: UnsafePointer<Float>,
                                   _ accL: UnsafeMutablePointer<Float>, _ accR: UnsafeMutablePointer<Float>,
                                   count: Int, stride: Int) {
        let xi = x + stride, hLi = hL + stride, hRi = hR + stride
        let aLi = accL + stride, aRi = accR + stride
        var i = 0
        while i < count {
            let a = x[i], b = xi[i]
            let lr = hL[i], li = hLi[i], rr = hR[i], ri = hRi[i]
            accL[i] += a * lr - b * li
            aLi[i] += a * li + b * lr
            accR[i] += a * rr - b * ri
            aRi[i] += a * ri + b * rr
            i += 1
        }
    }

    /// `dst[i] = old[i] + (dst[i] − old[i]) · w(i)`, with `w` rising
    /// linearly by `step` per sample from `from + step`, capped at 1 (an
    /// equal-gain linear crossfade from `old` to what `dst` holds).
    @inline(__always) @_noLocks
    static func crossfade(from old: UnsafePointer<Float>, into dst: UnsafeMutablePointer<Float>, count: Int, from: Float, step: Float) {
        var w = from
        var i = 0
        while i < count {
            w += step
            let g: Float = w < 1 ? w : 1
            dst[i] = old[i] + (dst[i] - old[i]) * g
            i += 1
        }
    }
}
