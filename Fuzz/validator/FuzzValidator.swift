// libFuzzer target: graph validation with the built-in node registry
// (no plugins, no JACK), in memory, relative paths resolved in a scratch
// folder. Any input must validate or give diagnostics: no crash, no hang.
// See Fuzz/README.md.

import AudioGraph
import Foundation
import FuzzSupport

let validator = GraphValidator(registry: .builtIn)

enum Target: FuzzTarget {
    /// One input. [main-thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        let directory = fuzzScratchFolder ?? "/nonexistent-agraph-fuzz"
        switch validator.validate(bytes: Array(bytes), file: "fuzz.json", directory: directory) {
        case .success(let graph):
            _ = graph.nodes.count
        case .failure(let errors):
            _ = "\(errors)"
        }
    }
}
