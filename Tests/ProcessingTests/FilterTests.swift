import AudioGraph
import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// A complex number for the analog prototypes.
private struct C {
    var re: Double, im: Double
    static func + (a: C, b: C) -> C { C(re: a.re + b.re, im: a.im + b.im) }
    static func * (a: C, b: C) -> C { C(re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re) }
    static func * (a: Double, b: C) -> C { C(re: a * b.re, im: a * b.im) }
    var magnitude: Double { (re * re + im * im).squareRoot() }
}

/// One filter to check: its node parameters and its designed magnitude.
private struct Design {
    var params: String
    var sampleRate: Double = 48000
    /// |H| at `f` Hz.
    var magnitude: (Double) -> Double
}

final class FilterTests: XCTestCase {
    /// The Cookbook's analog prototypes, seen through the bilinear
    /// transform prewarped at `f0`: `s = j·tan(πf/fs) / tan(πf0/fs)`.
    /// Written from the prototypes, not from the product's coefficients.
    private static func prototype(_ shape: String, f0: Double, q: Double, gainDB: Double = 0, fs: Double) -> (Double) -> Double {
        let A = pow(10, gainDB / 40)
        return { f in
            let w = tan(Double.pi * f / fs) / tan(Double.pi * f0 / fs)
            let s = C(re: 0, im: w)
            let s2 = s * s
            let one = C(re: 1, im: 0)
            func ratio(_ n: C, _ d: C) -> Double { n.magnitude / d.magnitude }
            let den = s2 + (1 / q) * s + one
            switch shape {
            case "low-pass": return ratio(one, den)
            case "high-pass": return ratio(s2, den)
            case "band-pass": return ratio((1 / q) * s, den)
            case "notch": return ratio(s2 + one, den)
            case "all-pass": return ratio(s2 + (-1 / q) * s + one, den)
            case "peaking": return ratio(s2 + (A / q) * s + one, s2 + (1 / (A * q)) * s + one)
            case "low-shelf":
                return A * ratio(s2 + (A.squareRoot() / q) * s + C(re: A, im: 0), A * s2 + (A.squareRoot() / q) * s + one)
            case "high-shelf":
                return A * ratio(A * s2 + (A.squareRoot() / q) * s + one, s2 + (A.squareRoot() / q) * s + C(re: A, im: 0))
            default: return .nan
            }
        }
    }

    /// The Cookbook's shelf slope as Q: `1/Q = √((A + 1/A)(1/S − 1) + 2)`.
    private static func qFromSlope(_ S: Double, gainDB: Double) -> Double {
        let A = pow(10, gainDB / 40)
        return 1 / ((A + 1 / A) * (1 / S - 1) + 2).squareRoot()
    }

    /// A Butterworth low/high-pass of `order`: `|H|² = 1 / (1 + Ω^±2N)`.
    private static func butterworth(highPass: Bool, order: Int, f0: Double, fs: Double) -> (Double) -> Double {
        { f in
            let w = tan(Double.pi * f / fs) / tan(Double.pi * f0 / fs)
            return 1 / (1 + pow(highPass ? 1 / w : w, Double(2 * order))).squareRoot()
        }
    }

