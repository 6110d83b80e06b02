// agraph-bench: what every offline benchmark measures alike (issue #24):
// wall and CPU time (user + system) of child processes (wait4) and of
// in-process jobs (getrusage deltas), the children's peak memory, the load
// average at start and end, jobs taking turns run by run (A B A B), and
// `--one-core` (everything pinned to one CPU, as `taskset -c N` would).
// Every function here runs on the bench's main thread. [main-thread]
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// One timed run of a job.
struct Sample {
    /// Wall-clock seconds.
    var wall: Double
    /// User + system CPU seconds (the process and every thread of it).
    var cpu: Double
    /// Peak resident memory of a child process (KiB): its VmHWM read at its
    /// exit when spawnMeasured was asked for it, else 0.
    var maxRSSKiB: Int = 0
}

/// What one child process did.
struct ProcessRun {
    /// Exit status; -1 when it could not start, 128 + signal when killed.
    var status: Int32
    var sample: Sample
}

/// User + system seconds in a `rusage`. [any-thread]
func cpuSeconds(_ u: rusage) -> Double {
    Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6
}

/// This process's CPU so far, user + system of all its threads: what
/// getrusage(RUSAGE_SELF) sums, read from CLOCK_PROCESS_CPUTIME_ID to the
/// nanosecond (rusage's user/system split is rounded to scheduler ticks). [any-thread]
func processCPUSeconds() -> Double {
    var t = timespec()
    guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 else {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        return cpuSeconds(u)
    }
    return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
}

/// Wall and CPU time of `body`, run in this process: the CPU is this
/// process's delta (all threads, as RUSAGE_SELF), so it counts the engine's worker and
/// reader threads too; nothing else runs in the bench meanwhile. [main-thread]
func measureInProcess<T>(_ body: () -> T) -> (T, Sample) {
    let c0 = processCPUSeconds(), t0 = MonotonicClock.seconds()
    let value = body()
    let wall = MonotonicClock.seconds() - t0, cpu = processCPUSeconds() - c0
    return (value, Sample(wall: wall, cpu: cpu))
}

/// Runs a process to completion (stdin /dev/null) and reaps it with wait4:
/// its exit status, wall clock from spawn to exit, CPU (user + system of
/// all its threads and of the children it waited for) and, with
/// `peakMemory`, its peak resident memory. `environment` entries
/// ("NAME=value") are added to this process's.
///
/// Peak memory: wait4's ru_maxrss is no use here, since posix_spawn's child
/// shares this process's memory until it execs and Linux keeps that
/// memory's high-water mark in the child's ru_maxrss (sox would show this
/// bench's 40+ MiB). So the child is traced (PTRACE_SEIZE with
/// PTRACE_O_TRACEEXIT): stopped as it exits, its VmHWM (the high-water mark
/// of its own memory since exec) is read from /proc, and it goes on; other
/// stops pass their signal on. [main-thread]
func spawnMeasured(_ path: String, _ args: [String], stdout: String, stderr: String,
                   environment: [String] = [], peakMemory: Bool = false) -> ProcessRun {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var envp: [UnsafeMutablePointer<CChar>?] = []
    if !environment.isEmpty {
        var i = 0
        while let e = environ[i] { envp.append(strdup(e)); i += 1 }
        envp += environment.map { strdup($0) }
        envp.append(nil)
    }
    defer { for e in envp { free(e) } }
    var pid = pid_t()
    let start = MonotonicClock.seconds()
    let spawned = envp.isEmpty ? posix_spawn(&pid, path, &actions, nil, argv, environ)
        : posix_spawn(&pid, path, &actions, nil, argv, &envp)
    guard spawned == 0 else { return ProcessRun(status: -1, sample: Sample(wall: 0, cpu: 0)) }
    var peakKiB = 0
    if peakMemory, let ptrace = Ptrace.function,
       ptrace(Ptrace.seize, pid, nil, UnsafeMutableRawPointer(bitPattern: Ptrace.traceExit)) == 0 {
        var st: Int32 = 0
        while true {
            if waitpid(pid, &st, Ptrace.waitAll) < 0 {
                if errno == EINTR { continue }
                return ProcessRun(status: -1, sample: Sample(wall: 0, cpu: 0))
            }
            if (st & 0xff) != 0x7f {
                // Gone without the exit stop (killed): reaped here, its rusage with it.
                let signal = st & 0x7f
                return ProcessRun(status: signal == 0 ? (st >> 8) & 0xff : 128 + signal,
                                  sample: Sample(wall: MonotonicClock.seconds() - start, cpu: 0))
            }
            let signal = (st >> 8) & 0xff, event = (st >> 16) & 0xff
            if event == Ptrace.eventExit {
                peakKiB = Ptrace.vmHWM(pid)
                _ = ptrace(Ptrace.detach, pid, nil, nil)
                break
            }
            // A signal-delivery stop (or another event): let it go on, with its signal.
            let pass = event != 0 || signal == SIGTRAP ? 0 : Int(signal)
            _ = ptrace(Ptrace.cont, pid, nil, UnsafeMutableRawPointer(bitPattern: pass))
        }
    }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
        if errno != EINTR { return ProcessRun(status: -1, sample: Sample(wall: 0, cpu: 0)) }
    }
    let elapsed = MonotonicClock.seconds() - start
    let signal = status & 0x7f
    return ProcessRun(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal,
                      sample: Sample(wall: elapsed, cpu: cpuSeconds(usage), maxRSSKiB: peakKiB))
}

