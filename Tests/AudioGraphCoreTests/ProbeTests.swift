import XCTest
import TestSupport
final class ProbeTests: XCTestCase {
    func testCounter() {
        XCTAssertTrue(MallocCounter.isAvailable)
        let n = MallocCounter.count { let a = [Int](repeating: 1, count: 100); XCTAssertEqual(a.count, 100) }
        XCTAssertGreaterThan(n, 0)
        let z = MallocCounter.count { var x = 0; for i in 0..<100 { x &+= i }; XCTAssertEqual(x, 4950) }
        XCTAssertEqual(z, 0)
    }
}
