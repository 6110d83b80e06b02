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
}
