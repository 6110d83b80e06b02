import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

/// Plots drawn as inline SVG, for a page that needs no network and no
/// script: every plot is an `<svg>` with an id (`plot-spectrum-left` …),
/// the class `plot`, and its data drawn as elements of class `series`.
enum SVGPlot {
    static let colourA = "#1f5fbf"
    static let colourB = "#d9480f"
    static let colourDifference = "#2b8a3e"
    static let width = 640.0, height = 320.0
    static let left = 64.0, right = 16.0, top = 46.0, bottom = 52.0

    static func n(_ x: Double) -> String { formatFixed(x, 1) }

    static func escape(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(ch)
            }
        }
        return out
    }

    /// A tidy step for an axis spanning `span`: 1, 2 or 5 × 10^k, about 6 ticks.
    static func step(_ span: Double) -> Double {
        let raw = max(span, 1e-9) / 6
        let p = pow(10, floor(log10(raw)))
        for m in [1.0, 2, 5, 10] where m * p >= raw { return m * p }
        return 10 * p
    }

    struct Series {
        var name: String
        var colour: String
        var values: [Double]
        /// The first series is drawn wide, the next ones narrower on top of
        /// it, so that equal curves both stay visible.
        var lineWidth = 2.0
        var markerRadius = 2.5
    }

    static func open(_ id: String, _ kind: String, title: String) -> String {
        "<svg id=\"\(id)\" class=\"plot \(kind)\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(escape(title))\">\n"
            + "<rect x=\"0\" y=\"0\" width=\"\(Int(width))\" height=\"\(Int(height))\" fill=\"#ffffff\"/>\n"
            + "<text x=\"\(n(width / 2))\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">\(escape(title))</text>\n"
    }

    static func legend(_ series: [Series]) -> String {
        var s = ""
        var x = width - right - 10
        for item in series.reversed() {
            let w = Double(item.name.count) * 7 + 28
            x -= w
            s += "<g class=\"legend\"><rect x=\"\(n(x))\" y=\"\(n(top - 14))\" width=\"14\" height=\"4\" fill=\"\(item.colour)\"/>"
                + "<text x=\"\(n(x + 18))\" y=\"\(n(top - 8))\" font-size=\"12\">\(escape(item.name))</text></g>\n"
        }
        return s
    }

    /// The value range of a y axis for `values`: `span` at least, rounded to steps.
    static func yRange(_ values: [Double], minimumSpan: Double, symmetric: Bool) -> (Double, Double) {
        let finite = values.filter(\.isFinite)
        guard var lo = finite.min(), var hi = finite.max() else { return symmetric ? (-minimumSpan / 2, minimumSpan / 2) : (-100, 0) }
        if symmetric {
            let m = max(abs(lo), abs(hi), minimumSpan / 2)
            lo = -m
            hi = m
        } else if hi - lo < minimumSpan {
            let mid = (hi + lo) / 2
            lo = mid - minimumSpan / 2
            hi = mid + minimumSpan / 2
        }
        let s = step(hi - lo)
        return (floor(lo / s) * s, ceil(hi / s) * s)
    }

    /// A line plot over a logarithmic frequency axis (one point per band).
    static func spectrum(id: String, title: String, frequencies: [Double], series: [Series], yLabel: String,
                         symmetric: Bool, minimumSpan: Double) -> String {
        let plotW = width - left - right, plotH = height - top - bottom
        let fLo = 20.0, fHi = max(20_000.0, (frequencies.max() ?? 20_000) * 1.12)
        let (yLo, yHi) = yRange(series.flatMap(\.values), minimumSpan: minimumSpan, symmetric: symmetric)
        func x(_ f: Double) -> Double { left + plotW * log10(f / fLo) / log10(fHi / fLo) }
        func y(_ v: Double) -> Double { top + plotH * (1 - (min(max(v, yLo), yHi) - yLo) / (yHi - yLo)) }
        var s = open(id, "plot-spectrum", title: title)
        s += "<g class=\"axes\" font-size=\"11\" fill=\"#333333\">\n"
        for f in [31.5, 63, 125, 250, 500, 1000, 2000, 4000, 8000, 16000] {
            s += "<line x1=\"\(n(x(f)))\" y1=\"\(n(top))\" x2=\"\(n(x(f)))\" y2=\"\(n(top + plotH))\" stroke=\"#e0e0e0\"/>"
                + "<text x=\"\(n(x(f)))\" y=\"\(n(top + plotH + 16))\" text-anchor=\"middle\">\(ThirdOctaveBands.label(f))</text>\n"
        }
        let ys = step(yHi - yLo)
        var v = yLo
        while v <= yHi + ys / 1000 {
            s += "<line x1=\"\(n(left))\" y1=\"\(n(y(v)))\" x2=\"\(n(left + plotW))\" y2=\"\(n(y(v)))\" stroke=\"\(abs(v) < ys / 1000 && symmetric ? "#888888" : "#e0e0e0")\"/>"
                + "<text x=\"\(n(left - 6))\" y=\"\(n(y(v) + 4))\" text-anchor=\"end\">\(formatFixed(v, ys < 1 ? 1 : 0))</text>\n"
            v += ys
        }
        s += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotW))\" height=\"\(n(plotH))\" fill=\"none\" stroke=\"#333333\"/>\n"
        s += "<text x=\"\(n(left + plotW / 2))\" y=\"\(n(height - 10))\" text-anchor=\"middle\" font-size=\"12\">Frequency (Hz, 1/3-octave band centres)</text>\n"
        s += "<text transform=\"translate(16 \(n(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">\(escape(yLabel))</text>\n"
        s += "</g>\n"
        for (k, item) in series.enumerated() {
            // One polyline per run of finite values; a marker on every point.
            var runs: [[(Double, Double)]] = [[]]
            for (i, f) in frequencies.enumerated() where i < item.values.count {
                let value = item.values[i]
                if value.isFinite { runs[runs.count - 1].append((x(f), y(value))) } else if !(runs.last?.isEmpty ?? true) { runs.append([]) }
            }
            s += "<g class=\"series series-\(k)\" stroke=\"\(item.colour)\" fill=\"\(item.colour)\">\n"
            for run in runs where !run.isEmpty {
                s += "<polyline fill=\"none\" stroke-width=\"\(n(item.lineWidth))\" points=\"" + run.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ") + "\"/>\n"
                for p in run { s += "<circle cx=\"\(n(p.0))\" cy=\"\(n(p.1))\" r=\"\(n(item.markerRadius))\"/>" }
                s += "\n"
            }
            s += "</g>\n"
        }
        s += legend(series)
        return s + "</svg>\n"
    }

    /// One bar of a bar plot.
    enum Bar {
        case value(Double)
        /// No value: the words say why, on the zero line ("L only").
        case missing(String)
        /// Nothing drawn (the series has no such category).
        case absent
    }

    /// Bars per category (an input direction), one per series.
    static func bars(id: String, title: String, categories: [String], series: [(name: String, colour: String, values: [Bar])],
                     yLabel: String, minimumSpan: Double) -> String {
        let plotW = width - left - right, plotH = height - top - bottom
        let all = series.flatMap { $0.values.compactMap { if case .value(let v) = $0 { v } else { nil } } }
        let (yLo, yHi) = yRange(all, minimumSpan: minimumSpan, symmetric: true)
        func y(_ v: Double) -> Double { top + plotH * (1 - (min(max(v, yLo), yHi) - yLo) / (yHi - yLo)) }
        let slot = plotW / Double(max(categories.count, 1))
        let barW = min(28, slot * 0.8 / Double(max(series.count, 1)))
        var s = open(id, "plot-bars", title: title)
        s += "<g class=\"axes\" font-size=\"11\" fill=\"#333333\">\n"
        let ys = step(yHi - yLo)
        var v = yLo
        while v <= yHi + ys / 1000 {
            s += "<line x1=\"\(n(left))\" y1=\"\(n(y(v)))\" x2=\"\(n(left + plotW))\" y2=\"\(n(y(v)))\" stroke=\"\(abs(v) < ys / 1000 ? "#888888" : "#e0e0e0")\"/>"
                + "<text x=\"\(n(left - 6))\" y=\"\(n(y(v) + 4))\" text-anchor=\"end\">\(formatFixed(v, ys < 1 ? 1 : 0))</text>\n"
            v += ys
        }
        for (i, c) in categories.enumerated() {
            s += "<text x=\"\(n(left + slot * (Double(i) + 0.5)))\" y=\"\(n(top + plotH + 16))\" text-anchor=\"middle\">\(escape(c))</text>\n"
        }
        s += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotW))\" height=\"\(n(plotH))\" fill=\"none\" stroke=\"#333333\"/>\n"
        s += "<text x=\"\(n(left + plotW / 2))\" y=\"\(n(height - 10))\" text-anchor=\"middle\" font-size=\"12\">Input channel (direction) of the impulse</text>\n"
        s += "<text transform=\"translate(16 \(n(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">\(escape(yLabel))</text>\n"
        s += "</g>\n"
        for (k, item) in series.enumerated() {
            s += "<g class=\"series series-\(k)\" fill=\"\(item.colour)\">\n"
            for (i, value) in item.values.enumerated() where i < categories.count {
                let x0 = left + slot * (Double(i) + 0.5) - barW * Double(series.count) / 2 + barW * Double(k)
                switch value {
                case .value(let value):
                    let a = y(0), b = y(value)
                    // A value of 0 still shows: a bar 2 px high.
                    let top = min(a, b) - (abs(a - b) < 2 ? 1 : 0)
                    s += "<rect x=\"\(n(x0 + 1))\" y=\"\(n(top))\" width=\"\(n(barW - 2))\" height=\"\(n(max(abs(a - b), 2)))\"><title>\(escape(item.name)) \(escape(categories[i])): \(formatFixed(value, 2))</title></rect>\n"
                case .missing(let why):
                    s += "<text class=\"missing\" x=\"\(n(x0 + barW / 2))\" y=\"\(n(y(0) - 4 - 11 * Double(k)))\" text-anchor=\"middle\" font-size=\"10\" fill=\"\(item.colour)\">\(escape(why))</text>\n"
                case .absent:
                    break
                }
            }
            s += "</g>\n"
        }
        s += legend(series.map { Series(name: $0.name, colour: $0.colour, values: []) })
        return s + "</svg>\n"
    }
}

