import ArgumentParser
import AudioGraph
import AudioGraphTools
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `agraph render GRAPH --each NODE.PARAM=FILES… --output-dir DIR` was
/// asked, as parsed from the command line.
struct BatchRequest {
    var graph: String
    /// The `--set` items, as typed (passed on to every render).
    var settings: [String]
    /// Where each input goes.
    var address: ParameterAddress
    /// The inputs as given, in order; patterns not yet expanded.
    var inputs: [String]
    var outputDir: String
    var jobs: Int
    var shard: BatchShard?
    var duration: Double?
    var blockFrames: Int
    var quiet: Bool
    /// `--allow-damaged`, passed on to every render.
    var allowDamaged = false

    /// Splits `--each NODE.PARAM=FILE FILE…` into the address and the
    /// files. [main-thread]
    /// - Throws: `ValidationError` naming `--each` when the first item is
    ///   not `NODE.PARAM=…` or no file is given.
    static func inputs(_ each: [String]) throws(ValidationError) -> (ParameterAddress, [String]) {
        guard let first = each.first else { throw ValidationError("--each needs NODE.PARAM=FILES…") }
        let head = try ParameterOverrides.parse(first, flag: "--each")
        let inputs = (head.text.isEmpty ? [] : [head.text]) + each.dropFirst()
        if inputs.isEmpty {
            throw ValidationError("--each '\(first)': no input files; write --each \(head.node).\(head.parameter)=FILE FILE…")
        }
        return (ParameterAddress(node: head.node, parameter: head.parameter, element: head.element), inputs)
    }

    /// Renders at a time by default: the processors this process may run
    /// on (its CPU affinity, as a Slurm allocation sets it, and cgroup
    /// quotas where Foundation reads them). [any-thread]
    static func availableProcessors() -> Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }
}

/// `--shard I/N`: inputs I, I+N, I+2N… of the list (`BatchShard`).
typealias Shard = BatchShard

/// `--shard I/N` as typed on the command line.
extension BatchShard {
    /// [main-thread]
    /// - Throws: `ValidationError` naming `--shard` unless `text` is `I/N`
    ///   with whole numbers 0 ≤ I < N.
    init(parsing text: String) throws(ValidationError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]),
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && !$0.hasPrefix("+") }) else {
            throw ValidationError("--shard '\(text)': expected I/N, two whole numbers with 0 ≤ I < N (e.g. --shard 0/4 … --shard 3/4)")
        }
        guard n >= 1 else { throw ValidationError("--shard '\(text)': N, the number of shards, must be at least 1") }
        guard let shard = BatchShard(index: i, count: n) else {
            throw ValidationError("--shard '\(text)': I must be from 0 to \(n - 1); shards are numbered from 0, like SLURM_ARRAY_TASK_ID of --array=0-\(n - 1) and JOB_COMPLETION_INDEX")
        }
        self = shard
    }
}

/// `agraph render --each`: `BatchRun` (AudioGraphTools) renders; this
/// prints what it says and picks the exit status. [main-thread]
struct Batch {
    let request: BatchRequest

    init(_ request: BatchRequest) { self.request = request }

    /// Plans, renders every input of the shard, and reports on stderr.
    /// - Throws: `ExitCode.failure` when the plan is refused (nothing is
    ///   rendered then) or an input failed; `ExitCode(130)` when
    ///   interrupted.
    func run() throws {
        let options = BatchRun.Options(
            graph: request.graph, settings: request.settings, overrides: try ParameterOverrides.parse(request.settings),
            address: request.address, inputs: request.inputs, outputDir: request.outputDir, jobs: request.jobs,
            shard: request.shard, duration: request.duration, blockFrames: request.blockFrames,
            allowDamaged: request.allowDamaged, executable: RenderChild.currentExecutable, registry: standardRegistry())
        let batch = BatchRun(options)
        let quiet = request.quiet
        let say = { (event: BatchRun.Event) in
            if !quiet || event.shownWhenQuiet { event.lines.forEach(printError) }
        }
        let prepared: BatchRun.Prepared
        do {
            prepared = try batch.prepare(message: say)
        } catch {
            error.lines.forEach(printError)
            throw ExitCode.failure
        }
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interruptRequested.store(true, ordering: .relaxed) }
        let report = batch.render(prepared, cancelled: { interruptRequested.load(ordering: .relaxed) }, message: say)
        report.lines(quiet: quiet).forEach(printError)
        if report.interrupted { throw ExitCode(130) }
        if !report.failures.isEmpty { throw ExitCode.failure }
    }
}
