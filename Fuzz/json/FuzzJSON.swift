// libFuzzer target: the graph-file JSON parser (GraphFile.JSONParser).
// Any input must parse or fail with a located syntax error: no crash, no
// hang, no unbounded memory. See Fuzz/README.md.

import Foundation
import FuzzSupport
import GraphFile

enum Target: FuzzTarget {
    /// One input. [any thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        do {
            let value = try JSONParser.parse(bytes)
            _ = value.typeName
        } catch {
            // Errors point inside the input (or just past its end).
            precondition(error.location.offset >= 0 && error.location.offset <= bytes.count,
                         "syntax error outside the input: \(error)")
            _ = error.description
        }
    }
}
