import AC4
import ArgumentParser
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// `agraph-bench ac4`: how long probing takes on a valid AC-4 stream and on
/// hostile ones of the same size (issue 7, item 4: the reader's work must be
/// linear in the file size, whatever the file holds). [main-thread]
struct AC4Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ac4",
        abstract: "Time AC-4 probing of a valid stream vs hostile streams of the same size.",
        discussion: """
            Writes each file to a temporary folder, then times reading it whole and every frame \
            (AC4FileReader + readAll, in-process) and, when the agraph executable sits next to this \
            one, the whole `agraph probe FILE` process. Figures are milliseconds, median / min / max \
            over the runs, and MB/s (10^6 bytes) from the in-process median. CRC work is the bytes \
            the CRC touched per byte of data: at most about 3 whatever the data. The files take \
            turns run by run (each file in-process, then its agraph probe, then the next file); CPU \
            time (user + system: this process's getrusage delta in-process, wait4 for agraph probe) is \
            given beside wall time. The temporary folder goes at the end unless --keep.
            """)

    @Option(help: "Size of each file in MB (10^6 bytes).") var megabytes: Double = 10
    @Option(help: "Timed runs of each job.") var runs: Int = 5
    @Flag(help: "Keep the temporary folder with the files.") var keep = false
    @Flag(help: "Pin every job to one CPU, as taskset -c 0 would.") var oneCore = false

    func validate() throws {
        if !(megabytes >= 0.1 && megabytes <= 200) { throw ValidationError("--megabytes must be from 0.1 to 200") }
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
    }

    func run() throws {
        let size = Int(megabytes * 1e6)
        let coreLine = try applyOneCore(oneCore)
        let dir = try makeTempDirectory()
        defer { if keep { print("\nkept: \(dir)") } else { removeTree(dir) } }
        let agraph = siblingExecutable("agraph")
        print("agraph-bench ac4: probe of \(formatFixed(megabytes, 1)) MB files, \(runs) run\(runs == 1 ? "" : "s") each, taking turns")
        print("machine: \(machineDescription())")
        print(coreLine)
        printLoad("at start")
        print("temp folder: \(dir)")
        print("agraph probe: \(agraph ?? "not found next to agraph-bench; in-process figures only")")
        print("")

        let jobs: [(String, [UInt8])] = [
            ("valid stream (CRC on every frame)", Self.validStream(size)),
            ("AC 41 repeated", Self.repeated([0xAC, 0x41], size)),
            ("AC 41 AC 40 repeated", Self.repeated([0xAC, 0x41, 0xAC, 0x40], size)),
            ("fake 24-bit 1 MiB frames, CRC, every 16 B", Self.fakeLongFrames(size, withCRC: true)),
            ("fake 24-bit 1 MiB frames, no CRC, every 16 B", Self.fakeLongFrames(size, withCRC: false)),
            ("valid frames, each a new bitstream version", Self.distinctVersions(size)),
        ]
        var paths: [String] = []
        for (name, bytes) in jobs {
            let path = dir + "/" + name.filter { $0.isLetter || $0.isNumber } + ".ac4"
            try Self.write(bytes, to: path)
            paths.append(path)
        }
        var inProcess = Array(repeating: [Sample](), count: jobs.count)
        var probes = Array(repeating: [Sample](), count: jobs.count)
        var frames = Array(repeating: 0, count: jobs.count), work = Array(repeating: 0, count: jobs.count)
        var failures: [String?] = Array(repeating: nil, count: jobs.count)
        for _ in 0..<runs {
            for k in jobs.indices {
                let (counted, sample) = measureInProcess { () -> Result<(Int, Int), BenchError> in
                    let file: AC4FileReader
                    do { file = try AC4FileReader(path: paths[k]) } catch { return .failure(BenchError(message: "\(error)")) }
                    var reader = file.makeIterator()
                    var n = 0
                    while reader.next() != nil { n += 1 }
                    return .success((n, reader.crcWork))
                }
                let (n, w) = try counted.get()
                inProcess[k].append(sample)
                frames[k] = n
                work[k] = w
                if let agraph, failures[k] == nil {
                    let r = spawnMeasured(agraph, ["probe", paths[k]], stdout: "/dev/null", stderr: "/dev/null")
                    // Exit 1 is "no valid frame": expected for the hostile files.
                    if r.status != 0 && r.status != 1 { failures[k] = "exit \(r.status)" } else { probes[k].append(r.sample) }
                }
            }
        }
        var table: [[String]] = [["file", "frames", "CRC work", "in-process ms (min-max)", "CPU ms", "MB/s", "agraph probe ms (min-max)", "CPU ms"]]
        for (k, (name, bytes)) in jobs.enumerated() {
            let t = Stats(inProcess[k].map(\.wall)), c = Stats(inProcess[k].map(\.cpu))
            var probe = "-", probeCPU = "-"
            if agraph != nil {
                let p = Stats(probes[k].map(\.wall))
                probe = failures[k] ?? "\(formatFixed(p.median * 1000, 1)) (\(formatFixed(p.min * 1000, 1))-\(formatFixed(p.max * 1000, 1)))"
                if failures[k] == nil { probeCPU = formatFixed(Stats(probes[k].map(\.cpu)).median * 1000, 1) }
            }
            table.append([
                name, "\(frames[k])", formatFixed(Double(work[k]) / Double(max(bytes.count, 1)), 2),
                "\(formatFixed(t.median * 1000, 1)) (\(formatFixed(t.min * 1000, 1))-\(formatFixed(t.max * 1000, 1)))",
                formatFixed(c.median * 1000, 1), formatFixed(Double(bytes.count) / 1e6 / t.median, 0), probe, probeCPU,
            ])
        }
        Self.printColumns(table)
        print("")
        printLoad("at end")
    }

    // MARK: the files

    /// Valid sync frames with a CRC, 715 … 2664 bytes of pseudo-random
    /// payload (the range of ChannelCheck.ac4), TOCs as a 48 kHz stream.
    static func validStream(_ size: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(size + 4096)
        var state: UInt64 = 0x5EED
        func random() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        var k = 0
        while out.count < size {
            let toc = AC4TOC(bitstreamVersion: 2, sequenceCounter: 1 + k % 1020, fsIndex: 1, frameRateIndex: 13, isIFrame: k % 24 == 0)
            var raw = toc.encodedFields()
            let n = Swift.min(715 + Int(random() % 1950), Swift.max(size - out.count - 6, raw.count + 1))
            while raw.count < n { raw.append(UInt8(truncatingIfNeeded: random())) }
            out += AC4SyncFrameWriter.syncFrame(raw: raw)
            k += 1
        }
        return out
    }

    static func repeated(_ unit: [UInt8], _ size: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { p, n in
            for i in 0..<size { p[i] = unit[i % unit.count] }
            n = size
        }
    }

    /// A sync word every 16 bytes whose 24-bit size claims a 1 MiB frame.
    static func fakeLongFrames(_ size: Int, withCRC: Bool) -> [UInt8] {
        let head: [UInt8] = [0xAC, withCRC ? 0x41 : 0x40, 0xFF, 0xFF, 0x10, 0x00, 0x00]
        let unit = head + [UInt8](repeating: 0x55, count: 16 - head.count)
        return repeated(unit, size)
    }

    /// Small valid frames, each with a bitstream version lower than the last.
    static func distinctVersions(_ size: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(size + 64)
        let count = size / 12
        var k = 0
        while out.count < size {
            let toc = AC4TOC(bitstreamVersion: 3 + Swift.max(count - k, 0), sequenceCounter: 1 + k % 1020,
                             fsIndex: 1, frameRateIndex: 13, isIFrame: false)
            out += AC4SyncFrameWriter.syncFrame(raw: toc.encodedFields() + [0])
            k += 1
        }
        return out
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        guard let f = fopen(path, "wb") else { throw BenchError(message: "cannot write \(path)") }
        defer { fclose(f) }
        guard fwrite(bytes, 1, bytes.count, f) == bytes.count else { throw BenchError(message: "cannot write \(path)") }
    }

    static func printColumns(_ rows: [[String]]) {
        guard let header = rows.first else { return }
        let widths = header.indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        for (i, row) in rows.enumerated() {
            let cells = row.enumerated().map { c, s in
                let pad = String(repeating: " ", count: Swift.max(widths[c] - s.count, 0))
                return c == 0 ? s + pad : pad + s
            }
            print(cells.joined(separator: "  "))
            if i == 0 { print(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1))) }
        }
    }
}
