/// DSP kernels: plain loops over raw buffers, shared by the built-in nodes.
///
/// Every kernel is `@_noLocks`: the compiler rejects allocation, reference
/// counting, locks and existential calls inside them. They are `@inlinable`
/// so that callers in other modules get the specialised loop.
/// [audio-thread; any thread may call them on memory it owns]
public enum Kernels {
    /// `dst[0..<count] = value`
    @inlinable @_noLocks
    public static func fill(_ dst: UnsafeMutablePointer<Float>, count: Int, value: Float) {
        var i = 0
        while i < count { dst[i] = value; i += 1 }
    }

    /// `dst[0..<count] = src[0..<count]`
    @inlinable @_noLocks
    public static func copy(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count { dst[i] = src[i]; i += 1 }
    }

    /// `dst[i] = src[i] * gain`
    @inlinable @_noLocks
    public static func copyScaled(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
        var i = 0
        while i < count { dst[i] = src[i] * gain; i += 1 }
    }

    /// `dst[i] += src[i] * gain`
    @inlinable @_noLocks
    public static func addScaled(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
        var i = 0
        while i < count { dst[i] += src[i] * gain; i += 1 }
    }

    /// `dst[i] += a[i] * ga + b[i] * gb + c[i] * gc + d[i] * gd`, summed in
    /// that order: the same result as four `addScaled` calls, in one pass.
    @inlinable @_noLocks
    public static func addScaled4(_ a: UnsafePointer<Float>, _ ga: Float, _ b: UnsafePointer<Float>, _ gb: Float,
                                  _ c: UnsafePointer<Float>, _ gc: Float, _ d: UnsafePointer<Float>, _ gd: Float,
                                  to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count { dst[i] = dst[i] + a[i] * ga + b[i] * gb + c[i] * gc + d[i] * gd; i += 1 }
    }

    /// `dst[i] = 0 + a[i] * ga + b[i] * gb + c[i] * gc + d[i] * gd`, summed
    /// in that order: `addScaled4` into a cleared `dst`, sample for sample
    /// (the leading 0 makes a -0 sum +0, as there), without clearing or
    /// reading `dst` first.
    @inlinable @_noLocks
    public static func setScaled4(_ a: UnsafePointer<Float>, _ ga: Float, _ b: UnsafePointer<Float>, _ gb: Float,
                                  _ c: UnsafePointer<Float>, _ gc: Float, _ d: UnsafePointer<Float>, _ gd: Float,
                                  to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count { dst[i] = Float(0) + a[i] * ga + b[i] * gb + c[i] * gc + d[i] * gd; i += 1 }
    }

    /// `dst[i] += a[i] * ga + b[i] * gb`, summed in that order.
    @inlinable @_noLocks
    public static func addScaled2(_ a: UnsafePointer<Float>, _ ga: Float, _ b: UnsafePointer<Float>, _ gb: Float,
                                  to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count { dst[i] = dst[i] + a[i] * ga + b[i] * gb; i += 1 }
    }

    /// `dst[i] *= gain`
    @inlinable @_noLocks
    public static func scale(_ dst: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
        var i = 0
        while i < count { dst[i] *= gain; i += 1 }
    }

    /// `dst[i] *= g(i)`, `g` as in `copyRamped`: a ramp in place (one
    /// pointer, so that the loop vectorizes; `copyRamped` with `src == dst`
    /// takes the scalar path of the vectorizer's overlap check).
    @inlinable @_noLocks
    public static func scaleRamped(_ dst: UnsafeMutablePointer<Float>, count: Int, from: Float, step: Float) -> Float {
        var g = from
        var i = 0
        while i < count { g += step; dst[i] *= g; i += 1 }
        return g
    }

    /// `dst[i] = src[i] * g(i)` where `g` moves linearly from `from` by
    /// `step` per sample (a gain ramp). Returns the gain after the last sample.
    @inlinable @_noLocks
    public static func copyRamped(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int, from: Float, step: Float) -> Float {
        var g = from
        var i = 0
        while i < count { g += step; dst[i] = src[i] * g; i += 1 }
        return g
    }

    /// `dst[i] += src[i] * g(i)`, `g` as in `copyRamped`.
    @inlinable @_noLocks
    public static func addRamped(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, count: Int, from: Float, step: Float) -> Float {
        var g = from
        var i = 0
        while i < count { g += step; dst[i] += src[i] * g; i += 1 }
        return g
    }

