// The plugin loader: finds node plugins, checks their ABI version, and
// wraps each node type they describe (agraph_plugin.h) into a `NodeType`.
//
// Where it looks, in order (the first folder holding a given file name
// wins, like PATH):
//   1. every folder of `AGRAPH_PLUGIN_PATH` (colon-separated);
//   2. the folder of the running executable (`agraph`, or the test
//      runner), which is where SwiftPM puts the package's own plugin
//      products (`.build/debug/libAGraph*.so`).
// What it loads: files named `libAGraph*.so` (the naming rule; plugin
// products are called `AGraph<Name>` in Package.swift). Other files are
// left alone, so that no unrelated library's constructors ever run.
// Test fixtures (`libAGraphTest*.so`) are loaded only from
// AGRAPH_PLUGIN_PATH, never from the build folder.
//
// Before dlopen, each file is checked without mapping it
// (`SharedObjectCheck`): a regular file (a FIFO would block dlopen), an ELF
// shared object for this machine whose tables and segments lie inside the
// file (a truncated library would crash the process with SIGBUS when the
// loader touches its mapping). Every library is then opened with
// dlopen(RTLD_NOW | RTLD_LOCAL) and never closed (its tables must outlive
// every node made from it). What is read from a plugin is bounded
// (`PluginLimits`: counts of node types, parameters and choices, string
// lengths), so a descriptor claiming 4 billion types is refused at once.
// Whatever fails — a file that is not a complete shared object, a library
// dlopen refuses, one without `agraph_plugin_entry`, another ABI major
// version, a count or string over the limits, a malformed node type, a type
// id already taken — is recorded in `PluginCatalog.failures`: reported,
// never silently dropped.
import AudioGraphHost
import CAGraphPlugin
#if canImport(Glibc)
import Glibc
#endif

/// A plugin library that loaded.
public struct LoadedPlugin: @unchecked Sendable {
    // @unchecked: `descriptor` points to the plugin's immutable tables, which
    // live until exit.
    public var path: String
    public var name: String
    public var vendor: String
    public var version: String
    /// The ABI version the plugin was built against.
    public var abiMajor: Int
    public var abiMinor: Int
    public var typeIDs: [String]
    /// The plugin's own details (AGRAPH_EXT_PLUGIN_INFO), e.g. the external
    /// library it found and its versions.
    public var details: String? = nil
    /// The descriptor (for `deinit`, ABI 1.2).
    public var descriptor: UnsafePointer<agraph_plugin_t>? = nil
    /// Whether the plugin's `init` (ABI 1.2) ran and succeeded.
    public var initialized = false

    /// Calls the plugin's `deinit` (ABI 1.2) when its `init` ran: only once
    /// every instance is destroyed, and only by a host that is done with the
    /// library (`agraph check-plugin`). Returns whether it was called.
    /// [main-thread]
    @discardableResult
    public func callDeinit() -> Bool {
        guard initialized, let descriptor, let deinitFn = descriptor.pointee.`deinit` else { return false }
        deinitFn()
        return true
    }
}

/// A library or node type that could not be used, and why.
public struct PluginLoadFailure: Sendable, CustomStringConvertible {
    public var path: String
    /// The node type concerned, when the library loaded but one type was refused.
    public var typeID: String?
    public var reason: String

    public var description: String {
        let file = path.split(separator: "/").last.map(String.init) ?? path
        return typeID.map { "\(file) type \"\($0)\" (\(reason))" } ?? "\(file) (\(reason))"
    }
}

/// What a plugin search found: the node types, the libraries, the failures.
public struct PluginCatalog: Sendable {
    /// The folders searched, in order (existing or not).
    public var searchedFolders: [String] = []
    /// Shared libraries in `AGRAPH_PLUGIN_PATH` folders that were not loaded
    /// because they are not named `libAGraph*.so` (a likely mistake).
    public var skippedFiles: [String] = []
    public var plugins: [LoadedPlugin] = []
    public var failures: [PluginLoadFailure] = []
    /// Every node type of every loaded plugin, in load order.
    public var types: [PluginNodeType] = []

    /// The ABI major version this agraph reads.
    public static let abiMajor = Int(AGRAPH_PLUGIN_ABI_MAJOR)
    public static let abiMinor = Int(AGRAPH_PLUGIN_ABI_MINOR)

    public init() {}

