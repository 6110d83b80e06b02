import XCTest
import AudioGraphCore

/// Kernels with more than one code path (vector lanes and a scalar tail),
/// checked against the plain definition.
final class KernelTests: XCTestCase {
    /// `peak`: the largest |x| at every length and alignment around the
    /// eight-lane step, with the largest value in each lane and the tail;
    /// -0 is 0; NaNs are passed over as a scalar `>` would.
    func testPeakIsTheLargestMagnitudeInEveryLaneAndTheTail() {
        var g = SystemRandomNumberGenerator()
        let storage = UnsafeMutablePointer<Float>.allocate(capacity: 300)
        defer { storage.deallocate() }
        for offset in 0..<3 {
            let src = storage + offset
            for count in [0, 1, 7, 8, 9, 15, 16, 17, 128, 131, 257] {
                for where_ in Set([0, count / 2, count - 1].filter { $0 >= 0 && $0 < count }) {
                    for i in 0..<count { src[i] = Float.random(in: -0.5...0.5, using: &g) }
                    src[where_] = where_ % 2 == 0 ? -0.9 : 0.9
                    XCTAssertEqual(Kernels.peak(src, count: count), 0.9, "count \(count), largest at \(where_), offset \(offset)")
                }
                if count == 0 { XCTAssertEqual(Kernels.peak(src, count: 0), 0) }
            }
        }
        let special: [Float] = [-0.0, .nan, -0.25, 0.125, -.nan, 0.0, 0.1, -0.2, .nan, -0.3]
        special.withUnsafeBufferPointer { XCTAssertEqual(Kernels.peak($0.baseAddress!, count: $0.count), 0.3) }
        let zeros = [Float](repeating: -0.0, count: 20)
        zeros.withUnsafeBufferPointer {
            let p = Kernels.peak($0.baseAddress!, count: $0.count)
            XCTAssertEqual(p, 0)
            XCTAssertEqual(p.sign, .plus)
        }
    }
}
