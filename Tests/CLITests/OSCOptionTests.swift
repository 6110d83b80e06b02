import Foundation
import TestSupport
import XCTest

/// `agraph run --osc`'s options, checked before anything touches JACK: a
/// usage error, a port in use, an address that does not resolve.
final class OSCOptionTests: XCTestCase {
    static let graph = "Graphs/demo-live.json"
    /// A server name nobody runs: reaching JACK at all would fail with a JACK error.
    static let noServer = ["--server", "external", "--server-name", "agraph-osc-option-test-no-such-server"]

    func testUsageErrors() throws {
        let hostAlone = try CLITests.agraph(arguments: ["run", Self.graph, "--osc-host", "0.0.0.0"] + Self.noServer)
        XCTAssertEqual(hostAlone.status, 64, hostAlone.stderr)
        XCTAssertTrue(hostAlone.stderr.contains("--osc-host needs --osc PORT"), hostAlone.stderr)
        let port = try CLITests.agraph(arguments: ["run", Self.graph, "--osc", "70000"] + Self.noServer)
        XCTAssertEqual(port.status, 64, port.stderr)
        XCTAssertTrue(port.stderr.contains("--osc must be a UDP port from 0 to 65535"), port.stderr)
    }

    /// A port in use fails the run before the graph starts (the JACK server
    /// named does not exist: reaching it would be another error).
    func testAPortInUseIsReportedBeforeJACK() throws {
        let holder = try OSCTestClient()
        let run = try CLITests.agraph(arguments: ["run", Self.graph, "--osc", String(holder.port)] + Self.noServer)
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssertTrue(run.stderr.contains("agraph: --osc: cannot listen on UDP port \(holder.port) of 127.0.0.1: 127.0.0.1: Address already in use"),
                      run.stderr)
        XCTAssertFalse(run.stderr.contains("JACK"), "nothing touched JACK: \(run.stderr)")

        let host = try CLITests.agraph(arguments: ["run", Self.graph, "--osc", "0", "--osc-host", "no-such-host.invalid"] + Self.noServer)
        XCTAssertEqual(host.status, 1, host.stderr)
        XCTAssertTrue(host.stderr.contains("agraph: --osc: cannot resolve 'no-such-host.invalid'"), host.stderr)
        XCTAssertFalse(host.stderr.contains("JACK"), host.stderr)
    }
}