    /// The default folders: AGRAPH_PLUGIN_PATH, then the executable's folder.
    /// [any thread]
    public static func defaultFolders(environment: String? = getenv("AGRAPH_PLUGIN_PATH").map { String(cString: $0) })
        -> (pluginPath: [String], build: [String]) {
        let fromEnv = (environment ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        var build: [String] = []
        if let exe = executableFolder() { build.append(exe) }
        return (fromEnv, build)
    }

    /// Searches the default folders (see the top of this file) plus
    /// `extraFolders` (searched last, with the build folders' rules), and
    /// loads every plugin found. [main-thread]
    public static func load(extraFolders: [String] = []) -> PluginCatalog {
        let (env, build) = defaultFolders()
        return load(pluginPath: env, buildFolders: build + extraFolders)
    }

    /// Loads the plugins of `pluginPath` (every `libAGraph*.so`) then of
    /// `buildFolders` (every `libAGraph*.so` except `libAGraphTest*`).
    /// [main-thread]
    public static func load(pluginPath: [String], buildFolders: [String]) -> PluginCatalog {
        var catalog = PluginCatalog()
        var seenFiles: Set<String> = []
        var seenFolders: Set<String> = []
        let folders = pluginPath.map { ($0, true) } + buildFolders.map { ($0, false) }
        for (folder, explicit) in folders {
            let canonical = realPath(folder) ?? folder
            catalog.searchedFolders.append(folder)
            guard seenFolders.insert(canonical).inserted else { continue }
            for file in listFolder(canonical) {
                guard file.hasPrefix("libAGraph"), file.hasSuffix(".so") else {
                    // A library in a folder the user named as a plugin folder:
                    // probably a plugin with the wrong name. Said, never opened.
                    if explicit && (file.hasSuffix(".so") || file.contains(".so.")) { catalog.skippedFiles.append(canonical + "/" + file) }
                    continue
                }
                if !explicit && file.hasPrefix("libAGraphTest") { continue }
                guard seenFiles.insert(file).inserted else { continue }
                catalog.loadLibrary(canonical + "/" + file)
            }
        }
        return catalog
    }

    /// Loads one library and records what it gives or why it failed. [main-thread]
    public mutating func loadLibrary(_ path: String) {
        if let problem = SharedObjectCheck.problem(path: path) {
            failures.append(PluginLoadFailure(path: path, reason: problem))
            return
        }
        _ = dlerror()
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            failures.append(PluginLoadFailure(path: path, reason: why))
            return
        }
        guard let symbol = dlsym(handle, AGRAPH_PLUGIN_ENTRY_SYMBOL) else {
            failures.append(PluginLoadFailure(path: path, reason: "does not export \(AGRAPH_PLUGIN_ENTRY_SYMBOL)"))
            return
        }
        let entry = unsafeBitCast(symbol, to: agraph_plugin_entry_fn.self)
        guard let plugin = entry() else {
            failures.append(PluginLoadFailure(path: path, reason: "\(AGRAPH_PLUGIN_ENTRY_SYMBOL) returned NULL (the plugin cannot work here)"))
            return
        }
        // Read the version first, and nothing else of another major version.
        let abi = UnsafeRawPointer(plugin).load(as: agraph_abi_version_t.self)
        guard Int(abi.major) == Self.abiMajor else {
            failures.append(PluginLoadFailure(path: path,
                reason: "ABI \(abi.major).\(abi.minor), this agraph reads \(Self.abiMajor).x"))
            return
        }
        let p = plugin.pointee
        // ABI 1.2: library-wide init, before anything else of the plugin.
        var initialized = false
        if abi.minor >= 2, let initFn = p.`init` {
            var error = [CChar](repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
            let ok = path.withCString { initFn($0, &error, UInt32(error.count)) }
            error[error.count - 1] = 0
            guard ok != 0 else {
                let why = truncatedString(error)
                failures.append(PluginLoadFailure(path: path, reason: "its init failed: \(why.isEmpty ? "no reason given" : why)"))
                return
            }
            initialized = true
        }
        var loaded: LoadedPlugin
        do {
            loaded = LoadedPlugin(path: path, name: try boundedString(p.name, "the plugin's name") ?? "?",
                                  vendor: try boundedString(p.vendor, "the plugin's vendor") ?? "?",
                                  version: try boundedString(p.version, "the plugin's version") ?? "?",
                                  abiMajor: Int(abi.major), abiMinor: Int(abi.minor), typeIDs: [])
            loaded.descriptor = plugin
            loaded.initialized = initialized
            guard p.node_type_count <= UInt32(PluginLimits.nodeTypes) else {
                throw PluginError("the descriptor claims \(p.node_type_count) node types; at most \(PluginLimits.nodeTypes) are read")
            }
            if p.node_type_count > 0 && p.node_types == nil {
                throw PluginError("the descriptor claims \(p.node_type_count) node types but its node type table is NULL")
            }
            if let info = p.get_extension?(AGRAPH_EXT_PLUGIN_INFO)?.assumingMemoryBound(to: agraph_plugin_info_ext_t.self),
               let details = info.pointee.details?() {
                loaded.details = try boundedString(details, "the plugin-info details text", limit: PluginLimits.detailsBytes)
            }
        } catch {
            failures.append(PluginLoadFailure(path: path, reason: "\(error)"))
            return
        }
        for i in 0..<Int(p.node_type_count) {
            guard let t = p.node_types?[i] else {
                failures.append(PluginLoadFailure(path: path, reason: "node type \(i) is NULL"))
                continue
            }
            let id = try? boundedString(t.pointee.type_id, "type id")
            do {
                let type = try PluginNodeType(type: t, path: path, abiMinor: Int(abi.minor))
                if types.contains(where: { $0.descriptor.typeID == type.descriptor.typeID }) {
                    throw PluginError("type id already provided by an earlier plugin")
                }
                types.append(type)
                loaded.typeIDs.append(type.descriptor.typeID)
            } catch {
                failures.append(PluginLoadFailure(path: path, typeID: id ?? "#\(i)", reason: "\(error)"))
            }
        }
        plugins.append(loaded)
    }

    /// One line for messages: what was searched and what failed, e.g.
    /// `plugins searched: /a, /b; failed to load: libAGraphX.so (ABI 2.0, this agraph reads 1.x)`.
    public var note: String {
        var s = "plugins searched: files named libAGraph*.so (others are never opened) in "
            + (searchedFolders.isEmpty ? "no folders (set AGRAPH_PLUGIN_PATH)" : searchedFolders.joined(separator: ", "))
        if !plugins.isEmpty {
            s += "; loaded: " + plugins.map { ($0.path.split(separator: "/").last.map(String.init) ?? $0.path) }.joined(separator: ", ")
        }
        if !skippedFiles.isEmpty {
            s += "; not loaded, not named libAGraph*.so: " + skippedFiles.prefix(8).joined(separator: ", ")
                + (skippedFiles.count > 8 ? " and \(skippedFiles.count - 8) more" : "")
        }
        if !failures.isEmpty {
            s += "; failed to load: " + failures.map(\.description).joined(separator: "; ")
        }
        return s
    }

    /// The loaded plugin that provides `typeID`, if any.
    public func plugin(providing typeID: String) -> LoadedPlugin? {
        plugins.first { $0.typeIDs.contains(typeID) }
    }

    /// Why `typeID` is not available, for an unknown-type message.
    public func explainUnknownType(_ typeID: String) -> String {
        if let f = failures.first(where: { $0.typeID == typeID }) {
            return "node type \"\(typeID)\" is unavailable: \(f.description); \(note)"
        }
        return "unknown node type \"\(typeID)\"; \(note)"
    }
}

/// Bounds on what the host reads from a plugin (agraph_plugin.h,
/// AGRAPH_MAX_*). A plugin or type over them is refused with the reason.
public enum PluginLimits {
    public static let nodeTypes = Int(AGRAPH_MAX_NODE_TYPES)
    public static let parameters = Int(AGRAPH_MAX_PARAMS)
    public static let choices = Int(AGRAPH_MAX_CHOICES)
    /// Bytes before the NUL of any string but the details.
    public static let stringBytes = Int(AGRAPH_MAX_STRING)
    /// Bytes before the NUL of AGRAPH_EXT_PLUGIN_INFO's details.
    public static let detailsBytes = Int(AGRAPH_MAX_DETAILS)
}

/// A refusal while reading a plugin's tables.
struct PluginError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension NodeRegistry {
    /// Adds the catalog's types. A type whose id is already registered (a
    /// built-in) is not added; it is returned as a failure instead.
    /// [main-thread]
    public mutating func register(plugins catalog: PluginCatalog) -> [PluginLoadFailure] {
        var refused: [PluginLoadFailure] = []
        for t in catalog.types {
            if self[t.descriptor.typeID] != nil {
                refused.append(PluginLoadFailure(path: t.descriptor.origin, typeID: t.descriptor.typeID,
                                                 reason: "type id already used by a built-in type"))
                continue
            }
            register(t)
        }
        return refused
    }

