import AudioGraphCore

/// A problem found by a node type while resolving one node. The validator
/// turns it into a `Diagnostic` with the file, pointer and position.
public struct NodeIssue: Sendable {
    public enum Subject: Sendable {
        /// The node as a whole.
        case node
        /// A parameter, or one element of a list parameter.
        case parameter(String, element: Int?)
        /// A value inside a parameter: the JSON pointer tokens below it
        /// (`["2", "start"]`: field `start` of an object list's element 2).
        case parameterPath(String, [String])
        /// The link feeding input port number `index`.
        case input(Int)
    }
    public var subject: Subject
    public var message: String
}

/// What a node type sees when the validator resolves one of its nodes.
/// [main-thread]
public final class ResolveContext {
    public let nodeID: String
    public let parameters: NodeParameters
    /// The format reaching each input port, in port order; nil where it is
    /// unknown (an upstream node has errors) or the port is not connected.
    public let inputFormats: [StreamFormat?]
    /// The graph's sample rate.
    public let sampleRate: Double
    /// The folder of the graph file; relative paths resolve against it.
    public let directory: String
    /// The node's output ports, in order (empty for a sink).
    public let outputPortNames: [String]
    /// The node types of the graph's registry (a node that drives another
    /// type's decoder finds it here).
    public let registry: NodeRegistry
    /// The parameters the graph file writes for the node, valid or not: a
    /// written parameter missing from `parameters` was refused, and the
    /// refusal is reported already.
    public let writtenParameters: Set<String>
    public private(set) var issues: [NodeIssue] = []
    /// Formats set port by port with `setOutput`; nil where not set.
    public private(set) var outputFormats: [StreamFormat?]

    public init(nodeID: String, parameters: NodeParameters, inputFormats: [StreamFormat?],
                sampleRate: Double, directory: String, outputPortNames: [String] = ["out"],
                registry: NodeRegistry = NodeRegistry(), writtenParameters: Set<String>? = nil) {
        self.registry = registry
        self.writtenParameters = writtenParameters ?? Set(parameters.names)
        self.nodeID = nodeID
        self.parameters = parameters
        self.inputFormats = inputFormats
        self.sampleRate = sampleRate
        self.directory = directory
        self.outputPortNames = outputPortNames
        outputFormats = Array(repeating: nil, count: outputPortNames.count)
    }

    /// Sets the format of output port `port` (in `outputPortNames` order),
    /// for a node with several outputs. A port left unset gets what
    /// `resolve` returns (so a single-output type just returns its format).
    public func setOutput(_ port: Int, _ format: StreamFormat) {
        guard port >= 0, port < outputFormats.count else { return }
        outputFormats[port] = format
    }

    /// The single input's format, when known.
    public var input: StreamFormat? { inputFormats.first ?? nil }

    /// Reports a problem with a parameter (or one of its elements).
    public func error(parameter: String, element: Int? = nil, _ message: String) {
        issues.append(NodeIssue(subject: .parameter(parameter, element: element), message: message))
    }

    /// Reports a problem with a value inside a parameter, at `path` below
    /// it (JSON pointer tokens: `["2", "path"]`).
    public func error(parameter: String, path: [String], _ message: String) {
        issues.append(NodeIssue(subject: .parameterPath(parameter, path), message: message))
    }

    /// Reports a problem with what reaches input port `port`.
    public func error(input port: Int, _ message: String) {
        issues.append(NodeIssue(subject: .input(port), message: message))
    }

    /// Reports a problem with the node as a whole.
    public func error(_ message: String) {
        issues.append(NodeIssue(subject: .node, message: message))
    }

    /// An absolute path for `path` as written in the graph file.
    public func resolvePath(_ path: String) -> String {
        GraphPaths.resolve(path, against: directory)
    }
}

/// What a node type gets to build the runtime node of a validated graph.
public struct InstanceContext: @unchecked Sendable {
    public var nodeID: String
    public var parameters: NodeParameters
    public var inputFormats: [StreamFormat]
    /// The format of the first output port; nil for sinks.
    public var outputFormat: StreamFormat?
    /// The format of every output port, in port order (empty for sinks).
    public var outputFormats: [StreamFormat]
    public var sampleRate: Double
    public var directory: String
    /// The runtime nodes feeding each input, already made (a decoder reads
    /// its `CompressedFrameSource` through this).
    public var inputNodes: [any RenderNode]
    /// Whether the graph is built to run live (in a JACK client) rather than
    /// to render offline: a live `file-out` records in place (a recording
    /// must survive a crash); an offline one writes under a temporary name
    /// and renames the file into place when complete.
    public var live: Bool
    /// The node types of the graph's registry (see `ResolveContext.registry`).
    public var registry: NodeRegistry

