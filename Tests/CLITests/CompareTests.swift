import AudioGraphProcessing
import Foundation
import TestSupport
import XCTest

/// `agraph compare`, run as a user would: its report's numbers against
/// measurements the test makes itself on signals it computes, its errors,
/// and its HTML page rendered by headless Chromium.
final class CompareTests: XCTestCase {
    static let rate = 48000.0
    static let seconds = 8

    func agraph(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CLITests.Run {
        try CLITests.agraph(arguments: arguments, file: file, line: line)
    }

    /// A 5.1 float WAV of independent pink noise per channel (RMS 0.05),
    /// and a graph folding it to stereo twice, Lo/Ro (`loro`) and Lt/Rt
    /// (`ltrt`), each into a sink; `loro` also into a file-out that
    /// compare must not write.
    func makeGraph(_ dir: TemporaryDirectory) throws -> (graph: String, channels: [[Float]]) {
        let n = Int(Self.rate) * Self.seconds
        let channels = (0..<6).map { Synth.pinkNoise(frames: n, seed: UInt64(10 + $0), rms: 0.05) }
        var interleaved = [Float](repeating: 0, count: 6 * n)
        for i in 0..<n { for c in 0..<6 { interleaved[6 * i + c] = channels[c][i] } }
        try writeSoundFile(dir.file("in.wav"), format: .wavFloat32, channels: 6, sampleRate: Self.rate, samples: interleaved)
        let graph = dir.file("compare.json")
        try """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "src", "type": "file", "params": {"path": "in.wav"}},
              {"id": "loro", "type": "downmix", "params": {"layout": "stereo", "mode": "loro"}},
              {"id": "ltrt", "type": "downmix", "params": {"layout": "stereo", "mode": "ltrt"}},
              {"id": "keep", "type": "file-out", "params": {"path": "out.wav"}},
              {"id": "drop", "type": "null"}],
             "links": [{"from": "src", "to": "loro"}, {"from": "src", "to": "ltrt"},
                       {"from": "loro", "to": "keep"}, {"from": "ltrt", "to": "drop"}]}
            """.write(toFile: graph, atomically: true, encoding: .utf8)
        return (graph, channels)
    }

    /// The two downmixes computed by the test from the matrices of
    /// docs/processing/channels.md (L R C LFE Ls Rs; the LFE dropped).
    func downmixes(_ x: [[Float]]) -> (loro: [[Float]], ltrt: [[Float]]) {
        let h = Float(0.5.squareRoot())
        let n = x[0].count
        var loro = [[Float]](repeating: [Float](repeating: 0, count: n), count: 2)
        var ltrt = loro
        for i in 0..<n {
            let l = x[0][i], r = x[1][i], c = x[2][i], ls = x[4][i], rs = x[5][i]
            loro[0][i] = l + h * c + h * ls
            loro[1][i] = r + h * c + h * rs
            ltrt[0][i] = l + h * c - 0.5 * ls - 0.5 * rs
            ltrt[1][i] = r + h * c + 0.5 * ls + 0.5 * rs
        }
        return (loro, ltrt)
    }

    func integratedLUFS(_ s: [[Float]]) throws -> Double {
        let meter = try EBUR128Meter(channels: 2, sampleRate: Self.rate, layout: .stereo, truePeak: false)
        zip(s[0], s[1]).flatMap { [$0, $1] }.withUnsafeBufferPointer { meter.add(interleaved: $0.baseAddress!, frames: s[0].count) }
        return meter.integrated
    }

    func pearson(_ x: [Float], _ y: [Float]) -> Double {
        let n = Double(x.count)
        var sx = 0.0, sy = 0.0, sxx = 0.0, syy = 0.0, sxy = 0.0
        for (a, b) in zip(x, y) {
            let u = Double(a), v = Double(b)
            sx += u; sy += v; sxx += u * u; syy += v * v; sxy += u * v
        }
        return (n * sxy - sx * sy) / ((n * sxx - sx * sx) * (n * syy - sy * sy)).squareRoot()
    }

    /// One-third-octave band levels (dB) of `x` by the test's own Welch
    /// estimate (TestSupport's double-precision FFT), bins split by overlap.
    func bandLevels(_ x: [Float], lower: [Double], upper: [Double], fftSize: Int) -> [Double] {
        let p = SignalAnalysis.powerSpectrum(x, fftSize: fftSize)
        let delta = Self.rate / Double(fftSize)
        return zip(lower, upper).map { lo, hi in
            var sum = 0.0
            for (k, v) in p.enumerated() {
                let f = Double(k) * delta
                sum += v * max(0, min(hi, f + delta / 2) - max(lo, f - delta / 2)) / delta
            }
            return 10 * log10(sum)
        }
    }

    func testReportNumbersMatchIndependentMeasurementsAndThePageRendersItsPlots() throws {
        let dir = try TemporaryDirectory("agraph-compare")
        let (graph, channels) = try makeGraph(dir)
        let reportDir = dir.file("report")
        let run = try agraph(["compare", graph, "--a", "loro", "--b", "ltrt", "--report", reportDir, "--quiet"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("out.wav")), "compare renders only A, B and what feeds them")
        XCTAssertTrue(run.stdout.contains("A = 'loro' (downmix, 2 ch stereo), B = 'ltrt' (downmix, 2 ch stereo)"), run.stdout)
        XCTAssertTrue(run.stdout.contains("matching offset: "), run.stdout)

        let data = try Data(contentsOf: URL(fileURLWithPath: reportDir + "/report.json"))
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(Set(report.keys), ["format", "graph", "sampleRate", "frames", "durationSeconds", "ending", "matchingOffsetDB",
                                          "a", "b", "bands", "differenceDB", "method", "notes"])
        XCTAssertEqual(report["format"] as? String, "agraph-compare/1")
        XCTAssertEqual(report["frames"] as? Int, Int(Self.rate) * Self.seconds)
        XCTAssertEqual(report["ending"] as? String, "endOfStream")
        let a = try XCTUnwrap(report["a"] as? [String: Any]), b = try XCTUnwrap(report["b"] as? [String: Any])
        XCTAssertEqual(a["node"] as? String, "loro")
        XCTAssertEqual(b["layout"] as? String, "stereo")

        // Loudness: libebur128 over the downmixes the test computes.
        let (loro, ltrt) = downmixes(channels)
        let la = try integratedLUFS(loro), lb = try integratedLUFS(ltrt)
        XCTAssertEqual(a["integratedLUFS"] as? Double ?? .nan, la, accuracy: 0.05)
        XCTAssertEqual(b["integratedLUFS"] as? Double ?? .nan, lb, accuracy: 0.05)
        let offset = try XCTUnwrap(report["matchingOffsetDB"] as? Double)
        XCTAssertEqual(offset, la - lb, accuracy: 0.05)
        XCTAssertEqual(b["gainDB"] as? Double ?? .nan, offset, accuracy: 1e-9)
        XCTAssertEqual(b["matchedTruePeakDBTP"] as? Double ?? .nan, (b["truePeakDBTP"] as? Double ?? .nan) + offset, accuracy: 2e-4)

        // Correlation of each output's L/R: the test's own Pearson sums.
        for (side, signal) in [(a, loro), (b, ltrt)] {
            let c = try XCTUnwrap((side["correlations"] as? [[String: Any]])?.first)
            XCTAssertEqual(c["channels"] as? [String], ["L", "R"])
            XCTAssertEqual(c["coefficient"] as? Double ?? .nan, pearson(signal[0], signal[1]), accuracy: 1e-5)
        }

        // Bands: B (matched) − A from the test's own spectra of the downmixes.
        let bands = try XCTUnwrap(report["bands"] as? [String: Any])
        let lower = try XCTUnwrap(bands["lowerHz"] as? [Double]), upper = try XCTUnwrap(bands["upperHz"] as? [Double])
        XCTAssertEqual(bands["nominalHz"] as? [Double], [25, 31.5, 40, 50, 63, 80, 100, 125, 160, 200, 250, 315, 400, 500, 630, 800,
                                                         1000, 1250, 1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000, 10000, 12500, 16000, 20000])
        let fftSize = try XCTUnwrap((report["method"] as? [String: Any])?["fftSize"] as? Int)
        let difference = try XCTUnwrap(report["differenceDB"] as? [[Double]])
        let levelsA = try XCTUnwrap(a["bandLevelsDB"] as? [[Double]]), levelsB = try XCTUnwrap(b["bandLevelsDB"] as? [[Double]])
        for c in 0..<2 {
            let ea = bandLevels(loro[c], lower: lower, upper: upper, fftSize: fftSize)
            let eb = bandLevels(ltrt[c], lower: lower, upper: upper, fftSize: fftSize)
            for k in lower.indices {
                XCTAssertEqual(levelsA[c][k], ea[k], accuracy: 0.02, "A, channel \(c), band \(k)")
                XCTAssertEqual(levelsB[c][k], eb[k] + offset, accuracy: 0.02, "B matched, channel \(c), band \(k)")
                XCTAssertEqual(difference[c][k], eb[k] + offset - ea[k], accuracy: 0.03, "B − A, channel \(c), band \(k)")
            }
        }

        // Impulses through each downmix alone: the matrices' coefficients.
        func directions(_ side: [String: Any]) throws -> [String: [String: Any]] {
            let impulses = try XCTUnwrap(side["impulses"] as? [String: Any])
            XCTAssertEqual(impulses["measured"] as? Bool, true)
            let list = try XCTUnwrap(impulses["directions"] as? [[String: Any]])
            XCTAssertEqual(list.map { $0["label"] as? String }, ["L", "R", "C", "LFE", "Ls", "Rs"])
            return Dictionary(uniqueKeysWithValues: list.map { ($0["label"] as? String ?? "", $0) })
        }
        let da = try directions(a), db = try directions(b)
        let minus3 = 20 * log10(0.5.squareRoot()), minus6 = 20 * log10(0.5)
        // C: both ears at −3.01 dB, no difference in level or time (both downmixes).
        for d in [da["C"], db["C"]] {
            XCTAssertEqual(d?["ildDB"] as? Double ?? .nan, 0, accuracy: 1e-4)
            XCTAssertEqual(d?["itdSamples"] as? Double ?? .nan, 0, accuracy: 1e-9)
            XCTAssertEqual(d?["leftEnergyDB"] as? Double ?? .nan, minus3, accuracy: 1e-3)
        }
        // Lo/Ro: Ls on the left ear only at −3.01 dB: no ILD, no ITD.
        XCTAssertTrue(da["Ls"]?["ildDB"] is NSNull)
        XCTAssertTrue(da["Ls"]?["rightEnergyDB"] is NSNull, "silence is null")
        XCTAssertEqual(da["Ls"]?["leftEnergyDB"] as? Double ?? .nan, minus3, accuracy: 1e-3)
        XCTAssertEqual(da["L"]?["leftEnergyDB"] as? Double ?? .nan, 0, accuracy: 1e-4)
        // Lt/Rt: Ls to both ears at −6.02 dB in opposite polarity: level and time equal.
        XCTAssertEqual(db["Ls"]?["ildDB"] as? Double ?? .nan, 0, accuracy: 1e-4)
        XCTAssertEqual(db["Ls"]?["itdSamples"] as? Double ?? .nan, 0, accuracy: 1e-9)
        XCTAssertEqual(db["Rs"]?["rightEnergyDB"] as? Double ?? .nan, minus6, accuracy: 1e-3)

        // The page: self-contained, one svg per plot.
        let html = try String(contentsOfFile: reportDir + "/index.html", encoding: .utf8)
        XCTAssertFalse(html.contains("<script"), "the page needs no script")
        XCTAssertFalse(html.contains("src=") || html.contains("href="), "the page loads nothing")
        let plots = ["plot-spectrum-left", "plot-spectrum-right", "plot-difference-left", "plot-difference-right", "plot-ild", "plot-itd"]
        for id in plots { XCTAssertTrue(html.contains("<svg id=\"\(id)\""), id) }
        try checkRendering(page: reportDir + "/index.html", plots: plots, in: dir)
    }

    // MARK: headless Chromium

    static func chromium() -> String? {
        for name in ["chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"] {
            if let path = findExecutable(name) { return path }
        }
        return nil
    }

    /// Opens `page` in headless Chromium twice: once with a probe script
    /// (added to a copy of the page, not to the page) that writes each
    /// plot's position and the extent of its drawn series into the DOM,
    /// dumped and read back; once as a screenshot, in which each plot's
    /// box must hold pixels of its series' colours. Fails when a plot is
    /// missing, empty, or draws nothing.
    func checkRendering(page: String, plots: [String], in dir: TemporaryDirectory) throws {
        guard let chromium = Self.chromium() else {
            if ProcessInfo.processInfo.environment["AGRAPH_REQUIRE_CHROMIUM"] == "1" {
                return XCTFail("headless Chromium is required here (scripts/test sets AGRAPH_REQUIRE_CHROMIUM) but is not installed: scripts/setup installs chromium-headless-shell")
            }
            throw XCTSkip("headless Chromium is not installed (AGRAPH_SETUP_TESTS=1 scripts/setup installs chromium-headless-shell)")
        }
        guard let ffmpeg = findExecutable("ffmpeg") else { throw XCTSkip("ffmpeg is not installed (scripts/test installs it)") }
        let probe = """
            <script>
            for (const svg of document.querySelectorAll('svg.plot')) {
              const box = svg.getBoundingClientRect();
              svg.setAttribute('data-box', [box.left, box.top, box.width, box.height].map(Math.round).join(','));
              const series = [...svg.querySelectorAll('.series')].map(g => {
                const b = g.getBBox();
                return [Math.round(b.width), Math.round(b.height), g.querySelectorAll('polyline, rect, circle').length].join('x');
              });
              svg.setAttribute('data-series', series.join(';'));
            }
            document.body.setAttribute('data-height', document.documentElement.scrollHeight);
            const page = document.body.getBoundingClientRect();
            document.body.setAttribute('data-content', [page.left, page.width].map(Math.round).join(','));
            </script>
            """
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let probePage = dir.file("probe.html")
        try html.replacingOccurrences(of: "</body>", with: probe + "</body>").write(toFile: probePage, atomically: true, encoding: .utf8)
        let flags = ["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--force-device-scale-factor=1"]
        // The same width for both runs: the plots flow into rows by width.
        let width = 1400
        let dom = try runTool(chromium, flags + ["--window-size=\(width),1000", "--dump-dom", "file://" + probePage], timeout: 120)
        XCTAssertEqual(dom.status, 0, dom.stderr)
        func attribute(_ name: String, of id: String) -> String? {
            guard let tag = dom.stdout.range(of: "<svg id=\"\(id)\""),
                  let end = dom.stdout.range(of: ">", range: tag.upperBound..<dom.stdout.endIndex),
                  let a = dom.stdout.range(of: "\(name)=\"", range: tag.upperBound..<end.lowerBound),
                  let close = dom.stdout.range(of: "\"", range: a.upperBound..<end.lowerBound) else { return nil }
            return String(dom.stdout[a.upperBound..<close.lowerBound])
        }
        // The page's content column (inside the body's margins).
        let content = try XCTUnwrap(dom.stdout.firstMatch(of: #/data-content="(\d+),(\d+)"/#).flatMap { m in
            Int(m.output.1).flatMap { l in Int(m.output.2).map { (left: l, width: $0) } }
        })
        XCTAssertGreaterThan(content.width, width - 100, "the body spans the window")
        var boxes: [String: [Int]] = [:]
        for id in plots {
            let box = try XCTUnwrap(attribute("data-box", of: id), "\(id) was laid out").split(separator: ",").compactMap { Int($0) }
            XCTAssertEqual(box.count, 4)
            // Two plots to a row (16 px apart) across the page's whole
            // width, 2:1 as drawn (640 × 320), with a 1 px border.
            XCTAssertEqual(Double(box[2]), Double(content.width - 16) / 2, accuracy: 1.5, "\(id) width: half the page's \(content.width) px")
            XCTAssertEqual(Double(box[3]), Double(box[2] - 2) / 2 + 2, accuracy: 1.5, "\(id) height")
            boxes[id] = box
            let series = try XCTUnwrap(attribute("data-series", of: id)).split(separator: ";").map { $0.split(separator: "x").compactMap { Int($0) } }
            let expected = id.hasPrefix("plot-difference") ? 1 : 2
            XCTAssertEqual(series.count, expected, "\(id): series")
            for s in series {
                XCTAssertEqual(s.count, 3)
                if id.hasPrefix("plot-i") {
                    // A bar per measured direction (here 0 dB or 0 µs: 2 px high).
                    XCTAssertGreaterThan(s[0], 10, "\(id): bars have width")
                    XCTAssertGreaterThanOrEqual(s[1], 2, "\(id): bars have height")
                    XCTAssertGreaterThanOrEqual(s[2], 1, "\(id): the series draws bars")
                } else {
                    // A line with a marker per band, across the frequency axis.
                    XCTAssertGreaterThan(s[0], 400, "\(id): the series spans the plot")
                    XCTAssertGreaterThan(s[1], 1, "\(id): the series has height")
                    XCTAssertEqual(s[2], 31, "\(id): a polyline and 30 markers")
                }
            }
        }
        // Each pair of per-ear plots fills its row, edge to edge.
        for pair in [("plot-spectrum-left", "plot-spectrum-right"), ("plot-difference-left", "plot-difference-right"), ("plot-ild", "plot-itd")] {
            guard let l = boxes[pair.0], let r = boxes[pair.1] else { continue }
            XCTAssertEqual(l[1], r[1], "\(pair.0) and \(pair.1) share a row")
            XCTAssertEqual(l[0], content.left, accuracy: 1, "\(pair.0) starts at the page's left edge")
            XCTAssertEqual(r[0] + r[2], content.left + content.width, accuracy: 1, "\(pair.1) ends at the page's right edge")
        }
        let height = try XCTUnwrap(dom.stdout.firstMatch(of: #/data-height="(\d+)"/#).flatMap { Int($0.output.1) })
        let shot = dir.file("page.png")
        let r = try runTool(chromium, flags + ["--screenshot=" + shot, "--window-size=\(width),\(height + 40)", "file://" + page], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        let raw = dir.file("page.rgb")
        let decoded = try runTool(ffmpeg, ["-v", "error", "-y", "-i", shot, "-f", "rawvideo", "-pix_fmt", "rgb24", raw], timeout: 60)
        XCTAssertEqual(decoded.status, 0, decoded.stderr)
        let pixels = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        XCTAssertEqual(pixels.count, width * (height + 40) * 3, "the screenshot's size")
        // The series colours (SVGPlot: A #1f5fbf, B #d9480f, B − A #2b8a3e).
        let colours: [(String, [Int])] = [("A", [0x1f, 0x5f, 0xbf]), ("B", [0xd9, 0x48, 0x0f]), ("B − A", [0x2b, 0x8a, 0x3e])]
        for id in plots {
            guard let box = boxes[id] else { continue }
            // Inside the axes' frame only (SVGPlot's margins: left 64,
            // right 16, top 46, bottom 52; plus the border): not the legend.
            // The plot is drawn at `scale` of its 640 × 320 units.
            let scale = Double(box[2] - 2) / 640
            func at(_ units: Double) -> Int { Int((units * scale).rounded()) }
            var counts = [Int](repeating: 0, count: colours.count)
            for y in max(box[1] + 1 + at(46), 0)..<min(box[1] + 1 + at(320 - 52), height + 40) {
                for x in max(box[0] + 1 + at(64), 0)..<min(box[0] + 1 + at(640 - 16), width) {
                    let p = 3 * (y * width + x)
                    for (i, c) in colours.enumerated()
                    where abs(Int(pixels[p]) - c.1[0]) < 40 && abs(Int(pixels[p + 1]) - c.1[1]) < 40 && abs(Int(pixels[p + 2]) - c.1[2]) < 40 {
                        counts[i] += 1
                    }
                }
            }
            let drawn = id.hasPrefix("plot-difference") ? [2] : [0, 1]
            // A line of 30 points with markers: hundreds of pixels (A's wide
            // line shows on both sides of B's on top); a bar 2 px high: dozens.
            let least = id.hasPrefix("plot-i") ? 30 : 300
            for i in drawn { XCTAssertGreaterThan(counts[i], least, "\(id): pixels of \(colours[i].0)'s colour on screen") }
        }
    }

    func testErrorsNameWhatIsWrong() throws {
        let dir = try TemporaryDirectory("agraph-compare")
        let graph = dir.file("g.json")
        try """
            {"format": "agraph/1", "sampleRate": 48000, "nodes": [
              {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "channels": 2, "duration": 1}},
              {"id": "mono", "type": "downmix", "params": {"layout": "mono"}},
              {"id": "out", "type": "null"}, {"id": "out2", "type": "null"}],
             "links": [{"from": "tone", "to": "out"}, {"from": "tone", "to": "mono"}, {"from": "mono", "to": "out2"}]}
            """.write(toFile: graph, atomically: true, encoding: .utf8)
        var r = try agraph(["compare", graph, "--a", "tone", "--b", "mno"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("--b: no node 'mno'") && r.stderr.contains("did you mean 'mono'?"), r.stderr)
        r = try agraph(["compare", graph, "--a", "out", "--b", "tone"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("--a: 'out' (null) is a sink: it has no output to compare; compare the node feeding it ('tone')"), r.stderr)
        r = try agraph(["compare", graph, "--a", "tone", "--b", "mono"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("'tone' has 2 channels (stereo) but 'mono' has 1 (mono)"), r.stderr)
        r = try agraph(["compare", graph, "--a", "tone", "--b", "tone", "--duration", "0"])
        XCTAssertEqual(r.status, 64, "a usage error")
        // A source compared with itself: no impulses into a source, said so; the rest stands.
        r = try agraph(["compare", graph, "--a", "tone", "--b", "tone", "--set", "tone.level=-20", "--quiet"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("A: not measured: 'tone' (test-tone) is a source"), r.stdout)
        // EBU Tech 3341: a 1 kHz sine at −23 dBFS in both channels reads −23 LUFS; at −20, −20.
        XCTAssertTrue(r.stdout.contains("integrated              -20.0 LUFS    -20.0 LUFS"), "--set reached the tone\n\(r.stdout)")
        XCTAssertTrue(r.stdout.contains("matching offset: +0.00 dB"), r.stdout)
    }
}
