import Foundation
import TestSupport
import XCTest

/// `agraph check-plugin LIB` as a plugin author runs it: it passes on every
/// plugin in the repository and fails, with the reason, on the ABI-mismatch
/// fixture and on a fixture that allocates in `process`.
final class CheckPluginTests: XCTestCase {
    struct Run { var status: Int32; var stdout: String; var stderr: String }

    /// The folder holding agraph and the built plugin products.
    func buildFolder() throws -> String {
        guard let agraph = locateAgraph().path else { throw XCTSkip("agraph is not built next to the tests") }
        return (agraph as NSString).deletingLastPathComponent
    }

    func checkPlugin(_ library: String, environment: [String: String] = [:]) throws -> Run {
        let folder = try buildFolder()
        let path = folder + "/" + library
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(library) is not built; build with --build-tests") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: folder + "/agraph")
        process.arguments = ["check-plugin", path]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit, "check-plugin crashed on \(library)")
        return Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                   stderr: String(decoding: stderr, as: UTF8.self))
    }

    func testTheExamplePluginPasses() throws {
        let run = try checkPlugin("libAGraphExamplePlugin.so")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("com.example.ring-modulator (realtime): 5 of 5 parameter sets walked"), run.stdout)
        XCTAssertTrue(run.stdout.contains("block sizes 1, 7, 128, 4099"), run.stdout)
        XCTAssertTrue(run.stdout.hasSuffix("check-plugin: passed\n"), run.stdout)
    }

    /// The renderer plugin: a virtualizing type whose output is
    /// named binaural, so no note either.
    func testTheCrossfeedRendererPluginPasses() throws {
        let run = try checkPlugin("libAGraphCrossfeedPlugin.so")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("AudioGraph crossfeed renderer 1.0.0 (AudioGraph), ABI 2.0, 1 node type"), run.stdout)
        XCTAssertTrue(run.stdout.contains("com.example.crossfeed (realtime, virtualizes): 8 of 8 parameter sets walked"), run.stdout)
        XCTAssertFalse(run.stdout.contains("note:"), run.stdout)
        XCTAssertTrue(run.stdout.hasSuffix("check-plugin: passed\n"), run.stdout)
    }

    func testTheSwiftDecoderPluginPasses() throws {
        let run = try checkPlugin("libAGraphPCMFramesPlugin.so")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("com.audiograph.pcm-frames (decoder, pcm-frames): 6 of 6 parameter sets walked"), run.stdout)
        XCTAssertTrue(run.stdout.contains("deinit called"), run.stdout)
    }

    func testTheDAAPluginPassesWithTheTestDouble() throws {
        let folder = try buildFolder()
        let run = try checkPlugin("libAGraphDAAPlugin.so", environment: ["DAA_LIBRARY": folder + "/libTestDoubleDAA.so"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("daa (decoder, ac4-sync ac4-raw): 11 of 11 parameter sets walked"), run.stdout)
    }

    /// The fixture is built for ABI 1.4: refused, naming 1.4 and 2.0.
    func testTheABI14FixtureFailsNamingBothVersions() throws {
        let run = try checkPlugin("libAGraphTestAbiMismatchPlugin.so")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("FAIL: the library does not load: built for ABI 1.4; this agraph loads plugin ABI 2.0 (any 2.x): rebuild it against agraph_plugin.h 2.0"), run.stderr)
    }

    /// Every plugin shipped in the repository passes at ABI 2.0 (the
    /// FFmpeg decoder where it is built).
    func testEveryShippedPluginPassesAtABI20() throws {
        let folder = try buildFolder()
        for library in ["libAGraphExamplePlugin.so", "libAGraphCrossfeedPlugin.so", "libAGraphPCMFramesPlugin.so",
                        "libAGraphDAAPlugin.so", "libAGraphFFmpegPlugin.so"] {
            guard FileManager.default.fileExists(atPath: folder + "/" + library) else {
                XCTAssertEqual(library, "libAGraphFFmpegPlugin.so", "\(library) is not built")
                continue
            }
            let run = try checkPlugin(library, environment: ["DAA_LIBRARY": folder + "/libTestDoubleDAA.so"])
            XCTAssertEqual(run.status, 0, "\(library): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains(", ABI 2.0, "), "\(library): \(run.stdout)")
            XCTAssertTrue(run.stdout.hasSuffix("check-plugin: passed\n"), "\(library): \(run.stdout)")
        }
    }

    func testAPluginThatAllocatesInProcessFails() throws {
        let run = try checkPlugin("libAGraphTestAllocatingPlugin.so")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("FAIL: com.example.test.allocating-gain: (defaults) process allocated 16 times on the audio thread over 16 blocks (must be 0"), run.stderr)
        XCTAssertTrue(run.stderr.contains("check-plugin: 1 failure"), run.stderr)
    }
}
