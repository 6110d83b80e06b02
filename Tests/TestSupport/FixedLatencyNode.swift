import AudioGraph

/// A processor for tests with a fixed algorithmic delay:
/// `{"type": "fixed-latency", "params": {"frames": N}}` outputs its input
/// N frames late and reports `latency` N, like a lookahead limiter or a
/// decoder that keeps its delay.
public struct FixedLatencyType: NodeType {
    public init() {}

    public var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "fixed-latency", role: .processor,
                       summary: "Delays its input by a fixed number of frames and reports it as latency (tests only).",
                       inputs: .single,
                       parameters: [.init("frames", .integer, range: 0...48000, default: .number(0), "The delay in frames.")],
                       origin: "TestSupport")
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? { c.input }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        FixedLatencyNode(frames: c.parameters.integer("frames") ?? 0)
    }
}

extension TestGraph {
    /// The built-in registry plus `capture` over `stores` and `fixed-latency`.
    public static func registryWithLatency(_ stores: [String: CaptureStore]) -> NodeRegistry {
        var r = registry(stores)
        r.register(FixedLatencyType())
        return r
    }
}

/// Delays its input by `frames` through a ring allocated in `prepare`.
final class FixedLatencyNode: RenderNode {
    let frames: Int
    var input: AudioBus?
    var output: AudioBus?
    var ring: UnsafeMutablePointer<Float>?
    var capacity = 0
    var write = 0

    init(frames: Int) { self.frames = frames }

    deinit { ring?.deallocate() }

    var latency: Int { frames }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        self.output = output
        capacity = frames + context.maxFrames
        let channels = output?.channels ?? 0
        let r = UnsafeMutablePointer<Float>.allocate(capacity: max(capacity * channels, 1))
        r.initialize(repeating: 0, count: max(capacity * channels, 1))
        ring = r
    }

    func render(frames n: Int) {
        guard let input, let output, let ring else { return }
        var c = 0
        while c < output.channels {
            let src = input.channel(c), dst = output.channel(c), line = ring + c * capacity
            var i = 0
            while i < n {
                line[(write + i) % capacity] = src[i]
                dst[i] = line[(write + i - frames + capacity) % capacity]
                i += 1
            }
            c += 1
        }
        write = (write + n) % capacity
        output.state = BusState(validFrames: n, ended: input.state.ended)
    }
}
