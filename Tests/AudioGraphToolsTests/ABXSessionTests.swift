import AudioGraph
import AudioGraphTools
import XCTest

/// The ABX trials in-process: the draws, the switching each command asks
/// of the player, the answers, the score and its probability, the JSON.
final class ABXSessionTests: XCTestCase {
    final class Recorder: ABXPlayer {
        var switches: [String] = []
        func select(_ input: Int) throws { switches.append("fade \(input)") }
        func selectThroughSilence(_ input: Int) throws { switches.append("silence \(input)") }
    }

    func testDrawsAreRepeatableAndBalanced() {
        XCTAssertEqual(ABXDraw.draws(seed: 42, count: 64), ABXDraw.draws(seed: 42, count: 64))
        XCTAssertNotEqual(ABXDraw.draws(seed: 42, count: 64), ABXDraw.draws(seed: 43, count: 64))
        let many = ABXDraw.draws(seed: 7, count: 10_000)
        let b = many.filter { $0 }.count
        XCTAssertEqual(Double(b) / 10_000, 0.5, accuracy: 0.02)
    }

    func testBinomialTail() {
        XCTAssertEqual(ABXResults.binomialTail(atLeast: 0, of: 10), 1)
        XCTAssertEqual(ABXResults.binomialTail(atLeast: 11, of: 10), 0)
        XCTAssertEqual(ABXResults.binomialTail(atLeast: 10, of: 10), 1.0 / 1024, accuracy: 1e-15)
        XCTAssertEqual(ABXResults.binomialTail(atLeast: 9, of: 10), 11.0 / 1024, accuracy: 1e-15)
        XCTAssertEqual(ABXResults.binomialTail(atLeast: 8, of: 16), 39203.0 / 65536, accuracy: 1e-12)
    }

    func testTrialSequenceSwitchingAnswersAndScore() throws {
        let player = Recorder()
        var now = 100.0
        // X is B in trial 1, A in trial 2 (inputs A = 2, B = 5).
        let session = ABXSession(player: player, inputA: 2, inputB: 5, xIsB: [true, false], clock: { now })
        XCTAssertEqual(try session.begin(), [.reply("trial 1 of 2: listen with a, b, x; answer with x=a or x=b (help: all commands)")])
        XCTAssertEqual(player.switches, ["fade 2"])
        XCTAssertEqual(session.handle(.text("a")), [.reply("playing A")])
        XCTAssertEqual(player.switches, ["fade 2"], "A plays already: no switch")
        _ = session.handle(.text("B"))
        _ = session.handle(.text("x"))
        now += 3.5
        let answered = session.handle(.text("X = b"))
        XCTAssertEqual(answered.first, .reply("trial 1: answered X is B"))
        // A→B crossfades; B→X and X→A (the next trial) go through silence, X being B (5).
        XCTAssertEqual(player.switches, ["fade 2", "fade 5", "silence 5", "silence 2"])
        XCTAssertEqual(session.handle(.text("what")), [.error("error: unknown command 'what'; commands: a, b, x, x=a, x=b, q, help")])
        XCTAssertFalse(session.finished)
        now += 1
        _ = session.handle(.text("answer b"))     // wrong: X is A in trial 2
        XCTAssertTrue(session.finished)
        XCTAssertEqual(session.handle(.text("x")), [], "nothing after the end")

        let r = session.results
        XCTAssertEqual(r.trials.map(\.correct), [true, false])
        XCTAssertEqual(r.trials[0].listened, ["a", "b", "x"])
        XCTAssertEqual(r.trials[0].seconds, 3.5, accuracy: 1e-12)
        XCTAssertEqual(r.trials[1].seconds, 1, accuracy: 1e-12)
        XCTAssertEqual(r.correct, 1)
        XCTAssertEqual(r.pValue, 0.75, accuracy: 1e-15)
        XCTAssertFalse(r.quitEarly)
        let json = try JSONParser.parse(Array(r.json(graph: "g.json", node: "ab", inputA: 2, inputB: 5, seed: 9, planned: 2).rendered().utf8))
        XCTAssertEqual(json["correct"]?.number, 1)
        XCTAssertEqual(json["completed"]?.bool, true)
        XCTAssertEqual(json["trials"]?.array?.first?["xInput"]?.number, 5)
        XCTAssertEqual(json["trials"]?.array?.last?["xInput"]?.number, 2)
    }

    func testEndOfInputQuitsAndTheTrialUnderWayIsNotCounted() throws {
        let session = ABXSession(player: Recorder(), inputA: 0, inputB: 1, xIsB: [false, true, true])
        _ = try session.begin()
        let out = session.endOfInput([.text("x=a")])
        XCTAssertEqual(out.first, .reply("trial 1: answered X is A"))
        XCTAssertTrue(session.finished)
        XCTAssertEqual(session.results.trials.count, 1)
        XCTAssertTrue(session.results.quitEarly)
        XCTAssertTrue(session.results.text.contains("score: 1 of 1 right (quit early)"))
    }
}
