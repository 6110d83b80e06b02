import AudioGraph
import CMySOFA
import Foundation
import TestSupport
import XCTest

/// The default HRTF set the tests read (Debian's libmysofa1: MIT KEMAR,
/// 44.1 kHz, 710 measurements of 512 samples).
let defaultSOFA = "/usr/share/libmysofa/default.sofa"

/// Channels to play, kept in memory: what a `signal` node plays.
final class SignalStore: @unchecked Sendable {
    let channels: [UnsafeMutablePointer<Float>]
    let frames: Int

    init(_ samples: [[Float]]) {
        frames = samples.map(\.count).max() ?? 0
        channels = samples.map { s in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(s.count, 1))
            p.initialize(repeating: 0, count: max(s.count, 1))
            for (i, v) in s.enumerated() { p[i] = v }
            return p
        }
    }

    deinit { channels.forEach { $0.deallocate() } }
}

/// A source for these tests: `{"type": "signal", "params": {"store":
/// "name", "layout": "5.1"}}` plays the `SignalStore` of that name once,
/// tagged with `layout`, then ends.
struct SignalType: NodeType {
    let stores: [String: SignalStore]

    var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "signal", role: .source, summary: "Plays channels from memory (tests only).", inputs: .none,
                       parameters: [.init("store", .string, default: .string("main"), "Name of the store."),
                                    .init("layout", .choice(ChannelLayout.allCases.map(\.rawValue)), default: .string("discrete"),
                                          "Layout tag."),
                                    .init("codec", .string, optional: true, "Claim to emit compressed frames of this codec (validation only).")],
                       origin: "BinauralTests")
    }

    func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let store = stores[c.parameters.string("store") ?? ""] else {
            c.error(parameter: "store", "no such store")
            return nil
        }
        let layout = ChannelLayout(rawValue: c.parameters.string("layout") ?? "") ?? .discrete
        if let codec = c.parameters.string("codec") { return .frames(codec: codec, sampleRate: c.sampleRate, channels: store.channels.count, layout: layout) }
        return StreamFormat(channels: store.channels.count, sampleRate: c.sampleRate, layout: layout)
    }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let store = stores[c.parameters.string("store") ?? ""] else { throw EngineError("no store") }
        return SignalNode(store: store)
    }
}

final class SignalNode: RenderNode {
    let store: SignalStore
    let position = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    var output: AudioBus?

    init(store: SignalStore) {
        self.store = store
        position.initialize(to: 0)
    }

    deinit { position.deallocate() }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }

    func render(frames n: Int) {
        guard let output else { return }
        let at = position.pointee
        let count = max(0, min(n, store.frames - at))
        var c = 0
        while c < store.channels.count {
            Kernels.copy(store.channels[c] + at, to: output.channel(c), count: count)
            c += 1
        }
        if count < n { output.clear(from: count, to: n) }
        position.pointee = at + count
        output.state = BusState(validFrames: count, ended: at + count >= store.frames)
    }
}

/// Graphs of signal → binaural → capture, rendered offline.
enum BinauralGraph {
    static func registry(signals: [String: SignalStore], captures: [String: CaptureStore]) -> NodeRegistry {
        var r = TestGraph.registry(captures)
        r.register(SignalType(stores: signals))
        return r
    }

