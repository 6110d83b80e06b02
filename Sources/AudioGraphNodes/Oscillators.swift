#if canImport(Glibc)
import Glibc
#endif

/// Sine by rotating a unit phasor, renormalised every block so it keeps
/// its amplitude.
///
/// The phasor p = (cos φ, sin φ) advances a chunk of `SineTable.length`
/// samples at a time; inside a chunk, sample k is Im(p·ωᵏ) =
/// sin φ·cos kω + cos φ·sin kω, read from a table of cos kω and sin kω.
/// The samples of a chunk are independent of each other (the loop
/// vectorises) and the rotation chain is `length` times shorter than one
/// multiply per sample. [audio-thread]
struct SineOscillator {
    var re = 0.0, im = 0.0   // the phasor: (cos φ, sin φ)
    var c = 1.0, s = 0.0     // rotation per chunk: (cos Lω, sin Lω)
    /// Owns `cosTable` and `sinTable`; copies of the oscillator share it.
    let table: SineTable
    let cosTable: UnsafeMutablePointer<Double>
    let sinTable: UnsafeMutablePointer<Double>

    init(frequency: Double, sampleRate: Double, phase: Double = 0) {
        re = cos(phase)
        im = sin(phase)
        table = SineTable()
        cosTable = table.cosine
        sinTable = table.sine
        setFrequency(frequency, sampleRate: sampleRate)
    }

    /// Recomputes the tables (no allocation). [audio-thread]
    mutating func setFrequency(_ f: Double, sampleRate: Double) {
        let w = 2 * Double.pi * f / sampleRate
        var k = 0
        while k < SineTable.length {
            cosTable[k] = cos(Double(k) * w)
            sinTable[k] = sin(Double(k) * w)
            k += 1
        }
        c = cos(Double(SineTable.length) * w)
        s = sin(Double(SineTable.length) * w)
    }

    /// Writes `count` samples of `sin φ` into `dst`.
    @_noLocks
    mutating func render(_ dst: UnsafeMutablePointer<Float>, count: Int) {
        render(dst, dst, count: count, gain: 1)
    }

    /// Writes `count` samples of `Float(sin φ) * gain` into `dst` and
    /// `dst2` (the same pointer for one channel): the sine, scaled and
    /// written to two channels in one pass, sample for sample what
    /// `render` followed by `Kernels.scale` and `Kernels.copy` would give.
    @_noLocks
    mutating func render(_ dst: UnsafeMutablePointer<Float>, _ dst2: UnsafeMutablePointer<Float>, count: Int, gain g: Float) {
        let length = SineTable.length
        let ct = cosTable, st = sinTable
        let c = c, s = s
        var x = re, y = im
        var i = 0
        while i < count {
            let n = count - i < length ? count - i : length
            let out = dst + i, out2 = dst2 + i
            var k = 0
            // Four samples at a time, in the same arithmetic as one at a
            // time (double products and sum, rounded to float, times g):
            // the compiler does not vectorize the two-output loop itself.
            let xs = SIMD2<Double>(repeating: x), ys = SIMD2<Double>(repeating: y)
            let gs = SIMD4<Float>(repeating: g)
            let two = out != out2
            let rc = UnsafeRawPointer(ct), rs = UnsafeRawPointer(st)
            let wo = UnsafeMutableRawPointer(out), wo2 = UnsafeMutableRawPointer(out2)
            while k &+ 4 <= n {
                let v0 = ys * rc.loadUnaligned(fromByteOffset: k &* 8, as: SIMD2<Double>.self)
                    + xs * rs.loadUnaligned(fromByteOffset: k &* 8, as: SIMD2<Double>.self)
                let v1 = ys * rc.loadUnaligned(fromByteOffset: k &* 8 &+ 16, as: SIMD2<Double>.self)
                    + xs * rs.loadUnaligned(fromByteOffset: k &* 8 &+ 16, as: SIMD2<Double>.self)
                let v = SIMD4<Float>(Float(v0[0]), Float(v0[1]), Float(v1[0]), Float(v1[1])) * gs
                wo.storeBytes(of: v, toByteOffset: k &* 4, as: SIMD4<Float>.self)
                if two { wo2.storeBytes(of: v, toByteOffset: k &* 4, as: SIMD4<Float>.self) }
                k &+= 4
            }
            while k < n {
                let v = Float(y * ct[k] + x * st[k]) * g
                out[k] = v
                out2[k] = v
                k += 1
            }
            if n == length {
                let nx = x * c - y * s
                y = x * s + y * c
                x = nx
            } else {
                // A partial chunk ends the block: the phasor moves by nω.
                let nx = x * ct[n] - y * st[n]
                y = x * st[n] + y * ct[n]
                x = nx
            }
            i += n
        }
        // |phasor| drifts by ~1e-16 per step: pull it back to 1 with one
        // Newton step of 1/sqrt around 1 (exact to ~1e-30 for such drift).
        let k = (3 - (x * x + y * y)) * 0.5
        re = x * k
        im = y * k
    }
}

