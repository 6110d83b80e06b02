import AudioGraphCore
import AudioGraphNodeAPI
import Synchronization

/// `meter`: passes its input through and measures, per channel, the
/// sample peak, RMS and true peak over windows of `window` ms.
public struct MeterType: NodeType {
    public init() {}

    /// The readings `get NODE.NAME` shows (loudest channel), with units;
    /// `NAME[i]` reads channel `i`.
    public static let readings: [(name: String, unit: String)] = [
        ("peak", "dBFS"), ("rms", "dBFS"), ("truePeak", "dBTP"), ("maxPeak", "dBFS"), ("maxTruePeak", "dBTP"),
    ]

    public let descriptor = NodeDescriptor(
        typeID: "meter", role: .processor,
        summary: "Passes its input through and measures each channel over windows of `window` ms: sample peak, RMS and true peak (ITU-R BS.1770-4, 4× oversampled), and the highest peaks since the start. Read with `get NODE.peak` (rms, truePeak, maxPeak, maxTruePeak; loudest channel, or `peak[i]` for channel i); shown in `agraph run`'s status line; RunningGraph publishes a `.meter` event per window.",
        inputs: .single,
        parameters: [
            .init("window", .number, range: 10...10_000, default: .number(300), unit: "ms",
                  "The metering window: peaks and RMS are taken over it, and published when it ends."),
        ])

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let input = c.input else { return nil }
        if input.encoding != .pcm {
            c.error(input: 0, "meter takes PCM audio; this input is \(input)")
            return nil
        }
        return input
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let channels = c.inputFormats.first?.channels else { throw EngineError(nodeID: c.nodeID, "no input") }
        let frames = max(Int((c.parameters.number("window") ?? 300) * c.sampleRate / 1000), 1)
        return MeterNode(nodeID: c.nodeID, channels: channels, windowFrames: frames)
    }
}

/// The runtime `meter`. The audio thread accumulates each window and, when
/// it ends, publishes the channel levels through atomics (Float bits) and
/// then bumps the window count; readers read the count, the levels, and
/// the count again, and retry when it moved (the levels of one window,
/// never a mix of two).
public final class MeterNode: RenderNode, MeasuringNode, MeterReporting, @unchecked Sendable {
    struct Wiring {
        var input: AudioBus?
        var output: AudioBus?
        var framesInWindow = 0
    }

    public let nodeID: String
    public let channels: Int
    /// Frames per window.
    public let windowFrames: Int
    let wiring: UnsafeMutablePointer<Wiring>
    let truePeak: TruePeakMeter
    /// Running values of the window: peak, true peak, sum of squares.
    let peaks: UnsafeMutablePointer<Float>
    let truePeaks: UnsafeMutablePointer<Float>
    let squares: UnsafeMutablePointer<Double>
    /// Published per channel: peak, rms, true peak (Float bits), 3 per channel.
    let published: UnsafeMutablePointer<Atomic<UInt32>>
    /// Highest peak and true peak since the start (Float bits).
    let maxima: UnsafeMutablePointer<Atomic<UInt32>>
    let windows = Atomic<Int>(0)

    init(nodeID: String, channels: Int, windowFrames: Int) {
        self.nodeID = nodeID
        self.channels = max(channels, 1)
        self.windowFrames = windowFrames
        wiring = .allocate(capacity: 1)
        wiring.initialize(to: Wiring())
        truePeak = TruePeakMeter(channels: self.channels)
        peaks = .allocate(capacity: self.channels)
        peaks.initialize(repeating: 0, count: self.channels)
        truePeaks = .allocate(capacity: self.channels)
        truePeaks.initialize(repeating: 0, count: self.channels)
        squares = .allocate(capacity: self.channels)
        squares.initialize(repeating: 0, count: self.channels)
        published = .allocate(capacity: 3 * self.channels)
        for i in 0..<(3 * self.channels) { (published + i).initialize(to: Atomic(0)) }
        maxima = .allocate(capacity: 2)
        maxima.initialize(to: Atomic(0))
        (maxima + 1).initialize(to: Atomic(0))
    }

