import Foundation
import TestSupport
import XCTest

/// `agraph check-plugin lv2:URI`: an LV2 plugin through AudioGraph's host
/// at odd block sizes and parameter extremes, allocations counted: a
/// plugin from Debian passes; a fixture that allocates in its `run` is
/// named, not the host.
final class CheckPluginLV2Tests: XCTestCase {
    func agraph(_ args: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let agraph = locateAgraph().path else { throw XCTSkip("agraph is not built next to the tests") }
        let r = try runTool(agraph, args, environment: environment)
        return (r.status, r.stdout, r.stderr)
    }

    /// `agraph nodes lv2` lists installed plugins with their ports;
    /// `agraph nodes lv2:URI` describes one like any node type; an unknown
    /// URI names LV2_PATH.
    func testNodesListsAndDescribesLV2Plugins() throws {
        let amp = "http://plugin.org.uk/swh-plugins/amp"
        let listed = try agraph(["nodes", "lv2"])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        try XCTSkipUnless(listed.stdout.contains(amp), "swh-lv2 is not installed")
        XCTAssertTrue(listed.stdout.contains("Simple amplifier <\(amp)>\n      audio 1 in, 1 out; 1 parameter, 0 readings"), listed.stdout)
        let one = try agraph(["nodes", "lv2:" + amp])
        XCTAssertEqual(one.status, 0, one.stderr)
        XCTAssertTrue(one.stdout.contains("gain: number, -70…70, default 0, live"), one.stdout)
        XCTAssertTrue(one.stdout.contains("audio inputs (in): input (Input)"), one.stdout)
        let unknown = try agraph(["nodes", "lv2:http://plugin.org.uk/swh-plugins/ampp"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("LV2_PATH=") && unknown.stderr.contains("did you mean \"\(amp)\""), unknown.stderr)
    }

    func testAPluginFromDebianPasses() throws {
        let amp = "http://plugin.org.uk/swh-plugins/amp"
        let listed = try agraph(["nodes", "lv2"])
        try XCTSkipUnless(listed.stdout.contains(amp), "swh-lv2 is not installed")
        let run = try agraph(["check-plugin", "lv2:" + amp])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("ran 3 settings × 4 block sizes"), run.stdout)
        XCTAssertTrue(run.stdout.contains("no allocation in 12 counted renders") || run.stdout.contains("not counted"), run.stdout)
    }

    func testAPluginThatAllocatesInRunIsNamed() throws {
        guard let agraphPath = locateAgraph().path else { throw XCTSkip("agraph is not built next to the tests") }
        let library = (agraphPath as NSString).deletingLastPathComponent + "/libLV2TestAllocating.so"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: library), "the LV2 fixture is not built; build with --build-tests")
        let dir = try TemporaryDirectory()
        let bundle = dir.file("allocating.lv2")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        try """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix doap: <http://usefulinc.com/ns/doap#> .
            <urn:audiograph:test:allocating> a lv2:Plugin ; lv2:binary <file://\(library)> ;
                doap:name "Allocating fixture" ;
                lv2:port [ a lv2:AudioPort , lv2:InputPort ; lv2:index 0 ; lv2:symbol "in" ; lv2:name "In" ] ,
                         [ a lv2:AudioPort , lv2:OutputPort ; lv2:index 1 ; lv2:symbol "out" ; lv2:name "Out" ] .
            """.write(toFile: bundle + "/manifest.ttl", atomically: true, encoding: .utf8)
        let run = try agraph(["check-plugin", "lv2:urn:audiograph:test:allocating"], environment: ["LV2_PATH": dir.path])
        XCTAssertEqual(run.status, 1, run.stdout + run.stderr)
        guard !run.stdout.contains("not counted") else { return }
        XCTAssertTrue(run.stderr.contains("FAIL: the plugin Allocating fixture <urn:audiograph:test:allocating> allocates in its run (not AudioGraph"), run.stderr)
        XCTAssertTrue(run.stderr.contains("at block size 4099"), run.stderr)
        XCTAssertFalse(run.stderr.contains("AudioGraph's apply allocated"), run.stderr)
    }
}
