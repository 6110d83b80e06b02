// AGraphPluginKit: write an AudioGraph node plugin in Swift.
//
// A plugin is one short file: a class conforming to `PluginNode` per node
// type, a `PluginExport(...)` built once, and the exported entry
// point:
//
//     import AGraphPluginKit
//
//     final class Tremolo: PluginNode { ... }
//
//     let plugin = PluginExport(name: "Tremolo", vendor: "Example",
//                               version: "1.0", nodes: [Tremolo.self])
//
//     @c(agraph_plugin_entry)
//     public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { plugin.descriptor }
//
// The kit turns the Swift description into the C tables of
// `agraph_plugin.h` (allocated once, never freed: they must live as long as
// the library) and supplies the C function pointers (trampolines) that
// forward each ABI call to the Swift instance.
//
// Parity with the header (ABI 1.4): node types (realtime and, through
// `PluginDecoder`, worker-domain decoders with AGRAPH_EXT_DECODER), live
// number/boolean/choice parameters, `outputLayout` (ABI 1.1
// output_layout), plugin-wide details (AGRAPH_EXT_PLUGIN_INFO) and
// `init`/`deinit`, the plugin side of agraph.output-route/1
// (`outputRouteChanged`), and the host extensions through `PluginHost`
// (log, log_rt, output route, latency changed, thread check), and several
// audio ports per node (ABI 1.2: `PluginNodeDescription(inputs:outputs:)`,
// `PluginBlock.input(port:_:)` …, `outputLayout(_:port:)`), the stream
// decoder (ABI 1.3: `PluginStreamDecoder`), and renderers (ABI 1.4: the
// inputs' layout tags in `PluginNodeSetup.inputPortLayouts`, and
// `PluginNodeDescription.virtualizes`). Not yet: decoder `configure`
// (agraph does not call it).
@_exported import CAGraphPlugin
import Synchronization

// MARK: - Static description

/// How a parameter is typed in a graph file.
public enum PluginParameterType: Sendable, Equatable {
    case number
    case integer
    case boolean
    /// One of these strings; the value passed to the node is the index.
    case choice([String])
    case string
}

/// The static description of one parameter (see `agraph_param_t`).
public struct PluginParameter: Sendable {
    public var name: String
    public var type: PluginParameterType
    public var range: ClosedRange<Double>?
    /// Default: a number (number, integer, boolean 0/1, choice index) or text (string).
    public var defaultNumber: Double
    public var defaultString: String?
    public var unit: String?
    public var live: Bool
    public var optional: Bool
    public var required: Bool
    public var summary: String

    /// A number or integer parameter.
    public static func number(_ name: String, _ range: ClosedRange<Double>, default value: Double,
                              unit: String? = nil, live: Bool = false, integer: Bool = false,
                              _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: integer ? .integer : .number, range: range, defaultNumber: value,
                        defaultString: nil, unit: unit, live: live, optional: false, required: false, summary: summary)
    }

    public static func boolean(_ name: String, default value: Bool, live: Bool = false,
                               _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .boolean, range: nil, defaultNumber: value ? 1 : 0,
                        defaultString: nil, unit: nil, live: live, optional: false, required: false, summary: summary)
    }

    /// One of `options`; the default is given by name. A live choice
    /// (ABI 1.1) reaches `setParameter` as the index of the choice.
    public static func choice(_ name: String, _ options: [String], default value: String, live: Bool = false,
                              _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .choice(options), range: nil,
                        defaultNumber: Double(options.firstIndex(of: value) ?? 0),
                        defaultString: nil, unit: nil, live: live, optional: false, required: false, summary: summary)
    }

    /// Text; `default: nil` makes it required.
    public static func string(_ name: String, default value: String?, _ summary: String) -> PluginParameter {
        PluginParameter(name: name, type: .string, range: nil, defaultNumber: 0, defaultString: value,
                        unit: nil, live: false, optional: false, required: value == nil, summary: summary)
    }
}

/// How many channels a port carries (see `agraph_channels_rule_t`).
public enum PluginChannels: Sendable {
    /// Exactly this many (an output).
    case fixed(Int)
    /// As many as the input, same layout tag (an output of a processor).
    case sameAsInput
}

/// An audio port (see `agraph_port_t`). With several ports in a direction
/// (ABI 1.2) `name` is what links use (`node:sidechain`): letters, digits
/// and '_'; a lone port is `in` / `out` in graphs whatever its name.
public struct PluginPort: Sendable {
    public var name: String
    public var channels: PluginChannels
    /// For an input: the accepted channel counts; nil upper bound = no limit.
    public var minChannels: Int
    public var maxChannels: Int?

    /// An input accepting `minChannels…maxChannels` channels.
    public static func input(_ name: String = "in", channels: ClosedRange<Int> = 1...64) -> PluginPort {
        PluginPort(name: name, channels: .fixed(0), minChannels: channels.lowerBound, maxChannels: channels.upperBound)
    }

    /// An output with `channels` channels (`.sameAsInput`: input port 0's).
    public static func output(_ name: String = "out", channels: PluginChannels = .sameAsInput) -> PluginPort {
        PluginPort(name: name, channels: channels, minChannels: 0, maxChannels: nil)
    }
}

