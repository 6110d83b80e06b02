import Foundation
import TestSupport
import XCTest

/// `agraph analyze` on what libsndfile does not read but the media path
/// decodes (issue #22, item 12): M4A (AAC) and Opus made here with ffmpeg,
/// measured against ffmpeg's `ebur128=peak=true` on the same files; a
/// damaged file is measured and its damage reported.
final class AnalyzeMediaTests: XCTestCase {
    static var ffmpeg: String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let p = "\(dir)/ffmpeg"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs ffmpeg; returns its exit status and stderr.
    @discardableResult
    static func run(_ ffmpeg: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ffmpeg)
        p.arguments = ["-hide_banner", "-nostdin", "-nostats"] + arguments
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// ffmpeg's summary: integrated loudness (LUFS) and true peak (dBTP),
    /// both printed to 0.1.
    static func ebur128(_ ffmpeg: String, _ file: String) throws -> (integrated: Double, truePeak: Double) {
        let out = try run(ffmpeg, ["-i", file, "-af", "ebur128=peak=true", "-f", "null", "-"]).stderr
        guard let summary = out.range(of: "Summary:", options: .backwards) else {
            throw XCTSkip("ffmpeg printed no ebur128 summary: \(out.suffix(400))")
        }
        let text = out[summary.upperBound...]
        func value(after label: String) -> Double? {
            guard let r = text.range(of: label) else { return nil }
            return Double(text[r.upperBound...].split(separator: " ").first ?? "")
        }
        return (value(after: "I:") ?? .nan, value(after: "Peak:") ?? .nan)
    }

    /// 8 s of stereo: pink noise and a 440 Hz tone, different per channel,
    /// -20 dBFS RMS or so; 48 kHz float WAV.
    static func sourceWAV(_ path: String) throws {
        let frames = 8 * 48_000
        let l = Synth.pinkNoise(frames: frames, seed: 5, rms: 0.08)
        let r = Synth.pinkNoise(frames: frames, seed: 6, rms: 0.05)
        let tone = Synth.sine(frequency: 440, amplitude: 0.1, sampleRate: 48_000, frames: frames)
        var samples = [Float](repeating: 0, count: 2 * frames)
        for i in 0..<frames {
            samples[2 * i] = l[i] + tone[i]
            samples[2 * i + 1] = r[i]
        }
        try writeSoundFile(path, format: .wavFloat32, channels: 2, sampleRate: 48_000, samples: samples)
    }

    func analyze(_ path: String) throws -> (run: CLITests.Run, object: [String: Any]?) {
        let run = try CLITests.agraph(arguments: ["analyze", path, "--json", "--quiet"])
        let object = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        return (run, object)
    }

    func testM4AAndOpusAgreeWithFFmpegEBUR128() throws {
        guard let ffmpeg = Self.ffmpeg else { throw XCTSkip("ffmpeg is not installed") }
        let dir = try TemporaryDirectory()
        let wav = dir.file("source.wav")
        try Self.sourceWAV(wav)
        for (name, arguments) in [("music.m4a", ["-c:a", "aac", "-b:a", "192k"]),
                                  ("music.opus", ["-c:a", "libopus", "-b:a", "160k"])] {
            let path = dir.file(name)
            let made = try Self.run(ffmpeg, ["-y", "-i", wav] + arguments + [path])
            guard made.status == 0 else { throw XCTSkip("ffmpeg cannot make \(name): \(made.stderr.suffix(300))") }
            let (run, object) = try analyze(path)
            XCTAssertEqual(run.status, 0, "\(name): \(run.stderr)")
            let ours = try XCTUnwrap(object, "\(name): \(run.stdout) \(run.stderr)")
            let theirs = try Self.ebur128(ffmpeg, path)
            // ffmpeg prints 0.1 steps: 0.1 LU plus its rounding.
            XCTAssertEqual(ours["integratedLUFS"] as? Double ?? .nan, theirs.integrated, accuracy: 0.1 + 0.05, "\(name) integrated vs ffmpeg")
            XCTAssertEqual(ours["truePeakDBTP"] as? Double ?? .nan, theirs.truePeak, accuracy: 0.1 + 0.05, "\(name) true peak vs ffmpeg")
            XCTAssertEqual(ours["durationSeconds"] as? Double ?? .nan, 8, accuracy: 0.05, "\(name): the whole stream")
            XCTAssertEqual((ours["channels"] as? [Any])?.count, 2, name)
        }
    }

    /// Bytes overwritten in the middle of an ADTS AAC stream: the damage
    /// is named (when the media path stops at damage, the file is refused,
    /// exit status 1, with the flag to use); with
    /// `--allow-damaged` it is measured to its end and the damage reported.
    func testDamagedFileIsReportedWithItsDamage() throws {
        guard let ffmpeg = Self.ffmpeg else { throw XCTSkip("ffmpeg is not installed") }
        let dir = try TemporaryDirectory()
        let wav = dir.file("source.wav"), path = dir.file("damaged.aac")
        try Self.sourceWAV(wav)
        let made = try Self.run(ffmpeg, ["-y", "-i", wav, "-c:a", "aac", "-b:a", "128k", "-f", "adts", path])
        guard made.status == 0 else { throw XCTSkip("ffmpeg cannot make AAC: \(made.stderr.suffix(300))") }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var seed: UInt64 = 99
        for i in (bytes.count / 2)..<(bytes.count / 2 + 3000) {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            bytes[i] = UInt8(truncatingIfNeeded: seed >> 33)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let refused = try analyze(path)
        // Refused (the media path's onError "fail") or concealed: the damage is named either way.
        XCTAssertTrue(refused.run.stderr.contains(path) && refused.run.stderr.contains("damaged frame"), refused.run.stderr)
        if refused.run.status != 0 {
            XCTAssertEqual(refused.run.status, 1)
            XCTAssertTrue(refused.run.stderr.contains("cannot analyse:") && refused.run.stderr.contains("agraph analyze --allow-damaged"),
                          refused.run.stderr)
        }
        let run = try CLITests.agraph(arguments: ["analyze", path, "--json", "--quiet", "--allow-damaged"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let ours = try XCTUnwrap(try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout) \(run.stderr)")
        XCTAssertEqual(ours["durationSeconds"] as? Double ?? 0, 8, accuracy: 0.5, "measured to its end")
        XCTAssertTrue(run.stderr.contains(path) && run.stderr.contains("damaged frame"), run.stderr)
    }

    /// Neither reader: both say why, with the file's name; exit status 1.
    func testUnreadableFileNamesBothReaders() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("notes.m4a")
        try Data("not audio at all\n".utf8).write(to: URL(fileURLWithPath: path))
        let (run, _) = try analyze(path)
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("\(path): cannot analyse:") && run.stderr.contains("libavformat"), run.stderr)
    }
}
