import AudioGraphCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lookahead true-peak limiter. [main-thread | audio-thread; init: main; the rest: audio]
///
/// How it works, per sample `n` (all channels share one gain, so the
/// stereo image does not move):
/// 1. The BS.1770-4 4× interpolator (`TruePeak`, refined: with the
///    parabolic vertex between its points, so high frequencies are not
///    under-read) gives the peak `d[n]` of the span `[n − 6.125, n − 5]`
///    over every channel; the gain that span needs is
///    `g[n] = min(1, ceiling / d[n])`.
/// 2. A running minimum of `g` over `W + 2K` samples (a hold), then the
///    release: the gain recovers towards 1 exponentially with the release
///    time constant, never above the hold.
/// 3. A moving average over `W` samples turns each step down into a linear
///    ramp of `W` samples (the attack), which reaches the held value exactly
///    when the span that asked for it leaves the delay line.
/// 4. The audio is delayed by the lookahead `L = W + K + 5` and multiplied
///    by that gain. Every sample within `K` samples of a span gets at most
///    the gain that span needs, so both the samples and the interpolated
///    points between them stay at or below the ceiling (as the 4×
///    interpolator sees them).
///
/// The lookahead is at least `minimumLatencyFrames`. A ceiling change takes
/// effect for the samples entering the lookahead from then on; the
/// `latencyFrames` already in the delay line keep the gain they were given.
/// Nothing allocates after `init`.
public final class TruePeakLimiter: @unchecked Sendable {
    /// The smallest lookahead, in frames.
    public static let minimumLatencyFrames = 16
    /// Samples on each side of a detected span that get its gain too.
    static let margin = 4

    public let channels: Int
    public let sampleRate: Double
    /// The largest block `process` takes in one piece (larger ones are split).
    public let maxFrames: Int
    /// The lookahead `L`, in frames.
    let lookahead: Int
    /// The attack ramp / moving-average length `W`.
    let window: Int
    /// The hold length `W + 2K`.
    let hold: Int

    struct State {
        var ceiling: Float
        /// Per-sample factor of the remaining gain reduction (0: instant release).
        var releaseCoefficient: Double
        var delayIndex = 0
        /// Samples seen so far: the hold's clock.
        var step = 0
        var holdHead = 0
        var holdCount = 0
        var released = 1.0
        var sum: Double
        var averageIndex = 0
        var sinceResum = 0
    }

    let state: UnsafeMutablePointer<State>
    /// `lookahead` frames per channel.
    let delayLine: UnsafeMutablePointer<Float>
    /// Span peaks, then gains, for one piece of up to `maxFrames`.
    let scratch: UnsafeMutablePointer<Float>
    /// The running minimum: a monotonic queue of (gain, step), `hold` entries.
    let holdValues: UnsafeMutablePointer<Float>
    let holdSteps: UnsafeMutablePointer<Int>
    /// The last `window` released gains.
    let average: UnsafeMutablePointer<Double>
    let meter: TruePeakMeter

    /// - Parameters:
    ///   - maxFrames: the largest block expected (larger blocks are split).
    ///   - ceilingDBTP: the ceiling in dB true peak.
    ///   - releaseMs: the release time constant (the gain reduction falls
    ///     to 1/e of itself in that time); 0 releases at once after the hold.
    ///   - lookaheadMs: the delay the limiter looks ahead by (and adds).
    /// [main-thread]
    public init(channels: Int, sampleRate: Double, maxFrames: Int, ceilingDBTP: Double, releaseMs: Double, lookaheadMs: Double) {
        ThreadRole.check(.main)
        self.channels = max(channels, 1)
        self.sampleRate = sampleRate
        self.maxFrames = max(maxFrames, 1)
        let frames = lookaheadMs.isFinite ? (lookaheadMs * sampleRate / 1000).rounded() : 0
        lookahead = Int(max(Double(Self.minimumLatencyFrames), min(frames, 16_777_216)))
        window = lookahead - Self.margin - (TruePeak.detectorDelay - 1)
        hold = window + 2 * Self.margin
        state = .allocate(capacity: 1)
        state.initialize(to: State(ceiling: Self.linearCeiling(ceilingDBTP),
                                   releaseCoefficient: Self.releaseCoefficient(releaseMs, sampleRate),
                                   sum: Double(window)))
        delayLine = .allocate(capacity: lookahead * self.channels)
        delayLine.initialize(repeating: 0, count: lookahead * self.channels)
        scratch = .allocate(capacity: self.maxFrames)
        scratch.initialize(repeating: 0, count: self.maxFrames)
        holdValues = .allocate(capacity: hold)
        holdValues.initialize(repeating: 1, count: hold)
        holdSteps = .allocate(capacity: hold)
        holdSteps.initialize(repeating: 0, count: hold)
        average = .allocate(capacity: window)
        average.initialize(repeating: 1, count: window)
        meter = TruePeakMeter(channels: self.channels)
    }

    deinit {
        state.deallocate()
        delayLine.deallocate()
        scratch.deallocate()
        holdValues.deallocate()
        holdSteps.deallocate()
        average.deallocate()
    }

    /// The lookahead, in frames: what the limiter delays its signal by.
    public var latencyFrames: Int { lookahead }

    /// The ceiling as a linear amplitude. [any-thread]
    public var ceilingLinear: Float { state.pointee.ceiling }

