import AudioGraph

/// A node for tests whose inter-aural differences are known exactly: each
/// input channel k reaches the left ear with gain `routes[k].leftGain`
/// after `routes[k].leftDelay` frames, and the right ear likewise; the
/// output is 2 channels tagged binaural. Not a renderer: a fixture.
struct EarTestType: NodeType {
    struct Route: Sendable {
        var leftGain: Float, leftDelay: Int, rightGain: Float, rightDelay: Int
    }

    let typeID: String
    let routes: [Route]

    var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: typeID, role: .processor, summary: "Per-channel gains and delays to two ears (tests only).",
                       inputs: .single, parameters: [], origin: "AnalysisTests")
    }

    func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let input = c.input else { return nil }
        if input.channels != routes.count { c.error(input: 0, "expects \(routes.count) channels, got \(input.channels)") }
        return StreamFormat(channels: 2, sampleRate: c.sampleRate, layout: .binaural)
    }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode { EarTestNode(routes: routes) }
}

/// [audio-thread: render; main-thread: prepare]
final class EarTestNode: RenderNode {
    let routes: [EarTestType.Route]
    let history: Int
    var input: AudioBus?
    var output: AudioBus?
    /// Per input channel: `history` past frames, then the block.
    var work: UnsafeMutablePointer<Float>?
    var stride = 0

    init(routes: [EarTestType.Route]) {
        self.routes = routes
        history = routes.map { max($0.leftDelay, $0.rightDelay) }.max() ?? 0
    }

    deinit { work?.deallocate() }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        self.output = output
        stride = history + context.maxFrames
        work = .allocate(capacity: stride * routes.count)
        work?.initialize(repeating: 0, count: stride * routes.count)
    }

    func render(frames n: Int) {
        guard let input, let output, let work else { return }
        let l = output.channel(0), r = output.channel(1)
        Kernels.fill(l, count: n, value: 0)
        Kernels.fill(r, count: n, value: 0)
        for (k, route) in routes.enumerated() {
            let w = work + k * stride
            Kernels.copy(input.channel(k), to: w + history, count: n)
            Kernels.addScaled(w + history - route.leftDelay, to: l, count: n, gain: route.leftGain)
            Kernels.addScaled(w + history - route.rightDelay, to: r, count: n, gain: route.rightGain)
            // Keep the last `history` frames for the next block.
            for i in 0..<history { w[i] = w[n + i] }
        }
        output.state = input.state
    }
}
