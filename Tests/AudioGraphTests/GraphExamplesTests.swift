import AudioGraph
import AudioGraphJACK
import Foundation
import TestSupport
import XCTest

/// The graph files shipped in `Graphs/`: the valid examples validate and
/// render, each file in `Graphs/invalid/` fails with the diagnostic it is
/// named for, and `docs/graph.schema.json` matches the node descriptors.
final class GraphExamplesTests: XCTestCase {
    /// The repository: this file is `Tests/AudioGraphTests/GraphExamplesTests.swift`.
    static let repoRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let graphsDir = repoRoot.appendingPathComponent("Graphs")
    static let invalidDir = graphsDir.appendingPathComponent("invalid")

    /// What validating one invalid graph must report, among its diagnostics.
    struct Expectation: Sendable {
        /// RFC 6901 form (`""` for the whole document).
        var pointer: String
        /// Phrases the message must contain.
        var phrases: [String]
        /// The node the diagnostic names, if any.
        var node: String? = nil
        /// line:column, when the test pins it.
        var line: Int? = nil
        var column: Int? = nil
    }

    /// One entry per file in `Graphs/invalid/`; a new file needs a new entry.
    static let expectations: [String: Expectation] = [
        "malformed-json.json": .init(pointer: "", phrases: ["malformed JSON", "expected ',' or '}'"], line: 6, column: 40),
        "wrong-format.json": .init(pointer: "/format", phrases: ["unsupported format \"agraph/2\"", "agraph/1"]),
        "duplicate-node-ids.json": .init(pointer: "/nodes/1/id", phrases: ["duplicate node id \"tone\"", "/nodes/0"], node: "tone"),
        "unknown-node-type.json": .init(pointer: "/nodes/0/type", phrases: ["unknown node type \"test-tome\"", "did you mean \"test-tone\""], node: "tone"),
        "unknown-parameter.json": .init(pointer: "/nodes/0/params/frequncy", phrases: ["no parameter \"frequncy\"", "did you mean \"frequency\""], node: "tone"),
        "missing-required-parameter.json": .init(pointer: "/nodes/1/params/path", phrases: ["missing required parameter \"path\""], node: "out"),
        "mistyped-parameter.json": .init(pointer: "/nodes/0/params/frequency", phrases: ["must be a number", "string"], node: "tone"),
        "out-of-range-parameter.json": .init(pointer: "/nodes/1/params/gain", phrases: ["out of range", "48"], node: "loud"),
        "link-to-unknown-node.json": .init(pointer: "/links/1/to", phrases: ["no node \"snik\"", "did you mean \"sink\""]),
        "link-to-unknown-port.json": .init(pointer: "/links/1/to", phrases: ["no input port 'in2'", "in0, in1"], node: "mix"),
        "link-from-unknown-port.json": .init(pointer: "/links/0/from", phrases: ["no output port 'left'"], node: "tone"),
        "split-unknown-output-port.json": .init(pointer: "/links/2/from", phrases: ["no output port 'otu1'", "did you mean 'out1'?", "out0, out1"], node: "split"),
        "split-groups-exceed-input.json": .init(pointer: "/nodes/1/params/groups", phrases: ["take 3 channels", "the input has 2"], node: "split"),
        "link-from-sink.json": .init(pointer: "/links/1/from", phrases: ["is a sink", "no output port"], node: "first"),
        "ambiguous-mixer-port.json": .init(pointer: "/links/0/to", phrases: ["several inputs", "mix:in0"], node: "mix"),
        "input-fed-twice.json": .init(pointer: "/links/1/to", phrases: ["fed twice", "/links/0", "mixer"], node: "sink"),
        "cycle.json": .init(pointer: "/links/1", phrases: ["cycle", "first", "second", "mix"]),
        "channel-count-mismatch.json": .init(pointer: "/nodes/1/params/layout", phrases: ["\"5.1\" has 6 channels", "the stream has 2"], node: "tag"),
        "no-sink.json": .init(pointer: "/nodes", phrases: ["no sink", "file-out", "null"]),
        "compressed-into-audio.json": .init(pointer: "/links/0", phrases: ["'stream' emits compressed ac4-sync frames", "takes PCM audio"], node: "trim"),
        "unreadable-input-file.json": .init(pointer: "/nodes/0/params/path", phrases: ["does-not-exist.wav", "no such file"], node: "player"),
        "input-port-not-connected.json": .init(pointer: "/nodes/1", phrases: ["input port 'in1' is not connected"], node: "mix"),
        "mixer-gains-count.json": .init(pointer: "/nodes/2/params/gains", phrases: ["3 gains for 2 inputs"], node: "mix"),
        "mixer-channel-mismatch.json": .init(pointer: "/links/1", phrases: ["in1 has 2 channels", "in0 has 6"], node: "mix"),
        "flac-float32.json": .init(pointer: "/nodes/1/params/sampleFormat", phrases: ["FLAC holds integer samples only"], node: "out"),
        "invalid-choice.json": .init(pointer: "/nodes/1/params/sampleFormat", phrases: ["\"int32\" is not allowed", "int24"], node: "out"),
        "frequency-above-nyquist.json": .init(pointer: "/nodes/0/params/frequency", phrases: ["half the sample rate"], node: "tone"),
        "sweep-without-duration.json": .init(pointer: "/nodes/0/params/sweepTime", phrases: ["\"sweepTime\" or \"duration\""], node: "sweep"),
        "sample-rate-mismatch.json": .init(pointer: "/nodes/0/params/path", phrases: ["44100 Hz", "48000 Hz"], node: "player"),
        "file-start-past-end.json": .init(pointer: "/nodes/0/params/start", phrases: ["past the end"], node: "player"),
        "output-folder-is-a-file.json": .init(pointer: "/nodes/1/params/path", phrases: ["tone-1k.flac", "not a folder"], node: "out"),
        "unknown-top-level-key.json": .init(pointer: "/samplerate", phrases: ["unknown key \"samplerate\"", "did you mean \"sampleRate\""]),
        "bad-sample-rate.json": .init(pointer: "/sampleRate", phrases: ["8000 to 384000", "1000"]),
        "invalid-node-id.json": .init(pointer: "/nodes/0/id", phrases: ["only letters, digits"], node: "my tone"),
    ]

