import Foundation

/// Why a graph could not be made (`Graph(contentsOf:registry:)`,
/// `Graph(jsonText:registry:)`, `GraphBuilder.build(registry:)`).
public enum GraphError: Error, Sendable, CustomStringConvertible {
    /// The document did not validate. The diagnostics are those `agraph
    /// validate` prints for the same document: each has the file, the JSON
    /// pointer of the value concerned (into the file, or into the builder's
    /// `jsonText`), its line and column, the node, and a message that says
    /// what would be right. Warnings come along with the errors.
    case invalid(file: String, diagnostics: [Diagnostic])
    /// The URL does not name a local file.
    case notAFile(URL)

    /// Every diagnostic (errors and warnings).
    public var diagnostics: [Diagnostic] {
        switch self {
        case .invalid(_, let d): d
        case .notAFile: []
        }
    }

    /// The diagnostics that are errors.
    public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }

    /// What to do: fix the values the diagnostics point at.
    public var suggestion: String {
        switch self {
        case .invalid(let file, _):
            "fix the values at the JSON pointers above in \(file) (each message says what is allowed); `agraph nodes TYPE` lists a node type's parameters and ports"
        case .notAFile:
            "give a file URL (URL(fileURLWithPath:))"
        }
    }

    /// One diagnostic a line, as `agraph validate` prints them, then the
    /// count of errors.
    public var description: String {
        switch self {
        case .invalid(let file, let diagnostics):
            let n = diagnostics.filter { $0.severity == .error }.count
            return (diagnostics.map(\.description) + ["\(file): \(n) error\(n == 1 ? "" : "s")"]).joined(separator: "\n")
        case .notAFile(let url):
            return "\(url) is not a file URL: \(suggestion)"
        }
    }
}

/// Why a render failed or stopped (`Graph.render(to:seconds:options:)`,
/// `Graph.render(seconds:options:)`). `description` says what happened
/// and `suggestion` what to do.
public enum RenderError: Error, Sendable, CustomStringConvertible {
    /// A source never ends and no duration was given.
    case endlessSources([String])
    /// The duration is not a positive number of seconds within a year.
    case invalidDuration(Double)
    /// `RenderOptions.blockFrames` is outside 64…16384.
    case invalidBlockFrames(Int)
    /// The graph has no sink to capture or record.
    case noSink
    /// `RenderOptions.sink` names no sink of the graph.
    case unknownSink(String, sinks: [String])
    /// The graph has several sinks and `RenderOptions.sink` chose none.
    case severalSinks([String])
    /// What reaches the chosen sink is not audio (coded frames) or there
    /// is nothing connected to it.
    case notAudio(sink: String, reason: String)
    /// The output file cannot be written there (its format, its folder, or
    /// it is a file the graph reads or writes).
    case output(path: String, reason: String)
    /// A node could not be made (a file that cannot be opened, a plugin
    /// that refused), or an analysis pass failed.
    case setup(nodeID: String?, message: String)
    /// Rendering failed on the way (an input that cannot be decoded, a full
    /// disk). Outputs already written are kept as the messages say.
    case failed(messages: [String], notices: [String])
    /// The render was cancelled (`RenderCancellation.cancel()` or the
    /// task's cancellation) after `framesRendered` frames; no output file
    /// was left, not even a partial one.
    case cancelled(framesRendered: Int)

    public var suggestion: String {
        switch self {
        case .endlessSources: "give a duration (seconds:), or let the sources end (a tone's \"duration\", a file that does not loop)"
        case .invalidDuration: "give a positive number of seconds, at most \(Int(FrameTime.maximumSeconds))"
        case .invalidBlockFrames: "give blockFrames from 64 to 16384 (1024 is the default)"
        case .noSink: "add a sink (null, file-out) and link what to render to it"
        case .unknownSink(_, let sinks), .severalSinks(let sinks): "choose one of \(sinks.joined(separator: ", ")) with RenderOptions(sink:)"
        case .notAudio: "choose a sink that receives audio, or decode the stream before it (an ffmpeg node)"
        case .output: "write to another file: a sound file path (.wav, .flac…) in a folder you can write, not one the graph reads or writes"
        case .setup: "fix what the message names (a file, a plugin, a parameter) and render again"
        case .failed: "fix or replace the input the messages name; onError \"skip\" on the source renders damaged input anyway"
        case .cancelled: "render again when wanted"
        }
    }

    public var description: String {
        let what = switch self {
        case .endlessSources(let ids): "\(ids.joined(separator: ", ")) never end\(ids.count == 1 ? "s" : "")"
        case .invalidDuration(let s): "the duration \(s) s is not a positive number of seconds up to \(Int(FrameTime.maximumSeconds))"
        case .invalidBlockFrames(let n): "blockFrames \(n) is outside 64…16384"
        case .noSink: "the graph has no sink"
        case .unknownSink(let id, let sinks): "no sink '\(id)'; sinks: \(sinks.joined(separator: ", "))"
        case .severalSinks(let sinks): "the graph has \(sinks.count) sinks (\(sinks.joined(separator: ", ")))"
        case .notAudio(let sink, let reason): "'\(sink)': \(reason)"
        case .output(let path, let reason): "cannot write \(path): \(reason)"
        case .setup(let id, let message): id.map { "node '\($0)': \(message)" } ?? message
        case .failed(let messages, _): messages.joined(separator: "; ")
        case .cancelled(let frames): "cancelled after \(frames) frames; no output was written"
        }
        return what + "; " + suggestion
    }
}
