import AudioGraphPlugins
#if canImport(Glibc)
import Glibc
#endif

/// Why `NodeRegistry.standard(pluginFolders:)` refused: a plugin folder the
/// caller named is not a folder it can read. Nothing else makes it throw:
/// plugins that fail to load are reported (`standardWithReport`), and a
/// graph naming one of their types gets an "unavailable: why" diagnostic.
public struct RegistryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The folder as the caller named it.
    public var folder: String
    /// What is wrong with it.
    public var reason: String
    /// What to do about it.
    public var suggestion: String { "name an existing folder holding libAGraph*.so plugins, or leave it out" }

    public var description: String { "plugin folder \(folder): \(reason); \(suggestion)" }
}

extension NodeRegistry {
    /// Every node type an offline program can use, found the way `agraph`
    /// finds them: the built-in nodes (LV2 plugins through the `lv2` node,
    /// found on `LV2_PATH` or lilv's default folders when a graph names
    /// one), then the node plugins (`libAGraph*.so`) in every folder of
    /// `AGRAPH_PLUGIN_PATH`, beside the running executable (where SwiftPM
    /// puts the package's plugin products), and in `pluginFolders`.
    ///
    /// Each call searches again (plugins already loaded are not loaded
    /// twice by the system; a program usually calls it once).
    /// What failed to load is not an error here: it is kept in the
    /// registry's `unavailableNote`, which every "unknown node type"
    /// diagnostic quotes; `standardWithReport` returns the whole report.
    /// - Throws: only when a folder of `pluginFolders` is not a readable
    ///   folder (a folder in `AGRAPH_PLUGIN_PATH` that is missing is listed
    ///   as searched, as `agraph` does).
    /// [main-thread; loading a plugin runs its init]
    public static func standard(pluginFolders: [String] = []) throws(RegistryError) -> NodeRegistry {
        ThreadRole.check(.main)
        return try standardWithReport(pluginFolders: pluginFolders).registry
    }

    /// `standard(pluginFolders:)` and the plugin search's report: the
    /// folders searched, the plugins loaded and their node types
    /// (`report.plugins`), and every library or type that failed and why
    /// (`report.failures`; `report.note` says it in one line).
    /// [main-thread; loading a plugin runs its init]
    public static func standardWithReport(pluginFolders: [String] = []) throws(RegistryError)
        -> (registry: NodeRegistry, pluginReport: PluginCatalog) {
        ThreadRole.check(.main)
        for folder in pluginFolders {
            var st = stat()
            guard stat(folder, &st) == 0 else {
                throw RegistryError(folder: folder, reason: String(cString: strerror(errno)))
            }
            guard st.st_mode & S_IFMT == S_IFDIR else { throw RegistryError(folder: folder, reason: "not a folder") }
            guard access(folder, R_OK | X_OK) == 0 else {
                throw RegistryError(folder: folder, reason: "cannot be read: \(String(cString: strerror(errno)))")
            }
        }
        let (registry, report) = NodeRegistry.withPlugins(.builtIn, extraFolders: pluginFolders)
        return (registry, report)
    }
}
