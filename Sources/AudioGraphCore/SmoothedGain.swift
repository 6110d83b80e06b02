/// A linear gain that moves to a new target in a straight ramp instead of a
/// jump, so a gain change makes no click.
///
/// [audio-thread; `setTarget` at block start, `apply`/`add` while rendering]
public struct SmoothedGain: Sendable {
    public private(set) var current: Float
    public private(set) var target: Float
    private var step: Float = 0
    private var remaining = 0
    /// Length of a ramp in frames.
    public let rampFrames: Int

    /// - Parameters:
    ///   - initial: linear gain.
    ///   - rampFrames: e.g. 20 ms worth of frames.
    public init(_ initial: Float, rampFrames: Int) {
        current = initial
        target = initial
        self.rampFrames = max(rampFrames, 1)
    }

    /// Starts a ramp from the current value to `value`.
    public mutating func setTarget(_ value: Float) {
        target = value
        remaining = rampFrames
        step = (value - current) / Float(rampFrames)
    }

    /// True while a ramp is running.
    public var isRamping: Bool { remaining > 0 }

    /// `dst = src * gain` for `count` frames, for each of `channels` channel
    /// pairs given by the closures' index; advances the ramp once.
    @inline(__always)
    public mutating func process(count: Int, channels: Int,
                                 _ body: (_ channel: Int, _ start: Int, _ length: Int, _ from: Float, _ step: Float) -> Void) {
        var offset = 0
        if remaining > 0 {
            let n = remaining < count ? remaining : count
            for c in 0..<channels { body(c, 0, n, current, step) }
            remaining -= n
            current = remaining == 0 ? target : current + step * Float(n)
            offset = n
        }
        if offset < count {
            for c in 0..<channels { body(c, offset, count - offset, current, 0) }
        }
    }
}
