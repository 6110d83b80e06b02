// `agraph run` under an NSM session manager (NSM_URL set): the graph the
// session plays is `<path_to_instance_files>.json`, made the first time from
// the graph given on the command line, with its relative paths made
// absolute against that graph's folder (so the copy reads the same media);
// save writes it again with the live parameter values (and the command
// line's `--set` values, which are part of what plays); the JACK client is
// named by the session's client id. The protocol is AudioGraphOSC's NSMClient.

import AudioGraph
import AudioGraphJACK
import AudioGraphOSC
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A graph file that belongs to an NSM session. [main-thread]
public final class NSMSession {
    public static let capabilities = [":dirty:", ":switch:"]

    public let client: NSMClient
    /// The node types the session's files are validated against.
    private let registry: () -> NodeRegistry
    private let output: TextOutput
    /// `<path_to_instance_files>.json`.
    public private(set) var file = ""
    public private(set) var clientID = ""
    /// The session file's document as last read or written.
    private var document: JSONValue?
    /// Every live parameter's value when the file was last read or written,
    /// and at the last look.
    private var saved: [String: Double] = [:]
    private var seen: [String: Double] = [:]
    private var lastLook = 0.0
    /// The graph monitor whose parameter and reload events say when to look
    /// at the live values again, and the session's place in it.
    private var eventFeed: (monitor: GraphMonitor, cursor: GraphEventCursor)?
    /// The command line's `--set` values: part of what plays, so part of
    /// what a save writes.
    private var overrides: [ParameterOverride] = []
    /// They change the session file (it is dirty from the start).
    private var overridesChangeFile = false
    /// The graph given on the command line: a session's file is made from it.
    private var original = ""

    private init(client: NSMClient, registry: @escaping () -> NodeRegistry, output: TextOutput) {
        self.client = client
        self.registry = registry
        self.output = output
    }

    /// The session could not be joined or opened; what went wrong has been
    /// printed (and, for an open, answered to the server with `/error`).
    public struct Refused: Error {}

    /// Announces `agraph` to the server at `url` and waits for its
    /// `/nsm/client/open`; makes the session file from `original` when it
    /// does not exist yet and validates it against `registry()`. Returns
    /// nil when `cancelled()` (SIGTERM) came first. On an invalid session
    /// file, replies `/error` with the diagnostics and throws `Refused`.
    public static func join(url: String, original: String, registry: @escaping () -> NodeRegistry,
                            overrides: [ParameterOverride], cancelled: () -> Bool,
                            output: TextOutput = .standard) throws(Refused) -> (NSMSession, ValidatedGraph)? {
        let client: NSMClient
        do {
            client = try NSMClient(serverURL: url)
            try client.announce(applicationName: "agraph", capabilities: capabilities, executableName: "agraph")
        } catch {
            output.error("agraph: NSM_URL=\(url): \(error)")
            throw Refused()
        }
        output.error("agraph: announced to the session manager at \(url); waiting for it to open a session")
        let session = NSMSession(client: client, registry: registry, output: output)
        while !cancelled() {
            guard let request = client.receive(timeout: 0.1) else { continue }
            switch request {
            case .announced(let message, let server, _):
                output.error("agraph: session manager \(server.isEmpty ? "" : "'\(server)' ")says: \(message)")
            case .error(let path, let code, let message):
                output.error("agraph: the session manager refused \(path) (\(code)): \(message)")
                if path == "/nsm/server/announce" { throw Refused() }
            case .open(let path, _, let clientID):
                if let graph = try session.open(path: path, clientID: clientID, original: original,
                                                registry: registry(), overrides: overrides) {
                    return (session, graph)
                }
            case .save:
                client.error(to: "/nsm/client/save", code: .noSessionOpen, "no session is open yet")
            case .other: break
            }
        }
        return nil
    }

