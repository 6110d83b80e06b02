// render-m4a INPUT.m4a OUTPUT.wav
//
// Builds the graph media → ffmpeg → downmix (stereo, Lo/Ro) → null in
// code, validates it like a graph file, and renders it offline into
// OUTPUT.wav (what reaches the `null` sink). The `ffmpeg` node comes from
// the AGraphFFmpegPlugin plugin: run with AGRAPH_PLUGIN_PATH naming the
// folder that holds libAGraphFFmpegPlugin.so (AudioGraph's .build/debug).
import AudioGraph
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: render-m4a INPUT.m4a OUTPUT.wav\n".utf8))
    exit(2)
}
let input = URL(fileURLWithPath: arguments[1]).standardizedFileURL
let output = URL(fileURLWithPath: arguments[2])

do {
    let registry = try NodeRegistry.standard()
    var b = GraphBuilder(name: "render-m4a", sampleRate: 48000)
    let song = b.node("media", id: "song", params: ["path": .string(input.path)])
    let aac = b.node("ffmpeg", id: "aac")
    // 5.1 or 7.1 to Lo/Ro by ITU-R BS.775 (centre and surrounds at -3 dB,
    // the LFE dropped), scaled so that it cannot clip; stereo stays stereo.
    let stereo = b.node("downmix", id: "stereo", params: ["layout": "stereo", "mode": "loro", "normalize": true])
    let sink = b.node("null", id: "sink")
    b.chain(song, aac, stereo, sink)
    let graph = try b.build(registry: registry)
    let summary = try graph.render(to: output)
    print("wrote \(summary.frames) frames (\(String(format: "%.3f", summary.seconds)) s, stereo) to \(summary.path)")
} catch {
    FileHandle.standardError.write(Data("render-m4a: \(error)\n".utf8))
    exit(1)
}
