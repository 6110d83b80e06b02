import AudioGraph
import AudioGraphOSC
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Hot reload under a session manager: `reload` reads the session's file
/// (the session stays clean); `reload FILE` makes that file's graph the
/// session's (dirty, and written by the next save with its relative paths
/// made absolute).
extension NSMLiveTests {
    /// Opens the session at `instance` and checks the OK reply.
    func openSession(_ nsm: NSMTestServerFixture, _ cli: CLIProcess, instance: String, clientID: String,
                     file: StaticString = #filePath, line: UInt = #line) {
        let before = nsm.mark
        nsm.open(path: instance, displayName: "agraph", clientID: clientID)
        let opened = nsm.waitFor("/reply", timeout: LiveTiming.seconds(15), after: before) {
            $0.arguments.first == .string("/nsm/client/open")
        }
        XCTAssertEqual(opened?.arguments, [.string("/nsm/client/open"), .string("OK")], cli.stderr, file: file, line: line)
    }

    /// Asks for a save and checks the OK reply; with `expectClean`, also
    /// the `is_clean` that follows it.
    func saveSession(_ nsm: NSMTestServerFixture, _ cli: CLIProcess, expectClean: Bool = false,
                     file: StaticString = #filePath, line: UInt = #line) {
        let before = nsm.mark
        nsm.save()
        let saved = nsm.waitFor("/reply", timeout: LiveTiming.seconds(10), after: before) { $0.arguments.first == .string("/nsm/client/save") }
        XCTAssertEqual(saved?.arguments, [.string("/nsm/client/save"), .string("OK")], cli.stderr, file: file, line: line)
        if expectClean {
            XCTAssertNotNil(nsm.waitFor("/nsm/client/is_clean", timeout: LiveTiming.seconds(5), after: before),
                            "is_clean after save", file: file, line: line)
        }
    }

    /// Sets `params[param]` of node `id` in a graph file.
    static func setParameter(_ file: String, node id: String, _ param: String, to value: Any) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        var root = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        var nodes = try XCTUnwrap(root["nodes"] as? [[String: Any]])
        let i = try XCTUnwrap(nodes.firstIndex { $0["id"] as? String == id })
        var params = nodes[i]["params"] as? [String: Any] ?? [:]
        params[param] = value
        nodes[i]["params"] = params
        root["nodes"] = nodes
        try JSONSerialization.data(withJSONObject: root).write(to: URL(fileURLWithPath: file))
    }

    func testReloadReadsTheSessionFileAndAnotherFileBecomesTheSessions() throws {
        let (original, media) = try writeOriginal()
        let instance = dir.file("session") + "/agraph.nRELOAD"
        try FileManager.default.createDirectory(atPath: dir.file("session"), withIntermediateDirectories: true)
        let sessionFile = instance + ".json"
        // Another graph beside the original, its media named relatively.
        let other = dir.file("original") + "/other.json"
        try String(contentsOfFile: original, encoding: .utf8)
            .replacingOccurrences(of: #""gain": 0"#, with: #""gain": -3"#)
            .write(toFile: other, atomically: true, encoding: .utf8)

        try retryingOnXruns { isLast in
            try? FileManager.default.removeItem(atPath: sessionFile)
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: 60)
            defer { rec.close() }
            let nsm = try NSMTestServerFixture()
            let cli = try startUnderNSM(original, nsm, server: server)
            defer { cli.kill() }
            try expectAnnounce(nsm, cli)
            openSession(nsm, cli, instance: instance, clientID: "agraph.nRELOAD")
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)
            // Levels are judged at the end, once the recording is known to
            // have no gaps (xruns).
            let first = Self.recentLevel(rec)

            // The session file edited and reloaded: heard, and not dirty.
            try Self.setParameter(sessionFile, node: "g", "gain", to: -6)
            let beforeReload = nsm.mark
            cli.send("reload")
            XCTAssertNotNil(cli.waitForStderr("agraph: reload: 1 parameter changed (g.gain)", timeout: 10), cli.stderr)
            let reloadedAt = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(reloadedAt + 9600, timeout: LiveTiming.seconds(10)))
            let second = Self.recentLevel(rec)
            usleep(300_000)
            XCTAssertNil(nsm.received[beforeReload...].first { $0.address == "/nsm/client/is_dirty" },
                         "what runs is the session file: not dirty")

            // Another file: its graph runs, the session is dirty; save writes it.
            let beforeOther = nsm.mark
            cli.send("reload \(other)")
            // Its media path is another string (relative): the source is made anew.
            XCTAssertNotNil(cli.waitForStderr("agraph: reload: 3 replaced (src, g, out), 0 kept", timeout: 10), cli.stderr)
            XCTAssertNotNil(nsm.waitFor("/nsm/client/is_dirty", timeout: LiveTiming.seconds(5), after: beforeOther),
                            "dirty: the session file is not what runs: \(cli.stderr)")
            let otherAt = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(otherAt + 9600, timeout: LiveTiming.seconds(10)))
            let third = Self.recentLevel(rec)
            let beforeSave = nsm.mark
            saveSession(nsm, cli)
            XCTAssertNotNil(nsm.waitFor("/nsm/client/is_clean", timeout: LiveTiming.seconds(5), after: beforeSave))
            XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "gain") as? Double, -3, "the other file's graph saved")
            XCTAssertEqual(try Self.parameter(sessionFile, node: "src", "path") as? String, media, "its media path made absolute")

            cli.process.send(SIGTERM)
            assertExitsCleanly(cli)
            try checkRecorderXruns(rec, isLast: isLast)
            XCTAssertEqual(first, -12, accuracy: 0.2)
            XCTAssertEqual(second, -18, accuracy: 0.2, "the session file's new gain")
            XCTAssertEqual(third, -15, accuracy: 0.2, "the other file's gain")
        }
    }
}

