import AudioGraph
import AudioGraphMedia

/// `agraph probe` for every container libavformat opens: the container,
/// its duration and bit rate, and each stream (codec, profile, rate,
/// channels and layout, duration, bit rate, language), with what decodes
/// each audio stream here.
enum MediaProbe {
    /// Whether `bytes` (a file's start) is an AC-4 sync-frame stream (sync
    /// word 0xAC40 or 0xAC41), which the AC-4 probe describes in depth.
    static func isAC4SyncFrames(path: String, start: [UInt8]) -> Bool {
        if path.lowercased().hasSuffix(".ac4") { return true }
        return start.count >= 2 && start[0] == 0xAC && (start[1] == 0x40 || start[1] == 0x41)
    }

    static func seconds(_ s: Double?) -> String { s.map { formatFixed($0, 3) + " s" } ?? "unknown" }

    static func rate(_ bits: Int) -> String { bits > 0 ? "\(formatFixed(Double(bits) / 1000, 0)) kb/s" : "unknown" }

    static func layout(_ s: MediaStream) -> String {
        let theirs = s.channelLayoutName.map { "\($0) → " } ?? ""
        return "\(s.channels) ch, \(theirs)\(s.layout)\(s.layoutIsDiscrete ? " (positions unknown to the project)" : "")"
    }

    static func text(_ f: MediaFile, decoders: (String) -> String) -> String {
        var out = "\(f.path)\n"
        out += "  container: \(f.containerLongName) (\(f.container))\n"
        out += "  duration:  \(seconds(f.durationSeconds))\n"
        out += "  bit rate:  \(rate(f.bitRate))\n"
        for s in f.streams {
            var line = "  stream \(s.index): \(s.kind), \(s.codec)"
            if let p = s.profile { line += " (\(p))" }
            if s.kind == "audio" {
                line += ", \(s.sampleRate) Hz, \(layout(s)), \(rate(s.bitRate)), \(seconds(s.durationSeconds))"
                if let l = s.language { line += ", language \(l)" }
                line += "\n    decoded by: \(decoders(s.codec))"
            } else if let l = s.language {
                line += ", language \(l)"
            }
            out += line + "\n"
        }
        if let best = f.bestAudioStream { out += "  best audio stream: \(best) (the media source's \"stream\": \"best\")\n" }
        return out
    }

    static func json(_ f: MediaFile, decoders: (String) -> String) -> String {
        func opt(_ d: Double?) -> JSONOut { d.map { .number(($0 * 1e6).rounded() / 1e6) } ?? .null }
        let streams: [JSONOut] = f.streams.map { s in
            var members: [(String, JSONOut)] = [
                ("index", .number(Double(s.index))), ("kind", .string(s.kind)), ("codec", .string(s.codec)),
                ("profile", s.profile.map { .string($0) } ?? .null),
            ]
            if s.kind == "audio" {
                members += [
                    ("sampleRate", .number(Double(s.sampleRate))), ("channels", .number(Double(s.channels))),
                    ("channelLayout", s.channelLayoutName.map { .string($0) } ?? .null),
                    ("layout", .string(s.layout.rawValue)), ("durationSeconds", opt(s.durationSeconds)),
                    ("bitRate", s.bitRate > 0 ? .number(Double(s.bitRate)) : .null),
                    ("decoder", .string(decoders(s.codec))),
                ]
            }
            members.append(("language", s.language.map { .string($0) } ?? .null))
            return .object(members)
        }
        let facts: JSONOut = .object([
            ("file", .string(f.path)),
            ("format", .string("media")),
            ("container", .string(f.container)),
            ("containerName", .string(f.containerLongName)),
            ("durationSeconds", opt(f.durationSeconds)),
            ("bitRate", f.bitRate > 0 ? .number(Double(f.bitRate)) : .null),
            ("bestAudioStream", f.bestAudioStream.map { .number(Double($0)) } ?? .null),
            ("streams", .array(streams)),
        ])
        return facts.rendered() + "\n"
    }
}
