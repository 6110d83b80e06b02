import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Damaged media live: `media` → `ffmpeg` conceals damage during playback
/// whatever `onError` says (as `playlist` does), so a live run that met a
/// damaged file still ends with status 0; the damage is reported, never
/// silent. Offline, the same graph fails (Tests/CLITests/DamagedInputTests.swift).
final class DamagedMediaLiveTests: LiveTestCase {
    func testLivePlaybackOfDamagedMediaConcealsReportsAndExitsZero() throws {
        guard PluginCatalog.load().types.contains(where: { $0.descriptor.typeID == "ffmpeg" }) else {
            throw XCTSkip("the ffmpeg decoder plugin does not load in this build")
        }
        do {
            try DamagedFLAC.make(intact: dir.file("tone.flac"), damaged: dir.file("bad.flac"))
        } catch let e as DamagedFLAC.Unavailable {
            throw XCTSkip(e.description)
        }
        let graph = try writeGraph("""
            {"format": "agraph/1", "nodes": [
              {"id": "src", "type": "media", "params": {"path": "bad.flac", "onError": "fail"}},
              {"id": "dec", "type": "ffmpeg"},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}]}
            """, "damaged-live.json")
        let server = try TestJACKServer()
        defer { server.stop() }
        let cli = try startAgraphRun(graph, server: server)
        defer { cli.kill() }
        // The file is short: the graph ends by itself at its end.
        assertExitsCleanly(cli, timeout: 30)
        XCTAssertTrue(cli.stderr.contains("damaged") || cli.stderr.contains("concealed"),
                      "the damage is reported: \(cli.stderr)")
        XCTAssertFalse(cli.stderr.contains("the render stopped there"), "live playback does not fail on damage: \(cli.stderr)")
    }
}
