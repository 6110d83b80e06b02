import AudioGraphHost
import Synchronization

/// The JACK ports a graph's `jack-in`/`jack-out` nodes ask for, and the
/// buffers the process callback hands them each cycle.
///
/// Created before validation (the JACK node types carry it), filled by the
/// nodes' `makeNode`, bound to real ports by `RunningGraph`. Unbound (offline
/// rendering), every buffer pointer stays nil: `jack-out` then discards and
/// `jack-in` gives silence.
public final class JACKPortBinder: @unchecked Sendable {
    public struct Port: Sendable {
        public var nodeID: String
        /// Short port name (the part after "client:").
        public var name: String
        /// A port receiving audio into the graph (`jack-in`).
        public var isInput: Bool
        public var layout: ChannelLayout
        public var channel: Int
        /// Patterns to connect to, shared by the node's ports in order.
        public var connect: [String]
        /// "binaural L" and the like, published as the port's pretty name.
        public var prettyName: String
        /// The port was given up by a reload: no node writes or reads it,
        /// it is (or is being) unregistered; its slot is not used again.
        public var removed = false
    }

    /// Ports a graph may have at most.
    public static let capacity = 256
    public private(set) var ports: [Port] = []
    /// The current cycle's buffer of each port. [any-thread; the audio thread writes, nodes read]
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    /// Peak of each port since the status thread last looked (Float bits).
    let peaks: [PeakCell]

    public init() {
        buffers = .allocate(capacity: Self.capacity)
        buffers.initialize(repeating: nil, count: Self.capacity)
        peaks = (0..<Self.capacity).map { _ in PeakCell() }
    }

    deinit { buffers.deallocate() }

    /// During a reload's compile: the running ports a new node may take
    /// over, by direction and name, and the slots taken over so far.
    /// [owner-thread]
    private var reusable: [String: Int]?
    private(set) var reused: Set<Int> = []

    /// Starts a reload's compile: nodes asking for exactly the ports (names,
    /// order, direction) of a node being replaced take its slots, so that
    /// those JACK ports stay registered and connected. Returns the ports
    /// as they were, for `endReload`. [owner-thread]
    func beginReload(replacing nodeIDs: Set<String>) -> [Port] {
        var r: [String: Int] = [:]
        for (i, p) in ports.enumerated() where !p.removed && nodeIDs.contains(p.nodeID) {
            r["\(p.isInput ? "in" : "out"):\(p.name)"] = i
        }
        reusable = r
        reused = []
        return ports
    }

    /// Ends a reload's compile. On failure, puts the ports back as they were.
    /// [owner-thread]
    func endReload(restoring saved: [Port]?) {
        reusable = nil
        if let saved { ports = saved }
    }

    /// Marks slots as given up by a reload. [owner-thread]
    func markRemoved(_ slots: [Int]) {
        for s in slots {
            ports[s].removed = true
            ports[s].nodeID = ""
            ports[s].connect = []
        }
    }

    /// Reserves ports for a node; returns the first slot. [main-thread]
    func request(_ new: [Port]) throws -> Int {
        if let reusable, let firstPort = new.first {
            let slots = new.map { reusable["\($0.isInput ? "in" : "out"):\($0.name)"] }
            if let first = slots[0], slots.enumerated().allSatisfy({ $1 == first + $0 }),
               !slots.contains(where: { reused.contains($0 ?? -1) }) {
                for (k, p) in new.enumerated() { ports[first + k] = p }
                for k in new.indices { reused.insert(first + k) }
                return first
            }
            if let clash = slots.firstIndex(where: { $0 != nil }) {
                throw EngineError(nodeID: firstPort.nodeID, "reload: port '\(new[clash].name)' is still in use by the running graph and cannot move to another node or position; rename it or keep its node's ports as they were")
            }
        }
        guard ports.count + new.count <= Self.capacity else {
            throw EngineError(nodeID: new.first?.nodeID, "more than \(Self.capacity) JACK ports")
        }
        let first = ports.count
        ports += new
        return first
    }

    /// Reserves one port per channel of `format` for node `c`, named by its
    /// `ports` parameter or after the layout; returns the first slot. [main-thread]
    func requestPorts(for c: InstanceContext, format: StreamFormat, isInput: Bool) throws -> Int {
        let names = portNames(c.parameters, format: format, isInput: isInput)
        let labels = format.layout.channelLabels(count: format.channels)
        return try request(names.enumerated().map { i, n in
            Port(nodeID: c.nodeID, name: n, isInput: isInput, layout: format.layout, channel: i,
                 connect: c.parameters.stringList("connect") ?? [],
                 prettyName: "\(format.layout) \(i < labels.count ? labels[i] : String(i + 1))")
        })
    }