    /// The `.json` files directly in `dir`, sorted.
    static func jsonFiles(in dir: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Some graphs write to `../out/` (and the invalid ones to `../../out/`):
    /// make sure the git-ignored output folder exists.
    override func setUpWithError() throws {
        try FileManager.default.createDirectory(at: Self.repoRoot.appendingPathComponent("out"),
                                                withIntermediateDirectories: true)
    }

    // MARK: invalid graphs

    func testEveryInvalidGraphHasAnExpectation() throws {
        let names = Set(try Self.jsonFiles(in: Self.invalidDir).map(\.lastPathComponent))
        XCTAssertFalse(names.isEmpty, "no graphs in \(Self.invalidDir.path)")
        for name in names.subtracting(Self.expectations.keys).sorted() {
            XCTFail("Graphs/invalid/\(name) has no entry in GraphExamplesTests.expectations: add its pointer and message")
        }
        for name in Set(Self.expectations.keys).subtracting(names).sorted() {
            XCTFail("GraphExamplesTests.expectations names Graphs/invalid/\(name), which does not exist")
        }
    }

    func testInvalidGraphsReportTheirMistake() throws {
        let validator = GraphValidator(registry: .builtIn.addingJACK())
        for url in try Self.jsonFiles(in: Self.invalidDir) {
            let name = url.lastPathComponent
            guard let expected = Self.expectations[name] else { continue }  // reported by the test above
            let diagnostics: [Diagnostic]
            switch validator.validate(file: url.path) {
            case .success:
                XCTFail("\(name) validated, but it is meant to fail at \(expected.pointer)")
                continue
            case .failure(let errors):
                diagnostics = errors.diagnostics
                XCTAssertFalse(errors.errors.isEmpty, "\(name): failed without an error")
            }
            let all = diagnostics.map(\.description).joined(separator: "\n  ")
            let matches = diagnostics.filter { d in
                d.severity == .error && d.pointer.description == expected.pointer
                    && expected.phrases.allSatisfy { d.message.contains($0) }
            }
            guard let d = matches.first else {
                XCTFail("\(name): expected an error at \"\(expected.pointer)\" mentioning \(expected.phrases); got:\n  \(all)")
                continue
            }
            XCTAssertEqual(d.file, url.path, name)
            XCTAssertNotNil(d.location, "\(name): the diagnostic has no line:column: \(d)")
            if let node = expected.node {
                XCTAssertEqual(d.nodeID, node, "\(name): \(d)")
            }
            if let line = expected.line, let column = expected.column {
                XCTAssertEqual(d.location?.line, line, "\(name): \(d)")
                XCTAssertEqual(d.location?.column, column, "\(name): \(d)")
                XCTAssertTrue(d.description.hasPrefix("\(url.path):\(line):\(column): error: "), d.description)
            }
        }
    }

    /// Each invalid graph says what is wrong with it in its "description".
    func testInvalidGraphsAreDescribed() throws {
        for url in try Self.jsonFiles(in: Self.invalidDir) {
            let text = try String(contentsOf: url, encoding: .utf8)
            XCTAssertTrue(text.contains("\"description\": \""), "\(url.lastPathComponent) has no \"description\"")
        }
    }

    // MARK: valid graphs

    /// Graphs that need a licensee's DAA library (`ac4-daa*.json`): they
    /// validate only where one is given, so the DAA tests check them with
    /// the test double of the DAA interface, not these tests.
    static func needsDAALibrary(_ url: URL) -> Bool { url.lastPathComponent.hasPrefix("ac4-daa") }

    /// Graphs whose node types come from plugins (the crossfeed renderer,
    /// the ffmpeg decoder): the registry here has none, so
    /// CrossfeedPluginTests validates them with the plugins loaded.
    static let needsPlugins: Set<String> = ["crossfeed-vs-binaural.json"]
    static func isBuiltInOnly(_ url: URL) -> Bool { !needsDAALibrary(url) && !needsPlugins.contains(url.lastPathComponent) }

    /// Node types whose examples are checked elsewhere: `ac4` in the DAA
    /// graphs (DAATests, with the test double), `media` and `playlist` in
    /// Graphs/ffmpeg/ (they need the ffmpeg decoder plugin: MediaTests
    /// validates them with `agraph validate`, which finds it).
    static let typesCoveredByDAATests: Set<String> = ["ac4", "media", "playlist"]

    func testExampleGraphsValidateCleanly() throws {
        let files = try Self.jsonFiles(in: Self.graphsDir).filter(Self.isBuiltInOnly)
        XCTAssertGreaterThanOrEqual(files.count, 8)
        var typesUsed = Set<String>()
        var waveforms = Set<String>()
        for url in files {
            let name = url.lastPathComponent
            let bytes = try [UInt8](Data(contentsOf: url))
            let json = try JSONParser.parse(bytes)
            XCTAssertFalse(json["description"]?.string?.isEmpty ?? true, "\(name) needs a \"description\"")
            switch GraphValidator(registry: .builtIn.addingJACK()).validate(file: url.path) {
            case .failure(let errors):
                XCTFail("\(name) does not validate:\n\(errors)")
            case .success(let g):
                XCTAssertEqual(g.warnings.map(\.description), [], "\(name) has warnings")
                for n in g.nodes {
                    typesUsed.insert(n.descriptor.typeID)
                    if n.descriptor.typeID == "test-tone", let w = n.parameters.string("waveform") { waveforms.insert(w) }
                }
            }
        }
        XCTAssertEqual(typesUsed, Set(NodeRegistry.builtIn.addingJACK().typeIDs).subtracting(Self.typesCoveredByDAATests),
                       "every node type has an example")
        guard case .choice(let allWaveforms)? = NodeRegistry.builtIn["test-tone"]?.descriptor.parameter(named: "waveform")?.type else {
            return XCTFail("test-tone has no \"waveform\" choice")
        }
        XCTAssertEqual(waveforms, Set(allWaveforms), "every waveform has an example")
    }

    /// Renders one second of every example offline, into a temporary copy of
    /// the layout (`Graphs/` with its `media/`, and `out/` beside it).
    func testExampleGraphsRender() throws {
        let fm = FileManager.default
        let tmp = fm.temporaryDirectory.appendingPathComponent("agraph-examples-\(UUID().uuidString)")
        defer { try? fm.removeItem(at: tmp) }
        let graphs = tmp.appendingPathComponent("Graphs")
        try fm.createDirectory(at: graphs, withIntermediateDirectories: true)
        try fm.createDirectory(at: tmp.appendingPathComponent("out"), withIntermediateDirectories: true)
        try fm.createSymbolicLink(at: graphs.appendingPathComponent("media"),
                                  withDestinationURL: Self.graphsDir.appendingPathComponent("media"))

        for url in try Self.jsonFiles(in: Self.graphsDir).filter(Self.isBuiltInOnly) {
            let name = url.lastPathComponent
            let bytes = try [UInt8](Data(contentsOf: url))
            let g: ValidatedGraph
            switch GraphValidator(registry: .builtIn.addingJACK()).validate(bytes: bytes, file: name, directory: graphs.path) {
            case .failure(let errors):
                XCTFail("\(name) does not validate in \(graphs.path):\n\(errors)")
                continue
            case .success(let v):
                g = v
            }
            let compiled = try GraphCompiler.compile(g, maxFrames: 1024)
            let result = OfflineRenderer(engine: compiled.engine).run(maxFrames: 48000)
            XCTAssertEqual(result.finishErrors, [], name)
            XCTAssertGreaterThan(result.frames, 0, name)
            XCTAssertLessThanOrEqual(result.frames, 48000, name)
            if result.ending == .endOfStream {
                XCTAssertTrue(g.endlessSources.isEmpty, "\(name) ended although \(g.endlessSources) never end")
            } else {
                XCTAssertEqual(result.ending, .durationReached, name)
                XCTAssertEqual(result.frames, 48000, name)
            }
            // Every file-out wrote what reached it, in the stream's format, under the temporary out/.
            for n in g.nodes where n.descriptor.typeID == "file-out" {
                let path = GraphPaths.resolve(n.parameters.string("path") ?? "", against: graphs.path)
                XCTAssertTrue(path.hasPrefix(tmp.path) || path.hasPrefix(tmp.resolvingSymlinksInPath().path),
                              "\(name): '\(n.id)' writes outside the output folder: \(path)")
                let file = try readSoundFile(path)
                XCTAssertEqual(file.channels, n.inputFormats.first?.channels, "\(name): \(path)")
                XCTAssertEqual(file.sampleRate, g.sampleRate, "\(name): \(path)")
                XCTAssertEqual(file.samples.count, result.frames * file.channels, "\(name): \(path)")
            }
        }
    }

    // MARK: schema

    /// The published schema holds every built-in type as generated here;
    /// CLITests.testSchemaMatchesPublishedFile compares the whole file with
    /// `agraph schema` (which adds the plugin types found).
    func testPublishedSchemaHasEveryBuiltInType() throws {
        let url = Self.repoRoot.appendingPathComponent("docs/graph.schema.json")
        let published = try String(contentsOf: url, encoding: .utf8)
        for t in NodeRegistry.builtIn.addingJACK().types.map(\.descriptor) {
            XCTAssertTrue(published.contains("\"node-\(t.typeID)\"") && published.contains(t.summary),
                          "docs/graph.schema.json lacks \(t.typeID) as described now; regenerate: .build/debug/agraph schema > docs/graph.schema.json")
        }
    }

    // MARK: all errors

    /// The validator reports every problem of a file, not just the first.
    func testValidatorReportsEveryError() {
        let text = """
            {
              "format": "agraph/9",
              "nodes": [
                {"id": "tone", "type": "test-tone", "params": {"frequncy": 440, "duration": 1}},
                {"id": "loud", "type": "gain", "params": {"gain": 100}},
                {"id": "sink", "type": "null"}
              ],
              "links": [
                {"from": "tone", "to": "loud"},
                {"from": "loud", "to": "sink"}
              ]
            }
            """
        let result = GraphValidator(registry: .builtIn.addingJACK()).validate(bytes: Array(text.utf8), file: "three.json", directory: "/tmp")
        guard case .failure(let errors) = result else { return XCTFail("validated") }
        XCTAssertEqual(errors.errors.map(\.pointer.description),
                       ["/format", "/nodes/0/params/frequncy", "/nodes/1/params/gain"], "\(errors)")
        XCTAssertEqual(errors.errors.map { $0.location?.line }, [2, 4, 5], "\(errors)")
        XCTAssertEqual(errors.diagnostics.count, 3, "\(errors)")
    }
}
