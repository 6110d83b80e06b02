import AudioGraph
import Foundation
import TestSupport
import XCTest

/// The `media` source and the `ffmpeg` decoder plugin, run as a user runs
/// them (`agraph render`), on content made here with the ffmpeg
/// command-line tool (scripts/test installs it): a distinct sine in each
/// channel, encoded to each codec and container; the decoded output has
/// each sine in its channel at its level, the original length, and lines
/// up with the original sample for sample.
final class MediaTests: XCTestCase {
    static let rate = 48_000.0
    /// Each channel's frequency (5.1: L R C LFE Ls Rs; LFE low, as codecs
    /// low-pass it), all whole numbers of cycles per second.
    static let frequencies: [Double] = [500, 700, 900, 60, 1100, 1300]
    static let amplitude: Float = 0.25

    var ffmpeg: String!
    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        guard let path = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        ffmpeg = path
        dir = try TemporaryDirectory("agraph-media")
    }

    func agraph(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CLITests.Run {
        try CLITests.agraph(arguments: arguments, file: file, line: line)
    }

    /// `channels` channels of sines (`frequencies`), `seconds` long, as a
    /// float WAV; returns its path and samples.
    func source(channels: Int, seconds: Double = 2) throws -> (path: String, samples: [Float]) {
        let frames = Int(seconds * Self.rate)
        var samples = [Float](repeating: 0, count: frames * channels)
        for c in 0..<channels {
            let s = Synth.sine(frequency: Self.frequencies[c], amplitude: Double(Self.amplitude), sampleRate: Self.rate, frames: frames)
            for i in 0..<frames { samples[i * channels + c] = s[i] }
        }
        let path = dir.file("source-\(channels).wav")
        try writeSoundFile(path, format: .wavFloat32, channels: channels, sampleRate: Self.rate, samples: samples)
        return (path, samples)
    }

    /// Encodes `input` with ffmpeg (`arguments` between input and output).
    func encode(_ input: String, channels: Int, to name: String, _ arguments: [String], layout51: String = "5.1(side)") throws -> String {
        let out = dir.file(name)
        let layout = channels == 6 ? layout51 : channels == 1 ? "mono" : "stereo"
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", input,
                                      "-af", "aformat=channel_layouts=\(layout)"] + arguments + [out])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make \(name): \(r.stderr)") }
        return out
    }

    /// Renders media → ffmpeg → file-out with `params` for the media node;
    /// returns the output's channels and samples.
    /// Writes the graph media → ffmpeg → `sink` (a node's JSON) as
    /// `tag`.json; returns its path.
    func graph(_ media: String, params: String = "", sink: String, tag: String) throws -> String {
        let graph = dir.file("\(tag).json")
        let extra = params.isEmpty ? "" : ", " + params
        try """
        {"format": "agraph/1", "description": "test", "sampleRate": 48000,
         "nodes": [{"id": "src", "type": "media", "params": {"path": "\(media)"\(extra)}},
                   {"id": "dec", "type": "ffmpeg"},
                   \(sink)],
         "links": [{"from": "src", "to": "dec"}, {"from": "dec", "to": "out"}]}
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        return graph
    }

    func decode(_ media: String, params: String = "", tag: String = "out",
                render: [String] = []) throws -> (channels: Int, samples: [Float], run: CLITests.Run) {
        let out = dir.file("\(tag).wav")
        let graph = try graph(media, params: params, sink: #"{"id": "out", "type": "file-out", "params": {"path": "\#(out)"}}"#, tag: tag)
        let run = try agraph(["render", graph] + render)
        guard run.status == 0 else {
            XCTFail("render of \(media) failed: \(run.stderr)")
            return (0, [], run)
        }
        let read = try readSoundFile(out)
        return (read.channels, read.samples, run)
    }

    /// The level of `frequency` in channel `c` over the middle second, dBFS (peak).
    func level(_ samples: [Float], channels: Int, channel c: Int, frequency: Double) -> Double {
        let x = deinterleave(samples, channels: channels, channel: c)
        let from = max(0, x.count / 2 - Int(Self.rate / 2))
        let window = Array(x[from..<min(x.count, from + Int(Self.rate))])
        return SignalAnalysis.dBFS(SignalAnalysis.goertzelMagnitude(window, sampleRate: Self.rate, frequency: frequency))
    }

    /// Signal-to-error ratio in dB of `decoded` against `original` (channel
    /// `c`) when `decoded` is shifted by `lag` samples, over the middle.
    func snr(_ decoded: [Float], _ original: [Float], channels: Int, channel c: Int, lag: Int) -> Double {
        let frames = min(decoded.count, original.count) / channels
        var signal = 0.0, error = 0.0
        for i in (frames / 4)..<(3 * frames / 4) {
            let o = Double(original[i * channels + c])
            let d = Double(decoded[(i + lag) * channels + c])
            signal += o * o
            error += (d - o) * (d - o)
        }
        return 10 * log10(signal / max(error, 1e-30))
    }

    /// The same file decoded by the ffmpeg command-line tool (float,
    /// interleaved, FFmpeg's channel order: the project's for these layouts).
    func ffmpegDecode(_ media: String) throws -> [Float] {
        let raw = media + ".f32"
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", media, "-f", "f32le", raw])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not decode \(media): \(r.stderr)") }
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    struct Codec {
        var name: String
        var file: String
        var channels: Int
        var arguments: [String]
        /// Level tolerance in dB.
        var tolerance: Double
        /// Whether the container tells the encoder delay (then the signal
        /// lines up with the original at lag 0) and the padding (then the
        /// length is the original's).
        var aligned: Bool
        var exactLength: Bool
        var lossless: Bool = false
        var layout51 = "5.1(side)"
        /// Channels whose level the codec changes (DTS's LFE).
        var levelExempt: Set<Int> = []
    }

    static let codecs: [Codec] = [
        Codec(name: "AAC in MP4", file: "aac.m4a", channels: 6, arguments: ["-c:a", "aac", "-b:a", "384k"], tolerance: 0.5,
              aligned: true, exactLength: true),
        Codec(name: "AC-3", file: "ac3.ac3", channels: 6, arguments: ["-c:a", "ac3", "-b:a", "448k"], tolerance: 0.5,
              aligned: false, exactLength: false),
        // ffmpeg's MP4 muxer gives E-AC-3 the encoder delay (an edit list)
        // but not the padding of the last frame.
        Codec(name: "E-AC-3 in MP4", file: "eac3.mp4", channels: 6, arguments: ["-c:a", "eac3", "-b:a", "640k"], tolerance: 0.5,
              aligned: true, exactLength: false),
        Codec(name: "E-AC-3 (raw)", file: "eac3.ec3", channels: 6, arguments: ["-c:a", "eac3", "-b:a", "640k", "-f", "eac3"],
              tolerance: 0.5, aligned: false, exactLength: false),
        Codec(name: "MP3", file: "mp3.mp3", channels: 2, arguments: ["-c:a", "libmp3lame", "-b:a", "320k"], tolerance: 0.5,
              aligned: true, exactLength: true),
        Codec(name: "Opus in Ogg", file: "opus.ogg", channels: 6, arguments: ["-c:a", "libopus", "-b:a", "510k", "-mapping_family", "1"],
              tolerance: 0.5, aligned: true, exactLength: true, layout51: "5.1"),
        // libvorbis codes the 60 Hz LFE sine 1.7 dB high (ffmpeg's own
        // decode reads the same), so that channel's level is not judged.
        Codec(name: "Vorbis in Ogg", file: "vorbis.ogg", channels: 6, arguments: ["-c:a", "libvorbis", "-q:a", "8"], tolerance: 0.5,
              aligned: true, exactLength: true, layout51: "5.1", levelExempt: [3]),
        Codec(name: "FLAC", file: "flac.flac", channels: 6, arguments: ["-c:a", "flac", "-sample_fmt", "s32"], tolerance: 0.01,
              aligned: true, exactLength: true, lossless: true),
        Codec(name: "ALAC in MP4", file: "alac.m4a", channels: 6, arguments: ["-c:a", "alac"], tolerance: 0.01,
              aligned: true, exactLength: true, lossless: true),
        Codec(name: "PCM 24-bit in Matroska", file: "pcm.mkv", channels: 6, arguments: ["-c:a", "pcm_s24le"], tolerance: 0.01,
              aligned: true, exactLength: true, lossless: true),
        Codec(name: "DTS", file: "dts.dts", channels: 6, arguments: ["-c:a", "dca", "-strict", "-2", "-b:a", "1509k"], tolerance: 1.0,
              aligned: false, exactLength: false, levelExempt: [3]),
    ]

    func testEveryCodecDecodesEachChannelAtItsLevelWithTheOriginalLength() throws {
        var failures: [String] = []
        for codec in Self.codecs {
            let (wav, original) = try source(channels: codec.channels)
            let media: String
            do { media = try encode(wav, channels: codec.channels, to: codec.file, codec.arguments, layout51: codec.layout51) } catch {
                failures.append("\(codec.name): \(error)")
                continue
            }
            let out = try decode(media, tag: codec.file)
            XCTAssertEqual(out.channels, codec.channels, codec.name)
            guard out.channels == codec.channels else { continue }
            let frames = original.count / codec.channels
            let decodedFrames = out.samples.count / codec.channels
            if codec.exactLength {
                XCTAssertEqual(decodedFrames, frames, "\(codec.name): length")
            } else {
                // No delay or padding in a raw stream: whole frames.
                XCTAssertGreaterThanOrEqual(decodedFrames, frames, "\(codec.name): length")
                XCTAssertLessThan(decodedFrames, frames + 4096, "\(codec.name): length")
            }
            let expected = SignalAnalysis.dBFS(Double(Self.amplitude))
            for c in 0..<codec.channels where !codec.levelExempt.contains(c) {
                let own = level(out.samples, channels: codec.channels, channel: c, frequency: Self.frequencies[c])
                XCTAssertEqual(own, expected, accuracy: codec.tolerance, "\(codec.name): channel \(c)'s sine")
                for other in 0..<codec.channels where other != c {
                    let leak = level(out.samples, channels: codec.channels, channel: c, frequency: Self.frequencies[other])
                    XCTAssertLessThan(leak, expected - 30, "\(codec.name): channel \(other)'s sine in channel \(c)")
                }
            }
            // The same libavcodec: the same samples as ffmpeg's own decode
            // (which trims the same delay; it keeps the padding an MP4 edit
            // list cuts).
            let theirs = try ffmpegDecode(media)
            let common = min(theirs.count, out.samples.count)
            var largest: Float = 0
            for i in 0..<common { largest = max(largest, abs(theirs[i] - out.samples[i])) }
            XCTAssertEqual(largest, 0, "\(codec.name): differs from ffmpeg's decode of the same file")
            XCTAssertGreaterThan(common, original.count * 9 / 10, codec.name)
            if codec.aligned {
                // Lined up with the original: the error is smallest at lag 0.
                let at0 = snr(out.samples, original, channels: codec.channels, channel: 0, lag: 0)
                for lag in [-2, -1, 1, 2] {
                    XCTAssertGreaterThan(at0, snr(out.samples, original, channels: codec.channels, channel: 0, lag: lag),
                                         "\(codec.name): decoded and original line up at lag 0, not \(lag)")
                }
                XCTAssertGreaterThan(at0, codec.lossless ? 100 : 20, "\(codec.name): signal-to-error at lag 0")
            }
        }
        XCTAssertEqual(failures, [])
    }

    /// A seek (here `start`) lands on the exact sample: the output equals
    /// the output of decoding from the start, from that sample on. HE-AAC
    /// and HE-AACv2 (ADTS and M4A, see MediaTests+HEAAC.swift) as well:
    /// the SBR and PS headers in every frame restart the decoder's SBR.
    func testStartLandsOnTheExactSampleOfAFullDecode() throws {
        let seekable = Self.codecs.filter { ["AAC in MP4", "E-AC-3 in MP4", "E-AC-3 (raw)", "Opus in Ogg", "MP3"].contains($0.name) }
        var cases: [(name: String, file: String, media: String, channels: Int)] = []
        for codec in seekable {
            let (wav, _) = try source(channels: codec.channels, seconds: 3)
            let media = try encode(wav, channels: codec.channels, to: "seek-" + codec.file, codec.arguments, layout51: codec.layout51)
            cases.append((codec.name, codec.file, media, codec.channels))
        }
        let he = try heaac(channels: 2, seconds: 3, writer: HEAACStreamWriter(envelope: Self.heEnvelope), name: "seek-he")
        let v2 = try heaac(channels: 1, seconds: 3, writer: HEAACStreamWriter(envelope: [Self.heEnvelope[0]], parametricStereo: Self.hePan),
                           name: "seek-hev2")
        for (files, profile) in [(he, "HE-AAC"), (v2, "HE-AACv2")] {
            for (container, media) in files.files {
                cases.append(("\(profile) in \(container)", URL(fileURLWithPath: media).lastPathComponent, media, 2))
            }
        }
        for codec in cases {
            let media = codec.media
            let full = try decode(media, tag: "full-" + codec.file)
            for (seconds, frame) in [(0.775, 37_200), (1.2345, 59_256)] {
                let part = try decode(media, params: "\"start\": \(seconds)", tag: "start-\(frame)-" + codec.file)
                let n = codec.channels
                XCTAssertEqual(part.samples.count, full.samples.count - frame * n, "\(codec.name) from \(seconds) s: length")
                let tail = Array(full.samples[(frame * n)...])
                // MP3 and Opus decode to the same bits; AAC's noise
                // substitution and AC-3's dither draw from a random
                // generator whose state a seek changes, so those match to
                // the codec's noise, and at lag 0 far better than one
                // sample off.
                let at0 = snr(part.samples, tail, channels: n, channel: 0, lag: 0)
                XCTAssertGreaterThan(at0, 40, "\(codec.name) from \(seconds) s: signal-to-difference against the full decode")
                for lag in [-1, 1] {
                    XCTAssertGreaterThan(at0, snr(part.samples, tail, channels: n, channel: 0, lag: lag) + 10,
                                         "\(codec.name) from \(seconds) s: lands on the sample, not \(lag) off")
                }
                if codec.name == "MP3" || codec.name == "Opus in Ogg" {
                    let common = min(part.samples.count, tail.count)
                    var largest: Float = 0
                    for i in 0..<common { largest = max(largest, abs(part.samples[i] - tail[i])) }
                    XCTAssertLessThanOrEqual(largest, 1e-6, "\(codec.name) from \(seconds) s: the same samples as the full decode")
                }
            }
        }
    }

    /// `end` and `loop`: a window of the stream, played twice over.
    func testEndAndLoopPlayTheWindow() throws {
        let codec = Self.codecs[0]
        let (wav, _) = try source(channels: codec.channels, seconds: 3)
        let media = try encode(wav, channels: codec.channels, to: "loop-" + codec.file, codec.arguments)
        let full = try decode(media, tag: "loop-full")
        let window = try decode(media, params: "\"start\": 0.5, \"end\": 1.25", tag: "loop-window")
        XCTAssertEqual(window.samples.count, 36_000 * codec.channels, "0.5 s to 1.25 s")
        let part = Array(full.samples[(24_000 * codec.channels)..<(60_000 * codec.channels)])
        XCTAssertGreaterThan(snr(window.samples, part, channels: codec.channels, channel: 0, lag: 0), 40,
                             "the window is that part of the full decode (to AAC's noise substitution)")
        // Looping: the window again and again, with no gap.
        let looped = try decode(media, params: "\"start\": 0.5, \"end\": 1.25, \"loop\": true", tag: "loop-loop",
                                render: ["--duration", "2"])
        let n = codec.channels
        XCTAssertEqual(looped.samples.count, 96_000 * n, "2 s of a looping source")
        let first = Array(looped.samples[0..<(36_000 * n)])
        let second = Array(looped.samples[(36_000 * n)..<(72_000 * n)])
        XCTAssertGreaterThan(snr(first, part, channels: n, channel: 0, lag: 0), 40, "first pass")
        XCTAssertGreaterThan(snr(second, part, channels: n, channel: 0, lag: 0), 40, "second pass: the window again")
    }

    /// Damaged files (bytes flipped across the middle, the file cut short)
    /// decode to the end with the damage counted and concealed: no crash,
    /// no hang, the length kept (flipped) or what was there (cut).
    func testDamagedFilesDecodeWithTheDamageCounted() throws {
        let picks = Self.codecs.filter { ["AAC in MP4", "AC-3", "MP3", "Opus in Ogg", "FLAC"].contains($0.name) }
        for codec in picks {
            let (wav, original) = try source(channels: codec.channels, seconds: 4)
            // An MP4's index (moov) first, so that a file cut short still
            // has it (cut before the index, an MP4 cannot be read at all:
            // that is refused with the file named, checked below).
            let faststart = codec.file.hasSuffix(".m4a") ? ["-movflags", "+faststart"] : []
            let media = try encode(wav, channels: codec.channels, to: "damage-" + codec.file, codec.arguments + faststart,
                                   layout51: codec.layout51)
            let frames = original.count / codec.channels
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: media)))
            let size = bytes.count
            let cut = dir.file("cut-" + codec.file)
            try Data(bytes[0..<(size * 7 / 10)]).write(to: URL(fileURLWithPath: cut))
            for i in stride(from: size * 3 / 10, to: size * 6 / 10, by: 97) { bytes[i] ^= 0x5A }
            let flipped = dir.file("flipped-" + codec.file)
            try Data(bytes).write(to: URL(fileURLWithPath: flipped))

            // Concealment is what is checked: --allow-damaged (without it the render fails; DamagedInputTests).
            let f = try decode(flipped, tag: "flipped-" + codec.file, render: ["--allow-damaged"])
            let got = f.samples.count / max(f.channels, 1)
            XCTAssertLessThan(got, frames + 8192, "\(codec.name), flipped bytes")
            if codec.file.hasSuffix(".ogg") {
                // libavformat's Ogg reader drops pages whose CRC fails; with
                // their granule positions lost it may end the stream there
                // (ffmpeg's own decode stops early). Missing packets that it
                // does skip over are played as silence here, so this gets at
                // least as far as ffmpeg.
                XCTAssertGreaterThan(got, frames * 25 / 100, "\(codec.name), flipped bytes: decoded up to the damage")
                XCTAssertGreaterThanOrEqual(got * codec.channels, try ffmpegDecode(flipped).count, "\(codec.name): as far as ffmpeg gets")
            } else {
                XCTAssertGreaterThan(got, frames * 8 / 10, "\(codec.name), flipped bytes: decoded to the end")
                XCTAssertTrue(f.run.stderr.contains("damaged frame"), "\(codec.name), flipped bytes: the damage is reported: \(f.run.stderr)")
            }

            let c = try decode(cut, tag: "cut-" + codec.file, render: ["--allow-damaged"])
            let kept = c.samples.count / max(c.channels, 1)
            XCTAssertGreaterThan(kept, frames / 2, "\(codec.name), cut short: what is there is decoded")
            XCTAssertLessThan(kept, frames * 8 / 10, "\(codec.name), cut short")
        }
    }

    /// An MP4 cut before its index cannot be read: `validate` names the
    /// file and FFmpeg's reason, and nothing runs.
    func testAnMP4WithoutItsIndexIsRefusedByName() throws {
        let (wav, _) = try source(channels: 2, seconds: 2)
        let media = try encode(wav, channels: 2, to: "noindex.m4a", ["-c:a", "aac"])
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: media)))
        let cut = dir.file("noindex-cut.m4a")
        try Data(bytes[0..<(bytes.count / 2)]).write(to: URL(fileURLWithPath: cut))
        let graph = try graph(cut, sink: #"{"id": "out", "type": "null"}"#, tag: "noindex")
        let run = try agraph(["validate", graph])
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("/nodes/0/params/path") && run.stderr.contains("cannot open")
                      && run.stderr.contains("noindex-cut.m4a: Invalid data"), run.stderr)
    }

    /// `agraph probe` on a container with a video and two audio streams:
    /// every stream, its codec, layout and duration, the best audio stream;
    /// the `media` source refuses a video stream by index with the audio
    /// streams named.
    func testProbeListsEveryStreamAndMediaPicksAudio() throws {
        let movie = dir.file("movie.mkv")
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y",
                                     "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=2",
                                     "-f", "lavfi", "-i", "sine=f=440:r=48000:d=2",
                                     "-f", "lavfi", "-i", "sine=f=880:r=44100:d=2",
                                     "-map", "0", "-map", "1", "-map", "2", "-c:v", "mpeg4",
                                     "-c:a:0", "ac3", "-ac:a:0", "6", "-c:a:1", "flac", "-metadata:s:a:1", "language=fra", movie])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make the test movie: \(r.stderr)") }
        let run = try agraph(["probe", movie, "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let facts = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        XCTAssertEqual(facts["container"] as? String, "matroska,webm")
        XCTAssertEqual(facts["durationSeconds"] as? Double ?? 0, 2, accuracy: 0.1)
        let streams = try XCTUnwrap(facts["streams"] as? [[String: Any]])
        XCTAssertEqual(streams.map { $0["kind"] as? String }, ["video", "audio", "audio"])
        XCTAssertEqual(streams.map { $0["codec"] as? String }, ["mpeg4", "ac3", "flac"])
        XCTAssertEqual(streams[1]["channels"] as? Int, 6)
        XCTAssertEqual(streams[1]["layout"] as? String, "5.1")
        XCTAssertEqual(streams[2]["sampleRate"] as? Int, 44_100)
        XCTAssertEqual(streams[2]["language"] as? String, "fra")
        XCTAssertEqual((streams[1]["decoder"] as? String)?.hasPrefix("ffmpeg"), true, "\(streams[1])")
        let text = try agraph(["probe", movie])
        XCTAssertTrue(text.stdout.contains("stream 1: audio, ac3") && text.stdout.contains("6 ch"), text.stdout)

        let graph = try graph(movie, params: #""stream": 0"#, sink: #"{"id": "out", "type": "null"}"#, tag: "video")
        let refused = try agraph(["validate", graph])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("/nodes/0/params/stream") && refused.stderr.contains("is video")
                      && refused.stderr.contains("its audio streams: 1, 2"), refused.stderr)
        // The second audio stream by index: FLAC at 44.1 kHz, converted to the graph's rate.
        let second = try decode(movie, params: "\"stream\": 2", tag: "second")
        XCTAssertEqual(second.channels, 1)
        let frames = second.samples.count
        XCTAssertEqual(Double(frames), 96_000, accuracy: 100, "2 s at 48 kHz")
        let f = SignalAnalysis.goertzelMagnitude(Array(second.samples[24_000..<72_000]), sampleRate: Self.rate, frequency: 880)
        XCTAssertEqual(SignalAnalysis.dBFS(f), SignalAnalysis.dBFS(0.125), accuracy: 0.5, "880 Hz at ffmpeg's sine level, after conversion")
    }

    /// The example graphs that use the ffmpeg plugin validate with it.
    func testTheFFmpegExampleGraphsValidate() throws {
        let dir = CLITests.repoRoot.appendingPathComponent("Graphs/ffmpeg")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertGreaterThanOrEqual(files.count, 2)
        for f in files {
            let run = try agraph(["validate", "Graphs/ffmpeg/" + f])
            XCTAssertEqual(run.status, 0, "\(f): \(run.stderr)")
        }
    }

    /// A 44.1 kHz stream in a 48 kHz graph is converted in the decoder
    /// (libswresample's soxr engine, which removes its own delay): an
    /// impulse at 1 s lands on frame 48000; after `start` the decoder
    /// restarts at an input frame whose time is rarely a whole graph frame,
    /// so it lands within one frame of 48000 − start.
    func testAConvertedStreamKeepsItsTiming() throws {
        var samples = [Float](repeating: 0, count: 88_200)
        samples[44_100] = 0.6
        let wav = dir.file("impulse-44k1.wav")
        try writeSoundFile(wav, format: .wavInt16, channels: 1, sampleRate: 44_100, samples: samples)
        let flac = try encode(wav, channels: 1, to: "impulse.flac", ["-c:a", "flac"])
        func peak(_ x: [Float]) -> Int { x.indices.max { abs(x[$0]) < abs(x[$1]) } ?? -1 }
        let whole = try decode(flac, tag: "impulse-whole")
        XCTAssertEqual(whole.samples.count, 96_000, "2 s at 48 kHz")
        XCTAssertEqual(peak(whole.samples), 48_000, "the impulse at 1 s")
        let later = try decode(flac, params: #""start": 0.5"#, tag: "impulse-later")
        XCTAssertEqual(later.samples.count, 72_000)
        XCTAssertEqual(Double(peak(later.samples)), 24_000, accuracy: 1, "the impulse 0.5 s after the start")
    }

    /// A stream whose channel positions the project has no layout for (3.0:
    /// L R C) decodes with its channels in order, tagged discrete, and the
    /// decoder says so.
    func testAnUnknownLayoutBecomesDiscreteWithAWarning() throws {
        let (wav, original) = try source(channels: 3)
        let media = dir.file("three.mka")
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", wav,
                                     "-af", "channelmap=map=0|1|2:channel_layout=3.0", "-c:a", "flac", media])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not make a 3.0 file: \(r.stderr)") }
        let probe = try agraph(["probe", media])
        XCTAssertTrue(probe.stdout.contains("3 ch, 3.0 → discrete"), probe.stdout)
        let out = try decode(media, tag: "three")
        XCTAssertEqual(out.channels, 3)
        XCTAssertTrue(out.run.stderr.contains("tagged discrete"), "the warning: \(out.run.stderr)")
        XCTAssertEqual(out.samples.count, original.count)
        for c in 0..<3 {
            XCTAssertEqual(level(out.samples, channels: 3, channel: c, frequency: Self.frequencies[c]),
                           SignalAnalysis.dBFS(Double(Self.amplitude)), accuracy: 0.01, "channel \(c) in place")
        }
    }

    /// A stream whose channel count changes on the way (here an ADTS
    /// stream of 1 s of stereo AAC followed by 1 s of mono, as a broadcast
    /// programme change can): the node keeps the stream's first layout,
    /// and the mono part is mixed to both channels by libswresample (its
    /// default mono → stereo: the centre to each side at −3 dB), not left
    /// in one; a warning says so once.
    func testAChangeOfChannelCountMidStreamIsMixedToTheStreamsLayout() throws {
        let (stereoWav, _) = try source(channels: 2, seconds: 1)
        let stereo = try encode(stereoWav, channels: 2, to: "switch-a.aac", ["-c:a", "aac", "-b:a", "192k", "-f", "adts"])
        let (monoWav, _) = try source(channels: 1, seconds: 1)
        let mono = try encode(monoWav, channels: 1, to: "switch-b.aac", ["-c:a", "aac", "-b:a", "96k", "-f", "adts"])
        let both = dir.file("switch.aac")
        try (Data(contentsOf: URL(fileURLWithPath: stereo)) + Data(contentsOf: URL(fileURLWithPath: mono)))
            .write(to: URL(fileURLWithPath: both))
        let out = try decode(both, tag: "switch")
        XCTAssertEqual(out.channels, 2, "the stream's first layout")
        guard out.channels == 2 else { return }
        XCTAssertTrue(out.run.stderr.contains("changed to 1 channels"), "the warning: \(out.run.stderr)")
        XCTAssertEqual(out.run.stderr.components(separatedBy: "changed to").count - 1, 1, "once: \(out.run.stderr)")
        let frames = out.samples.count / 2
        XCTAssertGreaterThan(frames, 90_000, "both parts are there")
        let expected = SignalAnalysis.dBFS(Double(Self.amplitude))
        // The middle of each part (the levels over half a second).
        func levels(from start: Int, frequency: Double) -> (left: Double, right: Double) {
            let part = Array(out.samples[(start * 2)..<((start + 24_000) * 2)])
            return (level(part, channels: 2, channel: 0, frequency: frequency), level(part, channels: 2, channel: 1, frequency: frequency))
        }
        let first = levels(from: 12_000, frequency: Self.frequencies[0])
        XCTAssertEqual(first.left, expected, accuracy: 0.5, "stereo part: left's sine in the left")
        XCTAssertLessThan(first.right, expected - 30, "stereo part: not in the right")
        let second = levels(from: frames - 36_000, frequency: Self.frequencies[0])
        XCTAssertEqual(second.left, expected - 3, accuracy: 0.5, "mono part: in the left at −3 dB")
        XCTAssertEqual(second.right, expected - 3, accuracy: 0.5, "mono part: in the right at −3 dB")
    }

    /// The same after a `start` (which aligns the output to the frames'
    /// own time): stereo, mono, stereo again (1 s each) from 0.5 s on is
    /// the full decode's output from 0.5 s on, as long, the third part in
    /// its place (no silence put in where the channels change back).
    func testStartIntoAStreamThatChangesChannelsKeepsItsTiming() throws {
        let (stereoWav, _) = try source(channels: 2, seconds: 1)
        let stereo = try encode(stereoWav, channels: 2, to: "switch3-a.aac", ["-c:a", "aac", "-b:a", "192k", "-f", "adts"])
        let (monoWav, _) = try source(channels: 1, seconds: 1)
        let mono = try encode(monoWav, channels: 1, to: "switch3-b.aac", ["-c:a", "aac", "-b:a", "96k", "-f", "adts"])
        let parts = try [stereo, mono, stereo].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let media = dir.file("switch3.aac")
        try parts.reduce(Data(), +).write(to: URL(fileURLWithPath: media))
        let full = try decode(media, tag: "switch3-full")
        let part = try decode(media, params: "\"start\": 0.5", tag: "switch3-start")
        XCTAssertEqual(full.channels, 2)
        XCTAssertEqual(part.channels, 2)
        XCTAssertEqual(part.samples.count, full.samples.count - 24_000 * 2, "from 0.5 s on: as long as the full decode's rest")
        // The third part (stereo again), the middle of it: the left sine
        // where the full decode has it, at lag 0 (AAC restarted: to its noise).
        let tail = Array(full.samples[(24_000 * 2)...])
        let frames = min(part.samples.count, tail.count) / 2
        let from = frames - 36_000
        let a = Array(part.samples[(from * 2)..<((from + 24_000) * 2)]), b = Array(tail[(from * 2)..<((from + 24_000) * 2)])
        XCTAssertGreaterThan(snr(a, b, channels: 2, channel: 0, lag: 0), 30, "the third part lines up with the full decode's")
    }

    /// The damage count reaches the status line of `agraph run` (and the
    /// `status` command), only when there is some.
    func testTheStatusLineShowsDamageWhenThereIsSome() {
        var status = GraphStatus(seconds: 1, frames: 48_000, peaks: [], xruns: 0, underruns: 0, cpuLoad: 1, bufferSize: 256,
                                 paused: false, finished: false, serverGone: false)
        XCTAssertFalse(status.text.contains("damaged"), status.text)
        status.damagedFrames = 3
        XCTAssertTrue(status.text.contains("underruns 0  damaged 3  DSP"), status.text)
    }
}
