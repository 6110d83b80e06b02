import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `agraph abx` on a private `jackd -d dummy`: scripted answers give the
/// score and the binomial probability computed here independently, a seed
/// repeats the draws, `--json` holds the trials, and after each `x` the
/// recording hears X's input (two tones of different frequencies as A and B),
/// reached through silence whether X is the input playing or not.
final class ABXLiveTests: LiveTestCase {
    /// A 440 Hz tone (in0, A) and a 660 Hz tone (in1, B) into an `ab` node,
    /// out through a `jack-out` that connects to the recorder (when there is one).
    static let graph = """
        {"format": "agraph/1", "name": "abx", "sampleRate": 48000, "nodes": [
          {"id": "a", "type": "test-tone", "params": {"frequency": 440, "level": -12}},
          {"id": "b", "type": "test-tone", "params": {"frequency": 660, "level": -12}},
          {"id": "cmp", "type": "ab", "params": {"crossfadeMs": 30}},
          {"id": "out", "type": "jack-out", "params": {"connect": ["agraph-rec:in_*"]}}],
         "links": [{"from": "a", "to": "cmp:in0"}, {"from": "b", "to": "cmp:in1"}, {"from": "cmp", "to": "out"}]}
        """

    /// P(K ≥ k), K binomial(n, 1/2), from exact integer binomials.
    static func tail(_ k: Int, of n: Int) -> Double {
        func choose(_ n: Int, _ k: Int) -> Double {
            var c: UInt64 = 1
            for i in 0..<k { c = c * UInt64(n - i) / UInt64(i + 1) }
            return Double(c)
        }
        return (k...n).map { choose(n, $0) }.reduce(0, +) / pow(2, Double(n))
    }

    struct Results {
        var json: [String: Any]
        var trials: [[String: Any]]
        var stdout: String
        var xs: [String] { trials.compactMap { $0["x"] as? String } }
    }

    /// Starts `agraph abx` on `server` with `arguments`, waits until it
    /// runs, lets `body` talk to it, and reads its `--json` file once it
    /// exited cleanly.
    func abx(server: TestJACKServer, _ arguments: [String], _ body: (CLIProcess) throws -> Void) throws -> Results {
        let graph = try writeGraph(Self.graph, "abx.json")
        let json = dir.file("results-\(UUID().uuidString).json")
        let cli = try CLIProcess(["abx", graph, "--node", "cmp", "--json", json, "--server", "external",
                                  "--server-name", server.name] + arguments, directory: dir.path)
        defer { cli.kill() }
        XCTAssertNotNil(cli.waitForStderr("agraph: running", timeout: 15), cli.stderr)
        try body(cli)
        assertExitsCleanly(cli)
        let data = try Data(contentsOf: URL(fileURLWithPath: json))
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return Results(json: object, trials: object["trials"] as? [[String: Any]] ?? [], stdout: cli.stdout)
    }

    func testScriptedAnswersGiveTheScoreAndTheBinomialProbability() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let seed = 20_261_123

        // Every answer "A": right exactly where X was A.
        let first = try abx(server: server, ["--trials", "16", "--seed", String(seed)]) { cli in
            cli.write(Array(String(repeating: "x=a\n", count: 16).utf8))
        }
        let xs = first.xs
        XCTAssertEqual(xs.count, 16)
        XCTAssertTrue(Set(xs).isSubset(of: ["A", "B"]))
        let aCount = xs.filter { $0 == "A" }.count
        XCTAssertTrue((1...15).contains(aCount), "this seed draws both (\(xs))")
        XCTAssertEqual(first.json["correct"] as? Int, aCount)
        XCTAssertEqual(first.json["pValue"] as? Double ?? .nan, Self.tail(aCount, of: 16), accuracy: 1e-12)

        // The same seed draws the same X; every answer right: p = 0.5^16.
        let right = xs.map { "x=\($0.lowercased())\n" }.joined()
        let all = try abx(server: server, ["--trials", "16", "--seed", String(seed)]) { cli in
            cli.write(Array(right.utf8))
        }
        XCTAssertEqual(all.xs, xs, "the seed repeats the draws")
        XCTAssertEqual(all.json["correct"] as? Int, 16)
        XCTAssertEqual(all.json["pValue"] as? Double ?? .nan, pow(0.5, 16), accuracy: 1e-15)
        XCTAssertTrue(all.stdout.contains("score: 16 of 16 right"), all.stdout)
        XCTAssertTrue(all.stdout.contains("p = 1.52588e-05"), all.stdout)

