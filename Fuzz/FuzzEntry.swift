// The entry points of every fuzz target, in one file: each target's folder
// (Fuzz/json, Fuzz/validator, Fuzz/ac4, …, Fuzz/reload-diff) holds a link to
// it, FuzzEntry.swift -> ../FuzzEntry.swift, beside its own file, which
// defines `Target` (a `FuzzTarget`). See Fuzz/README.md.
//
// Built with -DAGRAPH_FUZZ it exports LLVMFuzzerTestOneInput and has no
// main: libFuzzer's main runs it. Otherwise it is the replay tool's main
// (`fuzz-json FILE|FOLDER…`).

import Foundation
import FuzzSupport

#if AGRAPH_FUZZ
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Target.fuzzOne(UnsafeBufferPointer(start: data, count: size))
    return 0
}
#else
@main
enum Replay {
    static func main() { exit(FuzzReplay.run(CommandLine.arguments, Target.self)) }
}
#endif