    /// Opens (and the first time makes) the session file; nil with an
    /// `/error` reply when it cannot be made; throws when it is invalid.
    private func open(path: String, clientID: String, original: String, registry: NodeRegistry,
                      overrides: [ParameterOverride]) throws(Refused) -> ValidatedGraph? {
        let file = path + ".json"
        guard let made = makeIfMissing(file, from: original, registry: registry) else { return nil }
        switch GraphValidator(registry: registry).validate(file: file, overrides: overrides) {
        case .success(let g):
            for w in g.warnings { output.error(w.description) }
            self.file = file
            self.clientID = clientID
            self.original = original
            self.overrides = overrides
            (document, overridesChangeFile) = readSessionDocument(registry: registry)
            return g
        case .failure(let errors):
            let text = errors.diagnostics.map(\.description).joined(separator: "\n")
            client.error(to: "/nsm/client/open", code: .badProject, text)
            for d in errors.diagnostics { output.error(d.description) }
            // A copy of an invalid original is not kept: the next open
            // copies the original again, once it is fixed.
            if made { unlink(file) }
            throw Refused()
        }
    }

    /// Makes the session file `file` from `original` when there is none
    /// yet; returns whether it made it, or nil after an `/error` reply
    /// (`-10`) when it could not.
    private func makeIfMissing(_ file: String, from original: String, registry: NodeRegistry) -> Bool? {
        guard access(file, F_OK) != 0 else { return false }
        do { try Self.makeSessionFile(file, from: original, registry: registry) } catch {
            client.error(to: "/nsm/client/open", code: .createFailed, "\(error)")
            output.error("agraph: \(error)")
            return nil
        }
        output.error("agraph: session file \(file) made from \(original)")
        return true
    }

    /// The graph is playing: `/reply "/nsm/client/open" "OK"`.
    public func opened(_ live: RunningGraph) {
        saved = Self.liveValues(live.compiled)
        seen = saved
        client.reply(to: "/nsm/client/open", "OK")
        // `--set` values the file does not hold: what plays is not saved yet.
        if overridesChangeFile { client.markDirty() }
    }

    /// The session file's document with the `--set` values written in (as
    /// the graph that plays was validated), and whether they change it.
    private func readSessionDocument(registry: NodeRegistry) -> (JSONValue?, Bool) {
        let plain = (try? FileChecks.readRegularFile(file, maximumBytes: FileChecks.maximumGraphFileBytes))
            .flatMap { try? JSONParser.parse($0) }
        guard let plain, !overrides.isEmpty,
              case .success(let overridden) = GraphValidator(registry: registry).document(file: file, overrides: overrides)
        else { return (plain, false) }
        return (overridden, Self.render(overridden) != Self.render(plain))
    }

    /// A hot reload: the session's graph is what now runs. Reloaded from
    /// the session file, it is clean as read; from another file, that
    /// file's graph (its relative paths made absolute) is what the next
    /// save writes, and the session is dirty until then.
    public func reloaded(_ live: RunningGraph, from path: String) {
        let values = Self.liveValues(live.compiled)
        saved = values
        seen = values
        if path == file {
            (document, overridesChangeFile) = readSessionDocument(registry: registry())
            if overridesChangeFile { client.markDirty() } else { client.markClean() }
            return
        }
        do {
            document = try Self.sessionDocument(from: path, registry: registry(), overrides: overrides)
            client.markDirty()
        } catch {
            output.error("agraph: NSM: \(error); the next save keeps the session's graph")
        }
    }

