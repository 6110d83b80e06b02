// agraph-bench scale: what a node costs as graphs grow from 10 to 10,000
// nodes: a chain of `gain` nodes and a tree of mixers over as many tones,
// each rendered offline by `agraph render` as a child process. CPU per node
// per second of audio, wall, x real time, peak memory and memory per node.
// See docs/performance.md.
import ArgumentParser
import CPrefetch
import Foundation
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// `agraph-bench scale` (issue #24, "Scale"). [main-thread]
struct ScaleBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Cost per node from 10 to 10,000 nodes: a chain of gain nodes and a tree of mixers over N tones, rendered by agraph render.",
        discussion: """
            Graphs (48 kHz, stereo, block --block-frames): the baseline, one test-tone → null; the \
            chain, test-tone → N × gain (-0.001 dB each) → null; the tree, N test-tones (distinct \
            frequencies, -60 dB) → mixers of at most --fan-in inputs → … → one mixer → null. The \
            tones last --seconds. Each graph is rendered by `agraph render GRAPH --block-frames B` as \
            a child process: wall clock, CPU (user + system, all threads, wait4) and peak memory \
            (VmHWM at its exit); every job (baseline, each shape at each N) takes its turn once per run. \
            Per node: (CPU(N) − CPU(baseline)) / nodes added / seconds of audio, medians over the \
            runs, so the start-up, the tone and the sink the baseline has are not counted; nodes \
            added: N for the chain, N − 1 tones + the mixers for the tree. A whole process's CPU \
            varies by more than 10 nodes cost (start-up is ~0.1 s of CPU), so each graph is also \
            rendered in this process, validated and compiled untimed, the render alone timed \
            (getrusage of this process, every thread; the same library calls as agraph render), \
            taking its turn beside the processes: that render-only figure, minus the baseline's, \
            is the one the flat-cost aim is judged on. Memory per node: (peak(N) − peak(baseline)) \
            / nodes added, from the processes; it includes each node's own state, and a difference \
            under 1 MiB is within the noise of a process's peak (VmHWM at its exit). A process's \
            peak includes the JSON document while it is validated, so the in-process render also \
            reads the heap (glibc's blocks in use) after validating and after compiling, and makes \
            every node again apart to count what makeNode allocates: per node, the validated graph \
            (model), the nodes' own state, the engine (compiling's heap beyond the nodes' state) \
            and model + engine, beyond the node's own state; the memory aim (< 1 KiB) is judged on \
            its growth from one N to the next, per node added.
            """)

    @Option(help: "Node counts, comma-separated.") var nodes: String = "10,100,1000,10000"
    @Option(help: "Seconds of audio rendered per job.") var seconds: Double = 10
    @Option(help: "Timed runs of each job.") var runs: Int = 3
    @Option(help: "Inputs per mixer in the tree (mixers of at most this many inputs feed the next level).") var fanIn: Int = 64
    @Option(help: "Shapes to run: chain, tree (comma-separated).") var shapes: String = "chain,tree"
    @Option(help: "Frames per block (64…16384).") var blockFrames: Int = 1024
    @Flag(help: "Keep the temporary folder with the graphs.") var keep = false
    @Flag(help: "Pin every job to one CPU, as taskset -c 0 would.") var oneCore = false

    var counts: [Int] { nodes.split(separator: ",").compactMap { Int($0.trimmingCharacters()) } }
    var shapeList: [String] { shapes.split(separator: ",").map { $0.trimmingCharacters() } }

    func validate() throws {
        let parts = nodes.split(separator: ",")
        if parts.isEmpty || counts.count != parts.count || counts.contains(where: { !(1...1_000_000).contains($0) }) {
            throw ValidationError("--nodes takes counts from 1 to 1000000, comma-separated (e.g. 10,100,1000,10000)")
        }
        if !(seconds > 0 && seconds <= 3600) { throw ValidationError("--seconds must be in (0, 3600]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if fanIn < 2 { throw ValidationError("--fan-in must be at least 2") }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
        if shapeList.isEmpty || shapeList.contains(where: { !["chain", "tree"].contains($0) }) {
            throw ValidationError("--shapes takes chain, tree (comma-separated)")
        }
    }

    static let rate = 48000

    static func tone(_ id: String, frequency: Double, level: Double, seconds: Double) -> String {
        #"{"id": "\#(id)", "type": "test-tone", "params": {"waveform": "sine", "frequency": \#(frequency), "level": \#(level), "channels": 2, "duration": \#(seconds)}}"#
    }

    static func document(_ name: String, nodes: [String], links: [String]) -> String {
        #"{"format": "agraph/1", "name": "\#(name)", "sampleRate": \#(rate),"# + "\n \"nodes\": [\n  "
            + nodes.joined(separator: ",\n  ") + "],\n \"links\": [\n  " + links.joined(separator: ",\n  ") + "]}\n"
    }

    /// test-tone → null: what every graph has besides the nodes counted.
    static func baselineJSON(seconds: Double) -> String {
        document("scale-baseline", nodes: [tone("tone", frequency: 1000, level: -6, seconds: seconds), #"{"id": "sink", "type": "null"}"#],
                 links: [#"{"from": "tone", "to": "sink"}"#])
    }

    /// test-tone → n gain nodes → null.
    static func chainJSON(n: Int, seconds: Double) -> String {
        var nodes = [tone("tone", frequency: 1000, level: -6, seconds: seconds)]
        var links: [String] = []
        var previous = "tone"
        for i in 0..<n {
            nodes.append(#"{"id": "g\#(i)", "type": "gain", "params": {"gain": -0.001}}"#)
            links.append(#"{"from": "\#(previous)", "to": "g\#(i)"}"#)
            previous = "g\(i)"
        }
        nodes.append(#"{"id": "sink", "type": "null"}"#)
        links.append(#"{"from": "\#(previous)", "to": "sink"}"#)
        return document("scale-chain-\(n)", nodes: nodes, links: links)
    }

    /// n test-tones → mixers of at most `fanIn` inputs, level by level, to
    /// one mixer → null. Returns the JSON and the number of mixers.
    static func treeJSON(n: Int, fanIn: Int, seconds: Double) -> (String, Int) {
        var nodes: [String] = []
        var links: [String] = []
        var level = (0..<n).map { i -> String in
            nodes.append(tone("t\(i)", frequency: 100 + Double(i % 1000) * 7.3, level: -60, seconds: seconds))
            return "t\(i)"
        }
        var mixers = 0
        repeat {
            var next: [String] = []
            for start in stride(from: 0, to: level.count, by: fanIn) {
                let group = level[start..<min(start + fanIn, level.count)]
                let id = "m\(mixers)"
                mixers += 1
                nodes.append(#"{"id": "\#(id)", "type": "mixer", "params": {"inputs": \#(group.count)}}"#)
                for (k, from) in group.enumerated() { links.append(#"{"from": "\#(from)", "to": "\#(id):in\#(k)"}"#) }
                next.append(id)
            }
            level = next
        } while level.count > 1
        nodes.append(#"{"id": "sink", "type": "null"}"#)
        links.append(#"{"from": "\#(level[0])", "to": "sink"}"#)
        return (document("scale-tree-\(n)", nodes: nodes, links: links), mixers)
    }

    struct Case {
        var shape: String   // "baseline", "chain", "tree"
        var n: Int
        var added: Int      // nodes beyond the baseline's
        var jobIndex: Int
        /// The in-process render-only job of the same graph.
        var renderIndex: Int
        /// What its compiled graph holds on the heap.
        var heap = Heap()
    }

    /// What a graph holds on the heap once compiled, in bytes (glibc's
    /// count of blocks in use, read before and after each stage of
    /// `renderOnly`). [main-thread]
    final class Heap {
        /// The validated graph (`ValidatedGraph`: nodes, parameters, links),
        /// the JSON it came from already freed.
        var model = 0
        /// What compiling added: node objects with their own state, steps,
        /// buses, the schedule and its tables.
        var compiled = 0
        /// What the nodes' `makeNode` allocates, measured apart (each node
        /// made again and kept until all are counted): their own state.
        var nodes = 0
        var buses = 0
        var measured = false
    }

    /// Validates and compiles `json` (untimed), then renders it to the end
    /// timed: the render alone, CPU of this process (all threads). Records
    /// the heap each stage holds in `heap`. [main-thread]
    func renderOnly(json: String, directory: String, frames: Int, heap: Heap) -> Result<(Sample, String), BenchError> {
        let h0 = heapInUse()
        let graph: ValidatedGraph
        switch GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "scale.json", directory: directory) {
        case .success(let g): graph = g
        case .failure(let e): return .failure(BenchError(message: "graph invalid:\n\(e)"))
        }
        let h1 = heapInUse()
        let compiled: CompiledGraph
        do { compiled = try GraphCompiler.compile(graph, maxFrames: blockFrames) } catch {
            return .failure(BenchError(message: "compile: \(error)"))
        }
        let h2 = heapInUse()
        if !heap.measured, h0 >= 0 {
            var made: [any RenderNode] = []
            made.reserveCapacity(graph.nodes.count)
            let h3 = heapInUse()
            for node in graph.nodes {
                let context = InstanceContext(nodeID: node.id, parameters: node.parameters, inputFormats: node.inputFormats,
                                              outputFormat: node.outputFormat, sampleRate: graph.sampleRate,
                                              directory: graph.directory, inputNodes: [], live: false,
                                              outputFormats: node.outputFormats, registry: graph.registry)
                guard let n = try? node.type.makeNode(context) else { break }
                made.append(n)
            }
            let h4 = heapInUse()
            if made.count == graph.nodes.count {
                heap.model = h1 - h0
                heap.compiled = h2 - h1
                heap.nodes = h4 - h3
                heap.buses = compiled.engine.busCount
                heap.measured = true
            }
        }
        let (result, sample) = measureInProcess { OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames).run() }
        if !result.finishErrors.isEmpty { return .failure(BenchError(message: result.finishErrors.joined(separator: "; "))) }
        guard result.frames == frames else { return .failure(BenchError(message: "rendered \(result.frames) frames, expected \(frames)")) }
        return .success((sample, "ok, \(frames) frames"))
    }

    func run() throws {
        let coreLine = try applyOneCore(oneCore)
        guard let agraph = siblingExecutable("agraph") else {
            print("agraph-bench scale: agraph not built beside agraph-bench (swift build -c release --product agraph)")
            throw ExitCode.failure
        }
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        let frames = Int((seconds * Double(Self.rate)).rounded())
        print("agraph-bench scale: agraph render of \(formatFixed(seconds, 1)) s at \(Self.rate / 1000) kHz stereo, block \(blockFrames); "
              + "N = \(counts.map(String.init).joined(separator: ", ")); shapes \(shapeList.joined(separator: ", ")); mixer fan-in \(fanIn); "
              + "\(runs) run\(runs == 1 ? "" : "s") each, taking turns")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        print("")

        var jobs: [TimedJob] = []
        var cases: [Case] = []
        func add(_ shape: String, n: Int, added: Int, json: String) throws {
            let path = dir + "/\(shape)-\(n).json"
            try writeText(json, to: path)
            let err = dir + "/\(shape)-\(n).err"
            let heap = Heap()
            cases.append(Case(shape: shape, n: n, added: added, jobIndex: jobs.count, renderIndex: jobs.count + 1, heap: heap))
            let label = shape == "baseline" ? "baseline: test-tone → null" : "\(shape), N = \(n)"
            defer {
                jobs.append(TimedJob(name: label + ", in-process render only", audioSeconds: seconds) {
                    self.renderOnly(json: json, directory: dir, frames: frames, heap: heap)
                })
            }
            jobs.append(TimedJob(name: label + ", agraph render", audioSeconds: seconds) {
                processRun(agraph, ["render", path, "--block-frames", "\(self.blockFrames)"], outputs: [], stderr: err, peakMemory: true).flatMap { s in
                    let text = readText(err) ?? ""
                    guard let r = text.range(of: "rendered "), let got = Int(text[r.upperBound...].prefix(while: \.isNumber)) else {
                        return .failure(BenchError(message: "no 'rendered N frames' line: " + text.split(separator: "\n").prefix(2).joined(separator: " / ")))
                    }
                    return got == frames ? .success((s, "ok, \(got) frames"))
                        : .failure(BenchError(message: "rendered \(got) frames, expected \(frames)"))
                }
            })
        }
        try add("baseline", n: 0, added: 0, json: Self.baselineJSON(seconds: seconds))
        for n in counts {
            if shapeList.contains("chain") { try add("chain", n: n, added: n, json: Self.chainJSON(n: n, seconds: seconds)) }
            if shapeList.contains("tree") {
                let (json, mixers) = Self.treeJSON(n: n, fanIn: fanIn, seconds: seconds)
                try add("tree", n: n, added: n - 1 + mixers, json: json)
            }
        }

        runInTurns(&jobs, runs: runs)
        printTimingTable(jobs)

        let base = jobs[cases[0].jobIndex]
        guard base.usable else {
            print("\nthe baseline failed: \(base.status)")
            throw ExitCode.failure
        }
        let baseRender = jobs[cases[0].renderIndex]
        guard baseRender.usable else {
            print("\nthe baseline's in-process render failed: \(baseRender.status)")
            throw ExitCode.failure
        }
        let baseCPU = base.cpu.median, baseRSS = Stats(base.samples.map { Double($0.maxRSSKiB) }).median
        let baseRenderCPU = baseRender.cpu.median
        print("")
        print("baseline (test-tone → null): agraph render CPU \(formatFixed(baseCPU * 1000, 1)) ms, wall \(formatFixed(base.wall.median * 1000, 1)) ms, "
              + "peak \(formatFixed(baseRSS / 1024, 1)) MiB; render alone in-process CPU \(formatFixed(baseRenderCPU * 1000, 2)) ms (medians); subtracted below")
        for shape in shapeList {
            print("")
            print(shape == "chain" ? "chain: test-tone → N × gain → null" : "tree: N test-tones → mixers of ≤ \(fanIn) inputs → … → null")
            let header = ["N", "nodes added", "wall s", "x real time", "CPU s", "µs/node/audio s", "render only: CPU s", "µs/node/audio s", "÷ first N", "peak MiB", "KiB/node"]
            var table = [header]
            var first: Double?
            var verdicts: [String] = []
            for c in cases where c.shape == shape {
                let j = jobs[c.jobIndex], r = jobs[c.renderIndex]
                guard j.usable, r.usable else {
                    table.append(["\(c.n)", "\(c.added)", "-", "-", "-", "-", "-", "-", "-", "-", j.usable ? r.status : j.status])
                    continue
                }
                let perNodeProcess = (j.cpu.median - baseCPU) / Double(c.added) / seconds * 1e6
                let perNode = (r.cpu.median - baseRenderCPU) / Double(c.added) / seconds * 1e6
                if first == nil { first = perNode }
                let rss = Stats(j.samples.map { Double($0.maxRSSKiB) }).median
                let unmeasured = j.samples.contains { $0.maxRSSKiB < 0 } || base.samples.contains { $0.maxRSSKiB < 0 }
                let perNodeKiB = (rss - baseRSS) / Double(c.added)
                let ratio = perNode / (first ?? perNode)
                table.append(["\(c.n)", "\(c.added)", formatFixed(j.wall.median, 2), formatFixed(seconds / j.wall.median, 1) + "x",
                              formatFixed(j.cpu.median, 2), formatFixed(perNodeProcess, 2), formatFixed(r.cpu.median, 3),
                              formatFixed(perNode, 2), formatFixed(ratio, 2), unmeasured ? "-" : formatFixed(rss / 1024, 1),
                              unmeasured ? "-" : formatFixed(perNodeKiB, 2)])
                let memory = unmeasured ? "not measured (ptrace refused: no exit stop to read VmHWM)"
                    : rss - baseRSS < 1024 ? "within the noise (Δ < 1 MiB)" : "\(formatFixed(perNodeKiB, 2)) KiB/node"
                verdicts.append("N = \(c.n): render only \(formatFixed(perNode, 2)) µs/node/audio s, ÷ first N \(formatFixed(ratio, 2)) "
                                + "(aim ≤ 1.50: \(ratio <= 1.5 ? "met" : "NOT met")); process peak \(memory) "
                                + "(the JSON document while it is validated and the node state included; the memory aim is judged on the heap below)")
            }
            AC4Probe.printColumns(table)
            print("aims: CPU per node (render only) at every N within 1.5× of the first N's (\(counts.first.map(String.init) ?? "-")-node) figure; "
                  + "memory per node < 1 KiB beyond the node's own state (judged on the compiled graph's heap, below)")
            for v in verdicts { print("  " + v) }
            // The heap a compiled graph holds, per node added.
            let baseHeap = cases[0].heap
            let baseBeyond = baseHeap.model + baseHeap.compiled - baseHeap.nodes
            var heapTable = [["N", "buses", "model B/node", "node state B/node", "engine B/node", "beyond own state B/node",
                              "growth B/node", "aim < 1024"]]
            // Growth: what each node added since the previous N costs beyond
            // its own state (Δ heap / Δ nodes): how memory grows with the
            // graph, as the issue measured it, free of what the graph's
            // shape holds whatever its size (a mixer tree's fan-in of buses).
            var previous: (added: Int, beyond: Int)?
            for c in cases where c.shape == shape {
                let h = c.heap
                guard h.measured, baseHeap.measured else {
                    heapTable.append(["\(c.n)", "-", "-", "-", "-", "-", "-", "not measured"])
                    continue
                }
                let per = { (bytes: Int) in Double(bytes) / Double(c.added) }
                let beyondBytes = h.model + h.compiled - h.nodes - baseBeyond
                var growth = "-", verdict = "(first N)"
                if let p = previous, c.added > p.added {
                    let g = Double(beyondBytes - p.beyond) / Double(c.added - p.added)
                    growth = formatFixed(g, 0)
                    verdict = c.added - p.added < 500 ? "(Δ nodes < 500: noise)" : g < 1024 ? "met" : "NOT met"
                }
                heapTable.append(["\(c.n)", "\(h.buses)", formatFixed(per(h.model), 0), formatFixed(per(h.nodes), 0),
                                  formatFixed(per(h.compiled - h.nodes), 0), formatFixed(per(beyondBytes), 0), growth, verdict])
                previous = (c.added, beyondBytes)
            }
            print("")
            print("heap once compiled, bytes per node added (in-process: glibc's blocks in use after validating, after compiling, and the nodes made again apart;")
            print("  model = the validated graph, its JSON freed; node state = what makeNode allocates; engine = compiling's heap beyond the node state:")
            print("  steps, buses, schedule; beyond own state = model + engine, the baseline graph's subtracted; growth = its change from the")
            print("  previous N per node added, on which the aim is judged)")
            AC4Probe.printColumns(heapTable)
        }
        print("")
        printLoad("at end")
        if jobs.contains(where: \.failed) { throw ExitCode.failure }
    }
}

/// Bytes of the heap in use (CPrefetch's agraph_heap_in_use). [any-thread]
func heapInUse() -> Int { Int(agraph_heap_in_use()) }
