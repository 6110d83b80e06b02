// libFuzzer target: the live console's line splitter and command parser
// (AudioGraph.LineSplitter, ControlLine). Besides not crashing, the lines
// must not depend on how the bytes are cut into chunks, and no text line
// may exceed the limit. See Fuzz/README.md.

import AudioGraph
import Foundation
import FuzzSupport

/// Lines of `bytes` fed in chunks whose sizes come from `cuts`.
func split(_ bytes: UnsafeBufferPointer<UInt8>, limit: Int, cuts: UInt8) -> [LineSplitter.Line] {
    var splitter = LineSplitter(limit: limit)
    var lines: [LineSplitter.Line] = []
    var start = 0
    var step = Int(cuts % 17) + 1
    while start < bytes.count {
        let end = min(start + step, bytes.count)
        lines += splitter.feed(buffer: UnsafeBufferPointer(rebasing: bytes[start..<end]))
        start = end
        step = (step * 7 + Int(cuts)) % 23 + 1
    }
    return lines + splitter.finish()
}

enum Target: FuzzTarget {
    /// One input: the first byte picks the chunk sizes, the rest is console input. [any thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let cuts = bytes.first else { return }
        let input = UnsafeBufferPointer(rebasing: bytes.dropFirst())
        for limit in [16, LineSplitter.defaultLimit] {
            var whole = LineSplitter(limit: limit)
            let lines = whole.feed(buffer: input) + whole.finish()
            precondition(lines == split(input, limit: limit, cuts: cuts), "lines depend on the chunks")
            for line in lines {
                switch line {
                case .text(let text):
                    precondition(text.utf8.count <= limit * 3, "a text line over the limit")
                    do { _ = try ControlLine.parse(text) } catch { precondition(!error.message.isEmpty) }
                case .tooLong(let count, _):
                    precondition(count > limit, "a line within the limit reported too long")
                }
            }
        }
    }
}