    /// Copies one channel out of interleaved frames:
    /// `dst[i] = src[i * stride + channel]`.
    @inlinable @_noLocks
    public static func deinterleave(_ src: UnsafePointer<Float>, stride: Int, channel: Int, to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        var j = channel
        while i < count { dst[i] = src[j]; i += 1; j += stride }
    }

    /// Writes one channel into interleaved frames:
    /// `dst[i * stride + channel] = src[i]`.
    @inlinable @_noLocks
    public static func interleave(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, stride: Int, channel: Int, count: Int) {
        var i = 0
        var j = channel
        while i < count { dst[j] = src[i]; i += 1; j += stride }
    }

    /// Interleaves two channels: `dst[2i] = left[i]`, `dst[2i + 1] = right[i]`.
    @inlinable @_noLocks
    public static func interleave2(_ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>,
                                   to dst: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count { dst[2 * i] = left[i]; dst[2 * i + 1] = right[i]; i += 1 }
    }

    /// Writes `count` samples of `src` into a ring of `capacity` samples
    /// from index `at` on, wrapping. [audio-thread]
    @inlinable @_noLocks
    public static func ringWrite(_ src: UnsafePointer<Float>, count: Int, ring: UnsafeMutablePointer<Float>, capacity: Int, at: Int) {
        _unsafePerformance { ThreadRole.check(.audio) }
        var w = at
        var i = 0
        while i < count {
            ring[w] = src[i]
            w += 1
            if w == capacity { w = 0 }
            i += 1
        }
    }

    /// `dst[i] = ring[at + i − delay]` in a ring of `capacity` samples,
    /// wrapping (`delay` ≤ `capacity`). [audio-thread]
    @inlinable @_noLocks
    public static func ringRead(_ ring: UnsafePointer<Float>, capacity: Int, at: Int, delay: Int, count: Int,
                                into dst: UnsafeMutablePointer<Float>) {
        _unsafePerformance { ThreadRole.check(.audio) }
        var r = at - delay
        if r < 0 { r += capacity }
        var i = 0
        while i < count {
            dst[i] = ring[r]
            r += 1
            if r == capacity { r = 0 }
            i += 1
        }
    }

    /// Largest absolute sample value (NaNs are passed over). Eight lanes
    /// at a time: a compare-and-select reduction the compiler does not
    /// vectorize by itself (it would change which NaN wins).
    @inlinable @_noLocks
    public static func peak(_ src: UnsafePointer<Float>, count: Int) -> Float {
        let signless = SIMD4<UInt32>(repeating: 0x7FFF_FFFF)
        var m0 = SIMD4<Float>(), m1 = SIMD4<Float>()
        let raw = UnsafeRawPointer(src)
        var i = 0
        while i &+ 8 <= count {
            let a = unsafeBitCast(unsafeBitCast(raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD4<Float>.self), to: SIMD4<UInt32>.self) & signless, to: SIMD4<Float>.self)
            let b = unsafeBitCast(unsafeBitCast(raw.loadUnaligned(fromByteOffset: i &* 4 &+ 16, as: SIMD4<Float>.self), to: SIMD4<UInt32>.self) & signless, to: SIMD4<Float>.self)
            m0.replace(with: a, where: a .> m0)
            m1.replace(with: b, where: b .> m1)
            i &+= 8
        }
        m0.replace(with: m1, where: m1 .> m0)
        var m = m0[0]
        if m0[1] > m { m = m0[1] }
        if m0[2] > m { m = m0[2] }
        if m0[3] > m { m = m0[3] }
        while i < count {
            let v = src[i] < 0 ? -src[i] : src[i]
            if v > m { m = v }
            i += 1
        }
        return m
    }
}

/// Decibel conversions. [any-thread]
public enum Decibels {
    /// Linear amplitude of `dB` (20·log10 scale); `-infinity` gives 0.
    @inlinable
    public static func toLinear(_ dB: Double) -> Double {
        dB == -.infinity ? 0 : _pow10(dB / 20)
    }

    /// `dB` of a linear amplitude; 0 gives `-infinity`.
    @inlinable
    public static func fromLinear(_ linear: Double) -> Double {
        linear <= 0 ? -.infinity : 20 * _log10(linear)
    }
}
