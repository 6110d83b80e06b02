// The control surface of a running graph: parameter addresses and values,
// set/get/seek/pause/play/status, with results as values. It knows nothing
// of JACK or of consoles: `agraph run` feeds it stdin's commands
// (`ControlLine`), and OSC and the Swift API are meant to use it too. The
// host (a live JACK session, an offline renderer) supplies transport and
// status through `ControlHost`.

import AudioGraphCore
import GraphFile
#if canImport(Glibc)
import Glibc
#endif

/// A parameter address: `node.param` or `node.param[i]`.
public struct ParameterAddress: Sendable, Hashable, CustomStringConvertible {
    public var node: String
    public var parameter: String
    /// The list element, for list parameters (`gains[1]`).
    public var element: Int?

    public init(node: String, parameter: String, element: Int? = nil) {
        self.node = node
        self.parameter = parameter
        self.element = element
    }

    /// Parses `node.param` or `node.param[i]` (i a whole number ≥ 0): the
    /// one parser of parameter addresses. [any-thread]
    public init(parsing text: String) throws(ControlError) {
        guard let dot = text.firstIndex(of: "."), dot != text.startIndex, text.index(after: dot) != text.endIndex else {
            throw ControlError("'\(ControlLine.quoted(Substring(text)))' is not a parameter address: write node.param or node.param[i]")
        }
        node = String(text[..<dot])
        var name = text[text.index(after: dot)...]
        element = nil
        if name.hasSuffix("]"), let open = name.firstIndex(of: "[") {
            guard let i = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]), i >= 0 else {
                throw ControlError("'\(ControlLine.quoted(Substring(text)))': the index in brackets must be a whole number ≥ 0")
            }
            element = i
            name = name[..<open]
        }
        guard !name.isEmpty else {
            throw ControlError("'\(ControlLine.quoted(Substring(text)))' names no parameter: write node.param or node.param[i]")
        }
        parameter = String(name)
    }

    public var description: String { "\(node).\(parameter)" + (element.map { "[\($0)]" } ?? "") }
}

/// A parameter's value, as a number and in the words `set` takes.
public struct ParameterReading: Sendable, Equatable, CustomStringConvertible {
    public var address: ParameterAddress
    /// The value the node gets (booleans 0 or 1, choices their index).
    public var value: Double
    /// The value as `set` takes it: a number, `true`/`false`, or a
    /// choice's option name.
    public var word: String

    public init(address: ParameterAddress, value: Double, word: String) {
        self.address = address
        self.value = value
        self.word = word
    }

    public var description: String { "\(address) = \(word)" }
}

/// The peak level of one output port, in dBFS (-inf for silence).
public struct PortPeak: Sendable, Equatable {
    public var port: String
    public var dBFS: Double
    public init(port: String, dBFS: Double) {
        self.port = port
        self.dBFS = dBFS
    }
}

/// A host's transport (JACK's) as the sources following it see it.
public struct TransportReading: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        case stopped, rolling, starting
    }

    public var state: State
    /// The transport's frame at the start of the last cycle.
    public var frame: Int
    /// `frame` in seconds at the graph's rate.
    public var seconds: Double
    /// The nodes following it (`TransportFollowing`), in graph order.
    public var followers: [String]
    /// Whether the followers are at the transport's frame (false while a
    /// locate is being carried out, or before they are first placed).
    public var located: Bool

    public init(state: State, frame: Int, seconds: Double, followers: [String], located: Bool) {
        self.state = state
        self.frame = frame
        self.seconds = seconds
        self.followers = followers
        self.located = located
    }

    /// `transport rolling 12.5 s (frame 600000)`, with `locating` while the
    /// followers are not there yet.
    public var text: String {
        "transport \(state.rawValue) \(formatFixed(seconds, 1)) s (frame \(frame))" + (located ? "" : " locating")
    }
}

