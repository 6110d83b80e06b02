@testable import AudioGraphBinaural
import Foundation
import TestSupport
import XCTest

/// `SOFACheck`: libmysofa's reading tried in `agraph-sofa-check` first.
final class SOFACheckTests: XCTestCase {
    /// The checker is found beside the test runner (where SwiftPM builds
    /// it), so the tests exercise it; it reads a real set, and names
    /// libmysofa's reason for what it cannot read.
    func testTheCheckerIsFoundAndReadsARealSet() throws {
        let checker = try XCTUnwrap(SOFACheck.executable, "agraph-sofa-check beside the test runner")
        XCTAssertTrue(checker.hasSuffix("/agraph-sofa-check"), checker)
        XCTAssertNil(SOFACheck.problem(path: TestMedia.path("sphere-head-delays.sofa")))
        let dir = try TemporaryDirectory("agraph-sofa-check")
        let text = dir.file("text.sofa")
        try "not HDF5".write(toFile: text, atomically: true, encoding: .utf8)
        XCTAssertEqual(SOFACheck.problem(path: text), "libmysofa: not a SOFA file it can read (MYSOFA_INVALID_FORMAT)")
        XCTAssertEqual(SOFACheck.problem(path: dir.file("missing.sofa")), "libmysofa: " + HRTFSet.describe(ENOENT))
    }

    /// What the check adds to opening the default set: measured, printed.
    func testTheCheckCostOnTheDefaultSet() throws {
        let path = HRTFSets.defaultPath
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("no \(path)") }
        var best = Double.infinity
        for _ in 0..<3 {
            let t = Date()
            XCTAssertNil(SOFACheck.problem(path: path))
            best = min(best, Date().timeIntervalSince(t))
        }
        print("SOFACheck of \(path): \(Int(best * 1000)) ms (best of 3)")
    }
}
