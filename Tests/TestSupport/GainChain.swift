/// The text of a graph file: a source, `count` `gain` nodes one after
/// another (`g0`, `g1`, …), then a sink. The tests of how the host scales
/// with node count (issue 22 item 5) build their graphs with it.
public enum GainChain {
    /// A mono `test-tone` of `waveform` as the source `src`, each gain at
    /// `gain` dB, into `sink` (a node object with the id `out`).
    public static func json(count: Int, gain: Double = 0, waveform: String = "sine",
                            source: String? = nil, sink: String = #"{"id": "out", "type": "null"}"#,
                            name: String = "chain") -> String {
        let first = source ?? #"{"id": "src", "type": "test-tone", "params": {"waveform": "\#(waveform)", "frequency": 440, "level": -20, "channels": 1}}"#
        var nodes = [first]
        var links: [String] = []
        var previous = "src"
        nodes.reserveCapacity(count + 2)
        links.reserveCapacity(count + 1)
        for i in 0..<count {
            nodes.append(#"{"id": "g\#(i)", "type": "gain", "params": {"gain": \#(gain)}}"#)
            links.append(#"{"from": "\#(previous)", "to": "g\#(i)"}"#)
            previous = "g\(i)"
        }
        nodes.append(sink)
        links.append(#"{"from": "\#(previous)", "to": "out"}"#)
        return #"{"format": "agraph/1", "name": "\#(name)", "sampleRate": 48000, "nodes": [\#(nodes.joined(separator: ",\n"))], "links": [\#(links.joined(separator: ",\n"))]}"#
    }
}
