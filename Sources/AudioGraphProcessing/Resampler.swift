import AudioGraphCore
import AudioGraphNodeAPI
import CSoxr

/// The resampling qualities of libsoxr, by the names a graph file uses.
/// They are SoX's five standard recipes (`sox … rate -q/-l/-m/-h/-v`).
public enum ResampleQuality: String, CaseIterable, Sendable {
    /// Cubic interpolation: cheap, audible aliasing.
    case quick
    /// 16-bit precision, larger roll-off.
    case low
    /// 16-bit precision, medium roll-off.
    case medium
    /// 20-bit precision (stopband about −125 dB), flat to 0.913 × Nyquist.
    case high
    /// 28-bit precision (stopband about −170 dB), flat to 0.913 × Nyquist.
    case veryHigh = "very-high"

    /// The names, in the order `agraph nodes` lists them.
    public static let names: [String] = allCases.map(\.rawValue)

    /// libsoxr's recipe (SOXR_QQ, SOXR_LQ, SOXR_MQ, SOXR_HQ = SOXR_20_BITQ,
    /// SOXR_VHQ = SOXR_28_BITQ).
    var recipe: UInt {
        switch self {
        case .quick: 0
        case .low: 1
        case .medium: 2
        case .high: 4
        case .veryHigh: 6
        }
    }
}

/// Why a resampler could not be made.
public struct ResamplerError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// One libsoxr stream resampler over interleaved Float32 frames.
///
/// libsoxr's output is time-aligned with its input: output frame `j`
/// stands at input time `j × inputRate / outputRate`, and after `flush` the
/// output holds exactly `round(inputFrames × outputRate / inputRate)`
/// frames. What is buffered inside (`delay`) comes out in bursts of its
/// internal block; a caller that needs a steady flow keeps its own FIFO
/// (see `ResampleNode`).
///
/// Realtime use: `process`, `drain` and `flush` are `soxr_process` on the
/// caller's buffers. libsoxr sizes its internal buffers on the first calls;
/// `warmUp` runs those calls on the main thread, after which the
/// allocation test counts zero allocations for any block size up to the
/// one warmed up. `reset` (`soxr_clear`) frees and reallocates: never on
/// the audio thread.
///
/// Threading: one thread at a time ([main-thread] to create, then the
/// audio thread or the worker that owns it).
public final class Resampler: @unchecked Sendable {
    public let inputRate: Double
    public let outputRate: Double
    public let channels: Int
    public let quality: ResampleQuality
    private let soxr: soxr_t

    /// Whether libsoxr can convert `from` → `to` Hz: nil when it can,
    /// else why not (libsoxr's own words). [any-thread]
    public static func problem(from: Double, to: Double, channels: Int = 1, quality: ResampleQuality = .high) -> String? {
        guard from.isFinite, to.isFinite, from > 0, to > 0 else { return "rates must be positive (got \(from) → \(to) Hz)" }
        do {
            _ = try Resampler(from: from, to: to, channels: channels, quality: quality)
            return nil
        } catch {
            return error.message
        }
    }

    /// [main-thread]
    public init(from inputRate: Double, to outputRate: Double, channels: Int, quality: ResampleQuality) throws(ResamplerError) {
        ThreadRole.check(.main)
        guard channels > 0 else { throw ResamplerError(message: "a resampler needs at least one channel") }
        var error: soxr_error_t?
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var q = soxr_quality_spec(quality.recipe, 0)
        // One thread: the resampler runs on the thread that calls it.
        var runtime = soxr_runtime_spec(1)
        guard let s = soxr_create(inputRate, outputRate, UInt32(channels), &error, &io, &q, &runtime), error == nil else {
            throw ResamplerError(message: "libsoxr cannot convert \(rateText(inputRate)) → \(rateText(outputRate)) Hz: "
                                 + (error.map { String(cString: $0) } ?? "unknown error"))
        }
        soxr = s
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.quality = quality
    }

    deinit { soxr_delete(soxr) }

    /// Output frames per input frame.
    public var ratio: Double { outputRate / inputRate }

    /// Frames buffered inside, in output frames. [any-thread; the object's owning thread]
    public var delay: Double { soxr_delay(soxr) }

    /// Feeds up to `frames` interleaved frames and writes at most
    /// `capacity` frames to `output`. Returns the frames consumed and
    /// produced; what does not fit stays buffered (take it with `drain`).
    /// [any-thread; the object's owning thread; audio-thread safe after `warmUp`]
    @inline(__always)
    public func process(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>,
                        capacity: Int) -> (consumed: Int, produced: Int) {
        var consumed = 0
        var produced = 0
        _ = soxr_process(soxr, input, frames, &consumed, output, capacity, &produced)
        return (consumed, produced)
    }

    /// Writes buffered output without feeding anything. [any-thread; the object's owning thread]
    @inline(__always)
    public func drain(into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        var none: Float = 0
        return process(&none, frames: 0, into: output, capacity: capacity).produced
    }

    /// The input has ended: writes what remains (call until it returns 0).
    /// After a flush the resampler takes no more input until `reset`.
    /// [any-thread; the object's owning thread]
    @inline(__always)
    public func flush(into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        var produced = 0
        _ = soxr_process(soxr, nil, 0, nil, output, capacity, &produced)
        return produced
    }

    /// Ready for a fresh stream (a seek). Frees and reallocates inside
    /// libsoxr. [main-thread | worker-thread]
    public func reset() {
        ThreadRole.check(.main, .worker)
        _ = soxr_clear(soxr)
    }
}

/// A rate written for people: 44100, or 22050.5.
func rateText(_ rate: Double) -> String {
    rate == rate.rounded() && abs(rate) < 1e15 ? String(Int(rate)) : String(rate)
}

/// How a stream at a rate below the graph's (a *rate island*) moves
/// through fixed blocks: in a block of `n` graph frames it carries the
/// frames that fall due in it, `floor((p + n) × rate / graphRate) −
/// floor(p × rate / graphRate)` for a block starting at graph frame `p`.
/// The island's frame `j` thus stands at graph time `j × graphRate / rate`,
/// and the count per block never exceeds the block. The producer of an
/// island (a `file` with `resample: "native"`, a `resample` node with a
/// lower `rate`) paces itself with one of these; a consumer simply takes
/// `validFrames`. [any-thread; the object's owning thread; no allocation]
public struct RatePacer: Sendable {
    public let rate: Int
    public let graphRate: Int
    /// Graph frames elapsed.
    public private(set) var position = 0

    public init(rate: Int, graphRate: Int) {
        self.rate = rate
        self.graphRate = max(graphRate, 1)
    }

    /// The island frames due in the next block of `frames` graph frames.
    @inline(__always)
    public mutating func next(_ frames: Int) -> Int {
        let before = position.multipliedFullWidth(by: rate)
        position += frames
        let after = position.multipliedFullWidth(by: rate)
        let a = graphRate.dividingFullWidth(before).quotient
        let b = graphRate.dividingFullWidth(after).quotient
        return b - a
    }
}

/// A node type that converts rates: what `agraph validate --verbose`
/// says about one of its nodes.
public protocol RateConversionReporting: NodeType {
    /// One line on the conversion this node does (rates, quality, where it
    /// runs), or nil when it converts nothing. [main-thread]
    func rateConversion(parameters: NodeParameters, inputFormats: [StreamFormat], outputFormats: [StreamFormat],
                        graphRate: Double, directory: String) -> String?
}