    /// `base` plus every plugin found by the default search (and in
    /// `extraFolders`), with the report of what was searched and what
    /// failed. [main-thread]
    public static func withPlugins(_ base: NodeRegistry, extraFolders: [String] = [])
        -> (registry: NodeRegistry, report: PluginCatalog) {
        var report = PluginCatalog.load(extraFolders: extraFolders)
        var registry = base
        report.failures += registry.register(plugins: report)
        registry.unavailableNote = report.note
        return (registry, report)
    }
}

// MARK: - Node type

/// A node type from a plugin: the C description turned into a
/// `NodeDescriptor`, channel rules checked in `resolve`, instances made
/// through the plugin's functions.
public struct PluginNodeType: FrameDecoderType, @unchecked Sendable {
    // @unchecked: the C tables are immutable and live until exit.
    let type: UnsafePointer<agraph_node_type_t>
    public let descriptor: NodeDescriptor
    /// Input channels accepted by port 0, and port 0's output rule.
    var inputRange: ClosedRange<Int>? { inputRanges.first }
    var outputRule: OutputRule { outputRules.first ?? .none }
    /// Input channels accepted by each input port, and each output's rule
    /// (several ports: ABI 1.2), in port order. A decoder's input is not
    /// in `inputRanges` (it takes frames).
    let inputRanges: [ClosedRange<Int>]
    let outputRules: [OutputRule]
    /// The graph's names of the ports (see the naming rule in the header).
    let inputNames: [String]
    let outputNames: [String]
    /// ABI 1.2 `output_port_layout`, when the plugin has it.
    let outputPortLayout: (@convention(c) (UnsafePointer<agraph_create_info_t>?, UInt32) -> UnsafePointer<CChar>?)?
    let endless: Bool
    /// AGRAPH_NODE_VIRTUALIZES (ABI 1.4): the node renders for headphones;
    /// validation refuses binaural input to it (`NodeDescriptor.virtualizes`).
    let virtualizes: Bool
    /// A worker-domain decoder: the codec its input takes (ABI 1.1).
    let inputCodec: String?
    /// ABI 1.1 `output_layout`, when the plugin has it.
    let outputLayout: (@convention(c) (UnsafePointer<agraph_create_info_t>?) -> UnsafePointer<CChar>?)?
    /// Parameters flagged AGRAPH_PARAM_VENDOR_LIBRARY (ABI 1.2): resolved by
    /// `VendorLibraryLocations` before the plugin sees them.
    let vendorLibraryParameters: [String]

    enum OutputRule { case none, fixed(Int), sameAsInput }

