// Helpers of the plugin host: the limits on what is read from a plugin,
// bounded string reading, and the file-system look-ups of the search.
import AudioGraphHost
import CAGraphPlugin
#if canImport(Glibc)
import Glibc
#endif

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

/// A NUL-terminated string from a plugin, read no further than `limit`
/// bytes (so an unterminated or huge string costs at most that); nil for
/// NULL; throws, naming `what`, when it is longer. [any-thread]
func boundedString(_ p: UnsafePointer<CChar>?, _ what: String, limit: Int = PluginLimits.stringBytes) throws -> String? {
    guard let p else { return nil }
    let n = strnlen(p, limit + 1)
    guard n <= limit else {
        throw PluginError("\(what) is longer than \(limit) bytes (or not NUL-terminated)")
    }
    return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
}

/// A NUL-terminated string from a plugin for a message: at most `limit`
/// bytes, cut with "…" when longer. [any-thread]
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