/// The static description of a node type (see `agraph_node_type_t`).
public struct PluginNodeDescription: Sendable {
    public var typeID: String
    public var summary: String
    /// The input ports, in port order (empty: a source).
    public var inputs: [PluginPort]
    /// The output ports, in port order (empty: a sink).
    public var outputs: [PluginPort]
    public var parameters: [PluginParameter]
    /// A source that never ends.
    public var endless: Bool
    /// The node virtualizes: it renders for headphones (ABI 1.4
    /// AGRAPH_NODE_VIRTUALIZES), so the host refuses binaural-tagged input
    /// to it. Name its output "binaural" in `outputLayout`.
    public var virtualizes: Bool

    /// The first input port, if any.
    public var input: PluginPort? { inputs.first }
    /// The first output port, if any.
    public var output: PluginPort? { outputs.first }

    /// A node with at most one input and one output.
    public init(typeID: String, summary: String, input: PluginPort?, output: PluginPort?,
                parameters: [PluginParameter], endless: Bool = false, virtualizes: Bool = false) {
        self.init(typeID: typeID, summary: summary, inputs: input.map { [$0] } ?? [],
                  outputs: output.map { [$0] } ?? [], parameters: parameters, endless: endless,
                  virtualizes: virtualizes)
    }

    /// A node with any number of ports (several in a direction: ABI 1.2,
    /// each named).
    public init(typeID: String, summary: String, inputs: [PluginPort], outputs: [PluginPort],
                parameters: [PluginParameter], endless: Bool = false, virtualizes: Bool = false) {
        self.typeID = typeID
        self.summary = summary
        self.inputs = inputs
        self.outputs = outputs
        self.parameters = parameters
        self.endless = endless
        self.virtualizes = virtualizes
    }
}

// MARK: - Instances

/// What a node learns when it is created (or checked): its parameter
/// values and channel counts, and its host. [main-thread]
public struct PluginNodeSetup {
    /// The node's host table (ABI 1.2): keep it in `init` to log, read the
    /// output route, report latency changes, check threads. In `check` and
    /// `outputLayout` it is valid only during the call.
    public let host: PluginHost
    public let nodeID: String
    public let sampleRate: Double
    /// Channels of input port 0 and output port 0.
    public let inputChannels: Int
    public let outputChannels: Int
    /// Channels of every input and output port, in port order (ABI 1.2
    /// hosts; from older ones, port 0's only). 0 where not yet known.
    public let inputPortChannels: [Int]
    public let outputPortChannels: [Int]
    /// The layout tag of every input port, in port order ("mono",
    /// "stereo", "binaural", "5.1", "7.1", "discrete"; the channel order
    /// each implies is in the header's "Layout tags"): ABI 1.4 hosts say
    /// it; nil where the host did not (an older host, or an input not yet
    /// known): assume the usual layout for the channel count then.
    public let inputPortLayouts: [String?]
    /// Input port 0's layout tag (see `inputPortLayouts`).
    public var inputLayout: String? { inputPortLayouts.first ?? nil }
    /// Values by parameter name; absent for optional parameters left out.
    public let numbers: [String: Double]
    public let strings: [String: String]

    public func number(_ name: String) -> Double? { numbers[name] }
    public func integer(_ name: String) -> Int? { numbers[name].map { Int($0) } }
    public func boolean(_ name: String) -> Bool? { numbers[name].map { $0 != 0 } }
    /// A choice by its text, or a string parameter.
    public func string(_ name: String) -> String? { strings[name] }
}

/// A refusal with a reason, from `init` or `activate`.
public struct PluginError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One block passed to `process`: a thin view of `agraph_process_t`.
/// Valid only during the call. [audio-thread]
public struct PluginBlock {
    public let raw: UnsafeMutablePointer<agraph_process_t>

    @inlinable public init(_ raw: UnsafeMutablePointer<agraph_process_t>) { self.raw = raw }

    @inlinable public var frames: Int { Int(raw.pointee.frames) }
    @inlinable public var inputChannels: Int { Int(raw.pointee.input_channels) }
    @inlinable public var outputChannels: Int { Int(raw.pointee.output_channels) }
    /// The samples of input channel `c`.
    @inlinable public func input(_ c: Int) -> UnsafePointer<Float> { raw.pointee.inputs[c]! }
    /// The samples of output channel `c`.
    @inlinable public func output(_ c: Int) -> UnsafeMutablePointer<Float> { raw.pointee.outputs[c]! }
    @inlinable public var inputValidFrames: Int { Int(raw.pointee.input_valid_frames) }
    @inlinable public var inputEnded: Bool { raw.pointee.input_ended != 0 }
    /// Sets the output state (sources; processors that change the length).
    @inlinable public func setOutput(validFrames: Int, ended: Bool) {
        raw.pointee.output_valid_frames = UInt32(validFrames)
        raw.pointee.output_ended = ended ? 1 : 0
    }

    // Several ports (ABI 1.2). Port 0 reads the 1.0 fields; ports past 0
    // exist only for a type declaring several, which only a 1.2 host loads,
    // so the per-port fields are there whenever they are read.