    /// Serves the server's requests and reports dirty state; call a few
    /// times a second.
    public func poll(_ live: RunningGraph, reloader: Reloader) {
        while let request = client.receive(timeout: 0) {
            switch request {
            case .save:
                do {
                    try save(live.compiled)
                    client.reply(to: "/nsm/client/save", "OK")
                    client.markClean()
                } catch {
                    output.error("agraph: NSM save: \(error)")
                    client.error(to: "/nsm/client/save", code: .general, "\(error)")
                }
            case .open(let path, _, let clientID):
                switchSession(path: path, clientID: clientID, live: live, reloader: reloader)
            case .error(let path, let code, let message):
                output.error("agraph: the session manager reports an error for \(path) (\(code)): \(message)")
            case .announced, .other: break
            }
        }
        let now = MonotonicClock.seconds()
        guard now - lastLook >= 0.05 else { return }
        lastLook = now
        // The values are looked at when the monitor saw one set or a
        // reload, not every time.
        let monitor = live.monitor
        var look = false
        if eventFeed?.monitor !== monitor {
            eventFeed = (monitor, monitor.subscribe())
            look = true
        }
        guard var feed = eventFeed else { return }
        monitor.poll()
        let missed = feed.cursor.missed
        look = monitor.events(since: &feed.cursor).contains { e in
            switch e {
            case .parameter, .reloaded: true
            default: false
            }
        } || look || feed.cursor.missed > missed
        eventFeed = feed
        guard look else { return }
        let values = Self.liveValues(live.compiled)
        if values != seen {
            seen = values
            if values != saved { client.markDirty() }
        }
    }

    /// `:switch:`, a second open while running: the new session's graph
    /// (its file made from the original the first time, as at the first
    /// open) replaces the running one by a hot reload, and the JACK client
    /// moves to a client named by the new client id when it changed (make
    /// before break: its ports keep their connections, no frame is lost or
    /// doubled; `RunningGraph.rename`). The
    /// old session is not saved here: a server that wants it saved asks
    /// first. A new session file that does not validate, or a client that
    /// cannot be renamed: `/error`, and the old session plays on (a failed
    /// rename after the reload leaves the new graph playing under the old
    /// name, and says so).
    private func switchSession(path: String, clientID newID: String, live: RunningGraph, reloader: Reloader) {
        let newFile = path + ".json"
        guard let made = makeIfMissing(newFile, from: original, registry: registry()) else { return }
        do {
            output.error("agraph: NSM switch: \(try reloader.attempt(file: newFile))")
        } catch {
            if made { unlink(newFile) }
            for line in error.lines { output.error(line) }
            client.error(to: "/nsm/client/open", code: .badProject, error.description)
            return
        }
        // The run loop sees the reload and calls `reloaded`, which reads
        // this file's document and reports clean or dirty after the reply.
        file = newFile
        if newID != clientID {
            do {
                try live.rename(to: newID)
                clientID = newID
            } catch {
                output.error("agraph: NSM switch: the JACK client cannot be renamed '\(newID)': \(error); it stays '\(clientID)'")
                client.error(to: "/nsm/client/open", code: .launchFailed,
                             "the session's graph plays, but the JACK client could not take the name '\(newID)': \(error)")
                return
            }
        }
        client.reply(to: "/nsm/client/open", "OK")
    }

