import AudioGraphCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The shapes of the `filter` node, after Robert Bristow-Johnson's Audio
/// EQ Cookbook.
public enum BiquadShape: String, Sendable, CaseIterable {
    case lowPass = "low-pass"
    case highPass = "high-pass"
    case bandPass = "band-pass"
    case notch
    case peaking
    case lowShelf = "low-shelf"
    case highShelf = "high-shelf"
    case allPass = "all-pass"

    /// Whether `gain` means something for this shape.
    public var usesGain: Bool { self == .peaking || self == .lowShelf || self == .highShelf }
    /// Whether the shape is a shelf (takes `slope`).
    public var isShelf: Bool { self == .lowShelf || self == .highShelf }
    /// Whether `order` (a Butterworth cascade) applies.
    public var takesOrder: Bool { self == .lowPass || self == .highPass }
}

/// One second-order section, normalised (`a0 = 1`):
/// `y[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2] − a1·y[n−1] − a2·y[n−2]`.
/// A first-order section has `b2 = a2 = 0`.
public struct BiquadCoefficients: Sendable, Equatable {
    public var b0: Double, b1: Double, b2: Double, a1: Double, a2: Double

    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }

    /// The identity.
    public static let identity = BiquadCoefficients(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0)

    /// The Cookbook's design for `shape` at `frequency` Hz (0 < f < fs/2),
    /// quality `q` (> 0) and `gainDB` (peaking and shelves). For shelves,
    /// pass `q` from `BiquadCoefficients.shelfQ(slope:gainDB:)` to design
    /// by slope. [any-thread; allocates nothing]
    @inline(__always)
    public static func design(_ shape: BiquadShape, frequency: Double, q: Double, gainDB: Double, sampleRate: Double) -> BiquadCoefficients {
        let w0 = 2 * Double.pi * frequency / sampleRate
        let cw = cos(w0), sw = sin(w0)
        let alpha = sw / (2 * q)
        let A = pow(10, gainDB / 40)
        var b0 = 0.0, b1 = 0.0, b2 = 0.0, a0 = 1.0, a1 = 0.0, a2 = 0.0
        switch shape {
        case .lowPass:
            b0 = (1 - cw) / 2; b1 = 1 - cw; b2 = b0
            a0 = 1 + alpha; a1 = -2 * cw; a2 = 1 - alpha
        case .highPass:
            b0 = (1 + cw) / 2; b1 = -(1 + cw); b2 = b0
            a0 = 1 + alpha; a1 = -2 * cw; a2 = 1 - alpha
        case .bandPass:
            // Constant 0 dB peak gain.
            b0 = alpha; b1 = 0; b2 = -alpha
            a0 = 1 + alpha; a1 = -2 * cw; a2 = 1 - alpha
        case .notch:
            b0 = 1; b1 = -2 * cw; b2 = 1
            a0 = 1 + alpha; a1 = -2 * cw; a2 = 1 - alpha
        case .allPass:
            b0 = 1 - alpha; b1 = -2 * cw; b2 = 1 + alpha
            a0 = 1 + alpha; a1 = -2 * cw; a2 = 1 - alpha
        case .peaking:
            b0 = 1 + alpha * A; b1 = -2 * cw; b2 = 1 - alpha * A
            a0 = 1 + alpha / A; a1 = -2 * cw; a2 = 1 - alpha / A
        case .lowShelf:
            let s = 2 * A.squareRoot() * alpha
            b0 = A * ((A + 1) - (A - 1) * cw + s)
            b1 = 2 * A * ((A - 1) - (A + 1) * cw)
            b2 = A * ((A + 1) - (A - 1) * cw - s)
            a0 = (A + 1) + (A - 1) * cw + s
            a1 = -2 * ((A - 1) + (A + 1) * cw)
            a2 = (A + 1) + (A - 1) * cw - s
        case .highShelf:
            let s = 2 * A.squareRoot() * alpha
            b0 = A * ((A + 1) + (A - 1) * cw + s)
            b1 = -2 * A * ((A - 1) + (A + 1) * cw)
            b2 = A * ((A + 1) + (A - 1) * cw - s)
            a0 = (A + 1) - (A - 1) * cw + s
            a1 = 2 * ((A - 1) - (A + 1) * cw)
            a2 = (A + 1) - (A - 1) * cw - s
        }
        return BiquadCoefficients(b0: b0 / a0, b1: b1 / a0, b2: b2 / a0, a1: a1 / a0, a2: a2 / a0)
    }

    /// The first-order Butterworth low- or high-pass section (bilinear,
    /// prewarped at `frequency`), for odd orders. [any-thread]
    @inline(__always)
    public static func firstOrder(highPass: Bool, frequency: Double, sampleRate: Double) -> BiquadCoefficients {
        let k = tan(Double.pi * frequency / sampleRate)
        let a1 = (k - 1) / (k + 1)
        if highPass {
            let b0 = 1 / (k + 1)
            return BiquadCoefficients(b0: b0, b1: -b0, b2: 0, a1: a1, a2: 0)
        }
        let b0 = k / (k + 1)
        return BiquadCoefficients(b0: b0, b1: b0, b2: 0, a1: a1, a2: 0)
    }

    /// The Cookbook's shelf slope `S` (1: as steep as it gets without a
    /// bump) as the equivalent `Q`: `1/Q = √((A + 1/A)(1/S − 1) + 2)`.
    /// [any-thread]
    @inline(__always)
    public static func shelfQ(slope: Double, gainDB: Double) -> Double {
        let A = pow(10, gainDB / 40)
        let inv = ((A + 1 / A) * (1 / slope - 1) + 2)
        return inv > 0 ? 1 / inv.squareRoot() : 100
    }

    /// The section Qs of a Butterworth filter of `order` (1…16): one per
    /// pole pair, and `0` standing for the first-order section of an odd
    /// order (listed last). [any-thread]
    public static func butterworthQs(order: Int) -> [Double] {
        var qs: [Double] = []
        for k in 1...max(order / 2, 1) where k <= order / 2 {
            // Pole pair k sits at π/2 − (2k − 1)π/(2N) from the negative
            // real axis, so Q = 1 / (2 sin((2k − 1)π/(2N))).
            qs.append(1 / (2 * sin(Double(2 * k - 1) * Double.pi / Double(2 * order))))
        }
        if order % 2 == 1 { qs.append(0) }
        return qs
    }
}

