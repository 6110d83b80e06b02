import AudioGraph
import AudioGraphTools
import Foundation
import XCTest

/// `render --each`'s plan and the leftovers of dead batches, in-process.
final class BatchPlanTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "agraph-batchplan-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func write(_ name: String, _ text: String) throws -> String {
        let path = dir + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func planner(graph: String, outputDir: String) -> BatchPlan {
        BatchPlan(graph: graph, outputDir: outputDir, overrides: [], address: ParameterAddress(node: "in", parameter: "path"),
                  registry: .builtIn)
    }

    static let graph = """
        {"format": "agraph/1", "name": "b", "sampleRate": 48000, "nodes": [
          {"id": "in", "type": "file", "params": {"path": "x.wav"}},
          {"id": "out", "type": "file-out", "params": {"path": "o.flac"}}],
         "links": [{"from": "in", "to": "out"}]}
        """

    func testOutputsAreNamedAfterTheInputsAndCollisionsRefusedBeforeRendering() throws {
        let graph = try write("g.json", Self.graph)
        let p = planner(graph: graph, outputDir: "out")
        let (sinks, _) = try p.graphFiles(firstInput: dir + "/a/song.wav", graphDirectory: dir)
        XCTAssertEqual(sinks, [BatchPlan.Sink(id: "out", fileExtension: "flac", format: "flac")])
        let items = try p.plan(inputs: ["a/song.wav", "b/other.wav"], sinks: sinks, graphReads: [],
                               directory: dir + "/out", cwd: dir, pid: 4242)
        XCTAssertEqual(items.map { $0.outputs.map(\.final) }, [[dir + "/out/song.flac"], [dir + "/out/other.flac"]])
        XCTAssertEqual(items[0].outputs[0].temporary, dir + "/out/.song.flac.partial-\(BatchLeftovers.host)-4242")
        XCTAssertEqual(items[0].path, dir + "/a/song.wav")

        XCTAssertThrowsError(try p.plan(inputs: ["a/song.wav", "b/song.wav"], sinks: sinks, graphReads: [],
                                        directory: dir + "/out", cwd: dir)) { error in
            let lines = (error as? BatchPlan.Refused)?.lines ?? []
            XCTAssertEqual(lines.first, "agraph: --each: a/song.wav and b/song.wav would both be written to out/song.flac; give the inputs distinct file names, or render them in separate runs with different --output-dir")
            XCTAssertEqual(lines.last, "agraph: nothing was rendered")
        }
        // An output that is an input is refused too.
        XCTAssertThrowsError(try p.plan(inputs: ["out/song.flac", "c/song.wav"], sinks: sinks, graphReads: [],
                                        directory: dir + "/out", cwd: dir))
    }

    func testAGraphWithoutFileSinkIsRefused() throws {
        let graph = try write("nosink.json", """
            {"format": "agraph/1", "name": "b", "sampleRate": 48000, "nodes": [
              {"id": "in", "type": "file", "params": {"path": "x.wav"}}, {"id": "n", "type": "null"}],
             "links": [{"from": "in", "to": "n"}]}
            """)
        XCTAssertThrowsError(try planner(graph: graph, outputDir: "o").graphFiles(firstInput: "/x.wav", graphDirectory: dir)) { error in
            XCTAssertTrue((error as? BatchPlan.Refused)?.lines.first?.hasSuffix("the graph has none; add a file-out node") == true)
        }
    }

    func testStem() {
        XCTAssertEqual(BatchPlan.stem(of: "a/b/song.flac"), "song")
        XCTAssertEqual(BatchPlan.stem(of: ".hidden"), ".hidden")
        XCTAssertEqual(BatchPlan.stem(of: "x.tar.gz"), "x.tar")
    }

    /// A leftover of a batch of this machine that no longer runs is
    /// removed; one of a running batch, another machine's, a folder, and
    /// an ordinary file stay.
    func testLeftoversOfDeadBatchesOnlyAreRemoved() throws {
        var dead: pid_t = 4_000_000
        while BatchLeftovers.isRunning(dead) { dead -= 1 }
        let alive = getppid()
        let host = BatchLeftovers.host
        let names = [".a.wav.partial-\(host)-\(dead)", ".b.wav.partial-\(host)-\(dead).agraph-Ab12Cd.part",
                     ".c.wav.partial-\(host)-\(alive)", ".d.wav.partial-\(host)x-\(dead)", "e.wav"]
        for n in names { _ = try write(n, "x") }
        try FileManager.default.createDirectory(atPath: dir + "/.f.wav.partial-\(host)-\(dead)", withIntermediateDirectories: false)
        XCTAssertEqual(BatchLeftovers.owner(ofName: names[0]), dead)
        XCTAssertNil(BatchLeftovers.owner(ofName: names[3]), "another machine's")
        XCTAssertNil(BatchLeftovers.owner(ofName: "e.wav"))

        XCTAssertEqual(BatchLeftovers.removeDead(in: dir), [names[0], names[1]])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        XCTAssertEqual(left, [names[2], names[3], names[4], ".f.wav.partial-\(host)-\(dead)"])
    }
}
