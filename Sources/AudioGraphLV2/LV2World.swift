import AudioGraphCore
import CLilv
import CLV2Host
import Foundation

// The LV2 world: lilv's view of every plugin installed on LV2_PATH, loaded
// once per process on first use (the `lv2` node type, `agraph nodes lv2`).
// lilv is not thread-safe: every call into it goes through `LV2World.shared`
// under its lock, off the audio thread (instantiate, describe, state).

/// LV2's URIs that AudioGraph reads or gives.
public enum LV2URI {
    public static let core = "http://lv2plug.in/ns/lv2core#"
    public static let audioPort = core + "AudioPort"
    public static let controlPort = core + "ControlPort"
    public static let cvPort = core + "CVPort"
    public static let inputPort = core + "InputPort"
    public static let outputPort = core + "OutputPort"
    public static let atomPort = "http://lv2plug.in/ns/ext/atom#AtomPort"
    public static let toggled = core + "toggled"
    public static let integer = core + "integer"
    public static let enumeration = core + "enumeration"
    public static let reportsLatency = core + "reportsLatency"
    public static let isSideChain = core + "isSideChain"
    public static let connectionOptional = core + "connectionOptional"
    public static let sampleRateProperty = core + "sampleRate"
    public static let unit = "http://lv2plug.in/ns/extensions/units#unit"
    public static let unitSymbol = "http://lv2plug.in/ns/extensions/units#symbol"
    public static let atomSequence = "http://lv2plug.in/ns/ext/atom#Sequence"
    public static let atomChunk = "http://lv2plug.in/ns/ext/atom#Chunk"
    public static let atomFloat = "http://lv2plug.in/ns/ext/atom#Float"
    public static let atomInt = "http://lv2plug.in/ns/ext/atom#Int"

    public static let uridMap = "http://lv2plug.in/ns/ext/urid#map"
    public static let uridUnmap = "http://lv2plug.in/ns/ext/urid#unmap"
    public static let options = "http://lv2plug.in/ns/ext/options#options"
    public static let optionsInterface = "http://lv2plug.in/ns/ext/options#interface"
    public static let boundedBlockLength = "http://lv2plug.in/ns/ext/buf-size#boundedBlockLength"
    public static let minBlockLength = "http://lv2plug.in/ns/ext/buf-size#minBlockLength"
    public static let maxBlockLength = "http://lv2plug.in/ns/ext/buf-size#maxBlockLength"
    public static let nominalBlockLength = "http://lv2plug.in/ns/ext/buf-size#nominalBlockLength"
    public static let sequenceSize = "http://lv2plug.in/ns/ext/buf-size#sequenceSize"
    public static let sampleRate = "http://lv2plug.in/ns/ext/parameters#sampleRate"
    public static let workerSchedule = "http://lv2plug.in/ns/ext/worker#schedule"
    public static let workerInterface = "http://lv2plug.in/ns/ext/worker#interface"
    public static let log = "http://lv2plug.in/ns/ext/log#log"
    public static let logError = "http://lv2plug.in/ns/ext/log#Error"
    public static let logWarning = "http://lv2plug.in/ns/ext/log#Warning"
    public static let logNote = "http://lv2plug.in/ns/ext/log#Note"
    public static let logTrace = "http://lv2plug.in/ns/ext/log#Trace"
    public static let stateInterface = "http://lv2plug.in/ns/ext/state#interface"
    public static let stateLoadDefault = "http://lv2plug.in/ns/ext/state#loadDefaultState"
    public static let hardRTCapable = core + "hardRTCapable"
    public static let isLive = core + "isLive"
    public static let inPlaceBroken = core + "inPlaceBroken"

    /// The host features AudioGraph gives every instance. A plugin that
    /// requires another is reported unavailable with the missing one named.
    public static let givenFeatures: Set<String> = [
        uridMap, uridUnmap, options, boundedBlockLength, workerSchedule, log,
        stateLoadDefault, isLive, hardRTCapable, inPlaceBroken,
    ]
}

