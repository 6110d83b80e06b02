import AudioGraph
import Synchronization

/// Where a `capture` node records: preallocated per-channel storage, so the
/// recording itself allocates nothing on the audio thread.
public final class CaptureStore: @unchecked Sendable {
    public let capacity: Int
    public private(set) var channels: [UnsafeMutablePointer<Float>] = []
    /// Frames recorded so far; a test may read it while a live graph records
    /// (atomics: the recording thread may be JACK's or a render helper).
    public var frames: Int { recorded.load(ordering: .acquiring) }
    /// Whether the stream ended. [any-thread]
    public var ended: Bool { endSeen.load(ordering: .acquiring) }
    private let recorded = Atomic<Int>(0)
    private let endSeen = Atomic<Bool>(false)

    public init(capacityFrames: Int) { capacity = capacityFrames }

    deinit { channels.forEach { $0.deallocate() } }

    func prepare(channels n: Int) {
        channels.forEach { $0.deallocate() }
        channels = (0..<n).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
            p.initialize(repeating: 0, count: capacity)
            return p
        }
        recorded.store(0, ordering: .releasing)
        endSeen.store(false, ordering: .releasing)
    }

    /// [audio-thread]
    func record(_ bus: AudioBus) {
        let state = bus.state
        let done = recorded.load(ordering: .relaxed)
        let n = min(state.validFrames, capacity - done)
        for c in 0..<channels.count where n > 0 {
            Kernels.copy(bus.channel(c), to: channels[c] + done, count: n)
        }
        recorded.store(done + max(n, 0), ordering: .releasing)
        if state.ended { endSeen.store(true, ordering: .releasing) }
    }

    /// The recording of channel `c`. [test thread, after rendering]
    public func samples(_ c: Int) -> [Float] {
        Array(UnsafeBufferPointer(start: channels[c], count: frames))
    }
}

/// A sink for tests: `{"type": "capture", "params": {"store": "name"}}`
/// records into the `CaptureStore` registered under that name.
public struct CaptureType: NodeType {
    public let stores: [String: CaptureStore]

    public init(stores: [String: CaptureStore]) { self.stores = stores }

    public var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "capture", role: .sink, summary: "Records its input in memory (tests only).",
                       inputs: .single,
                       parameters: [.init("store", .string, default: .string("main"), "Name of the store.")],
                       origin: "TestSupport", acceptsRateIslands: true)
    }

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        if stores[c.parameters.string("store") ?? ""] == nil { c.error(parameter: "store", "no such store") }
        return nil
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let store = stores[c.parameters.string("store") ?? ""] else { throw EngineError("no store") }
        return CaptureNode(store: store)
    }
}

final class CaptureNode: RenderNode {
    let store: CaptureStore
    var input: AudioBus?
    init(store: CaptureStore) { self.store = store }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        store.prepare(channels: input?.channels ?? 0)
    }

    func render(frames: Int) {
        if let input { store.record(input) }
    }
}

/// Builds and renders graphs written inline in tests.
public enum TestGraph {
    /// The built-in registry plus `capture` over `stores`.
    public static func registry(_ stores: [String: CaptureStore]) -> NodeRegistry {
        var r = NodeRegistry.builtIn
        r.register(CaptureType(stores: stores))
        return r
    }

    /// Validates `json` (a whole graph file) or throws its diagnostics.
    public static func validate(_ json: String, stores: [String: CaptureStore] = [:], directory: String = "/tmp") throws -> ValidatedGraph {
        try GraphValidator(registry: registry(stores))
            .validate(bytes: Array(json.utf8), file: "inline.json", directory: directory).get()
    }

    /// Renders `json` offline for at most `seconds` and returns what the
    /// `capture` node with store "main" recorded, per channel.
    public static func render(_ json: String, seconds: Double, blockFrames: Int = 1024,
                              directory: String = "/tmp") throws -> [[Float]] {
        let store = CaptureStore(capacityFrames: Int(seconds * 192_000) + blockFrames)
        let g = try validate(json, stores: ["main": store], directory: directory)
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        let result = OfflineRenderer(engine: compiled.engine).run(maxFrames: Int((seconds * g.sampleRate).rounded()))
        if !result.finishErrors.isEmpty { throw EngineError(result.finishErrors.joined(separator: "; ")) }
        return (0..<store.channels.count).map { store.samples($0) }
    }

    /// A one-source graph: `node` (a node object without id) → capture.
    public static func single(_ nodeType: String, _ params: String, sampleRate: Int = 48000) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(sampleRate),
         "nodes": [{"id": "src", "type": "\(nodeType)", "params": \(params)},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "cap"}]}
        """
    }
}
