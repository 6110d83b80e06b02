import AudioGraph
import AudioGraphPlugins
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

// The plugin tests' fixtures, one copy for every test target that loads
// plugins: where the built plugin libraries are, a temporary
// AGRAPH_PLUGIN_PATH folder to install them in, and the registry and
// validator that load them through the host (the loader, as `agraph`
// does). To drive a plugin through its C ABI without the host, see
// `ABIPlugin` (PluginABIHarness.swift).

/// The plugin products SwiftPM built: the test runner's own build folder,
/// the one the plugin search looks in after AGRAPH_PLUGIN_PATH.
public enum BuiltPlugins {
    /// The build folder holding the plugin libraries and test fixtures.
    public static var folder: String { PluginCatalog.defaultFolders(environment: nil).build.first ?? "." }

    /// The path of the built `library` (e.g. "libAGraphExamplePlugin.so");
    /// a skip when it is not built (a build without `--build-tests`).
    public static func path(_ library: String) throws -> String {
        let path = folder + "/" + library
        guard FileManager.default.fileExists(atPath: path) else {
            throw XCTSkip("\(library) is not built in \(folder); build with --build-tests")
        }
        return path
    }
}

/// A fresh temporary folder for a plugin test, made the only
/// AGRAPH_PLUGIN_PATH folder (`asPluginPath: false`: AGRAPH_PLUGIN_PATH
/// unset instead, so that plugins come from the build folder alone), with
/// built plugins copied in by `install`. Deinit removes the folder and
/// restores AGRAPH_PLUGIN_PATH: keep it in a property set in `setUp` and
/// cleared in `tearDown`. [main-thread]
public final class PluginFolder {
    public let directory: TemporaryDirectory
    private let environment = SavedEnvironment(["AGRAPH_PLUGIN_PATH"])

    public init(_ prefix: String, asPluginPath: Bool = true) throws {
        directory = try TemporaryDirectory(prefix)
        if asPluginPath { setenv("AGRAPH_PLUGIN_PATH", directory.path, 1) }
    }

    /// The folder.
    public var path: String { directory.path }

    /// `path/name`.
    public func file(_ name: String) -> String { directory.file(name) }

    /// Copies the built `library` into the folder, as `name` (default: its
    /// own name) in `subfolder` (made if needed; default: the folder
    /// itself), and returns the copy's path; a skip when it is not built.
    @discardableResult
    public func install(_ library: String, as name: String? = nil, in subfolder: String? = nil) throws -> String {
        let source = try BuiltPlugins.path(library)
        var folder = path
        if let subfolder {
            folder = file(subfolder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let copy = folder + "/" + (name ?? library)
        try FileManager.default.copyItem(atPath: source, toPath: copy)
        return copy
    }

    /// `json` validated with `registry`, relative paths in this folder.
    public func validate(_ json: String, _ registry: NodeRegistry) -> Result<ValidatedGraph, GraphErrors> {
        TestGraph.validate(json, registry: registry, directory: path)
    }
}

extension TestGraph {
    /// The built-in registry, `capture` over `stores`, `types`, and every
    /// plugin the default search finds (AGRAPH_PLUGIN_PATH, then the build
    /// folder), with the search's report, as `agraph` loads them.
    /// [main-thread]
    public static func pluginRegistry(_ stores: [String: CaptureStore] = [:], adding types: [any NodeType] = [])
        -> (registry: NodeRegistry, report: PluginCatalog) {
        var base = registry(stores)
        for type in types { base.register(type) }
        return NodeRegistry.withPlugins(base)
    }

    /// `json` validated with `registry`, named `file`, relative paths in `directory`.
    public static func validate(_ json: String, registry: NodeRegistry, file: String = "inline.json",
                                directory: String) -> Result<ValidatedGraph, GraphErrors> {
        GraphValidator(registry: registry).validate(bytes: Array(json.utf8), file: file, directory: directory)
    }
}

/// The system's C compiler, for tests that build small shared libraries of
/// their own: one that dlopen refuses, one lacking a symbol, one whose
/// constructor leaves a mark when it is loaded.
public enum CCompiler {
    /// The first of /usr/bin/cc, clang, gcc; a skip without one.
    public static func path() throws -> String {
        guard let cc = ["/usr/bin/cc", "/usr/bin/clang", "/usr/bin/gcc"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("no C compiler")
        }
        return cc
    }

    /// Builds the shared library `output`: `cc -shared -fPIC -o output`
    /// then `arguments` (sources, flags). A skip when it fails.
    public static func sharedLibrary(_ output: String, _ arguments: [String]) throws {
        let compiler = try path()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: compiler)
        process.arguments = ["-shared", "-fPIC", "-o", output] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw XCTSkip("\(compiler) \(process.arguments?.joined(separator: " ") ?? "") failed")
        }
    }
}
