import AudioGraphCore
import CAVUtil

/// A real-to-complex DFT of `length` samples (or its inverse), FFmpeg's
/// av_tx (`AV_TX_FLOAT_RDFT`).
///
/// Forward: `length` real samples in, `length / 2 + 1` complex values out,
/// interleaved (re, im), e^(−2πi kn/N), unscaled. Inverse: those values in,
/// `length` real samples out, unscaled (N times the true inverse), and the
/// input is overwritten. Buffers come from `AlignedFloats` (av_tx wants
/// them aligned for the CPU's widest vectors).
///
/// Threading: a context serves one thread at a time ([main-thread] to
/// make, then the thread that owns it); `run` neither allocates nor locks
/// ([audio-thread] allowed).
final class RealDFT {
    let length: Int
    private var context: OpaquePointer?
    private let transform: av_tx_fn
    private let inverse: Bool

    /// [main-thread]
    /// - Throws: `DFTError` when av_tx has no such transform.
    init(length: Int, inverse: Bool) throws(DFTError) {
        self.length = length
        self.inverse = inverse
        // libavutil is loaded the first time something needs it (CLazyLibs).
        if let missing = LazyLibrary.require(.avutil, for: "the `binaural` node's FFT") {
            throw DFTError(length: length, code: -1, missing: missing)
        }
        var ctx: OpaquePointer?
        var fn: av_tx_fn?
        var scale: Float = 1
        let rc = av_tx_init(&ctx, &fn, AV_TX_FLOAT_RDFT, inverse ? 1 : 0, Int32(length), &scale, 0)
        guard rc >= 0, let ctx, let fn else { throw DFTError(length: length, code: rc) }
        context = ctx
        transform = fn
    }

    deinit { av_tx_uninit(&context) }

    /// Forward: `input` (length reals) → `output` (length + 2 floats).
    /// Inverse: `input` (length + 2 floats, overwritten) → `output`
    /// (length reals). [any-thread; the object's owning thread]
    @inline(__always)
    func run(_ input: UnsafeMutablePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        transform(context, output, input, inverse ? 2 * MemoryLayout<Float>.size : MemoryLayout<Float>.size)
    }
}

/// av_tx refused a transform.
struct DFTError: Error, CustomStringConvertible {
    var length: Int
    var code: Int32
    var missing: String? = nil
    var description: String { missing ?? "libavutil's av_tx has no real DFT of \(length) points (error \(code))" }
}

/// Float buffers aligned for av_tx (64 bytes: the widest vectors it
/// uses), zeroed. Owned by whoever made them; freed with `free()`.
/// [main-thread; make and free]
enum AlignedFloats {
    static func make(_ count: Int) -> UnsafeMutablePointer<Float> {
        let n = max(count, 1)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: n * MemoryLayout<Float>.size, alignment: 64)
        raw.initializeMemory(as: Float.self, repeating: 0, count: n)
        return raw.assumingMemoryBound(to: Float.self)
    }

    static func free(_ p: UnsafeMutablePointer<Float>) { UnsafeMutableRawPointer(p).deallocate() }
}