/// Where a running graph is, as one value: the `status` command and the
/// status line both show it, with the same text.
public struct GraphStatus: Sendable, Equatable {
    public var seconds: Double
    public var frames: Int
    /// Peak of each output port over the host's last metering window.
    public var peaks: [PortPeak]
    public var xruns: Int
    public var underruns: Int
    /// Frames of media found damaged and concealed (`DamageCounting` nodes).
    public var damagedFrames: Int
    /// Frames rendered that never reached their file: a `file-out`'s writer
    /// fell behind and its ring was full (`DropCounting` nodes).
    public var droppedFrames: Int
    /// The host's DSP load, percent.
    public var cpuLoad: Double
    public var bufferSize: Int
    public var paused: Bool
    public var finished: Bool
    public var serverGone: Bool
    /// The last window of each `meter` node.
    public var meters: [MeterReading]
    /// The host's transport, when sources follow it (nil otherwise).
    public var transport: TransportReading?
    /// The source rates converted to the graph's (`RateConverting` nodes), in Hz, each once.
    public var resampledFrom: [Double] = []
    /// The graph's rate, in Hz (0: not known; then no "resampling" is shown).
    public var sampleRate: Double = 0
    /// Nodes whose `connect` patterns match no port yet, with the patterns
    /// (the rules keep applying as ports come), by node id.
    public var waitingConnections: [String: [String]] = [:]

    public init(seconds: Double, frames: Int, peaks: [PortPeak], xruns: Int, underruns: Int, cpuLoad: Double,
                bufferSize: Int, paused: Bool, finished: Bool, serverGone: Bool, meters: [MeterReading] = [],
                damagedFrames: Int = 0, transport: TransportReading? = nil, droppedFrames: Int = 0) {
        self.transport = transport
        self.droppedFrames = droppedFrames
        self.damagedFrames = damagedFrames
        self.seconds = seconds
        self.frames = frames
        self.peaks = peaks
        self.xruns = xruns
        self.underruns = underruns
        self.cpuLoad = cpuLoad
        self.bufferSize = bufferSize
        self.paused = paused
        self.finished = finished
        self.serverGone = serverGone
        self.meters = meters
    }

    /// This status with the source rates converted to `graphRate` (each
    /// rate once, in order). [any-thread]
    public func with(resampledFrom rates: [Double], graphRate: Double) -> GraphStatus {
        var s = self
        s.resampledFrom = Array(Set(rates)).sorted()
        s.sampleRate = graphRate
        return s
    }

    /// One line: position, transport, peaks, meters, xruns, underruns,
    /// damaged frames and rate conversions and dropped frames (when any),
    /// the nodes waiting for ports to connect to, DSP load, flags.
    public var text: String {
        let levels = (peaks.map { "\($0.port) \($0.dBFS.isFinite ? formatFixed($0.dBFS, 1) : "-inf")" } + meters.map(\.text))
            .joined(separator: "  ")
        return "\(formatFixed(seconds, 1)) s  " + (transport.map { $0.text + "  " } ?? "")
            + "\(levels)  xruns \(xruns)  underruns \(underruns)"
            + (damagedFrames > 0 ? "  damaged \(damagedFrames)" : "")
            + (sampleRate > 0 && !resampledFrom.isEmpty
               ? "  resampling " + resampledFrom.map { "\(ParameterValue.number($0))→\(ParameterValue.number(sampleRate)) Hz" }.joined(separator: ", ")
               : "")
            + (droppedFrames > 0 ? "  dropped \(droppedFrames) frames" : "")
            + waitingConnections.sorted(by: { $0.key < $1.key })
                .map { "  \($0.key) waiting for \($0.value.joined(separator: ", "))" }.joined()
            + "  DSP \(formatFixed(cpuLoad, 1)) %"
            + (paused ? "  [paused]" : "") + (finished ? "  [ended]" : "")
    }
}

/// Why a control request failed, in words for the user.
public struct ControlError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What a command did, as a value; `text` is how a console shows it.
public enum ControlReply: Sendable, Equatable {
    case set(ParameterReading)
    case value(ParameterReading)
    case seeked(node: String?, seconds: Double)
    case paused
    case playing
    case status(GraphStatus)
    case quit
    case help(String)
    /// What a `playlist` command did, in words.
    case playlist(String)

    public var text: String {
        switch self {
        case .set(let r), .value(let r): r.description
        case .seeked(let node, let seconds): "seek \(node.map { $0 + " " } ?? "")\(ParameterValue.number(seconds)) s"
        case .paused: "paused"
        case .playing: "playing"
        case .status(let s): s.text
        case .quit: "quit"
        case .help(let text): text
        case .playlist(let text): text
        }
    }
}

