import AudioGraph
import AudioGraphOSC
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph run` under a session manager (NSM_URL set), driven by
/// `NSMTestServerFixture` (a test fixture speaking the server side of the
/// published NSM API, not an NSM implementation), each test on a private
/// `jackd -d dummy`: announce, open (the session file made from the
/// original graph, its media still found: heard in the recording), a live
/// `set` reported dirty, save (the file holds the new value and validates;
/// clean), SIGTERM (exit 0, the JACK client gone), and reopening the saved
/// session.
final class NSMLiveTests: LiveTestCase {
    static let amplitude = pow(10, -12.0 / 20)

    /// A folder `original/` holding `graph.json` and `media/tone.wav` (2 s
    /// of 1 kHz at -12 dBFS, mono), the graph naming it by a relative path:
    /// file (looping) → g (gain) → out (to the recorder).
    func writeOriginal() throws -> (graph: String, media: String) {
        let folder = dir.file("original")
        try FileManager.default.createDirectory(atPath: folder + "/media", withIntermediateDirectories: true)
        let media = folder + "/media/tone.wav"
        try writeSoundFile(media, format: .wavFloat32, channels: 1, sampleRate: Self.rate,
                           samples: Synth.sine(frequency: 1000, amplitude: Self.amplitude, sampleRate: Self.rate, frames: 96_000))
        let graph = folder + "/graph.json"
        try """
            {"format": "agraph/1", "name": "nsm", "sampleRate": 48000, "nodes": [
              {"id": "src", "type": "file", "params": {"path": "media/tone.wav", "loop": true}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
             "links": [{"from": "src", "to": "g"}, {"from": "g", "to": "out"}]}
            """.write(toFile: graph, atomically: true, encoding: .utf8)
        // As the session file writes it: absolute, normalised.
        return (graph, "/" + media.split(separator: "/").joined(separator: "/"))
    }

    /// `agraph run GRAPH` with NSM_URL naming `nsm`, in a folder of its
    /// own (relative paths must not resolve against the working directory).
    func startUnderNSM(_ graph: String, _ nsm: NSMTestServerFixture, server: TestJACKServer,
                       extra: [String] = []) throws -> CLIProcess {
        let cwd = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        return try CLIProcess(["run", graph, "--server", "external", "--server-name", server.name, "--quiet"] + extra,
                              directory: cwd, environment: ["NSM_URL": nsm.url])
    }

    /// The announce, checked field by field, answered.
    func expectAnnounce(_ nsm: NSMTestServerFixture, _ cli: CLIProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        let announce = try XCTUnwrap(nsm.waitFor("/nsm/server/announce", timeout: LiveTiming.seconds(10)),
                                     "no announce: \(cli.stderr)", file: file, line: line)
        XCTAssertEqual(announce.typeTags, ",sssiii", file: file, line: line)
        XCTAssertEqual(announce.arguments.first, .string("agraph"), file: file, line: line)
        let caps = announce.arguments.count > 1 ? announce.arguments[1].text ?? "" : ""
        XCTAssertTrue(caps.hasPrefix(":") && caps.hasSuffix(":"), caps, file: file, line: line)
        XCTAssertTrue(caps.contains(":dirty:"), caps, file: file, line: line)
        XCTAssertTrue(caps.contains(":switch:"), caps, file: file, line: line)
        XCTAssertEqual(announce.arguments.count > 2 ? announce.arguments[2] : nil, .string("agraph"), file: file, line: line)
        XCTAssertEqual(announce.arguments.count > 5 ? Array(announce.arguments[3...5]) : [],
                       [.int32(1), .int32(2), .int32(cli.process.pid)], "API 1.2 and the process id", file: file, line: line)
        nsm.acceptAnnounce()
    }

    /// Runs `body` on a private server with a 1-channel recorder, the NSM
    /// fixture and `agraph run original EXTRA` announced to it; then
    /// SIGTERM, a clean exit, and a retry when the recorder saw xruns.
    /// `prepare` runs first on each attempt (e.g. to remove session files).
    func withAnnouncedClient(_ original: String, extra: [String] = [], recorderSeconds: Double = 60,
                             prepare: () -> Void = {},
                             _ body: (TestJACKServer, JACKRecorder, NSMTestServerFixture, CLIProcess) throws -> Void) throws {
        try retryingOnXruns { isLast in
            prepare()
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 1, seconds: recorderSeconds)
            defer { rec.close() }
            let nsm = try NSMTestServerFixture()
            let cli = try startUnderNSM(original, nsm, server: server, extra: extra)
            defer { cli.kill() }
            try expectAnnounce(nsm, cli)
            try body(server, rec, nsm, cli)
            cli.process.send(SIGTERM)
            assertExitsCleanly(cli)
            try checkRecorderXruns(rec, isLast: isLast)
        }
    }

    /// Throws `XrunsHappened` when the recorder saw xruns (not on the last attempt).
    func checkRecorderXruns(_ rec: JACKRecorder, isLast: Bool) throws {
        if rec.xruns > 0 && !isLast { throw XrunsHappened(count: rec.xruns) }
    }

    /// The JACK clients on `server` (from `jack_lsp`'s port names).
    func jackClients(_ server: TestJACKServer) throws -> Set<String> {
        let r = try server.tool("jack_lsp")
        return Set(r.stdout.split(separator: "\n").compactMap { $0.split(separator: ":").first.map(String.init) })
    }

    /// The value of `params[param]` of node `id` in a graph file.
    static func parameter(_ file: String, node id: String, _ param: String) throws -> Any? {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let nodes = try XCTUnwrap(root["nodes"] as? [[String: Any]])
        let node = try XCTUnwrap(nodes.first { $0["id"] as? String == id }, "no node \(id) in \(file)")
        return (node["params"] as? [String: Any])?[param]
    }

    /// Announce; open makes the session file from the original (media path
    /// made absolute: the tone is heard at -12 dBFS although the working
    /// directory is elsewhere) and runs as JACK client `client_id`; a live
    /// `set g.gain -6` is heard and reported dirty; save writes -6 into the
    /// file (which validates) and reports clean; SIGTERM exits 0 and the
    /// client leaves JACK. Then a second run opens the saved session: -18
    /// dBFS from the start, the original untouched.
    func testAnnounceOpenSaveDirtyCleanQuitAndReopen() throws {
        let (original, media) = try writeOriginal()
        let originalText = try String(contentsOfFile: original, encoding: .utf8)
        let sessionFolder = dir.file("session")
        try FileManager.default.createDirectory(atPath: sessionFolder, withIntermediateDirectories: true)
        let instance = sessionFolder + "/agraph.nTEST"
        let sessionFile = instance + ".json"
        let clientID = "agraph.nTEST"

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
            XCTAssertFalse(FileManager.default.fileExists(atPath: sessionFile), "nothing is written before open")
            nsm.open(path: instance, displayName: "agraph", clientID: clientID)
            let opened = nsm.waitFor("/reply", timeout: LiveTiming.seconds(15)) { $0.arguments.first == .string("/nsm/client/open") }
            XCTAssertEqual(opened?.arguments, [.string("/nsm/client/open"), .string("OK")], cli.stderr)

            // The session file: the original with its media path absolute.
            XCTAssertTrue(FileManager.default.fileExists(atPath: sessionFile), cli.stderr)
            XCTAssertEqual(try Self.parameter(sessionFile, node: "src", "path") as? String, media)
            XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "gain") as? Double, 0)
            XCTAssertTrue(try jackClients(server).contains(clientID), "the JACK client is named by the client id")
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)
            XCTAssertEqual(Self.recentLevel(rec), -12, accuracy: 0.2, "the media, found through the rewritten path")

            // A live change: heard, and reported dirty.
            let beforeSet = nsm.mark
            cli.send("set g.gain -6")
            let dirty = nsm.waitFor("/nsm/client/is_dirty", timeout: LiveTiming.seconds(5), after: beforeSet)
            XCTAssertNotNil(dirty, "is_dirty after a live set: \(cli.stderr)")
            XCTAssertNil(nsm.received[beforeSet...].first { $0.address == "/nsm/client/is_clean" }, "not clean before a save")
            let setAt = rec.framesRecorded
            XCTAssertTrue(rec.waitForFrames(setAt + 9600, timeout: LiveTiming.seconds(10)))
            XCTAssertEqual(Self.recentLevel(rec), -18, accuracy: 0.2, "the gain change heard")

            // Save: the file has the live value, validates; then clean.
            saveSession(nsm, cli, expectClean: true)
            XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "gain") as? Double, -6, "the live value saved")
            XCTAssertEqual(try Self.parameter(sessionFile, node: "src", "path") as? String, media)
            XCTAssertEqual(try Self.parameter(sessionFile, node: "src", "loop") as? Bool, true)
            let validate = try runTool(try CLIProcess.agraphPath(), ["validate", sessionFile])
            XCTAssertEqual(validate.status, 0, "the saved session file validates: \(validate.stderr)")
            XCTAssertFalse((try FileManager.default.contentsOfDirectory(atPath: sessionFolder)).contains { $0.contains(".saving-") },
                           "no temporary file left")
            XCTAssertEqual(try String(contentsOfFile: original, encoding: .utf8), originalText, "the original is untouched")

            // Quit: SIGTERM, exit 0, the client gone from JACK.
            cli.process.send(SIGTERM)
            assertExitsCleanly(cli)
            XCTAssertFalse(try jackClients(server).contains(clientID), "the JACK client is gone after quit")
            try checkRecorderXruns(rec, isLast: isLast)

            // Reopen: the saved session plays at -6 dB from the start.
            let rec2Start = rec.framesRecorded
            let nsm2 = try NSMTestServerFixture()
            let cli2 = try startUnderNSM(original, nsm2, server: server)
            defer { cli2.kill() }
            try expectAnnounce(nsm2, cli2)
            nsm2.open(path: instance, displayName: "agraph", clientID: clientID)
            let reopened = nsm2.waitFor("/reply", timeout: LiveTiming.seconds(15)) { $0.arguments.first == .string("/nsm/client/open") }
            XCTAssertEqual(reopened?.arguments, [.string("/nsm/client/open"), .string("OK")], cli2.stderr)
            XCTAssertTrue(rec.waitForFrames(rec2Start + 48_000, timeout: LiveTiming.seconds(15)))
            XCTAssertEqual(Self.recentLevel(rec), -18, accuracy: 0.2, "the saved gain, from the session file")
            XCTAssertNil(nsm2.received.first { $0.address == "/nsm/client/is_dirty" }, "not dirty without a change")
            cli2.process.send(SIGTERM)
            assertExitsCleanly(cli2)
            try checkRecorderXruns(rec, isLast: isLast)
        }
    }

    /// `--set` values are part of what plays, so part of what a save
    /// writes: `agraph run graph --set g.gain=-6` under NSM plays at -18
    /// dBFS, reports dirty at once (the session file still says 0), and a
    /// save without any live change writes -6; clean then.
    func testSetValuesOnTheCommandLineAreSavedIntoTheSession() throws {
        let (original, _) = try writeOriginal()
        let sessionFolder = dir.file("session-set")
        try FileManager.default.createDirectory(atPath: sessionFolder, withIntermediateDirectories: true)
        let instance = sessionFolder + "/agraph.nSET"
        let sessionFile = instance + ".json"
        try withAnnouncedClient(original, extra: ["--set", "g.gain=-6"], recorderSeconds: 30,
                                prepare: { try? FileManager.default.removeItem(atPath: sessionFile) }) { _, rec, nsm, cli in
            openSession(nsm, cli, instance: instance, clientID: "agraph.nSET")
            XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "gain") as? Double, 0, "the session file is the original")
            XCTAssertNotNil(nsm.waitFor("/nsm/client/is_dirty", timeout: LiveTiming.seconds(5)),
                            "dirty: what plays is not in the session file: \(cli.stderr)")
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)
            XCTAssertEqual(Self.recentLevel(rec), -18, accuracy: 0.2, "the --set value plays")

            saveSession(nsm, cli, expectClean: true)
            XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "gain") as? Double, -6, "the --set value saved")
            XCTAssertEqual(try Self.parameter(sessionFile, node: "src", "loop") as? Bool, true, "the rest as it was")
        }
    }

    /// `:switch:`: a second open while running loads the other session
    /// (its file made from the original the first time) by a hot reload
    /// and moves to a JACK client named by the new client id, connections
    /// kept, with no gap (make before break): session A saved at -6 dB, a switch to B (new, 0 dB) is heard at
    /// -12 dBFS from a client named B (A gone), and a switch back to A is
    /// heard at -18 dBFS from a client named A; each switch replies OK.
    func testSwitchLoadsTheOtherSessionAndRenamesTheClient() throws {
        let (original, _) = try writeOriginal()
        let folder = dir.file("session-switch")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let instanceA = folder + "/agraph.nA", instanceB = folder + "/agraph.nB"
        try withAnnouncedClient(original, prepare: {
            for f in [instanceA, instanceB] { try? FileManager.default.removeItem(atPath: f + ".json") }
        }) { server, rec, nsm, cli in
            func heard(_ level: Double, _ what: String) {
                let from = rec.framesRecorded
                XCTAssertTrue(rec.waitForFrames(from + 24_000, timeout: LiveTiming.seconds(10)), what)
                XCTAssertEqual(Self.recentLevel(rec), level, accuracy: 0.2, what)
            }

            openSession(nsm, cli, instance: instanceA, clientID: "agraph.nA")
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5), cli.stderr)
            cli.send("set g.gain -6")
            XCTAssertNotNil(nsm.waitFor("/nsm/client/is_dirty", timeout: LiveTiming.seconds(5)), cli.stderr)
            saveSession(nsm, cli, expectClean: true)
            heard(-18, "session A at -6 dB")

            let beforeSwitch = rec.framesRecorded
            openSession(nsm, cli, instance: instanceB, clientID: "agraph.nB")
            XCTAssertEqual(try Self.parameter(instanceB + ".json", node: "g", "gain") as? Double, 0, "B made from the original")
            let clients = try jackClients(server)
            XCTAssertTrue(clients.contains("agraph.nB"), "\(clients)")
            XCTAssertFalse(clients.contains("agraph.nA"), "\(clients)")
            heard(-12, "session B, through the client renamed B, still connected")
            // The rename is make before break: no silence. The longest run
            // of zero samples from before the switch to now is at most one
            // (a 1 kHz sine at -12/-18 dBFS has no two zero samples in a
            // row; it closed and reopened, it had 85-91 ms of them).
            let gap = Self.longestSilence(rec.samples(0, beforeSwitch..<rec.framesRecorded))
            print("NSM switch A → B (client renamed): \(gap) frames of silence")
            XCTAssertLessThanOrEqual(gap, 1, "the new client took the cycle over from the old one: no gap")

            openSession(nsm, cli, instance: instanceA, clientID: "agraph.nA")
            XCTAssertTrue(try jackClients(server).contains("agraph.nA"))
            heard(-18, "back in session A: its saved gain")
        }
    }

    /// The longest run of exactly zero samples in `x`.
    static func longestSilence(_ x: [Float]) -> Int {
        var longest = 0, run = 0
        for v in x {
            if v == 0 { run += 1; longest = max(longest, run) } else { run = 0 }
        }
        return longest
    }

    /// An invalid session file: `/error "/nsm/client/open" -9 TEXT` with the
    /// diagnostics (the unknown node type named), exit 1, nothing in JACK.
    func testAnInvalidSessionFileIsAnErrorReplyWithItsDiagnostics() throws {
        let (original, _) = try writeOriginal()
        let instance = dir.file("bad-session")
        try """
            {"format": "agraph/1", "name": "bad", "sampleRate": 48000, "nodes": [
              {"id": "x", "type": "no-such-node-type", "params": {}}], "links": []}
            """.write(toFile: instance + ".json", atomically: true, encoding: .utf8)
        let server = try TestJACKServer()
        defer { server.stop() }
        let nsm = try NSMTestServerFixture()
        let cli = try startUnderNSM(original, nsm, server: server)
        defer { cli.kill() }
        try expectAnnounce(nsm, cli)
        nsm.open(path: instance, displayName: "agraph", clientID: "agraph.nBAD")
        let error = try XCTUnwrap(nsm.waitFor("/error", timeout: LiveTiming.seconds(10)), cli.stderr)
        XCTAssertEqual(error.typeTags, ",sis")
        XCTAssertEqual(error.arguments.first, .string("/nsm/client/open"))
        XCTAssertEqual(error.arguments.count > 1 ? error.arguments[1] : nil, .int32(NSMErrorCode.badProject.rawValue))
        let text = error.arguments.count > 2 ? error.arguments[2].text ?? "" : ""
        XCTAssertTrue(text.contains("no-such-node-type"), text)
        XCTAssertTrue(text.contains("/nodes/0"), "the diagnostic's JSON pointer: \(text)")
        XCTAssertTrue(cli.waitForExit(timeout: 10), cli.stderr)
        XCTAssertEqual(cli.status, 1, cli.stderr)
        XCTAssertNil(nsm.received.first { $0.address == "/reply" }, "no OK")
        XCTAssertFalse(try jackClients(server).contains("agraph.nBAD"))
    }

    /// Changes from OSC count too, and a list element and a boolean are
    /// saved as the graph file writes them: `/agraph/mix/gains/1 f -6` (the
    /// graph gives no `gains`: the whole list is written) and stdin's `set
    /// g.mute on` are reported dirty; the saved file holds `"gains": [0, -6]`
    /// and `"mute": true` and validates; a switch to a session whose file
    /// does not validate is refused and the graph plays on, the session
    /// unchanged.
    func testOSCChangesListElementsAndBooleansAreSavedAndABadSwitchIsRefused() throws {
        let folder = dir.file("original")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let original = folder + "/graph.json"
        try """
            {"format": "agraph/1", "name": "nsm-osc", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
              {"id": "tone2", "type": "test-tone", "params": {"frequency": 3000, "level": -12, "channels": 1}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "mix", "type": "mixer", "params": {"inputs": 2}},
              {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
             "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "mix:in0"}, {"from": "tone2", "to": "mix:in1"},
                       {"from": "mix", "to": "out"}]}
            """.write(toFile: original, atomically: true, encoding: .utf8)
        let instance = dir.file("session-osc")
        let server = try TestJACKServer()
        defer { server.stop() }
        let nsm = try NSMTestServerFixture()
        let cwd = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        let cli = try CLIProcess(["run", original, "--server", "external", "--server-name", server.name, "--quiet", "--osc", "0"],
                                 directory: cwd, environment: ["NSM_URL": nsm.url])
        defer { cli.kill() }
        try expectAnnounce(nsm, cli)
        nsm.open(path: instance, displayName: "agraph", clientID: "agraph.nOSC")
        let opened = nsm.waitFor("/reply", timeout: LiveTiming.seconds(15)) { $0.arguments.first == .string("/nsm/client/open") }
        XCTAssertEqual(opened?.arguments, [.string("/nsm/client/open"), .string("OK")], cli.stderr)
        XCTAssertNotNil(cli.waitForStderr("agraph: OSC on ", timeout: 10), cli.stderr)
        let text = cli.stderr
        let r = try XCTUnwrap(text.range(of: "agraph: OSC on osc.udp://127.0.0.1:"), text)
        let port = try XCTUnwrap(Int(text[r.upperBound...].prefix { $0.isNumber }))

        // Clean until something changes: a get is not a change.
        let osc = try OSCTestClient()
        _ = osc.ask(OSCMessage("/agraph/get", [.string("g.gain")]), port: port, reply: "/agraph/value")
        nsm.drain(timeout: LiveTiming.seconds(0.3))
        XCTAssertNil(nsm.received.first { $0.address == "/nsm/client/is_dirty" }, "a get changes nothing")
        osc.send(OSCMessage("/agraph/mix/gains/1", [.float(-6)]), to: port)
        XCTAssertNotNil(nsm.waitFor("/nsm/client/is_dirty", timeout: LiveTiming.seconds(5)), "dirty after an OSC set: \(cli.stderr)")
        cli.send("set g.mute on")
        XCTAssertTrue(waitUntil(timeout: 5) { cli.stdout.contains("g.mute = true") }, cli.stdout)

        // A switch to a session whose file does not validate: refused with
        // its diagnostics, the graph plays on, the session stays.
        try #"{"format": "agraph/1", "nodes": [{"id": "x", "type": "no-such-type"}], "links": []}"#
            .write(toFile: dir.file("other") + ".json", atomically: true, encoding: .utf8)
        let beforeOpen = nsm.mark
        nsm.open(path: dir.file("other"), displayName: "agraph", clientID: "agraph.nOTHER")
        let refused = try XCTUnwrap(nsm.waitFor("/error", timeout: LiveTiming.seconds(5), after: beforeOpen), cli.stderr)
        XCTAssertEqual(Array(refused.arguments.prefix(2)), [.string("/nsm/client/open"), .int32(NSMErrorCode.badProject.rawValue)])
        XCTAssertTrue((refused.arguments.last?.text ?? "").contains("no-such-type"), "\(refused.arguments)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("other") + ".json"), "a file it did not make is left alone")
        XCTAssertTrue(cli.isRunning)
        XCTAssertTrue(try jackClients(server).contains("agraph.nOSC"), "the client keeps its name")

        let beforeSave = nsm.mark
        nsm.save()
        let saved = nsm.waitFor("/reply", timeout: LiveTiming.seconds(10), after: beforeSave) {
            $0.arguments.first == .string("/nsm/client/save")
        }
        XCTAssertEqual(saved?.arguments, [.string("/nsm/client/save"), .string("OK")], cli.stderr)
        XCTAssertNotNil(nsm.waitFor("/nsm/client/is_clean", timeout: LiveTiming.seconds(5), after: beforeSave))
        let sessionFile = instance + ".json"
        XCTAssertEqual(try Self.parameter(sessionFile, node: "mix", "gains") as? [Double], [0, -6])
        XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "mute") as? Bool, true)
        XCTAssertEqual(try Self.parameter(sessionFile, node: "g", "gain") as? Double, 0)
        let validate = try runTool(try CLIProcess.agraphPath(), ["validate", sessionFile])
        XCTAssertEqual(validate.status, 0, "the saved session file validates: \(validate.stderr)")

        cli.process.send(SIGTERM)
        assertExitsCleanly(cli)
    }

    /// An invalid original: the first open replies `/error` (-9) with its
    /// diagnostics and leaves no session file, so that the next open copies
    /// the original again once it is fixed.
    func testAnInvalidOriginalLeavesNoSessionFile() throws {
        let original = dir.file("broken.json")
        try #"{"format": "agraph/1", "name": "broken", "sampleRate": 48000, "nodes": [{"id": "g", "type": "gain", "params": {"gain": 1000}}], "links": []}"#
            .write(toFile: original, atomically: true, encoding: .utf8)
        let instance = dir.file("session-broken")
        let server = try TestJACKServer()
        defer { server.stop() }
        let nsm = try NSMTestServerFixture()
        let cli = try startUnderNSM(original, nsm, server: server)
        defer { cli.kill() }
        try expectAnnounce(nsm, cli)
        nsm.open(path: instance, displayName: "agraph", clientID: "agraph.nBROKEN")
        let error = try XCTUnwrap(nsm.waitFor("/error", timeout: LiveTiming.seconds(10)), cli.stderr)
        XCTAssertEqual(Array(error.arguments.prefix(2)), [.string("/nsm/client/open"), .int32(NSMErrorCode.badProject.rawValue)])
        XCTAssertTrue((error.arguments.last?.text ?? "").contains("/nodes/0/params/gain"), "\(error)")
        XCTAssertTrue(cli.waitForExit(timeout: 10), cli.stderr)
        XCTAssertEqual(cli.status, 1, cli.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: instance + ".json"), "no copy of an invalid original kept")
    }

    /// Under a session manager the client runs on past the end of its
    /// streams (0.3 s of tone) until told to quit; SIGTERM then closes the
    /// `file-out` (its relative path made absolute against the original's
    /// folder: the take lands there) and exits 0: the take holds exactly
    /// the 0.3 s of 1 kHz at -12 dBFS.
    func testItRunsPastTheEndAndSIGTERMClosesTheFileSinks() throws {
        let folder = dir.file("original")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let original = folder + "/graph.json"
        try """
            {"format": "agraph/1", "name": "nsm-take", "sampleRate": 48000, "nodes": [
              {"id": "src", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1, "duration": 0.3}},
              {"id": "g", "type": "gain", "params": {"gain": 0}},
              {"id": "take", "type": "file-out", "params": {"path": "takes/take.wav"}},
              {"id": "out", "type": "jack-out", "params": {}}],
             "links": [{"from": "src", "to": "g"}, {"from": "g", "to": "out"}, {"from": "g", "to": "take"}]}
            """.write(toFile: original, atomically: true, encoding: .utf8)
        let take = "/" + (folder + "/takes/take.wav").split(separator: "/").joined(separator: "/")
        let instance = dir.file("session-take")
        let server = try TestJACKServer()
        defer { server.stop() }
        let nsm = try NSMTestServerFixture()
        let cli = try startUnderNSM(original, nsm, server: server)
        defer { cli.kill() }
        try expectAnnounce(nsm, cli)
        nsm.open(path: instance, displayName: "agraph", clientID: "agraph.nTAKE")
        let opened = nsm.waitFor("/reply", timeout: LiveTiming.seconds(15)) { $0.arguments.first == .string("/nsm/client/open") }
        XCTAssertEqual(opened?.arguments, [.string("/nsm/client/open"), .string("OK")], cli.stderr)
        XCTAssertEqual(try Self.parameter(instance + ".json", node: "take", "path") as? String, take)
        usleep(UInt32(LiveTiming.seconds(1.5) * 1e6))
        XCTAssertTrue(cli.isRunning, "runs on past the end of its streams: \(cli.stderr)")
        XCTAssertFalse(cli.stderr.contains("end of stream"), cli.stderr)
        cli.process.send(SIGTERM)
        assertExitsCleanly(cli)
        let (channels, rate, samples) = try readSoundFile(take)
        XCTAssertEqual(channels, 1)
        XCTAssertEqual(rate, Self.rate)
        XCTAssertEqual(samples.count, 14_400, "the whole tone, 0.3 s, and the stream's end closes the take")
        if samples.count == 14_400 {
            XCTAssertEqual(SignalAnalysis.sineLevelDBFS(Array(samples[480..<13_920])), -12, accuracy: 0.2)
        }
    }

    /// SIGTERM while waiting for open (the session manager gave up): exit 0
    /// without having touched JACK or written a file.
    func testSIGTERMBeforeOpenExitsZero() throws {
        let (original, _) = try writeOriginal()
        let server = try TestJACKServer()
        defer { server.stop() }
        let nsm = try NSMTestServerFixture()
        let cli = try startUnderNSM(original, nsm, server: server)
        defer { cli.kill() }
        try expectAnnounce(nsm, cli)
        XCTAssertNotNil(cli.waitForStderr("waiting for it to open a session", timeout: 10), cli.stderr)
        // Save before open: refused with ERR_NO_SESSION_OPEN.
        nsm.save()
        let refused = nsm.waitFor("/error", timeout: LiveTiming.seconds(5))
        XCTAssertEqual(refused.map { Array($0.arguments.prefix(2)) },
                       [.string("/nsm/client/save"), .int32(NSMErrorCode.noSessionOpen.rawValue)], cli.stderr)
        cli.process.send(SIGTERM)
        assertExitsCleanly(cli)
        XCTAssertEqual(try jackClients(server).filter { $0.hasPrefix("agraph") && $0 != "agraph-rec" }, [])
    }
}