    /// [audio-thread]
    public func setCeiling(dBTP: Double) {
        ThreadRole.check(.audio)
        state.pointee.ceiling = Self.linearCeiling(dBTP)
    }

    /// [audio-thread]
    public func setRelease(ms: Double) {
        ThreadRole.check(.audio)
        state.pointee.releaseCoefficient = Self.releaseCoefficient(ms, sampleRate)
    }

    /// In place on `channels` non-interleaved buffers. [audio-thread]
    public func process(_ buffers: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) {
        ThreadRole.check(.audio)
        var done = 0
        while done < frames {
            let n = min(frames - done, maxFrames)
            processPiece(buffers, offset: done, frames: n)
            done += n
        }
    }

    /// Clears the delay line and the gain state (silence in, unity gain). [audio-thread]
    public func reset() {
        ThreadRole.check(.audio)
        Kernels.fill(delayLine, count: lookahead * channels, value: 0)
        meter.reset()
        let s = state
        s.pointee.delayIndex = 0
        s.pointee.step = 0
        s.pointee.holdHead = 0
        s.pointee.holdCount = 0
        s.pointee.released = 1
        s.pointee.sum = Double(window)
        s.pointee.averageIndex = 0
        s.pointee.sinceResum = 0
        var i = 0
        while i < window { average[i] = 1; i += 1 }
    }

    private func processPiece(_ buffers: UnsafePointer<UnsafeMutablePointer<Float>>, offset: Int, frames n: Int) {
        var c = 0
        while c < channels {
            meter.spanPeaks(channel: c, buffers[c] + offset, count: n, into: scratch, accumulate: c > 0, refined: true)
            c += 1
        }
        Self.gains(scratch, count: n, state: state, hold: hold, window: window,
                   holdValues: holdValues, holdSteps: holdSteps, average: average)
        let start = state.pointee.delayIndex
        c = 0
        while c < channels {
            Self.delayAndApply(buffers[c] + offset, count: n, gains: scratch,
                               line: delayLine + c * lookahead, length: lookahead, index: start)
            c += 1
        }
        state.pointee.delayIndex = (start + n) % lookahead
    }

    /// Turns the span peaks in `buffer` into the gains for the delayed
    /// samples, in place (steps 1–3 of the type's comment). [audio-thread]
    @_noLocks
    static func gains(_ buffer: UnsafeMutablePointer<Float>, count: Int, state: UnsafeMutablePointer<State>,
                      hold: Int, window: Int, holdValues: UnsafeMutablePointer<Float>,
                      holdSteps: UnsafeMutablePointer<Int>, average: UnsafeMutablePointer<Double>) {
        var s = state.pointee
        let ceiling = s.ceiling
        let release = s.releaseCoefficient
        let inverseWindow = 1 / Double(window)
        var i = 0
        while i < count {
            let d = buffer[i]
            let g: Float = d > ceiling ? ceiling / d : 1
            // The hold: drop what is older than `hold` steps, then what this gain undercuts.
            if s.holdCount > 0, holdSteps[s.holdHead] <= s.step - hold {
                s.holdHead += 1
                if s.holdHead == hold { s.holdHead = 0 }
                s.holdCount -= 1
            }
            while s.holdCount > 0 {
                var back = s.holdHead + s.holdCount - 1
                if back >= hold { back -= hold }
                if holdValues[back] < g { break }
                s.holdCount -= 1
            }
            var slot = s.holdHead + s.holdCount
            if slot >= hold { slot -= hold }
            holdValues[slot] = g
            holdSteps[slot] = s.step
            s.holdCount += 1
            let held = Double(holdValues[s.holdHead])
            // The release, never above the hold.
            var r = 1 - (1 - s.released) * release
            if held < r { r = held }
            s.released = r
            // The attack: a moving average over `window`.
            s.sum += r - average[s.averageIndex]
            average[s.averageIndex] = r
            s.averageIndex += 1
            if s.averageIndex == window { s.averageIndex = 0 }
            s.sinceResum += 1
            if s.sinceResum >= window {
                // Re-add from scratch now and then: no drift in the running sum.
                var t = 0.0
                var k = 0
                while k < window { t += average[k]; k += 1 }
                s.sum = t
                s.sinceResum = 0
            }
            var a = s.sum * inverseWindow
            if a > 1 { a = 1 }
            buffer[i] = Float(a)
            s.step += 1
            i += 1
        }
        state.pointee = s
    }

    /// `x[i] ← line(x)[i − length] · gains[i]` through a ring of `length`. [audio-thread]
    @_noLocks
    static func delayAndApply(_ x: UnsafeMutablePointer<Float>, count: Int, gains: UnsafePointer<Float>,
                              line: UnsafeMutablePointer<Float>, length: Int, index: Int) {
        var j = index
        var i = 0
        while i < count {
            let delayed = line[j]
            line[j] = x[i]
            x[i] = delayed * gains[i]
            j += 1
            if j == length { j = 0 }
            i += 1
        }
    }

    static func linearCeiling(_ dBTP: Double) -> Float {
        let db = dBTP.isFinite ? min(max(dBTP, -60), 0) : 0
        return Float(pow(10, db / 20))
    }

    static func releaseCoefficient(_ ms: Double, _ sampleRate: Double) -> Double {
        guard ms.isFinite, ms > 0 else { return 0 }
        return exp(-1000 / (ms * sampleRate))
    }
}