    deinit {
        wiring.deinitialize(count: 1)
        wiring.deallocate()
        peaks.deallocate()
        truePeaks.deallocate()
        squares.deallocate()
        published.deinitialize(count: 3 * channels)
        published.deallocate()
        maxima.deinitialize(count: 2)
        maxima.deallocate()
    }

    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        wiring.pointee.input = inputs.first
        wiring.pointee.output = output
    }

    public func render(frames n: Int) {
        guard let input = wiring.pointee.input, let output = wiring.pointee.output else { return }
        var c = 0
        while c < channels {
            Kernels.copy(input.channel(c), to: output.channel(c), count: n)
            c += 1
        }
        output.state = input.state
        // Measure in pieces that end where windows end.
        var done = 0
        while done < n {
            let inWindow = wiring.pointee.framesInWindow
            let m = min(windowFrames - inWindow, n - done)
            c = 0
            while c < channels {
                let src = UnsafePointer(input.channel(c) + done)
                let p = Kernels.peak(src, count: m)
                if p > peaks[c] { peaks[c] = p }
                let t = truePeak.blockPeak(channel: c, src, count: m)
                if t > truePeaks[c] { truePeaks[c] = t }
                squares[c] += Self.sumOfSquares(src, count: m)
                c += 1
            }
            done += m
            if inWindow + m >= windowFrames {
                publish()
                wiring.pointee.framesInWindow = 0
            } else {
                wiring.pointee.framesInWindow = inWindow + m
            }
        }
    }

    /// Publishes the window that just ended and starts the next. [audio-thread]
    private func publish() {
        var highPeak: Float = 0, highTrue: Float = 0
        var c = 0
        while c < channels {
            let rms = Float((squares[c] / Double(windowFrames)).squareRoot())
            // The true peak is never below the sample peak (the interpolator
            // runs 6 samples late; a peak in a window's last samples counts
            // at once).
            let tp = truePeaks[c] > peaks[c] ? truePeaks[c] : peaks[c]
            published[3 * c].store(peaks[c].bitPattern, ordering: .relaxed)
            published[3 * c + 1].store(rms.bitPattern, ordering: .relaxed)
            published[3 * c + 2].store(tp.bitPattern, ordering: .relaxed)
            if peaks[c] > highPeak { highPeak = peaks[c] }
            if tp > highTrue { highTrue = tp }
            peaks[c] = 0
            truePeaks[c] = 0
            squares[c] = 0
            c += 1
        }
        if highPeak > Float(bitPattern: maxima[0].load(ordering: .relaxed)) {
            maxima[0].store(highPeak.bitPattern, ordering: .relaxed)
        }
        if highTrue > Float(bitPattern: maxima[1].load(ordering: .relaxed)) {
            maxima[1].store(highTrue.bitPattern, ordering: .relaxed)
        }
        windows.add(1, ordering: .releasing)
    }

    /// `Σ src[i]²` in Double. [audio-thread]
    @_noLocks
    static func sumOfSquares(_ src: UnsafePointer<Float>, count: Int) -> Double {
        var s = 0.0
        var i = 0
        while i < count {
            let x = Double(src[i])
            s += x * x
            i += 1
        }
        return s
    }

    // MARK: readings

    /// Windows completed so far. [any-thread]
    public var windowCount: Int { windows.load(ordering: .acquiring) }

    /// The last complete window's levels and the maxima since the start.
    /// [main-thread | control-thread; the owner thread polls it for events]
    public func reading() -> MeterReading {
        ThreadRole.check(.main, .control)
        while true {
            let before = windows.load(ordering: .acquiring)
            var levels: [MeterLevels] = []
            levels.reserveCapacity(channels)
            for c in 0..<channels {
                levels.append(MeterLevels(peakDBFS: Self.dB(published[3 * c].load(ordering: .relaxed)),
                                          rmsDBFS: Self.dB(published[3 * c + 1].load(ordering: .relaxed)),
                                          truePeakDBTP: Self.dB(published[3 * c + 2].load(ordering: .relaxed))))
            }
            let maxPeak = Self.dB(maxima[0].load(ordering: .relaxed))
            let maxTrue = Self.dB(maxima[1].load(ordering: .relaxed))
            if windows.load(ordering: .acquiring) == before {
                if before == 0 {
                    let none = MeterLevels(peakDBFS: -.infinity, rmsDBFS: -.infinity, truePeakDBTP: -.infinity)
                    return MeterReading(node: nodeID, window: 0, channels: Array(repeating: none, count: channels),
                                        maxPeakDBFS: -.infinity, maxTruePeakDBTP: -.infinity)
                }
                return MeterReading(node: nodeID, window: before, channels: levels,
                                    maxPeakDBFS: maxPeak, maxTruePeakDBTP: maxTrue)
            }
        }
    }

    static func dB(_ bits: UInt32) -> Double { Decibels.fromLinear(Double(Float(bitPattern: bits))) }

    public var readingNames: [(name: String, unit: String)] { MeterType.readings }

    /// `peak`, `rms`, `truePeak` (loudest channel of the last window),
    /// `maxPeak`, `maxTruePeak` (since the start); `peak[i]`, `rms[i]`,
    /// `truePeak[i]` for channel `i`. [control-thread]
    public func reading(_ name: String) -> Double? {
        ThreadRole.check(.control)
        var base = Substring(name)
        var channel: Int?
        if name.hasSuffix("]"), let open = name.firstIndex(of: "[") {
            guard let i = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]), i >= 0, i < channels else {
                return nil
            }
            channel = i
            base = name[..<open]
        }
        let r = reading()
        let pick: (MeterLevels) -> Double
        switch base {
        case "peak": pick = \.peakDBFS
        case "rms": pick = \.rmsDBFS
        case "truePeak": pick = \.truePeakDBTP
        case "maxPeak" where channel == nil: return r.maxPeakDBFS
        case "maxTruePeak" where channel == nil: return r.maxTruePeakDBTP
        default: return nil
        }
        if let channel { return pick(r.channels[channel]) }
        return r.channels.map(pick).max() ?? -.infinity
    }
}
