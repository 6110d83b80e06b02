import AC4
import ArgumentParser
import AudioGraph

/// `agraph probe FILE.ac4`: the facts of an AC-4 sync-frame stream.
struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the facts of a stream file: for AC-4 (.ac4 sync frames) frames, duration, rates, versions, I-frames, CRC errors.",
        discussion: """
            Reads every sync frame, checks CRCs and resynchronises after damage. Sample rate and frame \
            rate are those of the first valid frame. Exits 1 when the file cannot be read or holds no \
            valid AC-4 frame; damage (CRC errors, skipped bytes, gaps, a truncated tail) is reported, \
            not an error.
            """)

    @Argument(help: "An .ac4 file.") var file: String

    @Flag(help: "Print JSON (stable key order) instead of text.") var json = false

    func run() throws {
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

    /// What can decode AC-4 here: the plugin providing `daa` and its own
    /// details (the DAA library it found and its version strings), or why
    /// there is none.
    static func decoder() -> String {
        guard let plugin = pluginReport.plugin(providing: "daa") else {
            return "no daa decoder plugin (\(pluginReport.note))"
        }
        let details = plugin.details.map { "; " + $0.split(separator: "\n").joined(separator: "; ") } ?? ""
        return "daa (\(plugin.name) \(plugin.version))\(details)"
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

    static func json(file: String, _ s: AC4Statistics, _ toc: AC4TOC, decoder: String) -> String {
        var w = JSONWriter()
        w.begin()
        w.field("file", .string(file))
        w.field("format", .string("ac4"))
        w.field("frames", .int(s.validFrames))
        w.field("durationSeconds", .number(s.durationSeconds, 6))
        w.field("samples", .int(s.totalSamples))
        w.field("sampleRate", .int(toc.sampleRate))
        w.begin("frameRate")
        w.field("index", .int(toc.frameRateIndex))
        w.field("framesPerSecond", .raw(fps(toc.framesPerSecond)))
        w.field("samplesPerFrame", .int(toc.samplesPerFrame))
        w.field("samplesPerFrameExact", .bool(toc.samplesPerFrameIsExact))
        w.end()
        w.field("bitstreamVersions", .raw("[" + s.bitstreamVersions.map(String.init).joined(separator: ", ") + "]"))
        w.field("framesWithCRC", .int(s.framesWithCRC))
        w.begin("iFrames")
        w.field("count", .int(s.iFrames))
        if let sp = s.iFrameSpacing {
            w.begin("spacing")
            w.field("min", .int(sp.min))
            w.field("max", .int(sp.max))
            w.field("typical", .int(sp.typical))
            w.end()
        } else {
            w.field("spacing", .raw("null"))
        }
        w.end()
        w.field("crcErrors", .int(s.crcErrors))
        w.field("skippedBytes", .int(s.skippedBytes))
        w.field("resyncs", .int(s.resyncs))
        w.field("sequenceGaps", .int(s.sequenceGaps))
        w.field("splices", .int(s.splices))
        if let t = s.truncatedTail {
            w.begin("truncatedTail")
            w.field("offset", .int(t.offset))
            w.field("bytes", .int(t.bytes))
            w.field("partialFrame", .bool(t.hasPartialFrame))
            w.end()
        } else {
            w.field("truncatedTail", .raw("null"))
        }
        w.field("decoder", .string(decoder))
        w.end()
        return w.text + "\n"
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

/// A tiny JSON writer that keeps keys in the order written, 2-space indent.
private struct JSONWriter {
    enum Value {
        case string(String), int(Int), number(Double, Int), bool(Bool), raw(String)
    }

    var text = ""
    private var depth = 0
    private var first = true

    private mutating func key(_ k: String) {
        text += first ? "\n" : ",\n"
        first = false
        text += String(repeating: "  ", count: depth) + Self.quote(k) + ": "
    }

    /// Opens an object: the top-level one (no key) or the value of `k`.
    mutating func begin(_ k: String? = nil) {
        if let k { key(k) }
        text += "{"
        depth += 1
        first = true
    }

    /// Closes the innermost object.
    mutating func end() {
        depth -= 1
        text += first ? "}" : "\n" + String(repeating: "  ", count: depth) + "}"
        first = false
    }

    mutating func field(_ k: String, _ v: Value) {
        key(k)
        switch v {
        case .string(let s): text += Self.quote(s)
        case .int(let i): text += String(i)
        case .number(let x, let digits): text += formatFixed(x, digits)
        case .bool(let b): text += b ? "true" : "false"
        case .raw(let r): text += r
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
