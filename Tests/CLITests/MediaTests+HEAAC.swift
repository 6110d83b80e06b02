import Foundation
import TestSupport
import XCTest

/// HE-AAC (SBR) and HE-AACv2 (PS) through `media` → `ffmpeg`: Debian's
/// ffmpeg cannot encode them, so the tests make them: the ffmpeg CLI
/// encodes an AAC LC core at 24 kHz (ADTS), `HEAACStreamWriter` adds real
/// SBR data (a fixed envelope level per channel, 6–18 kHz) and, for
/// HE-AACv2, a parametric stereo extension (a fixed pan), and
/// `ffmpeg -c copy` puts the same frames in an M4A. Signalling is implicit
/// in both containers (the ADTS header and the M4A's AudioSpecificConfig
/// say AAC LC at 24 kHz); libavcodec finds SBR in the first frame and
/// decodes at 48 kHz.
extension MediaTests {
    /// The SBR envelope values of the stereo stream: left 18 dB above right
    /// (1.5 dB steps).
    static let heEnvelope = [40, 28]
    /// The IID index of the HE-AACv2 stream: 7 dB, left louder.
    static let hePan = 3

    struct HEFiles {
        var adts: String
        var m4a: String
        var stream: HEAACStreamWriter.Stream
        var original: [Float]
        var files: [(name: String, path: String)] { [("ADTS", adts), ("M4A", m4a)] }
    }