/// A cascade of second-order sections over several channels, in Direct
/// Form I with Double state, whose coefficients can glide: `setTargets`
/// starts a move to new coefficients that `process` makes in linear
/// steps per sample over `rampFrames` (no zipper noise, no click).
/// Linear moves keep every section stable: the stable region of
/// (`a1`, `a2`) is a triangle, and a segment between two points inside it
/// stays inside.
///
/// Threading: `init` [main-thread]; the rest [audio-thread]. Nothing
/// allocates after `init`.
public final class BiquadCascade: @unchecked Sendable {
    public let channels: Int
    public let sections: Int
    public let rampFrames: Int
    /// Current coefficients, `sections` × 5.
    let current: UnsafeMutablePointer<Double>
    /// Per-sample increments while gliding.
    let step: UnsafeMutablePointer<Double>
    /// Where the glide ends.
    let target: UnsafeMutablePointer<Double>
    /// x1, x2, y1, y2 per channel per section.
    let memory: UnsafeMutablePointer<Double>
    /// Frames left in the glide.
    let remaining: UnsafeMutablePointer<Int>

    /// [main-thread]
    public init(channels: Int, coefficients: [BiquadCoefficients], rampFrames: Int) {
        ThreadRole.check(.main)
        self.channels = max(channels, 1)
        sections = max(coefficients.count, 1)
        self.rampFrames = max(rampFrames, 1)
        current = .allocate(capacity: 5 * sections)
        step = .allocate(capacity: 5 * sections)
        step.initialize(repeating: 0, count: 5 * sections)
        target = .allocate(capacity: 5 * sections)
        memory = .allocate(capacity: 4 * sections * self.channels)
        memory.initialize(repeating: 0, count: 4 * sections * self.channels)
        remaining = .allocate(capacity: 1)
        remaining.initialize(to: 0)
        for s in 0..<sections {
            let c = s < coefficients.count ? coefficients[s] : .identity
            Self.store(c, into: current + 5 * s)
            Self.store(c, into: target + 5 * s)
        }
    }

    deinit {
        current.deallocate()
        step.deallocate()
        target.deallocate()
        memory.deallocate()
        remaining.deallocate()
    }

