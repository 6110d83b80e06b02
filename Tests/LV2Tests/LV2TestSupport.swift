import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Real LV2 plugins from Debian's packages (scripts/setup installs them
/// with AGRAPH_SETUP_TESTS=1): SWH's amplifier, Butterworth low-pass and
/// delay line, x42's delay line that reports its latency.
enum LV2Plugins {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static let lowpass = "http://plugin.org.uk/swh-plugins/buttlow_iir"
    static let delay = "http://plugin.org.uk/swh-plugins/delay_n"
    static let nodelay = "http://gareus.org/oss/lv2/nodelay"
    static let mdaDelay = "http://drobilla.net/plugins/mda/Delay"
    static let sidechainCompressor = "http://plugin.org.uk/swh-plugins/sc2"

    /// Skips unless the plugins are installed.
    static func require(_ uris: String...) throws {
        let installed = Set(LV2World.shared.uris)
        for u in uris {
            try XCTSkipUnless(installed.contains(u), "the LV2 plugin \(u) is not installed (scripts/setup installs swh-lv2, x42-plugins, mda-lv2, lsp-plugins-lv2 with AGRAPH_SETUP_TESTS=1)")
        }
    }
}

extension XCTestCase {
    /// A graph: `source` (a node object without id) → `lv2` with `params` → capture.
    func lv2Graph(source: String, params: String, rate: Int = 48000) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(rate),
         "nodes": [{"id": "src", \(source)},
                   {"id": "fx", "type": "lv2", "params": \(params)},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "fx"}, {"from": "fx", "to": "cap"}]}
        """
    }

    func tone(_ frequency: Double, level: Double = -20, channels: Int = 1, seconds: Double = 1) -> String {
        #""type": "test-tone", "params": {"frequency": \#(frequency), "level": \#(level), "channels": \#(channels), "duration": \#(seconds)}"#
    }

    /// Renders a graph offline block by block; `between(block, compiled)`
    /// runs before each block. Returns what `capture` got, per channel.
    /// `blockSizes`: the blocks rendered in turn (each at most
    /// `blockFrames`, the engine's largest), as after JACK buffer-size
    /// changes; by default every block is `blockFrames`.
    func renderLV2(_ json: String, frames: Int, blockFrames: Int = 256, blockSizes: [Int]? = nil, directory: String = "/tmp",
                   between: (Int, CompiledGraph) throws -> Void = { _, _ in }) throws -> (samples: [[Float]], compiled: CompiledGraph) {
        let store = CaptureStore(capacityFrames: frames + blockFrames)
        let g = try TestGraph.validate(json, stores: ["main": store], directory: directory)
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        let engine = compiled.engine
        engine.worker.start()
        defer { engine.worker.stop() }
        var done = 0
        var block = 0
        while done < frames && !engine.isFinished {
            let n = min(blockSizes.map { $0[block % $0.count] } ?? blockFrames, frames - done)
            engine.worker.waitUntilReady(frames: n)
            try between(block, compiled)
            engine.render(frames: n)
            done += n
            block += 1
        }
        return ((0..<store.channels.count).map { store.samples($0) }, compiled)
    }

    /// The diagnostics of an invalid graph (fails when it validates).
    func diagnostics(_ json: String, directory: String = "/tmp", file: StaticString = #filePath, line: UInt = #line) -> [Diagnostic] {
        switch GraphValidator(registry: TestGraph.registry([:])).validate(bytes: Array(json.utf8), file: "lv2.json", directory: directory) {
        case .success:
            XCTFail("the graph validates", file: file, line: line)
            return []
        case .failure(let errors):
            return errors.diagnostics
        }
    }
}
