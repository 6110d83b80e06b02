import Foundation
import TestSupport
import XCTest

/// Every command of the README's "Using it" block, as shown, in a fresh
/// clone of the repository with nothing beside it (issue 8, item 11).
final class ReadmeCommandsTests: XCTestCase {
    /// The lines of the first ```sh block after "## Using it", comments cut.
    static func usingItCommands() throws -> [String] {
        let readme = try String(contentsOfFile: TestMedia.packageRoot + "/README.md", encoding: .utf8)
        guard let section = readme.range(of: "## Using it"),
              let open = readme.range(of: "```sh\n", range: section.upperBound..<readme.endIndex),
              let close = readme.range(of: "```", range: open.upperBound..<readme.endIndex) else { return [] }
        return readme[open.upperBound..<close.lowerBound].split(separator: "\n").map { line in
            let text = line.range(of: "  #").map { String(line[..<$0.lowerBound]) } ?? String(line)
            return text.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
    }

    func testEveryUsingItCommandWorksInAFreshClone() throws {
        let agraph = try CLITests.agraphPath()
        let commands = try Self.usingItCommands()
        XCTAssertGreaterThan(commands.count, 8, "found the README's commands")
        let dir = try TemporaryDirectory("agraph-readme")
        let clone = dir.file("clone")
        XCTAssertEqual(try shell("git clone -q \(quoted(TestMedia.packageRoot)) \(quoted(clone))", in: dir.path).status, 0)
        let hasDot = try shell("command -v dot", in: dir.path).status == 0
        for command in commands {
            // The clone is not built: the test runs this build's agraph in its place.
            if command == "swift build" { continue }
            guard command.hasPrefix(".build/debug/agraph ") else { return XCTFail("a README command this test does not know: \(command)") }
            var line = quoted(agraph) + command.dropFirst(".build/debug/agraph".count)
            if line.contains("| dot "), !hasDot {
                // Graphviz is not installed: run agraph's part of the pipeline.
                line = String(line[..<(line.range(of: "| dot ")?.lowerBound ?? line.endIndex)])
            }
            let r = try shell(line + " < /dev/null", in: clone, timeout: 120)
            XCTAssertEqual(r.status, 0, "\(command)\n\(r.output)")
        }
        XCTAssertNotNil(try? readSoundFile(clone + "/sweep.flac"), "render -o wrote sweep.flac in the clone")
        XCTAssertTrue(FileManager.default.fileExists(atPath: clone + "/out"), "render created the graphs' out/ folder")
    }

    func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Runs `/bin/sh -c command` in `folder`; output is stdout and stderr.
    func shell(_ command: String, in folder: String, timeout: Double = 60) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        p.currentDirectoryURL = URL(fileURLWithPath: folder)
        // `agraph run` starts an embedded server when none runs: a name of
        // this test's own, so that no other server (a user's, another
        // test's) is joined or disturbed.
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_DEFAULT_SERVER"] = "agraph-readme-\(getpid())"
        p.environment = environment
        let log = folder + "/.readme-test-output"
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        try handle.close()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: log)
        return (p.terminationStatus, String(output.suffix(3000)))
    }
}