    @inline(__always)
    static func store(_ c: BiquadCoefficients, into p: UnsafeMutablePointer<Double>) {
        p[0] = c.b0; p[1] = c.b1; p[2] = c.b2; p[3] = c.a1; p[4] = c.a2
    }

    /// Sets section `index`'s target; call `startGlide` after the last one.
    /// [audio-thread]
    @inline(__always)
    public func setTarget(_ index: Int, _ c: BiquadCoefficients) {
        ThreadRole.check(.audio)
        guard index >= 0, index < sections else { return }
        Self.store(c, into: target + 5 * index)
    }

    /// Starts moving from the current coefficients to the targets over
    /// `rampFrames`. [audio-thread]
    public func startGlide() {
        ThreadRole.check(.audio)
        let n = Double(rampFrames)
        var i = 0
        while i < 5 * sections {
            step[i] = (target[i] - current[i]) / n
            i += 1
        }
        remaining.pointee = rampFrames
    }

    /// Jumps to the targets at once and clears the state. [audio-thread]
    public func reset() {
        ThreadRole.check(.audio)
        var i = 0
        while i < 5 * sections { current[i] = target[i]; step[i] = 0; i += 1 }
        remaining.pointee = 0
        Kernels.fillDouble(memory, count: 4 * sections * channels)
    }

    /// Filters `count` samples of every channel: `src[c]` into `dst[c]`
    /// (they may be the same). [audio-thread]
    public func process(_ src: UnsafePointer<UnsafePointer<Float>>, _ dst: UnsafePointer<UnsafeMutablePointer<Float>>, count: Int) {
        ThreadRole.check(.audio)
        var done = 0
        while done < count {
            let left = remaining.pointee
            // Glide one sample at a time while it lasts, then steady.
            let n = left > 0 ? min(left, count - done) : count - done
            var c = 0
            while c < channels {
                var s = 0
                var from = src[c] + done
                while s < sections {
                    Self.section(from, into: dst[c] + done, count: n, coefficients: current + 5 * s,
                                 step: left > 0 ? step + 5 * s : nil, memory: memory + 4 * (c * sections + s))
                    from = UnsafePointer(dst[c] + done)
                    s += 1
                }
                c += 1
            }
            if left > 0 {
                // Every channel advanced by n steps; do the same to the coefficients.
                let rest = left - n
                var i = 0
                if rest == 0 {
                    while i < 5 * sections { current[i] = target[i]; i += 1 }
                } else {
                    let k = Double(n)
                    while i < 5 * sections { current[i] += step[i] * k; i += 1 }
                }
                remaining.pointee = rest
            }
            done += n
        }
    }

    /// One section over `count` samples; with `step`, the coefficients move
    /// by it every sample (from `coefficients`, which are not changed).
    @_noLocks
    static func section(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, count: Int,
                        coefficients k: UnsafePointer<Double>, step: UnsafePointer<Double>?,
                        memory m: UnsafeMutablePointer<Double>) {
        var b0 = k[0], b1 = k[1], b2 = k[2], a1 = k[3], a2 = k[4]
        var x1 = m[0], x2 = m[1], y1 = m[2], y2 = m[3]
        if let d = step {
            let d0 = d[0], d1 = d[1], d2 = d[2], d3 = d[3], d4 = d[4]
            var i = 0
            while i < count {
                b0 += d0; b1 += d1; b2 += d2; a1 += d3; a2 += d4
                let xn = Double(x[i])
                let yn = b0 * xn + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = xn; y2 = y1; y1 = yn
                y[i] = Float(yn)
                i += 1
            }
        } else {
            var i = 0
            while i < count {
                let xn = Double(x[i])
                let yn = b0 * xn + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = xn; y2 = y1; y1 = yn
                y[i] = Float(yn)
                i += 1
            }
        }
        // Flush denormals: a decaying tail must not slow the CPU down.
        if abs(y1) < 1e-30 { y1 = 0 }
        if abs(y2) < 1e-30 { y2 = 0 }
        m[0] = x1; m[1] = x2; m[2] = y1; m[3] = y2
    }
}

extension Kernels {
    /// `dst[0..<count] = 0` for Doubles. [audio-thread]
    @_noLocks
    static func fillDouble(_ dst: UnsafeMutablePointer<Double>, count: Int) {
        var i = 0
        while i < count { dst[i] = 0; i += 1 }
    }
}
