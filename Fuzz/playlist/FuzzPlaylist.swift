// libFuzzer target: what a playlist reads: its list file (`file`: a JSON
// array of items, or an object with just `items`) and each item's media
// file, as validation opens them (PlaylistEntries, PlaylistItemSource:
// libavformat's probe, the audio stream, the start/end window, the matrix
// to the playlist's layout). An input that starts with `[` or `{` is the
// list file, whose items name a small valid WAV and the input itself;
// any other input is the media file of a fixed list's two items. The
// graph is validated with the built-in node types and a stand-in for the
// `ffmpeg` decoder plugin (its id and codec list; it decodes nothing:
// validation only asks which codecs it takes). Any input must validate or
// give diagnostics: no crash, no hang. See Fuzz/README.md.

import AudioGraph
import Foundation
import FuzzSupport

let folder = fuzzScratchFolder ?? NSTemporaryDirectory()

/// The `ffmpeg` decoder plugin's id and codecs (Plugins/FFmpegPlugin),
/// without the plugin: validation asks no more of it.
struct DecoderStandIn: FrameDecoderType {
    let descriptor = NodeDescriptor(
        typeID: "ffmpeg", role: .processor, summary: "A stand-in for the ffmpeg decoder plugin (the playlist fuzz target).",
        inputs: .single, parameters: [], domain: .background, origin: "fuzz-playlist",
        inputCodecs: ["aac", "aac_latm", "ac3", "eac3", "mp3", "mp2", "opus", "vorbis", "flac", "alac", "dts", "truehd",
                      "wavpack", "pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_f32le",
                      "pcm_f32be", "pcm_f64le", "pcm_f64be", "pcm_u8", "pcm_s8", "pcm_alaw", "pcm_mulaw"])
    /// [main-thread]
    func resolve(_ c: ResolveContext) -> StreamFormat? { nil }
    /// [main-thread]
    func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        throw EngineError(nodeID: c.nodeID, "the stand-in decodes nothing")
    }
    /// [main-thread]
    func makeFrameDecoder(nodeID: String, channels: Int, sampleRate: Double) throws -> any FrameDecoder {
        throw EngineError(nodeID: nodeID, "the stand-in decodes nothing")
    }
}

let validator: GraphValidator = {
    var registry = NodeRegistry.builtIn
    registry.register(DecoderStandIn())
    return GraphValidator(registry: registry)
}()

/// A graph whose playlist reads the list file `list`, in `layout`.
func graph(list: String, layout: String) -> [UInt8] {
    Array(#"""
        {"format": "agraph/1", "sampleRate": 48000, "nodes": [
          {"id": "p", "type": "playlist", "params": {"layout": "\#(layout)", "file": "\#(list)"}},
          {"id": "n", "type": "null"}],
         "links": [{"from": "p", "to": "n"}]}
        """#.utf8)
}

/// A valid item for the fuzzed list files: 0.1 s of 16-bit stereo WAV.
let wavWritten: Bool = {
    func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    let data = [UInt8](repeating: 0, count: 4800 * 4)
    let fmt: [UInt8] = [1, 0, 2, 0] + le32(48000) + le32(192_000) + [4, 0, 16, 0]
    let body = Array("WAVEfmt ".utf8) + le32(16) + fmt + Array("data".utf8) + le32(UInt32(data.count)) + data
    return FileManager.default.createFile(atPath: folder + "/item.wav", contents: Data(Array("RIFF".utf8) + le32(UInt32(body.count)) + body))
}()

/// The fixed list for media inputs: the input whole, and a window of it.
let fixedListWritten = FileManager.default.createFile(
    atPath: folder + "/fixed.json",
    contents: Data(#"[{"path": "input.media"}, {"path": "input.media", "start": 0.01, "end": 0.02, "gain": -6}]"#.utf8))

enum Target: FuzzTarget {
    /// One input. [main-thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard wavWritten, fixedListWritten else { return }
        let isList = bytes.first == UInt8(ascii: "[") || bytes.first == UInt8(ascii: "{")
        let written = isList ? folder + "/list.json" : folder + "/input.media"
        guard FileManager.default.createFile(atPath: written, contents: Data(buffer: bytes)) else { return }
        // The layout varies with the input's length, so every matrix is tried.
        let layouts = ["stereo", "mono", "5.1", "7.1"]
        let json = graph(list: isList ? "list.json" : "fixed.json", layout: layouts[bytes.count % layouts.count])
        switch validator.validate(bytes: json, file: "fuzz.json", directory: folder) {
        case .success(let g): _ = g.nodes.count
        case .failure(let errors): _ = "\(errors)"
        }
    }

    /// List files for the seed corpus (`fuzz-playlist --write-seeds
    /// FOLDER`); scripts/fuzz adds small media made by the ffmpeg CLI.
    static var seeds: [String: [UInt8]] {
        [
            "list-array.json": Array(#"[{"path": "item.wav"}, {"path": "item.wav", "start": 0.05, "end": 0.08, "gain": -3}]"#.utf8),
            "list-object.json": Array(#"{"items": [{"path": "item.wav", "gain": 6}, {"path": "input.media"}]}"#.utf8),
            "list-errors.json": Array(#"[{"path": "item.wav", "start": 5}, {"path": "item.wav", "end": 0}, {"path": "no-such.wav"}, {"start": 1}]"#.utf8),
            "list-empty.json": Array("[]".utf8),
        ]
    }
}
