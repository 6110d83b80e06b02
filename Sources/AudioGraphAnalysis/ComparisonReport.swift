import AudioGraphHost
import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

/// The comparison for machines (`report.json`) and for people (the summary
/// on stdout); the HTML page is in `ReportHTML.swift`. The JSON keys are
/// documented in docs/compare.md. [any-thread]
extension ComparisonResult {
    /// The version of report.json's layout.
    public static let reportFormat = "agraph-compare/1"

    /// A JSON number rounded to `digits` decimals; null for ±inf and NaN.
    static func number(_ x: Double?, _ digits: Int = 4) -> JSONOut {
        guard let x, x.isFinite else { return .null }
        var p = 1.0
        for _ in 0..<digits { p *= 10 }
        return .number((x * p).rounded() / p)
    }

    static func endingName(_ e: OfflineRenderer.Ending) -> String {
        switch e {
        case .endOfStream: "endOfStream"
        case .durationReached: "durationReached"
        case .interrupted: "interrupted"
        case .failed: "failed"
        }
    }

    static func json(_ o: ComparedOutput) -> JSONOut {
        let m = o.measurements
        let impulses: JSONOut
        switch o.impulses {
        case .skipped(let why):
            impulses = .object([("measured", .bool(false)), ("reason", .string(why)), ("directions", .array([]))])
        case .measured(let directions):
            impulses = .object([("measured", .bool(true)), ("directions", .array(directions.map { d in
                let i = d.interaural
                return .object([
                    ("label", .string(d.label)), ("port", .string(d.port)), ("channel", .number(Double(d.channel))),
                    ("ildDB", number(i.ildDB)), ("itdSamples", number(i.itdSamples)),
                    ("itdMicroseconds", number(i.itdMicroseconds, 2)),
                    ("leftEnergyDB", number(i.leftEnergyDB)), ("rightEnergyDB", number(i.rightEnergyDB)),
                    ("itdAtSearchLimit", .bool(i.itdAtSearchLimit)),
                ])
            }))])
        }
        return .object([
            ("node", .string(o.node)), ("port", .string(o.port)), ("type", .string(o.typeID)),
            ("channels", .number(Double(m.format.channels))), ("layout", .string(m.format.layout.rawValue)),
            ("labels", .array(m.labels.map { .string($0) })),
            ("sampleRate", .number(m.format.sampleRate)), ("frames", .number(Double(m.frames))),
            ("integratedLUFS", number(m.integratedLUFS)), ("loudnessRangeLU", number(m.loudnessRangeLU)),
            ("truePeakDBTP", number(m.truePeakDBTP)), ("samplePeakDBFS", number(m.samplePeakDBFS)),
            ("gainDB", number(o.gainDB)), ("matchedTruePeakDBTP", number(o.matchedTruePeakDBTP)),
            ("correlations", .array(m.correlations.map { c in
                .object([("channels", .array([.string(c.labels.0), .string(c.labels.1)])), ("coefficient", number(c.coefficient, 6))])
            })),
            ("bandLevelsDB", .array(o.matchedBandLevelsDB.map { .array($0.map { number($0) }) })),
            ("impulses", impulses),
        ])
    }