    /// Peak level of port `slot` since the last call, and resets it. [any-thread]
    public func takePeak(_ slot: Int) -> Float { peaks[slot].take() }
}

/// A peak-hold value shared between the audio thread and a reader.
final class PeakCell: @unchecked Sendable {
    let bits = Atomic<UInt32>(0)

    /// Raises the held peak to `value`. [audio-thread]
    @inline(__always)
    func raise(_ value: Float) {
        var old = bits.load(ordering: .relaxed)
        while Float(bitPattern: old) < value {
            let (done, seen) = bits.compareExchange(expected: old, desired: value.bitPattern, ordering: .relaxed)
            if done { return }
            old = seen
        }
    }

    func take() -> Float { Float(bitPattern: bits.exchange(0, ordering: .relaxed)) }
}

/// Default port names for a layout: `prefix_L`/`prefix_R`, else `prefix_1`….
func defaultPortNames(prefix: String, channels: Int, layout: ChannelLayout) -> [String] {
    switch layout {
    case .mono, .discrete: (1...max(channels, 1)).map { "\(prefix)_\($0)" }
    default: layout.channelLabels(count: channels).map { "\(prefix)_\($0)" }
    }
}

/// A JACK node's port names: its `ports` parameter, else named after the
/// stream's layout (`out_L`/`out_R`, `in_1`…).
func portNames(_ parameters: NodeParameters, format: StreamFormat, isInput: Bool) -> [String] {
    parameters.stringList("ports")
        ?? defaultPortNames(prefix: isInput ? "in" : "out", channels: format.channels, layout: format.layout)
}

/// Checks a `ports` list: right count, usable names.
func checkPortNames(_ c: ResolveContext, channels: Int) {
    guard let names = c.parameters.stringList("ports") else { return }
    if names.count != channels {
        c.error(parameter: "ports", "\(names.count) port name\(names.count == 1 ? "" : "s") for \(channels) channel\(channels == 1 ? "" : "s"): give one per channel")
    }
    for (i, n) in names.enumerated() where n.contains(":") || n.utf8.count > 200 {
        c.error(parameter: "ports", element: i, "port name \"\(n)\" must not contain ':' and must be at most 200 bytes")
    }
    if Set(names).count != names.count {
        c.error(parameter: "ports", "port names must be unique within the node")
    }
}

// MARK: jack-out

/// `jack-out`: plays its input on JACK output ports.
public struct JACKOutType: NodeType {
    public let binder: JACKPortBinder

    public init(binder: JACKPortBinder) { self.binder = binder }

    public var descriptor: NodeDescriptor {
        NodeDescriptor(
            typeID: "jack-out", role: .sink,
            summary: "Plays its input on JACK output ports (one per channel), connected by name or glob pattern. Offline it discards.",
            inputs: .single,
            parameters: [
                .init("ports", .stringList, optional: true,
                      "Port names, one per channel; default from the layout: out_L/out_R, out_1…"),
                .init("connect", .stringList, optional: true,
                      "Ports to connect to, names or glob patterns (e.g. \"system:playback_*\"), matched in order to this node's ports."),
                .init("headphones", .stringList, optional: true,
                      "Glob patterns of ports that are headphones (default: \"*headphone*\", \"*Headphone*\", \"*phones*\"): connected to one of them, the output route of the nodes feeding this one is headphones; connected to other ports, speakers (route-aware nodes, e.g. daa with endpoint auto, follow it, from before the first block)."),
            ],
            origin: "built-in (JACK)")
    }

    /// Patterns of headphone ports when the graph gives none.
    public static let defaultHeadphonePatterns = ["*headphone*", "*Headphone*", "*phones*"]

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        if let f = c.input { checkPortNames(c, channels: f.channels) }
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let format = c.inputFormats.first else { throw EngineError(nodeID: c.nodeID, "no input") }
        let first = try binder.requestPorts(for: c, format: format, isInput: false)
        return JACKOutNode(binder: binder, firstSlot: first, channels: format.channels)
    }
}

/// Copies its input into this cycle's port buffers and meters it. [audio-thread]
final class JACKOutNode: RenderNode {
    let binder: JACKPortBinder
    let firstSlot: Int
    let channels: Int
    /// Written in `prepare` only, read on every cycle: unchecked, so the
    /// audio thread pays no dynamic exclusivity check (a TLS lookup) for it.
    @exclusivity(unchecked) var input: AudioBus?
    /// This node's peak cells, unretained (the binder owns them): taking a
    /// class element out of the binder's array would retain and release it
    /// on every cycle.
    let peakCells: UnsafeMutablePointer<Unmanaged<PeakCell>>