    /// Number of input ports and output ports.
    @inlinable public var inputPortCount: Int { Int(raw.pointee.input_port_count) }
    @inlinable public var outputPortCount: Int { Int(raw.pointee.output_port_count) }
    /// Channels of input / output port `port`.
    @inlinable public func inputChannels(port: Int) -> Int {
        port == 0 ? inputChannels : Int(raw.pointee.input_ports[port].channels)
    }
    @inlinable public func outputChannels(port: Int) -> Int {
        port == 0 ? outputChannels : Int(raw.pointee.output_ports[port].channels)
    }
    /// The samples of channel `c` of input port `port`.
    @inlinable public func input(port: Int, _ c: Int) -> UnsafePointer<Float> {
        port == 0 ? input(c) : raw.pointee.input_ports[port].buffers[c]!
    }
    /// The samples of channel `c` of output port `port`.
    @inlinable public func output(port: Int, _ c: Int) -> UnsafeMutablePointer<Float> {
        port == 0 ? output(c) : raw.pointee.output_ports[port].buffers[c]!
    }
    /// Frames of signal in input port `port` this block, and whether it ended.
    @inlinable public func inputValidFrames(port: Int) -> Int {
        port == 0 ? inputValidFrames : Int(raw.pointee.input_ports[port].valid_frames)
    }
    @inlinable public func inputEnded(port: Int) -> Bool {
        port == 0 ? inputEnded : raw.pointee.input_ports[port].ended != 0
    }
    /// Sets output port `port`'s state.
    @inlinable public func setOutput(port: Int, validFrames: Int, ended: Bool) {
        if port == 0 { setOutput(validFrames: validFrames, ended: ended); return }
        raw.pointee.output_ports[port].valid_frames = UInt32(validFrames)
        raw.pointee.output_ports[port].ended = ended ? 1 : 0
    }
}

// MARK: - The host (ABI 1.2 host extensions)

/// Severity of a message (`agraph_log_severity_t`).
public enum PluginLogSeverity: Int32, Sendable {
    case debug = 0, info = 1, warning = 2, error = 3
}

/// What a node's output reaches (`agraph_output_route_t`).
public enum PluginOutputRoute: UInt32, Sendable {
    case unknown = 0, headphones = 1, speakers = 2
}

/// The node's view of its host: the host table handed to `create`, with
/// the host extensions looked up once. Every member is a no-op (or
/// "unknown") when the host lacks the extension (hosts before ABI 1.2).
public struct PluginHost: @unchecked Sendable {
    // @unchecked: pointers to the host's immutable tables, valid while the node lives.
    public let table: UnsafePointer<agraph_host_t>?
    let logExt: UnsafePointer<agraph_host_log_t>?
    let routeExt: UnsafePointer<agraph_host_output_route_t>?
    let latencyExt: UnsafePointer<agraph_host_latency_t>?
    let threadExt: UnsafePointer<agraph_host_thread_check_t>?

    init(_ info: UnsafePointer<agraph_create_info_t>) {
        let t: UnsafePointer<agraph_host_t>? = info.pointee.host_abi_minor >= 2 ? info.pointee.host : nil
        table = t
        func ext<T>(_ id: String, _: T.Type) -> UnsafePointer<T>? {
            guard let t, let get = t.pointee.get_extension, let raw = get(t, id) else { return nil }
            return raw.assumingMemoryBound(to: T.self)
        }
        logExt = ext(AGRAPH_HOST_EXT_LOG, agraph_host_log_t.self)
        routeExt = ext(AGRAPH_HOST_EXT_OUTPUT_ROUTE, agraph_host_output_route_t.self)
        latencyExt = ext(AGRAPH_HOST_EXT_LATENCY, agraph_host_latency_t.self)
        threadExt = ext(AGRAPH_HOST_EXT_THREAD_CHECK, agraph_host_thread_check_t.self)
    }

    /// Whether the host gave a table (ABI 1.2 or later).
    public var isPresent: Bool { table != nil }

    /// A message for the user, printed by the host with the node's id.
    /// [main-thread | worker-thread]: may allocate.
    public func log(_ severity: PluginLogSeverity, _ message: String) {
        guard let f = logExt?.pointee.log else { return }
        message.withCString { f(table, severity.rawValue, $0) }
    }

    /// The audio thread's log: queued by the host, no allocation.
    /// [audio-thread]
    public func logRealtime(_ severity: PluginLogSeverity, _ message: StaticString) {
        guard let f = logExt?.pointee.log_rt, message.hasPointerRepresentation else { return }
        // A string literal's bytes are NUL-terminated in the binary.
        message.utf8Start.withMemoryRebound(to: CChar.self, capacity: message.utf8CodeUnitCount + 1) {
            f(table, severity.rawValue, $0)
        }
    }

    /// The output route now. [any thread, realtime-safe]
    public var outputRoute: PluginOutputRoute {
        guard let f = routeExt?.pointee.get else { return .unknown }
        return PluginOutputRoute(rawValue: f(table)) ?? .unknown
    }

    /// Tells the host that `latency` / `decoderLatency` changed.
    /// [main-thread & active]
    public func latencyChanged() { latencyExt?.pointee.changed?(table) }

    /// Which thread this is; nil when the host cannot tell. [any thread, realtime-safe]
    public var isMainThread: Bool? { threadExt?.pointee.is_main_thread.map { $0(table) != 0 } }
    public var isAudioThread: Bool? { threadExt?.pointee.is_audio_thread.map { $0(table) != 0 } }
    public var isWorkerThread: Bool? { threadExt?.pointee.is_worker_thread.map { $0(table) != 0 } }
}

