import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Issue 22, item 14: an error is reported once; what only follows from
/// it (a link to a node whose ports are unknown, an input left unfed by
/// that link) is not reported again.
final class FollowOnErrorTests: XCTestCase {
    func errors(_ json: String) -> [Diagnostic] {
        switch GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "g.json", directory: "/tmp") {
        case .success: XCTFail("should not validate"); return []
        case .failure(let e): return e.errors
        }
    }

    /// A mixer of 2,000 linked inputs whose "inputs" is over the limit
    /// (65,536; 64 before issue 24): one error, at "inputs", not one per
    /// link ("is a source and has no input port").
    func testAMixerWithTooManyInputsIsOneError() throws {
        let n = 2000
        let nodes = (0..<n).map { #"{"id": "t\#($0)", "type": "test-tone"}"# }.joined(separator: ", ")
        let links = (0..<n).map { #"{"from": "t\#($0)", "to": "mix:in\#($0)"}"# }.joined(separator: ", ")
        let json = """
            {"format": "agraph/1", "nodes": [\(nodes), {"id": "mix", "type": "mixer", "params": {"inputs": \(MixerType.maximumInputs + 1)}},
              {"id": "out", "type": "null"}],
             "links": [\(links), {"from": "mix", "to": "out"}]}
            """
        let started = Date()
        let found = errors(json)
        XCTAssertEqual(found.count, 1, found.prefix(5).map(\.description).joined(separator: "\n"))
        XCTAssertEqual(found.first?.pointer.display, "/nodes/\(n)/params/inputs")
        XCTAssertEqual(found.first?.nodeID, "mix")
        XCTAssertTrue(found.first?.message.contains("\(MixerType.maximumInputs)") ?? false, found.first?.message ?? "")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    /// A link to (or from) a node of an unknown type: only the type's error.
    func testLinksOfANodeOfAnUnknownTypeAddNothing() throws {
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "t", "type": "test-tone"}, {"id": "fx", "type": "reverbb"}, {"id": "g", "type": "gain"},
              {"id": "out", "type": "null"}],
             "links": [{"from": "t", "to": "fx"}, {"from": "fx", "to": "g"}, {"from": "g", "to": "out"}]}
            """
        let found = errors(json)
        XCTAssertEqual(found.count, 1, found.map(\.description).joined(separator: "\n"))
        XCTAssertEqual(found.first?.pointer.display, "/nodes/1/type")
        XCTAssertTrue(found.first?.message.contains("unknown node type \"reverbb\"") ?? false)
        // A real link error beside it is still reported.
        let typo = json.replacingOccurrences(of: #"{"from": "g", "to": "out"}"#, with: #"{"from": "g", "to": "out:inn"}"#)
        XCTAssertEqual(errors(typo).count, 2, errors(typo).map(\.description).joined(separator: "\n"))
    }

    /// Issue 23: media → ffmpeg → file-out with the ffmpeg plugin not
    /// built: one error, on the ffmpeg node's type, naming the product to
    /// build; nothing about file-out's input, although its link is there.
    func testAnUnbuiltPluginOfThisPackageIsOneError() throws {
        // A real AAC file: the media source itself is valid.
        let song = TestMedia.packageRoot + "/Graphs/media/tone-440.m4a"
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "song", "type": "media", "params": {"path": "\(song)"}}, {"id": "aac", "type": "ffmpeg"},
              {"id": "out", "type": "file-out", "params": {"path": "out.wav"}}],
             "links": [{"from": "song", "to": "aac"}, {"from": "aac", "to": "out"}]}
            """
        let found = errors(json)
        XCTAssertEqual(found.count, 1, found.map(\.description).joined(separator: "\n"))
        XCTAssertEqual(found.first?.pointer.display, "/nodes/1/type")
        XCTAssertEqual(found.first?.nodeID, "aac")
        let message = found.first?.message ?? ""
        XCTAssertTrue(message.hasPrefix("unknown node type \"ffmpeg\": it comes from the plugin product AGraphFFmpegPlugin"), message)
        XCTAssertTrue(message.contains("swift build --product AGraphFFmpegPlugin"), message)
        // No warning either: the media source's output is not "going nowhere".
        if case .failure(let e) = GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "g.json", directory: "/tmp") {
            XCTAssertEqual(e.diagnostics.filter { $0.severity == .warning }.map(\.description), [])
        }
    }

    /// An input count of the wrong type is one error too.
    func testAMixerWithAnInvalidInputCountIsOneError() throws {
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "a", "type": "test-tone"}, {"id": "b", "type": "test-tone"},
              {"id": "mix", "type": "mixer", "params": {"inputs": "two"}}, {"id": "out", "type": "null"}],
             "links": [{"from": "a", "to": "mix:in0"}, {"from": "b", "to": "mix:in1"}, {"from": "mix", "to": "out"}]}
            """
        let found = errors(json)
        XCTAssertEqual(found.count, 1, found.map(\.description).joined(separator: "\n"))
        XCTAssertEqual(found.first?.pointer.display, "/nodes/2/params/inputs")
    }
}
