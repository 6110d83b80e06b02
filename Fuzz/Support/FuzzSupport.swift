// What the fuzz targets share: the protocol each target implements,
// replaying inputs from files when built without libFuzzer, and a scratch
// folder. See Fuzz/README.md.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a fuzz target defines, as `enum Target: FuzzTarget` in its own
/// file; the entry points (Fuzz/FuzzEntry.swift, linked into every
/// target's folder) run it: libFuzzer's `LLVMFuzzerTestOneInput` in the
/// fuzzing build, `FuzzReplay` in the normal one.
public protocol FuzzTarget {
    /// Runs one input. Whatever the bytes, it must not crash, hang or grow
    /// without bound; it checks the target's invariants with `precondition`.
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>)
    /// Synthetic seed inputs by file name, written by the replay build's
    /// `--write-seeds FOLDER` (default: none, and no such option).
    static var seeds: [String: [UInt8]] { get }
}

extension FuzzTarget {
    public static var seeds: [String: [UInt8]] { [:] }
}

/// Runs a fuzz target's body over saved inputs (crash reproducers, corpus
/// folders): the normal build's stand-in for libFuzzer's main.
/// [main-thread]
public enum FuzzReplay {
    /// The replay build's main for `target`: `--write-seeds FOLDER` writes
    /// its seeds (when it has some), anything else runs it on the inputs
    /// named (`run(_:_:)`). Returns the exit status.
    public static func run<Target: FuzzTarget>(_ arguments: [String], _ target: Target.Type) -> Int32 {
        let seeds = Target.seeds
        guard !seeds.isEmpty, arguments.count == 3, arguments[1] == "--write-seeds" else {
            return run(arguments, Target.fuzzOne)
        }
        let name = (arguments[0] as NSString).lastPathComponent
        for (file, bytes) in seeds.sorted(by: { $0.key < $1.key }) {
            let path = arguments[2] + "/" + file
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
                FileHandle.standardError.write(Data("\(name): cannot write \(path)\n".utf8))
                return 1
            }
        }
        return 0
    }

    /// Runs `body` on every file named in `arguments` (folders: every file
    /// in them, sorted), printing each name first so a crash names its
    /// input. Returns the exit status: 0, or 2 for a usage error.
    public static func run(_ arguments: [String], _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Int32 {
        let name = (arguments.first as NSString?)?.lastPathComponent ?? "fuzz"
        let inputs = arguments.dropFirst()
        guard !inputs.isEmpty, !inputs.contains(where: { $0.hasPrefix("-") }) else {
            FileHandle.standardError.write(Data("""
                usage: \(name) FILE|FOLDER...
                Runs this fuzz target once on each input (a crash reproducer, a corpus folder).
                This build has no libFuzzer: scripts/fuzz builds the fuzzing one.

                """.utf8))
            return 2
        }
        let fm = FileManager.default
        var count = 0
        for input in inputs {
            var isFolder: ObjCBool = false
            guard fm.fileExists(atPath: input, isDirectory: &isFolder) else {
                FileHandle.standardError.write(Data("\(name): no such file: \(input)\n".utf8))
                return 2
            }
            let files = isFolder.boolValue
                ? ((try? fm.contentsOfDirectory(atPath: input)) ?? []).sorted().map { input + "/" + $0 }
                : [input]
            for file in files {
                guard let data = fm.contents(atPath: file) else { continue }
                // Unbuffered, so that a crash names its input.
                FileHandle.standardError.write(Data("\(name): \(file) (\(data.count) bytes)\n".utf8))
                data.withUnsafeBytes { body($0.bindMemory(to: UInt8.self)) }
                count += 1
            }
        }
        print("\(name): \(count) inputs ran without a crash")
        return 0
    }
}

/// A folder of its own under the system's temporary folder, made once per
/// process (nil if it cannot be made). [any thread]
public let fuzzScratchFolder: String? = {
    var template = Array((NSTemporaryDirectory() + "/agraph-fuzz-XXXXXX").utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer -> String? in
        guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
        return String(cString: base)
    }
}()