    /// report.json: see docs/compare.md for every key.
    public var json: JSONOut {
        .object([
            ("format", .string(Self.reportFormat)),
            ("graph", .string(graphFile)),
            ("sampleRate", .number(sampleRate)),
            ("frames", .number(Double(frames))),
            ("durationSeconds", Self.number(seconds, 6)),
            ("ending", .string(Self.endingName(ending))),
            ("matchingOffsetDB", Self.number(matchingOffsetDB)),
            ("a", Self.json(a)),
            ("b", Self.json(b)),
            ("bands", .object([
                ("nominalHz", .array(bands.bands.map { .number($0.nominalHz) })),
                ("centreHz", .array(bands.bands.map { Self.number($0.centreHz, 3) })),
                ("lowerHz", .array(bands.bands.map { Self.number($0.lowerHz, 3) })),
                ("upperHz", .array(bands.bands.map { Self.number($0.upperHz, 3) })),
            ])),
            ("differenceDB", .array(differenceDB.map { .array($0.map { Self.number($0) }) })),
            ("method", .object([
                ("loudness", .string("ITU-R BS.1770-4 integrated loudness and EBU Tech 3342 loudness range (layout channel weights; binaural as stereo); BS.1770-4 Annex 2 true peak, 4x oversampled")),
                ("matching", .string("matchingOffsetDB = integratedLUFS(a) - integratedLUFS(b), applied to b before the spectral measures")),
                ("bands", .string("IEC 61260-1 base-10 one-third-octave bands from a Welch power spectrum (periodic Hann window, 50% overlap, real FFT by libavutil av_tx); bins split between bands by overlap; level = 10 log10(mean square in band)")),
                ("fftSize", .number(Double(a.measurements.fftSize))),
                ("segments", .number(Double(a.measurements.segments))),
                ("correlation", .string("Pearson correlation over the whole render of each left/right channel pair of the layout (L/R, Ls/Rs, Lb/Rb; channels 1 and 2 for discrete)")),
                ("ild", .string("10 log10(E_left / E_right) of each ear's impulse response energy; positive: left louder")),
                ("itd", .string("lag of the maximum of |sum_n left[n] right[n + lag]|, both responses low-passed at 1.5 kHz (linear-phase windowed sinc), within the search range (of equal peaks the shortest lag), refined by a parabola through three points; positive: left ear leads")),
                ("itdSearchMilliseconds", Self.number(options.maxITDSeconds * 1000)),
                ("impulseSeconds", Self.number(options.impulseSeconds, 6)),
            ])),
            ("notes", .array(notes.map { .string($0) })),
        ])
    }

    // MARK: text

    static func level(_ x: Double, _ digits: Int = 1) -> String { x.isFinite ? formatFixed(x, digits) : "-inf" }

    static func signed(_ x: Double, _ digits: Int = 1) -> String {
        guard x.isFinite else { return x.isNaN ? "n/a" : (x > 0 ? "+inf" : "-inf") }
        var s = formatFixed(x, digits)
        if s.hasPrefix("-") && s.dropFirst().allSatisfy({ $0 == "0" || $0 == "." }) { s.removeFirst() }
        return s.hasPrefix("-") ? s : "+" + s
    }

    /// Which ear hears an impulse that has no ILD: "L only", "R only" or "silent".
    static func silence(_ i: InterauralDifference) -> String {
        switch (i.leftEnergyDB.isFinite, i.rightEnergyDB.isFinite) {
        case (true, false): "L only"
        case (false, true): "R only"
        default: "silent"
        }
    }

    static func pad(_ s: String, _ width: Int, right: Bool = true) -> String {
        let n = s.count
        guard n < width else { return s }
        let space = String(repeating: " ", count: width - n)
        return right ? space + s : s + space
    }

    static func describe(_ o: ComparedOutput) -> String {
        let f = o.measurements.format
        return "'\(o.node)\(o.port == "out" ? "" : ":" + o.port)' (\(o.typeID), \(f.channels) ch \(f.layout))"
    }