/// What the host of a running graph supplies to its control surface.
/// [main-thread | owner-thread | control-thread]
public protocol ControlHost: AnyObject, Sendable {
    /// Outputs silence and holds every source where it is.
    func pause()
    /// Goes on after `pause`.
    func play()
    /// The graph's status now (non-destructive: two calls at the same
    /// moment agree).
    func status() -> GraphStatus
    /// The nodes that follow the host's transport: `seek` leaves them to
    /// it. Default: none.
    var transportFollowers: [String] { get }
    /// The host's graph monitor, which every front end subscribes to (a
    /// live session has one). Default: nil; the control surface then
    /// makes one of its own over `status()`.
    var monitor: GraphMonitor? { get }
}

extension ControlHost {
    public var transportFollowers: [String] { [] }
    public var monitor: GraphMonitor? { nil }
}

/// A control host's status as a monitor's counters, for a host without a
/// monitor of its own. [main-thread | control-thread]
private final class StatusCounters: GraphMonitorHost, @unchecked Sendable {
    private weak var host: (any ControlHost)?
    init(_ host: (any ControlHost)?) { self.host = host }

    func monitorCounters() -> HostCounters? {
        guard let s = host?.status() else { return nil }
        return HostCounters(xruns: s.xruns, paused: s.paused, finished: s.finished,
                            shutdownReason: s.serverGone ? "the server went away" : nil, bufferSize: s.bufferSize)
    }
}

/// Set/get/seek/pause/play/status on a compiled graph, by address and word.
///
/// Threading: every method: [control-thread], one caller at a time or
/// several (parameter changes go through the engine's lock-free queue;
/// seeks through the nodes' own requests).
public final class ControlSurface: @unchecked Sendable {
    public let compiled: CompiledGraph
    private weak var host: (any ControlHost)?

    public init(compiled: CompiledGraph, host: any ControlHost) {
        self.compiled = compiled
        self.host = host
    }

    /// The monitor of the graph every front end subscribes to: the host's
    /// (`ControlHost.monitor`), else one of this surface's own, made on
    /// first use, that watches its graph and its host's `status()`.
    /// [control-thread]
    public var monitor: GraphMonitor {
        ThreadRole.check(.control)
        if let m = host?.monitor { return m }
        return ownMonitor.withLock { own in
            if let own { return own }
            let counters = StatusCounters(host)
            let made = (GraphMonitor(compiled: compiled, host: counters), counters)
            own = made
            return made
        }.0
    }

    /// The surface's own monitor and the adapter it reads (the monitor
    /// holds its host weakly).
    private let ownMonitor = Locked<(GraphMonitor, StatusCounters)?>(nil)

    private var graph: ValidatedGraph { compiled.graph }
    private var engine: Engine { compiled.engine }

    /// Parses and runs a console line; nil for a blank line.
    public func execute(line: String) -> Result<ControlReply, ControlError>? {
        do {
            guard let command = try ControlLine.parse(line) else { return nil }
            return execute(command)
        } catch {
            return .failure(ControlError(error.message))
        }
    }

    /// Runs one command.
    public func execute(_ command: ControlCommand) -> Result<ControlReply, ControlError> {
        do throws(ControlError) {
            switch command {
            case .set(let address, let value): return .success(.set(try set(try resolve(address), word: value)))
            case .get(let address): return .success(.value(try get(address)))
            case .seek(let node, let seconds):
                try seek(node: node, seconds: seconds)
                return .success(.seeked(node: node, seconds: seconds))
            case .pause: pause(); return .success(.paused)
            case .play: play(); return .success(.playing)
            case .status: return .success(.status(try status()))
            case .quit: return .success(.quit)
            case .help: return .success(.help(ControlLine.help))
            case .playlist(let node, let command): return .success(.playlist(try playlist(node, command)))
            case .reload: throw ControlError("reload is run by the host (agraph run, RunningGraph.reload), not here")
            }
        } catch {
            return .failure(error)
        }
    }

