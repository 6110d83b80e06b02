import AudioGraphCore
import CFFmpeg

/// Why an analysis could not be set up or run.
public struct AnalysisError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A forward real-to-complex DFT of one power-of-two size, over libavutil's
/// `av_tx` (`AV_TX_FLOAT_RDFT`, with its SIMD code paths).
///
/// The caller writes `size` samples into `input` and calls `forward()`;
/// `output` then holds `size / 2 + 1` complex bins, real and imaginary
/// parts interleaved, not normalised (X_k = Σ x_n e^(−2πikn/N)). Both
/// buffers are 64-byte aligned, as `av_tx` wants.
///
/// Threading: one thread at a time (the context holds scratch memory).
/// `init` allocates; `forward` does not. [any-thread; one at a time]
public final class RealFFT: @unchecked Sendable {
    public let size: Int
    /// `size` floats.
    public let input: UnsafeMutablePointer<Float>
    /// `size / 2 + 1` complex values: `2 * (size / 2 + 1)` floats.
    public let output: UnsafeMutablePointer<Float>
    private var context: OpaquePointer?
    private let transform: av_tx_fn

    /// - Throws: `AnalysisError` when `size` is not a power of two from 16
    ///   to 2^20, or libavutil refuses the transform.
    public init(size: Int) throws(AnalysisError) {
        guard size >= 16, size <= 1 << 20, size & (size - 1) == 0 else {
            throw AnalysisError("FFT size \(size) is not a power of two from 16 to 1048576")
        }
        self.size = size
        // libavutil is loaded the first time something needs it (CLazyLibs).
        if let missing = LazyLibrary.require(.avutil, for: "the FFT") { throw AnalysisError(missing) }
        var scale: Float = 1
        var ctx: OpaquePointer?
        var fn: av_tx_fn?
        let rc = av_tx_init(&ctx, &fn, AV_TX_FLOAT_RDFT, 0, Int32(size), &scale, 0)
        guard rc >= 0, let ctx, let fn else {
            throw AnalysisError("libavutil could not set up a real FFT of size \(size) (av_tx_init: \(rc))")
        }
        context = ctx
        transform = fn
        input = UnsafeMutableRawPointer.allocate(byteCount: size * 4, alignment: 64).bindMemory(to: Float.self, capacity: size)
        input.initialize(repeating: 0, count: size)
        let bins = 2 * (size / 2 + 1)
        output = UnsafeMutableRawPointer.allocate(byteCount: bins * 4, alignment: 64).bindMemory(to: Float.self, capacity: bins)
        output.initialize(repeating: 0, count: bins)
    }

    deinit {
        av_tx_uninit(&context)
        UnsafeMutableRawPointer(input).deallocate()
        UnsafeMutableRawPointer(output).deallocate()
    }

    /// Transforms `input` into `output` (`input` is left as it was).
    /// [any-thread; the object's owning thread]
    public func forward() {
        transform(context, output, input, MemoryLayout<Float>.stride)
    }
}
