import ArgumentParser
import AudioGraph
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC at the top of main.swift, for the startup probe.
let processEntryNanos = Atomic<UInt64>(0)

struct AgraphBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agraph-bench",
        abstract: "AudioGraph benchmarks (build with -c release).",
        subcommands: [Offline.self, Live.self, ColdBench.self, LV2Bench.self, StartupBench.self, ScaleBench.self, StartupProbe.self, AC4Probe.self, AnalyzeBench.self, ResampleBench.self, DecodeBench.self,
                      BinauralBench.self, OSCBench.self, ReloadBench.self, ParallelBench.self],
        defaultSubcommand: Offline.self)
}

// MARK: - the job

/// The benchmark job: 8 sines at distinct frequencies, stereo, into an
/// 8-input mixer, into a 48 kHz stereo float32 WAV.
enum Job {
    static let sampleRate = 48000
    static let frequencies: [Double] = [220, 277.18, 329.63, 392, 440, 523.25, 659.25, 783.99]
    /// Peak level of each tone: 8 × -18.06 dBFS (1/8) peaks at 0 dBFS at most,
    /// the same amplitude as ffmpeg's `sine` source.
    static let levelDB = -18.0618

    static func graphJSON(seconds: Double, output: String) -> String {
        var nodes: [String] = []
        var links: [String] = []
        for (i, f) in frequencies.enumerated() {
            nodes.append(#"{"id": "t\#(i)", "type": "test-tone", "params": {"waveform": "sine", "frequency": \#(f), "level": \#(levelDB), "channels": 2, "duration": \#(seconds)}}"#)
            links.append(#"{"from": "t\#(i)", "to": "mix:in\#(i)"}"#)
        }
        nodes.append(#"{"id": "mix", "type": "mixer", "params": {"inputs": \#(frequencies.count)}}"#)
        nodes.append(#"{"id": "out", "type": "file-out", "params": {"path": "\#(output)", "format": "wav", "sampleFormat": "float32"}}"#)
        links.append(#"{"from": "mix", "to": "out"}"#)
        return """
            {
              "format": "agraph/1",
              "name": "bench-offline",
              "description": "agraph-bench offline: 8 sines into a mixer into a stereo float WAV.",
              "sampleRate": \(sampleRate),
              "nodes": [
                \(nodes.joined(separator: ",\n    "))
              ],
              "links": [
                \(links.joined(separator: ",\n    "))
              ]
            }

            """
    }

    static func frames(seconds: Double) -> Int { Int((seconds * Double(sampleRate)).rounded()) }
}

// MARK: - offline

struct Offline: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render N s of 8 sines → mixer → 48 kHz stereo float WAV; compare with ffmpeg and sox.",
        discussion: """
            Figures are x real time (seconds of audio per second of wall clock), median / min / max \
            over the runs, and CPU time (user + system, all threads) beside wall time. AudioGraph \
            in-process: validate + compile (opens the file) + render + close, on one thread plus the \
            engine's worker (CPU: this process's getrusage delta). The agraph CLI, ffmpeg and sox: \
            whole processes (CPU from wait4). The reference loop sums 8 phasor sines into interleaved \
            stereo float in memory, without a file: what a plain C-style loop does. The jobs take \
            turns run by run (A B C D, A B C D…); every output is removed before each run; the \
            temporary folder goes at the end unless --keep. --one-core pins every job to one CPU.
            """)

    @Option(help: "Seconds of audio to render.") var seconds: Double = 60
    @Option(help: "Timed runs of each job.") var runs: Int = 5
    @Option(help: "Frames per block (64…16384).") var blockFrames: Int = 1024
    @Flag(help: "Keep the temporary folder with the graph and the files written.") var keep = false
    @Flag(help: "Pin every job (AudioGraph and the peers) to one CPU, as taskset -c 0 would.") var oneCore = false

    func validate() throws {
        if !(seconds > 0 && seconds <= 3600) { throw ValidationError("--seconds must be in (0, 3600]") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(64...16384).contains(blockFrames) { throw ValidationError("--block-frames must be from 64 to 16384") }
    }

    func run() throws {
        let coreLine = try applyOneCore(oneCore)
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept \(dir)") } else { removeTree(dir) } }
        let expected = Job.frames(seconds: seconds)
        let graphPath = dir + "/bench.json"
        let agOut = dir + "/agraph.wav"
        let cliOut = dir + "/agraph-cli.wav"
        let json = Job.graphJSON(seconds: seconds, output: agOut)
        try writeText(json, to: graphPath)
        try writeText(Job.graphJSON(seconds: seconds, output: cliOut), to: dir + "/bench-cli.json")

        print("agraph-bench offline: 8 sines → mixer → \(Job.sampleRate / 1000) kHz stereo float32 WAV, "
              + "\(formatFixed(seconds, 1)) s of audio, \(runs) run\(runs == 1 ? "" : "s") each, block \(blockFrames) frames")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        print("temp folder: \(dir)")
        print("")

        var jobs: [TimedJob] = []
        let err = dir + "/process.err"
        // AudioGraph, in-process.
        jobs.append(TimedJob(name: "AudioGraph (in-process: validate+compile+render+close)", audioSeconds: seconds) {
            unlink(agOut)   // every job starts without its output file (see processRun)
            let (result, sample) = measureInProcess { renderInProcess(json: json, directory: dir, blockFrames: self.blockFrames) }
            switch result {
            case .success(let (_, frames)):
                if frames != expected { return .failure(BenchError(message: "rendered \(frames) frames, expected \(expected)")) }
                if let bad = checkWAV(agOut, frames: expected) { return .failure(BenchError(message: bad)) }
                return .success((sample, "ok, \(expected) frames"))
            case .failure(let e):
                return .failure(e)
            }
        })
        func process(_ name: String, _ tool: String?, missing: String, peer: Bool, _ args: [String], output: String) {
            jobs.append(TimedJob(name: name, missing: tool == nil ? missing : nil, isPeer: peer, audioSeconds: seconds) {
                processRun(tool ?? "", args, outputs: [output], stderr: err).flatMap { sample in
                    if let bad = checkWAV(output, frames: expected) { return .failure(BenchError(message: bad)) }
                    return .success((sample, "ok, \(expected) frames"))
                }
            })
        }
        // agraph render CLI, as a process.
        process("agraph render CLI (whole process)", siblingExecutable("agraph"), missing: "not built (swift build -c release --product agraph)",
                peer: false, ["render", dir + "/bench-cli.json", "--quiet", "--block-frames", "\(blockFrames)"], output: cliOut)
        // ffmpeg.
        let ffOut = dir + "/ffmpeg.wav"
        var ffArgs = ["-v", "error", "-nostdin", "-y"]
        for f in Job.frequencies {
            ffArgs += ["-f", "lavfi", "-i", "sine=frequency=\(f):duration=\(seconds):sample_rate=\(Job.sampleRate)"]
        }
        ffArgs += ["-filter_complex",
                   "amix=inputs=\(Job.frequencies.count):normalize=0:duration=longest,pan=stereo|c0=c0|c1=c0,aformat=sample_fmts=flt",
                   "-c:a", "pcm_f32le", "-ar", "\(Job.sampleRate)", "-ac", "2", ffOut]
        process("ffmpeg (lavfi sine ×8 + amix)", findOnPath("ffmpeg"), missing: "not installed", peer: true, ffArgs, output: ffOut)
        // sox: -n with 8 channels, one synth sine per channel, remix sums all 8
        // (auto gain 1/8) into each of the two output channels.
        let soxOut = dir + "/sox.wav"
        var soxArgs = ["-q", "-n", "-r", "\(Job.sampleRate)", "-c", "\(Job.frequencies.count)",
                       "-e", "floating-point", "-b", "32", "-c", "2", soxOut, "synth", "\(seconds)"]
        for f in Job.frequencies { soxArgs += ["sine", "\(f)"] }
        let all = "1-\(Job.frequencies.count)"
        soxArgs += ["remix", all, all]
        process("sox (synth ×8 + remix)", findOnPath("sox"), missing: "not installed (apt-get install -y --no-install-recommends sox)",
                peer: true, soxArgs, output: soxOut)
        // The ceiling: a plain loop, in memory.
        let ref = ReferenceLoop(frames: expected)
        jobs.append(TimedJob(name: "reference loop (in-memory loop, no file)", audioSeconds: seconds) {
            let (_, sample) = measureInProcess { ref.run() }
            return ref.peak > 0.5 && ref.peak <= 1.0001 ? .success((sample, "ok, peak \(formatFixed(Double(ref.peak), 3))"))
                : .failure(BenchError(message: "suspicious peak \(ref.peak)"))
        })

        runInTurns(&jobs, runs: runs)
        printTimingTable(jobs)
        printPeerRatios(jobs, pairs: ["AudioGraph (in-process: validate+compile+render+close)", "agraph render CLI (whole process)"].flatMap { a in
            ["ffmpeg (lavfi sine ×8 + amix)", "sox (synth ×8 + remix)"].map { (a, $0) }
        }, oneCore: oneCore)

        // Startup: process start → first block rendered.
        print("")
        print("startup (process start → first block rendered), \(runs) run\(runs == 1 ? "" : "s") (agraph-bench startup has more):")
        if let me = selfExecutable() {
            var total: [Double] = [], toMain: [Double] = [], validate: [Double] = [], compile: [Double] = [], first: [Double] = []
            var bad: String?
            for _ in 0..<runs {
                switch probeStartup(me, graph: graphPath, blockFrames: blockFrames, dir: dir) {
                case .success(let p):
                    total.append(p.total); toMain.append(p.toMain); validate.append(p.validate)
                    compile.append(p.compile); first.append(p.firstBlock)
                case .failure(let e):
                    bad = e.message
                }
                if bad != nil { break }
            }
            if let bad {
                print("  FAILED: \(bad)")
            } else {
                func ms(_ xs: [Double]) -> String {
                    let s = Stats(xs)
                    return "\(formatFixed(s.median * 1000, 2)) ms (min \(formatFixed(s.min * 1000, 2)), max \(formatFixed(s.max * 1000, 2)))"
                }
                print("  total, spawn → first block returned:  \(ms(total))")
                print("    spawn → main() entry (exec, dynamic linking, runtime): \(ms(toMain))")
                print("    validate the graph:                                   \(ms(validate))")
                print("    compile (create nodes, open the file, allocate):      \(ms(compile))")
                print("    start worker + first block:                           \(ms(first))")
            }
        } else {
            print("  cannot find this executable (/proc/self/exe)")
        }
        if let r = jobs.first(where: { $0.name == "agraph render CLI (whole process)" }) {
            if !r.usable {
                print("  agraph render CLI end to end: \(r.status)")
            } else {
                let t = r.wall
                print("  agraph render CLI end to end (\(formatFixed(seconds, 1)) s of audio, from the table): \(formatFixed(t.median * 1000, 1)) ms "
                      + "(min \(formatFixed(t.min * 1000, 1)), max \(formatFixed(t.max * 1000, 1)))")
            }
        }
        print("")
        printLoad("at end")
        if jobs.contains(where: \.failed) { throw ExitCode.failure }
    }
}

struct BenchError: Error { var message: String }

/// One in-process render: returns (wall seconds, frames rendered).
func renderInProcess(json: String, directory: String, blockFrames: Int) -> Result<(Double, Int), BenchError> {
    let start = MonotonicClock.seconds()
    let graph: ValidatedGraph
    switch GraphValidator(registry: .builtIn).validate(bytes: Array(json.utf8), file: "bench.json", directory: directory) {
    case .success(let g): graph = g
    case .failure(let e): return .failure(BenchError(message: "graph invalid:\n\(e)"))
    }
    let compiled: CompiledGraph
    do {
        compiled = try GraphCompiler.compile(graph, maxFrames: blockFrames)
    } catch {
        return .failure(BenchError(message: "compile: \(error)"))
    }
    let result = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames).run()
    let elapsed = MonotonicClock.seconds() - start
    if !result.finishErrors.isEmpty { return .failure(BenchError(message: result.finishErrors.joined(separator: "; "))) }
    if result.ending != .endOfStream { return .failure(BenchError(message: "ended by \(result.ending)")) }
    return .success((elapsed, result.frames))
}

// MARK: - startup probe

struct StartupProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup-probe", abstract: "(internal) time process start → first block.", shouldDisplay: false)

    @Option var spawnedAt: UInt64
    @Option var graph: String
    @Option var blockFrames: Int

    func run() throws {
        let entry = processEntryNanos.load(ordering: .relaxed)
        let t0 = MonotonicClock.nanoseconds()
        let g: ValidatedGraph
        switch GraphValidator(registry: .builtIn).validate(file: graph) {
        case .success(let v): g = v
        case .failure(let e): throw BenchError(message: "\(e)")
        }
        let t1 = MonotonicClock.nanoseconds()
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        let t2 = MonotonicClock.nanoseconds()
        var firstBlock: UInt64 = 0
        _ = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames).run(
            shouldStop: { firstBlock != 0 },
            progress: { _ in if firstBlock == 0 { firstBlock = MonotonicClock.nanoseconds() } })
        // spawn→first, spawn→main entry, validate, compile, first block (ns)
        print(firstBlock - spawnedAt, entry - spawnedAt, t1 - t0, t2 - t1, firstBlock - t2)
    }
}

/// What the startup probe measured: seconds from spawn to the first block
/// returned, to main() entry, validating, compiling, the first block; and
/// the probe process as a whole (wall to exit, CPU, peak memory).
struct StartupFigures { var total, toMain, validate, compile, firstBlock: Double; var process = Sample(wall: 0, cpu: 0) }

/// Spawns `me startup-probe` on `graph` and reads the phases it prints. [main-thread]
func probeStartup(_ me: String, graph: String, blockFrames: Int, dir: String) -> Result<StartupFigures, BenchError> {
    let out = dir + "/probe.out"
    let spawnedAt = MonotonicClock.nanoseconds()
    let r = spawnMeasured(me, ["startup-probe", "--spawned-at", "\(spawnedAt)", "--graph", graph,
                               "--block-frames", "\(blockFrames)"],
                          stdout: out, stderr: dir + "/probe.err")
    guard r.status == 0 else {
        return .failure(BenchError(message: "probe exited with \(r.status): \(readText(dir + "/probe.err") ?? "")"))
    }
    let fields = (readText(out) ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { UInt64($0) }
    guard fields.count == 5 else { return .failure(BenchError(message: "probe printed \(readText(out) ?? "nothing")")) }
    let s = fields.map { Double($0) * 1e-9 }
    return .success(StartupFigures(total: s[0], toMain: s[1], validate: s[2], compile: s[3], firstBlock: s[4], process: r.sample))
}

// MARK: - reference loop

/// 8 phasor sines summed, gain 1/8, written to interleaved stereo float in
/// memory: what a plain C loop does (one sample of every oscillator at a
/// time, no SIMD tricks), without a file.
final class ReferenceLoop {
    let frames: Int
    let buffer: UnsafeMutablePointer<Float>
    private(set) var peak: Float = 0

    init(frames: Int) {
        self.frames = frames
        buffer = .allocate(capacity: frames * 2)
        buffer.initialize(repeating: 0, count: frames * 2)   // fault the pages in outside the timing
    }

    deinit { buffer.deallocate() }

    /// Returns wall seconds.
    func run() -> Double {
        let start = MonotonicClock.seconds()
        let n = Job.frequencies.count
        var re = [Double](repeating: 1, count: n), im = [Double](repeating: 0, count: n)
        var c = [Double](repeating: 0, count: n), s = [Double](repeating: 0, count: n)
        for (k, f) in Job.frequencies.enumerated() {
            let w = 2 * Double.pi * f / Double(Job.sampleRate)
            c[k] = cos(w); s[k] = sin(w)
        }
        let gain = Float(1.0 / Double(n))
        let out = buffer
        re.withUnsafeMutableBufferPointer { re in
        im.withUnsafeMutableBufferPointer { im in
        c.withUnsafeBufferPointer { c in
        s.withUnsafeBufferPointer { s in
            var i = 0
            while i < frames {
                let end = min(i + 1024, frames)
                while i < end {
                    var sum = 0.0
                    var k = 0
                    while k < n {
                        let x = re[k], y = im[k]
                        sum += y
                        re[k] = x * c[k] - y * s[k]
                        im[k] = x * s[k] + y * c[k]
                        k += 1
                    }
                    let v = Float(sum) * gain
                    out[2 * i] = v
                    out[2 * i + 1] = v
                    i += 1
                }
                var k = 0
                while k < n {
                    let g = (3 - (re[k] * re[k] + im[k] * im[k])) * 0.5
                    re[k] *= g; im[k] *= g
                    k += 1
                }
            }
        }}}}
        let elapsed = MonotonicClock.seconds() - start
        var m: Float = 0
        for j in 0..<(frames * 2) { m = max(m, abs(out[j])) }
        peak = m
        return elapsed
    }
}

// MARK: - table

struct Stats {
    var median, min, max: Double
    init(_ xs: [Double]) {
        let s = xs.sorted()
        median = s.isEmpty ? .nan : (s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2)
        min = s.first ?? .nan
        max = s.last ?? .nan
    }
}

struct Row {
    var name: String
    var times: [Double]
    var seconds: Double
    var status: String
}

func printTable(_ rows: [Row]) {
    let nameWidth = max(rows.map(\.name.count).max() ?? 0, 3)
    func pad(_ s: String, _ w: Int, right: Bool = false) -> String {
        let p = String(repeating: " ", count: max(w - s.count, 0))
        return right ? p + s : s + p
    }
    print(pad("job", nameWidth) + "  " + pad("x real time: median", 19, right: true) + pad("min", 9, right: true)
          + pad("max", 9, right: true) + pad("wall ms", 10, right: true) + "  check")
    print(String(repeating: "-", count: nameWidth + 2 + 19 + 9 + 9 + 10 + 2 + 20))
    for r in rows {
        if r.times.isEmpty {
            print(pad(r.name, nameWidth) + "  " + pad("-", 19, right: true) + pad("-", 9, right: true)
                  + pad("-", 9, right: true) + pad("-", 10, right: true) + "  " + r.status)
            continue
        }
        let t = Stats(r.times)
        // Fastest run gives the max speed, slowest the min.
        let x = Stats(r.times.map { r.seconds / $0 })
        print(pad(r.name, nameWidth) + "  " + pad(formatFixed(x.median, 1) + "x", 19, right: true)
              + pad(formatFixed(x.min, 1) + "x", 9, right: true) + pad(formatFixed(x.max, 1) + "x", 9, right: true)
              + pad(formatFixed(t.median * 1000, 1), 10, right: true) + "  " + r.status)
    }
}

// MARK: - processes

/// Times `runs` runs of a process that writes `output`; checks the file's frames.
func timeProcess(_ path: String, _ args: [String], runs: Int, dir: String, output: String, frames: Int)
    -> (times: [Double], status: String)
{
    var times: [Double] = []
    let err = dir + "/process.err"
    for _ in 0..<runs {
        // Start without the file: overwriting the previous run's file makes
        // ext4 (auto_da_alloc) flush it on close, which would time the disk.
        unlink(output)
        let (status, seconds) = spawnAndWait(path, args, stdout: "/dev/null", stderr: err)
        guard status == 0 else {
            let text = (readText(err) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
            return ([], "FAILED: exit \(status): \(text)")
        }
        if let bad = checkWAV(output, frames: frames) { return ([], "FAILED: \(bad)") }
        times.append(seconds)
    }
    return (times, "ok, \(frames) frames")
}

/// Runs a process to completion; returns its exit status (-1 if it could not
/// start, 128+signal if killed) and its wall-clock seconds (spawnMeasured
/// has its CPU and memory too). [main-thread]
func spawnAndWait(_ path: String, _ args: [String], stdout: String, stderr: String) -> (Int32, Double) {
    let r = spawnMeasured(path, args, stdout: stdout, stderr: stderr)
    return (r.status, r.sample.wall)
}

func findOnPath(_ name: String) -> String? {
    guard let path = getenv("PATH").map({ String(cString: $0) }) else { return nil }
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

func selfExecutable() -> String? {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// An executable in the same folder as this one (the build products folder).
func siblingExecutable(_ name: String) -> String? {
    guard let me = selfExecutable(), let slash = me.lastIndex(of: "/") else { return nil }
    let candidate = String(me[..<slash]) + "/" + name
    return access(candidate, X_OK) == 0 ? candidate : nil
}

// MARK: - files

/// What a WAV file's header says: channels, bits, format tag (the
/// sub-format of an extensible one), frames in its data chunk.
struct WAVInfo { var channels, bits, formatTag, frames: Int }

/// Reads a WAV header; the header's figures, or what is wrong. [any-thread]
func readWAVInfo(_ path: String) -> Result<WAVInfo, BenchError> {
    guard let f = fopen(path, "rb") else { return .failure(BenchError(message: "\(path): cannot open")) }
    defer { fclose(f) }
    var header = [UInt8](repeating: 0, count: 65536)
    let got = fread(&header, 1, header.count, f)
    fseek(f, 0, SEEK_END)
    let size = ftell(f)
    func u32(_ o: Int) -> Int { Int(header[o]) | Int(header[o + 1]) << 8 | Int(header[o + 2]) << 16 | Int(header[o + 3]) << 24 }
    func u16(_ o: Int) -> Int { Int(header[o]) | Int(header[o + 1]) << 8 }
    func tag(_ o: Int) -> String { String(decoding: header[o..<o + 4], as: UTF8.self) }
    guard got >= 12, tag(0) == "RIFF", tag(8) == "WAVE" else { return .failure(BenchError(message: "\(path): not a RIFF/WAVE file")) }
    var o = 12
    var channels = 0, bits = 0, formatTag = 0
    while o + 8 <= got {
        let id = tag(o), len = u32(o + 4)
        if id == "fmt " && o + 24 <= got {
            formatTag = u16(o + 8)
            channels = u16(o + 10)
            bits = u16(o + 22)
            if formatTag == 0xFFFE && o + 34 <= got { formatTag = u16(o + 32) }   // extensible: sub-format
        } else if id == "data" {
            guard channels > 0, bits > 0 else { return .failure(BenchError(message: "\(path): no fmt chunk before the data")) }
            if o + 8 + len > size { return .failure(BenchError(message: "\(path): data chunk runs past the end of the file")) }
            return .success(WAVInfo(channels: channels, bits: bits, formatTag: formatTag, frames: len / (channels * bits / 8)))
        }
        o += 8 + len + (len & 1)
    }
    return .failure(BenchError(message: "\(path): no data chunk in the first \(got) bytes"))
}

/// Reads a WAV header; returns nil when it holds `frames` frames of
/// `channels`-channel 32-bit float, else what is wrong. [any-thread]
func checkWAV(_ path: String, frames: Int, channels expectedChannels: Int = 2) -> String? {
    switch readWAVInfo(path) {
    case .failure(let e): return e.message
    case .success(let w):
        guard w.channels == expectedChannels, w.bits == 32, w.formatTag == 3 else {
            return "\(path): \(w.channels) channels, \(w.bits) bits, format \(w.formatTag); expected \(expectedChannels), 32, float (3)"
        }
        if w.frames != frames { return "\(path): \(w.frames) frames in the header, expected \(frames)" }
        return nil
    }
}

/// A float WAV of `channels` channels: "ok, N frames", or what is wrong. [any-thread]
func describeFloatWAV(_ path: String, channels: Int) -> Result<String, BenchError> {
    readWAVInfo(path).flatMap { w in
        guard w.channels == channels, w.bits == 32, w.formatTag == 3, w.frames > 0 else {
            return .failure(BenchError(message: "\(path): \(w.channels) channels, \(w.bits) bits, format \(w.formatTag), \(w.frames) frames; expected \(channels) channels of float"))
        }
        return .success("ok, \(w.frames) frames")
    }
}

func makeTempDirectory() throws -> String {
    var template = Array("/tmp/agraph-bench-XXXXXX".utf8CString)
    guard let p = mkdtemp(&template) else { throw BenchError(message: "mkdtemp failed") }
    return String(cString: p)
}

/// Removes a folder and everything in it (sub-folders too). [main-thread]
func removeTree(_ dir: String) {
    guard let d = opendir(dir) else { return }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
            String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    closedir(d)
    for name in names { removePath(dir + "/" + name) }
    rmdir(dir)
}

func writeText(_ text: String, to path: String) throws {
    guard let f = fopen(path, "wb") else { throw BenchError(message: "cannot write \(path)") }
    defer { fclose(f) }
    let bytes = Array(text.utf8)
    guard fwrite(bytes, 1, bytes.count, f) == bytes.count else { throw BenchError(message: "cannot write \(path)") }
}

func readText(_ path: String) -> String? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&chunk, 1, chunk.count, f)
        if n <= 0 { break }
        out += chunk[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}

/// `--cpu-dma-latency µs|none`: a CPU wake-up latency request held for the
/// whole run, so every live row (AudioGraph's and the clients it is
/// compared with) runs under it; prints the line saying which. nil (not
/// given): 0 when the device allows, else none, said; a given value that
/// cannot be held fails the run. [main-thread]
func holdCPULatency(_ option: String?) throws -> CPULatencyRequest? {
    let value = option ?? "0", explicit = option != nil
    if value == "none" {
        print("CPU wake-up latency: no request (--cpu-dma-latency none: idle CPUs may halt between cycles)")
        return nil
    }
    guard let microseconds = Int(value) else {
        print("FAILED: --cpu-dma-latency takes µs (0 to \(CPULatencyRequest.unconstrained)) or none, not '\(value)'")
        throw ExitCode.failure
    }
    do {
        let request = try CPULatencyRequest(microseconds: microseconds)
        print("CPU wake-up latency: \(microseconds) µs held for the whole run (\(request.path); in force: "
              + "\(CPULatencyRequest.current().map { "\($0) µs" } ?? "unreadable"); --cpu-dma-latency none to run without)")
        return request
    } catch {
        if explicit {
            print("FAILED: \(error)")
            throw ExitCode.failure
        }
        print("CPU wake-up latency: NOT held (\(error)); idle CPUs may halt between cycles, and cycles start cold")
        return nil
    }
}

func machineDescription() -> String {
    let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
    var model = "unknown CPU"
    if let info = readText("/proc/cpuinfo"),
       let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
       let colon = line.firstIndex(of: ":") {
        model = line[line.index(after: colon)...].trimmingCharacters()
    }
    return "\(cpus) CPU\(cpus == 1 ? "" : "s"), \(model)"
}

extension Substring {
    func trimmingCharacters() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

// MARK: - time and formatting


