// Vendor libraries: native code that a plugin loads for a graph (the `daa`
// node's licensee DAA library). Graph files are data, so a graph never
// decides which code runs: a plugin parameter flagged
// AGRAPH_PARAM_VENDOR_LIBRARY names a library, and the host resolves that
// name only inside folders the user configured outside any graph:
//
//   1. every folder of AGRAPH_VENDOR_LIBRARY_PATH (colon-separated);
//   2. every line of $XDG_CONFIG_HOME/agraph/vendor-library-path
//      (default ~/.config/agraph/vendor-library-path): one folder per
//      line, `#` starts a comment line, `~/` is the home folder.
// Relative folders are ignored in both (they would depend on the current
// folder).
//
// A bare file name ("libdlb_decode.so") is searched in those folders in
// order. A value with a '/' is resolved like every path in a graph
// (relative to the graph's folder), then through its symbolic links, and is
// accepted only when the real file lies inside one of the folders (so a
// `..` or a link inside a trusted folder pointing elsewhere is refused).
// The file found must be a regular file and pass `SharedObjectCheck`. The
// plugin then gets the real absolute path; nothing is loaded before this.
import AudioGraphHost
import GraphFile
#if canImport(Glibc)
import Glibc
#endif

/// The folders vendor libraries may come from, configured outside any graph
/// file, and the resolution of a graph's library name against them.
public struct VendorLibraryLocations: Sendable {
    /// A configured folder and where it was configured.
    public struct Folder: Sendable, Equatable {
        public var path: String
        public var origin: String
    }

    /// The colon-separated list of folders, in the environment.
    public static let environmentVariable = "AGRAPH_VENDOR_LIBRARY_PATH"
    /// The config file's name inside `$XDG_CONFIG_HOME/agraph/`.
    public static let configFileName = "vendor-library-path"
    /// Largest config file read (bytes).
    public static let configFileLimit = 64 * 1024

    /// The configured folders in search order, as configured (existing or not).
    public var folders: [Folder] = []
    /// The config file consulted (whether it exists or not), if a home is known.
    public var configFile: String?
    /// Whether the environment variable was set.
    public var environmentSet = false
    /// Whether the config file exists.
    public var configFileFound = false
    /// What was ignored in the configuration (relative folders, an
    /// unreadable file), for messages.
    public var notes: [String] = []

    /// The current configuration: the environment variable, then the config
    /// file. [main-thread]
    public static func current() -> VendorLibraryLocations {
        ThreadRole.check(.main)
        return VendorLibraryLocations(environment: env(environmentVariable), configFile: defaultConfigFile())
    }

    /// `$XDG_CONFIG_HOME/agraph/vendor-library-path`, with the default
    /// `~/.config` when XDG_CONFIG_HOME is unset or relative. [any-thread]
    public static func defaultConfigFile() -> String? {
        if let xdg = env("XDG_CONFIG_HOME"), xdg.hasPrefix("/") { return xdg + "/agraph/" + configFileName }
        if let home = env("HOME"), home.hasPrefix("/") { return home + "/.config/agraph/" + configFileName }
        return nil
    }

    /// Reads a configuration: `environment` is the variable's value (nil when
    /// unset), `configFile` the file to read (missing is fine). [main-thread]
    public init(environment: String?, configFile: String?) {
        ThreadRole.check(.main)
        self.configFile = configFile
        if let environment {
            environmentSet = true
            for entry in environment.split(separator: ":", omittingEmptySubsequences: true).map(String.init) {
                add(entry, origin: Self.environmentVariable)
            }
        }
        if let configFile {
            switch Self.readConfig(configFile) {
            case .success(let lines?):
                configFileFound = true
                for line in lines { add(line, origin: configFile) }
            case .success(nil):
                break
            case .failure(let why):
                configFileFound = true
                notes.append("\(configFile) ignored: \(why)")
            }
        }
    }

    private mutating func add(_ entry: String, origin: String) {
        var path = entry
        if path.hasPrefix("~/"), let home = Self.env("HOME"), home.hasPrefix("/") { path = home + path.dropFirst(1) }
        guard path.hasPrefix("/") else {
            notes.append("relative folder \"\(entry)\" in \(origin) ignored (write it as an absolute path)")
            return
        }
        folders.append(Folder(path: path, origin: origin))
    }