    public init(nodeID: String, parameters: NodeParameters, inputFormats: [StreamFormat],
                outputFormat: StreamFormat?, sampleRate: Double, directory: String,
                inputNodes: [any RenderNode] = [], live: Bool = false, outputFormats: [StreamFormat]? = nil,
                registry: NodeRegistry = NodeRegistry()) {
        self.registry = registry
        self.nodeID = nodeID
        self.parameters = parameters
        self.inputFormats = inputFormats
        self.outputFormat = outputFormat
        self.outputFormats = outputFormats ?? (outputFormat.map { [$0] } ?? [])
        self.sampleRate = sampleRate
        self.directory = directory
        self.inputNodes = inputNodes
        self.live = live
    }

    public func resolvePath(_ path: String) -> String {
        GraphPaths.resolve(path, against: directory)
    }
}

/// A kind of node: its static description, its validation, its factory.
///
/// Built-in types and (later) plugin types conform to this; the validator
/// and the compiler know nothing else about them.
public protocol NodeType: Sendable {
    /// [any-thread]
    var descriptor: NodeDescriptor { get }

    /// Checks what only this type knows (parameter combinations, input
    /// formats, files) and returns the output format; nil for a sink, or
    /// when the format can't be known because of an error already reported.
    /// A type with several outputs sets each port's format with
    /// `context.setOutput(_:_:)`; a port it leaves unset gets the returned
    /// format. Parameters have been type-checked and defaulted already.
    /// [main-thread | control-thread; validation resolves on the thread that validates]
    func resolve(_ context: ResolveContext) -> StreamFormat?

    /// Creates the runtime node for a node that passed validation.
    /// [main-thread]
    func makeNode(_ context: InstanceContext) throws -> any RenderNode

    /// Whether a source with these parameters never ends (a tone without a
    /// duration, a looping file). [any-thread]
    func isEndless(_ parameters: NodeParameters) -> Bool

    /// Whether a node with these parameters must hear its whole input
    /// before rendering it when the graph renders offline (its runtime node
    /// is an `AnalysisPassNode`): the offline renderer then runs an
    /// analysis pass first. Default false. [any-thread]
    func needsAnalysisPass(_ parameters: NodeParameters) -> Bool

    /// Whether a source with these parameters plays the same stream again
    /// when built again (a file, a tone): what an analysis pass needs.
    /// False for live input. Default true. [any-thread]
    func isReplayable(_ parameters: NodeParameters) -> Bool

    /// Checks a live change of `parameter` (element `element` of a list,
    /// else nil) to `value` against what only this type knows, such as an
    /// input index that must name one of the node's inputs. The
    /// descriptor's range and choices are checked before; `sampleRate` is
    /// the graph's (an LV2 port in Hz is bounded by fractions of it).
    /// Returns the problem in words (the change is refused with it), or
    /// nil. Default nil. [control-thread]
    func liveValueProblem(parameter: String, element: Int?, value: Double, parameters: NodeParameters,
                          sampleRate: Double) -> String?

    /// The value in effect of a parameter the graph leaves out and the
    /// descriptor gives no default (a filter's `q`: 0.7071), as `get`
    /// shows it; nil: 0 (false). Default nil. [control-thread]
    func effectiveValue(parameter: String, element: Int?, parameters: NodeParameters, sampleRate: Double) -> Double?
}

extension NodeType {
    public func isEndless(_ parameters: NodeParameters) -> Bool { false }
    public func needsAnalysisPass(_ parameters: NodeParameters) -> Bool { false }
    public func isReplayable(_ parameters: NodeParameters) -> Bool { true }
    public func liveValueProblem(parameter: String, element: Int?, value: Double, parameters: NodeParameters,
                                 sampleRate: Double) -> String? { nil }
    public func effectiveValue(parameter: String, element: Int?, parameters: NodeParameters,
                               sampleRate: Double) -> Double? { nil }
}

/// A node type whose parameters depend on the value of one of them (an
/// `lv2` node's plugin, named by `uri`): the validator reads that value
/// first and asks for the type of that one node, whose descriptor lists
/// every parameter the node takes (its `typeID` is the generic type's).
/// The validated node carries the specialised type. [main-thread]
public protocol SpecialisingNodeType: NodeType {
    /// The parameter that chooses (a string), e.g. `uri`.
    var specialisingParameter: String { get }
    /// The type of a node whose specialising parameter is `value`; throws
    /// the reason in words (reported at that parameter).
    func specialised(for value: String) throws -> any NodeType
}

