import AudioGraph
import XCTest

/// The `playlist` console command's syntax, without a graph.
final class PlaylistLineTests: XCTestCase {
    func parse(_ line: String) throws -> ControlCommand? { try ControlLine.parse(line) }

    func refusal(_ line: String) -> String? {
        do { _ = try ControlLine.parse(line); return nil } catch { return error.message }
    }

    func testEveryCommandParses() throws {
        XCTAssertEqual(try parse("playlist pl add a.flac"), .playlist(node: "pl", .add(PlaylistItem(path: "a.flac"))))
        XCTAssertEqual(try parse("playlist pl add a.flac 1.5 - -6"),
                       .playlist(node: "pl", .add(PlaylistItem(path: "a.flac", start: 1.5, end: nil, gain: -6))))
        XCTAssertEqual(try parse("playlist pl add a.flac 1.5 60"),
                       .playlist(node: "pl", .add(PlaylistItem(path: "a.flac", start: 1.5, end: 60))))
        XCTAssertEqual(try parse("playlist pl insert 0 /m/b.m4a 0 10 3"),
                       .playlist(node: "pl", .insert(PlaylistItem(path: "/m/b.m4a", start: 0, end: 10, gain: 3), at: 0)))
        XCTAssertEqual(try parse("playlist pl remove 2"), .playlist(node: "pl", .remove(at: 2)))
        XCTAssertEqual(try parse("playlist pl move 3 0"), .playlist(node: "pl", .move(from: 3, to: 0)))
        XCTAssertEqual(try parse("playlist pl next"), .playlist(node: "pl", .next))
        XCTAssertEqual(try parse("playlist pl clear\r"), .playlist(node: "pl", .clear))
        XCTAssertEqual(try parse("  playlist   pl   list "), .playlist(node: "pl", .list))
    }

    func testAQuotedPathHoldsSpacesAndQuotes() throws {
        XCTAssertEqual(try parse(#"playlist pl add "my music/a \"live\".flac" 2"#),
                       .playlist(node: "pl", .add(PlaylistItem(path: #"my music/a "live".flac"#, start: 2))))
        XCTAssertEqual(refusal(#"playlist pl add "a.flac"#), "a double quote is not closed")
    }

    func testMistakesAreSaidInWords() {
        XCTAssertEqual(refusal("playlist pl"), "playlist takes a node and a command: " + "playlist NODE add PATH [START [END [GAIN]]] | insert INDEX PATH [START [END [GAIN]]] | remove INDEX | move FROM TO | next | clear | list")
        XCTAssertEqual(refusal("playlist pl remove"), "playlist remove takes an index: playlist NODE remove INDEX")
        XCTAssertEqual(refusal("playlist pl remove -1"), "playlist remove: '-1' is not an index (0, 1, …)")
        XCTAssertEqual(refusal("playlist pl move 1"), "playlist move takes two indexes: playlist NODE move FROM TO")
        XCTAssertEqual(refusal("playlist pl next now"), "'playlist NODE next' takes nothing more")
        XCTAssertEqual(refusal("playlist pl add a.flac inf"), "playlist add: START 'inf' is not a time in seconds (0 or more)")
        XCTAssertEqual(refusal("playlist pl add a.flac 5 5"), "playlist add: END '5' must be a time in seconds after START (or - for the item's end)")
        XCTAssertEqual(refusal("playlist pl add a.flac 0 - nan"), "playlist add: GAIN 'nan' must be a number of dB from -96 to 24")
        XCTAssertEqual(refusal("playlist pl add a.flac 0 1 0 extra"), "playlist add: too many words after the path: PATH [START [END [GAIN]]]")
        XCTAssertEqual(refusal("playlist pl insert"), "playlist insert takes an index and a path: playlist NODE insert INDEX PATH [START [END [GAIN]]]")
        XCTAssertEqual(refusal("playlist pl insert x a.flac"), "playlist insert: 'x' is not an index (0, 1, …)")
    }

    func testHelpListsThePlaylistCommands() {
        XCTAssertTrue(ControlLine.help.contains("playlist NODE add PATH [START [END [GAIN]]]"))
        XCTAssertTrue(ControlLine.help.contains("playlist NODE next | clear | list"))
    }
}
