// The plugin catalogue: finds node plugins, checks their ABI version, and
// wraps each node type they describe (agraph_plugin.h, ABI 2.0) into a
// `PluginNodeType`.
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
// version (a 1.x plugin is told to rebuild against 2.0), a count or string over the limits, a malformed node type, a type
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
    /// The descriptor (for `deinit`).
    public var descriptor: UnsafePointer<agraph_plugin_t>? = nil
    /// Whether the plugin's `init` ran and succeeded.
    public var initialized = false

    /// Calls the plugin's `deinit` when its `init` ran: only once
    /// every instance is destroyed, and only by a host that is done with the
    /// library (`agraph check-plugin`). Returns whether it was called.
    /// [main-thread]
    @discardableResult
    public func callDeinit() -> Bool {
        ThreadRole.check(.main)
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

    /// The ABI major version this agraph reads (any minor of it), and its own minor.
    public static let abiMajor = Int(AGRAPH_PLUGIN_ABI_MAJOR)
    public static let abiMinor = Int(AGRAPH_PLUGIN_ABI_MINOR)

    /// Why a plugin of ABI `major.minor` is refused, naming both versions;
    /// nil when this agraph loads it (same major, any minor). [any-thread]
    public static func versionRefusal(major: UInt32, minor: UInt32) -> String? {
        guard Int(major) != abiMajor else { return nil }
        let here = "this agraph loads plugin ABI \(abiMajor).\(abiMinor) (any \(abiMajor).x)"
        return Int(major) < abiMajor
            ? "built for ABI \(major).\(minor); \(here): rebuild it against agraph_plugin.h \(abiMajor).\(abiMinor) (docs/plugin-abi.md, \"Migrating from 1.x\")"
            : "built for ABI \(major).\(minor); \(here): it needs a newer agraph"
    }

    public init() {}

    /// The default folders: AGRAPH_PLUGIN_PATH, then the executable's folder.
    /// [any-thread]
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
        ThreadRole.check(.main)
        let (env, build) = defaultFolders()
        return load(pluginPath: env, buildFolders: build + extraFolders)
    }

    /// Loads the plugins of `pluginPath` (every `libAGraph*.so`) then of
    /// `buildFolders` (every `libAGraph*.so` except `libAGraphTest*`).
    /// [main-thread]
    public static func load(pluginPath: [String], buildFolders: [String]) -> PluginCatalog {
        ThreadRole.check(.main)
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
        ThreadRole.check(.main)
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
        // Read the version first (the first field in every version), and
        // nothing else of another major version.
        let abi = UnsafeRawPointer(plugin).load(as: agraph_abi_version_t.self)
        if let refusal = Self.versionRefusal(major: abi.major, minor: abi.minor) {
            failures.append(PluginLoadFailure(path: path, reason: refusal))
            return
        }
        let p = plugin.pointee
        // Library-wide init, before anything else of the plugin.
        var initialized = false
        if let initFn = p.`init` {
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
                let type = try PluginNodeType(type: t, path: path)
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
    /// `plugins searched: /a, /b; failed to load: libAGraphX.so (built for ABI 1.4; …)`.
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

extension NodeRegistry {
    /// Adds the catalog's types. A type whose id is already registered (a
    /// built-in) is not added; it is returned as a failure instead.
    /// [main-thread | control-thread; OSC's reload builds the registry on its thread]
    public mutating func register(plugins catalog: PluginCatalog) -> [PluginLoadFailure] {
        ThreadRole.check(.main, .control)
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
        ThreadRole.check(.main)
        var report = PluginCatalog.load(extraFolders: extraFolders)
        var registry = base
        report.failures += registry.register(plugins: report)
        registry.unavailableNote = report.note
        return (registry, report)
    }
}