extension ComparisonResult {
    /// The id suffix of an output channel's plots: `left`, `right` for L
    /// and R, else the label in lower case (`c`, `lfe`, `ls`; `ch1` … for
    /// discrete channels).
    public static func plotSuffix(_ label: String) -> String {
        switch label {
        case "L": return "left"
        case "R": return "right"
        default:
            let lower = label.lowercased().filter { $0.isLetter || $0.isNumber }
            return lower.first?.isNumber ?? true ? "ch" + lower : lower
        }
    }

    /// index.html: a page with no script and nothing from the network:
    /// the loudness table, spectra of A and B per output channel
    /// (`plot-spectrum-left` …), their difference (`plot-difference-left`
    /// …), ILD and ITD per input direction (`plot-ild`, `plot-itd`; a
    /// paragraph saying why instead when neither node could be measured).
    public var html: String {
        let e = SVGPlot.escape
        let ma = a.measurements, mb = b.measurements
        let nameA = "A: \(a.node)", nameB = "B: \(b.node) (matched)"
        var h = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>agraph compare: \(e(a.node)) vs \(e(b.node))</title>
            <style>
            body { font-family: sans-serif; margin: 24px; color: #222222; background: #ffffff; }
            table { border-collapse: collapse; margin: 12px 0; }
            th, td { border: 1px solid #cccccc; padding: 4px 10px; text-align: right; }
            th:first-child, td:first-child { text-align: left; }
            .plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(560px, 100%), 1fr)); gap: 16px; }
            svg.plot { border: 1px solid #dddddd; box-sizing: border-box; width: 100%; height: auto; }
            .a { color: \(SVGPlot.colourA); } .b { color: \(SVGPlot.colourB); }
            </style>
            </head>
            <body>
            <h1>Renderer comparison</h1>
            <p>Graph <code>\(e(graphFile))</code>, \(formatFixed(seconds, 3)) s at \(Int(sampleRate)) Hz.
            <span class="a">A = <code>\(e(a.node))</code> (\(e(a.typeID)), \(ma.format.channels) ch \(ma.format.layout))</span>,
            <span class="b">B = <code>\(e(b.node))</code> (\(e(b.typeID)), \(mb.format.channels) ch \(mb.format.layout))</span>.</p>

            """
        // Table.
        func cell(_ x: Double, _ digits: Int = 1) -> String { x.isFinite ? formatFixed(x, digits) : "−∞" }
        h += "<h2>Loudness</h2>\n<table id=\"table-loudness\">\n<tr><th></th><th class=\"a\">A</th><th class=\"b\">B</th></tr>\n"
        h += "<tr><td>Integrated loudness (LUFS)</td><td>\(cell(ma.integratedLUFS))</td><td>\(cell(mb.integratedLUFS))</td></tr>\n"
        h += "<tr><td>Loudness range (LU)</td><td>\(cell(ma.loudnessRangeLU))</td><td>\(cell(mb.loudnessRangeLU))</td></tr>\n"
        h += "<tr><td>True peak (dBTP)</td><td>\(cell(ma.truePeakDBTP))</td><td>\(cell(mb.truePeakDBTP))</td></tr>\n"
        h += "<tr><td>Sample peak (dBFS)</td><td>\(cell(ma.samplePeakDBFS))</td><td>\(cell(mb.samplePeakDBFS))</td></tr>\n"
        h += "<tr><td>Gain applied for matching (dB)</td><td>0.0</td><td>\(matchingOffsetDB.map { cell($0, 2) } ?? "none")</td></tr>\n"
        h += "<tr><td>True peak after matching (dBTP)</td><td>\(cell(a.matchedTruePeakDBTP))</td><td>\(cell(b.matchedTruePeakDBTP))</td></tr>\n"
        for (ca, cb) in zip(ma.correlations, mb.correlations) {
            h += "<tr><td>Correlation \(e(ca.labels.0))/\(e(ca.labels.1))</td><td>\(ca.coefficient.map { formatFixed($0, 3) } ?? "n/a")</td><td>\(cb.coefficient.map { formatFixed($0, 3) } ?? "n/a")</td></tr>\n"
        }
        h += "</table>\n"
        h += "<p>Matching offset: \(matchingOffsetDB.map { "\(Self.signed($0, 2)) dB applied to B so that its integrated loudness equals A's; the spectra below are of the matched signals." } ?? "none: a loudness could not be measured; the spectra are as rendered.")</p>\n"

        // Spectra and differences.
        let freqs = bands.bands.map(\.centreHz)
        h += "<h2>1/3-octave spectra per output channel</h2>\n<div class=\"plots\">\n"
        for (c, label) in ma.labels.enumerated() {
            let suffix = Self.plotSuffix(label)
            h += SVGPlot.spectrum(id: "plot-spectrum-\(suffix)", title: "Spectrum, \(label)", frequencies: freqs,
                                  series: [.init(name: nameA, colour: SVGPlot.colourA, values: a.matchedBandLevelsDB[c], lineWidth: 4, markerRadius: 3.5),
                                           .init(name: nameB, colour: SVGPlot.colourB, values: b.matchedBandLevelsDB[c], lineWidth: 1.5, markerRadius: 2)],
                                  yLabel: "Band level (dB re full scale)", symmetric: false, minimumSpan: 40)
        }
        h += "</div>\n<h2>Difference B − A per output channel</h2>\n<div class=\"plots\">\n"
        for (c, label) in ma.labels.enumerated() {
            h += SVGPlot.spectrum(id: "plot-difference-\(Self.plotSuffix(label))", title: "B − A, \(label)", frequencies: freqs,
                                  series: [.init(name: "B − A", colour: SVGPlot.colourDifference, values: differenceDB[c])],
                                  yLabel: "Level difference (dB)", symmetric: true, minimumSpan: 6)
        }
        h += "</div>\n"

        // ILD and ITD.
        h += "<h2>Inter-aural differences per input direction</h2>\n"
        var categories: [String] = []
        for d in a.impulses.directions + b.impulses.directions where !categories.contains(d.label) { categories.append(d.label) }
        for (name, test) in [("A", a.impulses), ("B", b.impulses)] {
            if case .skipped(let why) = test { h += "<p>\(name): not measured: \(e(why))</p>\n" }
        }
        if !categories.isEmpty {
            func values(_ t: ImpulseTest, _ f: (InterauralDifference) -> Double?) -> [SVGPlot.Bar] {
                categories.map { c in
                    guard let d = t.directions.first(where: { $0.label == c }) else { return .absent }
                    if let v = f(d.interaural) { return .value(v) }
                    return .missing(Self.silence(d.interaural))
                }
            }
            h += "<p>A unit impulse on each input channel of each node alone; ILD = 10·log10(E<sub>L</sub>/E<sub>R</sub>) (positive: left louder), ITD from the inter-aural cross-correlation of the responses low-passed at 1.5 kHz (positive: left ear leads). \"L only\", \"R only\": the other ear's response is silent, so there is no finite ILD and no ITD.</p>\n"
            h += "<div class=\"plots\">\n"
            h += SVGPlot.bars(id: "plot-ild", title: "ILD per direction", categories: categories,
                              series: [("A: \(a.node)", SVGPlot.colourA, values(a.impulses) { $0.ildDB }),
                                       ("B: \(b.node)", SVGPlot.colourB, values(b.impulses) { $0.ildDB })],
                              yLabel: "ILD (dB)", minimumSpan: 6)
            h += SVGPlot.bars(id: "plot-itd", title: "ITD per direction", categories: categories,
                              series: [("A: \(a.node)", SVGPlot.colourA, values(a.impulses) { $0.itdMicroseconds }),
                                       ("B: \(b.node)", SVGPlot.colourB, values(b.impulses) { $0.itdMicroseconds })],
                              yLabel: "ITD (µs)", minimumSpan: 200)
            h += "</div>\n"
        }
        if !notes.isEmpty {
            h += "<h2>Notes</h2>\n<ul>\n" + notes.map { "<li>\(e($0))</li>\n" }.joined() + "</ul>\n"
        }
        h += "<p>Method: docs/compare.md. Band levels from a Welch power spectrum (Hann, 50 % overlap, FFT of \(ma.fftSize) points), IEC 61260-1 base-10 bands; loudness after ITU-R BS.1770-4 and EBU Tech 3342.</p>\n"
        return h + "</body>\n</html>\n"
    }
}
