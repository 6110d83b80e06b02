import ArgumentParser
import AudioGraph
import AudioGraphPlugins
import CAGraphAllocCount

/// `agraph check-plugin LIB`: a conformance check for plugin authors (the
/// clap-validator way). See `PluginConformance` for what it walks.
struct CheckPlugin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-plugin",
        abstract: "Check a node plugin library against the plugin ABI; exit 1 when anything fails.",
        discussion: """
            Loads the library with the loader's checks (file, ELF, ABI version, limits, init), then walks \
            every node type through create, activate, process and set_parameter (on a thread marked as the \
            audio thread), deactivate and destroy, at block sizes 1, 7, 128 and 4099, for the default \
            parameters and each parameter at its extremes (min, max, false, true, every choice). A decoder \
            gets frames that are not of its codec, live parameter changes, a flush and a drain on a thread \
            marked as the worker. Inputs get 2 channels where accepted, tagged with the usual layout for \
            their count (input layout tags). Allocations in audio-thread calls are counted and must \
            be 0; host functions called on a thread their tag forbids are failures, and so is an extension \
            answered for an id no plugin can know (it must be NULL). Each failure is said \
            in words. A plugin of another ABI major version (a 1.x plugin) fails, naming both versions. Notes, \
            not failures: a plugin built against a newer ABI minor than this agraph's, and \
            a node type flagged as virtualizing that does not name its output "binaural".
            """)

    @Argument(help: "The plugin library (.so), or lv2:URI for an LV2 plugin through AudioGraph's LV2 host.") var library: String

    /// The allocations `body` makes on this thread; nil where this build
    /// cannot count them.
    static func countAllocations(_ body: () -> Void) -> Int? {
        guard agraph_alloc_count_available() != 0 else { body(); return nil }
        agraph_alloc_count_begin()
        body()
        return Int(agraph_alloc_count_end())
    }

    /// Prints a report; throws `ExitCode.failure` when it has failures.
    static func finish(_ name: String, failures: [String]) throws {
        if failures.isEmpty {
            print("check-plugin: passed")
            return
        }
        for failure in failures { printError("FAIL: \(failure)") }
        printError("check-plugin: \(failures.count) failure\(failures.count == 1 ? "" : "s") in \(name)")
        throw ExitCode.failure
    }

    /// An LV2 plugin through the `lv2` node: runs at odd block sizes and
    /// parameter extremes, allocations counted on a thread marked as the
    /// audio thread; a plugin that allocates in `run` is named.
    func checkLV2(_ uri: String) throws {
        // Marked as the audio thread only while the plugin runs (what is
        // counted): instantiating and connecting it are main-thread work.
        let report = LV2Conformance.check(uri: uri) { body in
            ThreadRole.mark(.audio)
            defer { ThreadRole.mark(nil) }
            return Self.countAllocations(body)
        }
        print("check-plugin: lv2:\(uri)")
        for line in report.lines { print("  \(line)") }
        try Self.finish("lv2:" + uri, failures: report.failures)
    }

    func run() throws {
        if library.hasPrefix("lv2:") {
            try checkLV2(String(library.dropFirst(4)))
            return
        }
        let report = PluginConformance.check(path: library, countAllocations: Self.countAllocations)
        print("check-plugin: \(library)")
        for line in report.lines { print("  \(line)") }
        for note in report.notes { print("  note: \(note)") }
        for line in PluginLog.drain() { print("  plugin said: \(line)") }
        try Self.finish(library, failures: report.failures)
    }
}