    /// `channels` channels of `frequencies` sines, encoded to an LC core at
    /// 24 kHz, rewritten by `writer`, as `name`.aac and `name`.m4a.
    func heaac(channels: Int, seconds: Double = 2, writer: HEAACStreamWriter, name: String) throws -> HEFiles {
        let (wav, original) = try source(channels: channels, seconds: seconds)
        let core = try encode(wav, channels: channels, to: "core-\(name).aac",
                              ["-ar", "\(HEAACStreamWriter.coreRate)", "-c:a", "aac", "-b:a", channels == 1 ? "64k" : "128k",
                               "-flags", "+bitexact", "-f", "adts"])
        let stream = try writer.rewrite(adts: [UInt8](Data(contentsOf: URL(fileURLWithPath: core))))
        let adts = dir.file("\(name).aac")
        try Data(stream.bytes).write(to: URL(fileURLWithPath: adts))
        let m4a = dir.file("\(name).m4a")
        let r = try runTool(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", adts, "-c", "copy", m4a])
        guard r.status == 0 else { throw XCTSkip("ffmpeg could not put \(name) in an M4A: \(r.stderr)") }
        // libavcodec's SBR and PS readers log what they cannot read (a bad
        // header, an over-read, an illegal IID) as errors: there are none.
        for media in [adts, m4a] {
            let check = try runTool(ffmpeg, ["-nostdin", "-v", "error", "-i", media, "-f", "null", "-"])
            XCTAssertEqual(check.status, 0, "\(media): \(check.stderr)")
            XCTAssertEqual(check.stderr, "", "\(media): libavcodec's complaints")
        }
        return HEFiles(adts: adts, m4a: m4a, stream: stream, original: original)
    }

    /// The mean square of channel `c` between `low` and `high` Hz over the
    /// middle second (or `frames`, a range of frames), in dB (full scale ±1
    /// squared).
    func bandPower(_ samples: [Float], channels: Int, channel c: Int, from low: Double, to high: Double,
                   frames: Range<Int>? = nil) -> Double {
        let x = deinterleave(samples, channels: channels, channel: c)
        let from = frames?.lowerBound ?? max(0, x.count / 2 - Int(Self.rate / 2))
        let window = Array(x[from..<min(x.count, frames?.upperBound ?? from + Int(Self.rate))])
        let size = 1024
        let power = SignalAnalysis.powerSpectrum(window, fftSize: size)
        var sum = 0.0
        for k in power.indices {
            let f = SignalAnalysis.binFrequency(k, fftSize: size, sampleRate: Self.rate)
            if f >= low && f < high { sum += power[k] }
        }
        return 10 * log10(max(sum, 1e-30))
    }

    /// The measured SBR band (6.5–17.5 kHz, clear of the edges) and what
    /// the envelope gives there (a flat noise band over 6–18 kHz).
    static let sbrMeasured = (low: 6_500.0, high: 17_500.0)
    static func sbrExpected(envelope: Int, gain: Double = 1) -> Double {
        let share = (sbrMeasured.high - sbrMeasured.low) / (HEAACStreamWriter.stopHz - HEAACStreamWriter.crossoverHz)
        return 10 * log10(HEAACStreamWriter.sbrBandMeanSquare(envelope: envelope) * share * gain * gain)
    }

    /// Rendered as the decoder renders it and as ffmpeg decodes it: the same
    /// samples, every frame's 2048 (an ADTS stream and an M4A made from it
    /// say nothing of the encoder's delay and padding: the decoded length
    /// is the original's, the core's 1024-sample priming doubled, and the
    /// last frame's padding).
    func checkSameAsFFmpeg(_ out: (channels: Int, samples: [Float], run: CLITests.Run), media: String,
                           files: HEFiles, channels: Int, label: String) throws {
        let theirs = try ffmpegDecode(media)
        XCTAssertEqual(theirs.count, out.samples.count, "\(label): ffmpeg's decode has the same length")
        let common = min(theirs.count, out.samples.count)
        var largest: Float = 0
        for i in 0..<common { largest = max(largest, abs(theirs[i] - out.samples[i])) }
        XCTAssertEqual(largest, 0, "\(label): differs from ffmpeg's decode of the same file")
        let frames = out.samples.count / max(out.channels, 1)
        XCTAssertEqual(frames, files.stream.outputSamples, "\(label): \(files.stream.frames) frames of 2048")
        let padding = frames - files.original.count / channels - HEAACStreamWriter.frameSamples
        XCTAssertTrue((0..<HEAACStreamWriter.frameSamples).contains(padding),
                      "\(label): \(frames) frames is the original's \(files.original.count / channels), 2048 of priming and \(padding) of padding")
    }

    /// HE-AAC, stereo: both channels at 48 kHz, the same samples as ffmpeg's
    /// decode; below the crossover each channel's sine at its level and no
    /// other; above it the SBR band at the level each channel's envelope
    /// gives (left 18 dB above right), where the core has nothing: SBR is
    /// decoded, not the core upsampled.
    func testHEAACDecodesTheCoreAndEachChannelsSBRBand() throws {
        let files = try heaac(channels: 2, writer: HEAACStreamWriter(envelope: Self.heEnvelope), name: "he")
        let expected = SignalAnalysis.dBFS(Double(Self.amplitude))
        for (container, media) in files.files {
            let label = "HE-AAC in \(container)"
            let out = try decode(media, tag: "he-" + container)
            XCTAssertEqual(out.channels, 2, label)
            guard out.channels == 2 else { continue }
            XCTAssertFalse(out.run.stderr.contains("damaged"), "\(label): \(out.run.stderr)")
            try checkSameAsFFmpeg(out, media: media, files: files, channels: 2, label: label)
            for c in 0..<2 {
                let own = level(out.samples, channels: 2, channel: c, frequency: Self.frequencies[c])
                XCTAssertEqual(own, expected, accuracy: 0.5, "\(label): channel \(c)'s sine")
                let other = level(out.samples, channels: 2, channel: c, frequency: Self.frequencies[1 - c])
                XCTAssertLessThan(other, expected - 30, "\(label): channel \(1 - c)'s sine in channel \(c)")
                let band = bandPower(out.samples, channels: 2, channel: c, from: Self.sbrMeasured.low, to: Self.sbrMeasured.high)
                let sbr = Self.sbrExpected(envelope: Self.heEnvelope[c])
                XCTAssertEqual(band, sbr, accuracy: 1, "\(label): channel \(c)'s SBR band at its envelope's level")
                // Just below the crossover the core has nothing (the sines
                // are below 1.5 kHz): the band above comes from SBR.
                let core = bandPower(out.samples, channels: 2, channel: c, from: 2_000, to: 5_500)
                XCTAssertLessThan(core, sbr - 30, "\(label): channel \(c) between the sines and the crossover")
            }
            let left = bandPower(out.samples, channels: 2, channel: 0, from: Self.sbrMeasured.low, to: Self.sbrMeasured.high)
            let right = bandPower(out.samples, channels: 2, channel: 1, from: Self.sbrMeasured.low, to: Self.sbrMeasured.high)
            // 1.5 dB (an energy ratio of 2^½) per step.
            XCTAssertEqual(left - right, 10 * log10(2) * Double(Self.heEnvelope[0] - Self.heEnvelope[1]) / 2,
                           accuracy: 0.5, "\(label): the envelopes' difference")
        }
    }

    /// HE-AACv2: a mono core decodes to two channels at 48 kHz, the same
    /// samples as ffmpeg's decode, panned as the parametric stereo data
    /// says (IID 7 dB): the sine and the SBR band each at the mono level
    /// times that channel's gain.
    func testHEAACv2DecodesAMonoCoreToTheCodedPan() throws {
        let files = try heaac(channels: 1, writer: HEAACStreamWriter(envelope: [Self.heEnvelope[0]], parametricStereo: Self.hePan),
                              name: "hev2")
        let gains = HEAACStreamWriter.panGains(iid: Self.hePan)
        let mono = SignalAnalysis.dBFS(Double(Self.amplitude))
        for (container, media) in files.files {
            let label = "HE-AACv2 in \(container)"
            let out = try decode(media, tag: "hev2-" + container)
            XCTAssertEqual(out.channels, 2, "\(label): parametric stereo makes two channels of the mono core")
            guard out.channels == 2 else { continue }
            XCTAssertFalse(out.run.stderr.contains("damaged"), "\(label): \(out.run.stderr)")
            try checkSameAsFFmpeg(out, media: media, files: files, channels: 1, label: label)
            let left = level(out.samples, channels: 2, channel: 0, frequency: Self.frequencies[0])
            let right = level(out.samples, channels: 2, channel: 1, frequency: Self.frequencies[0])
            XCTAssertEqual(left, mono + SignalAnalysis.dBFS(gains.left), accuracy: 0.5, "\(label): the left sine")
            XCTAssertEqual(right, mono + SignalAnalysis.dBFS(gains.right), accuracy: 0.5, "\(label): the right sine")
            XCTAssertEqual(left - right, HEAACStreamWriter.iidDecibels[Self.hePan], accuracy: 0.3, "\(label): the coded level difference")
            for (c, gain) in [(0, gains.left), (1, gains.right)] {
                let band = bandPower(out.samples, channels: 2, channel: c, from: Self.sbrMeasured.low, to: Self.sbrMeasured.high)
                XCTAssertEqual(band, Self.sbrExpected(envelope: Self.heEnvelope[0], gain: gain), accuracy: 1,
                               "\(label): channel \(c)'s SBR band, panned")
            }
        }
    }

    /// `start` on an HE-AAC stream whose SBR header comes once a second (23
    /// frames, FDK AAC's default at 48 kHz), with the target well past one
    /// header and far before the next: the band above the crossover is
    /// there from the target on, as in the full decode (a decoder opened
    /// afresh decodes no SBR before it has read a header, so the pre-roll
    /// reaches back to one). Each quarter second after the target is
    /// judged on its own.
    func testStartOnHEAACWithASparseSBRHeaderHasTheBandFromTheTarget() throws {
        let writer = HEAACStreamWriter(envelope: Self.heEnvelope, headerPeriod: 23)
        let files = try heaac(channels: 2, seconds: 3, writer: writer, name: "sparse-he")
        // Headers in frames 0, 23, 46, 69; the target 1.25 s (output
        // 60 000 + 2 048 of priming) is in frame 30.
        let (seconds, frame) = (1.25, 60_000)
        for (container, media) in files.files {
            let label = "HE-AAC in \(container), SBR header every 23 frames"
            let full = try decode(media, tag: "sparse-full-" + container)
            let part = try decode(media, params: "\"start\": \(seconds)", tag: "sparse-start-" + container)
            XCTAssertEqual(part.samples.count, full.samples.count - frame * 2, "\(label): length from \(seconds) s")
            guard part.channels == 2, full.channels == 2 else { continue }
            for c in 0..<2 {
                let sbr = Self.sbrExpected(envelope: Self.heEnvelope[c])
                for quarter in 0..<4 {
                    let window = (quarter * 12_000)..<((quarter + 1) * 12_000)
                    let band = bandPower(part.samples, channels: 2, channel: c, from: Self.sbrMeasured.low, to: Self.sbrMeasured.high,
                                         frames: window)
                    let reference = bandPower(full.samples, channels: 2, channel: c, from: Self.sbrMeasured.low,
                                              to: Self.sbrMeasured.high, frames: (window.lowerBound + frame)..<(window.upperBound + frame))
                    XCTAssertEqual(reference, sbr, accuracy: 1, "\(label): channel \(c)'s SBR band in the full decode")
                    XCTAssertEqual(band, sbr, accuracy: 1,
                                   "\(label): channel \(c)'s SBR band \(quarter * 250)–\((quarter + 1) * 250) ms after the target")
                }
            }
        }
    }

    /// `agraph probe` names the profiles and gives the decoded rate and
    /// channels (libavformat decodes the first frame, where the SBR and PS
    /// data are found).
    func testProbeNamesTheHEAACProfiles() throws {
        let he = try heaac(channels: 2, writer: HEAACStreamWriter(envelope: Self.heEnvelope), name: "probe-he")
        let v2 = try heaac(channels: 1, writer: HEAACStreamWriter(envelope: [Self.heEnvelope[0]], parametricStereo: Self.hePan),
                           name: "probe-hev2")
        for (files, profile) in [(he, "HE-AAC"), (v2, "HE-AACv2")] {
            for (container, media) in files.files {
                let run = try agraph(["probe", media, "--json"])
                XCTAssertEqual(run.status, 0, run.stderr)
                let facts = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
                let stream = try XCTUnwrap((facts["streams"] as? [[String: Any]])?.first, run.stdout)
                XCTAssertEqual(stream["codec"] as? String, "aac", "\(profile) in \(container)")
                XCTAssertEqual(stream["profile"] as? String, profile, "\(profile) in \(container)")
                XCTAssertEqual(stream["sampleRate"] as? Int, 48_000, "\(profile) in \(container)")
                XCTAssertEqual(stream["channels"] as? Int, 2, "\(profile) in \(container)")
                let text = try agraph(["probe", media])
                XCTAssertTrue(text.stdout.contains("aac (\(profile)), 48000 Hz, 2 ch"), text.stdout)
            }
        }
    }
}
