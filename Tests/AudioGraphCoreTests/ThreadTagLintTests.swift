import Foundation
import TestSupport
import XCTest

/// Thread tags are one closed set and every tagged public entry point
/// checks its role (docs/threads.md): `scripts/thread-tags --check` over
/// Sources/ and Plugins/ finds nothing. The script's rules are shown on
/// small sources here: what it flags, what it leaves, what it writes.
final class ThreadTagLintTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Runs the script; its exit status and output.
    private func run(_ arguments: [String], in directory: String) throws -> (status: Int32, output: String) {
        let dir = try TemporaryDirectory()
        let out = dir.file("out.txt")
        let child = try ChildProcess(["python3", Self.root + "/scripts/thread-tags"] + arguments,
                                     directory: directory, stdout: .file(out), stderr: .sameAsStdout)
        XCTAssertTrue(child.waitUntilExit(timeout: 300), "the script ended")
        return (child.terminationStatus, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
    }

    func testEveryTagIsInTheClosedSetAndEveryTaggedEntryPointChecksIt() throws {
        let result = try run(["--check", "Sources", "Plugins"], in: Self.root)
        XCTAssertEqual(result.status, 0, "scripts/thread-tags --check:\n\(result.output.suffix(6000))")
    }

    private let source = """
    import AudioGraphCore

    /// Makes one. [any thread but the audio thread]
    public func make() -> Int {
        1
    }

    /// Reads it. [osc-thread]
    public var level: Float { 0.5 }

    /// A kernel. [audio-thread & active]
    @inlinable @_noLocks
    public func run(_ n: Int) {
        _ = n
    }

    /// Any thread. [any thread; realtime-safe] Works on [any NodeType] and on [AudioBus].
    public func free() {}

    /// A typo. [mian-thread]
    internal func typo() {}
    """

    func testTheCheckFlagsOldSpellingsUnknownTagsAndMissingChecks() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.file("Sources/AudioGraphNodes")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = folder + "/no-such-sample.swift"
        try source.write(toFile: file, atomically: true, encoding: .utf8)

        let check = try run(["--check", "Sources"], in: dir.path)
        XCTAssertEqual(check.status, 1)
        let lines = check.output.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("Sources/AudioGraphNodes/no-such-sample.swift:20: unknown thread tag [mian-thread]"), check.output)
        for line in [4, 9, 13] {
            XCTAssertTrue(lines.contains { $0.hasPrefix("Sources/AudioGraphNodes/no-such-sample.swift:\(line): no ThreadRole.check(") },
                          "line \(line) lacks its check:\n\(check.output)")
        }
        XCTAssertFalse(check.output.contains("NodeType") || check.output.contains("AudioBus"), "Swift in a comment is no tag")
        XCTAssertFalse(check.output.contains(":18: no ThreadRole.check"), "[any-thread] asks for no check")

        // Writing: the unknown tag stays (a person decides), the rest is rewritten.
        let fix = try run(["Sources"], in: dir.path)
        XCTAssertEqual(fix.status, 1, "an unknown tag is left for a person")
        let fixed = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertTrue(fixed.contains("""
        /// Makes one. [main-thread | worker-thread | owner-thread | control-thread]
        public func make() -> Int {
            ThreadRole.check(.main, .worker, .control)
            return 1
        """), fixed)
        XCTAssertTrue(fixed.contains("""
        /// Reads it. [control-thread]
        public var level: Float { ThreadRole.check(.control); return 0.5 }
        """), fixed)
        XCTAssertTrue(fixed.contains("""
        public func run(_ n: Int) {
            ThreadRole.check(.audio)
            _ = n
        """), fixed)
        XCTAssertTrue(fixed.contains("[any-thread; realtime-safe] Works on [any NodeType] and on [AudioBus].\npublic func free() {}"), fixed)
        XCTAssertTrue(fixed.contains("[mian-thread]"))

        // Once the typo is fixed by hand, the check passes, and a second run changes nothing.
        try fixed.replacingOccurrences(of: "[mian-thread]", with: "[main-thread]").write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try run(["Sources"], in: dir.path).status, 0)
        let once = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertEqual(try run(["Sources"], in: dir.path).status, 0)
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), once, "idempotent")
        let recheck = try run(["--check", "Sources"], in: dir.path)
        XCTAssertEqual(recheck.status, 0, recheck.output)
    }

    func testACheckThatNoLongerMatchesItsTagIsFlaggedAndRewritten() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.file("Sources/AudioGraphCore")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = folder + "/Changed.swift"
        try """
        /// Starts it. [main-thread | worker-thread]
        public func start() {
            ThreadRole.check(.main)
        }

        /// Anyone. [any-thread]
        public func anyone() {
            ThreadRole.check(.audio)
            print(1)
        }
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try run(["--check", "Sources"], in: dir.path)
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(check.output.contains("Changed.swift:2: ThreadRole.check(.main) but the tag asks for ThreadRole.check(.main, .worker)"), check.output)
        XCTAssertTrue(check.output.contains("Changed.swift:7: check without a tag that asks for it"), check.output)
        XCTAssertEqual(try run(["Sources"], in: dir.path).status, 0)
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), """
        /// Starts it. [main-thread | worker-thread]
        public func start() {
            ThreadRole.check(.main, .worker)
        }

        /// Anyone. [any-thread]
        public func anyone() {
            print(1)
        }
        """)
    }
}