    /// Every live parameter's current value by address (`mix.gains[1]`).
    public static func liveValues(_ compiled: CompiledGraph) -> [String: Double] {
        var out: [String: Double] = [:]
        for node in compiled.graph.nodes {
            for p in node.descriptor.parameters where p.live {
                if p.type == .numberList || p.type == .booleanList {
                    for i in 0..<node.descriptor.inputPortNames(node.parameters).count {
                        let a = "\(node.id).\(p.name)[\(i)]"
                        if let v = try? compiled.value(a) { out[a] = v }
                    }
                } else {
                    let a = "\(node.id).\(p.name)"
                    if let v = try? compiled.value(a) { out[a] = v }
                }
            }
        }
        return out
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Writes the session file with the live values (those changed since
    /// it was last read or written), under a temporary name, validated,
    /// then renamed over it.
    public func save(_ compiled: CompiledGraph) throws {
        guard var doc = document else { throw Failure(description: "\(file) could not be read back when it was opened") }
        let values = Self.liveValues(compiled)
        for node in compiled.graph.nodes {
            for p in node.descriptor.parameters where p.live {
                let isList = p.type == .numberList || p.type == .booleanList
                let count = isList ? node.descriptor.inputPortNames(node.parameters).count : 1
                let addresses = isList ? (0..<count).map { "\(node.id).\(p.name)[\($0)]" } : ["\(node.id).\(p.name)"]
                guard addresses.contains(where: { values[$0] != saved[$0] }) else { continue }
                let items = addresses.map { Self.json(values[$0] ?? 0, for: p) }
                let value: JSONValue.Kind = isList ? .array(items.map { JSONValue(kind: $0, location: Self.here) }) : items[0]
                doc = try Self.setting(node.id, p.name, to: JSONValue(kind: value, location: Self.here), in: doc)
            }
        }
        // LV2 plugins' own state (LV2 state's save may run beside `run`).
        for node in compiled.graph.nodes where node.descriptor.typeID == "lv2" {
            guard let runtime = compiled.engine.node(node.id) else { continue }
            do {
                let state = try LV2State.save(runtime)
                doc = try Self.setting(node.id, "state", to: JSONValue(kind: .string(state), location: Self.here), in: doc)
            } catch {
                output.error("agraph: NSM save: lv2 node '\(node.id)': its state is not saved: \(error)")
            }
        }
        let text = Self.render(doc) + "\n"
        let temp = file + ".saving-\(getpid())"
        try Self.write(text, to: temp)
        switch GraphValidator(registry: registry()).validate(file: temp) {
        case .success: break
        case .failure(let errors):
            unlink(temp)
            throw Failure(description: "the graph to save does not validate: "
                          + errors.diagnostics.map(\.description).joined(separator: "; "))
        }
        guard rename(temp, file) == 0 else {
            let e = String(cString: strerror(errno))
            unlink(temp)
            throw Failure(description: "cannot replace \(file): \(e)")
        }
        document = doc
        saved = values
        seen = values
        output.error("agraph: saved \(file)")
    }

    private static let here = SourceLocation(line: 0, column: 0, offset: 0)

    /// A live value as the graph file writes it.
    public static func json(_ v: Double, for p: ParameterDescriptor) -> JSONValue.Kind {
        switch p.type {
        case .boolean, .booleanList: return .bool(v != 0)
        case .choice(let options) where v == v.rounded() && v >= 0 && v < Double(options.count):
            return .string(options[Int(v)])
        default: return .number(v, isInteger: v == v.rounded())
        }
    }

    /// `doc` with `nodes[id].params[name] = value`.
    public static func setting(_ id: String, _ name: String, to value: JSONValue, in doc: JSONValue) throws -> JSONValue {
        guard var top = doc.object, let nodesValue = top["nodes"], var nodes = nodesValue.array,
              let i = nodes.firstIndex(where: { $0["id"]?.string == id }), var members = nodes[i].object else {
            throw Failure(description: "the session file has no node '\(id)' any more")
        }
        var params = members["params"]?.object ?? [:]
        params[name] = value
        members["params"] = JSONValue(kind: .object(params), location: here)
        nodes[i] = JSONValue(kind: .object(members), location: nodes[i].location)
        top["nodes"] = JSONValue(kind: .array(nodes), location: nodesValue.location)
        return JSONValue(kind: .object(top), location: doc.location)
    }

    /// Copies the graph `original` to `file`, its relative paths (`path`
    /// and `outputPath` parameters, the `path` of list items such as a
    /// playlist's) made absolute against `original`'s folder.
    public static func makeSessionFile(_ file: String, from original: String, registry: NodeRegistry) throws {
        let doc = try sessionDocument(from: original, registry: registry)
        let parent = GraphPaths.folder(of: GraphPaths.resolve(file, against: GraphPaths.currentDirectory()))
        do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
            throw Failure(description: "cannot make the session folder \(parent): \(error.localizedDescription)")
        }
        let temp = file + ".saving-\(getpid())"
        try write(render(doc) + "\n", to: temp)
        guard rename(temp, file) == 0 else {
            let e = String(cString: strerror(errno))
            unlink(temp)
            throw Failure(description: "cannot make \(file): \(e)")
        }
    }

    /// The graph file `original` as a session keeps it: its relative paths
    /// made absolute against its folder, and `overrides` (`--set`) written
    /// in.
    public static func sessionDocument(from original: String, registry: NodeRegistry,
                                overrides: [ParameterOverride] = []) throws -> JSONValue {
        var doc: JSONValue
        if overrides.isEmpty {
            let bytes: [UInt8]
            do { bytes = try FileChecks.readRegularFile(original, maximumBytes: FileChecks.maximumGraphFileBytes) } catch {
                throw Failure(description: "\(original): cannot read the graph file: \(error.reason)")
            }
            do { doc = try JSONParser.parse(bytes) } catch {
                throw Failure(description: "\(original): malformed JSON: \(error)")
            }
        } else {
            switch GraphValidator(registry: registry).document(file: original, overrides: overrides) {
            case .success(let d): doc = d
            case .failure(let errors):
                throw Failure(description: errors.diagnostics.map(\.description).joined(separator: "; "))
            }
        }
        let folder = GraphPaths.folder(of: GraphPaths.resolve(original, against: GraphPaths.currentDirectory()))
        if var top = doc.object, let nodesValue = top["nodes"], var nodes = nodesValue.array {
            for (i, node) in nodes.enumerated() {
                guard var members = node.object, var params = members["params"]?.object,
                      let type = node["type"]?.string.flatMap({ registry[$0] }) else { continue }
                for (name, value) in params {
                    guard let p = type.descriptor.parameter(named: name) else { continue }
                    params[name] = absolutePaths(value, type: p.type, folder: folder)
                }
                members["params"] = JSONValue(kind: .object(params), location: here)
                nodes[i] = JSONValue(kind: .object(members), location: node.location)
            }
            top["nodes"] = JSONValue(kind: .array(nodes), location: nodesValue.location)
            doc = JSONValue(kind: .object(top), location: doc.location)
        }
        return doc
    }

    private static func absolutePaths(_ value: JSONValue, type: ParameterType, folder: String) -> JSONValue {
        switch type {
        case .path, .outputPath:
            guard let s = value.string, !s.isEmpty, !s.hasPrefix("/"), !s.hasPrefix("~/") else { return value }
            return JSONValue(kind: .string(GraphPaths.resolve(s, against: folder)), location: value.location)
        case .objectList(let fields):
            guard let items = value.array else { return value }
            return JSONValue(kind: .array(items.map { item in
                guard var members = item.object else { return item }
                for (name, v) in members {
                    if let f = fields.first(where: { $0.name == name }) { members[name] = absolutePaths(v, type: f.type, folder: folder) }
                }
                return JSONValue(kind: .object(members), location: item.location)
            }), location: value.location)
        default:
            return value
        }
    }

    /// The document as pretty JSON (members in file order).
    public static func render(_ v: JSONValue) -> String { out(v).rendered() }

    private static func out(_ v: JSONValue) -> JSONOut {
        switch v.kind {
        case .null: .null
        case .bool(let b): .bool(b)
        case .number(let d, _): .number(d)
        case .string(let s): .string(s)
        case .array(let items): .array(items.map(out))
        case .object(let members): .object(members.map { ($0.key, out($0.value)) })
        }
    }

    /// Writes `text` to a new file `path` and flushes it to disk.
    private static func write(_ text: String, to path: String) throws {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = String(cString: strerror(errno))
                unlink(path)
                throw Failure(description: "cannot write \(path): \(e)")
            }
            done += n
        }
        fsync(fd)
    }
}
