import XCTest
import AudioGraphCore
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `CPULatencyRequest` on ordinary files (what it writes, when it lets go,
/// what it says when it cannot); the device itself is tested live
/// (`LiveHostTests.testACPUWakeUpLatencyRequestIsInForceWhileTheGraphPlays`).
final class CPULatencyRequestTests: XCTestCase {
    func testWritesTheBoundAsFourNativeBytesAndHoldsTheFileUntilReleased() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("qos")
        FileManager.default.createFile(atPath: path, contents: nil)
        let openBefore = try openDescriptors()
        let request = try CPULatencyRequest(microseconds: 75, path: path)
        XCTAssertTrue(request.isHeld)
        XCTAssertEqual(request.microseconds, 75)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        XCTAssertEqual(bytes.count, 4)
        XCTAssertEqual(bytes.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }, 75)
        XCTAssertEqual(CPULatencyRequest.current(path: path), 75, "read back as the device reads")
        XCTAssertEqual(try openDescriptors(), openBefore + 1, "the request is an open file")
        request.release()
        XCTAssertFalse(request.isHeld)
        XCTAssertEqual(try openDescriptors(), openBefore, "released: closed")
        request.release()
        XCTAssertEqual(try openDescriptors(), openBefore, "a second release does nothing")
    }

    func testDroppingTheRequestReleasesIt() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("qos")
        FileManager.default.createFile(atPath: path, contents: nil)
        let openBefore = try openDescriptors()
        do {
            let request = try CPULatencyRequest(microseconds: 0, path: path)
            XCTAssertEqual(try openDescriptors(), openBefore + 1)
            withExtendedLifetime(request) {}
        }
        XCTAssertEqual(try openDescriptors(), openBefore)
    }

    func testOutOfRangeAndUnopenableRequestsSayWhy() throws {
        XCTAssertThrowsError(try CPULatencyRequest(microseconds: -1, path: "/dev/null")) { error in
            XCTAssertTrue("\(error)".contains("give 0 to 2000000000 µs"), "\(error)")
        }
        XCTAssertThrowsError(try CPULatencyRequest(microseconds: 2_000_000_001, path: "/dev/null"))
        let missing = "/nonexistent-agraph-folder/cpu_dma_latency"
        XCTAssertThrowsError(try CPULatencyRequest(microseconds: 0, path: missing)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("cannot hold a CPU wake-up latency request: \(missing): No such file or directory"), text)
        }
        XCTAssertNil(CPULatencyRequest.current(path: missing))
    }

    /// The process's open file descriptors.
    private func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }
}
