import XCTest
import AudioGraph
import TestSupport

/// A graph without `"sampleRate"` can be validated again at a live
/// server's rate; a graph that names its rate keeps it.
final class SampleRateTests: XCTestCase {
    let noRate = """
        {"format": "agraph/1", "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "channels": 1}},
          {"id": "out", "type": "null"}],
         "links": [{"from": "tone", "to": "out"}]}
        """

    func validate(_ json: String) throws -> ValidatedGraph {
        try GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "rate.json", directory: "/tmp").get()
    }

    func testAGraphWithoutARateIsRevalidatedAtAnother() throws {
        let g = try validate(noRate)
        XCTAssertFalse(g.sampleRateIsExplicit)
        XCTAssertEqual(g.sampleRate, GraphValidator.defaultSampleRate)
        let at44 = try g.revalidated(sampleRate: 44100).get()
        XCTAssertEqual(at44.sampleRate, 44100)
        XCTAssertEqual(at44.node("tone")?.outputFormat?.sampleRate, 44100)
        // Checks that depend on the rate run again: 23 kHz is above 22.05 kHz.
        let high = try validate(noRate.replacingOccurrences(of: "1000", with: "23000"))
        guard case .failure(let errors) = high.revalidated(sampleRate: 44100) else {
            return XCTFail("23 kHz at 44.1 kHz must not validate")
        }
        XCTAssertTrue("\(errors)".contains("/nodes/0/params/frequency"), "\(errors)")
    }

    func testAGraphThatNamesItsRateKeepsIt() throws {
        let g = try validate(noRate.replacingOccurrences(of: "\"nodes\"", with: "\"sampleRate\": 96000, \"nodes\""))
        XCTAssertTrue(g.sampleRateIsExplicit)
        XCTAssertNil(g.source, "nothing kept to validate again")
        XCTAssertEqual(try g.revalidated(sampleRate: 44100).get().sampleRate, 96000)
    }

    /// A rate island (a stream below the graph's rate) reaches only nodes
    /// that do not depend on the rate; a rate-dependent node or a sink is
    /// refused at the link, with the way out named.
    func testARateIslandIntoARateDependentNodeOrASinkIsRefused() throws {
        for (type, params) in [("filter", #"{"type": "low-pass", "frequency": 1000}"#), ("limiter", "{}"),
                               ("file-out", #"{"path": "/tmp/agraph-island.wav"}"#)] {
            let json = """
                {"format": "agraph/1", "sampleRate": 48000, "nodes": [
                  {"id": "tone", "type": "test-tone", "params": {"channels": 1, "duration": 1}},
                  {"id": "down", "type": "resample", "params": {"rate": 44100}},
                  {"id": "x", "type": "\(type)", "params": \(params)}\(type == "file-out" ? "" : #", {"id": "end", "type": "null"}"#)],
                 "links": [{"from": "tone", "to": "down"}, {"from": "down", "to": "x"}\(type == "file-out" ? "" : #", {"from": "x", "to": "end"}"#)]}
                """
            guard case .failure(let errors) = GraphValidator(registry: .builtIn)
                .validate(bytes: Array(json.utf8), file: "island.json", directory: "/tmp") else {
                XCTFail("\(type) must refuse a 44.1 kHz island in a 48 kHz graph"); continue
            }
            let text = "\(errors)"
            XCTAssertTrue(text.contains("/links/1") && text.contains("44100 Hz (a rate island)")
                          && text.contains("with a resample node"), "\(type): \(text)")
        }
    }
}
