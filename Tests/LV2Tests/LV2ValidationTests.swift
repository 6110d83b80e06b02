import AudioGraph
import Foundation
import TestSupport
import XCTest

/// What `agraph validate` says about `lv2` nodes, before anything runs:
/// parameters checked against the plugin's description with a JSON
/// pointer; unknown URIs, missing features and broken bundles as clear
/// errors; state saved and restored.
final class LV2ValidationTests: XCTestCase {
    func testAParameterOutOfTheRangeOfItsPortIsAnErrorAtItsPointer() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.amp)", "gain": 90}"#))
        let e = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/gain" }, "\(d)")
        XCTAssertTrue(e.message.contains("-70") && e.message.contains("70"), e.message)
        XCTAssertEqual(e.nodeID, "fx")
    }

    /// A port in Hz (`lv2:sampleRate`: its bounds are fractions of the
    /// rate) is range-checked live as in the file, at the graph's rate.
    func testALiveChangeOfAPortInHzIsCheckedAgainstItsRangeAtTheGraphsRate() throws {
        try LV2Plugins.require(LV2Plugins.lowpass)
        let json = lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.lowpass)", "cutoff": 960}"#)
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.lowpass)", "cutoff": 1e9}"#))
        let fileError = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/cutoff" }, "\(d)")
        let compiled = try renderLV2(json, frames: 256).compiled
        XCTAssertNoThrow(try compiled.set("fx.cutoff", 2000))
        XCTAssertThrowsError(try compiled.set("fx.cutoff", 1e9)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("fx.cutoff") && text.contains("Hz") && text.contains("at 48000 Hz"), text)
            XCTAssertTrue(text.contains(fileError.message), "the same words as validation: \(text) / \(fileError.message)")
        }
    }

    func testAnUnknownParameterNamesThePluginsPorts() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.amp)", "gian": 3}"#))
        let e = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/gian" }, "\(d)")
        XCTAssertTrue(e.message.contains("did you mean \"gain\""), e.message)
    }

    func testAnEnumerationTakesOnlyItsNames() throws {
        try LV2Plugins.require(LV2Plugins.nodelay)
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.nodelay)", "report_latency": "Sometimes"}"#))
        let e = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/report_latency" }, "\(d)")
        XCTAssertTrue(e.message.contains("Delay and report latency"), e.message)
    }

    func testAnUnknownURINamesLV2PathAndSuggestsCloseOnes() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "http://plugin.org.uk/swh-plugins/ampp"}"#))
        let e = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/uri" }, "\(d)")
        XCTAssertTrue(e.message.contains("LV2_PATH="), e.message)
        XCTAssertTrue(e.message.contains("did you mean \"\(LV2Plugins.amp)\""), e.message)
    }

    func testAMonoPluginOnAStereoStreamAsksForPerChannel() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let d = diagnostics(lv2Graph(source: tone(1000, channels: 2), params: #"{"uri": "\#(LV2Plugins.amp)"}"#))
        XCTAssertTrue(d.contains { $0.message.contains("\"instances\": \"per-channel\"") }, "\(d)")
    }

    // MARK: bundles AudioGraph cannot host

    /// A bundle of its own: manifest.ttl naming plugin `uri` in `plugin.ttl`.
    func writeBundle(_ dir: TemporaryDirectory, name: String, uri: String, pluginTTL: String) throws -> String {
        let folder = dir.file(name + ".lv2")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
            <\(uri)> a lv2:Plugin ; lv2:binary <\(name).so> ; rdfs:seeAlso <plugin.ttl> .
            """.write(toFile: folder + "/manifest.ttl", atomically: true, encoding: .utf8)
        try pluginTTL.write(toFile: folder + "/plugin.ttl", atomically: true, encoding: .utf8)
        return folder
    }

    static let prefixes = """
        @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
        @prefix doap: <http://usefulinc.com/ns/doap#> .

        """

    static func ports(_ uri: String, extra: String) -> String {
        prefixes + """
            <\(uri)> a lv2:Plugin ; doap:name "Fixture" ; \(extra)
                lv2:port [ a lv2:AudioPort , lv2:InputPort ; lv2:index 0 ; lv2:symbol "in" ; lv2:name "In" ] ,
                         [ a lv2:AudioPort , lv2:OutputPort ; lv2:index 1 ; lv2:symbol "out" ; lv2:name "Out" ] .
            """
    }

    /// A plugin that requires a feature AudioGraph does not give: the
    /// validation error names the feature; nothing is loaded or run.
    func testAPluginRequiringAFeatureAudioGraphDoesNotGiveIsUnavailableWithTheFeatureNamed() throws {
        let dir = try TemporaryDirectory()
        let uri = "urn:audiograph:test:needs-imaginary"
        LV2World.shared.loadBundle(try writeBundle(dir, name: "needs", uri: uri,
            pluginTTL: Self.ports(uri, extra: "lv2:requiredFeature <http://example.org/ns/ext#imaginary> ;")))
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "\#(uri)"}"#))
        let e = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/uri" }, "\(d)")
        XCTAssertTrue(e.message.contains("unavailable") && e.message.contains("<http://example.org/ns/ext#imaginary>"), e.message)
    }

    /// A bundle whose plugin description is not valid Turtle: a clear
    /// error for that plugin, no crash; other plugins still work.
    func testABundleWithBrokenTurtleIsAnErrorNotACrash() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let dir = try TemporaryDirectory()
        let uri = "urn:audiograph:test:broken"
        LV2World.shared.loadBundle(try writeBundle(dir, name: "broken", uri: uri,
            pluginTTL: Self.prefixes + "<\(uri)> a lv2:Plugin ; doap:name \"Broken ; lv2:port [ a ,, ] ."))
        let d = diagnostics(lv2Graph(source: tone(1000), params: #"{"uri": "\#(uri)"}"#))
        let e = try XCTUnwrap(d.first { $0.pointer.description == "/nodes/1/params/uri" }, "\(d)")
        XCTAssertTrue(e.message.contains("broken description") || e.message.contains("audio input"), e.message)
        // The world still serves other plugins.
        let out = try renderLV2(lv2Graph(source: tone(1000, level: -20), params: #"{"uri": "\#(LV2Plugins.amp)", "gain": 6}"#), frames: 9600).samples[0]
        XCTAssertEqual(SignalAnalysis.sineLevelDBFS(out[4800..<9600]), -14, accuracy: 0.25)
    }

    // MARK: state

    /// The state a node saves (its port values, here after a live change)
    /// restores into a node made from it: the same settings, the same
    /// output sample for sample; the graph's own non-default value wins
    /// over the state.
    func testStateRoundTripsThroughSaveAndRestore() throws {
        try LV2Plugins.require(LV2Plugins.mdaDelay)
        let source = tone(700, level: -20, channels: 2)
        let first = lv2Graph(source: source, params: #"{"uri": "\#(LV2Plugins.mdaDelay)"}"#)
        var saved = ""
        _ = try renderLV2(first, frames: 2048) { block, compiled in
            if block == 0 {
                try compiled.set("fx.l_delay", 0.1)
                try compiled.set("fx.feedback", 0.25)
            }
            if block == 2, let node = compiled.engine.node("fx") { saved = try LV2State.save(node) }
        }
        XCTAssertTrue(saved.contains("l_delay") && saved.contains("feedback"), saved)
        let escaped = saved.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\t", with: "\\t")
        let restored = lv2Graph(source: source, params: #"{"uri": "\#(LV2Plugins.mdaDelay)", "state": "\#(escaped)"}"#)
        let explicit = lv2Graph(source: source, params: #"{"uri": "\#(LV2Plugins.mdaDelay)", "l_delay": 0.1, "feedback": 0.25}"#)
        let a = try renderLV2(restored, frames: 24000).samples
        let b = try renderLV2(explicit, frames: 24000).samples
        let defaults = try renderLV2(first, frames: 24000).samples
        XCTAssertTrue(a == b, "restored from the state = set by parameters")
        XCTAssertFalse(a == defaults, "and not the defaults")
        // A parameter written with another value than the default wins.
        let over = lv2Graph(source: source, params: #"{"uri": "\#(LV2Plugins.mdaDelay)", "state": "\#(escaped)", "feedback": 0.5}"#)
        let c = try renderLV2(over, frames: 24000).samples
        let d = try renderLV2(lv2Graph(source: source, params: #"{"uri": "\#(LV2Plugins.mdaDelay)", "l_delay": 0.1, "feedback": 0.5}"#), frames: 24000).samples
        XCTAssertTrue(c == d, "the written feedback over the state's")
    }

    /// Issue 22 item 13: refused by `validate` (it passed, and failed only
    /// at render with the node named twice), at the state's pointer and
    /// position, the node named once, the place in the Turtle said.
    func testAStateLilvCannotReadIsAClearError() throws {
        try LV2Plugins.require(LV2Plugins.amp)
        let json = lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.amp)",\#n "state": "@prefix a: <urn:a#> .\nnot turtle at all {"}"#)
        let found = diagnostics(json).filter { $0.severity == .error && $0.pointer.display.hasPrefix("/nodes/1") }
        XCTAssertEqual(found.count, 1, found.map(\.description).joined(separator: "\n"))
        let d = try XCTUnwrap(found.first)
        XCTAssertEqual(d.pointer.display, "/nodes/1/params/state")
        XCTAssertEqual(d.nodeID, "fx")
        XCTAssertEqual(d.location?.line, 4, "the line of the state's value in the file: \(d)")
        XCTAssertTrue(d.message.contains("line 2, column"), d.message)
        XCTAssertFalse(d.message.contains("node 'fx'"), "named once, by the diagnostic: \(d)")
        XCTAssertEqual(d.description.components(separatedBy: "fx").count, 2, d.description)
    }

    /// Turtle that parses but holds no state, or another plugin's state:
    /// refused at validation too.
    func testAStateThatIsNoStateOrAnotherPluginsIsAnErrorAtValidation() throws {
        try LV2Plugins.require(LV2Plugins.amp, LV2Plugins.mdaDelay)
        let noState = lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.amp)", "state": "<urn:x> <urn:y> <urn:z> ."}"#)
        let a = diagnostics(noState).filter { $0.severity == .error && $0.pointer.display.hasPrefix("/nodes/1") }
        XCTAssertEqual(a.map(\.pointer.display), ["/nodes/1/params/state"], a.map(\.description).joined(separator: "\n"))
        XCTAssertTrue(a.first?.message.contains("no LV2 state") ?? false, a.first?.message ?? "")
        // The state mda Delay saves, given to SWH's amp.
        var saved = ""
        _ = try renderLV2(lv2Graph(source: tone(700, channels: 2), params: #"{"uri": "\#(LV2Plugins.mdaDelay)"}"#), frames: 512) { block, compiled in
            if block == 1, let node = compiled.engine.node("fx") { saved = try LV2State.save(node) }
        }
        let escaped = saved.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\t", with: "\\t")
        let other = lv2Graph(source: tone(1000), params: #"{"uri": "\#(LV2Plugins.amp)", "state": "\#(escaped)"}"#)
        let b = diagnostics(other).filter { $0.severity == .error && $0.pointer.display.hasPrefix("/nodes/1") }
        XCTAssertEqual(b.map(\.pointer.display), ["/nodes/1/params/state"], b.map(\.description).joined(separator: "\n"))
        XCTAssertTrue(b.first?.message.contains("not of \"\(LV2Plugins.amp)\"") ?? false, b.first?.message ?? "")
    }
}
