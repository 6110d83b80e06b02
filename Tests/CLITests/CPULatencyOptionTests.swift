import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph run --cpu-dma-latency µs`: a usage error out of range; where
/// the device cannot be written, a clear error before JACK.
final class CPULatencyOptionTests: XCTestCase {
    func testOutOfRangeIsAUsageError() throws {
        for value in ["-1", "2000000001"] {
            let run = try CLITests.agraph(arguments: ["run", OSCOptionTests.graph, "--cpu-dma-latency=\(value)"] + OSCOptionTests.noServer)
            XCTAssertEqual(run.status, 64, run.stderr)
            XCTAssertTrue(run.stderr.contains("--cpu-dma-latency must be from 0 to 2000000000 µs"), run.stderr)
        }
    }

    /// Held before JACK is reached: with the device writable the run gets
    /// as far as the (missing) server; without, it stops on the device.
    func testTheRequestIsTakenBeforeJACK() throws {
        let run = try CLITests.agraph(arguments: ["run", OSCOptionTests.graph, "--cpu-dma-latency", "0"] + OSCOptionTests.noServer)
        XCTAssertEqual(run.status, 1, run.stderr)
        if access("/dev/cpu_dma_latency", W_OK) == 0 {
            XCTAssertTrue(run.stderr.contains("agraph-osc-option-test-no-such-server"), run.stderr)
        } else {
            XCTAssertTrue(run.stderr.contains("cannot hold a CPU wake-up latency request: /dev/cpu_dma_latency"), run.stderr)
            XCTAssertFalse(run.stderr.contains("JACK"), "nothing touched JACK: \(run.stderr)")
        }
    }
}
