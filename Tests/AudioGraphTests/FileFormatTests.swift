import XCTest
import AudioGraph
import CSndFile
import TestSupport

/// `file-out` containers by extension or `format`, and channel layouts read
/// from and written to files' channel maps.
final class FileFormatTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws { dir = try TemporaryDirectory() }
    override func tearDown() { dir = nil }

    /// Validates and renders `json` offline to its end.
    func render(_ json: String) throws {
        let g = try TestGraph.validate(json, directory: dir.path)
        let compiled = try GraphCompiler.compile(g, maxFrames: 1024)
        let result = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(result.finishErrors, [])
    }

    func toneGraph(output: String, channels: Int = 2, extra: String = "", rate: Int = 48000) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(rate),
         "nodes": [{"id": "t", "type": "test-tone", "params": {"frequency": 1000, "channels": \(channels), "duration": 1}},
                   {"id": "o", "type": "file-out", "params": {"path": "\(output)"\(extra)}}],
         "links": [{"from": "t", "to": "o"}]}
        """
    }

    /// libsndfile's major format of a file.
    func majorFormat(_ path: String) -> Int32 {
        var info = SF_INFO()
        guard let h = sf_open(path, Int32(SFM_READ), &info) else { return -1 }
        sf_close(h)
        return info.format & Int32(SF_FORMAT_TYPEMASK)
    }

    func testTheExtensionChoosesContainerAndCodec() throws {
        let expected: [(String, Int32)] = [
            ("a.wav", Int32(SF_FORMAT_WAV)), ("a.w64", Int32(SF_FORMAT_W64)), ("a.rf64", Int32(SF_FORMAT_RF64)),
            ("a.aiff", Int32(SF_FORMAT_AIFF)), ("a.aif", Int32(SF_FORMAT_AIFF)), ("a.caf", Int32(SF_FORMAT_CAF)),
            ("a.flac", Int32(SF_FORMAT_FLAC)), ("a.ogg", Int32(SF_FORMAT_OGG)), ("a.oga", Int32(SF_FORMAT_OGG)),
            ("a.opus", Int32(SF_FORMAT_OGG)), ("a.mp3", Int32(SF_FORMAT_MPEG)), ("a.WAV", Int32(SF_FORMAT_WAV)),
        ]
        for (name, major) in expected {
            try render(toneGraph(output: name))
            let path = dir.file(name)
            // A WAV with a channel mask reads as WAVEX.
            XCTAssertEqual(majorFormat(path) == Int32(SF_FORMAT_WAVEX) ? Int32(SF_FORMAT_WAV) : majorFormat(path), major, name)
            let file = try readSoundFile(path)
            XCTAssertEqual(file.channels, 2, name)
            let left = deinterleave(file.samples, channels: 2, channel: 0)
            // Lossy codecs add priming and padding: within a frame or two.
            XCTAssertEqual(Double(left.count), 48000, accuracy: 3000, name)
            XCTAssertEqual(SignalAnalysis.frequency(of: Array(left[4000..<40000]), sampleRate: 48000), 1000, accuracy: 0.5, name)
        }
        // An explicit format wins over the extension.
        try render(toneGraph(output: "b.data", extra: #", "format": "flac""#))
        XCTAssertEqual(majorFormat(dir.file("b.data")), Int32(SF_FORMAT_FLAC))
    }

    func testFormatsTheContainerCannotHoldAreValidationErrors() throws {
        let cases: [(String, String, String)] = [
            (toneGraph(output: "x.xyz"), "/nodes/1/params/path", ".wav, .w64"),
            (toneGraph(output: "x.flac", extra: #", "sampleFormat": "float32""#), "/nodes/1/params/sampleFormat", "int24 or int16"),
            (toneGraph(output: "x.ogg", extra: #", "sampleFormat": "int16""#), "/nodes/1/params/sampleFormat", "lossy"),
            (toneGraph(output: "x.mp3", channels: 6), "/nodes/1/params/path", "at most 2 channels"),
            (toneGraph(output: "x.opus", rate: 44100), "/nodes/1/params/path", "48000 Hz"),
            (toneGraph(output: "x.flac", channels: 10), "/nodes/1/params/path", "at most 8 channels"),
        ]
        for (json, pointer, words) in cases {
            XCTAssertThrowsError(try TestGraph.validate(json, directory: dir.path), words) { error in
                XCTAssertTrue("\(error)".contains(pointer), "\(pointer): \(error)")
                XCTAssertTrue("\(error)".contains(words), "\(words): \(error)")
            }
        }
    }

    /// One sine per channel, 200 Hz apart, so that channels can be told apart.
    func distinctChannels(_ channels: Int, seconds: Double = 0.5, lfe: Double? = nil) -> [Float] {
        let frames = Int(seconds * 48000)
        let tones = (0..<channels).map {
            Synth.sine(frequency: $0 == 3 ? lfe ?? 900 : 300 + 200 * Double($0), amplitude: 0.3, sampleRate: 48000, frames: frames)
        }
        return (0..<frames).flatMap { f in tones.map { $0[f] } }
    }

    func frequencies(_ samples: [Float], channels: Int) -> [Int] {
        (0..<channels).map { c in
            Int(SignalAnalysis.frequency(of: deinterleave(samples, channels: channels, channel: c), sampleRate: 48000).rounded())
        }
    }

    func testA51WAVCarriesItsChannelMaskAndReadsBackAs51() throws {
        try render(toneGraph(output: "six.wav", channels: 6))
        XCTAssertEqual(try WAVHeader.channelMask(dir.file("six.wav")), 0x60F, "L R C LFE Ls Rs with side surrounds")
        let g = try TestGraph.validate(#"{"format": "agraph/1", "nodes": [{"id": "src", "type": "file", "params": {"path": "six.wav"}}, {"id": "n", "type": "null"}], "links": [{"from": "src", "to": "n"}]}"#,
                                       directory: dir.path)
        XCTAssertEqual(g.node("src")?.outputFormat?.layout, .surround51)
        if let ffprobe = which("ffprobe") {
            let out = try shell(ffprobe, ["-v", "error", "-show_entries", "stream=channel_layout", "-of", "csv=p=0", dir.file("six.wav")])
            XCTAssertTrue(out.hasPrefix("5.1"), "ffprobe says \(out)")
        }
    }

    /// A plain 8-channel WAV (no mask) is 7.1 in WAV order (backs before
    /// sides): read into the project's order (sides before backs), and
    /// written back in WAV order with mask 0x63F: each sine where it was.
    func testA71FileIsReorderedOnTheWayInAndOut() throws {
        let input = distinctChannels(8)
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 8, sampleRate: 48000, samples: input)
        let read = try TestGraph.render(TestGraph.single("file", #"{"path": "in.wav"}"#), seconds: 1, directory: dir.path)
        let got = read.map { Int(SignalAnalysis.frequency(of: $0, sampleRate: 48000).rounded()) }
        // Project order L R C LFE Ls Rs Lb Rb takes file channels 0 1 2 3 6 7 4 5.
        XCTAssertEqual(got, [300, 500, 700, 900, 1500, 1700, 1100, 1300])
        try render("""
            {"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.wav"}},
                                             {"id": "o", "type": "file-out", "params": {"path": "out.wav"}}],
             "links": [{"from": "f", "to": "o"}]}
            """)
        XCTAssertEqual(try WAVHeader.channelMask(dir.file("out.wav")), 0x63F)
        let out = try readSoundFile(dir.file("out.wav"))
        XCTAssertEqual(frequencies(out.samples, channels: 8), frequencies(input, channels: 8), "every channel back in its place")
    }

    /// Ogg Vorbis puts 5.1 as L C R Ls Rs LFE: written so, read back in the project's order.
    func testVorbisUsesItsOwnChannelOrder() throws {
        // Vorbis band-limits its LFE channel: give it a low tone.
        let input = distinctChannels(6, lfe: 60)
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 6, sampleRate: 48000, samples: input)
        try render("""
            {"format": "agraph/1", "nodes": [{"id": "f", "type": "file", "params": {"path": "in.wav"}},
                                             {"id": "o", "type": "file-out", "params": {"path": "out.ogg"}}],
             "links": [{"from": "f", "to": "o"}]}
            """)
        let raw = try readSoundFile(dir.file("out.ogg"))
        XCTAssertEqual(frequencies(raw.samples, channels: 6), [300, 700, 500, 1100, 1300, 60], "Vorbis order in the file")
        let back = try TestGraph.render(TestGraph.single("file", #"{"path": "out.ogg"}"#), seconds: 1, directory: dir.path)
        XCTAssertEqual(back.map { Int(SignalAnalysis.frequency(of: $0, sampleRate: 48000).rounded()) }, [300, 500, 700, 60, 1100, 1300])
    }

    // MARK: helpers

    func which(_ tool: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    func shell(_ tool: String, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