/// A node type written in Swift: its static description and its instance.
///
/// Threading follows `agraph_plugin.h`: `init`, `check`, `activate`,
/// `deactivate`, `latency` on the main thread; `process` and
/// `setParameter` on the audio thread, where they must not allocate, lock,
/// print or wait (keep state in stored properties and buffers made in
/// `activate`; no arrays growing, no strings, no existentials).
public protocol PluginNode: AnyObject {
    /// The node type, apart from any instance. [any thread]
    static var description: PluginNodeDescription { get }

    /// Checks a parameter combination beyond the static description; nil
    /// when fine, else a one-line reason. [main-thread]
    static func check(_ setup: PluginNodeSetup) -> String?

    /// Creates an instance (!active). [main-thread]
    /// - Throws: `PluginError` (its text is reported to the user).
    init(_ setup: PluginNodeSetup) throws

    /// Allocates what `process` needs. [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws

    /// Processes one block. [audio-thread & active]
    func process(_ block: PluginBlock)

    /// Changes live parameter `index` (its position in `parameters`).
    /// [audio-thread & active]
    func setParameter(_ index: Int, value: Double)

    /// Frames of delay. [main-thread & active]
    var latency: Int { get }

    /// Frees what `activate` allocated. [main-thread & active]
    func deactivate()

    /// The output's layout tag for these parameters ("mono", "stereo",
    /// "binaural", "5.1", "7.1", "discrete"), or nil for the usual layout
    /// of the channel count. [main-thread]
    static func outputLayout(_ setup: PluginNodeSetup) -> String?

    /// Output port `port`'s layout tag (ABI 1.2 `output_port_layout`); the
    /// default gives `outputLayout` for port 0 and nil (the usual layout)
    /// for the others. [main-thread]
    static func outputLayout(_ setup: PluginNodeSetup, port: Int) -> String?

    /// The output route changed (agraph.output-route/1). May arrive while
    /// `process`/`decode` runs on another thread: store it atomically and
    /// apply it from the next call. [main-thread]
    func outputRouteChanged(_ route: PluginOutputRoute)
}

extension PluginNode {
    public static func check(_ setup: PluginNodeSetup) -> String? { nil }
    public static func outputLayout(_ setup: PluginNodeSetup) -> String? { nil }
    public static func outputLayout(_ setup: PluginNodeSetup, port: Int) -> String? {
        port == 0 ? outputLayout(setup) : nil
    }
    public func outputRouteChanged(_ route: PluginOutputRoute) {}
    public func activate(sampleRate: Double, maxFrames: Int) throws {}
    public func setParameter(_ index: Int, value: Double) {}
    public var latency: Int { 0 }
    public func deactivate() {}
}

// MARK: - Decoders

/// The PCM buffers a decoder writes into: `channels` host buffers of
/// `capacity` frames. Valid only during `decode`. [worker-thread]
public struct PluginPCM {
    public let pointers: UnsafePointer<UnsafeMutablePointer<Float>?>
    public let channels: Int
    public let capacity: Int
    /// Channel `c`'s buffer (nil when the host gave none for it).
    @inlinable public func channel(_ c: Int) -> UnsafeMutablePointer<Float>? { pointers[c] }
}

/// What a `decode` call produced (`agraph_decode_status_t`).
public enum PluginDecodeResult {
    /// `frames` frames written to every channel (0 while priming; at the
    /// end of the stream, 0 means drained).
    case ok(frames: Int)
    /// The frame is corrupt: the host counts it, plays silence, goes on.
    case badFrame(String)
    /// The node cannot go on: the host stops it with this message.
    case fatal(String)
}

/// A decoder node (AGRAPH_DOMAIN_WORKER with AGRAPH_EXT_DECODER): it turns
/// compressed frames into PCM on the host's worker thread; `process` is
/// never called (nor exported). Timing contract as in the header: after
/// activate and after each flush the first PCM frame written is sample 0 of
/// the first frame fed; a decoder with a delay drops it itself and gives
/// the held-back tail when drained (`decode(nil, …)`).
public protocol PluginDecoder: PluginNode {
    /// The codec of the frames its input takes, e.g. "ac4-sync". [any thread]
    static var inputCodec: String { get }

    /// Largest number of PCM frames one decode writes. [main-thread & active]
    var maxFramesPerDecode: Int { get }

    /// Decodes one frame (nil at the end of the stream: write what is held
    /// back). `timestamp`: the frame's first sample, -1 when unknown.
    /// [worker-thread & active]
    func decode(_ frame: UnsafeRawBufferPointer?, timestamp: Int, into pcm: PluginPCM) -> PluginDecodeResult

    /// Drops all state before frames from another position. [worker-thread & active]
    func flush()

    /// How far the PCM lags the timestamps (0 when the decoder trims its
    /// own delay). [main-thread & active]
    var decoderLatency: Int { get }
}

extension PluginDecoder {
    public func process(_ block: PluginBlock) {}
    public var decoderLatency: Int { 0 }
}

/// What a demuxer knows about the stream (`agraph_stream_info_t`); valid
/// only during `openStream`.
public struct PluginStreamInfo {
    public var codec: String
    public var sampleRate: Int
    public var channels: Int
    /// WAVE channel mask; 0 when the positions are unknown.
    public var channelMask: UInt64
    public var codecTag: UInt32
    public var bitsPerCodedSample: Int
    public var bitsPerRawSample: Int
    public var blockAlign: Int
    public var frameSize: Int
    /// -1 when unknown.
    public var profile: Int
    public var bitRate: Int
    /// Codec-specific configuration (valid during the call only).
    public var extradata: UnsafeRawBufferPointer?
}