    /// The graph file's text: `signal` (tagged `layout`) → `binaural` with
    /// `params` (a JSON object's text) → `capture`.
    static func json(layout: String, params: String = "{}", rate: Int = 44100) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(rate),
         "nodes": [{"id": "src", "type": "signal", "params": {"layout": "\(layout)"}},
                   {"id": "bin", "type": "binaural", "params": \(params)},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "bin"}, {"from": "bin", "to": "cap"}]}
        """
    }

    /// Validates `json` with a signal store of `input` channels.
    static func validate(_ json: String, input: [[Float]], capture: CaptureStore = CaptureStore(capacityFrames: 16),
                         directory: String = "/tmp") -> Result<ValidatedGraph, GraphErrors> {
        GraphValidator(registry: registry(signals: ["main": SignalStore(input)], captures: ["main": capture]))
            .validate(bytes: Array(json.utf8), file: "binaural-test.json", directory: directory)
    }

    /// Renders `input` (one array per channel) through `binaural` and
    /// returns the two ears, `input` length plus the responses' ring-out.
    /// `between(block, compiled)` runs before each block (sets parameters).
    static func render(layout: String, params: String = "{}", input: [[Float]], rate: Int = 44100, blockFrames: Int = 1024,
                       sizes: [Int]? = nil, between: (Int, CompiledGraph) throws -> Void = { _, _ in }) throws -> [[Float]] {
        let capture = CaptureStore(capacityFrames: (input.first?.count ?? 0) + 8192)
        let g = try validate(json(layout: layout, params: params, rate: rate), input: input, capture: capture).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        let engine = compiled.engine
        engine.worker.start()
        defer { engine.worker.stop() }
        var block = 0
        while !engine.isFinished && block < 1_000_000 {
            let n = sizes.map { $0[block % $0.count] } ?? blockFrames
            engine.worker.waitUntilReady(frames: n)
            try between(block, compiled)
            engine.render(frames: n)
            block += 1
        }
        return (0..<2).map { capture.samples($0) }
    }
}

/// The HRTF set read straight from the file with `mysofa_load`, for
/// reference values computed apart from the product: the nearest
/// measurement by brute force, and the normalisation gain by its
/// definition.
final class ReferenceSet {
    let sampleRate: Double
    let measurements: Int
    let length: Int
    /// Per measurement: azimuth, elevation (degrees), distance.
    let positions: [(azimuth: Double, elevation: Double, radius: Double)]
    /// Per measurement: left then right impulse response.
    let ir: [[Float]]
    /// Per measurement and ear: Data.Delay in samples (0 when absent).
    let delays: [(Double, Double)]

    init(path: String = defaultSOFA) throws {
        var err: Int32 = 0
        guard let h = mysofa_load(path, &err) else { throw XCTSkip("cannot load \(path) (libmysofa error \(err)); install libmysofa1") }
        defer { mysofa_free(h) }
        let hrtf = h.pointee
        measurements = Int(hrtf.M)
        length = Int(hrtf.N)
        sampleRate = Double(hrtf.DataSamplingRate.values[0])
        let cartesian = String(cString: mysofa_getAttribute(hrtf.SourcePosition.attributes, strdup("Type")) ?? strdup("spherical")) == "cartesian"
        var pos: [(Double, Double, Double)] = []
        for m in 0..<measurements {
            let v = hrtf.SourcePosition.values + m * Int(hrtf.C)
            if cartesian {
                let (x, y, z) = (Double(v[0]), Double(v[1]), Double(v[2]))
                let r = (x * x + y * y + z * z).squareRoot()
                pos.append((atan2(y, x) * 180 / .pi, asin(z / r) * 180 / .pi, r))
            } else {
                pos.append((Double(v[0]), Double(v[1]), Double(v[2])))
            }
        }
        positions = pos
        ir = (0..<measurements).map { m in
            Array(UnsafeBufferPointer(start: hrtf.DataIR.values + m * 2 * Int(hrtf.N), count: 2 * Int(hrtf.N)))
        }
        let d = hrtf.DataDelay
        delays = (0..<measurements).map { m in
            if d.elements >= hrtf.M * 2 { return (Double(d.values[2 * m]), Double(d.values[2 * m + 1])) }
            if d.elements >= 2 { return (Double(d.values[0]), Double(d.values[1])) }
            return (0, 0)
        }
    }

    static func cartesian(_ azimuth: Double, _ elevation: Double, _ r: Double) -> (Double, Double, Double) {
        let a = azimuth * .pi / 180, e = elevation * .pi / 180
        return (r * cos(e) * cos(a), r * cos(e) * sin(a), r * sin(e))
    }

    /// The measurement nearest to a direction: the smallest Euclidean
    /// distance at the set's largest measured distance.
    func nearest(azimuth: Double, elevation: Double) -> Int {
        let r = positions.map(\.radius).max() ?? 1
        let q = Self.cartesian(azimuth, elevation, r)
        var best = 0
        var bestDistance = Double.infinity
        for (m, p) in positions.enumerated() {
            let c = Self.cartesian(p.azimuth, p.elevation, p.radius)
            let d = (c.0 - q.0) * (c.0 - q.0) + (c.1 - q.1) * (c.1 - q.1) + (c.2 - q.2) * (c.2 - q.2)
            if d < bestDistance { bestDistance = d; best = m }
        }
        return best
    }

    /// The documented normalisation: 1 / √((E_L + E_R) / 2) of the
    /// measurement nearest the front.
    var gain: Double {
        let front = ir[nearest(azimuth: 0, elevation: 0)]
        let energy = front.reduce(0.0) { $0 + Double($1) * Double($1) }
        return 1 / (energy / 2).squareRoot()
    }

    /// Measurement `m`'s impulse response for `ear` (0 left, 1 right),
    /// normalised.
    func response(_ m: Int, ear: Int) -> [Float] {
        let g = gain
        return ir[m][(ear * length)..<((ear + 1) * length)].map { Float(Double($0) * g) }
    }

    /// The largest magnitude |H(f)| at `frequency` of any normalised
    /// response of the set.
    func largestMagnitude(at frequency: Double) -> Double {
        let g = gain
        let w = 2 * Double.pi * frequency / sampleRate
        let c = (0..<length).map { cos(w * Double($0)) }, s = (0..<length).map { sin(w * Double($0)) }
        var best = 0.0
        for m in 0..<measurements {
            for ear in 0..<2 {
                var re = 0.0, im = 0.0
                for k in 0..<length {
                    let h = Double(ir[m][ear * length + k])
                    re += h * c[k]
                    im -= h * s[k]
                }
                best = max(best, (re * re + im * im).squareRoot() * g)
            }
        }
        return best
    }
}

/// An impulse of `amplitude` at `at` on channel `channel` of `channels`, `frames` long.
func impulse(channel: Int, of channels: Int, at: Int, frames: Int, amplitude: Float = 1) -> [[Float]] {
    (0..<channels).map { c in
        var s = [Float](repeating: 0, count: frames)
        if c == channel { s[at] = amplitude }
        return s
    }
}

/// Direct convolution of `x` with `h`, the first `count` samples (Double sums).
func convolve(_ x: [Float], _ h: [Float], count: Int) -> [Double] {
    var y = [Double](repeating: 0, count: count)
    for (i, v) in x.enumerated() where v != 0 && i < count {
        for (k, hk) in h.enumerated() where i + k < count { y[i + k] += Double(v) * Double(hk) }
    }
    return y
}

/// Sample `t` of the convolution of `x` with `h` (Double sums).
func convolvedSample(_ x: [Float], _ h: [Float], at t: Int) -> Double {
    var y = 0.0
    for k in 0..<min(h.count, t + 1) where t - k < x.count { y += Double(h[k]) * Double(x[t - k]) }
    return y
}
