import AudioGraph
@testable import AudioGraphBinaural
import Foundation
import TestSupport
import XCTest

/// What `binaural` refuses, and how it says so: each error names the
/// parameter (a JSON pointer) or the link, and what to do.
final class BinauralValidationTests: XCTestCase {
    var dir: TemporaryDirectory!
    /// `dir`'s path as the node shows it (normalised: no `//`).
    var folder = ""

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("agraph-binaural")
        folder = GraphPaths.resolve(dir.path, against: "/")
    }
    override func tearDown() { dir = nil }

    /// The diagnostics of validating `json` with `channels` input channels
    /// (empty when it is valid).
    func diagnostics(_ json: String, channels: Int = 6) -> [Diagnostic] {
        let input = (0..<channels).map { _ in [Float](repeating: 0, count: 16) }
        switch BinauralGraph.validate(json, input: input, directory: dir.path) {
        case .success: return []
        case .failure(let e): return e.errors
        }
    }

    func assertError(_ json: String, channels: Int = 6, pointer: String, contains words: [String],
                     file: StaticString = #filePath, line: UInt = #line) {
        let found = diagnostics(json, channels: channels)
        guard let d = found.first(where: { $0.pointer.description == pointer }) else {
            return XCTFail("no error at \(pointer); got:\n" + found.map(\.description).joined(separator: "\n"), file: file, line: line)
        }
        for w in words { XCTAssertTrue(d.message.contains(w), "missing \"\(w)\" in: \(d.message)", file: file, line: line) }
    }

    func testAValidGraphGivesTwoBinauralChannels() throws {
        for type in BinauralNodes.all { XCTAssertNotNil(NodeRegistry.builtIn[type.descriptor.typeID], "built in") }
        let g = try BinauralGraph.validate(BinauralGraph.json(layout: "7.1"), input: Array(repeating: [0], count: 8)).get()
        XCTAssertEqual(g.node("bin")?.outputFormat, StreamFormat(channels: 2, sampleRate: 44100, layout: .binaural))
        XCTAssertEqual(g.node("bin")?.descriptor.virtualizes, true)
    }

    func testAMissingSOFAFileNamesThePathAndLibmysofasReason() {
        assertError(BinauralGraph.json(layout: "5.1", params: #"{"sofa": "sets/missing.sofa"}"#),
                    pointer: "/nodes/1/params/sofa", contains: [folder + "/sets/missing.sofa: no such file or directory"])
        let text = dir.file("not-sofa.sofa")
        FileManager.default.createFile(atPath: text, contents: Data("hello".utf8))
        assertError(BinauralGraph.json(layout: "5.1", params: #"{"sofa": "not-sofa.sofa"}"#),
                    pointer: "/nodes/1/params/sofa", contains: [folder + "/not-sofa.sofa: libmysofa:", "MYSOFA_INVALID_FORMAT"])
    }

    /// Without `sofa`, every default place is searched, and an error names
    /// each with its reason.
    func testTheDefaultSearchNamesEveryPathItTried() throws {
        let paths = [folder + "/a/default.sofa", folder + "/b/default.sofa"]
        guard case .failure(let e) = HRTFSets.search(paths, given: false, sampleRate: 48000) else {
            return XCTFail("found a set where there is none")
        }
        XCTAssertEqual(e.searched, paths)
        for p in paths { XCTAssertTrue(e.message.contains(p + ": no such file or directory"), e.message) }
        XCTAssertTrue(e.message.contains("libmysofa1"), e.message)
        XCTAssertEqual(HRTFSets.defaultSearchPaths.first, "/usr/share/libmysofa/default.sofa")
        XCTAssertTrue(HRTFSets.defaultSearchPaths.contains("/usr/local/share/libmysofa/default.sofa"))
    }

    /// A relative `sofa` resolves against the graph's folder; sets are
    /// opened once per file and rate.
    func testARelativeSetIsFoundAndCached() throws {
        let copy = folder + "/kemar.sofa"
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: defaultSOFA).resolvingSymlinksInPath().path, toPath: copy)
        XCTAssertEqual(diagnostics(BinauralGraph.json(layout: "5.1", params: #"{"sofa": "kemar.sofa"}"#)).map(\.description), [])
        let a = try HRTFSets.open(path: copy, sampleRate: 44100).get()
        let b = try HRTFSets.open(path: copy, sampleRate: 44100).get()
        XCTAssertTrue(a === b, "the same set, not opened again")
        let c = try HRTFSets.open(path: copy, sampleRate: 48000).get()
        XCTAssertFalse(a === c, "another rate is another set")
        XCTAssertEqual(a.filterLength, 512)
        XCTAssertEqual(c.filterLength, 558, "libmysofa resampled it: ⌈512 · 48000 / 44100⌉")
    }

    func testBinauralInputIsRefused() {
        let json = """
            {"format": "agraph/1", "sampleRate": 44100,
             "nodes": [{"id": "src", "type": "signal", "params": {"layout": "binaural"}},
                       {"id": "bin", "type": "binaural"}, {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "bin"}, {"from": "bin", "to": "cap"}]}
            """
        assertError(json, channels: 2, pointer: "/links/0", contains: ["binaural audio", "virtualize", "twice"])
    }

    func testCompressedInputIsRefused() {
        let json = """
            {"format": "agraph/1", "sampleRate": 44100,
             "nodes": [{"id": "src", "type": "signal", "params": {"layout": "5.1", "codec": "ac4-sync"}},
                       {"id": "bin", "type": "binaural"}, {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "bin"}, {"from": "bin", "to": "cap"}]}
            """
        assertError(json, pointer: "/links/0", contains: ["compressed ac4-sync frames", "takes PCM audio"])
    }

    func testDiscreteInputNeedsPositions() {
        assertError(BinauralGraph.json(layout: "discrete"), channels: 3, pointer: "/links/0",
                    contains: ["3 discrete channels", "no standard directions", "\"positions\""])
        XCTAssertEqual(diagnostics(BinauralGraph.json(layout: "discrete",
                                                      params: #"{"positions": [{"azimuth": 60}, {"azimuth": -60, "elevation": 10}, {"lfe": true}]}"#),
                                   channels: 3).map(\.description), [])
    }

    func testPositionsAreCheckedElementByElement() {
        assertError(BinauralGraph.json(layout: "5.1", params: #"{"positions": [{"azimuth": 30}, {"azimuth": -30}]}"#),
                    pointer: "/nodes/1/params/positions", contains: ["gives 2 positions", "6 channels", "L R C LFE Ls Rs"])
        assertError(BinauralGraph.json(layout: "stereo", params: #"{"positions": [{"azimuth": 30}, {"elevation": 10}]}"#), channels: 2,
                    pointer: "/nodes/1/params/positions/1", contains: ["positions[1]", "channel R", "no \"azimuth\""])
        assertError(BinauralGraph.json(layout: "stereo", params: #"{"positions": [{"azimuth": 30}, {"lfe": true, "azimuth": 5}]}"#), channels: 2,
                    pointer: "/nodes/1/params/positions/1/azimuth", contains: ["LFE", "drop \"azimuth\""])
        assertError(BinauralGraph.json(layout: "stereo", params: #"{"positions": [{"azimuth": 30}, {"azimuth": 400}]}"#), channels: 2,
                    pointer: "/nodes/1/params/positions/1/azimuth", contains: ["out of range"])
        assertError(BinauralGraph.json(layout: "stereo", params: #"{"positions": [{"azimut": 30}, {"azimuth": 3}]}"#), channels: 2,
                    pointer: "/nodes/1/params/positions/0/azimut", contains: ["did you mean \"azimuth\""])
    }

    func testPartitionMustBeAPowerOfTwo() {
        assertError(BinauralGraph.json(layout: "5.1", params: #"{"partition": 100}"#),
                    pointer: "/nodes/1/params/partition", contains: ["power of two"])
        XCTAssertEqual(BinauralRenderNode.partition(requested: nil, maxFrames: 8192, live: true), 128)
        XCTAssertEqual(BinauralRenderNode.partition(requested: nil, maxFrames: 8192, live: false), 1024)
        XCTAssertEqual(BinauralRenderNode.partition(requested: nil, maxFrames: 300, live: false), 256)
        XCTAssertEqual(BinauralRenderNode.partition(requested: 1024, maxFrames: 300, live: true), 256)
        XCTAssertEqual(BinauralRenderNode.partition(requested: nil, maxFrames: 1, live: true), 16)
    }
}