    /// The descriptor of the parameter an address names (checked only for
    /// existence; `CompiledGraph` checks liveness and ranges).
    /// `forSet`: the error suggests the live parameters only (readings
    /// cannot be set); for `get`, parameters and readings.
    private func parameter(_ address: ParameterAddress, forSet: Bool = false) throws(ControlError) -> ParameterDescriptor {
        guard let node = graph.node(address.node) else {
            throw ControlError(NodeNames.noNode(address.node, in: graph.nodes.map(\.id)))
        }
        guard let i = node.descriptor.parameterIndex(named: address.parameter) else {
            let live = node.descriptor.parameters.filter(\.live).map(\.name)
            let readings = forSet ? [] : (engine.node(address.node) as? MeasuringNode)?.readingNames.map(\.name) ?? []
            let hint = closestMatch(to: address.parameter, in: live + readings).map { "did you mean '\($0)'? " } ?? ""
            throw ControlError("'\(address.node)' (\(node.descriptor.typeID)) has no parameter '\(address.parameter)'; \(hint)"
                               + "its live parameters (set): \(live.isEmpty ? "none" : live.joined(separator: ", "))"
                               + (readings.isEmpty ? "" : "; its readings (get): \(readings.joined(separator: ", "))"))
        }
        return node.descriptor.parameters[i]
    }

    /// `value` in the words `set` takes for `p`.
    public static func word(_ value: Double, for p: ParameterDescriptor) -> String {
        switch p.type {
        case .boolean, .booleanList: return value != 0 ? "true" : "false"
        case .choice(let options):
            if value == value.rounded(), value >= 0, value < Double(options.count) { return options[Int(value)] }
            return ParameterValue.number(value).description
        default: return ParameterValue.number(value).description
        }
    }

    /// Resolves `node.param` or `node.param[i]` once into a handle: the
    /// address is parsed here (the only parse), checked against the graph
    /// (with suggestions when it names nothing), and `set`/`get` through
    /// the handle look nothing up again. `forSet`: the suggestions name the
    /// live parameters only; for `get`, the readings too.
    /// [control-thread]
    public func resolve(_ address: String, forSet: Bool = true) throws(ControlError) -> ParameterHandle {
        ThreadRole.check(.control)
        return try resolve(try ParameterAddress(parsing: address), forSet: forSet)
    }

    /// Resolves an address already parsed (`ControlLine` parses the
    /// console's; OSC builds its own from its path). [control-thread]
    public func resolve(_ address: ParameterAddress, forSet: Bool = true) throws(ControlError) -> ParameterHandle {
        ThreadRole.check(.control)
        _ = try parameter(address, forSet: forSet)
        do { return try compiled.resolve(address) } catch { throw ControlError(error.description) }
    }

