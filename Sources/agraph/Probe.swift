import AC4
import ArgumentParser
import AudioGraph
import AudioGraphMedia
#if canImport(Glibc)
import Glibc
#endif

/// `agraph probe FILE.ac4`: the facts of an AC-4 sync-frame stream.
struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Print the facts of a media file: its container and streams (codecs, layouts, durations, bit rates, what decodes them); for AC-4 sync frames (.ac4) frames, rates, versions, I-frames, CRC errors.",
        discussion: """
            Reads every sync frame, checks CRCs and resynchronises after damage. Sample rate and frame \
            rate are those of the first valid frame. Exits 1 when the file cannot be read or holds no \
            valid AC-4 frame; damage (CRC errors, skipped bytes, gaps, a truncated tail) is reported, \
            not an error.
            """)

    @Argument(help: "An .ac4 file, or any media file FFmpeg opens.") var file: String

    @Flag(help: "Print JSON (stable key order) instead of text.") var json = false

    func run() throws {
        // A FIFO or device would block the open below (or read without end).
        if let problem = FileChecks.readableFileProblem(file) {
            printError("agraph: \(file): \(problem)")
            throw ExitCode.failure
        }
        var start = [UInt8](repeating: 0, count: 2)
        if let f = fopen(file, "rb") {
            start = start.count == fread(&start, 1, 2, f) ? start : []
            fclose(f)
        }
        if !MediaProbe.isAC4SyncFrames(path: file, start: start) {
            let media: MediaFile
            do {
                media = try MediaFile(path: file)
            } catch {
                printError("agraph: \(error)")
                throw ExitCode.failure
            }
            let decoders = { (codec: String) in Self.decoder(codec: codec, details: false) }
            writeStdout(json ? MediaProbe.json(media, decoders: decoders) : MediaProbe.text(media, decoders: decoders))
            return
        }
        let reader: AC4FileReader
        do {
            reader = try AC4FileReader(path: file)
        } catch {
            printError("agraph: \(error)")
            throw ExitCode.failure
        }
        let stats = reader.readAll().statistics
        guard let toc = stats.firstTOC else {
            printError("agraph: \(file): no valid AC-4 sync frame in \(reader.bytes.count) byte\(reader.bytes.count == 1 ? "" : "s")")
            throw ExitCode.failure
        }
        writeStdout(json ? Self.json(file: file, stats, toc, decoder: Self.decoder())
                         : Self.text(file: file, stats, toc, decoder: Self.decoder()))
    }

    /// "23.4375", "29.97", "24": frames per second without trailing zeros.
    static func fps(_ x: Double) -> String {
        var s = formatFixed(x, 4)
        while s.hasSuffix("0") { s.removeLast() }
        if s.hasSuffix(".") { s.removeLast() }
        return s
    }

    /// What can decode AC-4 sync frames here: the node types whose input
    /// takes the `ac4-sync` codec (asked of the registry, not named here),
    /// with their plugin's own details (AGRAPH_EXT_PLUGIN_INFO: for `daa`,
    /// the DAA library found and its version strings), or why there is none.
    static func decoder(codec: String = "ac4-sync", details withDetails: Bool = true) -> String {
        let decoders = standardRegistry().types.map(\.descriptor).filter { $0.inputCodecs.contains(codec) }
        guard !decoders.isEmpty else { return "no decoder for \(codec) frames (\(pluginReport.note))" }
        return decoders.map { d in
            guard let plugin = pluginReport.plugin(providing: d.typeID) else { return d.typeID }
            let details = withDetails ? plugin.details.map { "; " + $0.split(separator: "\n").joined(separator: "; ") } ?? "" : ""
            return "\(d.typeID) (\(plugin.name) \(plugin.version))\(details)"
        }.joined(separator: " | ")
    }

    static func text(file: String, _ s: AC4Statistics, _ toc: AC4TOC, decoder: String) -> String {
        var lines: [(String, String)] = []
        let crc = s.framesWithCRC == s.validFrames ? "all frames" : s.framesWithCRC == 0 ? "none" : "\(s.framesWithCRC) of \(s.validFrames) frames"
        lines.append(("format", "AC-4 sync frames (CRC: \(crc))"))
        lines.append(("frames", "\(s.validFrames)"))
        lines.append(("duration", "\(formatFixed(s.durationSeconds, 3)) s (\(s.totalSamples) samples)"))
        lines.append(("sample rate", "\(toc.sampleRate) Hz"))
        let approx = toc.samplesPerFrameIsExact ? "" : " (approx. \(formatFixed(toc.exactSamplesPerFrame, 1)))"
        lines.append(("frame rate", "\(fps(toc.framesPerSecond)) fps (index \(toc.frameRateIndex)), \(toc.samplesPerFrame) samples per frame\(approx)"))
        lines.append(("bitstream version", s.bitstreamVersions.map(String.init).joined(separator: ", ")))
        var iframes = "\(s.iFrames)"
        if let sp = s.iFrameSpacing {
            iframes += ", every \(sp.typical) frames (min \(sp.min), max \(sp.max))"
        } else if let first = s.iFrameIndices.first {
            iframes += " (frame \(first))"
        }
        lines.append(("I-frames", iframes))
        lines.append(("CRC errors", "\(s.crcErrors)"))
        lines.append(("skipped bytes", "\(s.skippedBytes) (\(s.resyncs) resync\(s.resyncs == 1 ? "" : "s"))"))
        lines.append(("sequence gaps", "\(s.sequenceGaps) (\(s.splices) splice\(s.splices == 1 ? "" : "s"))"))
        if let t = s.truncatedTail {
            let what = t.partialFrameOffset.map { "partial frame at byte \($0)" } ?? "no frame"
            lines.append(("truncated tail", "\(t.bytes) bytes at byte \(t.offset) (\(what))"))
        } else {
            lines.append(("truncated tail", "none"))
        }
        lines.append(("decoder", decoder))
        let width = lines.map(\.0.count).max()! + 2
        var out = "\(file)\n"
        for (k, v) in lines { out += "  " + (k + ":").padding(width) + v + "\n" }
        return out
    }

    /// The facts as JSON, keys in a stable order (`JSONOut` keeps them).
    static func json(file: String, _ s: AC4Statistics, _ toc: AC4TOC, decoder: String) -> String {
        let spacing: JSONOut = s.iFrameSpacing.map {
            .object([("min", .number(Double($0.min))), ("max", .number(Double($0.max))), ("typical", .number(Double($0.typical)))])
        } ?? .null
        let tail: JSONOut = s.truncatedTail.map {
            .object([("offset", .number(Double($0.offset))), ("bytes", .number(Double($0.bytes))),
                     ("partialFrame", .bool($0.hasPartialFrame))])
        } ?? .null
        let facts: JSONOut = .object([
            ("file", .string(file)),
            ("format", .string("ac4")),
            ("frames", .number(Double(s.validFrames))),
            ("durationSeconds", .number((s.durationSeconds * 1e6).rounded() / 1e6)),
            ("samples", .number(Double(s.totalSamples))),
            ("sampleRate", .number(Double(toc.sampleRate))),
            ("frameRate", .object([
                ("index", .number(Double(toc.frameRateIndex))),
                ("framesPerSecond", .number(toc.framesPerSecond)),
                ("samplesPerFrame", .number(Double(toc.samplesPerFrame))),
                ("samplesPerFrameExact", .bool(toc.samplesPerFrameIsExact)),
            ])),
            ("bitstreamVersions", .array(s.bitstreamVersions.map { .number(Double($0)) })),
            ("framesWithCRC", .number(Double(s.framesWithCRC))),
            ("iFrames", .object([("count", .number(Double(s.iFrames))), ("spacing", spacing)])),
            ("crcErrors", .number(Double(s.crcErrors))),
            ("skippedBytes", .number(Double(s.skippedBytes))),
            ("resyncs", .number(Double(s.resyncs))),
            ("sequenceGaps", .number(Double(s.sequenceGaps))),
            ("splices", .number(Double(s.splices))),
            ("truncatedTail", tail),
            ("decoder", .string(decoder)),
        ])
        return facts.rendered() + "\n"
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