    /// Reads and checks the C description; fields and flags appended in a
    /// minor version (1.1 …) are read only when the plugin's minor version
    /// has them. [main-thread]
    init(type: UnsafePointer<agraph_node_type_t>, path: String, abiMinor: Int) throws {
        self.type = type
        let t = type.pointee
        inputCodec = abiMinor >= 1 ? try boundedString(t.input_codec, "input_codec") : nil
        outputLayout = abiMinor >= 1 ? t.output_layout : nil
        guard let id = try boundedString(t.type_id, "the type id"), !id.isEmpty else { throw PluginError("no type id") }
        guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) else {
            throw PluginError("type id may hold only letters, digits, '.', '-' and '_'")
        }
        let maxPorts = abiMinor >= 2 ? Int(AGRAPH_MAX_PORTS) : 1
        guard t.input_count <= UInt32(maxPorts), t.output_count <= UInt32(maxPorts) else {
            throw PluginError(abiMinor >= 2
                ? "\(t.input_count) inputs and \(t.output_count) outputs; at most \(maxPorts) of each"
                : "\(t.input_count) inputs and \(t.output_count) outputs; ABI 1.\(abiMinor) allows at most one of each (several ports need 1.2)")
        }
        outputPortLayout = abiMinor >= 2 ? t.output_port_layout : nil
        guard t.input_count + t.output_count > 0 else { throw PluginError("no ports") }
        let isDecoder = t.domain == AGRAPH_DOMAIN_WORKER.rawValue
        if t.domain != AGRAPH_DOMAIN_REALTIME.rawValue {
            guard isDecoder else { throw PluginError("unknown domain \(t.domain)") }
            guard inputCodec != nil, t.input_count == 1, t.output_count == 1 else {
                throw PluginError("a worker-domain node must be a decoder (extension \(AGRAPH_EXT_DECODER)): one input with input_codec (ABI 1.1) and one output")
            }
            guard t.get_extension != nil else { throw PluginError("a decoder needs get_extension for \(AGRAPH_EXT_DECODER)") }
        }
        guard t.create != nil, t.activate != nil, t.deactivate != nil, t.destroy != nil, isDecoder || t.process != nil else {
            throw PluginError("create, activate, process, deactivate and destroy are required")
        }
        /// The graph's names of `count` ports: `single` for one, else the
        /// declared names (checked).
        func names(_ table: UnsafePointer<agraph_port_t>?, _ count: Int, single: String, kind: String) throws -> [String] {
            guard count > 1 else { return count == 1 ? [single] : [] }
            var out: [String] = []
            for k in 0..<count {
                guard let name = try boundedString(table?[k].name, "\(kind) port \(k)'s name"), PortDescriptor.isValidName(name) else {
                    throw PluginError("\(kind) port \(k) needs a name of letters, digits and '_' (a node with several \(kind)s names each)")
                }
                guard !out.contains(name) else { throw PluginError("two \(kind) ports are called '\(name)'") }
                out.append(name)
            }
            return out
        }
        if t.input_count > 0 && t.inputs == nil { throw PluginError("input port table is NULL") }
        if t.output_count > 0 && t.outputs == nil { throw PluginError("output port table is NULL") }
        inputNames = try names(t.inputs, Int(t.input_count), single: "in", kind: "input")
        outputNames = try names(t.outputs, Int(t.output_count), single: "out", kind: "output")
        var ranges: [ClosedRange<Int>] = []
        if !isDecoder, let table = t.inputs {
            for k in 0..<Int(t.input_count) {
                let port = table[k]
                let lo = max(Int(port.min_channels), 1)
                let hi = port.max_channels == 0 ? 64 : Int(port.max_channels)
                guard lo <= hi else { throw PluginError("input \(inputNames[k]) accepts \(lo)…\(hi) channels") }
                ranges.append(lo...hi)
            }
        }
        inputRanges = ranges
        var rules: [OutputRule] = []
        if let table = t.outputs {
            for k in 0..<Int(t.output_count) {
                let port = table[k]
                let which = t.output_count > 1 ? "output \(outputNames[k])" : "output"
                switch port.channels_rule {
                case AGRAPH_CHANNELS_FIXED.rawValue:
                    guard (1...64).contains(port.channels) else { throw PluginError("\(which) has \(port.channels) channels (1…64)") }
                    rules.append(.fixed(Int(port.channels)))
                case AGRAPH_CHANNELS_SAME_AS_INPUT.rawValue:
                    guard t.input_count >= 1 else { throw PluginError("a source's \(which) cannot be \"same as input\"") }
                    rules.append(.sameAsInput)
                default:
                    throw PluginError("unknown channel rule \(port.channels_rule) for \(which)")
                }
            }
        }
        outputRules = rules
        endless = t.flags & UInt32(AGRAPH_NODE_ENDLESS) != 0
        // A bit an older plugin set is not the 1.4 flag: ignored.
        virtualizes = abiMinor >= 4 && t.flags & UInt32(AGRAPH_NODE_VIRTUALIZES) != 0
        guard t.param_count <= UInt32(PluginLimits.parameters) else {
            throw PluginError("claims \(t.param_count) parameters; at most \(PluginLimits.parameters) are read")
        }
        var params: [ParameterDescriptor] = []
        var vendorLibraries: [String] = []
        for i in 0..<Int(t.param_count) {
            guard let p = t.params?[i] else { throw PluginError("parameter table is NULL") }
            let parameter = try Self.parameter(p)
            if p.flags & UInt32(AGRAPH_PARAM_VENDOR_LIBRARY) != 0 { vendorLibraries.append(parameter.name) }
            params.append(parameter)
        }
        vendorLibraryParameters = vendorLibraries
        let names = params.map(\.name)
        if Set(names).count != names.count { throw PluginError("duplicate parameter names") }
        if params.contains(where: \.live) && t.set_parameter == nil {
            throw PluginError("live parameters but no set_parameter")
        }
        let role: NodeDescriptor.Role = t.input_count == 0 ? .source : (t.output_count == 0 ? .sink : .processor)
        let inputs: InputPorts = t.input_count == 0 ? .none : (t.input_count == 1 ? .single : .named(inputNames.map { PortDescriptor($0) }))
        let outputs: OutputPorts? = t.output_count > 1 ? .named(outputNames.map { PortDescriptor($0) }, defaultPort: nil) : nil
        descriptor = NodeDescriptor(typeID: id, role: role, summary: try boundedString(t.summary, "the type's summary") ?? "", inputs: inputs,
                                    outputs: outputs, parameters: params, domain: isDecoder ? .background : .realtime, origin: path,
                                    inputCodecs: inputCodec.map { $0.split(separator: " ").map(String.init) } ?? [],
                                    virtualizes: virtualizes)
    }

    static func parameter(_ p: agraph_param_t) throws -> ParameterDescriptor {
        guard let name = try boundedString(p.name, "a parameter name"), !name.isEmpty else { throw PluginError("a parameter has no name") }
        let flags = p.flags
        let live = flags & UInt32(AGRAPH_PARAM_LIVE) != 0
        let optional = flags & UInt32(AGRAPH_PARAM_OPTIONAL) != 0
        let required = flags & UInt32(AGRAPH_PARAM_REQUIRED) != 0
        let range: ClosedRange<Double>? = flags & UInt32(AGRAPH_PARAM_HAS_RANGE) != 0 ? (p.min <= p.max ? p.min...p.max : nil) : nil
        if flags & UInt32(AGRAPH_PARAM_HAS_RANGE) != 0 && range == nil {
            throw PluginError("parameter \(name): min \(p.min) > max \(p.max)")
        }
        let type: ParameterType
        var def: ParameterValue?
        switch p.type {
        case AGRAPH_PARAM_NUMBER.rawValue:
            type = .number; def = .number(p.default_number)
        case AGRAPH_PARAM_INTEGER.rawValue:
            type = .integer; def = .number(p.default_number.rounded())
        case AGRAPH_PARAM_BOOLEAN.rawValue:
            type = .boolean; def = .boolean(p.default_number != 0)
        case AGRAPH_PARAM_CHOICE.rawValue:
            guard p.choice_count <= UInt32(PluginLimits.choices) else {
                throw PluginError("parameter \(name): claims \(p.choice_count) choices; at most \(PluginLimits.choices) are read")
            }
            var options: [String] = []
            for k in 0..<Int(p.choice_count) {
                guard let c = try boundedString(p.choices?[k], "parameter \(name): choice \(k)") else { break }
                options.append(c)
            }
            guard !options.isEmpty, options.count == Int(p.choice_count) else { throw PluginError("parameter \(name): a choice needs its strings") }
            type = .choice(options)
            let i = Int(p.default_number)
            guard options.indices.contains(i) else { throw PluginError("parameter \(name): default choice \(i) out of range") }
            def = .string(options[i])
        case AGRAPH_PARAM_STRING.rawValue:
            type = .string; def = try boundedString(p.default_string, "parameter \(name): default string").map { .string($0) }
        default:
            throw PluginError("parameter \(name): unknown type \(p.type)")
        }
        if live, type == .string {
            throw PluginError("parameter \(name): string parameters cannot be live")
        }
        if flags & UInt32(AGRAPH_PARAM_VENDOR_LIBRARY) != 0 && type != .string {
            throw PluginError("parameter \(name): only a string parameter can name a vendor library")
        }
        if let r = range, case .number(let v)? = def, !r.contains(v), !required, !optional {
            throw PluginError("parameter \(name): default \(v) outside \(r.lowerBound)…\(r.upperBound)")
        }
        if required || optional || (type == .string && def == nil && !optional) { def = nil }
        return ParameterDescriptor(name, type, range: range, default: def, optional: optional,
                                   unit: try boundedString(p.unit, "parameter \(name): unit"), live: live,
                                   try boundedString(p.summary, "parameter \(name): summary") ?? "")
    }

