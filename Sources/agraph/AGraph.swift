import ArgumentParser
import AudioGraph
import AudioGraphJACK
import AudioGraphLive
import AudioGraphPlugins
import AudioGraphProcessing
#if canImport(Glibc)
import Glibc
#endif

@main
struct AGraph: ParsableCommand {
    static let abstract = "Run, render and check AudioGraph node graphs."
    static let discussion = """
        A graph file (JSON, "format": "agraph/1") describes sources, processing and sinks. \
        `agraph validate` checks it, `agraph run` plays it live in a JACK client, \
        `agraph render` renders it offline as fast as the machine allows, \
        `agraph abx` runs blind ABX trials on a graph's `ab` node, \
        `agraph compare` measures two renderers of one graph against each other.
        """
    static let version = "0.1.0"
    static let subcommands: [ParsableCommand.Type] = [Run.self, Abx.self, Render.self, Analyze.self, Compare.self, Validate.self,
                                                      Nodes.self, Dot.self, Schema.self, Probe.self, CheckPlugin.self]

    /// True while `main` parses without ArgumentParser's completion-script
    /// check (see `main`). [main-thread]
    nonisolated(unsafe) static var parsingWithoutCompletionCheck = false

    static var configuration: CommandConfiguration {
        if parsingWithoutCompletionCheck {
            // A root with a "super-command" name is one ArgumentParser does
            // not look for `--generate-completion-script` in; the name shows
            // only in help and usage texts, which this parse never prints.
            return CommandConfiguration(commandName: "agraph", _superCommandName: "agraph", abstract: abstract,
                                        discussion: discussion, version: version, subcommands: subcommands)
        }
        return CommandConfiguration(commandName: "agraph", abstract: abstract, discussion: discussion, version: version,
                                    subcommands: subcommands)
    }

    /// ArgumentParser looks for `--generate-completion-script` on every
    /// run by building two more commands' arguments by reflection: a fifth
    /// of `agraph validate`'s start-up (issue #24, measured with perf). When
    /// no argument asks for completions, help or the version, the command
    /// line is parsed without that check; anything the parse refuses (a
    /// usage error) is parsed again the standard way, which prints what
    /// ArgumentParser always prints. Running the command and its errors are
    /// as in `ParsableCommand.main`. [main-thread]
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let standard: Set = ["-h", "--help", "help", "--version", "--experimental-dump-help"]
        if !arguments.contains(where: { standard.contains($0) || $0.hasPrefix("--generate-completion-script") }) {
            parsingWithoutCompletionCheck = true
            let parsed = Result { try parseAsRoot(arguments) }
            parsingWithoutCompletionCheck = false
            if case .success(var command) = parsed {
                do { try command.run() } catch { exit(withError: error) }
                return
            }
        }
        main(arguments)
    }
}

/// Prints one line to stderr. [main-thread]
func printError(_ line: String) { TextOutput.standard.error(line) }

/// Writes `text` to stdout unbuffered (command replies in `agraph run`).
func writeStdout(_ text: String) { TextOutput.standard.writeOut(text) }

/// Writes `text` to stderr unbuffered. [main-thread | worker-thread | owner-thread |
/// control-thread]
func writeStderr(_ text: String) { TextOutput.standard.writeErr(text) }

/// The node plugins found once per run: AGRAPH_PLUGIN_PATH, then agraph's
/// own folder (the package's built plugin products); what failed to load
/// (and plugin types clashing with built-in ones) is in `failures`.
let pluginReport: PluginCatalog = NodeRegistry.withPlugins(.builtIn.addingJACK()).report

/// The plugins' node types, loaded the first time a graph names a type the
/// built-in ones do not include, or all types are listed: a graph of
/// built-in nodes starts without loading any plugin (nor FFmpeg, which the
/// `ffmpeg` decoder plugin links).
let deferredPlugins = DeferredNodeTypes {
    let builtIn = NodeRegistry.builtIn.addingJACK()
    return (pluginReport.types.filter { !builtIn.registers($0.descriptor.typeID) }.map { $0 as any NodeType }, pluginReport.note)
}

/// Every node type the command line knows: built-in, JACK and plugins (deferred).
func standardRegistry(_ binder: JACKPortBinder = JACKPortBinder()) -> NodeRegistry {
    var registry = NodeRegistry.builtIn.addingJACK(binder)
    registry.deferred = deferredPlugins
    return registry
}