/// ptrace, looked up in the C library (variadic there, so not exported to
/// Swift; called with its four arguments, as the x86-64 and AArch64 ABIs allow).
enum Ptrace {
    typealias Function = @convention(c) (Int32, pid_t, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int
    static let function: Function? = dlopen(nil, RTLD_NOW).flatMap { dlsym($0, "ptrace") }.map { unsafeBitCast($0, to: Function.self) }
    static let cont: Int32 = 7, detach: Int32 = 17, seize: Int32 = 0x4206
    static let traceExit = 0x40        // PTRACE_O_TRACEEXIT
    static let eventExit: Int32 = 6    // PTRACE_EVENT_EXIT
    static let waitAll: Int32 = 0x4000_0000   // __WALL

    /// VmHWM of /proc/PID/status, KiB (0 if unreadable). [main-thread]
    static func vmHWM(_ pid: pid_t) -> Int {
        guard let text = readText("/proc/\(pid)/status"),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return Int(line.dropFirst(6).filter(\.isNumber)) ?? 0
    }
}

// MARK: - load average

/// The first three fields of /proc/loadavg ("1.52 1.37 1.20"). [any-thread]
func loadAverage() -> String {
    guard let text = readText("/proc/loadavg") else { return "unreadable" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

/// Prints "load average (1, 5, 15 min) at start: …". [main-thread]
func printLoad(_ when: String) {
    print("load average (1, 5, 15 min) \(when): \(loadAverage())")
}

// MARK: - one core

/// `--one-core`: pins this process to one CPU (the first it may use) before
/// any job starts, so that every thread it makes and every child it spawns
/// (AudioGraph and the peers alike) inherits the mask, as under
/// `taskset -c N`. Returns the line that says so. Glibc's Swift module does
/// not export sched_setaffinity, so it is looked up in the C library. [main-thread]
func pinToOneCore() throws -> String {
    typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> Int32
    guard let handle = dlopen(nil, RTLD_NOW),
          let get = dlsym(handle, "sched_getaffinity"), let set = dlsym(handle, "sched_setaffinity") else {
        throw BenchError(message: "--one-core: sched_setaffinity not found in the C library")
    }
    let getAffinity = unsafeBitCast(get, to: Affinity.self), setAffinity = unsafeBitCast(set, to: Affinity.self)
    var mask = [UInt8](repeating: 0, count: 128)   // 1024 CPUs
    guard getAffinity(0, mask.count, &mask) == 0 else {
        throw BenchError(message: "--one-core: sched_getaffinity failed (errno \(errno))")
    }
    guard let cpu = (0..<(mask.count * 8)).first(where: { mask[$0 / 8] & (1 << ($0 % 8)) != 0 }) else {
        throw BenchError(message: "--one-core: this process may use no CPU")
    }
    let allowed = (0..<(mask.count * 8)).filter { mask[$0 / 8] & (1 << ($0 % 8)) != 0 }.count
    var one = [UInt8](repeating: 0, count: mask.count)
    one[cpu / 8] = 1 << (cpu % 8)
    guard setAffinity(0, one.count, &one) == 0 else {
        throw BenchError(message: "--one-core: sched_setaffinity to CPU \(cpu) failed (errno \(errno))")
    }
    return "--one-core: every job (AudioGraph and the peers, their threads and children) runs on CPU \(cpu) only "
        + "(as under taskset -c \(cpu)); \(allowed) CPU\(allowed == 1 ? "" : "s") allowed before"
}

/// The line to print for `--one-core` given or not; pins when given. [main-thread]
func applyOneCore(_ oneCore: Bool) throws -> String {
    if oneCore { return try pinToOneCore() }
    let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
    return "cores: every CPU (\(cpus) online) may be used; --one-core pins every job to one CPU (the wall-time aim is judged there)"
}

// MARK: - jobs taking turns

/// A job of an offline benchmark: one run does the work once, after
/// removing the outputs it writes, and returns its sample and what it
/// checked (frames written, a reading), or why it failed.
struct TimedJob {
    var name: String
    /// Why the job cannot run here (a tool not installed), or nil.
    var missing: String? = nil
    /// The peer (ffmpeg, sox…) rather than AudioGraph.
    var isPeer: Bool = false
    /// Seconds of audio one run processes (for x real time).
    var audioSeconds: Double
    /// One run: unlink the outputs, do the work, check what it wrote.
    var run: () -> Result<(Sample, String), BenchError>
    var samples: [Sample] = []
    var status = ""
    var failed = false

    init(name: String, missing: String? = nil, isPeer: Bool = false, audioSeconds: Double,
         run: @escaping () -> Result<(Sample, String), BenchError>) {
        self.name = name
        self.missing = missing
        self.isPeer = isPeer
        self.audioSeconds = audioSeconds
        self.run = run
        status = missing ?? ""
    }

    var usable: Bool { missing == nil && !failed && !samples.isEmpty }
    var wall: Stats { Stats(samples.map(\.wall)) }
    var cpu: Stats { Stats(samples.map(\.cpu)) }
}

/// Runs every job once per round, `runs` rounds (A B A B…): load that comes
/// and goes on the machine falls on every job alike. A job that fails once
/// is dropped from the later rounds. [main-thread]
func runInTurns(_ jobs: inout [TimedJob], runs: Int) {
    for _ in 0..<runs {
        for k in jobs.indices where jobs[k].missing == nil && !jobs[k].failed {
            switch jobs[k].run() {
            case .success(let (sample, status)):
                jobs[k].samples.append(sample)
                jobs[k].status = status
            case .failure(let e):
                jobs[k].failed = true
                jobs[k].samples = []
                jobs[k].status = "FAILED: " + e.message
            }
        }
    }
}

/// A child process as one run of a job: unlinks `outputs` first (every
/// tool starts without its files: overwriting makes ext4's auto_da_alloc
/// flush on close, and a tool that overwrites must not be timed against one
/// that writes anew), then runs it; exit statuses in `okStatuses` count as
/// success. [main-thread]
func processRun(_ path: String, _ args: [String], outputs: [String], stdout: String = "/dev/null", stderr: String,
                okStatuses: Set<Int32> = [0], environment: [String] = [], peakMemory: Bool = false) -> Result<Sample, BenchError> {
    for o in outputs { removePath(o) }
    let r = spawnMeasured(path, args, stdout: stdout, stderr: stderr, environment: environment, peakMemory: peakMemory)
    guard okStatuses.contains(r.status) else {
        let text = (readText(stderr) ?? "").split(separator: "\n").prefix(3).joined(separator: " / ")
        return .failure(BenchError(message: "exit \(r.status): \(text)"))
    }
    return .success(r.sample)
}

/// Removes a file, or a folder and everything in it. [main-thread]
func removePath(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR { removeTree(path) } else { unlink(path) }
}

// MARK: - the table

/// The table of an offline benchmark: per job, CPU (median), CPU / wall,
/// x real time (median, min, max over the runs), wall ms (median) and what
/// it checked. The x real time and wall columns keep the layout
/// scripts/bench-builds reads. [main-thread]
func printTimingTable(_ jobs: [TimedJob]) {
    let nameWidth = max(jobs.map(\.name.count).max() ?? 0, 3)
    func pad(_ s: String, _ w: Int, right: Bool = false) -> String {
        let p = String(repeating: " ", count: max(w - s.count, 0))
        return right ? p + s : s + p
    }
    print(pad("job", nameWidth) + pad("CPU ms", 11, right: true) + pad("CPU/wall", 9, right: true)
          + "  " + pad("x real time: median", 19, right: true) + pad("min", 9, right: true)
          + pad("max", 9, right: true) + pad("wall ms", 10, right: true) + "  check")
    print(String(repeating: "-", count: nameWidth + 11 + 9 + 2 + 19 + 9 + 9 + 10 + 2 + 20))
    for j in jobs {
        guard j.usable else {
            print(pad(j.name, nameWidth) + pad("-", 11, right: true) + pad("-", 9, right: true) + "  "
                  + pad("-", 19, right: true) + pad("-", 9, right: true) + pad("-", 9, right: true)
                  + pad("-", 10, right: true) + "  " + j.status)
            continue
        }
        let t = j.wall, c = j.cpu
        let x = Stats(j.samples.map { j.audioSeconds / $0.wall })
        print(pad(j.name, nameWidth) + pad(formatFixed(c.median * 1000, 1), 11, right: true)
              + pad(formatFixed(c.median / t.median, 2), 9, right: true) + "  "
              + pad(formatFixed(x.median, 1) + "x", 19, right: true)
              + pad(formatFixed(x.min, 1) + "x", 9, right: true) + pad(formatFixed(x.max, 1) + "x", 9, right: true)
              + pad(formatFixed(t.median * 1000, 1), 10, right: true) + "  " + j.status)
    }
}

/// The lines comparing AudioGraph's jobs with the peers' of the same run:
/// CPU ratio (AudioGraph CPU / peer CPU, medians) against the aim ≤ 1.00,
/// and wall ratio (AudioGraph wall / peer wall) against the aim ≤ 1.00 with
/// one core (judged only under --one-core). `pairs` lists (AudioGraph job,
/// peer job) names; nil pairs every AudioGraph job with every peer. [main-thread]
func printPeerRatios(_ jobs: [TimedJob], pairs: [(String, String)]? = nil, oneCore: Bool) {
    let all = pairs ?? jobs.filter { !$0.isPeer }.flatMap { a in jobs.filter(\.isPeer).map { (a.name, $0.name) } }
    var printed = false
    for (aName, pName) in all {
        guard let a = jobs.first(where: { $0.name == aName }), let p = jobs.first(where: { $0.name == pName }),
              a.usable, p.usable else { continue }
        if !printed {
            print("")
            print("AudioGraph / peer, medians of the same run (CPU ratio ≤ 1.00 aim; wall ratio ≤ 1.00 aim with one core):")
            printed = true
        }
        let cpu = a.cpu.median / p.cpu.median, wall = a.wall.median / p.wall.median
        let cpuVerdict = cpu <= 1 ? "met" : "NOT met"
        let wallVerdict = oneCore ? (wall <= 1 ? "met" : "NOT met") : "judged with --one-core"
        print("  \(aName) / \(pName): CPU ratio \(formatFixed(cpu, 2)) (\(formatFixed(a.cpu.median, 3)) / \(formatFixed(p.cpu.median, 3)) s; "
              + "CPU ratio ≤ 1.00 aim: \(cpuVerdict)); wall ratio \(formatFixed(wall, 2)) "
              + "(\(formatFixed(a.wall.median, 3)) / \(formatFixed(p.wall.median, 3)) s; wall ratio ≤ 1.00 aim with one core: \(wallVerdict))")
    }
}