    public func isEndless(_ parameters: NodeParameters) -> Bool { endless }

    /// `parameters` with every vendor-library parameter replaced by the real
    /// path it resolves to (see VendorLibraries.swift); nil after reporting
    /// each refusal to `refuse(parameter, message)`. Loads nothing.
    /// [main-thread]
    func resolvingVendorLibraries(_ parameters: NodeParameters, directory: String,
                                  refuse: (String, String) -> Void) -> NodeParameters? {
        guard !vendorLibraryParameters.isEmpty else { return parameters }
        let locations = VendorLibraryLocations.current()
        var resolved = parameters
        var ok = true
        for name in vendorLibraryParameters {
            guard case .string(let value)? = parameters[name] else { continue }
            switch locations.resolve(value, directory: directory) {
            case .success(let path): resolved.values[name] = .string(path)
            case .failure(let refusal): refuse(name, refusal.message); ok = false
            }
        }
        return ok ? resolved : nil
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        // Vendor libraries first: nothing a graph names reaches the plugin
        // (whose check may load it) before it is found in a trusted folder.
        guard let parameters = resolvingVendorLibraries(c.parameters, directory: c.directory,
                                                        refuse: { c.error(parameter: $0, $1) }) else { return nil }
        var inputChannels: [Int] = []
        var inputLayouts: [ChannelLayout?] = []
        for (k, range) in inputRanges.enumerated() {
            guard k < c.inputFormats.count, let input = c.inputFormats[k] else { return nil }
            guard range.contains(input.channels) else {
                let which = inputRanges.count > 1 ? " on its input '\(inputNames[k])'" : ""
                c.error(input: k, "\(descriptor.typeID) accepts \(range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)…\(range.upperBound)") channels\(which); the input has \(input.channels)")
                return nil
            }
            inputChannels.append(input.channels)
            inputLayouts.append(input.layout)
        }
        if inputCodec != nil, c.input == nil { return nil }
        var outputs: [StreamFormat] = []
        for rule in outputRules {
            switch rule {
            case .none: break
            case .fixed(let n): outputs.append(StreamFormat(channels: n, sampleRate: c.sampleRate))
            case .sameAsInput:
                guard let input = c.input else { return nil }
                if inputCodec != nil {
                    // A decoder's PCM follows what its frames decode to, at the graph's rate.
                    guard input.channels > 0 else {
                        c.error(input: 0, "\(descriptor.typeID) takes its channels from its input, and its source does not say how many channels its frames decode to")
                        return nil
                    }
                    outputs.append(StreamFormat(channels: input.channels, sampleRate: c.sampleRate, layout: input.layout,
                                                surroundsAreBack: input.surroundsAreBack))
                } else {
                    outputs.append(input)
                }
            }
        }
        let host = PluginHost(nodeID: c.nodeID, typeID: descriptor.typeID)
        for k in outputs.indices where (k == 0 && outputLayout != nil) || outputPortLayout != nil {
            let channels = outputs[k].channels
            let named = withCreateInfo(nodeID: c.nodeID, parameters: parameters, inputChannels: inputChannels.first ?? 0,
                                       outputChannels: outputs.first?.channels ?? 0, sampleRate: c.sampleRate, host: host,
                                       inputPortChannels: inputChannels, outputPortChannels: outputs.map(\.channels),
                                       inputPortLayouts: inputLayouts) { info, _ in
                let name = outputPortLayout.map { $0(info, UInt32(k)) } ?? outputLayout.map { $0(info) }
                return name.flatMap { $0 }.map { truncatedString($0, limit: 64) }
            }.result
            if let name = named {
                let which = outputs.count > 1 ? " of output '\(outputNames[k])'" : ""
                guard let layout = ChannelLayout(rawValue: name), layout.channelCount.map({ $0 == channels }) ?? true else {
                    c.error("the plugin names the layout\(which) \"\(name)\", which does not fit \(channels) channels")
                    return nil
                }
                outputs[k].layout = layout
            }
        }
        if let check = type.pointee.check {
            let ok = withCreateInfo(nodeID: c.nodeID, parameters: parameters, inputChannels: inputChannels.first ?? 0,
                                    outputChannels: outputs.first?.channels ?? 0, sampleRate: c.sampleRate, host: host,
                                    inputPortChannels: inputChannels, outputPortChannels: outputs.map(\.channels),
                                    inputPortLayouts: inputLayouts) { info, error in
                check(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
            }
            if ok.result == 0 {
                c.error(ok.message.isEmpty ? "refused by the plugin" : ok.message)
                return nil
            }
        }
        for (k, f) in outputs.enumerated() { c.setOutput(k, f) }
        return outputs.first
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        var refusals: [String] = []
        guard let parameters = resolvingVendorLibraries(c.parameters, directory: c.directory,
                                                        refuse: { refusals.append("parameter \($0): \($1)") }) else {
            throw EngineError(nodeID: c.nodeID, refusals.joined(separator: "; "))
        }
        guard let create = type.pointee.create else {
            throw EngineError(nodeID: c.nodeID, "\(descriptor.typeID) (\(descriptor.origin)): the plugin has no create function")
        }
        let host = PluginHost(nodeID: c.nodeID, typeID: descriptor.typeID)
        let inputPortChannels = inputCodec != nil ? [] : c.inputFormats.map(\.channels)
        let inputPortLayouts: [ChannelLayout?] = inputCodec != nil ? [] : c.inputFormats.map(\.layout)
        let made = withCreateInfo(nodeID: c.nodeID, parameters: parameters, inputChannels: c.inputFormats.first?.channels ?? 0,
                                  outputChannels: c.outputFormat?.channels ?? 0, sampleRate: c.sampleRate, host: host,
                                  inputPortChannels: inputPortChannels, outputPortChannels: c.outputFormats.map(\.channels),
                                  inputPortLayouts: inputPortLayouts) { info, error in
            create(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
        }
        guard let instance = made.result else {
            throw EngineError(nodeID: c.nodeID, "\(descriptor.typeID) (\(descriptor.origin)): create failed: \(made.message.isEmpty ? "no reason given" : made.message)")
        }
        if inputCodec != nil {
            guard let source = c.inputNodes.first as? CompressedFrameSource else {
                type.pointee.destroy?(instance)
                throw EngineError(nodeID: c.nodeID, "\(descriptor.typeID): its input is not a source of compressed frames")
            }
            // Damage fails an offline render when the decoder or its source
            // has an onError parameter and neither says "skip".
            let policies = [c.parameters.string("onError"), source.onError].compactMap { $0 }
            let failsOnDamage = !policies.isEmpty && !policies.contains("skip")
            return try PluginDecoderNode(type: type, instance: instance, typeID: descriptor.typeID, nodeID: c.nodeID,
                                         source: source, channels: c.outputFormat?.channels ?? 2, host: host,
                                         failsOnDamage: failsOnDamage)
        }
        return PluginRenderNode(type: type, instance: instance, typeID: descriptor.typeID, nodeID: c.nodeID, host: host)
    }

    /// A decoder instance with the default parameters, for a node that
    /// decodes with this type itself (a playlist): `channels` in and out.
    /// [main-thread]
    public func makeFrameDecoder(nodeID: String, channels: Int, sampleRate: Double) throws -> any FrameDecoder {
        guard inputCodec != nil, let create = type.pointee.create else {
            throw EngineError(nodeID: nodeID, "\(descriptor.typeID) (\(descriptor.origin)) is not a decoder")
        }
        var defaults = NodeParameters()
        for p in descriptor.parameters { if let d = p.defaultValue { defaults.values[p.name] = d } }
        let host = PluginHost(nodeID: nodeID, typeID: descriptor.typeID)
        let made = withCreateInfo(nodeID: nodeID, parameters: defaults, inputChannels: channels, outputChannels: channels,
                                  sampleRate: sampleRate, host: host, inputPortChannels: [],
                                  outputPortChannels: [channels]) { info, error in
            create(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
        }
        guard let instance = made.result else {
            throw EngineError(nodeID: nodeID, "\(descriptor.typeID) (\(descriptor.origin)): create failed: \(made.message.isEmpty ? "no reason given" : made.message)")
        }
        return try PluginFrameDecoder(type: type, instance: instance, host: host, typeID: descriptor.typeID,
                                      nodeID: nodeID, channels: channels)
    }

    /// Calls `body` with the C view of a node's parameters (valid during the
    /// call only), with `host` as its host table (ABI 1.2), the channels of
    /// every port (ABI 1.2; nil: port 0's only, from `inputChannels` /
    /// `outputChannels`), each input's layout tag (ABI 1.4; nil, or an
    /// entry past the end: the usual layout for that input's channel count;
    /// an input of unknown channels gets no tag), and an error buffer;
    /// returns its result and the message.
    public func withCreateInfo<R>(nodeID: String, parameters: NodeParameters, inputChannels: Int, outputChannels: Int,
                           sampleRate: Double, host: PluginHost,
                           inputPortChannels: [Int]? = nil, outputPortChannels: [Int]? = nil,
                           inputPortLayouts: [ChannelLayout?]? = nil,
                           _ body: (UnsafePointer<agraph_create_info_t>, UnsafeMutablePointer<CChar>) -> R) -> (result: R, message: String) {
        // Every declared port gets an entry (0 while its channels are unknown).
        func counts(_ given: [Int]?, _ first: Int, _ n: Int) -> [UInt32] {
            let known = given ?? (n > 0 ? [first] : [])
            return (0..<n).map { $0 < known.count ? UInt32(clamping: known[$0]) : 0 }
        }
        let inputCounts = counts(inputPortChannels, inputChannels, inputCodec != nil ? 0 : inputNames.count)
        let outputCounts = counts(outputPortChannels, outputChannels, outputNames.count)
        var strings: [UnsafeMutablePointer<CChar>] = []
        defer { strings.forEach { free($0) } }
        // One tag per input port (ABI 1.4), NULL where the input is unknown.
        let layouts: [UnsafePointer<CChar>?] = inputCounts.enumerated().map { k, channels in
            let given = inputPortLayouts.flatMap { k < $0.count ? $0[k] : nil }
            guard let layout = given ?? (channels > 0 ? ChannelLayout.default(forChannels: Int(channels)) : nil) else { return nil }
            let cs = strdup(layout.rawValue)!
            strings.append(cs)
            return UnsafePointer(cs)
        }
        var values: [agraph_param_value_t] = []
        for p in descriptor.parameters {
            var v = agraph_param_value_t(is_set: 1, reserved0: 0, number: 0, string: nil)
            switch parameters[p.name] {
            case .number(let x)?: v.number = x
            case .boolean(let b)?: v.number = b ? 1 : 0
            case .string(let s)?:
                let cs = strdup(s)!
                strings.append(cs)
                v.string = UnsafePointer(cs)
                if case .choice(let options) = p.type { v.number = Double(options.firstIndex(of: s) ?? 0) }
            default: v.is_set = 0
            }
            values.append(v)
        }
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        let id = strdup(nodeID)!
        defer { free(id) }
        let result = values.withUnsafeBufferPointer { buf in
            inputCounts.withUnsafeBufferPointer { ins in
                outputCounts.withUnsafeBufferPointer { outs in
                    layouts.withUnsafeBufferPointer { tags in
                        var info = agraph_create_info_t(type: type, node_id: UnsafePointer(id), values: buf.baseAddress,
                                                        value_count: UInt32(buf.count), input_channels: UInt32(inputChannels),
                                                        output_channels: UInt32(outputChannels),
                                                        host_abi_minor: UInt32(AGRAPH_PLUGIN_ABI_MINOR), sample_rate: sampleRate,
                                                        host: UnsafePointer(host.table),
                                                        input_port_count: UInt32(ins.count), output_port_count: UInt32(outs.count),
                                                        input_port_channels: ins.isEmpty ? nil : ins.baseAddress,
                                                        output_port_channels: outs.isEmpty ? nil : outs.baseAddress,
                                                        input_port_layouts: tags.isEmpty ? nil : tags.baseAddress)
                        return withExtendedLifetime(host) { withUnsafePointer(to: &info) { body($0, error) } }
                    }
                }
            }
        }
        error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
        return (result, String(cString: error))
    }
}

// MARK: - Runtime node

/// One plugin instance in an engine: activate in `prepare`, process in
/// `render` through the C function pointer, with the process block and the
/// channel pointer arrays allocated once in `prepare`. Its host table
/// (`host`) carries the output route and latency changes (ABI 1.2).
final class PluginRenderNode: RenderNode, HostedPluginInstance {
    let instance: OpaquePointer
    /// The node's host table; outlives the instance (destroyed in deinit first).
    let host: PluginHost
    /// The instance's `agraph.output-route/1` side, if it has one.
    let routeExt: agraph_output_route_ext_t?
    let typeID: String
    let nodeID: String
    let activateFn: @convention(c) (OpaquePointer?, Double, UInt32, UnsafeMutablePointer<CChar>?, UInt32) -> Int32
    let processFn: @convention(c) (OpaquePointer?, UnsafeMutablePointer<agraph_process_t>?) -> Void
    let setParameterFn: (@convention(c) (OpaquePointer?, UInt32, Double) -> Void)?
    let latencyFn: (@convention(c) (OpaquePointer?) -> UInt32)?
    let deactivateFn: @convention(c) (OpaquePointer?) -> Void
    let destroyFn: @convention(c) (OpaquePointer?) -> Void
    let liveMask: [Bool]
    /// The buses of every port, in port order.
    var inputs: [AudioBus] = []
    var outputs: [AudioBus] = []
    var active = false
    // Allocated in prepare, freed in deinit: the process block, every
    // port's channel pointers (one array per direction, ports one after
    // another; port 0's are the 1.0 `inputs`/`outputs`) and the per-port
    // entries of ABI 1.2.
    var block: UnsafeMutablePointer<agraph_process_t>?
    var inputPointers: UnsafeMutablePointer<UnsafePointer<Float>?>?
    var outputPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    var inputPorts: UnsafeMutablePointer<agraph_input_port_buffers_t>?
    var outputPorts: UnsafeMutablePointer<agraph_output_port_buffers_t>?

    init(type: UnsafePointer<agraph_node_type_t>, instance: OpaquePointer, typeID: String, nodeID: String, host: PluginHost) {
        let t = type.pointee
        self.instance = instance
        self.host = host
        routeExt = routeExtension(type, instance)
        self.typeID = typeID
        self.nodeID = nodeID
        activateFn = t.activate!
        processFn = t.process!
        setParameterFn = t.set_parameter
        latencyFn = t.latency
        deactivateFn = t.deactivate!
        destroyFn = t.destroy!
        liveMask = (0..<Int(t.param_count)).map { t.params[$0].flags & UInt32(AGRAPH_PARAM_LIVE) != 0 }
    }

    /// [main-thread & !active]
    func prepare(inputs: [AudioBus], outputs: [AudioBus], context: PrepareContext) throws {
        self.inputs = inputs
        self.outputs = outputs
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        error.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        defer { error.deallocate() }
        if active { deactivateFn(instance); active = false }
        guard activateFn(instance, context.sampleRate, UInt32(context.maxFrames), error, UInt32(AGRAPH_ERROR_CAPACITY)) != 0 else {
            error[Int(AGRAPH_ERROR_CAPACITY) - 1] = 0
            let why = String(cString: error)
            throw EngineError(nodeID: nodeID, "\(typeID): activate failed: \(why.isEmpty ? "no reason given" : why)")
        }
        active = true
        freeBuffers()
        let inTotal = inputs.reduce(0) { $0 + $1.channels }
        let outTotal = outputs.reduce(0) { $0 + $1.channels }
        let ins = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: max(inTotal, 1))
        let outs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: max(outTotal, 1))
        ins.initialize(repeating: nil, count: max(inTotal, 1))
        outs.initialize(repeating: nil, count: max(outTotal, 1))
        let inPorts = UnsafeMutablePointer<agraph_input_port_buffers_t>.allocate(capacity: max(inputs.count, 1))
        let outPorts = UnsafeMutablePointer<agraph_output_port_buffers_t>.allocate(capacity: max(outputs.count, 1))
        var offset = 0
        for (k, bus) in inputs.enumerated() {
            for c in 0..<bus.channels { ins[offset + c] = UnsafePointer(bus.channel(c)) }
            (inPorts + k).initialize(to: agraph_input_port_buffers_t(
                channels: UInt32(bus.channels), valid_frames: 0, ended: 0, reserved0: 0,
                buffers: bus.channels > 0 ? UnsafePointer(ins + offset) : nil))
            offset += bus.channels
        }
        offset = 0
        for (k, bus) in outputs.enumerated() {
            for c in 0..<bus.channels { outs[offset + c] = bus.channel(c) }
            (outPorts + k).initialize(to: agraph_output_port_buffers_t(
                channels: UInt32(bus.channels), valid_frames: 0, ended: 0, reserved0: 0,
                buffers: bus.channels > 0 ? UnsafePointer(outs + offset) : nil))
            offset += bus.channels
        }
        let inChannels = inputs.first?.channels ?? 0
        let outChannels = outputs.first?.channels ?? 0
        let b = UnsafeMutablePointer<agraph_process_t>.allocate(capacity: 1)
        b.initialize(to: agraph_process_t(
            frames: 0, input_channels: UInt32(inChannels), output_channels: UInt32(outChannels), reserved0: 0,
            inputs: inChannels > 0 ? UnsafePointer(ins) : nil,
            outputs: outChannels > 0 ? UnsafePointer(outs) : nil,
            input_valid_frames: 0, input_ended: 0, output_valid_frames: 0, output_ended: 0,
            input_port_count: UInt32(inputs.count), output_port_count: UInt32(outputs.count),
            input_ports: inputs.isEmpty ? nil : UnsafePointer(inPorts), output_ports: outputs.isEmpty ? nil : outPorts))
        inputPointers = ins
        outputPointers = outs
        inputPorts = inPorts
        outputPorts = outPorts
        block = b
    }

    /// [audio-thread & active]
    func render(frames: Int) {
        guard let block, let ins = inputPointers, let outs = outputPointers,
              let inPorts = inputPorts, let outPorts = outputPorts else { return }
        block.pointee.frames = UInt32(frames)
        // Channel pointers follow the engine's block layout: refresh them,
        // and each input's state.
        var offset = 0
        var k = 0
        while k < inputs.count {
            let bus = inputs[k]
            var c = 0
            while c < bus.channels { ins[offset + c] = UnsafePointer(bus.channel(c)); c += 1 }
            offset += bus.channels
            let s = bus.state
            inPorts[k].valid_frames = UInt32(s.validFrames < frames ? s.validFrames : frames)
            inPorts[k].ended = s.ended ? 1 : 0
            k += 1
        }
        offset = 0
        k = 0
        while k < outputs.count {
            let bus = outputs[k]
            var c = 0
            while c < bus.channels { outs[offset + c] = bus.channel(c); c += 1 }
            offset += bus.channels
            k += 1
        }
        // The preset: what the inputs say (a source: the whole block, running).
        var preset = BusState(validFrames: frames, ended: false)
        if !inputs.isEmpty {
            preset = BusState.merging(inputs)
            if preset.validFrames > frames { preset.validFrames = frames }
            block.pointee.input_valid_frames = inPorts[0].valid_frames
            block.pointee.input_ended = inPorts[0].ended
        } else {
            block.pointee.input_valid_frames = 0
            block.pointee.input_ended = 0
        }
        let presetValid = UInt32(preset.validFrames)
        let presetEnded: UInt32 = preset.ended ? 1 : 0
        block.pointee.output_valid_frames = presetValid
        block.pointee.output_ended = presetEnded
        k = 0
        while k < outputs.count {
            outPorts[k].valid_frames = presetValid
            outPorts[k].ended = presetEnded
            k += 1
        }
        processFn(instance, block)
        k = 0
        while k < outputs.count {
            var valid = Int(outPorts[k].valid_frames)
            var ended = outPorts[k].ended != 0
            if k == 0 && outPorts[0].valid_frames == presetValid && outPorts[0].ended == presetEnded {
                // Port 0's state may be written in the 1.0 fields instead.
                valid = Int(block.pointee.output_valid_frames)
                ended = block.pointee.output_ended != 0
            }
            if valid > frames { valid = frames }
            let bus = outputs[k]
            if valid < frames { bus.clear(from: valid, to: frames) }
            bus.state = BusState(validFrames: valid, ended: ended)
            k += 1
        }
    }

    /// [audio-thread & active]
    func apply(_ change: ParameterChange) {
        let i = Int(change.parameter)
        guard i >= 0, i < liveMask.count, liveMask[i], let setParameterFn else { return }
        setParameterFn(instance, UInt32(i), change.value)
    }

    /// [main-thread]
    var latency: Int {
        guard active, let latencyFn else { return 0 }
        return Int(latencyFn(instance))
    }

    func freeBuffers() {
        block?.deallocate(); block = nil
        inputPointers?.deallocate(); inputPointers = nil
        outputPointers?.deallocate(); outputPointers = nil
        inputPorts?.deallocate(); inputPorts = nil
        outputPorts?.deallocate(); outputPorts = nil
    }

    /// [main-thread, after the engine stopped]
    deinit {
        if active { deactivateFn(instance) }
        destroyFn(instance)
        freeBuffers()
    }
}

// MARK: - Helpers

/// A NUL-terminated string from a plugin, read no further than `limit`
/// bytes (so an unterminated or huge string costs at most that); nil for
/// NULL; throws, naming `what`, when it is longer. [any thread]
func boundedString(_ p: UnsafePointer<CChar>?, _ what: String, limit: Int = PluginLimits.stringBytes) throws -> String? {
    guard let p else { return nil }
    let n = strnlen(p, limit + 1)
    guard n <= limit else {
        throw PluginError("\(what) is longer than \(limit) bytes (or not NUL-terminated)")
    }
    return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
}

/// A NUL-terminated string from a plugin for a message: at most `limit`
/// bytes, cut with "…" when longer. [any thread]
func truncatedString(_ p: UnsafePointer<CChar>, limit: Int = PluginLimits.stringBytes) -> String {
    let n = strnlen(p, limit + 1)
    let s = String(decoding: UnsafeRawBufferPointer(start: p, count: min(n, limit)), as: UTF8.self)
    return n > limit ? s + "…" : s
}

/// The `agraph.output-route/1` side of an instance, if it offers one. [main-thread]
func routeExtension(_ type: UnsafePointer<agraph_node_type_t>, _ instance: OpaquePointer) -> agraph_output_route_ext_t? {
    guard let raw = type.pointee.get_extension?(instance, AGRAPH_EXT_OUTPUT_ROUTE) else { return nil }
    let ext = raw.assumingMemoryBound(to: agraph_output_route_ext_t.self).pointee
    return ext.changed == nil ? nil : ext
}

/// The folder of the running executable (for tests: the test runner's,
/// next to the package's built plugin products).
func executableFolder() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = path.lastIndex(of: "/") else { return nil }
    return String(path[..<slash])
}

func realPath(_ path: String) -> String? {
    guard let p = realpath(path, nil) else { return nil }
    defer { free(p) }
    return String(cString: p)
}

/// File names in `folder`, sorted; empty when it can't be read.
func listFolder(_ folder: String) -> [String] {
    guard let dir = opendir(folder) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}
