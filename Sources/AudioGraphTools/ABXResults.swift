import AudioGraph
import Foundation

/// One answered trial.
public struct ABXTrial {
    public var number: Int
    /// Whether X was B (else A).
    public var xIsB: Bool
    public var answeredB: Bool
    public var seconds: Double
    /// What was listened to, in order ("a", "b", "x").
    public var listened: [String]
    public var correct: Bool { xIsB == answeredB }

    public init(number: Int, xIsB: Bool, answeredB: Bool, seconds: Double, listened: [String]) {
        self.number = number
        self.xIsB = xIsB
        self.answeredB = answeredB
        self.seconds = seconds
        self.listened = listened
    }
}

/// The trials answered, the score and its probability by guessing. [any-thread]
public struct ABXResults {
    public var trials: [ABXTrial] = []
    public var quitEarly = false

    public init(trials: [ABXTrial] = [], quitEarly: Bool = false) {
        self.trials = trials
        self.quitEarly = quitEarly
    }

    public var correct: Int { trials.filter(\.correct).count }

    /// P(at least `correct` right of `trials.count` by guessing).
    public var pValue: Double { Self.binomialTail(atLeast: correct, of: trials.count) }

    /// P(K ≥ k) for K binomial(n, 1/2): Σ_{i=k…n} C(n, i) / 2ⁿ, summed
    /// term by term from 2⁻ⁿ (n ≤ 1000 stays within Double's range). [any-thread]
    public static func binomialTail(atLeast k: Int, of n: Int) -> Double {
        guard k > 0 else { return 1 }
        guard k <= n else { return 0 }
        var term = pow(0.5, Double(n))     // C(n, 0) / 2ⁿ
        var sum = 0.0
        for i in 0...n {
            if i >= k { sum += term }
            term = term * Double(n - i) / Double(i + 1)
        }
        return min(sum, 1)
    }

    public static func letter(_ isB: Bool) -> String { isB ? "B" : "A" }

    /// Each trial, then the score and the probability, for stdout.
    public var text: String {
        var out = ""
        for t in trials {
            out += "trial \(t.number): X was \(Self.letter(t.xIsB)), answered \(Self.letter(t.answeredB)): "
                + (t.correct ? "right" : "wrong") + " (\(formatFixed(t.seconds, 1)) s)\n"
        }
        let n = trials.count
        if n == 0 { return out + "score: no trial answered\n" }
        out += "score: \(correct) of \(n) right\(quitEarly ? " (quit early)" : "")\n"
        out += "p = \(String(format: "%.6g", pValue)): the probability of \(correct) or more right of \(n) by guessing (one-sided binomial, p = 0.5)\n"
        return out
    }

    public func json(graph: String, node: String, inputA: Int, inputB: Int, seed: UInt64, planned: Int) -> JSONOut {
        .object([
            ("graph", .string(graph)),
            ("node", .string(node)),
            ("a", .number(Double(inputA))),
            ("b", .number(Double(inputB))),
            ("seed", .number(Double(seed))),
            ("trialsPlanned", .number(Double(planned))),
            ("completed", .bool(!quitEarly && trials.count == planned)),
            ("trials", .array(trials.map { t in
                .object([
                    ("trial", .number(Double(t.number))),
                    ("x", .string(Self.letter(t.xIsB))),
                    ("xInput", .number(Double(t.xIsB ? inputB : inputA))),
                    ("answer", .string(Self.letter(t.answeredB))),
                    ("correct", .bool(t.correct)),
                    ("seconds", .number(t.seconds)),
                    ("listened", .array(t.listened.map { .string($0) })),
                ])
            })),
            ("answered", .number(Double(trials.count))),
            ("correct", .number(Double(correct))),
            ("pValue", .number(pValue)),
        ])
    }
}
