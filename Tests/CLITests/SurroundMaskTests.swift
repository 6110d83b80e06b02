import AudioGraph
import Foundation
import TestSupport
import XCTest

/// Issue 22: a 5.1 source with back surrounds (FL FR FC LFE BL BR, WAVE
/// channel mask 0x3F, FFmpeg's "5.1") is written by `file-out` with mask
/// 0x3F, not as 5.1(side) (0x60F); a 5.1(side) source keeps 0x60F. Through
/// `file` and through `media` → `ffmpeg`, with `agraph render`; the mask is
/// read from the written file's fmt chunk and every channel's samples are
/// checked where they belong.
final class SurroundMaskTests: XCTestCase {
    static let backMask: UInt32 = 0x3F
    static let sideMask: UInt32 = 0x60F
    /// A constant per channel, in file order (FL FR FC LFE, then the surrounds).
    static let levels: [Float] = [0.125, 0.25, 0.375, 0.5, 0.625, 0.75]
    static let frames = 4800

    var dir: TemporaryDirectory!

    override func setUpWithError() throws { dir = try TemporaryDirectory("agraph-surround-mask") }
    override func tearDown() { dir = nil }

    /// Writes a WAVE_FORMAT_EXTENSIBLE float WAV with `mask`: channel c
    /// holds `levels[c]` in every frame.
    func writeWAV(_ name: String, mask: UInt32) throws -> String {
        var b: [UInt8] = []
        func u16(_ v: UInt16) { b += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        func u32(_ v: UInt32) { for k in 0..<4 { b.append(UInt8((v >> (8 * UInt32(k))) & 0xFF)) } }
        let channels = 6, dataBytes = Self.frames * channels * 4
        b += Array("RIFF".utf8); u32(UInt32(4 + 8 + 40 + 8 + dataBytes)); b += Array("WAVE".utf8)
        b += Array("fmt ".utf8); u32(40)
        u16(0xFFFE); u16(UInt16(channels)); u32(48000); u32(UInt32(48000 * channels * 4)); u16(UInt16(channels * 4)); u16(32)
        u16(22); u16(32); u32(mask)
        // KSDATAFORMAT_SUBTYPE_IEEE_FLOAT
        u32(3); u16(0); u16(0x10); b += [0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        b += Array("data".utf8); u32(UInt32(dataBytes))
        for _ in 0..<Self.frames { for l in Self.levels { u32(l.bitPattern) } }
        let path = dir.file(name)
        try Data(b).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Renders `source` (the graph's nodes before `out`, the last one
    /// linked to it) into out.wav; the written file's mask and samples.
    func render(_ nodes: String, links: String, tag: String) throws -> (mask: UInt32?, channels: Int, samples: [Float]) {
        let out = dir.file("\(tag)-out.wav")
        let graph = dir.file("\(tag).json")
        try """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [\(nodes), {"id": "out", "type": "file-out", "params": {"path": "\(out)"}}],
         "links": [\(links)]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try CLITests.agraph(arguments: ["render", graph])
        XCTAssertEqual(run.status, 0, run.stderr)
        let file = try readSoundFile(out)
        return (try WAVHeader.channelMask(out), file.channels, file.samples)
    }

    func assertChannelsInPlace(_ r: (mask: UInt32?, channels: Int, samples: [Float]), _ what: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.channels, 6, what, file: file, line: line)
        XCTAssertEqual(r.samples.count, Self.frames * 6, "\(what): every frame", file: file, line: line)
        guard r.channels == 6 else { return }
        for c in 0..<6 {
            let ch = deinterleave(r.samples, channels: 6, channel: c)
            XCTAssertEqual(ch.first, Self.levels[c], "\(what): channel \(c)", file: file, line: line)
            XCTAssertEqual(ch.last, Self.levels[c], "\(what): channel \(c)", file: file, line: line)
        }
    }

    func testFileToFileOutKeepsBackOrSideSurrounds() throws {
        for (mask, tag) in [(Self.backMask, "back"), (Self.sideMask, "side")] {
            let input = try writeWAV("\(tag).wav", mask: mask)
            XCTAssertEqual(try WAVHeader.channelMask(input), mask, "the input's own mask")
            let r = try render(#"{"id": "src", "type": "file", "params": {"path": "\#(input)"}}"#,
                               links: #"{"from": "src", "to": "out"}"#, tag: "file-\(tag)")
            XCTAssertEqual(r.mask, mask, "5.1(\(tag)) through file → file-out: mask 0x\(String(r.mask ?? 0, radix: 16))")
            assertChannelsInPlace(r, "file, \(tag)")
        }
    }

    /// Through processing that keeps the 5.1 (a gain), the surrounds stay
    /// back; an upmix from stereo makes 5.1(side), as ITU's convention.
    func testBackSurroundsSurviveAGainAndAnUpmixMakesSide() throws {
        let input = try writeWAV("back.wav", mask: Self.backMask)
        let gained = try render(#"{"id": "src", "type": "file", "params": {"path": "\#(input)"}}, {"id": "g", "type": "gain", "params": {"gain": 0}}"#,
                                links: #"{"from": "src", "to": "g"}, {"from": "g", "to": "out"}"#, tag: "gain")
        XCTAssertEqual(gained.mask, Self.backMask)
        assertChannelsInPlace(gained, "gain")
        let upmixed = try render(#"{"id": "t", "type": "test-tone", "params": {"channels": 2, "duration": 0.1}}, {"id": "u", "type": "upmix", "params": {"layout": "5.1"}}"#,
                                 links: #"{"from": "t", "to": "u"}, {"from": "u", "to": "out"}"#, tag: "upmix")
        XCTAssertEqual(upmixed.mask, Self.sideMask)
    }

    func testMediaThroughFFmpegToFileOutKeepsBackOrSideSurrounds() throws {
        for (mask, tag) in [(Self.backMask, "back"), (Self.sideMask, "side")] {
            let input = try writeWAV("\(tag).wav", mask: mask)
            let r = try render(#"{"id": "src", "type": "media", "params": {"path": "\#(input)"}}, {"id": "dec", "type": "ffmpeg"}"#,
                               links: #"{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}"#, tag: "media-\(tag)")
            XCTAssertEqual(r.mask, mask, "5.1(\(tag)) through media → ffmpeg → file-out: mask 0x\(String(r.mask ?? 0, radix: 16))")
            assertChannelsInPlace(r, "media, \(tag)")
        }
    }

    /// An AAC 5.1 (FFmpeg's "5.1", back surrounds) in M4A, decoded through
    /// media → ffmpeg, is written with mask 0x3F; ffprobe agrees.
    func testAAC51BackIsWrittenWithTheBackMask() throws {
        guard let ffmpeg = findExecutable("ffmpeg"), let ffprobe = findExecutable("ffprobe") else {
            throw XCTSkip("ffmpeg is not installed (scripts/test installs it)")
        }
        let m4a = dir.file("back.m4a")
        let made = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=0.5:r=48000",
                                        "-af", "aformat=channel_layouts=mono,pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0",
                                        "-c:a", "aac", m4a])
        guard made.status == 0 else { throw XCTSkip("ffmpeg could not make an AAC 5.1: \(made.stderr)") }
        let probedIn = try runTool(ffprobe, ["-v", "error", "-show_entries", "stream=channel_layout", "-of", "csv=p=0", m4a])
        XCTAssertEqual(probedIn.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "5.1", "the input is back-5.1")
        let out = dir.file("aac-out.wav")
        let graph = dir.file("aac.json")
        try """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "src", "type": "media", "params": {"path": "\(m4a)"}}, {"id": "dec", "type": "ffmpeg"},
                   {"id": "out", "type": "file-out", "params": {"path": "\(out)"}}],
         "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try CLITests.agraph(arguments: ["render", graph])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try WAVHeader.channelMask(out), Self.backMask)
        let probedOut = try runTool(ffprobe, ["-v", "error", "-show_entries", "stream=channel_layout", "-of", "csv=p=0", out])
        XCTAssertEqual(probedOut.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "5.1")
    }
}
