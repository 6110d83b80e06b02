import AudioGraph
import AudioGraphJACK
import Foundation
import Synchronization
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Hot reload (`RunningGraph.reload`, `agraph run`'s `reload`), checked on
/// the recorded output: sample continuity through the recurrence of a pure
/// sine (x[n] = 2·cos ω·x[n−1] − x[n−2], residual ≈ 1e-6 for an unbroken
/// sine; a gap, a click or a phase jump leaves a residual of the order of
/// the amplitude), levels and frequencies before and after, and no
/// allocation on JACK's process thread across the reload.
final class ReloadLiveTests: LiveTestCase {
    /// Residual of the annihilating filter of sines at `frequencies`:
    /// ≈ 0 where the signal is a sum of unbroken sines at them.
    static func residual(_ x: [Float], frequencies: [Double]) -> [Double] {
        var y = x.map(Double.init)
        for f in frequencies {
            let c = 2 * cos(2 * Double.pi * f / rate)
            var out = [Double](repeating: 0, count: y.count)
            for n in 2..<y.count { out[n] = y[n] - c * y[n - 1] + y[n - 2] }
            out[0] = 0
            out[1] = 0
            y = out
        }
        return y.map(abs)
    }

    /// The frames of channel `c` from 0.1 s after its first non-zero sample
    /// to the last recorded frame.
    static func playing(_ rec: JACKRecorder, channel c: Int) -> [Float] {
        let s = rec.samples(c)
        guard let first = s.firstIndex(where: { $0 != 0 }) else { return [] }
        return Array(s[min(first + 4800, s.count)...])
    }

    static func tone(_ id: String, _ frequency: Double) -> String {
        #"{"id": "\#(id)", "type": "test-tone", "params": {"waveform": "sine", "frequency": \#(frequency), "level": -12, "channels": 1}}"#
    }

    static func graph(_ nodes: [String], _ links: [(String, String)]) -> String {
        let l = links.map { #"{"from": "\#($0.0)", "to": "\#($0.1)"}"# }.joined(separator: ", ")
        return #"{"format": "agraph/1", "name": "reload", "sampleRate": 48000, "nodes": [\#(nodes.joined(separator: ", "))], "links": [\#(l)]}"#
    }

    static let mainOut = #"{"id": "out", "type": "jack-out", "params": {"ports": ["main_1"], "connect": ["agraph-rec:in_1"]}}"#
    static let monitorOut = #"{"id": "mon", "type": "jack-out", "params": {"ports": ["mon_1"], "connect": ["agraph-rec:in_2"]}}"#

    let threadInits = Atomic<Int>(0)

    /// Runs `first`, records 2 channels, reloads `second` once the output
    /// plays (allocations on the process thread counted from just before
    /// the reload to 1 s after the crossfade), and hands the recording and
    /// the report to `check`.
    func reloading(_ first: String, to second: String, crossfadeMs: Double = 20,
                   check: (JACKRecorder, ReloadReport?, Error?, RunningGraph) throws -> Void) throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 6)
            defer { rec.close() }
            let live = try startGraph(first, server: server.name) { options in
                options.threadInit = { _ in MallocCounter.beginThread() }
            }
            defer { live.stop() }
            let events = EventLog(live.events)
            XCTAssertTrue(waitForSignal(rec, seconds: 1))
            MallocCounter.reset()
            var report: ReloadReport?
            var failure: Error?
            do {
                let g = try GraphValidator(registry: .builtIn.addingJACK(live.binder))
                    .validate(bytes: Array(second.utf8), file: "reloaded.json", directory: dir.path).get()
                report = try live.reload(graph: g, crossfadeMs: crossfadeMs)
            } catch {
                failure = error
            }
            XCTAssertTrue(waitUntil(timeout: 5) { !live.isReloading }, "the crossfade ends and the old engine is released")
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + Int(1.0 * Self.rate), timeout: 10))
            let mallocs = MallocCounter.total
            try checkNoXruns(rec, live, isLast: isLast)
            if MallocCounter.isAvailable {
                XCTAssertEqual(mallocs, 0, "allocations on JACK's process thread across the reload")
            }
            if let report {
                XCTAssertNotNil(events.wait(timeout: 5) { $0 == .reloaded(report) }, "the reload as an event, with what changed")
            } else {
                XCTAssertFalse(events.all.contains { if case .reloaded = $0 { true } else { false } }, "no event for a refused reload")
            }
            try check(rec, report, failure, live)
        }
    }

    /// Level of a sine over `samples`, in dBFS.
    static func level(_ samples: ArraySlice<Float>) -> Double { SignalAnalysis.sineLevelDBFS(Array(samples)) }

    // (a) A live parameter changed in the file: a live change, no rebuild.
    func testReloadOfALiveParameterBecomesALiveChange() throws {
        let gain = { (db: Double) in #"{"id": "g", "type": "gain", "params": {"gain": \#(db)}}"# }
        let first = Self.graph([Self.tone("tone", 1000), gain(0), Self.mainOut, Self.monitorOut],
                               [("tone", "g"), ("g", "out"), ("tone", "mon")])
        let second = Self.graph([Self.tone("tone", 1000), gain(-6), Self.mainOut, Self.monitorOut],
                                [("tone", "g"), ("g", "out"), ("tone", "mon")])
        try reloading(first, to: second) { rec, report, failure, live in
            XCTAssertNil(failure)
            guard let report else { return XCTFail("no report") }
            XCTAssertFalse(report.swapped, "a parameter-only change rebuilds nothing")
            XCTAssertEqual(report.parametersChanged, ["g.gain"])
            XCTAssertEqual(report.keptCount, 4)
            XCTAssertEqual(report.description, "reload: 1 parameter changed (g.gain), 4 kept")
            XCTAssertEqual(try live.value("g.gain"), -6)
            let main = Self.playing(rec, channel: 0)
            XCTAssertGreaterThan(main.count, 48000)
            XCTAssertEqual(Self.level(main.prefix(4800)), -12, accuracy: 0.3, "before")
            XCTAssertEqual(Self.level(main.suffix(4800)), -18, accuracy: 0.3, "after")
            // The source never stopped: the monitor branch is one unbroken sine.
            let mon = Self.playing(rec, channel: 1)
            XCTAssertLessThan(Self.residual(mon, frequencies: [1000]).max() ?? 1, 1e-3, "the kept tone is sample-continuous")
            // The gain change is smoothed: no step on the main output either.
            XCTAssertLessThan(Self.residual(main, frequencies: [1000]).max() ?? 1, 0.02, "no click on the changed path")
        }
    }

    // (b) A branch added: a second tone mixed in.
    func testReloadAddingABranchKeepsTheUnchangedBranchSampleContinuous() throws {
        let mixer = { (n: Int) in #"{"id": "mix", "type": "mixer", "params": {"inputs": \#(n)}}"# }
        let first = Self.graph([Self.tone("a", 1000), mixer(1), Self.mainOut, Self.monitorOut],
                               [("a", "mix:in0"), ("mix", "out"), ("a", "mon")])
        let second = Self.graph([Self.tone("a", 1000), Self.tone("b", 3000), mixer(2), Self.mainOut, Self.monitorOut],
                                [("a", "mix:in0"), ("b", "mix:in1"), ("mix", "out"), ("a", "mon")])
        try reloading(first, to: second) { rec, report, failure, _ in
            XCTAssertNil(failure)
            guard let report else { return XCTFail("no report") }
            XCTAssertTrue(report.swapped)
            XCTAssertEqual(report.added, ["b"])
            XCTAssertEqual(Set(report.replaced), ["mix", "out"])
            XCTAssertEqual(report.keptCount, 2, "a and mon")
            XCTAssertGreaterThan(report.secondsToSwap, 0)
            // The kept branch: tone and jack-out, ports connected all along.
            let mon = Self.playing(rec, channel: 1)
            XCTAssertGreaterThan(mon.count, 48000)
            XCTAssertLessThan(Self.residual(mon, frequencies: [1000]).max() ?? 1, 1e-3, "the unchanged branch is sample-continuous")
            // The mixed output less the kept branch: nothing before the
            // reload (the mixer passed tone a alone), then tone b faded in
            // over the crossfade, after it an unbroken 3 kHz sine.
            let s0 = rec.samples(0), s1 = rec.samples(1)
            guard let f0 = s0.firstIndex(where: { $0 != 0 }), let f1 = s1.firstIndex(where: { $0 != 0 }) else {
                return XCTFail("no signal")
            }
            let start = max(f0, f1) + 4800
            let d = (start..<min(s0.count, s1.count)).map { s0[$0] - s1[$0] }
            guard let k = d.firstIndex(where: { abs($0) > 1e-4 }) else { return XCTFail("tone b never appears") }
            XCTAssertGreaterThan(k, 0)
            let fade = Int(0.020 * Self.rate)
            XCTAssertLessThanOrEqual(d[k..<(k + fade)].map(abs).max() ?? 1, 0.26, "tone b fades in, no click")
            let steady = Array(d[(k + fade + 256)...])
            XCTAssertGreaterThan(steady.count, 24000)
            XCTAssertEqual(Self.level(steady[...]), -12, accuracy: 0.3, "tone b at its level")
            XCTAssertLessThan(Self.residual(steady, frequencies: [3000]).max() ?? 1, 1e-3, "tone b unbroken after the fade")
            // Through the fade, tone b's gain rises smoothly: the 3 kHz residual
            // there is the ramp's, not a click's.
            XCTAssertLessThan(Self.residual(Array(d[max(k - 2, 0)...]), frequencies: [3000]).max() ?? 1, 0.01)
        }
    }

    // (c) A node replaced: the filter's type changed.
    func testReloadReplacingANodeCrossfadesWithoutADiscontinuity() throws {
        let filter = { (type: String) in #"{"id": "f", "type": "filter", "params": {"type": "\#(type)", "frequency": 250}}"# }
        let first = Self.graph([Self.tone("tone", 1000), filter("high-pass"), Self.mainOut, Self.monitorOut],
                               [("tone", "f"), ("f", "out"), ("tone", "mon")])
        let second = Self.graph([Self.tone("tone", 1000), filter("low-pass"), Self.mainOut, Self.monitorOut],
                                [("tone", "f"), ("f", "out"), ("tone", "mon")])
        try reloading(first, to: second) { rec, report, failure, _ in
            XCTAssertNil(failure)
            guard let report else { return XCTFail("no report") }
            XCTAssertTrue(report.swapped)
            XCTAssertEqual(report.replaced, ["f", "out"])
            XCTAssertEqual(report.added, [])
            let mon = Self.playing(rec, channel: 1)
            XCTAssertLessThan(Self.residual(mon, frequencies: [1000]).max() ?? 1, 1e-3, "the kept source is sample-continuous")
            let main = Self.playing(rec, channel: 0)
            // Highpass at 250 Hz passes 1 kHz (≈ −12 dBFS); lowpass cuts it by ≈ 24 dB.
            XCTAssertEqual(Self.level(main.prefix(4800)), -12, accuracy: 0.5, "before")
            XCTAssertEqual(Self.level(main.suffix(4800)), -36, accuracy: 2, "after")
            // Where the residual shows anything at all, it is one stretch no
            // longer than the crossfade plus the new filter settling, and
            // smaller than a click would leave.
            let r = Self.residual(main, frequencies: [1000])
            let marked = r.indices.filter { r[$0] > 1e-3 }
            if let lo = marked.first, let hi = marked.last {
                XCTAssertLessThan(hi - lo, Int(0.035 * Self.rate), "the change lasts the crossfade (20 ms) and the filter's settling")
            }
            XCTAssertLessThan(r.max() ?? 1, 0.05, "no click")
        }
    }

    // A file source left unchanged keeps its position.
    func testReloadKeepsAnUnchangedFileSourcesPosition() throws {
        let scale: Float = 1_048_576
        let frames = Int(12 * Self.rate)
        try writeSoundFile(dir.file("ramp.wav"), format: .wavFloat32, channels: 1, sampleRate: Self.rate,
                           samples: (0..<frames).map { Float($0) / scale })
        let file = #"{"id": "src", "type": "file", "params": {"path": "ramp.wav"}}"#
        let gain = #"{"id": "g", "type": "gain", "params": {"gain": -6.0206}}"#
        let first = Self.graph([file, Self.mainOut, Self.monitorOut], [("src", "out"), ("src", "mon")])
        let second = Self.graph([file, gain, Self.mainOut, Self.monitorOut], [("src", "g"), ("g", "out"), ("src", "mon")])
        try reloading(first, to: second) { rec, report, failure, _ in
            XCTAssertNil(failure)
            guard let report else { return XCTFail("no report") }
            XCTAssertEqual(report.added, ["g"])
            XCTAssertEqual(report.replaced, ["out"])
            XCTAssertEqual(report.keptCount, 2, "src and mon")
            // The kept branch: file positions one after another, through the reload.
            let mon = rec.samples(1)
            guard let first = mon.firstIndex(where: { $0 != 0 }) else { return XCTFail("no signal") }
            let positions = mon[first...].map { Int(($0 * scale).rounded()) }
            let breaks = zip(positions, positions.dropFirst()).filter { $1 != $0 + 1 }.count
            XCTAssertEqual(breaks, 0, "the file source kept its position: every frame follows the one before")
            XCTAssertGreaterThan(positions.count, 48000)
            // The changed path: the same positions, at half the level after the fade.
            let main = rec.samples(0)
            let end = min(main.count, mon.count)
            let last = (end - 4800)..<end
            for i in last {
                XCTAssertEqual(main[i], mon[i] * 0.5, accuracy: mon[i] * 1e-4 + 1e-7, "frame \(i)")
                if abs(main[i] - mon[i] * 0.5) > mon[i] * 1e-4 + 1e-7 { break }
            }
        }
    }

    // A jack-out removed and another added: the new port registered and
    // connected before the swap, the old one unregistered after the fade.
    func testReloadRegistersNewPortsAndUnregistersRemovedOnes() throws {
        let other = #"{"id": "out2", "type": "jack-out", "params": {"ports": ["extra_1"], "connect": ["agraph-rec:in_1"]}}"#
        let first = Self.graph([Self.tone("tone", 1000), Self.mainOut, Self.monitorOut], [("tone", "out"), ("tone", "mon")])
        let second = Self.graph([Self.tone("tone", 1000), other, Self.monitorOut], [("tone", "out2"), ("tone", "mon")])
        try reloading(first, to: second) { rec, report, failure, live in
            XCTAssertNil(failure)
            guard let report else { return XCTFail("no report") }
            XCTAssertEqual(report.added, ["out2"])
            XCTAssertEqual(report.removed, ["out"])
            let ours = live.client.ports().filter { $0.hasPrefix(live.client.name + ":") }
            XCTAssertEqual(Set(ours), ["\(live.client.name):extra_1", "\(live.client.name):mon_1"])
            // Both ports feed in_1 during the fade: old faded out, new in,
            // the same tone: one unbroken sine at its level.
            let main = Self.playing(rec, channel: 0)
            XCTAssertGreaterThan(main.count, 48000)
            XCTAssertLessThan(Self.residual(main, frequencies: [1000]).max() ?? 1, 1e-3, "continuous across the port change")
            XCTAssertEqual(Self.level(main.suffix(4800)), -12, accuracy: 0.3)
        }
    }

    // (d) A graph that cannot run here: refused, the running graph untouched.
    func testReloadThatCannotRunLeavesTheGraphUntouched() throws {
        let first = Self.graph([Self.tone("tone", 1000), Self.mainOut, Self.monitorOut], [("tone", "out"), ("tone", "mon")])
        // Validates, but names a rate the server does not run at.
        let second = first.replacingOccurrences(of: #""sampleRate": 48000"#, with: #""sampleRate": 44100"#)
            .replacingOccurrences(of: "1000", with: "2000")
        try reloading(first, to: second) { rec, report, failure, live in
            XCTAssertNil(report)
            XCTAssertTrue("\(failure.map { "\($0)" } ?? "")".contains("44100"), "\(String(describing: failure))")
            XCTAssertEqual(live.graph.sampleRate, 48000)
            for c in 0..<2 {
                let s = Self.playing(rec, channel: c)
                XCTAssertGreaterThan(s.count, 48000)
                XCTAssertLessThan(Self.residual(s, frequencies: [1000]).max() ?? 1, 1e-3, "channel \(c) untouched and continuous")
            }
        }
    }

    // (d) At the console: an invalid file is reported with its diagnostics.
    func testConsoleReloadOfAnInvalidFileReportsItsDiagnosticsAndPlaysOn() throws {
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 8)
            defer { rec.close() }
            let first = Self.graph([Self.tone("tone", 1000), Self.mainOut, Self.monitorOut], [("tone", "out"), ("tone", "mon")])
            let path = try writeGraph(first)
            _ = try writeGraph(first.replacingOccurrences(of: #""frequency": 1000"#, with: #""frequency": -5"#), "bad.json")
            let cli = try startAgraphRun(path, server: server)
            defer { cli.kill() }
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5))
            cli.send("reload bad.json\n")
            XCTAssertNotNil(cli.waitForStderr("the running graph plays on", timeout: 10), cli.stderr)
            // The same diagnostics as `agraph validate`.
            let validate = try CLIProcess(["validate", "bad.json"], directory: dir.path)
            XCTAssertTrue(validate.waitForExit(timeout: 10))
            let diagnostics = validate.stderr.split(separator: "\n").filter { $0.contains("frequency") }
            XCTAssertFalse(diagnostics.isEmpty, validate.stderr)
            for d in diagnostics { XCTAssertTrue(cli.stderr.contains(d), "\(d) in \(cli.stderr)") }
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + Int(0.5 * Self.rate), timeout: 10))
            cli.send("reload\n")
            XCTAssertNotNil(cli.waitForStderr("reload: 3 kept", timeout: 10), cli.stderr)
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + Int(0.5 * Self.rate), timeout: 10))
            cli.send("quit\n")
            assertExitsCleanly(cli)
            if rec.xruns > 0 && !isLast { throw XrunsHappened(count: rec.xruns) }
            for c in 0..<2 {
                let s = Self.playing(rec, channel: c)
                // Up to the end of the graph's output (quit stops it).
                let end = s.lastIndex(where: { $0 != 0 }).map { max($0 - 4800, 0) } ?? 0
                XCTAssertGreaterThan(end, 48000)
                XCTAssertLessThan(Self.residual(Array(s[..<end]), frequencies: [1000]).max() ?? 1, 1e-3, "channel \(c) continuous")
            }
        }
    }

    /// `agraph run`: SIGHUP reloads the file; `--watch` reloads it when it changes.
    func testSighupAndWatchReloadTheGraphFile() throws {
        let gain = { (db: Double) in #"{"id": "g", "type": "gain", "params": {"gain": \#(db)}}"# }
        let graph = { (db: Double) in
            Self.graph([Self.tone("tone", 1000), gain(db), Self.mainOut, Self.monitorOut], [("tone", "g"), ("g", "out"), ("tone", "mon")])
        }
        for watch in [false, true] {
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 10)
            defer { rec.close() }
            let path = try writeGraph(graph(0))
            let cli = try startAgraphRun(path, server: server, watch ? ["--quiet", "--watch"] : ["--quiet"])
            defer { cli.kill() }
            XCTAssertTrue(waitForSignal(rec, seconds: 0.5))
            XCTAssertEqual(Self.recentLevel(rec), -12, accuracy: 0.5)
            _ = try writeGraph(graph(-6))
            if !watch {
                usleep(600_000)
                XCTAssertFalse(cli.stderr.contains("reload:"), "no reload without SIGHUP or --watch: \(cli.stderr)")
                cli.process.send(SIGHUP)
            }
            XCTAssertNotNil(cli.waitForStderr("reload: 1 parameter changed (g.gain), 4 kept", timeout: 10), cli.stderr)
            XCTAssertTrue(rec.waitForFrames(rec.framesRecorded + Int(0.3 * Self.rate), timeout: 10))
            XCTAssertEqual(Self.recentLevel(rec), -18, accuracy: 0.5, watch ? "--watch" : "SIGHUP")
            XCTAssertEqual(Self.recentLevel(rec, channel: 1), -12, accuracy: 0.5)
            cli.send("quit\n")
            assertExitsCleanly(cli)
        }
    }
}
