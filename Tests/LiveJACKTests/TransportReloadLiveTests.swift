import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest

/// Hot reload with JACK transport followers: a reload while the transport
/// rolls keeps a kept follower on the transport's frame through the swap
/// and its crossfade, and a reload that brings the first follower makes
/// the graph a slow-sync client that follows from then on.
extension TransportLiveTests {
    /// `twoSourceGraph` with a gain between the free source and its port.
    static func twoSourceGraphWithGain(transport: String?) -> String {
        let t = transport.map { #", "transport": "\#($0)""# } ?? ""
        return """
            {"format": "agraph/1", "name": "transport", "sampleRate": 48000, "nodes": [
              {"id": "song", "type": "file", "params": {"path": "numbered.wav"\(t)}},
              {"id": "free", "type": "file", "params": {"path": "numbered.wav", "loop": true}},
              {"id": "g", "type": "gain", "params": {"gain": -6}},
              {"id": "out", "type": "jack-out", "params": {"ports": ["follow"], "connect": ["agraph-rec:in_1"]}},
              {"id": "out2", "type": "jack-out", "params": {"ports": ["free"], "connect": ["agraph-rec:in_2"]}}],
             "links": [{"from": "song", "to": "out"}, {"from": "free", "to": "g"}, {"from": "g", "to": "out2"}]}
            """
    }

    func validated(_ json: String, for live: RunningGraph) throws -> ValidatedGraph {
        try GraphValidator(registry: .builtIn.addingJACK(live.binder))
            .validate(bytes: Array(json.utf8), file: "reloaded.json", directory: dir.path).get()
    }

    /// The follower is kept (a gain added on the free branch) while the
    /// transport rolls: cycle by cycle it plays the transport's frame
    /// through the swap and the crossfade, in one unbroken run; no
    /// allocation on the process thread.
    func testAReloadWhileRollingKeepsTheFollowerOnTheTransportsFrame() throws {
        try writeNumberedFile()
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 30)
            defer { rec.close() }
            let live = try startGraph(Self.twoSourceGraph(transport: "follow"), server: server.name) { options in
                options.threadInit = { _ in MallocCounter.beginThread() }
            }
            defer { live.stop() }
            try jackTransport(server, "locate 48000", "play")
            let rolling = try XCTUnwrap(waitForTransport(live) { $0.state == .rolling && $0.located && $0.frame > 48000 + 9600 },
                                        "\(live.status())")
            MallocCounter.reset()
            let report = try live.reload(graph: try validated(Self.twoSourceGraphWithGain(transport: "follow"), for: live))
            XCTAssertEqual(report.added, ["g"])
            XCTAssertFalse(report.replaced.contains("song") || report.replaced.contains("out"), "\(report)")
            XCTAssertTrue(waitUntil(timeout: 5) { !live.isReloading })
            XCTAssertEqual(live.transportFollowers, ["song"])
            XCTAssertNotNil(waitForTransport(live) { $0.frame >= rolling.frame + 48000 }, "\(live.status())")
            let mallocs = MallocCounter.total
            try checkNoXruns(rec, live, isLast: isLast)
            if MallocCounter.isAvailable { XCTAssertEqual(mallocs, 0, "allocations on the process thread across the reload") }
            XCTAssertEqual(live.status().transport?.located, true)

            let recorded = rec.framesRecorded
            let check = Self.followsTransport(rec, channel: 0, recorded: recorded)
            XCTAssertEqual(check.problems, [], "the follower against the transport, cycle by cycle, across the reload")
            guard max(rec.xruns, live.status().xruns) == 0 else { return }
            let runs = Self.runs(rec.samples(0, 0..<recorded)).runs
            XCTAssertEqual(runs.count, 1, "one unbroken run through the reload: \(runs)")
            // The free branch went through the new gain: its numbered
            // frames step by 2^-24 × 10^(-6/20) per sample at the end.
            let tail = rec.samples(1, (recorded - 4800)..<recorded).map(Double.init)
            if let a = tail.first, let b = tail.last, b > a {
                let step = (b - a) / Double(tail.count - 1) * 16_777_216
                XCTAssertEqual(step, pow(10, -6.0 / 20), accuracy: 1e-3, "the free port 6 dB down after the reload")
            }
        }
    }

    /// A graph without followers reloads into one whose `song` follows:
    /// the new follower is located where the rolling transport is and
    /// plays its frame; then stop, locate and play move it sample-exactly
    /// (the graph became a slow-sync client at the reload).
    func testAReloadThatBringsTheFirstFollowerFollowsTheTransportFromThen() throws {
        try writeNumberedFile()
        try retryingOnXruns { isLast in
            let server = try TestJACKServer()
            defer { server.stop() }
            let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 30)
            defer { rec.close() }
            let live = try startGraph(Self.twoSourceGraph(transport: nil), server: server.name)
            defer { live.stop() }
            XCTAssertEqual(live.transportFollowers, [])
            XCTAssertNil(live.status().transport)
            try jackTransport(server, "locate 48000", "play")
            XCTAssertTrue(waitUntil(timeout: 5) { rec.cycleLog.last.map { $0.isRolling && $0.transportFrame > 48000 } ?? false })

            let report = try live.reload(graph: try validated(Self.twoSourceGraph(transport: "follow"), for: live))
            XCTAssertEqual(report.replaced, ["song", "out"], "\(report)")
            XCTAssertTrue(waitUntil(timeout: 5) { !live.isReloading })
            XCTAssertEqual(live.transportFollowers, ["song"])
            let joined = try XCTUnwrap(waitForTransport(live) { $0.state == .rolling && $0.located }, "\(live.status())")
            let mark = rec.framesRecorded
            XCTAssertNotNil(waitForTransport(live) { $0.frame >= joined.frame + 24000 }, "\(live.status())")

            // Stopped, located, started: the slow-sync client holds the
            // start until the follower is at 240000.
            try jackTransport(server, "stop")
            XCTAssertNotNil(waitForTransport(live) { $0.state == .stopped }, "\(live.status())")
            try jackTransport(server, "locate 240000")
            XCTAssertNotNil(waitForTransport(live) { $0.frame == 240000 && $0.located }, "\(live.status())")
            try jackTransport(server, "play")
            XCTAssertNotNil(waitForTransport(live) { $0.state == .rolling && $0.frame >= 240000 + 24000 }, "\(live.status())")
            try checkNoXruns(rec, live, isLast: isLast)

            let recorded = rec.framesRecorded
            let after = rec.cycleLog.filter { ($0.at ?? 0) >= mark }
            XCTAssertFalse(after.isEmpty)
            var problems: [String] = []
            for cycle in after {
                guard let at = cycle.at, at + cycle.frames <= recorded else { continue }
                let s = rec.samples(0, at..<(at + cycle.frames))
                guard s.contains(where: { $0 != 0 }) else { continue }
                guard cycle.isRolling else { problems.append("rec \(at): sound while the transport stands"); continue }
                if let j = s.indices.first(where: { Self.frameIndex(s[$0]) != cycle.transportFrame + $0 }) {
                    problems.append("rec \(at + j): frame \(Self.frameIndex(s[j]).map(String.init) ?? "\(s[j])") where the transport is at \(cycle.transportFrame + j)")
                }
            }
            XCTAssertEqual(problems, [], "after the reload, the new follower against the transport, cycle by cycle")
            let runs = Self.runs(rec.samples(0, mark..<recorded)).runs
            XCTAssertTrue(Self.startsInOrder(runs, [240000]), "a run from exactly 240000 after locate and play: \(runs)")
        }
    }
}