        // 11 right, 5 wrong (trials 2, 5, 9, 12, 16), in the other answer
        // form: p = P(K ≥ 11 | 16) = 6885/65536.
        let wrong: Set<Int> = [2, 5, 9, 12, 16]
        let mixed = xs.enumerated().map { i, x in
            let said = wrong.contains(i + 1) ? (x == "A" ? "b" : "a") : x.lowercased()
            return "answer \(said)\n"
        }.joined()
        let m = try abx(server: server, ["--trials", "16", "--seed", String(seed)]) { cli in
            cli.write(Array(mixed.utf8))
        }
        XCTAssertEqual(m.json["correct"] as? Int, 11)
        XCTAssertEqual(Self.tail(11, of: 16), 6885.0 / 65536, accuracy: 1e-15)
        XCTAssertEqual(m.json["pValue"] as? Double ?? .nan, 6885.0 / 65536, accuracy: 1e-12)
        for (i, t) in m.trials.enumerated() {
            XCTAssertEqual(t["trial"] as? Int, i + 1)
            XCTAssertEqual(t["correct"] as? Bool, !wrong.contains(i + 1), "trial \(i + 1)")
            XCTAssertEqual(t["xInput"] as? Int, xs[i] == "A" ? 0 : 1)
            let answer = t["answer"] as? String
            XCTAssertEqual(answer == xs[i], !wrong.contains(i + 1))
            XCTAssertGreaterThanOrEqual(t["seconds"] as? Double ?? -1, 0)
        }
        XCTAssertEqual(m.json["graph"] as? String, dir.file("abx.json"))
        XCTAssertEqual(m.json["node"] as? String, "cmp")
        XCTAssertEqual(m.json["seed"] as? Int, seed)
        XCTAssertEqual(m.json["answered"] as? Int, 16)
        XCTAssertEqual(m.json["completed"] as? Bool, true)
        XCTAssertTrue(m.stdout.contains("score: 11 of 16 right"), m.stdout)

        // Quitting after 5 answers: 5 trials count, the score is of those.
        let quit = try abx(server: server, ["--trials", "16", "--seed", String(seed)]) { cli in
            cli.write(Array((right.split(separator: "\n").prefix(5).map { $0 + "\n" }.joined() + "q\n").utf8))
        }
        XCTAssertEqual(quit.json["answered"] as? Int, 5)
        XCTAssertEqual(quit.json["correct"] as? Int, 5)
        XCTAssertEqual(quit.json["completed"] as? Bool, false)
        XCTAssertEqual(quit.json["pValue"] as? Double ?? .nan, pow(0.5, 5), accuracy: 1e-15)
    }

    /// After each `x` (and `a`, `b`), the output carries the tone of the
    /// input the trial's X is, as `--json` tells afterwards.
    func testXIsWhatPlays() throws {
        let server = try TestJACKServer()
        defer { server.stop() }
        let rec = try JACKRecorder(server: server.name, channels: 2, seconds: 120)
        defer { rec.close() }
        var heard: [String] = []

        /// The tone of the last 0.1 s: "A" (440 Hz) or "B" (660 Hz).
        func tone() -> String {
            let n = rec.framesRecorded
            let last = rec.samples(0, max(n - 4800, 0)..<n)
            let at440 = SignalAnalysis.goertzelMagnitude(last, sampleRate: Self.rate, frequency: 440)
            let at660 = SignalAnalysis.goertzelMagnitude(last, sampleRate: Self.rate, frequency: 660)
            XCTAssertGreaterThan(max(at440, at660), 0.1, "a tone plays (440 Hz: \(at440), 660 Hz: \(at660))")
            XCTAssertLessThan(min(at440, at660), 0.01, "one tone only (440 Hz: \(at440), 660 Hz: \(at660))")
            return at440 > at660 ? "A" : "B"
        }

        /// The longest run of silent samples (|y| < 1e-4) recorded since `from`.
        func longestSilence(since from: Int) -> Int {
            var longest = 0, run = 0
            for y in rec.samples(0, from..<rec.framesRecorded) {
                run = abs(y) < 1e-4 ? run + 1 : 0
                longest = max(longest, run)
            }
            return longest
        }

        let trials = 6
        var gaps: [Int] = []
        var abGap = 0
        let r = try abx(server: server, ["--trials", String(trials), "--seed", "5"]) { cli in
            func play(_ letter: String, _ count: Int) {
                cli.send(letter)
                let playing = "playing \(letter.uppercased())\n"
                XCTAssertTrue(waitUntil(timeout: 10) { cli.stdout.components(separatedBy: playing).count - 1 >= count },
                              cli.stdout)
                // The crossfade, or the fade out and in, then a period or two to the recorder.
                usleep(UInt32(LiveTiming.seconds(0.4) * 1e6))
            }
            XCTAssertTrue(waitForSignal(rec, seconds: 0.2))
            play("b", 1)
            XCTAssertEqual(tone(), "B", "b plays in1")
            var mark = rec.framesRecorded
            play("a", 1)
            XCTAssertEqual(tone(), "A", "a plays in0")
            abGap = longestSilence(since: mark)
            for t in 1...trials {
                mark = rec.framesRecorded
                play("x", t)
                heard.append(tone())
                gaps.append(longestSilence(since: mark))
                cli.send("x=a")
                if t < trials {
                    // The next trial starts on A (from X, through silence):
                    // let that pass before the next mark.
                    XCTAssertTrue(waitUntil(timeout: 10) { cli.stdout.contains("trial \(t + 1) of \(trials)") }, cli.stdout)
                    usleep(UInt32(LiveTiming.seconds(0.3) * 1e6))
                }
            }
        }
        XCTAssertEqual(r.xs.count, trials)
        XCTAssertEqual(heard, r.xs, "what played after each x is the X of its trial")
        XCTAssertTrue(Set(r.xs).count == 2, "the seed draws both A and B: \(r.xs)")
        XCTAssertEqual(r.trials.first?["listened"] as? [String], ["b", "a", "x"])
        // From A to X, X = A or not, the output goes through silence (the
        // hold at select -1: at least two periods); from B to A it crossfades.
        for (t, gap) in gaps.enumerated() {
            XCTAssertGreaterThanOrEqual(gap, 2 * LiveTiming.period, "trial \(t + 1) (X = \(r.xs[t])): silence before X")
        }
        XCTAssertLessThan(abGap, 48, "b to a: a crossfade, no silence")
    }
}