    /// The summary printed by `agraph compare`: loudness, peaks, the
    /// offset, correlation, the band differences and ILD/ITD per direction.
    public var summary: String {
        var lines: [String] = []
        lines.append("A = \(Self.describe(a)), B = \(Self.describe(b))")
        let why = ending == .durationReached ? "duration reached" : "end of stream"
        lines.append("rendered \(formatFixed(seconds, 3)) s (\(frames) frames at \(Int(sampleRate)) Hz), \(why)")
        lines.append("")
        let w = 14
        func row(_ name: String, _ x: String, _ y: String) {
            lines.append(Self.pad(name, 20, right: false) + Self.pad(x, w) + Self.pad(y, w))
        }
        let ma = a.measurements, mb = b.measurements
        row("", "A", "B")
        row("integrated", Self.level(ma.integratedLUFS) + " LUFS", Self.level(mb.integratedLUFS) + " LUFS")
        row("loudness range", Self.level(ma.loudnessRangeLU) + " LU", Self.level(mb.loudnessRangeLU) + " LU")
        row("true peak", Self.level(ma.truePeakDBTP) + " dBTP", Self.level(mb.truePeakDBTP) + " dBTP")
        row("sample peak", Self.level(ma.samplePeakDBFS) + " dBFS", Self.level(mb.samplePeakDBFS) + " dBFS")
        row("true peak, matched", Self.level(a.matchedTruePeakDBTP) + " dBTP", Self.level(b.matchedTruePeakDBTP) + " dBTP")
        for (ca, cb) in zip(ma.correlations, mb.correlations) {
            row("correlation \(ca.labels.0)/\(ca.labels.1)", ca.coefficient.map { formatFixed($0, 3) } ?? "n/a",
                cb.coefficient.map { formatFixed($0, 3) } ?? "n/a")
        }
        if let offset = matchingOffsetDB {
            lines.append("matching offset: \(Self.signed(offset, 2)) dB applied to B")
        } else {
            lines.append("matching offset: none (loudness not measurable); spectra compared as rendered")
        }
        lines.append("")
        lines.append("1/3-octave levels, dB (B matched), and B − A:")
        let labels = ma.labels
        var header = Self.pad("Hz", 7)
        for l in labels { header += Self.pad("A \(l)", 8) + Self.pad("B \(l)", 8) + Self.pad("B−A \(l)", 9) }
        lines.append(header)
        for (k, band) in bands.bands.enumerated() {
            var line = Self.pad(ThirdOctaveBands.label(band.nominalHz), 7)
            for c in labels.indices {
                line += Self.pad(Self.level(a.matchedBandLevelsDB[c][k]), 8) + Self.pad(Self.level(b.matchedBandLevelsDB[c][k]), 8)
                    + Self.pad(Self.signed(differenceDB[c][k]), 9)
            }
            lines.append(line)
        }
        lines.append("")
        lines.append("inter-aural differences of impulses per input channel (ILD dB, + left louder; ITD µs, + left leads):")
        for o in [("A", a), ("B", b)] {
            switch o.1.impulses {
            case .skipped(let why):
                lines.append("  \(o.0): not measured: \(why)")
            case .measured(let directions):
                for d in directions {
                    let i = d.interaural
                    let name = "  \(o.0) \(Self.pad(d.label, 8, right: false))"
                    if let ild = i.ildDB, let itd = i.itdMicroseconds, let samples = i.itdSamples {
                        lines.append(name + "ILD \(Self.pad(Self.signed(ild, 2), 7)) dB   ITD \(Self.pad(Self.signed(itd, 1), 7)) µs (\(Self.signed(samples, 2)) samples)")
                    } else {
                        lines.append(name + "\(Self.silence(i)): no ILD or ITD")
                    }
                }
            }
        }
        if !notes.isEmpty {
            lines.append("")
            for n in notes { lines.append("note: \(n)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The files `writeReport(to:)` writes into its folder.
    public static let reportFiles = ["report.json", "index.html"]

    /// Writes `report.json` and `index.html` into `directory` (created with
    /// its parents when missing), each under a temporary name and renamed
    /// into place: a link planted at either name is replaced, never written
    /// through. [main-thread]
    /// - Throws: `ComparisonError` naming the file that could not be written.
    public func writeReport(to directory: String) throws(ComparisonError) {
        ThreadRole.check(.main)
        try Self.makeFolders(directory)
        try Self.write(json.rendered() + "\n", to: directory + "/report.json")
        try Self.write(html, to: directory + "/index.html")
    }

    static func makeFolders(_ path: String) throws(ComparisonError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw ComparisonError("cannot create the folder \(prefix): \(String(cString: strerror(errno)))")
            }
            prefix += "/"
        }
        var st = stat()
        if stat(path, &st) != 0 || (st.st_mode & S_IFMT) != S_IFDIR {
            throw ComparisonError("\(path) is not a folder")
        }
    }

    static func write(_ text: String, to path: String) throws(ComparisonError) {
        do {
            try AtomicFile.write(Array(text.utf8), to: path)
        } catch {
            throw ComparisonError("\(error)")
        }
    }
}
