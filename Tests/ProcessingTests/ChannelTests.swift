import AudioGraph
import Foundation
import TestSupport
import XCTest

/// `channel-map`, `downmix` and `upmix`, judged by the signals they make:
/// each input channel carries its own sine, and the level (Goertzel) and
/// polarity (projection on the reference sine) of every sine in every output
/// channel give the matrix actually applied. The expected coefficients are
/// written here from ITU-R BS.775 (and the Lt/Rt encode), not taken from the
/// product.
final class ChannelTests: XCTestCase {
    static let rate = 48000.0
    /// One second: every test frequency is a whole number of Hz, so each
    /// sine holds whole cycles and the sines are orthogonal.
    static let frames = 48000
    static let amplitude = 0.25
    /// A distinct frequency per input channel (L R C LFE Ls Rs Lb Rb).
    static let frequencies: [Double] = [500, 700, 1100, 130, 1700, 1900, 2300, 2900]

    /// BS.775's −3 dB coefficient as the standard writes it.
    static let r = 0.7071

    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("agraph-channels")
    }

    override func tearDown() { dir = nil }

    // MARK: helpers

    /// Writes a float WAV of `channels` channels, channel `c` a sine at
    /// `frequencies[c]` (or `samples(c)` when given); returns its path.
    func writeInput(channels: Int, name: String = "in.wav", samples: ((Int) -> [Float])? = nil) throws -> String {
        let chans = (0..<channels).map { c in
            samples?(c) ?? Synth.sine(frequency: Self.frequencies[c], amplitude: Self.amplitude,
                                      sampleRate: Self.rate, frames: Self.frames)
        }
        var interleaved = [Float](repeating: 0, count: Self.frames * channels)
        for c in 0..<channels {
            for i in 0..<chans[c].count { interleaved[i * channels + c] = chans[c][i] }
        }
        let path = dir.file(name)
        try writeSoundFile(path, format: .wavFloat32, channels: channels, sampleRate: Self.rate, samples: interleaved)
        return path
    }

    /// The frequency of input channel `c` as the node receives it. The
    /// `file` source puts a file's channels in the layout's order (a 7.1
    /// WAV stores the back pair before the side pair), so `render` finds
    /// out which sine each delivered channel carries.
    var inputFrequencies = ChannelTests.frequencies

    /// file (tagged `layout`) → `node` → capture; what was captured.
    func render(input path: String, layout: String, node: String, params: String) throws -> [[Float]] {
        let passThrough = try renderPassThrough(path)
        inputFrequencies = passThrough.map { channel in
            Self.frequencies.max { a, b in
                SignalAnalysis.goertzelMagnitude(channel, sampleRate: Self.rate, frequency: a)
                    < SignalAnalysis.goertzelMagnitude(channel, sampleRate: Self.rate, frequency: b)
            } ?? 0
        }
        let json = """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "in", "type": "file", "params": {"path": "\(path)"}},
                   {"id": "tag", "type": "format-tag", "params": {"layout": "\(layout)"}},
                   {"id": "x", "type": "\(node)", "params": \(params)},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "in", "to": "tag"}, {"from": "tag", "to": "x"}, {"from": "x", "to": "cap"}]}
        """
        let out = try TestGraph.render(json, seconds: 1, directory: dir.path)
        for (c, ch) in out.enumerated() { XCTAssertEqual(ch.count, Self.frames, "output channel \(c) length") }
        return out
    }

    /// The signed gain of input channel `c`'s sine in `output`: the
    /// projection on the reference sine (sign) with the Goertzel level.
    func gain(of c: Int, in output: [Float], amplitude: Double = amplitude) -> Double {
        let f = inputFrequencies[c]
        let magnitude = SignalAnalysis.goertzelMagnitude(output, sampleRate: Self.rate, frequency: f) / amplitude
        let reference = Synth.sine(frequency: f, amplitude: 1, sampleRate: Self.rate, frames: output.count)
        var dot = 0.0
        for i in 0..<output.count { dot += Double(output[i]) * Double(reference[i]) }
        return dot < 0 ? -magnitude : magnitude
    }

    /// Every input sine's level in every output channel matches `expected`
    /// (rows = outputs, columns = inputs): to ±0.05 dB with the right
    /// polarity where non-zero, below −80 dB where zero.
    func assertMatrix(_ out: [[Float]], _ expected: [[Double]], _ what: String,
                      file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(out.count, expected.count, "\(what): output channels", file: file, line: line)
        for (o, row) in expected.enumerated() where o < out.count {
            for (i, want) in row.enumerated() {
                let got = gain(of: i, in: out[o])
                if want == 0 {
                    XCTAssertLessThan(SignalAnalysis.dBFS(abs(got)), -80,
                                      "\(what): input \(i) leaks into output \(o)", file: file, line: line)
                } else {
                    let diff = SignalAnalysis.dBFS(abs(got)) - SignalAnalysis.dBFS(abs(want))
                    XCTAssertEqual(diff, 0, accuracy: 0.05,
                                   "\(what): input \(i) in output \(o): \(SignalAnalysis.dBFS(abs(got))) dB, want \(SignalAnalysis.dBFS(abs(want))) dB",
                                   file: file, line: line)
                    XCTAssertEqual(got.sign, want.sign, "\(what): polarity of input \(i) in output \(o)", file: file, line: line)
                }
            }
        }
    }

    /// The diagnostics of a graph that must not validate.
    func errors(_ json: String) -> [Diagnostic] {
        do {
            _ = try TestGraph.validate(json, stores: ["main": CaptureStore(capacityFrames: 16)], directory: dir.path)
            XCTFail("the graph validated")
            return []
        } catch let e as GraphErrors {
            return e.errors
        } catch {
            XCTFail("unexpected error \(error)")
            return []
        }
    }

    /// Asserts an error at `pointer` whose message holds every phrase.
    func assertError(_ json: String, at pointer: String, _ phrases: [String],
                     file: StaticString = #filePath, line: UInt = #line) {
        let all = errors(json)
        let hit = all.first { $0.pointer.description == pointer && phrases.allSatisfy($0.message.contains) }
        XCTAssertNotNil(hit, "no error at \(pointer) with \(phrases); got:\n\(all.map(\.description).joined(separator: "\n"))",
                        file: file, line: line)
    }

    /// A graph: 6-channel test tone (5.1) → `node` with `params` → capture.
    func toneGraph(channels: Int = 6, layout: String? = nil, node: String, params: String) -> String {
        let tag = layout.map { #"{"id": "tag", "type": "format-tag", "params": {"layout": "\#($0)"}},"# } ?? ""
        let link = layout == nil ? #"{"from": "tone", "to": "x"}"# : #"{"from": "tone", "to": "tag"}, {"from": "tag", "to": "x"}"#
        return """
        {"format": "agraph/1",
         "nodes": [{"id": "tone", "type": "test-tone", "params": {"channels": \(channels), "duration": 0.1}},
                   \(tag)
                   {"id": "x", "type": "\(node)", "params": \(params)},
                   {"id": "cap", "type": "capture"}],
         "links": [\(link), {"from": "x", "to": "cap"}]}
        """
    }

    // MARK: downmix

    func testDownmix51ToStereoLoRoFollowsBS775() throws {
        let out = try render(input: writeInput(channels: 6), layout: "5.1", node: "downmix", params: #"{"layout": "stereo"}"#)
        let r = Self.r
        assertMatrix(out, [
            // L  R  C  LFE Ls Rs
            [1, 0, r, 0, r, 0],
            [0, 1, r, 0, 0, r],
        ], "5.1 → Lo/Ro")
        // L and R pass exactly at unity: the L sine alone is what the
        // output holds minus the other contributions; check its level exactly.
        XCTAssertEqual(gain(of: 0, in: out[0]), 1, accuracy: 1e-5)
    }

    func testDownmix51ToStereoLtRtEncodesSurroundInAntiphase() throws {
        let out = try render(input: writeInput(channels: 6), layout: "5.1", node: "downmix",
                             params: #"{"layout": "stereo", "mode": "ltrt"}"#)
        let r = Self.r
        // S = 0.7071 (Ls + Rs) at −3 dB: 0.5 of each surround, − in Lt, + in Rt.
        assertMatrix(out, [
            [1, 0, r, 0, -0.5, -0.5],
            [0, 1, r, 0, 0.5, 0.5],
        ], "5.1 → Lt/Rt")
    }

    func testDownmix51ToMonoFollowsBS775() throws {
        let out = try render(input: writeInput(channels: 6), layout: "5.1", node: "downmix", params: #"{"layout": "mono"}"#)
        let r = Self.r
        assertMatrix(out, [[r, r, 1, 0, 0.5, 0.5]], "5.1 → mono")
    }

    func testDownmixStereoToMono() throws {
        let out = try render(input: writeInput(channels: 2), layout: "stereo", node: "downmix", params: #"{"layout": "mono"}"#)
        assertMatrix(out, [[Self.r, Self.r]], "stereo → mono")
    }

    func testDownmix71To51FoldsBackIntoSurrounds() throws {
        let out = try render(input: writeInput(channels: 8), layout: "7.1", node: "downmix", params: #"{"layout": "5.1"}"#)
        let r = Self.r
        assertMatrix(out, [
            // L  R  C  LFE Ls Rs Lb Rb
            [1, 0, 0, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0, 0, 0, 0],
            [0, 0, 0, 1, 0, 0, 0, 0],
            [0, 0, 0, 0, 1, 0, r, 0],
            [0, 0, 0, 0, 0, 1, 0, r],
        ], "7.1 → 5.1")
    }

    func testDownmix71ToStereoIsTheTwoStepsInOne() throws {
        let path = try writeInput(channels: 8)
        let r = Self.r
        let loro = try render(input: path, layout: "7.1", node: "downmix", params: #"{"layout": "stereo"}"#)
        assertMatrix(loro, [
            [1, 0, r, 0, r, 0, r * r, 0],
            [0, 1, r, 0, 0, r, 0, r * r],
        ], "7.1 → Lo/Ro")
        let ltrt = try render(input: path, layout: "7.1", node: "downmix", params: #"{"layout": "stereo", "mode": "ltrt"}"#)
        assertMatrix(ltrt, [
            [1, 0, r, 0, -0.5, -0.5, -0.5 * r, -0.5 * r],
            [0, 1, r, 0, 0.5, 0.5, 0.5 * r, 0.5 * r],
        ], "7.1 → Lt/Rt")
    }

    func testLFEIsFoldedInAtTheGivenGain() throws {
        let out = try render(input: writeInput(channels: 6), layout: "5.1", node: "downmix",
                             params: #"{"layout": "stereo", "lfe": -10}"#)
        let g = pow(10, -10.0 / 20)
        let r = Self.r
        assertMatrix(out, [
            [1, 0, r, g, r, 0],
            [0, 1, r, g, 0, r],
        ], "5.1 → Lo/Ro with LFE at −10 dB")
        let mono = try render(input: writeInput(channels: 6), layout: "5.1", node: "downmix",
                              params: #"{"layout": "mono", "lfe": 0}"#)
        assertMatrix(mono, [[r, r, 1, 1, 0.5, 0.5]], "5.1 → mono with LFE at 0 dB")
    }

    func testGivenMatrixIsApplied() throws {
        let out = try render(input: writeInput(channels: 6), layout: "5.1", node: "downmix",
                             params: #"{"layout": "stereo", "matrix": [[0.5, 0, 0.25, 0.1, -1, 0], [0, 0.5, 0.25, 0.1, 0, -1]]}"#)
        assertMatrix(out, [
            [0.5, 0, 0.25, 0.1, -1, 0],
            [0, 0.5, 0.25, 0.1, 0, -1],
        ], "given matrix")
        // A discrete target takes its channel count from the rows.
        let three = try render(input: writeInput(channels: 2), layout: "stereo", node: "upmix",
                               params: #"{"layout": "discrete", "matrix": [[1, 0], [0.5, 0.5], [0, -1]]}"#)
        assertMatrix(three, [[1, 0], [0.5, 0.5], [0, -1]], "given 3 × 2 matrix")
    }

    /// Full-scale inputs in the worst phase for each output: without
    /// `normalize` the standard matrix clips, with it no sample passes 0 dBFS
    /// and the worst output just reaches it.
    func testNormalizeKeepsEveryOutputAtOrBelowFullScale() throws {
        func constant(_ values: [Float]) -> (Int) -> [Float] {
            { c in [Float](repeating: values[c], count: Self.frames) }
        }
        // Signs that make each Lt/Rt row add up: Lt wants Ls, Rs negative, Rt positive.
        let worstLt = try writeInput(channels: 6, name: "lt.wav", samples: constant([1, 1, 1, 1, -1, -1]))
        let worstRt = try writeInput(channels: 6, name: "rt.wav", samples: constant([1, 1, 1, 1, 1, 1]))
        for (path, channel) in [(worstLt, 0), (worstRt, 1)] {
            for lfe in ["", #", "lfe": 0"#] {
                let plain = try render(input: path, layout: "5.1", node: "downmix",
                                       params: #"{"layout": "stereo", "mode": "ltrt"\#(lfe)}"#)
                XCTAssertGreaterThan(SignalAnalysis.peak(plain[channel]), 2.5, "Lt/Rt clips without normalize")
                let normalized = try render(input: path, layout: "5.1", node: "downmix",
                                            params: #"{"layout": "stereo", "mode": "ltrt", "normalize": true\#(lfe)}"#)
                for (c, ch) in normalized.enumerated() {
                    XCTAssertLessThanOrEqual(SignalAnalysis.peak(ch), 1.0, "channel \(c) over 0 dBFS (lfe: \(lfe))")
                }
                XCTAssertEqual(SignalAnalysis.peak(normalized[channel]), 1.0, accuracy: 1e-6, "the worst output reaches full scale")
            }
        }
        // 7.1 → mono: every coefficient positive, all inputs at +1 is the worst case.
        let ones = try writeInput(channels: 8, name: "ones.wav", samples: constant(Array(repeating: 1, count: 8)))
        let mono = try render(input: ones, layout: "7.1", node: "downmix", params: #"{"layout": "mono", "normalize": true}"#)
        XCTAssertEqual(SignalAnalysis.peak(mono[0]), 1.0, accuracy: 1e-6)
        // A given matrix is scaled by its largest row sum (here 4: [2, -2]).
        let stereo = try writeInput(channels: 2, name: "st.wav", samples: constant([1, -1]))
        let given = try render(input: stereo, layout: "stereo", node: "downmix",
                               params: #"{"layout": "stereo", "matrix": [[2, -2], [1, 0]], "normalize": true}"#)
        XCTAssertEqual(given[0].first ?? 0, 1.0, accuracy: 1e-6)
        XCTAssertEqual(given[1].first ?? 0, 0.25, accuracy: 1e-6)
        // Stereo → mono (row sum 1.414) is scaled to 0.5 + 0.5; a matrix
        // already within full scale is left as it is.
        let sines = try writeInput(channels: 2)
        let scaled = try render(input: sines, layout: "stereo", node: "downmix", params: #"{"layout": "mono", "normalize": true}"#)
        assertMatrix(scaled, [[0.5, 0.5]], "normalized stereo → mono")
        let gentle = try render(input: sines, layout: "stereo", node: "downmix",
                                params: #"{"layout": "mono", "matrix": [[0.5, -0.25]], "normalize": true}"#)
        assertMatrix(gentle, [[0.5, -0.25]], "a matrix within full scale, normalized")
    }

    // MARK: upmix

    func testUpmixStereoTo51() throws {
        let path = try writeInput(channels: 2)
        let placed = try render(input: path, layout: "stereo", node: "upmix", params: #"{"layout": "5.1"}"#)
        assertMatrix(placed, [[1, 0], [0, 1], [0, 0], [0, 0], [0, 0], [0, 0]], "stereo → 5.1 placed")
        let input = try renderPassThrough(path)
        XCTAssertNil(firstMismatch(placed[0], input[0]), "L is copied exactly")
        XCTAssertNil(firstMismatch(placed[1], input[1]), "R is copied exactly")
        let r = Self.r
        let decoded = try render(input: path, layout: "stereo", node: "upmix", params: #"{"layout": "5.1", "mode": "ltrt"}"#)
        assertMatrix(decoded, [[1, 0], [0, 1], [r, r], [0, 0], [-r, r], [-r, r]], "stereo Lt/Rt → 5.1 passive decode")
    }

    /// An Lt/Rt encode followed by the passive decode brings a surround-only
    /// source back in the surrounds and cancels it in the centre.
    func testLtRtRoundTripRecoversTheSurround() throws {
        let path = try writeInput(channels: 6, samples: { c in
            c == 4 || c == 5 ? Synth.sine(frequency: 1700, amplitude: Self.amplitude, sampleRate: Self.rate, frames: Self.frames)
                             : [Float](repeating: 0, count: Self.frames)
        })
        let json = """
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "in", "type": "file", "params": {"path": "\(path)"}},
                   {"id": "tag", "type": "format-tag", "params": {"layout": "5.1"}},
                   {"id": "enc", "type": "downmix", "params": {"mode": "ltrt"}},
                   {"id": "dec", "type": "upmix", "params": {"mode": "ltrt"}},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "in", "to": "tag"}, {"from": "tag", "to": "enc"}, {"from": "enc", "to": "dec"}, {"from": "dec", "to": "cap"}]}
        """
        let out = try TestGraph.render(json, seconds: 1, directory: dir.path)
        // Ls = Rs = 0.25 (the same sine): Lt = −0.25, Rt = +0.25, so the
        // decoded S = 0.7071 (Rt − Lt) = 0.7071 × 0.5 in both surrounds.
        for c in [4, 5] {
            let s = SignalAnalysis.goertzelMagnitude(out[c], sampleRate: Self.rate, frequency: 1700)
            XCTAssertEqual(s, 0.7071 * 0.5, accuracy: 0.001, "surround \(c)")
        }
        XCTAssertLessThan(SignalAnalysis.peak(out[2]), 1e-6, "a surround-only source cancels in the centre")
    }

    func testUpmixMonoAnd51To71() throws {
        let mono = try render(input: writeInput(channels: 1), layout: "mono", node: "upmix", params: #"{"layout": "stereo"}"#)
        assertMatrix(mono, [[Self.r], [Self.r]], "mono → stereo")
        let centre = try render(input: writeInput(channels: 1), layout: "mono", node: "upmix", params: #"{"layout": "5.1"}"#)
        assertMatrix(centre, [[0], [0], [1], [0], [0], [0]], "mono → 5.1")
        let wide = try render(input: writeInput(channels: 6), layout: "5.1", node: "upmix", params: #"{"layout": "7.1"}"#)
        let placed = (0..<8).map { o in (0..<6).map { i in o == i ? 1.0 : 0.0 } }
        assertMatrix(wide, placed, "5.1 → 7.1")
        XCTAssertEqual(SignalAnalysis.peak(wide[6]), 0, "Lb silent")
        XCTAssertEqual(SignalAnalysis.peak(wide[7]), 0, "Rb silent")
    }

    // MARK: channel-map

    /// The input channels as read, for exact comparisons.
    func renderPassThrough(_ path: String) throws -> [[Float]] {
        try TestGraph.render(TestGraph.single("file", #"{"path": "\#(path)"}"#), seconds: 1, directory: dir.path)
    }

    func testChannelMapPicksReordersAndDuplicatesExactly() throws {
        let path = try writeInput(channels: 6)
        let input = try renderPassThrough(path)
        for (params, picks) in [(#"{"channels": ["L", "R"]}"#, [0, 1]),
                                (#"{"channels": ["C"]}"#, [2]),
                                (#"{"channels": [5, 4, "LFE"]}"#, [5, 4, 3]),
                                (#"{"channels": [0, 0]}"#, [0, 0]),
                                (#"{"channels": ["Rs", "Rs", 1, "L"]}"#, [5, 5, 1, 0])] {
            let out = try render(input: path, layout: "5.1", node: "channel-map", params: params)
            XCTAssertEqual(out.count, picks.count, params)
            for (o, k) in picks.enumerated() where o < out.count {
                XCTAssertNil(firstMismatch(out[o], input[k]), "\(params): output \(o) is input \(k)")
            }
        }
    }

    func testChannelMapSetsTheOutputLayout() throws {
        func layout(_ params: String, channels: Int = 6, tag: String? = nil) throws -> ChannelLayout? {
            let g = try TestGraph.validate(toneGraph(channels: channels, layout: tag, node: "channel-map", params: params),
                                           stores: ["main": CaptureStore(capacityFrames: 16)], directory: dir.path)
            return g.nodes.first { $0.id == "x" }?.outputFormat?.layout
        }
        XCTAssertEqual(try layout(#"{"channels": ["L", "R"]}"#), .stereo)
        XCTAssertEqual(try layout(#"{"channels": ["C"]}"#), .mono)
        XCTAssertEqual(try layout(#"{"channels": ["Ls", "Rs"]}"#), .stereo)
        XCTAssertEqual(try layout(#"{"channels": [0, 1, 2]}"#), .discrete)
        XCTAssertEqual(try layout(#"{"channels": [1, 0, 2, 3, 4, 5]}"#), .discrete, "a reordered 5.1 is no longer 5.1")
        XCTAssertEqual(try layout(#"{"channels": [1, 0, 2, 3, 4, 5], "layout": "5.1"}"#), .surround51)
        XCTAssertEqual(try layout(#"{"channels": ["L", "R", "C", "LFE", "Ls", "Rs"]}"#, channels: 8), .surround51)
        XCTAssertEqual(try layout(#"{"channels": [0, 0]}"#, channels: 1), .stereo)
        XCTAssertEqual(try layout(#"{"channels": ["L", "R"]}"#, channels: 2, tag: "binaural"), .binaural)
        XCTAssertEqual(try layout(#"{"channels": ["2", "1"]}"#, channels: 3), .stereo, "discrete channels by label")
        XCTAssertEqual(try layout(#"{"channels": ["M", "M"], "layout": "binaural"}"#, channels: 1), .binaural)
    }

    // MARK: bad input

    func testChannelMapErrorsNameTheElement() {
        assertError(toneGraph(node: "channel-map", params: #"{"channels": ["L", "Lb"]}"#),
                    at: "/nodes/1/params/channels/1", ["\"Lb\" is not a channel", "L R C LFE Ls Rs"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": ["L", "Rss"]}"#),
                    at: "/nodes/1/params/channels/1", ["did you mean \"Rs\""])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": [6]}"#),
                    at: "/nodes/1/params/channels/0", ["index 6 is out of range", "0…5"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": [0, true]}"#),
                    at: "/nodes/1/params/channels/1", ["channel index", "boolean"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": [1.5]}"#),
                    at: "/nodes/1/params/channels/0", ["not a channel index"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": [64]}"#),
                    at: "/nodes/1/params/channels/0", ["out of range", "0…63"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": []}"#),
                    at: "/nodes/1/params/channels", ["give 1 to 64"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": ["L", "R"], "layout": "5.1"}"#),
                    at: "/nodes/1/params/layout", ["\"5.1\" has 6 channels", "picks 2"])
        assertError(toneGraph(node: "channel-map", params: #"{"channels": "L"}"#),
                    at: "/nodes/1/params/channels", ["array of channel indexes or names"])
        assertError(toneGraph(node: "channel-map", params: #"{}"#),
                    at: "/nodes/1/params/channels", ["missing required parameter"])
    }

    func testMixErrorsNameTheParameterOrElement() {
        assertError(toneGraph(node: "downmix", params: #"{"matrix": [[1, 0, 0, 0, 0, 0]]}"#),
                    at: "/nodes/1/params/matrix", ["1 row", "stereo has 2 channels"])
        assertError(toneGraph(node: "downmix", params: #"{"matrix": [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0]]}"#),
                    at: "/nodes/1/params/matrix/1", ["row 1 has 5 coefficients", "6 channels"])
        assertError(toneGraph(node: "downmix", params: #"{"matrix": [[1, 0, "x", 0, 0, 0], [0, 1, 0, 0, 0, 0]]}"#),
                    at: "/nodes/1/params/matrix/0/2", ["must be a number", "string"])
        assertError(toneGraph(node: "downmix", params: #"{"matrix": [[1, 0, 0, 0, 0, 0], 3]}"#),
                    at: "/nodes/1/params/matrix/1", ["array of numbers"])
        assertError(toneGraph(node: "downmix", params: #"{"matrix": [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 99]]}"#),
                    at: "/nodes/1/params/matrix/1/5", ["out of range"])
        assertError(toneGraph(node: "downmix", params: #"{"matrix": [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]], "lfe": -10}"#),
                    at: "/nodes/1/params/lfe", ["LFE column"])
        assertError(toneGraph(node: "downmix", params: #"{"layout": "discrete"}"#),
                    at: "/nodes/1/params/layout", ["give \"matrix\""])
        assertError(toneGraph(channels: 2, node: "downmix", params: #"{"layout": "5.1"}"#),
                    at: "/nodes/1/params/layout", ["use upmix"])
        assertError(toneGraph(node: "upmix", params: #"{"layout": "stereo"}"#),
                    at: "/nodes/1/params/layout", ["use downmix"])
        assertError(toneGraph(node: "downmix", params: #"{"layout": "mono", "mode": "ltrt"}"#),
                    at: "/nodes/1/params/mode", ["\"ltrt\" encodes 5.1 or 7.1 into stereo"])
        assertError(toneGraph(channels: 1, node: "upmix", params: #"{"mode": "ltrt"}"#),
                    at: "/nodes/1/params/mode", ["decodes a stereo Lt/Rt input"])
        assertError(toneGraph(channels: 8, node: "downmix", params: #"{"layout": "5.1", "lfe": -10}"#),
                    at: "/nodes/1/params/lfe", ["keeps the LFE"])
        assertError(toneGraph(channels: 2, node: "downmix", params: #"{"layout": "mono", "lfe": -10}"#),
                    at: "/nodes/1/params/lfe", ["no LFE channel"])
        assertError(toneGraph(channels: 3, node: "downmix", params: #"{}"#),
                    at: "/links/0", ["no standard matrix", "give \"matrix\""])
        assertError(toneGraph(channels: 2, layout: "binaural", node: "upmix", params: #"{}"#),
                    at: "/links/1", ["binaural"])
        assertError(toneGraph(node: "downmix", params: #"{"layout": "quad"}"#),
                    at: "/nodes/1/params/layout", ["not allowed"])
    }

    // MARK: the node API and tools

    func testSchemaDescribesChannelListsAndMatrices() throws {
        let schema = try JSONParser.parse(Array(GraphSchema.make(registry: .builtIn).rendered().utf8))
        let map = schema["$defs"]?["node-channel-map"]?["properties"]?["params"]?["properties"]?["channels"]
        XCTAssertEqual(map?["type"]?.string, "array")
        XCTAssertEqual(map?["items"]?["anyOf"]?.array?.count, 2, "an index or a name")
        let matrix = schema["$defs"]?["node-downmix"]?["properties"]?["params"]?["properties"]?["matrix"]
        XCTAssertEqual(matrix?["items"]?["type"]?.string, "array")
        XCTAssertEqual(matrix?["items"]?["items"]?["type"]?.string, "number")
        let text = Describe.nodeType(NodeRegistry.builtIn["channel-map"]!.descriptor)
        XCTAssertTrue(text.contains("channels: array of channel indexes or names"), text)
        let mix = Describe.nodeType(NodeRegistry.builtIn["downmix"]!.descriptor)
        XCTAssertTrue(mix.contains("matrix: array of arrays of numbers"), mix)
    }

    // MARK: realtime

    func testRenderAllocatesNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = """
        {"format": "agraph/1",
         "nodes": [{"id": "t8", "type": "test-tone", "params": {"channels": 8}},
                   {"id": "t2", "type": "test-tone", "params": {"channels": 2, "frequency": 300}},
                   {"id": "d71", "type": "downmix", "params": {"layout": "5.1"}},
                   {"id": "d51", "type": "downmix", "params": {"mode": "ltrt", "lfe": -10, "normalize": true}},
                   {"id": "map", "type": "channel-map", "params": {"channels": ["R", "L", 0, 0]}},
                   {"id": "up", "type": "upmix", "params": {"layout": "7.1", "mode": "ltrt"}},
                   {"id": "m", "type": "downmix", "params": {"layout": "discrete", "matrix": [[1, 0.5, 0, 0.25], [0, 0, 1, 1]]}},
                   {"id": "n1", "type": "null"}, {"id": "n2", "type": "null"}, {"id": "cap", "type": "capture"}],
         "links": [{"from": "t8", "to": "d71"}, {"from": "d71", "to": "d51"}, {"from": "d51", "to": "map"},
                   {"from": "map", "to": "m"}, {"from": "m", "to": "cap"},
                   {"from": "t2", "to": "up"}, {"from": "up", "to": "n1"}, {"from": "d71", "to": "n2"}]}
        """
        let store = CaptureStore(capacityFrames: 1024)
        let g = try TestGraph.validate(json, stores: ["main": store], directory: dir.path)
        let engine = try GraphCompiler.compile(g, maxFrames: 256).engine
        engine.render(frames: 256)    // warm-up: the runtime instantiates metadata on first use
        let sizes = [64, 256, 100, 1]
        let allocations = MallocCounter.count {
            for i in 0..<10_000 { engine.render(frames: sizes[i % 4]) }
        }
        XCTAssertEqual(allocations, 0, "allocations across 10,000 blocks")
        // And it did compute: L of the final mix carries signal.
        XCTAssertGreaterThan(SignalAnalysis.peak(store.samples(0)), 0.01)
    }
}