    init(binder: JACKPortBinder, firstSlot: Int, channels: Int) {
        self.binder = binder
        self.firstSlot = firstSlot
        self.channels = channels
        peakCells = .allocate(capacity: max(channels, 1))
        for c in 0..<channels { (peakCells + c).initialize(to: .passUnretained(binder.peaks[firstSlot + c])) }
    }

    deinit { peakCells.deallocate() }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
    }

    var hotMemory: [UnsafeRawBufferPointer] {
        var regions = [UnsafeRawBufferPointer(hot: binder.buffers + firstSlot, count: channels),
                       UnsafeRawBufferPointer(hot: peakCells, count: channels)]
        for c in 0..<channels { regions.append(Engine.objectMemory(binder.peaks[firstSlot + c])) }
        return regions
    }

    func render(frames: Int) {
        guard let input else { return }
        var c = 0
        while c < channels {
            if let port = binder.buffers[firstSlot + c] {
                Kernels.copy(input.channel(c), to: port, count: frames)
                let peak = Kernels.peak(port, count: frames)
                peakCells[c]._withUnsafeGuaranteedRef { $0.raise(peak) }
            }
            c += 1
        }
    }
}

// MARK: jack-in

/// `jack-in`: brings live JACK input ports into the graph.
public struct JACKInType: NodeType {
    public let binder: JACKPortBinder

    public init(binder: JACKPortBinder) { self.binder = binder }

    public var descriptor: NodeDescriptor {
        NodeDescriptor(
            typeID: "jack-in", role: .source,
            summary: "Captures live audio from JACK input ports (one per channel). Offline it gives silence and never ends.",
            inputs: .none,
            parameters: [
                .init("channels", .integer, range: 1...64, default: .number(2), "Number of ports (channels)."),
                .init("layout", .choice(ChannelLayout.allCases.map(\.rawValue)), optional: true,
                      "Layout tag of the captured stream; default from the channel count."),
                .init("ports", .stringList, optional: true,
                      "Port names, one per channel; default in_L/in_R, in_1…"),
                .init("connect", .stringList, optional: true,
                      "Ports to connect from, names or glob patterns (e.g. \"system:capture_*\"), matched in order."),
            ],
            origin: "built-in (JACK)")
    }

    func format(_ p: NodeParameters, sampleRate: Double) -> StreamFormat? {
        guard let n = p.integer("channels") else { return nil }
        return StreamFormat(channels: n, sampleRate: sampleRate, layout: p.string("layout").flatMap(ChannelLayout.init))
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let f = format(c.parameters, sampleRate: c.sampleRate) else { return nil }
        if let n = f.layout.channelCount, n != f.channels {
            c.error(parameter: "layout", "layout \"\(f.layout)\" has \(n) channels but \"channels\" is \(f.channels)")
            return nil
        }
        checkPortNames(c, channels: f.channels)
        return f
    }

    public func isEndless(_ parameters: NodeParameters) -> Bool { true }
    /// Live input cannot be played twice (no analysis pass over it).
    public func isReplayable(_ parameters: NodeParameters) -> Bool { false }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let f = c.outputFormat else { throw EngineError(nodeID: c.nodeID, "no format") }
        let first = try binder.requestPorts(for: c, format: f, isInput: true)
        return JACKInNode(binder: binder, firstSlot: first)
    }
}

/// Copies this cycle's port buffers into its output. [audio-thread]
final class JACKInNode: RenderNode {
    let binder: JACKPortBinder
    let firstSlot: Int
    var output: AudioBus?

    init(binder: JACKPortBinder, firstSlot: Int) {
        self.binder = binder
        self.firstSlot = firstSlot
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        self.output = output
    }

    func render(frames: Int) {
        guard let output else { return }
        var c = 0
        while c < output.channels {
            if let port = binder.buffers[firstSlot + c] {
                Kernels.copy(port, to: output.channel(c), count: frames)
            } else {
                Kernels.fill(output.channel(c), count: frames, value: 0)
            }
            c += 1
        }
        output.state = BusState(validFrames: frames, ended: false)
    }
}

extension NodeRegistry {
    /// This registry plus `jack-in` and `jack-out` bound to `binder`
    /// (`NodeRegistry.standard().addingJACK()`). [main-thread | control-thread;
    /// OSC's reload builds the registry on its thread]
    public func addingJACK(_ binder: JACKPortBinder = JACKPortBinder()) -> NodeRegistry {
        ThreadRole.check(.main, .control)
        var r = self
        r.register(JACKInType(binder: binder))
        r.register(JACKOutType(binder: binder))
        return r
    }
}