    /// The lines naming folders (comments and blank lines dropped); nil when
    /// the file does not exist.
    static func readConfig(_ path: String) -> Result<[String]?, ConfigError> {
        var st = stat()
        guard stat(path, &st) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? .success(nil) : .failure(ConfigError(SharedObjectCheck.errorText(errno)))
        }
        if let kind = SharedObjectCheck.nonRegularKind(st.st_mode) { return .failure(ConfigError("not a regular file (\(kind))")) }
        guard st.st_size <= Self.configFileLimit else {
            return .failure(ConfigError("\(st.st_size) bytes, larger than \(Self.configFileLimit)"))
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ConfigError(SharedObjectCheck.errorText(errno))) }
        defer { close(fd) }
        let bytes = SharedObjectCheck.read(fd, at: 0, count: Self.configFileLimit)
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .map { $0.trimmingWhitespace() }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return .success(lines)
    }

    struct ConfigError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// The configured folders that exist, as real paths, in order.
    public var trustedFolders: [String] {
        var seen: Set<String> = []
        return folders.compactMap { realPath($0.path) }.filter { seen.insert($0).inserted }
    }

    /// Resolves what a graph wrote for a vendor library: the real absolute
    /// path of a regular shared object inside a trusted folder, or why not
    /// (one message, saying what was searched and how to configure it).
    /// `directory` is the graph's folder. Loads nothing. [main-thread]
    public func resolve(_ value: String, directory: String) -> Result<String, VendorLibraryRefusal> {
        ThreadRole.check(.main)
        let trusted = trustedFolders
        func refuse(_ what: String) -> Result<String, VendorLibraryRefusal> {
            .failure(VendorLibraryRefusal(message: what + ". " + explanation(trusted)))
        }
        guard !value.isEmpty else { return refuse("an empty library name") }
        guard !value.utf8.contains(0) else { return refuse("a library name holding a NUL character") }
        guard value.utf8.count <= Int(PATH_MAX) else { return refuse("a library name longer than \(PATH_MAX) bytes") }
        let real: String
        if !value.contains("/") {
            guard value != ".", value != ".." else { return refuse("\"\(value)\" is not a library name") }
            var found: String?
            for folder in trusted {
                let candidate = folder + "/" + value
                var st = stat()
                guard lstat(candidate, &st) == 0 else { continue }
                guard let r = realPath(candidate) else {
                    return refuse("library \"\(value)\": \(candidate) is a broken symbolic link")
                }
                found = r
                break
            }
            guard let found else {
                return refuse("library \"\(value)\" is not in any trusted vendor-library folder")
            }
            guard Self.isInside(found, trusted) else {
                return refuse("library \"\(value)\" links to \(found), outside the trusted vendor-library folders, so it is not loaded")
            }
            real = found
        } else {
            let absolute = GraphPaths.resolve(value, against: directory)
            guard let r = realPath(absolute) else {
                return refuse("library \"\(value)\" (\(absolute)) does not exist")
            }
            guard Self.isInside(r, trusted) else {
                let shown = r == absolute ? r : "\(absolute), really \(r)"
                return refuse("library \"\(value)\" (\(shown)) is outside the trusted vendor-library folders, so it is not loaded")
            }
            real = r
        }
        if let problem = SharedObjectCheck.problem(path: real) {
            return .failure(VendorLibraryRefusal(message: "library \"\(value)\" (\(real)) cannot be used: \(problem)"))
        }
        return .success(real)
    }

    static func isInside(_ path: String, _ folders: [String]) -> Bool {
        folders.contains { $0 == "/" ? path.hasPrefix("/") : path.hasPrefix($0 + "/") }
    }

    /// What a graph may name and where it was looked for, for messages.
    public func explanation(_ trusted: [String]? = nil) -> String {
        let existing = trusted ?? trustedFolders
        var s = "A graph names a vendor library by file name, and agraph loads it only from the vendor-library folders configured outside any graph file: "
        let file = configFile ?? "$XDG_CONFIG_HOME/agraph/\(Self.configFileName)"
        if folders.isEmpty {
            s += "none is configured (\(Self.environmentVariable) is \(environmentSet ? "empty" : "unset"); \(file) \(configFileFound ? "lists none" : "does not exist"))"
        } else {
            let listed = folders.map { f -> String in
                let real = realPath(f.path)
                let state = real == nil ? ", missing" : ""
                return "\(f.path) (\(f.origin == Self.environmentVariable ? f.origin : "config file")\(state))"
            }
            s += "searched " + listed.joined(separator: ", ")
            if existing.isEmpty { s += "; none of them exists" }
        }
        s += ". Put the library in such a folder, or add its folder to \(Self.environmentVariable) (colon-separated) or to \(file) (one folder per line)"
        if !notes.isEmpty { s += " [" + notes.joined(separator: "; ") + "]" }
        return s
    }

    static func env(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        return String(cString: v)
    }
}

/// Why a graph's vendor library was not accepted.
public struct VendorLibraryRefusal: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

extension Substring {
    func trimmingWhitespace() -> String {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