/// A decoder fed by a demuxer (AGRAPH_EXT_DECODER_STREAM, ABI 1.3): it gets
/// the stream's parameters before the first frame, and the container's
/// trim (encoder delay, padding) before the frame it applies to.
public protocol PluginStreamDecoder: PluginDecoder {
    /// The stream's parameters; throwing stops the node with the error's
    /// text. [worker-thread & active]
    func openStream(_ stream: PluginStreamInfo) throws
    /// Drop `skipStart` samples at the start and `discardEnd` at the end of
    /// the next frame's output (coded rate). [worker-thread & active]
    func trimNextFrame(skipStart: Int, discardEnd: Int)
    /// Frames found damaged and concealed by the decoder itself. [any thread]
    var concealedFrames: Int { get }
}

// MARK: - Export

/// The C tables of a plugin: what `agraph_plugin_entry` returns.
///
/// Make one, in a global `let` (initialised once, thread-safely, on first
/// use): the tables it allocates are never freed, as the ABI requires of
/// everything reachable from the entry point. Immutable once built, hence
/// safe to share between threads.
public struct PluginExport: @unchecked Sendable {
    /// The pointer `agraph_plugin_entry` returns.
    public let descriptor: UnsafePointer<agraph_plugin_t>

    /// - Parameters:
    ///   - name, vendor, version: the plugin's own (not the ABI's), shown by `agraph nodes`.
    ///   - nodes: the node types, each a `PluginNode` class (a `PluginDecoder` for a decoder).
    ///   - details: AGRAPH_EXT_PLUGIN_INFO's text (`agraph nodes TYPE`), e.g. the
    ///     external library found. [main-thread]
    ///   - initialize: the library-wide init (ABI 1.2), given the plugin's path;
    ///     throwing refuses the library with the error's text. [main-thread]
    ///   - deinitialize: the library-wide deinit (ABI 1.2). [main-thread]
    /// One `PluginExport` per library: the closures are kept by the kit.
    /// [main-thread]
    public init(name: String, vendor: String, version: String, nodes: [any PluginNode.Type],
                details: (@Sendable () -> String)? = nil,
                initialize: (@Sendable (String) throws -> Void)? = nil,
                deinitialize: (@Sendable () -> Void)? = nil) {
        pluginHooks.withLock { $0 = PluginHooks(details: details, initialize: initialize, deinitialize: deinitialize) }
        descriptor = Self.makeDescriptor(name: name, vendor: vendor, version: version, nodes: nodes,
                                         hasDetails: details != nil)
    }

    static func makeDescriptor(name: String, vendor: String, version: String,
                               nodes: [any PluginNode.Type], hasDetails: Bool) -> UnsafePointer<agraph_plugin_t> {
        let types = UnsafeMutablePointer<UnsafePointer<agraph_node_type_t>?>.allocate(capacity: max(nodes.count, 1))
        for (i, node) in nodes.enumerated() { types[i] = UnsafePointer(makeNodeType(node)) }
        let p = UnsafeMutablePointer<agraph_plugin_t>.allocate(capacity: 1)
        p.initialize(to: agraph_plugin_t(
            abi: agraph_abi_version_t(major: UInt32(AGRAPH_PLUGIN_ABI_MAJOR), minor: UInt32(AGRAPH_PLUGIN_ABI_MINOR)),
            name: keep(name), vendor: keep(vendor), version: keep(version),
            node_type_count: UInt32(nodes.count), reserved0: 0,
            node_types: UnsafePointer(types), get_extension: hasDetails ? pluginGetExtension : nil,
            init: pluginInitTrampoline, deinit: pluginDeinitTrampoline))
        return UnsafePointer(p)
    }

    /// A C string that lives forever.
    static func keep(_ s: String) -> UnsafePointer<CChar> { UnsafePointer(strdup(s)!) }
    static func keep(_ s: String?) -> UnsafePointer<CChar>? { s.map { keep($0) } }

    static func makePort(_ p: PluginPort) -> agraph_port_t {
        var rule = AGRAPH_CHANNELS_FIXED
        var channels: UInt32 = 0
        switch p.channels {
        case .fixed(let n): channels = UInt32(n)
        case .sameAsInput: rule = AGRAPH_CHANNELS_SAME_AS_INPUT
        }
        return agraph_port_t(name: keep(p.name), channels_rule: rule.rawValue, channels: channels,
                             min_channels: UInt32(p.minChannels), max_channels: UInt32(p.maxChannels ?? 0))
    }

