import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Every item is checked before anything runs; each problem names the
/// item's field with a JSON pointer (in the graph), or the list file with
/// its line, column and pointer.
final class PlaylistValidationTests: PlaylistTestCase {
    func diagnostics(_ json: String, registry: NodeRegistry? = nil) -> [String] {
        let r = registry ?? TestGraph.pluginRegistry(["main": CaptureStore(capacityFrames: 1)]).registry
        switch TestGraph.validate(json, registry: r, directory: dir.path) {
        case .success: return []
        case .failure(let errors): return errors.diagnostics.map { "\($0.pointer.description): \($0.message)" }
        }
    }

    func testEachBadItemIsReportedAtItsField() throws {
        try sineFile("a.flac", seconds: 1)
        try sineFile("three.wav", frequencies: [500, 700, 900], format: .wavFloat32)
        try Data("not media at all".utf8).write(to: URL(fileURLWithPath: dir.file("garbage.m4a")))
        let found = diagnostics(graph(#""items": [{"path": "a.flac", "start": 2}, {"path": "missing.flac"}, {"path": "garbage.m4a"}, {"path": "a.flac", "start": 0.5, "end": 0.25}, {"path": "three.wav"}, {"path": "a.flac"}]"#))
        XCTAssertEqual(found.count, 5, "\(found)")
        let expected = [
            ("/nodes/0/params/items/0/start", "start at 2 s is past the end of"),
            ("/nodes/0/params/items/1/path", "missing.flac: no such file or directory"),
            ("/nodes/0/params/items/2/path", "garbage.m4a: Invalid data"),
            ("/nodes/0/params/items/3/end", "end (0.25 s) must be after start (0.5 s)"),
            ("/nodes/0/params/items/4/path", "has 3 channels (channel positions the project has no layout for): there is no standard matrix from it to the playlist's stereo"),
        ]
        for (pointer, words) in expected {
            XCTAssertTrue(found.contains { $0.hasPrefix(pointer + ": ") && $0.contains(words) }, "\(pointer): \(words)\nin \(found)")
        }
    }

    func testFieldsAreTypeCheckedWithAPointerToEach() {
        let found = diagnostics(graph(#""items": [{"path": "a.flac", "gian": 3}, {"start": 1}, {"path": "a.flac", "gain": 40}, 7, {"path": ""}]"#))
        XCTAssertEqual(found, [
            #"/nodes/0/params/items/0/gian: "items"[0] has no field "gian"; did you mean "gain"? its fields: path, start, end, gain"#,
            #"/nodes/0/params/items/1: "items"[1] has no "path" (path): The media file (anything FFmpeg opens); relative to the folder of the file that names it."#,
            #"/nodes/0/params/items/2/gain: "items[2].gain" = 40 is out of range; allowed: -96…24 dB"#,
            #"/nodes/0/params/items/3: "items"[3] must be an object with "path", "start", "end", "gain"; found integer 7"#,
            #"/nodes/0/params/items/4/path: "items[4].path" must be a non-empty path"#,
        ])
    }

    func testAListFilesProblemsNameItsLineColumnAndPointer() throws {
        try sineFile("a.flac", seconds: 1)
        try "[{\"path\": \"a.flac\"},\n {\"path\": \"a.flac\", \"start\": \"soon\"}]".write(toFile: dir.file("typed.json"), atomically: true, encoding: .utf8)
        try "{\"items\": [{\"path\": \"a.flac\"},\n  {\"path\": \"gone.flac\"}]}".write(toFile: dir.file("missing.json"), atomically: true, encoding: .utf8)
        try "[{\"path\": ".write(toFile: dir.file("broken.json"), atomically: true, encoding: .utf8)
        let typed = diagnostics(graph(#""file": "typed.json""#))
        XCTAssertEqual(typed.count, 1)
        XCTAssertTrue(typed.first?.hasPrefix("/nodes/0/params/file: ") == true && typed.first?.contains("typed.json:2:30: /1/start: \"items[1].start\" must be a number; found string \"soon\"") == true, "\(typed)")
        let missing = diagnostics(graph(#""file": "missing.json""#))
        XCTAssertTrue(missing.first?.contains("missing.json:2:3: /items/1/path: cannot read ") == true && missing.first?.contains("gone.flac") == true, "\(missing)")
        let broken = diagnostics(graph(#""file": "broken.json""#))
        XCTAssertTrue(broken.first?.contains("broken.json:1:") == true && broken.first?.contains("malformed JSON") == true, "\(broken)")
    }

    func testItemsOrFileAndADecoder() throws {
        try sineFile("a.flac", seconds: 1)
        try "[]".write(toFile: dir.file("empty.json"), atomically: true, encoding: .utf8)
        XCTAssertEqual(diagnostics(graph(#""layout": "5.1""#)),
                       [#"/nodes/0: give "items" (a list of {"path", "start", "end", "gain"}) or "file" (a JSON file of them)"#])
        XCTAssertEqual(diagnostics(graph(#""items": [{"path": "a.flac"}], "file": "empty.json""#)),
                       [#"/nodes/0/params/file: give "items" or "file", not both"#])
        XCTAssertEqual(diagnostics(graph(#""items": []"#)), ["/nodes/0/params/items: the playlist has no items"])
        XCTAssertEqual(diagnostics(graph(#""file": "empty.json""#)), ["/nodes/0/params/file: the playlist has no items"])
        // Without the ffmpeg plugin: the playlist says what it needs.
        let plain = diagnostics(graph(#""items": [{"path": "a.flac"}]"#), registry: TestGraph.registry(["main": CaptureStore(capacityFrames: 1)]))
        XCTAssertTrue(plain.first?.contains("the ffmpeg decoder plugin (libAGraphFFmpegPlugin.so), which is not loaded") == true, "\(plain)")
    }

    /// An output onto a playlist's item is refused as an output onto any input.
    func testAnOutputOntoAnItemIsRefused() throws {
        try sineFile("a.flac", seconds: 1)
        let found = diagnostics("""
            {"format": "agraph/1", "nodes": [{"id": "pl", "type": "playlist", "params": {"items": [{"path": "a.flac"}]}},
                                             {"id": "out", "type": "file-out", "params": {"path": "a.flac"}}],
             "links": [{"from": "pl", "to": "out"}]}
            """)
        XCTAssertTrue(found.contains { $0.hasPrefix("/nodes/1/params/path: ") && $0.contains("which 'pl' reads (/nodes/0/params/items/0/path)") }, "\(found)")
    }
}
