// libFuzzer target: the graph-file JSON parser (GraphFile.JSONParser).
// Any input must parse or fail with a located syntax error: no crash, no
// hang, no unbounded memory. See Fuzz/README.md.

import Foundation
import FuzzSupport
import GraphFile

/// One input. [any thread]
func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
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

#if AGRAPH_FUZZ
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeBufferPointer(start: data, count: size))
    return 0
}
#else
@main
enum Replay {
    static func main() { exit(FuzzReplay.run(CommandLine.arguments, fuzzOne)) }
}
#endif