    static func makeParam(_ p: PluginParameter) -> agraph_param_t {
        var flags: UInt32 = 0
        if p.live { flags |= UInt32(AGRAPH_PARAM_LIVE) }
        if p.optional { flags |= UInt32(AGRAPH_PARAM_OPTIONAL) }
        if p.required { flags |= UInt32(AGRAPH_PARAM_REQUIRED) }
        if p.range != nil { flags |= UInt32(AGRAPH_PARAM_HAS_RANGE) }
        let type: agraph_param_type_t
        var choices: UnsafePointer<UnsafePointer<CChar>?>? = nil
        var choiceCount: UInt32 = 0
        switch p.type {
        case .number: type = AGRAPH_PARAM_NUMBER
        case .integer: type = AGRAPH_PARAM_INTEGER
        case .boolean: type = AGRAPH_PARAM_BOOLEAN
        case .string: type = AGRAPH_PARAM_STRING
        case .choice(let options):
            type = AGRAPH_PARAM_CHOICE
            let list = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(options.count, 1))
            for (i, o) in options.enumerated() { list[i] = keep(o) }
            choices = UnsafePointer(list)
            choiceCount = UInt32(options.count)
        }
        return agraph_param_t(name: keep(p.name), summary: keep(p.summary), unit: keep(p.unit),
                              type: type.rawValue, flags: flags,
                              min: p.range?.lowerBound ?? 0, max: p.range?.upperBound ?? 0,
                              default_number: p.defaultNumber, default_string: keep(p.defaultString),
                              choices: choices, choice_count: choiceCount, reserved0: 0)
    }

    static func makeNodeType(_ node: any PluginNode.Type) -> UnsafeMutablePointer<agraph_node_type_t> {
        let d = node.description
        let decoder = node as? any PluginDecoder.Type
        func array<T>(_ items: [T]) -> UnsafePointer<T>? {
            guard !items.isEmpty else { return nil }
            let p = UnsafeMutablePointer<T>.allocate(capacity: items.count)
            p.initialize(from: items, count: items.count)
            return UnsafePointer(p)
        }
        let inputs = d.inputs.map(makePort)
        let outputs = d.outputs.map(makePort)
        let params = d.parameters.map(makeParam)
        let box = Unmanaged.passRetained(TypeBox(node)).toOpaque()
        let t = UnsafeMutablePointer<agraph_node_type_t>.allocate(capacity: 1)
        t.initialize(to: agraph_node_type_t(
            type_id: keep(d.typeID), summary: keep(d.summary),
            domain: decoder == nil ? AGRAPH_DOMAIN_REALTIME.rawValue : AGRAPH_DOMAIN_WORKER.rawValue,
            flags: (d.endless ? UInt32(AGRAPH_NODE_ENDLESS) : 0) | (d.virtualizes ? UInt32(AGRAPH_NODE_VIRTUALIZES) : 0),
            input_count: UInt32(inputs.count), output_count: UInt32(outputs.count),
            inputs: array(inputs), outputs: array(outputs),
            param_count: UInt32(params.count), reserved0: 0, params: array(params),
            plugin_data: box,
            check: checkTrampoline, create: createTrampoline, activate: activateTrampoline,
            process: decoder == nil ? processTrampoline : nil,
            set_parameter: d.parameters.contains(where: \.live) ? setParameterTrampoline : nil,
            latency: latencyTrampoline, deactivate: deactivateTrampoline, destroy: destroyTrampoline,
            get_extension: instanceGetExtension, input_codec: keep(decoder?.inputCodec),
            output_layout: outputLayoutTrampoline, output_port_layout: outputPortLayoutTrampoline))
        return t
    }
}

// MARK: - Trampolines

/// The Swift type of a node type, kept in `agraph_node_type_t.plugin_data`.
final class TypeBox {
    let type: any PluginNode.Type
    init(_ type: any PluginNode.Type) { self.type = type }
}

/// An instance as the host sees it (`agraph_instance_t *`).
final class InstanceBox {
    let node: any PluginNode
    /// The same node as a decoder, cast once (not on the audio thread).
    let decoder: (any PluginDecoder)?
    /// Output channels (the decoder's PCM buffers).
    var channels = 0
    /// `last_error`'s text (AGRAPH_ERROR_CAPACITY bytes).
    let lastError: UnsafeMutablePointer<CChar>
    init(_ node: any PluginNode) {
        self.node = node
        decoder = node as? any PluginDecoder
        lastError = .allocate(capacity: Int(AGRAPH_ERROR_CAPACITY))
        lastError.initialize(repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
    }
    deinit { lastError.deallocate() }
}

/// The plugin-wide closures of the one `PluginExport` of this library.
struct PluginHooks: Sendable {
    var details: (@Sendable () -> String)?
    var initialize: (@Sendable (String) throws -> Void)?
    var deinitialize: (@Sendable () -> Void)?
}

let pluginHooks = Mutex<PluginHooks>(PluginHooks())

/// The details text, kept until the next call (as the ABI allows).
nonisolated(unsafe) var detailsText: UnsafeMutablePointer<CChar>?

let pluginGetExtension: @convention(c) (UnsafePointer<CChar>?) -> UnsafeRawPointer? = { id in
    guard let id, String(cString: id) == AGRAPH_EXT_PLUGIN_INFO else { return nil }
    return UnsafeRawPointer(pluginInfoExtension)
}

nonisolated(unsafe) let pluginInfoExtension: UnsafeMutablePointer<agraph_plugin_info_ext_t> = {
    let p = UnsafeMutablePointer<agraph_plugin_info_ext_t>.allocate(capacity: 1)
    p.initialize(to: agraph_plugin_info_ext_t(details: {
        let text = pluginHooks.withLock { $0.details }?() ?? ""
        free(detailsText)
        detailsText = strdup(text)
        return UnsafePointer(detailsText)
    }))
    return p
}()

let pluginInitTrampoline: @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UInt32) -> Int32 = { path, error, capacity in
    guard let initialize = pluginHooks.withLock({ $0.initialize }) else { return 1 }
    do {
        try initialize(path.map { String(cString: $0) } ?? "")
        return 1
    } catch let e {
        writeError("\(e)", error, capacity)
        return 0
    }
}