/// A node type whose instances decode compressed frames off the audio
/// thread (a decoder plugin such as `ffmpeg`). Other nodes may drive one of
/// its decoders themselves: a playlist decodes every item with one.
public protocol FrameDecoderType: NodeType {
    /// A decoder for streams of up to `channels` channels, with the type's
    /// default parameters, not yet activated; `nodeID` names it in
    /// messages. [main-thread]
    func makeFrameDecoder(nodeID: String, channels: Int, sampleRate: Double) throws -> any FrameDecoder
}

/// The node types a graph may use, by type id, in registration order.
public struct NodeRegistry: Sendable {
    /// The types registered one by one.
    private var own: [any NodeType] = []
    private var note: String?
    /// Types found only when a graph asks for one the registry does not
    /// have, or when every type is listed (plugins: loading them all
    /// would load what they link, FFmpeg among them, into every `agraph
    /// validate`). A registered type of the same id comes first.
    public var deferred: DeferredNodeTypes?

    /// Every type: the registered ones, then the deferred ones (loading
    /// them). [main-thread | control-thread; loads the deferred types the first time]
    public var types: [any NodeType] {
        ThreadRole.check(.main, .control)
        guard let deferred else { return own }
        let ids = Set(own.map(\.descriptor.typeID))
        return own + deferred.loaded.types.filter { !ids.contains($0.descriptor.typeID) }
    }

    /// What could not be made available (plugins that failed to load, and
    /// where they were searched): appended to "unknown node type" errors,
    /// so that unavailable is reported, never silently dropped. Reading it
    /// loads the deferred types.
    public var unavailableNote: String? {
        get { note ?? deferred?.loaded.note }
        set { note = newValue }
    }

    public init(_ types: [any NodeType] = []) {
        for t in types { register(t) }
    }

    /// Adds a type; a later type with the same id replaces the earlier one.
    public mutating func register(_ type: any NodeType) {
        if let i = own.firstIndex(where: { $0.descriptor.typeID == type.descriptor.typeID }) {
            own[i] = type
        } else {
            own.append(type)
        }
    }

    /// The type `typeID`: a registered one, else a deferred one (loading
    /// them the first time). [main-thread | control-thread; loads the deferred types the first time]
    public subscript(typeID: String) -> (any NodeType)? {
        ThreadRole.check(.main, .control)
        if let t = own.first(where: { $0.descriptor.typeID == typeID }) { return t }
        return deferred?.loaded.types.first { $0.descriptor.typeID == typeID }
    }

    /// Whether `typeID` is registered, not counting deferred types (loads nothing). [any-thread]
    public func registers(_ typeID: String) -> Bool {
        own.contains { $0.descriptor.typeID == typeID }
    }

    public var typeIDs: [String] { types.map(\.descriptor.typeID) }
}

/// Node types loaded the first time they are needed, once (a registry's
/// plugins). Shared by the copies of a registry. [any-thread; the first
/// `loaded` runs `load` under a lock]
public final class DeferredNodeTypes: Sendable {
    private let load: @Sendable () -> (types: [any NodeType], note: String?)
    private let state = Locked<(types: [any NodeType], note: String?)?>(nil)

    /// `load` gives the types and what could not be loaded (or nil).
    public init(_ load: @escaping @Sendable () -> (types: [any NodeType], note: String?)) {
        self.load = load
    }

    /// Whether the types are loaded yet. [any-thread]
    public var isLoaded: Bool { state.withLock { $0 != nil } }

    /// The types, loaded the first time. [any-thread; not the audio thread: the first call loads them]
    public var loaded: (types: [any NodeType], note: String?) {
        state.withLock { s in
            if let s { return s }
            let made = load()
            s = made
            return made
        }
    }
}

/// Path handling shared by validation and instantiation.
public enum GraphPaths {
    /// `path` if absolute, else `directory/path`, normalised.
    public static func resolve(_ path: String, against directory: String) -> String {
        if path.hasPrefix("/") { return normalise(path) }
        if path.hasPrefix("~/"), let home = env("HOME") { return normalise(home + path.dropFirst(1)) }
        return normalise(directory + "/" + path)
    }

    static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for p in path.split(separator: "/", omittingEmptySubsequences: true) {
            if p == "." { continue }
            if p == "..", let last = parts.last, last != ".." { parts.removeLast(); continue }
            parts.append(p)
        }
        return "/" + parts.joined(separator: "/")
    }

    private static func env(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        return String(cString: v)
    }
}

#if canImport(Glibc)
import Glibc
#endif
