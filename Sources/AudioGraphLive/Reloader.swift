import AudioGraph
import AudioGraphJACK

/// `agraph run`'s hot reload: validates the file (diagnostics printed as
/// `agraph validate` prints them; the running graph plays on), then hands it
/// to `RunningGraph.reload` and prints what changed. One reload at a time:
/// the main thread (the prompt, SIGHUP, --watch) and the OSC thread
/// (`/agraph/reload`) both call it. [main-thread | control-thread]
public final class Reloader: @unchecked Sendable {
    public let live: RunningGraph
    /// The node types a reloaded file is validated against.
    public let registry: @Sendable () -> NodeRegistry
    public let overrides: [ParameterOverride]
    public let crossfadeMs: Double
    public let output: TextOutput
    /// The file reloaded by default (the last one loaded), and how many
    /// reloads have succeeded.
    private let state: Locked<(file: String, count: Int)>

    /// Why a reload did not happen, with the file's diagnostics.
    public struct Failure: Error, CustomStringConvertible {
        /// The diagnostics, then the verdict (as the console prints them).
        public var lines: [String]
        /// The verdict first (an OSC reply may be cut short), then the diagnostics.
        public var description: String { (lines.suffix(1) + lines.dropLast()).joined(separator: "\n") }
    }

    public init(live: RunningGraph, registry: @escaping @Sendable () -> NodeRegistry, file: String,
                overrides: [ParameterOverride], crossfadeMs: Double, output: TextOutput = .standard) {
        self.live = live
        self.registry = registry
        self.overrides = overrides
        self.crossfadeMs = crossfadeMs
        self.output = output
        state = Locked((file, 0))
    }

    /// The file a reload without one reads.
    public var file: String { state.withLock { $0.file } }
    /// Reloads that succeeded so far.
    public var count: Int { state.withLock { $0.count } }

    /// Reloads `file` (nil: the current one), printing what happened.
    /// Returns whether the new graph runs.
    @discardableResult
    public func reload(file other: String?) -> Bool {
        do {
            output.error("agraph: \(try attempt(file: other))")
            return true
        } catch {
            for line in error.lines { output.error(line) }
            return false
        }
    }

    /// Reloads `file` (nil: the current one) and says what changed; the
    /// failure holds the diagnostics, the running graph playing on.
    public func attempt(file other: String?) throws(Failure) -> ReloadReport {
        try state.withLock { (state) throws(Failure) -> ReloadReport in
            let path = other ?? state.file
            switch GraphValidator(registry: registry()).validate(file: path, overrides: overrides) {
            case .failure(let errors):
                let n = errors.errors.count
                throw Failure(lines: errors.diagnostics.map(\.description)
                              + ["\(path): \(n) error\(n == 1 ? "" : "s")",
                                 "agraph: reload: \(path) not loaded; the running graph plays on"])
            case .success(let g):
                for w in g.warnings { output.error(w.description) }
                do {
                    let report = try live.reload(graph: g, crossfadeMs: crossfadeMs)
                    state = (path, state.count + 1)
                    return report
                } catch {
                    // The library's reasons often say "reload:" themselves: once is enough.
                    let reason = "\(error)"
                    throw Failure(lines: ["agraph: \(reason.hasPrefix("reload: ") ? "" : "reload: ")\(reason); the running graph plays on"])
                }
            }
        }
    }
}
