// A node instance as Swift sees it: what it learns at creation, the
// process block, and the `PluginNode` protocol a node type implements.

/// What a node learns when it is created (or checked): its parameter
/// values and channel counts, and its host. [main-thread]
public struct PluginNodeSetup {
    /// The node's host table: keep it in `init` to log, read the
    /// output route, report latency changes, check threads. In `check` and
    /// `outputLayout` it is valid only during the call.
    public let host: PluginHost
    public let nodeID: String
    public let sampleRate: Double
    /// Channels of every input and output port, in port order; 0 where not
    /// yet known. (A decoder has no input ports: it takes frames.)
    public let inputPortChannels: [Int]
    public let outputPortChannels: [Int]
    /// Channels of input port 0 and output port 0 (0 when there is none).
    public var inputChannels: Int { inputPortChannels.first ?? 0 }
    public var outputChannels: Int { outputPortChannels.first ?? 0 }
    /// The layout tag of every input port, in port order ("mono",
    /// "stereo", "binaural", "5.1", "7.1", "discrete"; the channel order
    /// each implies is in agraph/plugin.h, "Audio, ports and layouts");
    /// nil where the input is not known yet: assume the usual layout for
    /// the channel count then.
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

/// One block passed to `process`: a thin view of `agraph_process_t`, whose
/// per-port entries describe every port (port 0 included). The port-less
/// accessors are port 0's. Valid only during the call. [audio-thread]
public struct PluginBlock {
    public let raw: UnsafeMutablePointer<agraph_process_t>

    @inlinable public init(_ raw: UnsafeMutablePointer<agraph_process_t>) { self.raw = raw }

    @inlinable public var frames: Int { Int(raw.pointee.frames) }
    /// Number of input ports and output ports.
    @inlinable public var inputPortCount: Int { Int(raw.pointee.input_port_count) }
    @inlinable public var outputPortCount: Int { Int(raw.pointee.output_port_count) }

    /// Channels of input / output port 0 (0 for a source / a sink).
    @inlinable public var inputChannels: Int { inputPortCount > 0 ? inputChannels(port: 0) : 0 }
    @inlinable public var outputChannels: Int { outputPortCount > 0 ? outputChannels(port: 0) : 0 }
    /// The samples of channel `c` of input / output port 0.
    @inlinable public func input(_ c: Int) -> UnsafePointer<Float> { input(port: 0, c) }
    @inlinable public func output(_ c: Int) -> UnsafeMutablePointer<Float> { output(port: 0, c) }
    /// Input port 0's signal this block (0 for a source), and whether it ended.
    @inlinable public var inputValidFrames: Int { inputPortCount > 0 ? inputValidFrames(port: 0) : 0 }
    @inlinable public var inputEnded: Bool { inputPortCount > 0 && inputEnded(port: 0) }
    /// Sets output port 0's state (sources; processors that change the length).
    @inlinable public func setOutput(validFrames: Int, ended: Bool) {
        setOutput(port: 0, validFrames: validFrames, ended: ended)
    }

    /// Channels of input / output port `port`.
    @inlinable public func inputChannels(port: Int) -> Int { Int(raw.pointee.input_ports[port].channels) }
    @inlinable public func outputChannels(port: Int) -> Int { Int(raw.pointee.output_ports[port].channels) }
    /// The samples of channel `c` of input port `port`.
    @inlinable public func input(port: Int, _ c: Int) -> UnsafePointer<Float> {
        raw.pointee.input_ports[port].buffers[c]!
    }
    /// The samples of channel `c` of output port `port`.
    @inlinable public func output(port: Int, _ c: Int) -> UnsafeMutablePointer<Float> {
        raw.pointee.output_ports[port].buffers[c]!
    }
    /// Frames of signal in input port `port` this block, and whether it ended.
    @inlinable public func inputValidFrames(port: Int) -> Int { Int(raw.pointee.input_ports[port].valid_frames) }
    @inlinable public func inputEnded(port: Int) -> Bool { raw.pointee.input_ports[port].ended != 0 }
    /// Sets output port `port`'s state (the host preset it to what the
    /// inputs say).
    @inlinable public func setOutput(port: Int, validFrames: Int, ended: Bool) {
        raw.pointee.output_ports[port].valid_frames = UInt32(validFrames)
        raw.pointee.output_ports[port].ended = ended ? 1 : 0
    }
}

/// A node type written in Swift: its static description and its instance.
///
/// Threading follows `agraph_plugin.h`: `init`, `check`, `activate`,
/// `deactivate`, `latency` on the main thread; `process` and
/// `setParameter` on the audio thread, where they must not allocate, lock,
/// print or wait (keep state in stored properties and buffers made in
/// `activate`; no arrays growing, no strings, no existentials).
public protocol PluginNode: AnyObject {
    /// The node type, apart from any instance. [any-thread]
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

    /// Output port `port`'s layout tag (`output_layout`); the
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