/// Why an LV2 plugin cannot be described or made.
public struct LV2Error: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One port of a plugin, as its description (TTL) says.
public struct LV2Port: Sendable {
    public enum Kind: String, Sendable { case audio, control, cv, atom, other }
    public var index: Int
    public var symbol: String
    public var name: String
    public var kind: Kind
    public var isInput: Bool
    public var minimum: Float?
    public var maximum: Float?
    public var defaultValue: Float?
    public var isToggle: Bool
    public var isInteger: Bool
    public var isEnumeration: Bool
    public var reportsLatency: Bool
    public var isSideChain: Bool
    public var isOptional: Bool
    /// `lv2:sampleRate`: the range and values are fractions of the sample rate.
    public var isSampleRate: Bool
    /// Labelled values (`lv2:scalePoint`), sorted by value.
    public var scalePoints: [(label: String, value: Float)]
    /// The unit's symbol ("dB", "Hz", "ms"), when the port says.
    public var unit: String?
    /// An atom port's buffer size the plugin asks for (`rsz:minimumSize`).
    public var minimumSize: Int? = nil
}

/// What `agraph nodes lv2:URI` and the `lv2` node need of a plugin.
public struct LV2PluginDescription: Sendable {
    public var uri: String
    public var name: String
    public var className: String
    public var bundle: String
    public var ports: [LV2Port]
    public var requiredFeatures: [String]
    public var optionalFeatures: [String]
    /// Whether lilv found the description complete (`lilv_plugin_verify`).
    public var verified: Bool

    public var audioInputs: [LV2Port] { ports.filter { $0.kind == .audio && $0.isInput && !$0.isSideChain } }
    public var sideChainInputs: [LV2Port] { ports.filter { $0.kind == .audio && $0.isInput && $0.isSideChain } }
    public var audioOutputs: [LV2Port] { ports.filter { $0.kind == .audio && !$0.isInput } }
    public var controlInputs: [LV2Port] { ports.filter { $0.kind == .control && $0.isInput } }
    public var controlOutputs: [LV2Port] { ports.filter { $0.kind == .control && !$0.isInput } }
    public var latencyPort: LV2Port? { ports.first { $0.kind == .control && !$0.isInput && $0.reportsLatency } }
    /// Required features AudioGraph does not give.
    public var missingFeatures: [String] { requiredFeatures.filter { !LV2URI.givenFeatures.contains($0) } }
}

/// The process's LV2 world (lilv), loaded on first use. [main-thread | worker-thread; every member
/// takes a lock]
public final class LV2World: @unchecked Sendable {
    public static let shared = LV2World()

    private let lock = NSLock()
    private var world: OpaquePointer?
    private var nodes: [String: OpaquePointer] = [:]
    private var descriptions: [String: LV2PluginDescription] = [:]

    private init() {}

    /// The folders lilv searches: `LV2_PATH`, or its default.
    public static var searchPath: String {
        if let p = ProcessInfo.processInfo.environment["LV2_PATH"], !p.isEmpty { return p }
        return "~/.lv2:/usr/local/lib/lv2:/usr/lib/lv2"
    }