/// Validates `path`, changed by `overrides` (`--set`); prints diagnostics;
/// throws `ExitCode.failure` when it is invalid. [main-thread]
func loadGraph(_ path: String, registry: NodeRegistry = standardRegistry(),
               overrides: [ParameterOverride] = []) throws -> ValidatedGraph {
    switch GraphValidator(registry: registry).validate(file: path, overrides: overrides) {
    case .success(let g):
        for w in g.warnings { printError(w.description) }
        return g
    case .failure(let errors):
        for d in errors.diagnostics { printError(d.description) }
        let n = errors.errors.count
        printError("\(path): \(n) error\(n == 1 ? "" : "s")")
        throw ExitCode.failure
    }
}

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check graph files; report every problem with its file, line, JSON pointer and node.")

    @Argument(help: "Graph files.") var graphs: [String]

    @Flag(name: .shortAndLong, help: "Print nothing for valid graphs.") var quiet = false

    @Flag(name: .long, help: "Also list every node with its stream formats and the rate conversions it does.") var verbose = false

    @Option(name: .customLong("set"), help: ParameterOverrides.help) var settings: [String] = []

    func validate() throws { _ = try ParameterOverrides.parse(settings) }

    func run() throws {
        let overrides = try ParameterOverrides.parse(settings)
        var failed = 0
        for path in graphs {
            switch GraphValidator(registry: standardRegistry()).validate(file: path, overrides: overrides) {
            case .success(let g):
                for w in g.warnings { printError(w.description) }
                if !quiet { print("\(path): ok (\(g.nodes.count) nodes, \(Int(g.sampleRate)) Hz)") }
                if verbose && !quiet { print(Self.details(g), terminator: "") }
            case .failure(let errors):
                failed += 1
                for d in errors.diagnostics { printError(d.description) }
            }
        }
        if failed > 0 {
            printError("\(failed) of \(graphs.count) graph\(graphs.count == 1 ? "" : "s") invalid")
            throw ExitCode.failure
        }
    }
}

extension Validate {
    /// One line per node: its type, what leaves it (or reaches a sink), and
    /// the rate conversion it does, if any. [main-thread]
    static func details(_ g: ValidatedGraph) -> String {
        var text = ""
        for n in g.nodes {
            let formats = n.outputFormats.isEmpty ? n.inputFormats : n.outputFormats
            var line = "  \(n.id) (\(n.descriptor.typeID)) \(n.outputFormats.isEmpty ? "<-" : "->") "
                + formats.map(\.description).joined(separator: ", ")
            if let r = n.type as? any RateConversionReporting,
               let note = r.rateConversion(parameters: n.parameters, inputFormats: n.inputFormats, outputFormats: n.outputFormats,
                                           graphRate: g.sampleRate, directory: g.directory) {
                line += ": " + note
            }
            text += line + "\n"
        }
        return text
    }
}

struct Nodes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "List node types, or describe one: ports, parameters, types, ranges, defaults, units.")

    @Argument(help: "A node type to describe.") var type: String?

    @Option(name: .customLong("search"), help: ArgumentHelp("With lv2: only the plugins whose name, URI or class holds WORD (any case).", valueName: "WORD"))
    var search: String?

    func validate() throws {
        if search != nil && type != "lv2" { throw ValidationError("--search filters the LV2 plugins: agraph nodes lv2 --search WORD") }
    }

    func run() throws {
        if type == "lv2" {
            print(LV2Catalogue.list(search: search), terminator: "")
            return
        }
        let registry = standardRegistry()
        guard let type else {
            print(Describe.nodeList(registry), terminator: "")
            if !pluginReport.failures.isEmpty { printError("agraph: \(pluginReport.note)") }
            return
        }
        if type.hasPrefix("lv2:") {
            do {
                let t = try LV2PluginType(plugin: LV2World.shared.describe(String(type.dropFirst(4))))
                print(Describe.nodeType(t.descriptor), terminator: "")
                print(LV2Catalogue.details(t.plugin), terminator: "")
            } catch {
                printError("agraph: \(error)")
                throw ExitCode.failure
            }
            return
        }
        guard let t = registry[type] else {
            let hint = closestMatch(to: type, in: registry.typeIDs).map { "did you mean '\($0)'? " } ?? ""
            printError("agraph: unknown node type '\(type)'; \(hint)known types: \(registry.typeIDs.joined(separator: ", ")); \(pluginReport.note)")
            throw ExitCode.failure
        }
        print(Describe.nodeType(t.descriptor), terminator: "")
        if let plugin = pluginReport.plugin(providing: type) {
            print("  plugin: \(plugin.name) \(plugin.version) (\(plugin.vendor)), ABI \(plugin.abiMajor).\(plugin.abiMinor)")
            if let details = plugin.details {
                print(details.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n"))
            }
        }
    }
}

struct Dot: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dot",
        abstract: "Print a graph as Graphviz dot (e.g. agraph dot g.json | dot -Tpng > g.png).")

    @Argument(help: "Graph file.") var graph: String

    func run() throws {
        print(Describe.dot(try loadGraph(graph)), terminator: "")
    }
}

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of the graph format, with the plugin node types found (docs/graph.schema.json).")

    func run() throws {
        // Built-in and JACK node types, and those of the plugins found now
        // (AGRAPH_PLUGIN_PATH, then the build's own); any other plugin type
        // passes as a generic reverse-DNS node.
        print(GraphSchema.make(registry: standardRegistry()).rendered())
    }
}
