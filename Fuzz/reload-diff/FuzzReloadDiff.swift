// libFuzzer target: the hot reload's graph diff (`GraphDiff`, Reload.swift)
// between a fixed valid graph and the fuzzed one, validated with the
// built-in node types (no plugins, no JACK), both ways, and the fuzzed
// graph against itself, with the report's text. Any input must validate or
// give diagnostics, and a valid one must diff consistently: every new node
// kept, added or replaced exactly once; removed nodes only old ones; a
// graph against itself keeps every node and changes nothing. See
// Fuzz/README.md.

import AudioGraph
import Foundation
import FuzzSupport

let validator = GraphValidator(registry: .builtIn)
let directory = fuzzScratchFolder ?? "/nonexistent-agraph-fuzz"

/// The running graph every input is diffed against: live parameters on
/// gain, mixer and filter, a split, a chain of kept and replaceable nodes.
let running: ValidatedGraph? = {
    let json = #"""
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"waveform": "sine", "frequency": 440, "level": -12, "channels": 2}},
          {"id": "sweep", "type": "test-tone", "params": {"waveform": "sweep", "frequency": 100, "endFrequency": 4000, "sweepTime": 10, "channels": 1}},
          {"id": "mix", "type": "mixer", "params": {"inputs": 2, "gains": [0, -6]}},
          {"id": "amp", "type": "gain", "params": {"gain": -3}},
          {"id": "tag", "type": "format-tag", "params": {"layout": "stereo"}},
          {"id": "out", "type": "null"}],
         "links": [{"from": "tone", "to": "mix:in0"}, {"from": "sweep", "to": "mix:in1"}, {"from": "mix", "to": "amp"},
                   {"from": "amp", "to": "tag"}, {"from": "tag", "to": "out"}]}
        """#
    if case .success(let g) = validator.validate(bytes: Array(json.utf8), file: "running.json", directory: directory) { return g }
    return nil
}()

/// Checks what a diff from `old` to `new` must be. [main-thread]
func check(_ diff: GraphDiff, from old: ValidatedGraph, to new: ValidatedGraph) {
    let newIDs = new.nodes.map(\.id), oldIDs = Set(old.nodes.map(\.id))
    let sorted = (Array(diff.kept) + diff.added + diff.replaced).sorted()
    precondition(sorted == newIDs.sorted(), "kept, added and replaced are not the new nodes once each")
    precondition(diff.added.allSatisfy { !oldIDs.contains($0) } && diff.replaced.allSatisfy { oldIDs.contains($0) },
                 "added or replaced against the old ids")
    precondition(Set(diff.removed) == oldIDs.subtracting(newIDs), "removed is not the old nodes the new graph lacks")
    precondition(diff.parameterChanges.allSatisfy { change in
        diff.kept.contains(where: { change.address.hasPrefix($0 + ".") })
    }, "a parameter change on a node that is not kept")
    _ = ReloadReport(diff: diff, swapped: !diff.isParameterOnly).description
}

enum Target: FuzzTarget {
    /// One input. [main-thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let running else { preconditionFailure("the running graph does not validate") }
        guard case .success(let new) = validator.validate(bytes: Array(bytes), file: "fuzz.json", directory: directory) else { return }
        check(GraphDiff(from: running, to: new), from: running, to: new)
        check(GraphDiff(from: new, to: running), from: new, to: running)
        let same = GraphDiff(from: new, to: new)
        check(same, from: new, to: new)
        precondition(same.kept.count == new.nodes.count && same.isParameterOnly && same.parameterChanges.isEmpty,
                     "a graph against itself changed")
    }
}