    /// Runs `body` with the loaded world, under the lock.
    func withWorld<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        if world == nil, let w = lilv_world_new() {
            Self.loadAll(w)
            world = w
        }
        return try body(world!)
    }

    /// Loads what `lilv_world_load_all` loads, but only the entries of
    /// `searchPath`'s folders that are bundles (folders holding a
    /// manifest.ttl): for any other entry (a stray file, a folder without
    /// a manifest) lilv prints three errors on stderr, on every command
    /// that loads the world. A bundle's own errors (a broken manifest, a
    /// plugin's broken description) are still lilv's to print. [under the lock]
    static func loadAll(_ w: OpaquePointer) {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
        for part in searchPath.split(separator: ":") {
            var folder = String(part)
            if folder == "~" || folder.hasPrefix("~/") { folder = home + folder.dropFirst() }
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in entries.sorted() {
                let bundle = (folder.hasSuffix("/") ? folder : folder + "/") + name + "/"
                var st = stat()
                guard stat(bundle + "manifest.ttl", &st) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                      let n = lilv_new_file_uri(w, nil, bundle) else { continue }
                lilv_world_load_bundle(w, n)
                lilv_node_free(n)
            }
        }
        // lilv_world_load_all's last steps (the specifications and plugin
        // classes of what is loaded), with no folder left to read.
        if let none = lilv_new_string(w, "") {
            lilv_world_set_option(w, LILV_OPTION_LV2_PATH, none)
            lilv_node_free(none)
        }
        lilv_world_load_all(w)
    }

    /// What is wrong with `text` as the `state` of plugin `uri`, or nil:
    /// Turtle that does not parse (serd's message, with the line and
    /// column in the state), Turtle that holds no LV2 state lilv can read,
    /// or the state of another plugin. Nothing is printed.
    public func stateProblem(_ text: String, plugin uri: String) -> String? {
        var message = [CChar](repeating: 0, count: 512)
        var line: UInt32 = 0, column: UInt32 = 0
        var hasPreset: Int32 = 0
        if agraph_turtle_check(text, &message, message.count, &line, &column, &hasPreset) != 0 {
            let detail = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return "the state is not valid Turtle: line \(line), column \(column) of the state: \(detail.isEmpty ? "syntax error" : detail)"
        }
        // lilv 0.24 dereferences NULL on Turtle without a preset.
        guard hasPreset != 0 else {
            return "the state holds no LV2 state (nothing in it is a pset:Preset; write the Turtle a saved state gives: LV2State.save, or a session's save)"
        }
        return withWorld { w in
            guard let st = lilv_state_new_from_string(w, LV2URIDTable.shared.mapFeature, text) else {
                return "the state holds no LV2 state lilv can read (write the Turtle a saved state gives: LV2State.save, or a session's save)"
            }
            defer { lilv_state_free(st) }
            if let p = lilv_state_get_plugin_uri(st), let s = lilv_node_as_uri(p), String(cString: s) != uri {
                return "the state is one of the plugin \"\(String(cString: s))\", not of \"\(uri)\""
            }
            return nil
        }
    }

    /// A URI node, made once. [under the lock]
    func node(_ w: OpaquePointer, _ uri: String) -> OpaquePointer? {
        if let n = nodes[uri] { return n }
        guard let n = lilv_new_uri(w, uri) else { return nil }
        nodes[uri] = n
        return n
    }

    /// The plugin `uri`, or nil. [under the lock]
    func plugin(_ w: OpaquePointer, _ uri: String) -> OpaquePointer? {
        guard let plugins = lilv_world_get_all_plugins(w), let u = node(w, uri) else { return nil }
        return lilv_plugins_get_by_uri(plugins, u)
    }

    /// Loads one more bundle (a folder holding a manifest.ttl) beside
    /// those on `searchPath`: plugins a program brings along, and the
    /// tests' fixtures.
    public func loadBundle(_ folder: String) {
        withWorld { w in
            let path = folder.hasSuffix("/") ? folder : folder + "/"
            guard let n = lilv_new_file_uri(w, nil, path) else { return }
            lilv_world_load_bundle(w, n)
            lilv_node_free(n)
            descriptions.removeAll()
        }
    }

    /// Every installed plugin's URI, sorted.
    public var uris: [String] {
        withWorld { w in
            var out: [String] = []
            guard let plugins = lilv_world_get_all_plugins(w) else { return out }
            var i = lilv_plugins_begin(plugins)
            while !lilv_plugins_is_end(plugins, i) {
                if let p = lilv_plugins_get(plugins, i), let u = lilv_node_as_uri(lilv_plugin_get_uri(p)) {
                    out.append(String(cString: u))
                }
                i = lilv_plugins_next(plugins, i)
            }
            return out.sorted()
        }
    }

    /// Describes plugin `uri` (cached). Throws when no plugin has that URI
    /// on `searchPath` (naming the closest URIs), or its description is
    /// broken.
    public func describe(_ uri: String) throws(LV2Error) -> LV2PluginDescription {
        // lilv is loaded the first time a graph needs it (CLazyLibs).
        if let missing = LazyLibrary.require(.lilv, .serd, for: "the `lv2` node") { throw LV2Error(missing) }
        let result: Result<LV2PluginDescription, LV2Error> = withWorld { w in
            if let d = descriptions[uri] { return .success(d) }
            guard let p = plugin(w, uri) else { return .failure(LV2Error(unknownMessage(uri, w))) }
            let d = describe(w, p, uri)
            descriptions[uri] = d
            return .success(d)
        }
        return try result.get()
    }

    private func unknownMessage(_ uri: String, _ w: OpaquePointer) -> String {
        var all: [String] = []
        if let plugins = lilv_world_get_all_plugins(w) {
            var i = lilv_plugins_begin(plugins)
            while !lilv_plugins_is_end(plugins, i) {
                if let p = lilv_plugins_get(plugins, i), let u = lilv_node_as_uri(lilv_plugin_get_uri(p)) { all.append(String(cString: u)) }
                i = lilv_plugins_next(plugins, i)
            }
        }
        let close = LV2Suggestions.closest(to: uri, in: all, count: 3)
        let hint = close.isEmpty ? "" : "; did you mean " + close.map { "\"\($0)\"" }.joined(separator: " or ") + "?"
        return "no LV2 plugin has the URI \"\(uri)\" (searched LV2_PATH=\(Self.searchPath): \(all.count) plugins)\(hint); `agraph nodes lv2` lists them"
    }

    private func string(_ n: OpaquePointer?) -> String? {
        guard let n, let s = lilv_node_as_string(n) else { return nil }
        return String(cString: s)
    }

    private func float(_ n: OpaquePointer?) -> Float? {
        guard let n, lilv_node_is_float(n) || lilv_node_is_int(n) else { return nil }
        return lilv_node_as_float(n)
    }

    /// Every installed plugin as `agraph nodes lv2` lists it, sorted by
    /// URI: a description with the ports' kinds, directions, sidechain and
    /// latency roles only (no ranges, names, scale points or units: the
    /// list shows none, and reading them for hundreds of plugins took
    /// seconds). Not cached; `describe` gives the whole description.
    public func listing() -> [LV2PluginDescription] {
        withWorld { w in
            var out: [LV2PluginDescription] = []
            guard let plugins = lilv_world_get_all_plugins(w) else { return out }
            var i = lilv_plugins_begin(plugins)
            while !lilv_plugins_is_end(plugins, i) {
                if let p = lilv_plugins_get(plugins, i), let u = lilv_node_as_uri(lilv_plugin_get_uri(p)) {
                    out.append(descriptions[String(cString: u)] ?? describe(w, p, String(cString: u), full: false))
                }
                i = lilv_plugins_next(plugins, i)
            }
            return out.sorted { $0.uri < $1.uri }
        }
    }

    /// `full` false: the ports' kinds, directions and roles only (`listing`).
    private func describe(_ w: OpaquePointer, _ p: OpaquePointer, _ uri: String, full: Bool = true) -> LV2PluginDescription {
        let nameNode = lilv_plugin_get_name(p)
        defer { lilv_node_free(nameNode) }
        let className = lilv_plugin_get_class(p).flatMap { string(lilv_plugin_class_get_label($0)) } ?? ""
        let bundle = string(lilv_plugin_get_bundle_uri(p)) ?? ""
        var ports: [LV2Port] = []
        let count = lilv_plugin_get_num_ports(p)
        let audio = node(w, LV2URI.audioPort), control = node(w, LV2URI.controlPort), cv = node(w, LV2URI.cvPort)
        let atom = node(w, LV2URI.atomPort), input = node(w, LV2URI.inputPort)
        let toggled = node(w, LV2URI.toggled), integer = node(w, LV2URI.integer), enumeration = node(w, LV2URI.enumeration)
        let latency = node(w, LV2URI.reportsLatency), sideChain = node(w, LV2URI.isSideChain)
        let srProp = node(w, LV2URI.sampleRateProperty)
        let minimumSize = node(w, "http://lv2plug.in/ns/ext/resize-port#minimumSize")
        let optional = node(w, LV2URI.connectionOptional), unit = node(w, LV2URI.unit), unitSymbol = node(w, LV2URI.unitSymbol)
        for i in 0..<count {
            guard let port = lilv_plugin_get_port_by_index(p, i) else { continue }
            func isA(_ n: OpaquePointer?) -> Bool { n.map { lilv_port_is_a(p, port, $0) } ?? false }
            func has(_ n: OpaquePointer?) -> Bool { n.map { lilv_port_has_property(p, port, $0) } ?? false }
            let kind: LV2Port.Kind = isA(audio) ? .audio : isA(control) ? .control : isA(cv) ? .cv : isA(atom) ? .atom : .other
            guard full else {
                let role = kind == .audio || kind == .control
                ports.append(LV2Port(
                    index: Int(i), symbol: "", name: "", kind: kind, isInput: isA(input), minimum: nil, maximum: nil,
                    defaultValue: nil, isToggle: false, isInteger: false, isEnumeration: false,
                    reportsLatency: kind == .control && has(latency), isSideChain: role && has(sideChain),
                    isOptional: false, isSampleRate: false, scalePoints: [], unit: nil))
                continue
            }
            var def: OpaquePointer?, lo: OpaquePointer?, hi: OpaquePointer?
            lilv_port_get_range(p, port, &def, &lo, &hi)
            defer { lilv_node_free(def); lilv_node_free(lo); lilv_node_free(hi) }
            let nameN = lilv_port_get_name(p, port)
            defer { lilv_node_free(nameN) }
            var points: [(String, Float)] = []
            if let sp = lilv_port_get_scale_points(p, port) {
                var k = lilv_scale_points_begin(sp)
                while !lilv_scale_points_is_end(sp, k) {
                    if let point = lilv_scale_points_get(sp, k), let label = string(lilv_scale_point_get_label(point)),
                       let v = float(lilv_scale_point_get_value(point)) {
                        points.append((label, v))
                    }
                    k = lilv_scale_points_next(sp, k)
                }
                lilv_scale_points_free(sp)
            }
            points.sort { $0.1 < $1.1 }
            var unitText: String?
            if let u = unit, let un = lilv_port_get(p, port, u) {
                unitText = Self.unitName(string(un) ?? "")
                if unitText == nil, let sym = unitSymbol, let s = lilv_world_get(w, un, sym, nil) {
                    unitText = string(s)
                    lilv_node_free(s)
                }
                lilv_node_free(un)
            }
            var minSize: Int?
            if let m = minimumSize, let n = lilv_port_get(p, port, m) {
                if lilv_node_is_int(n) { minSize = Int(lilv_node_as_int(n)) }
                lilv_node_free(n)
            }
            ports.append(LV2Port(
                index: Int(i), symbol: string(lilv_port_get_symbol(p, port)) ?? "port\(i)",
                name: string(nameN) ?? "", kind: kind, isInput: isA(input),
                minimum: float(lo), maximum: float(hi), defaultValue: float(def),
                isToggle: has(toggled), isInteger: has(integer), isEnumeration: has(enumeration),
                reportsLatency: has(latency), isSideChain: has(sideChain), isOptional: has(optional), isSampleRate: has(srProp),
                scalePoints: points, unit: unitText, minimumSize: minSize))
        }
        func uris(_ nodes: UnsafeMutableRawPointer?) -> [String] {
            guard let nodes else { return [] }
            defer { lilv_nodes_free(nodes) }
            var out: [String] = []
            var i = lilv_nodes_begin(nodes)
            while !lilv_nodes_is_end(nodes, i) {
                if let s = string(lilv_nodes_get(nodes, i)) { out.append(s) }
                i = lilv_nodes_next(nodes, i)
            }
            return out
        }
        return LV2PluginDescription(
            uri: uri, name: string(nameNode) ?? uri, className: className, bundle: bundle, ports: ports,
            requiredFeatures: uris(lilv_plugin_get_required_features(p)),
            optionalFeatures: uris(lilv_plugin_get_optional_features(p)),
            verified: lilv_plugin_verify(p))
    }

    /// LV2's units (units.ttl) by their symbol.
    static func unitName(_ uri: String) -> String? {
        let prefix = "http://lv2plug.in/ns/extensions/units#"
        guard uri.hasPrefix(prefix) else { return nil }
        let names = ["db": "dB", "hz": "Hz", "khz": "kHz", "mhz": "MHz", "ms": "ms", "s": "s", "min": "min",
                     "pc": "%", "coef": "coefficient", "bpm": "BPM", "beat": "beats", "bar": "bars", "cent": "cents",
                     "semitone12TET": "semitones", "midiNote": "MIDI note", "degree": "degrees", "frame": "frames",
                     "m": "m", "cm": "cm", "mm": "mm", "km": "km", "oct": "octaves", "hour": "h"]
        return names[String(uri.dropFirst(prefix.count))]
    }
}

/// Close URIs for "did you mean": by edit distance of the whole URI and of
/// its last path segment.
enum LV2Suggestions {
    static func closest(to uri: String, in all: [String], count: Int) -> [String] {
        func tail(_ s: String) -> Substring { s.split(whereSeparator: { $0 == "/" || $0 == "#" }).last ?? Substring(s) }
        let t = tail(uri).lowercased()
        let scored = all.map { candidate -> (String, Int) in
            let whole = distance(Array(uri.lowercased().utf8), Array(candidate.lowercased().utf8))
            let last = distance(Array(t.utf8), Array(tail(candidate).lowercased().utf8))
            return (candidate, min(whole, last * 2))
        }
        return scored.filter { $0.1 <= max(4, uri.count / 3) }.sorted { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }
            .prefix(count).map(\.0)
    }

    static func distance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count)
        var cur = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}
