// libFuzzer target: SOFA loading, as the `binaural` node opens a set:
// `HRTFSet(path:sampleRate:)` (libmysofa's load, check and lookup, then
// the limits of `HRTFLimits`, the front's resampling and normalisation) on
// the bytes written to a scratch file, at 48 kHz; a set that opens is
// asked for a few directions, nearest and interpolated. Any input must
// open or give an error: no crash, no hang, and no work beyond what the
// limits allow (docs/binaural.md). See Fuzz/README.md.

import AudioGraphBinaural
import CMySOFA
import Foundation
import FuzzSupport
#if canImport(Glibc)
import Glibc
#endif

/// Whether libmysofa's own reader finishes `path` within 2 s, tried in a
/// child process (killed by SIGALRM when it does not). libmysofa 1.3.1
/// loops once per element an attribute's dataspace declares, reading the
/// global heap each time (a 72 KB file declaring 0x20000001 elements keeps
/// `mysofa_load` busy for minutes; `agraph validate` honours SIGTERM
/// meanwhile). That is libmysofa's defect, reported in docs/reliability.md;
/// such inputs are skipped here, so that this target's runs look for
/// faults in what AudioGraph does with what libmysofa reads.
/// [main-thread]
func libmysofaFinishes(_ path: String) -> Bool {
    let child = fork()
    if child == 0 {
        signal(SIGALRM, SIG_DFL)
        alarm(2)
        var err: Int32 = 0
        if let h = mysofa_load(path, &err) { mysofa_free(h) }
        _exit(0)
    }
    guard child > 0 else { return true }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    return !(status & 0x7f == SIGALRM)
}

let inputPath = (fuzzScratchFolder ?? NSTemporaryDirectory()) + "/input.sofa"

enum Target: FuzzTarget {
    /// One input. [main-thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard FileManager.default.createFile(atPath: inputPath, contents: Data(buffer: bytes)) else { return }
        guard libmysofaFinishes(inputPath) else { return }
        let set: HRTFSet
        do { set = try HRTFSet(path: inputPath, sampleRate: 48000) } catch { _ = error.description; return }
        precondition(set.filterLength > 0 && set.filterLength <= HRTFLimits.maximumTaps, "filter length \(set.filterLength)")
        precondition(set.gain.isFinite && set.gain > 0, "gain \(set.gain)")
        let n = set.filterLength
        let left = UnsafeMutablePointer<Float>.allocate(capacity: n), right = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { left.deallocate(); right.deallocate() }
        for (azimuth, elevation) in [(0.0, 0.0), (90.0, 30.0), (-135.0, -40.0)] {
            for interpolate in [false, true] {
                let r = set.filter(azimuth: azimuth, elevation: elevation, interpolate: interpolate, left: left, right: right)
                precondition(r.left >= 0 && r.left <= set.maximumDelay && r.right >= 0 && r.right <= set.maximumDelay,
                             "delays \(r.left), \(r.right) outside 0...\(set.maximumDelay)")
            }
        }
        _ = set.filters(for: [(azimuth: 30, elevation: 0), (azimuth: -30, elevation: 0)], interpolate: true)
    }
}