let pluginDeinitTrampoline: @convention(c) () -> Void = {
    pluginHooks.withLock { $0.deinitialize }?()
}

/// Layout names as static C strings (the ABI wants a static result).
let layoutNames = Mutex<[String: UnsafePointer<CChar>]>([:])

let outputLayoutTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?) -> UnsafePointer<CChar>? = { info in
    let (type, s) = setup(info!)
    guard let name = type.outputLayout(s) else { return nil }
    return layoutNames.withLock { names in
        if let p = names[name] { return p }
        let p = PluginExport.keep(name)
        names[name] = p
        return p
    }
}

let outputPortLayoutTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?, UInt32) -> UnsafePointer<CChar>? = { info, port in
    let (type, s) = setup(info!)
    guard let name = type.outputLayout(s, port: Int(port)) else { return nil }
    return layoutNames.withLock { names in
        if let p = names[name] { return p }
        let p = PluginExport.keep(name)
        names[name] = p
        return p
    }
}

/// The instance extensions the kit implements: the decoder (for a
/// `PluginDecoder`) and the plugin side of the output route.
let instanceGetExtension: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> UnsafeRawPointer? = { p, id in
    guard let id else { return nil }
    let name = String(cString: id)
    if name == AGRAPH_EXT_OUTPUT_ROUTE { return UnsafeRawPointer(routeExtension) }
    if name == AGRAPH_EXT_DECODER, instance(p).decoder != nil { return UnsafeRawPointer(decoderExtension) }
    if name == AGRAPH_EXT_DECODER_STREAM, instance(p).decoder is any PluginStreamDecoder {
        return UnsafeRawPointer(streamDecoderExtension)
    }
    return nil
}

nonisolated(unsafe) let routeExtension: UnsafeMutablePointer<agraph_output_route_ext_t> = {
    let e = UnsafeMutablePointer<agraph_output_route_ext_t>.allocate(capacity: 1)
    e.initialize(to: agraph_output_route_ext_t(changed: { p, route in
        instance(p).node.outputRouteChanged(PluginOutputRoute(rawValue: route) ?? .unknown)
    }))
    return e
}()

nonisolated(unsafe) let decoderExtension: UnsafeMutablePointer<agraph_decoder_ext_t> = {
    let e = UnsafeMutablePointer<agraph_decoder_ext_t>.allocate(capacity: 1)
    e.initialize(to: agraph_decoder_ext_t(
        configure: nil,
        max_frames_per_decode: { p in UInt32(clamping: instance(p).decoder?.maxFramesPerDecode ?? 0) },
        decode: { p, frame, size, timestamp, pcm, capacity, written in
            let box = instance(p)
            written?.pointee = 0
            box.lastError[0] = 0
            guard let decoder = box.decoder, let pcm else { return Int32(AGRAPH_DECODE_FATAL.rawValue) }
            let bytes = frame.map { UnsafeRawBufferPointer(start: $0, count: Int(size)) }
            let view = PluginPCM(pointers: pcm, channels: box.channels, capacity: Int(capacity))
            switch decoder.decode(size == 0 ? nil : bytes, timestamp: Int(timestamp), into: view) {
            case .ok(let frames):
                written?.pointee = UInt32(clamping: min(max(frames, 0), Int(capacity)))
                return Int32(AGRAPH_DECODE_OK.rawValue)
            case .badFrame(let why):
                writeError(why, box.lastError, UInt32(AGRAPH_ERROR_CAPACITY))
                return Int32(AGRAPH_DECODE_BAD_FRAME.rawValue)
            case .fatal(let why):
                writeError(why, box.lastError, UInt32(AGRAPH_ERROR_CAPACITY))
                return Int32(AGRAPH_DECODE_FATAL.rawValue)
            }
        },
        flush: { p in instance(p).decoder?.flush() },
        decoder_latency: { p in UInt32(clamping: instance(p).decoder?.decoderLatency ?? 0) },
        last_error: { p in UnsafePointer(instance(p).lastError) }))
    return e
}()

nonisolated(unsafe) let streamDecoderExtension: UnsafeMutablePointer<agraph_decoder_stream_ext_t> = {
    let e = UnsafeMutablePointer<agraph_decoder_stream_ext_t>.allocate(capacity: 1)
    e.initialize(to: agraph_decoder_stream_ext_t(
        open_stream: { p, info, errorOut, capacity in
            guard let decoder = instance(p).decoder as? any PluginStreamDecoder, let i = info?.pointee else {
                writeError("not a stream decoder", errorOut, capacity)
                return 0
            }
            let stream = PluginStreamInfo(
                codec: i.codec.map { String(cString: $0) } ?? "", sampleRate: Int(i.sample_rate), channels: Int(i.channels),
                channelMask: i.channel_mask, codecTag: i.codec_tag, bitsPerCodedSample: Int(i.bits_per_coded_sample),
                bitsPerRawSample: Int(i.bits_per_raw_sample), blockAlign: Int(i.block_align), frameSize: Int(i.frame_size),
                profile: Int(i.profile), bitRate: Int(i.bit_rate),
                extradata: i.extradata.map { UnsafeRawBufferPointer(start: $0, count: Int(i.extradata_size)) })
            do {
                try decoder.openStream(stream)
                return 1
            } catch {
                writeError("\(error)", errorOut, capacity)
                return 0
            }
        },
        trim_next_frame: { p, skip, discard in
            (instance(p).decoder as? any PluginStreamDecoder)?.trimNextFrame(skipStart: Int(skip), discardEnd: Int(discard))
        },
        concealed_frames: { p in
            UInt64(max((instance(p).decoder as? any PluginStreamDecoder)?.concealedFrames ?? 0, 0))
        }))
    return e
}()

