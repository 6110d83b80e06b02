import AudioGraph
import XCTest

/// A playlist of two 0.2 s 1 kHz mono FLAC items (made here) into a `null`
/// sink, compiled offline in 480-frame blocks: the graph the monitor and
/// OSC event tests play to see item events.
public enum PlaylistFixture {
    /// The compiled graph, and the folder holding the items (keep it alive
    /// while the graph plays). Skips the test when the ffmpeg decoder plugin
    /// is not built. [main-thread]
    public static func twoItems(folder label: String) throws -> (compiled: CompiledGraph, folder: TemporaryDirectory) {
        let (registry, _) = TestGraph.pluginRegistry()
        guard registry["ffmpeg"] != nil else { throw XCTSkip("the ffmpeg decoder plugin is not built (build with --build-tests)") }
        let dir = try TemporaryDirectory(label)
        for name in ["a.flac", "b.flac"] {
            try writeSoundFile(dir.file(name), format: .flacInt24, channels: 1, sampleRate: 48000,
                               samples: Synth.sine(frequency: 1000, amplitude: 0.5, sampleRate: 48000, frames: 9600))
        }
        let json = """
            {"format": "agraph/1", "sampleRate": 48000,
             "nodes": [{"id": "pl", "type": "playlist", "params": {"items": [{"path": "a.flac"}, {"path": "b.flac"}]}},
                       {"id": "sink", "type": "null"}],
             "links": [{"from": "pl", "to": "sink"}]}
            """
        let graph = try TestGraph.validate(json, registry: registry, directory: dir.path).get()
        return (try GraphCompiler.compile(graph, maxFrames: 480), dir)
    }
}