/// cos kω and sin kω for k in 0..<length: one chunk of a `SineOscillator`.
/// [main-thread | audio-thread; init: main; read and rewrite in place: audio]
final class SineTable: @unchecked Sendable {
    static let length = 32
    let cosine: UnsafeMutablePointer<Double>
    let sine: UnsafeMutablePointer<Double>

    init() {
        cosine = .allocate(capacity: Self.length)
        cosine.initialize(repeating: 1, count: Self.length)
        sine = .allocate(capacity: Self.length)
        sine.initialize(repeating: 0, count: Self.length)
    }

    deinit {
        cosine.deallocate()
        sine.deallocate()
    }
}

/// Band-limited square and saw (PolyBLEP): a naive waveform with the
/// discontinuities smoothed, so the test tones alias little. [audio-thread]
struct BLEPOscillator {
    enum Shape { case square, saw }
    let shape: Shape
    var phase = 0.0          // 0..<1
    var increment = 0.0

    init(shape: Shape, frequency: Double, sampleRate: Double) {
        self.shape = shape
        setFrequency(frequency, sampleRate: sampleRate)
    }

    mutating func setFrequency(_ f: Double, sampleRate: Double) {
        increment = f / sampleRate
    }

    @inline(__always)
    static func blep(_ t: Double, _ dt: Double) -> Double {
        if t < dt {
            let x = t / dt
            return x + x - x * x - 1
        } else if t > 1 - dt {
            let x = (t - 1) / dt
            return x * x + x + x + 1
        }
        return 0
    }

    @_noLocks
    mutating func render(_ dst: UnsafeMutablePointer<Float>, count: Int) {
        var p = phase
        let dt = increment
        var i = 0
        while i < count {
            var v: Double
            switch shape {
            case .saw:
                v = 2 * p - 1 - Self.blep(p, dt)
            case .square:
                v = p < 0.5 ? 1 : -1
                v += Self.blep(p, dt)
                var q = p + 0.5
                if q >= 1 { q -= 1 }
                v -= Self.blep(q, dt)
            }
            dst[i] = Float(v)
            p += dt
            if p >= 1 { p -= 1 }
            i += 1
        }
        phase = p
    }
}

/// Deterministic white noise, uniform in [-1, 1) (xorshift64*). [audio-thread]
struct WhiteNoise {
    var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    @inline(__always)
    mutating func next() -> Double {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        let r = state &* 0x2545_F491_4F6C_DD1D
        return Double(r >> 11) * (2.0 / 9_007_199_254_740_992.0) - 1
    }

    @_noLocks
    mutating func render(_ dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count { dst[i] = Float(next()); i += 1 }
    }
}

/// Pink noise: white noise through Paul Kellet's "refined" filter (a sum
/// of seven one-pole filters), within ±0.05 dB of -3 dB/octave above
/// about 10 Hz at 44.1–48 kHz. [audio-thread]
struct PinkNoise {
    /// The filter alone, so its impulse response can be measured.
    struct Filter {
        var b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0, b4 = 0.0, b5 = 0.0, b6 = 0.0

        @inline(__always)
        mutating func step(_ w: Double) -> Double {
            b0 = 0.99886 * b0 + w * 0.0555179
            b1 = 0.99332 * b1 + w * 0.0750759
            b2 = 0.96900 * b2 + w * 0.1538520
            b3 = 0.86650 * b3 + w * 0.3104856
            b4 = 0.55000 * b4 + w * 0.5329522
            b5 = -0.7616 * b5 - w * 0.0168980
            let y = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362
            b6 = w * 0.115926
            return y
        }
    }

    var white: WhiteNoise
    var filter = Filter()

    init(seed: UInt64) { white = WhiteNoise(seed: seed) }

    @_noLocks
    mutating func render(_ dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count {
            dst[i] = Float(filter.step(white.next()))
            i += 1
        }
    }
}

/// Logarithmic (exponential) sine sweep from f0 to f1 over a number of
/// frames, then again from f0. [audio-thread]
struct LogSweep {
    let f0: Double, f1: Double
    let lengthFrames: Int
    let sampleRate: Double
    let ratio: Double        // frequency multiplier per frame
    var frequency: Double
    var phase = 0.0          // radians, wrapped
    var position = 0

    init(from f0: Double, to f1: Double, seconds: Double, sampleRate: Double) {
        self.f0 = f0
        self.f1 = f1
        self.sampleRate = sampleRate
        lengthFrames = max(Int((seconds * sampleRate).rounded()), 2)
        ratio = pow(f1 / f0, 1 / Double(lengthFrames - 1))
        frequency = f0
    }

    /// Not `@_noLocks`: it calls libm's `sin`, a C function the attribute
    /// refuses; `sin` neither allocates nor locks (the malloc-count test
    /// covers this path).
    mutating func render(_ dst: UnsafeMutablePointer<Float>, count: Int) {
        let twoPi = 2 * Double.pi
        var i = 0
        while i < count {
            dst[i] = Float(sin(phase))
            phase += twoPi * frequency / sampleRate
            if phase >= twoPi { phase -= twoPi }
            frequency *= ratio
            position += 1
            if position == lengthFrames {
                position = 0
                frequency = f0
                phase = 0
            }
            i += 1
        }
    }
}