@inline(__always)
func instance(_ p: OpaquePointer?) -> InstanceBox {
    Unmanaged<InstanceBox>.fromOpaque(UnsafeRawPointer(p!)).takeUnretainedValue()
}

func writeError(_ message: String, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: UInt32) {
    guard let buffer, capacity > 0 else { return }
    let bytes = Array(message.utf8.prefix(Int(capacity) - 1))
    for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
    buffer[bytes.count] = 0
}

func setup(_ info: UnsafePointer<agraph_create_info_t>) -> (any PluginNode.Type, PluginNodeSetup) {
    let i = info.pointee
    let type = Unmanaged<TypeBox>.fromOpaque(i.type.pointee.plugin_data!).takeUnretainedValue().type
    let params = type.description.parameters
    var numbers: [String: Double] = [:]
    var strings: [String: String] = [:]
    for k in 0..<min(Int(i.value_count), params.count) {
        let v = i.values[k]
        guard v.is_set != 0 else { continue }
        numbers[params[k].name] = v.number
        if let s = v.string { strings[params[k].name] = String(cString: s) }
    }
    // Per-port channels: appended in 1.2 (read only from such a host).
    var inputPorts = i.input_channels > 0 || type.description.inputs.count == 1 ? [Int(i.input_channels)] : []
    var outputPorts = type.description.outputs.isEmpty ? [] : [Int(i.output_channels)]
    if i.host_abi_minor >= 2 {
        let ins: UnsafePointer<UInt32>? = i.input_port_channels, outs: UnsafePointer<UInt32>? = i.output_port_channels
        inputPorts = (0..<Int(i.input_port_count)).map { k in ins.map { Int($0[k]) } ?? 0 }
        outputPorts = (0..<Int(i.output_port_count)).map { k in outs.map { Int($0[k]) } ?? 0 }
    }
    // Per-port layout tags: appended in 1.4 (NULL array or entry: not said).
    var inputLayouts = [String?](repeating: nil, count: inputPorts.count)
    if i.host_abi_minor >= 4, let tags = i.input_port_layouts {
        inputLayouts = (0..<Int(i.input_port_count)).map { k in tags[k].map { String(cString: $0) } }
    }
    let s = PluginNodeSetup(host: PluginHost(info), nodeID: i.node_id.map { String(cString: $0) } ?? "", sampleRate: i.sample_rate,
                            inputChannels: Int(i.input_channels), outputChannels: Int(i.output_channels),
                            inputPortChannels: inputPorts, outputPortChannels: outputPorts, inputPortLayouts: inputLayouts,
                            numbers: numbers, strings: strings)
    return (type, s)
}

let checkTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?, UnsafeMutablePointer<CChar>?, UInt32) -> Int32 = { info, error, capacity in
    let (type, s) = setup(info!)
    if let reason = type.check(s) {
        writeError(reason, error, capacity)
        return 0
    }
    return 1
}

let createTrampoline: @convention(c) (UnsafePointer<agraph_create_info_t>?, UnsafeMutablePointer<CChar>?, UInt32) -> OpaquePointer? = { info, errorOut, capacity in
    let (type, s) = setup(info!)
    do {
        let node = try type.init(s)
        let box = InstanceBox(node)
        box.channels = s.outputChannels
        return OpaquePointer(Unmanaged.passRetained(box).toOpaque())
    } catch {
        writeError("\(error)", errorOut, capacity)
        return nil
    }
}

let activateTrampoline: @convention(c) (OpaquePointer?, Double, UInt32, UnsafeMutablePointer<CChar>?, UInt32) -> Int32 = { p, rate, maxFrames, error, capacity in
    do {
        try instance(p).node.activate(sampleRate: rate, maxFrames: Int(maxFrames))
        return 1
    } catch let e {
        writeError("\(e)", error, capacity)
        return 0
    }
}

let processTrampoline: @convention(c) (OpaquePointer?, UnsafeMutablePointer<agraph_process_t>?) -> Void = { p, block in
    instance(p).node.process(PluginBlock(block!))
}

let setParameterTrampoline: @convention(c) (OpaquePointer?, UInt32, Double) -> Void = { p, index, value in
    instance(p).node.setParameter(Int(index), value: value)
}

let latencyTrampoline: @convention(c) (OpaquePointer?) -> UInt32 = { p in
    let box = instance(p)
    return UInt32(clamping: box.decoder != nil ? 0 : box.node.latency)
}

let deactivateTrampoline: @convention(c) (OpaquePointer?) -> Void = { p in
    instance(p).node.deactivate()
}

let destroyTrampoline: @convention(c) (OpaquePointer?) -> Void = { p in
    Unmanaged<InstanceBox>.fromOpaque(UnsafeRawPointer(p!)).release()
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
