import Foundation
import TestSupport
import XCTest

/// The module layering of issue #23: the host layer (and everything below
/// it, and the hosts built on it) names no node module; only the umbrella
/// `AudioGraph` composes them. Checked twice: in the package manifest (as
/// `swift package dump-package` reads it) and in each target's `import`s.
final class DependencyRuleTests: XCTestCase {
    /// Node modules: what only the umbrella (and tools, tests, plugins above
    /// it) may depend on.
    static let nodeModules: Set<String> = [
        "AudioGraph", "AudioGraphNodes", "AudioGraphProcessing", "AudioGraphSndFile", "AudioGraphMedia",
        "AudioGraphPlaylist", "AudioGraphBinaural", "AudioGraphLV2", "AudioGraphAnalysis",
    ]
    /// The host layer, what is below it, and the hosts and loaders that
    /// must sit on the host layer rather than on the umbrella.
    static let hostSide = ["AudioGraphCore", "AudioGraphNodeAPI", "GraphFile", "AudioGraphHost",
                           "AudioGraphJACK", "AudioGraphOSC", "AudioGraphPlugins"]

    struct Manifest: Decodable {
        struct Target: Decodable {
            var name: String
            var path: String?
            var dependencies: [Dependency]
        }
        struct Dependency: Decodable {
            var byName: [String?]?
            var target: [String?]?
            var product: [String?]?
            var name: String? { (byName ?? target ?? product)?.first ?? nil }
        }
        var targets: [Target]
    }

    func manifest() throws -> Manifest {
        let swift = ProcessInfo.processInfo.environment["SWIFT_EXEC_PATH"] ?? "/usr/bin/env"
        // A scratch folder of its own: `swift test` holds the package's
        // .build lock while the tests run, and dump-package would wait on it.
        let scratch = NSTemporaryDirectory() + "agraph-dump-package-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let tail = ["package", "--scratch-path", scratch, "dump-package"]
        let args = swift == "/usr/bin/env" ? ["swift"] + tail : tail
        let p = Process()
        p.executableURL = URL(fileURLWithPath: swift)
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: TestMedia.packageRoot)
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "swift package dump-package failed")
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    func testHostSideTargetsDependOnNoNodeModule() throws {
        let m = try manifest()
        let byName = Dictionary(m.targets.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for name in Self.hostSide {
            let target = try XCTUnwrap(byName[name], "no target \(name) in Package.swift")
            let bad = target.dependencies.compactMap(\.name).filter(Self.nodeModules.contains)
            XCTAssertEqual(bad, [], "\(name) depends on node module(s) \(bad) in Package.swift")
        }
        // The hosts and the plugin loader sit on the host layer.
        for name in ["AudioGraphJACK", "AudioGraphOSC", "AudioGraphPlugins", "AudioGraphAnalysis"] {
            let deps = byName[name]?.dependencies.compactMap(\.name) ?? []
            XCTAssertTrue(deps.contains("AudioGraphHost"), "\(name) should depend on AudioGraphHost: \(deps)")
        }
        // The umbrella composes the built-in nodes and plugin loading.
        let umbrella = byName["AudioGraph"]?.dependencies.compactMap(\.name) ?? []
        for needed in ["AudioGraphHost", "AudioGraphPlugins", "AudioGraphNodes", "AudioGraphLV2"] {
            XCTAssertTrue(umbrella.contains(needed), "the AudioGraph umbrella should compose \(needed): \(umbrella)")
        }
    }

    func testHostSideSourcesImportNoNodeModule() throws {
        let m = try manifest()
        let fm = FileManager.default
        for name in Self.hostSide {
            let folder = TestMedia.packageRoot + "/" + (m.targets.first { $0.name == name }?.path ?? "Sources/\(name)")
            let files = try XCTUnwrap(fm.enumerator(atPath: folder)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
            XCTAssertFalse(files.isEmpty, "no sources in \(folder)")
            for file in files {
                let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ")
                    guard let i = words.firstIndex(of: "import"), i + 1 < words.count,
                          words[..<i].allSatisfy({ $0.hasPrefix("@") || ["public", "package", "internal"].contains($0) }) else { continue }
                    let module = String(words[i + 1])
                    XCTAssertFalse(Self.nodeModules.contains(module), "\(name)/\(file) imports node module \(module)")
                }
            }
        }
    }
}