extension NSMLiveTests {
    /// An `lv2` node under a session: save writes its live value and the
    /// plugin's LV2 state into the session file, which validates.
    func testSaveWritesAnLV2PluginsStateIntoTheSessionFile() throws {
        let delay = "http://drobilla.net/plugins/mda/Delay"
        try XCTSkipUnless(LV2World.shared.uris.contains(delay), "mda-lv2 is not installed")
        let original = dir.file("lv2.json")
        try """
            {"format": "agraph/1", "name": "nsm-lv2", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 700, "level": -20, "channels": 2}},
              {"id": "fx", "type": "lv2", "params": {"uri": "\(delay)"}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "tone", "to": "fx"}, {"from": "fx", "to": "out"}]}
            """.write(toFile: original, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir.file("session"), withIntermediateDirectories: true)
        let instance = dir.file("session") + "/agraph.nLV2"
        let sessionFile = instance + ".json"
        let server = try TestJACKServer()
        defer { server.stop() }
        let nsm = try NSMTestServerFixture()
        let cli = try startUnderNSM(original, nsm, server: server)
        defer { cli.kill() }
        try expectAnnounce(nsm, cli)
        openSession(nsm, cli, instance: instance, clientID: "agraph.nLV2")
        cli.send("set fx.l_delay 0.1")
        XCTAssertNotNil(nsm.waitFor("/nsm/client/is_dirty", timeout: LiveTiming.seconds(5)), cli.stderr)
        saveSession(nsm, cli)
        let value = try XCTUnwrap(Self.parameter(sessionFile, node: "fx", "l_delay") as? Double)
        XCTAssertEqual(value, 0.1, accuracy: 1e-6)
        let state = try XCTUnwrap(Self.parameter(sessionFile, node: "fx", "state") as? String, "the plugin's state in the session file")
        XCTAssertTrue(state.contains("l_delay"), state)
        let validate = try runTool(try CLIProcess.agraphPath(), ["validate", sessionFile])
        XCTAssertEqual(validate.status, 0, validate.stderr)
        cli.process.send(SIGTERM)
        assertExitsCleanly(cli)
    }
}
