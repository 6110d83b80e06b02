import AudioGraphCore

/// Pearson's correlation coefficient of two channels, accumulated block by
/// block in double precision:
/// r = (n Σxy − Σx Σy) / √((n Σx² − (Σx)²) (n Σy² − (Σy)²)).
/// 1: the same signal (up to a positive gain), −1: inverted, about 0:
/// unrelated. [any-thread; one thread at a time]
public struct PearsonCorrelation: Sendable {
    public private(set) var count = 0
    private var sx = 0.0, sy = 0.0, sxx = 0.0, syy = 0.0, sxy = 0.0

    public init() {}

    /// Adds `frames` frames of channels `x` and `y` of an interleaved block
    /// of `stride` channels.
    public mutating func add(interleaved src: UnsafePointer<Float>, stride: Int, x: Int, y: Int, frames: Int) {
        var p = src
        var a = 0.0, b = 0.0, aa = 0.0, bb = 0.0, ab = 0.0
        for _ in 0..<frames {
            let u = Double(p[x]), v = Double(p[y])
            a += u; b += v
            aa += u * u; bb += v * v; ab += u * v
            p += stride
        }
        sx += a; sy += b; sxx += aa; syy += bb; sxy += ab
        count += frames
    }

    /// The coefficient; nil when either channel is constant (silence)
    /// or nothing was added.
    public var coefficient: Double? {
        let n = Double(count)
        let vx = n * sxx - sx * sx, vy = n * syy - sy * sy
        guard count > 1, vx > 0, vy > 0 else { return nil }
        return max(-1, min(1, (n * sxy - sx * sy) / (vx * vy).squareRoot()))
    }
}

/// Which channel pairs of a layout are compared for inter-channel
/// correlation: the left/right pairs the layout defines (L/R; for 5.1 also
/// Ls/Rs; for 7.1 also Lb/Rb); for `discrete` with two or more channels,
/// channel 1 against channel 2 (0 and 1 counting from 0); none for mono.
public enum ChannelPairs {
    /// [any-thread]
    public static func pairs(layout: ChannelLayout, channels: Int) -> [(Int, Int)] {
        switch (layout, channels) {
        case (.stereo, 2), (.binaural, 2): return [(0, 1)]
        case (.surround51, 6): return [(0, 1), (4, 5)]
        case (.surround71, 8): return [(0, 1), (4, 5), (6, 7)]
        case (.mono, _): return []
        default: return channels >= 2 ? [(0, 1)] : []
        }
    }
}