    private var designs: [Design] {
        let fs = 48000.0
        var d: [Design] = [
            Design(params: #"{"type": "low-pass", "frequency": 1000}"#, magnitude: Self.prototype("low-pass", f0: 1000, q: 0.5.squareRoot(), fs: fs)),
            Design(params: #"{"type": "high-pass", "frequency": 2000, "q": 2}"#, magnitude: Self.prototype("high-pass", f0: 2000, q: 2, fs: fs)),
            Design(params: #"{"type": "band-pass", "frequency": 1000, "q": 4}"#, magnitude: Self.prototype("band-pass", f0: 1000, q: 4, fs: fs)),
            Design(params: #"{"type": "notch", "frequency": 3000, "q": 1}"#, magnitude: Self.prototype("notch", f0: 3000, q: 1, fs: fs)),
            Design(params: #"{"type": "peaking", "frequency": 1000, "q": 1.5, "gain": 9}"#, magnitude: Self.prototype("peaking", f0: 1000, q: 1.5, gainDB: 9, fs: fs)),
            Design(params: #"{"type": "peaking", "frequency": 5000, "q": 0.5, "gain": -12}"#, magnitude: Self.prototype("peaking", f0: 5000, q: 0.5, gainDB: -12, fs: fs)),
            Design(params: #"{"type": "low-shelf", "frequency": 300, "gain": 6}"#, magnitude: Self.prototype("low-shelf", f0: 300, q: 0.5.squareRoot(), gainDB: 6, fs: fs)),
            Design(params: #"{"type": "low-shelf", "frequency": 300, "slope": 1, "gain": -10}"#,
                   magnitude: Self.prototype("low-shelf", f0: 300, q: Self.qFromSlope(1, gainDB: -10), gainDB: -10, fs: fs)),
            Design(params: #"{"type": "high-shelf", "frequency": 6000, "slope": 0.5, "gain": 8}"#,
                   magnitude: Self.prototype("high-shelf", f0: 6000, q: Self.qFromSlope(0.5, gainDB: 8), gainDB: 8, fs: fs)),
            Design(params: #"{"type": "all-pass", "frequency": 1000, "q": 0.7}"#, magnitude: Self.prototype("all-pass", f0: 1000, q: 0.7, fs: fs)),
            Design(params: #"{"type": "low-pass", "frequency": 15000, "q": 0.9}"#, sampleRate: 44100,
                   magnitude: Self.prototype("low-pass", f0: 15000, q: 0.9, fs: 44100)),
            // Cascades: Butterworth orders (odd too), identical stages.
            Design(params: #"{"type": "low-pass", "frequency": 2000, "order": 4}"#, magnitude: Self.butterworth(highPass: false, order: 4, f0: 2000, fs: fs)),
            Design(params: #"{"type": "high-pass", "frequency": 500, "order": 3}"#, magnitude: Self.butterworth(highPass: true, order: 3, f0: 500, fs: fs)),
            Design(params: #"{"type": "low-pass", "frequency": 8000, "order": 1}"#, magnitude: Self.butterworth(highPass: false, order: 1, f0: 8000, fs: fs)),
            Design(params: #"{"type": "high-pass", "frequency": 100, "order": 8}"#, magnitude: Self.butterworth(highPass: true, order: 8, f0: 100, fs: fs)),
        ]
        let peak = Self.prototype("peaking", f0: 2500, q: 2, gainDB: 4, fs: fs)
        d.append(Design(params: #"{"type": "peaking", "frequency": 2500, "q": 2, "gain": 4, "stages": 3}"#, magnitude: { pow(peak($0), 3) }))
        return d
    }

    /// The impulse response of `filter` params at `fs`, `frames` long.
    func impulseResponse(_ params: String, sampleRate: Double, frames: Int = 32768) throws -> [Float] {
        let json = """
            {"format": "agraph/1", "sampleRate": \(Int(sampleRate)), "nodes": [
              {"id": "src", "type": "test-tone", "params": {"waveform": "impulse", "interval": 0, "level": 0, "channels": 1}},
              {"id": "f", "type": "filter", "params": \(params)},
              {"id": "cap", "type": "capture"}],
             "links": [{"from": "src", "to": "f"}, {"from": "f", "to": "cap"}]}
            """
        return try renderLive(json, frames: frames, block: 500).samples[0]
    }

    /// |Σ h[n]·e^(−j2πfn/fs)|: the measured response at `f`.
    func measuredMagnitude(_ h: [Float], at f: Double, sampleRate: Double) -> Double {
        var re = 0.0, im = 0.0
        let w = 2 * Double.pi * f / sampleRate
        for (n, x) in h.enumerated() where x != 0 {
            re += Double(x) * cos(w * Double(n))
            im -= Double(x) * sin(w * Double(n))
        }
        return (re * re + im * im).squareRoot()
    }

    func testMeasuredResponsesMatchTheDesignsAtTenFrequencies() throws {
        for design in designs {
            let fs = design.sampleRate
            let h = try impulseResponse(design.params, sampleRate: fs)
            // The response has died away within the window.
            XCTAssertLessThan(SignalAnalysis.peak(h[30000...]), 1e-6, design.params)
            let frequencies = (0..<10).map { 40 * pow(20000 / 40, Double($0) / 9) }    // 40 Hz … 20 kHz
            for f in frequencies {
                let expected = dB(design.magnitude(f))
                let measured = dB(measuredMagnitude(h, at: f, sampleRate: fs))
                if expected >= -60 {
                    XCTAssertEqual(measured, expected, accuracy: 0.1, "\(design.params) at \(Int(f)) Hz")
                } else {
                    XCTAssertLessThan(measured, -55, "\(design.params) at \(Int(f)) Hz: designed \(expected) dB")
                }
            }
        }
    }

    /// The largest second difference `|y[i] − 2y[i−1] + y[i−2]|` from `from` on:
    /// a click (a step in the value or the slope) shows as a spike in it.
    func largestSecondDifference(_ y: [Float], from: Int) -> Double {
        var m = 0.0
        for i in max(from, 2)..<y.count { m = max(m, abs(Double(y[i]) - 2 * Double(y[i - 1]) + Double(y[i - 2]))) }
        return m
    }

    /// The changes of the zipper test: (frame, parameter, value).
    static let zipperChanges: [(frame: Int, address: String, value: Double)] = {
        var changes: [(frame: Int, address: String, value: Double)] = [
            (9_600, "f.gain", 12), (19_200, "f.frequency", 3000), (28_800, "f.q", 4), (38_400, "f.frequency", 1000)]
        // And sweeps of many small steps, one per block.
        for k in 0..<100 {
            changes.append((48_000 + 128 * k, "f.frequency", 1000 * pow(1.02, Double(k))))
            changes.append((48_000 + 128 * k + 64, "f.gain", 12 - 0.24 * Double(k)))
        }
        return changes
    }()

    func testLiveChangesGlideWithoutZipperNoise() throws {
        // A peaking filter at 1 kHz on a 1 kHz sine at 0.5: its gain moved
        // from -12 to +12 dB, its frequency to 3 kHz and back, its Q
        // changed, then frequency and gain swept in small steps.
        let json = """
            {"format": "agraph/1", "nodes": [
              {"id": "src", "type": "test-tone", "params": {"frequency": 1000, "level": -6.0206, "channels": 1}},
              {"id": "f", "type": "filter", "params": {"type": "peaking", "frequency": 1000, "q": 1, "gain": -12}},
              {"id": "cap", "type": "capture"},
              {"id": "ref", "type": "capture", "params": {"store": "ref"}}],
             "links": [{"from": "src", "to": "f"}, {"from": "f", "to": "cap"}, {"from": "src", "to": "ref"}]}
            """
        let (out, _, ref) = try renderLive(json, frames: 72_000, block: 128, changes: Self.zipperChanges)
        let y = out[0]
        // The same changes made at once (coefficients jumping), for comparison.
        let jumped = try jumpingFilter(ref[0])
        // The output is at most a 1 kHz sine at 0.5 · 4 (+12 dB), whose
        // second differences reach 2·(2π·1000/48000)² ≈ 0.034; a quarter
        // more for the filter's own transients.
        let bound = 1.25 * 2 * pow(2 * Double.pi * 1000 / 48000, 2)
        let glided = largestSecondDifference(y, from: 2400), jumps = largestSecondDifference(jumped, from: 2400)
        XCTAssertLessThanOrEqual(glided, bound, "gliding: largest second difference \(glided)")
        XCTAssertGreaterThan(jumps, bound, "jumping coefficients click (\(jumps), gliding \(glided)): the measure can tell")
        // After each glide the level is the design's at 1 kHz.
        func level(_ range: Range<Int>) -> Double { SignalAnalysis.sineLevelDBFS(y[range]) }
        let peaking = { (f0: Double, q: Double, g: Double) in Self.prototype("peaking", f0: f0, q: q, gainDB: g, fs: 48000)(1000) }
        XCTAssertEqual(level(4_800..<9_600), dB(0.5) - 12, accuracy: 0.05)
        XCTAssertEqual(level(14_400..<19_200), dB(0.5) + 12, accuracy: 0.05)
        XCTAssertEqual(level(24_000..<28_800), dB(0.5 * peaking(3000, 1, 12)), accuracy: 0.05)
        XCTAssertEqual(level(33_600..<38_400), dB(0.5 * peaking(3000, 4, 12)), accuracy: 0.05)
        XCTAssertEqual(level(43_200..<48_000), dB(0.5) + 12, accuracy: 0.05)
    }

    /// `x` through the zipper test's filter with coefficients that jump.
    func jumpingFilter(_ x: [Float]) throws -> [Float] {
        var frequency = 1000.0, q = 1.0, gain = -12.0
        func coefficients() -> [BiquadCoefficients] {
            [BiquadCoefficients.design(.peaking, frequency: frequency, q: q, gainDB: gain, sampleRate: 48000)]
        }
        let cascade = BiquadCascade(channels: 1, coefficients: coefficients(), rampFrames: 1)
        var y = x
        var pending = Self.zipperChanges
        x.withUnsafeBufferPointer { src in
            y.withUnsafeMutableBufferPointer { dst in
                var s = src.baseAddress!, d = dst.baseAddress!
                for i in 0..<x.count {
                    if let c = pending.first, c.frame == i {
                        pending.removeFirst()
                        switch c.address {
                        case "f.frequency": frequency = c.value
                        case "f.gain": gain = c.value
                        default: q = c.value
                        }
                        for (k, section) in coefficients().enumerated() { cascade.setTarget(k, section) }
                        cascade.startGlide()
                    }
                    cascade.process(&s, &d, count: 1)
                    s += 1
                    d += 1
                }
            }
        }
        return y
    }

    func testBadInputNamesTheJSONPointer() {
        func graph(_ params: String, rate: Int = 48000) -> String {
            #"{"format": "agraph/1", "sampleRate": \#(rate), "nodes": [{"id": "t", "type": "test-tone"}, {"id": "f", "type": "filter", "params": \#(params)}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "f"}, {"from": "f", "to": "o"}]}"#
        }
        let cases: [(String, String, String)] = [
            (#"{"type": "low-pass", "frequency": 24000}"#, "/nodes/1/params/frequency", "half the sample rate"),
            (#"{"type": "low-pass", "frequency": 30000}"#, "/nodes/1/params/frequency", "half the sample rate"),
            (#"{"type": "low-pass", "frequency": 1000, "q": 0}"#, "/nodes/1/params/q", ""),
            (#"{"type": "low-pass", "frequency": 1000, "q": -1}"#, "/nodes/1/params/q", ""),
            (#"{"type": "low-pass", "frequency": 1000, "gain": 3}"#, "/nodes/1/params/gain", "no gain"),
            (#"{"type": "peaking", "frequency": 1000, "slope": 1}"#, "/nodes/1/params/slope", "shelves"),
            (#"{"type": "low-shelf", "frequency": 1000, "slope": 1, "q": 1}"#, "/nodes/1/params/slope", "not both"),
            (#"{"type": "band-pass", "frequency": 1000, "order": 4}"#, "/nodes/1/params/order", "stages"),
            (#"{"type": "low-pass", "frequency": 1000, "order": 4, "stages": 2}"#, "/nodes/1/params/stages", "not both"),
            (#"{"type": "low-pass", "frequency": 1000, "order": 4, "q": 2}"#, "/nodes/1/params/q", "Butterworth"),
            (#"{"type": "low-pass", "frequency": 1000, "order": 17}"#, "/nodes/1/params/order", ""),
            (#"{"type": "lowpass", "frequency": 1000}"#, "/nodes/1/params/type", "low-pass"),
            (#"{"frequency": 1000}"#, "/nodes/1", "type"),
        ]
        for (params, pointer, words) in cases {
            let error = validationError(graph(params))
            XCTAssertTrue(error.contains(pointer), "\(params): \(error)")
            XCTAssertTrue(words.isEmpty || error.contains(words), "\(params): \(error)")
        }
        XCTAssertTrue(validationError(graph(#"{"type": "high-pass", "frequency": 20000}"#, rate: 32000)).contains("16000"))
        XCTAssertEqual(validationError(graph(#"{"type": "high-shelf", "frequency": 8000, "slope": 0.8, "gain": -3}"#)), "")
    }

    func testRenderAndLiveChangesAllocateNothing() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        let json = #"{"format": "agraph/1", "nodes": [{"id": "t", "type": "test-tone", "params": {"waveform": "white"}}, {"id": "f", "type": "filter", "params": {"type": "high-shelf", "frequency": 3000, "gain": 6, "stages": 2}}, {"id": "b", "type": "filter", "params": {"type": "low-pass", "frequency": 3000, "order": 5}}, {"id": "o", "type": "null"}], "links": [{"from": "t", "to": "f"}, {"from": "f", "to": "b"}, {"from": "b", "to": "o"}]}"#
        try assertRendersWithoutAllocating(json, changes: [("f.frequency", 500), ("f.gain", -6), ("f.slope", 0.5), ("f.q", 2),
                                                           ("b.frequency", 12000), ("b.frequency", 30000)])
    }
}