    /// Changes a live parameter to a word: a number, true/false/on/off, or
    /// a choice's option name (`set dec.endpoint speakers`). [control-thread]
    @discardableResult
    public func set(_ address: String, word: String) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        return try set(try resolve(address), word: word)
    }

    /// Changes a live parameter to a number. [control-thread]
    @discardableResult
    public func set(_ address: String, _ value: Double) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        return try set(try resolve(address), value)
    }

    /// Changes the parameter `handle` names to a word (see
    /// `set(_:word:)`). [control-thread]
    @discardableResult
    public func set(_ handle: ParameterHandle, word: String) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        let value: Double
        do { value = try compiled.number(handle, word: word) } catch { throw ControlError(error.description) }
        return try set(handle, value)
    }

    /// Changes the parameter `handle` names to a number. [control-thread]
    @discardableResult
    public func set(_ handle: ParameterHandle, _ value: Double) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        do { try compiled.set(handle, value) } catch { throw ControlError(error.description) }
        return ParameterReading(address: handle.address, value: value, word: Self.word(value, for: handle.descriptor))
    }

    /// A parameter's current value: the last one set, else the graph's.
    /// For a node that measures (`MeasuringNode`, e.g. `loudness`), also
    /// its readings by name: `get loud.integrated`. [control-thread]
    public func get(_ address: String) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        return try get(try ParameterAddress(parsing: address))
    }

    /// `get` of an address already parsed. [control-thread]
    public func get(_ a: ParameterAddress) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        // A reading may take an index too (a meter's channel: `get m.peak[1]`).
        if let node = graph.node(a.node), node.descriptor.parameterIndex(named: a.parameter) == nil,
           let measuring = engine.node(a.node) as? MeasuringNode,
           let v = measuring.reading(a.parameter + (a.element.map { "[\($0)]" } ?? "")) {
            let unit = measuring.readingNames.first { $0.name == a.parameter }?.unit
            let word = (v.isFinite ? formatFixed(v, 1) : (v < 0 ? "-inf" : "inf")) + (unit.map { " " + $0 } ?? "")
            return ParameterReading(address: a, value: v, word: word)
        }
        return try get(try resolve(a, forSet: false))
    }

    /// The value of the parameter `handle` names. [control-thread]
    public func get(_ handle: ParameterHandle) throws(ControlError) -> ParameterReading {
        ThreadRole.check(.control)
        let value: Double
        do { value = try compiled.value(handle) } catch { throw ControlError(error.description) }
        return ParameterReading(address: handle.address, value: value, word: Self.word(value, for: handle.descriptor))
    }

    /// Moves one source (or, with nil, every seekable source that does not
    /// follow the host's transport) to `seconds`. A source that follows the
    /// transport is moved by locating the transport instead.
    public func seek(node id: String?, seconds: Double) throws(ControlError) {
        let following = Set(host?.transportFollowers ?? [])
        if let id, following.contains(id) {
            throw ControlError("'\(id)' follows the JACK transport: locate the transport instead (e.g. jack_transport: locate FRAME)")
        }
        let targets = graph.nodes.filter { (id == nil && !following.contains($0.id)) || $0.id == id }
            .compactMap { n in engine.node(n.id).flatMap { $0 as? SeekableNode }.map { (n.id, $0) } }
        guard !targets.isEmpty else {
            if id == nil && !following.isEmpty {
                throw ControlError("every seekable source follows the JACK transport: locate the transport instead (e.g. jack_transport: locate FRAME)")
            }
            let seekable = graph.nodes.filter { engine.node($0.id) is SeekableNode }.map(\.id)
            throw ControlError((id.map { "'\($0)' cannot seek" } ?? "nothing in this graph can seek")
                               + "; " + NodeNames.summary(seekable, label: "seekable nodes"))
        }
        let frame: Int
        do { frame = try FrameTime.frames(seconds: seconds, sampleRate: graph.sampleRate) } catch {
            throw ControlError("cannot seek to \(error)")
        }
        for (nodeID, node) in targets where !node.seek(toFrame: frame) {
            let length = node.lengthFrames.map { " (it is \(Double($0) / graph.sampleRate) s long)" } ?? ""
            throw ControlError("cannot seek '\(nodeID)' to \(seconds) s\(length)")
        }
        engine.worker.wake()
    }

    /// The graph's playlist nodes, in graph order.
    public var playlists: [any PlaylistControlling] {
        graph.nodes.compactMap { engine.node($0.id) as? PlaylistControlling }
    }

    /// Runs a command on playlist `node`; a relative path in an item
    /// resolves against the working directory (where it was typed).
    /// Returns what it did, in words.
    @discardableResult
    public func playlist(_ node: String, _ command: PlaylistCommand) throws(ControlError) -> String {
        guard let playlist = engine.node(node) as? PlaylistControlling else {
            let names = playlists.map(\.nodeID)
            throw ControlError("'\(node)' is not a playlist; playlists: \(names.isEmpty ? "none" : names.joined(separator: ", "))")
        }
        var command = command
        let cwd = GraphPaths.currentDirectory()
        switch command {
        case .add(var item):
            item.path = GraphPaths.resolve(item.path, against: cwd)
            command = .add(item)
        case .insert(var item, let index):
            item.path = GraphPaths.resolve(item.path, against: cwd)
            command = .insert(item, at: index)
        default: break
        }
        do {
            let text = try playlist.perform(command)
            engine.worker.wake()
            return text
        } catch {
            throw ControlError("\(node): \(error.message)")
        }
    }

    /// The playlists' events that `cursor` has not seen yet, in each
    /// node's order (nodes in graph order); advances the cursor. Any number
    /// of readers, each with its own cursor.
    public func playlistEvents(since cursor: inout PlaylistEventCursor) -> [PlaylistEvent] {
        cursor.take(from: playlists)
    }

    public func pause() { host?.pause() }
    public func play() { host?.play() }

    public func status() throws(ControlError) -> GraphStatus {
        guard let host else { throw ControlError("the graph is no longer running") }
        return host.status()
    }
}

extension CompiledGraph {
    /// The last complete window of every `meter` node, in graph order.
    /// [control-thread]
    public var meterReadings: [MeterReading] {
        ThreadRole.check(.control)
        return graph.nodes.compactMap { engine.node($0.id) as? any MeterReporting }.map { $0.reading() }
    }
}
