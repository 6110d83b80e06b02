import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import Foundation
import TestSupport
import XCTest

/// A playlist played live by `agraph run`, edited at its prompt: the
/// replies and the item events on stdout, in the order they are heard.
final class PlaylistLiveTests: LiveTestCase {
    /// The plugins, with `ffmpeg` among them; a skip when it does not load
    /// here (Swift plugins do not load into the ThreadSanitizer build).
    func plugins() throws -> PluginCatalog {
        let catalog = PluginCatalog.load()
        guard catalog.types.contains(where: { $0.descriptor.typeID == "ffmpeg" }) else {
            throw XCTSkip("the ffmpeg decoder plugin does not load in this build: \(catalog.note)")
        }
        return catalog
    }

    func testPlaylistCommandsAtThePromptAndItsEventsOnStdout() throws {
        _ = try plugins()
        for (name, frequency) in [("a.wav", 440.0), ("b.wav", 660), ("c.wav", 880)] {
            try writeSoundFile(dir.file(name), format: .wavFloat32, channels: 1, sampleRate: Self.rate,
                               samples: Synth.sine(frequency: frequency, amplitude: 0.5, sampleRate: Self.rate, frames: Int(Self.rate)))
        }
        let graph = #"{"format": "agraph/1", "nodes": [{"id": "pl", "type": "playlist", "params": {"items": [{"path": "a.wav"}, {"path": "b.wav"}, {"path": "c.wav"}]}}, {"id": "out", "type": "jack-out"}], "links": [{"from": "pl", "to": "out"}]}"#
        var lines: [String] = []
        try atTheConsole(of: graph) { cli in
            XCTAssertTrue(waitUntil(timeout: 10) { cli.stdout.contains("pl: item 0 started: ") }, cli.stdout + cli.stderr)
            // Move c before b, skip a, add a file that is not there (it
            // fails at its turn: reported, and the playlist ends after it).
            cli.write(Array("playlist pl move 2 1\nplaylist pl next\nplaylist pl add missing.flac\nplaylist pl list\n".utf8))
            // The graph ends on its own after the last item.
            XCTAssertTrue(waitUntil(timeout: 15) { cli.stdout.contains("pl: item 3 failed: ") }, cli.stdout + cli.stderr)
            lines = cli.stdout.split(separator: "\n").map(String.init)
        }
        let events = lines.filter { $0.hasPrefix("pl: item ") }.map { line in
            line.split(separator: ":").prefix(2).joined(separator: ":")
        }
        XCTAssertEqual(events, ["pl: item 0 started", "pl: item 0 skipped", "pl: item 1 started", "pl: item 1 ended",
                                "pl: item 2 started", "pl: item 2 ended", "pl: item 3 failed"], lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("pl: item 1 started: ") && $0.hasSuffix("/c.wav") }, "c moved before b")
        XCTAssertTrue(lines.contains { $0.hasPrefix("pl: item 3 failed: cannot read ") && $0.contains("missing.flac: no such file or directory") },
                      lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("pl: added item 3: ") && $0.hasSuffix("/missing.flac") }, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("pl: moved item 2 to 1: ") && $0.hasSuffix("/c.wav") }, lines.joined(separator: "\n"))
        // The list, in its edited order. Which item it marks (`>` playing,
        // `+` next) depends on how far `next` has got when `list` runs: the
        // skip may be under way, with nothing playing for that instant.
        let listed = lines.filter { $0.count > 2 && [">", "+", " "].contains($0.first) && $0.dropFirst(2).first?.isNumber == true }
        XCTAssertEqual(listed.map { String($0.dropFirst(2).prefix(1)) + ($0.split(separator: "/").last.map { "/" + $0 } ?? "") },
                       ["0/a.wav", "1/c.wav", "2/b.wav", "3/missing.flac"], "the list: " + lines.joined(separator: "\n"))
        XCTAssertTrue(listed.contains { $0.hasPrefix(">") || $0.hasPrefix("+") }, "list marks the item playing or next")
    }

    /// The same through the Swift API: `control.playlist` edits, and the
    /// events arrive on `RunningGraph.events` as `.playlist`.
    func testRunningGraphEventsCarryThePlaylistsItems() throws {
        // The ffmpeg plugin, or where it does not load (the ThreadSanitizer
        // build) a decoder double for the float WAV items: the playlist's
        // threads run all the same.
        let catalog = PluginCatalog.load()
        let hasPlugin = catalog.types.contains { $0.descriptor.typeID == "ffmpeg" }
        for (name, frequency) in [("a.wav", 440.0), ("b.wav", 660)] {
            try writeSoundFile(dir.file(name), format: .wavFloat32, channels: 2, sampleRate: Self.rate,
                               samples: Synth.sine(frequency: frequency, amplitude: 0.5, sampleRate: Self.rate, frames: 2 * Int(Self.rate)))
        }
        let server = try TestJACKServer()
        defer { server.stop() }
        let live = try startGraph("""
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "pl", "type": "playlist", "params": {"items": [{"path": "a.wav"}]}},
              {"id": "out", "type": "jack-out"}],
             "links": [{"from": "pl", "to": "out"}]}
            """, server: server.name, clientName: "agraph-playlist", registry: { binder in
                var registry = NodeRegistry.builtIn.addingJACK(binder)
                if hasPlugin { _ = registry.register(plugins: catalog) } else { registry.register(FloatPCMDecoderDouble()) }
                return registry
            })
        defer { live.stop() }
        let log = EventLog(live.events)
        func playlistEvent(_ kind: PlaylistEvent.Kind, _ item: Int) -> Bool {
            log.wait(timeout: 10) { e in
                if case .playlist(let p) = e { return p.node == "pl" && p.kind == kind && p.item == item }
                return false
            } != nil
        }
        XCTAssertTrue(playlistEvent(.started, 0), "\(log.all)")
        let added = try live.control.playlist("pl", .add(PlaylistItem(path: dir.file("b.wav"), end: 0.5)))
        XCTAssertTrue(added.hasPrefix("pl: added item 1: ") && added.hasSuffix("/b.wav"), added)
        XCTAssertEqual(try live.control.playlist("pl", .next), "pl: next")
        XCTAssertTrue(playlistEvent(.skipped, 0), "\(log.all)")
        XCTAssertTrue(playlistEvent(.started, 1), "\(log.all)")
        XCTAssertTrue(playlistEvent(.ended, 1), "\(log.all)")
        XCTAssertTrue(waitUntil(timeout: 5) { live.engine.isFinished }, "the playlist ends after its last item")
        XCTAssertEqual(live.status().underruns, 0, "no underrun at the switches")
    }
}
