import XCTest
import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A renderer as a plugin (issue 11): `com.example.crossfeed`
/// (Plugins/CrossfeedPlugin) loaded through the host. It reads its input's
/// layout tag: 5.1 and 7.1 are downmixed by BS.775 with the LFE
/// dropped or mixed, "discrete" is refused in its own words; it declares
/// that it virtualizes, so the validator refuses binaural input to it. The
/// signal: a left-only impulse reaches the right ear low-passed, `delay`
/// late and `feed` dB below the direct path; sines above and below the
/// cutoff are attenuated by the low-pass's response; live changes apply;
/// nothing is allocated while rendering.
final class CrossfeedPluginTests: XCTestCase {
    static let crossfeed = "com.example.crossfeed"
    static let rate = 48_000.0

    /// The AGRAPH_PLUGIN_PATH folder, holding the crossfeed plugin.
    var folder: PluginFolder!

    override func setUpWithError() throws {
        folder = try PluginFolder("agraph-crossfeed")
        try folder.install("libAGraphCrossfeedPlugin.so")
    }

    override func tearDown() {
        folder = nil
    }

    // MARK: - Helpers

    /// The registry with the plugins, `capture` over `store` and the
    /// `signal` source playing `signals`.
    func registry(_ signals: [String: Signal] = [:], store: CaptureStore = CaptureStore(capacityFrames: 1)) -> NodeRegistry {
        TestGraph.pluginRegistry(["main": store], adding: [SignalSourceType(signals: signals)]).registry
    }

    /// signal → crossfeed (`params`) → capture.
    func graph(_ params: String = "{}") -> String {
        #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "src", "type": "signal"},
                   {"id": "cf", "type": "\#(Self.crossfeed)", "params": \#(params)},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "src", "to": "cf"}, {"from": "cf", "to": "cap"}]}
        """#
    }

    /// The two ears of `signal` through the crossfeed with `params`.
    func render(_ signal: Signal, _ params: String = "{}", blockFrames: Int = 256) throws -> (left: [Float], right: [Float]) {
        let store = CaptureStore(capacityFrames: signal.frames + 1024)
        let g = try folder.validate(graph(params), registry(["main": signal], store: store)).get()
        XCTAssertEqual(g.node("cf")?.outputFormat, StreamFormat(channels: 2, sampleRate: Self.rate, layout: .binaural))
        let compiled = try GraphCompiler.compile(g, maxFrames: blockFrames)
        _ = OfflineRenderer(engine: compiled.engine).run()
        XCTAssertEqual(store.frames, signal.frames, "the output lasts as long as the input")
        return (store.samples(0), store.samples(1))
    }

    /// The validation errors of `json`.
    func errors(_ json: String, _ signals: [String: Signal]) -> [Diagnostic] {
        switch folder.validate(json, registry(signals)) {
        case .success: XCTFail("validated"); return []
        case .failure(let e): return e.errors
        }
    }

    /// k = g / (1 + g), g = 10^(−feed/20): the cross path's gain at low
    /// frequencies (the plugin's formula, Plugins/CrossfeedPlugin).
    func crossGain(feed: Double) -> Double {
        let g = pow(10, -feed / 20)
        return g / (1 + g)
    }

    /// The magnitude of the plugin's low-pass at `f`: first order, bilinear,
    /// prewarped to −3 dB at `cutoff`.
    func lowPassMagnitude(_ f: Double, cutoff: Double) -> Double {
        let ratio = tan(Double.pi * f / Self.rate) / tan(Double.pi * cutoff / Self.rate)
        return 1 / (1 + ratio * ratio).squareRoot()
    }

    /// The analog first-order response at `f` for `cutoff`.
    func analogMagnitude(_ f: Double, cutoff: Double) -> Double {
        1 / (1 + (f / cutoff) * (f / cutoff)).squareRoot()
    }

    func dB(_ x: Double) -> Double { 20 * log10(x) }

    func amplitude(_ s: ArraySlice<Float>, _ hz: Double) -> Double {
        SignalAnalysis.goertzelMagnitude(Array(s), sampleRate: Self.rate, frequency: hz)
    }

    func sine(_ hz: Double, _ amplitude: Double, frames: Int) -> [Float] {
        (0..<frames).map { Float(amplitude * sin(2 * Double.pi * hz * Double($0) / Self.rate)) }
    }

    // MARK: - Description and validation

    func testTheNodeIsARealtimeVirtualizerWithLiveCutoffAndFeed() throws {
        let type = try XCTUnwrap(registry()[Self.crossfeed], "the crossfeed plugin is loaded")
        let d = type.descriptor
        XCTAssertTrue(d.virtualizes, "AGRAPH_NODE_VIRTUALIZES reaches NodeDescriptor.virtualizes")
        XCTAssertEqual(d.role, .processor)
        XCTAssertEqual(d.domain, .realtime)
        XCTAssertEqual(d.parameters.map(\.name), ["cutoff", "feed", "delay", "lfe"])
        XCTAssertEqual(d.parameters.map(\.live), [true, true, false, false])
        XCTAssertEqual(d.parameter(named: "cutoff")?.unit, "Hz")
        XCTAssertEqual(d.parameter(named: "feed")?.unit, "dB")
        XCTAssertEqual(d.parameter(named: "lfe")?.type, .choice(["drop", "mix"]))
        XCTAssertTrue(Describe.nodeType(d).contains("virtualizes for headphones: binaural input is refused"), Describe.nodeType(d))
    }

    /// The validator's rule for virtualizers applies to the plugin type,
    /// with the message a built-in virtualizer gets.
    func testBinauralInputIsRefusedWithTheValidatorsMessage() throws {
        let signals = ["main": Signal(.binaural, [[0.1, 0.2], [0.3, 0.4]])]
        let found = errors(graph(), signals)
        let expected = "'src' sends binaural audio (already virtualized for headphones) into 'cf' (\(Self.crossfeed)), which virtualizes: that would virtualize twice; feed it the unvirtualized stream, or leave it out"
        let d = try XCTUnwrap(found.first { $0.message == expected }, found.map(\.message).joined(separator: "\n"))
        XCTAssertEqual(d.nodeID, "cf")
        XCTAssertEqual(d.pointer.description, "/links/0")
        // A built-in type that virtualizes gets the same words.
        var builtIn = registry(signals)
        builtIn.register(BuiltInVirtualizerStandIn(typeID: "test-virtualizer"))
        let json = graph().replacingOccurrences(of: Self.crossfeed, with: "test-virtualizer")
        guard case .failure(let e) = folder.validate(json, builtIn) else { return XCTFail("binaural into a built-in virtualizer validated") }
        XCTAssertTrue(e.errors.contains { $0.message == expected.replacingOccurrences(of: Self.crossfeed, with: "test-virtualizer") },
                      e.errors.map(\.message).joined(separator: "\n"))
    }

    /// 5.1 and discrete both have 6 channels: only the layout tag
    /// tells them apart, and the plugin refuses the one whose channel
    /// positions it cannot know.
    func testTheLayoutTagDecides5Point1AgainstDiscreteSix() throws {
        let six = [[Float]](repeating: [0, 0.5, 0], count: 6)
        let ok = folder.validate(graph(), registry(["main": Signal(.surround51, six)]))
        XCTAssertNoThrow(try ok.get(), "5.1 is accepted")
        XCTAssertEqual(try ok.get().node("cf")?.outputFormat?.layout, .binaural)
        let found = errors(graph(), ["main": Signal(.discrete, six)])
        let d = try XCTUnwrap(found.first { $0.nodeID == "cf" }, "\(found)")
        XCTAssertEqual(d.message, "the input is tagged \"discrete\" (6 channels): a crossfeed needs to know where each channel sits; give it mono, stereo, 5.1 (L R C LFE Ls Rs) or 7.1 (L R C LFE Ls Rs Lb Rb) — tag the stream with a format-tag node if its channels are in that order, or pick them with channel-map")
        // Mono, stereo and 7.1 are accepted; 4 channels are discrete.
        for (layout, n) in [(ChannelLayout.mono, 1), (.stereo, 2), (.surround71, 8)] {
            XCTAssertNoThrow(try folder.validate(graph(), registry(["main": Signal(layout, .init(repeating: [0], count: n))])).get(), "\(layout)")
        }
        let four = errors(graph(), ["main": Signal(.discrete, .init(repeating: [0], count: 4))])
        XCTAssertTrue(four.contains { $0.message.hasPrefix("the input is tagged \"discrete\" (4 channels): a crossfeed needs to know") }, "\(four)")
        // The same 6 channels retagged by a format-tag node: refused too.
        let retagged = #"""
        {"format": "agraph/1", "nodes": [{"id": "tone", "type": "test-tone", "params": {"channels": 6, "duration": 1}},
          {"id": "tag", "type": "format-tag", "params": {"layout": "discrete"}},
          {"id": "cf", "type": "\#(Self.crossfeed)"}, {"id": "cap", "type": "capture"}],
         "links": [{"from": "tone", "to": "tag"}, {"from": "tag", "to": "cf"}, {"from": "cf", "to": "cap"}]}
        """#
        XCTAssertTrue(errors(retagged, [:]).contains { $0.nodeID == "cf" && $0.message.hasPrefix("the input is tagged \"discrete\"") })
    }

    // MARK: - The signal

    /// A left-only impulse: the right ear gets k·LP(impulse) exactly
    /// `delay` late, and at low frequencies (the sums of the responses) the
    /// cross path lies `feed` dB below the direct path.
    func testALeftImpulseReachesTheRightEarDelayedLowPassedAndFeedDecibelsDown() throws {
        for (feed, delay, cutoff) in [(4.5, 0.3, 700.0), (9.5, 0.5, 650), (2, 0, 1200)] {
            var left = [Float](repeating: 0, count: 24_000)
            left[1000] = 1
            let out = try render(Signal(.stereo, [left, [Float](repeating: 0, count: 24_000)]),
                                 #"{"feed": \#(feed), "delay": \#(delay), "cutoff": \#(cutoff)}"#)
            let setting = "feed \(feed) dB, delay \(delay) ms, cutoff \(cutoff) Hz"
            let delaySamples = Int((delay * Self.rate / 1000).rounded())
            let onset = try XCTUnwrap(out.right.firstIndex { $0 != 0 }, setting) - 1000
            XCTAssertLessThanOrEqual(abs(onset - delaySamples), 1, "\(setting): the cross path's delay in samples")
            XCTAssertEqual(onset, delaySamples, "\(setting): exact, in fact")
            let k = crossGain(feed: feed)
            let cross = out.right.reduce(0.0) { $0 + Double($1) }
            let direct = out.left.reduce(0.0) { $0 + Double($1) }
            XCTAssertEqual(cross, k, accuracy: 1e-4, "\(setting): the cross path's gain at DC")
            XCTAssertEqual(dB(cross / direct), -feed, accuracy: 0.2, "\(setting): cross path vs direct path at low frequencies")
            // Low-passed: a smooth decay, not a copy of the impulse.
            let first = Double(out.right[1000 + onset])
            let w = tan(Double.pi * cutoff / Self.rate), b = w / (1 + w)
            XCTAssertEqual(first, k * b, accuracy: 1e-6, "\(setting): the low-pass's first sample")
            XCTAssertLessThan(first, k / 2, setting)
            // The direct path: the impulse itself, minus the same low-passed copy D samples later.
            XCTAssertEqual(Double(out.left[1000]), delaySamples == 0 ? 1 - k * b : 1, accuracy: 1e-6, "\(setting): the direct path at the impulse")
            XCTAssertEqual(Double(out.left[1000 + delaySamples]), (delaySamples == 0 ? 1 : 0) - k * b, accuracy: 1e-6, setting)
        }
    }

    /// Sines on the left only, below, at and above the cutoff: the right
    /// ear's level is k times the low-pass's response; at low frequency the
    /// two ears differ by `feed` dB.
    func testTheCrossPathFollowsTheCutoffAndTheFeed() throws {
        let cutoff = 700.0, feed = 4.5
        let k = crossGain(feed: feed)
        var levels: [Double: Double] = [:]
        for f in [40.0, 175, 700, 2800, 5600] {
            let out = try render(Signal(.stereo, [sine(f, 0.5, frames: 72_000), [Float](repeating: 0, count: 72_000)]),
                                 #"{"cutoff": \#(cutoff), "feed": \#(feed)}"#, blockFrames: 480)
            let window = 24_000..<72_000   // 1 s after the filter settled: whole cycles of every f
            let right = amplitude(out.right[window], f), left = amplitude(out.left[window], f)
            let measured = dB(right / (k * 0.5))
            levels[f] = measured
            XCTAssertEqual(measured, dB(lowPassMagnitude(f, cutoff: cutoff)), accuracy: 0.2, "\(f) Hz: the low-pass's response")
            if f <= 4 * cutoff {
                // The bilinear transform bends the response only near Nyquist.
                XCTAssertEqual(measured, dB(analogMagnitude(f, cutoff: cutoff)), accuracy: 0.2, "\(f) Hz: a first-order low-pass at the cutoff")
            }
            if f == 40 {
                XCTAssertEqual(dB(right / left), -feed, accuracy: 0.2, "40 Hz: the cross path lies feed dB below the direct path")
            }
        }
        XCTAssertEqual(levels[700] ?? 0, -3.01, accuracy: 0.2, "−3 dB at the cutoff")
        XCTAssertLessThan((levels[2800] ?? 0) - (levels[175] ?? 0), -11.5, "two octaves above vs two below the cutoff")
        XCTAssertEqual((levels[5600] ?? 0) - (levels[2800] ?? 0), -6, accuracy: 0.5, "6 dB per octave above the cutoff")
    }

    /// A centred source (the same on both sides) passes unchanged, sample
    /// for sample: the low-passed difference the ears exchange is 0.
    func testACentredSourcePassesUnchanged() throws {
        let s = zip(sine(40, 0.3, frames: 24_000), sine(3000, 0.3, frames: 24_000)).map { $0 + $1 }
        let out = try render(Signal(.stereo, [s, s]), #"{"feed": 2, "delay": 0.7}"#)
        XCTAssertEqual(out.left, s)
        XCTAssertEqual(out.right, s)
        // One side a little louder: no longer centred, and the ears differ.
        let louder = try render(Signal(.stereo, [s.map { $0 * 1.1 }, s]))
        XCTAssertNotEqual(louder.right, s)
    }

    // MARK: - Downmix by the layout tag

    /// Six or eight different tones: the plugin's output equals the
    /// crossfeed of the BS.775 stereo downmix computed here; the LFE is left
    /// out (`lfe: "drop"`) or added at −3 dB (`"mix"`).
    func testSurroundInputIsDownmixedByBS775BeforeTheCrossfeed() throws {
        let c = 1 / 2.0.squareRoot()
        let frames = 12_000
        let tones = [200.0, 300, 500, 60, 800, 1100, 1500, 2100].map { sine($0, 0.25, frames: frames) }
        for (layout, lfe) in [(ChannelLayout.surround51, "drop"), (.surround51, "mix"), (.surround71, "drop"), (.surround71, "mix")] {
            let n = layout == .surround51 ? 6 : 8
            let input = Array(tones.prefix(n))
            let lfeGain = lfe == "mix" ? c : 0
            func side(_ front: Int, _ surround: Int, _ back: Int) -> [Float] {
                (0..<frames).map { i in
                    var x = Double(input[front][i]) + c * Double(input[2][i]) + lfeGain * Double(input[3][i]) + c * Double(input[surround][i])
                    if n == 8 { x += c * Double(input[back][i]) }
                    return Float(x)
                }
            }
            let params = #"{"lfe": "\#(lfe)"}"#
            let surround = try render(Signal(layout, input), params)
            let reference = try render(Signal(.stereo, [side(0, 4, 6), side(1, 5, 7)]), params)
            for (ear, got, want) in [("left", surround.left, reference.left), ("right", surround.right, reference.right)] {
                let worst = zip(got, want).map { abs($0 - $1) }.max() ?? 1
                XCTAssertLessThan(worst, 2e-6, "\(layout), lfe \(lfe), \(ear) ear")
            }
            XCTAssertGreaterThan(SignalAnalysis.rms(surround.left), 0.1, "\(layout): a signal, not silence")
        }
        // The LFE alone: silence when dropped, both ears when mixed.
        var lfeOnly = [[Float]](repeating: [Float](repeating: 0, count: frames), count: 6)
        lfeOnly[3] = sine(60, 0.5, frames: frames)
        let dropped = try render(Signal(.surround51, lfeOnly), #"{"lfe": "drop"}"#)
        XCTAssertEqual(SignalAnalysis.peak(dropped.left + dropped.right), 0, "the LFE is left out of the downmix")
        let mixed = try render(Signal(.surround51, lfeOnly), #"{"lfe": "mix"}"#)
        XCTAssertEqual(amplitude(mixed.left[4000..<12_000], 60), 0.5 * c, accuracy: 0.01, "the LFE at −3 dB, centred")
        XCTAssertEqual(amplitude(mixed.right[4000..<12_000], 60), 0.5 * c, accuracy: 0.01)
    }

    func testMonoInputFeedsBothSides() throws {
        let s = sine(440, 0.5, frames: 12_000)
        let mono = try render(Signal(.mono, [s]))
        let stereo = try render(Signal(.stereo, [s, s]))
        XCTAssertEqual(mono.left, stereo.left)
        XCTAssertEqual(mono.right, stereo.right)
        XCTAssertEqual(mono.left, s, "a centred source passes unchanged")
    }

    // MARK: - Live parameters, allocations

    /// `feed` and `cutoff` change while rendering: the cross path follows.
    func testFeedAndCutoffChangeLive() throws {
        let frames = 96_000
        let left = zip(sine(40, 0.3, frames: frames), sine(2800, 0.3, frames: frames)).map { $0 + $1 }
        let store = CaptureStore(capacityFrames: frames)
        let signal = Signal(.stereo, [left, [Float](repeating: 0, count: frames)])
        let g = try folder.validate(graph(), registry(["main": signal], store: store)).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 480)
        for _ in 0..<100 { compiled.engine.render(frames: 480) }
        try compiled.set("cf.feed", 12)
        try compiled.set("cf.cutoff", 1400)
        XCTAssertEqual(try compiled.value("cf.feed"), 12)
        for _ in 0..<100 { compiled.engine.render(frames: 480) }
        XCTAssertThrowsError(try compiled.set("cf.delay", 0.5), "delay is not live")
        let r = store.samples(1), l = store.samples(0)
        for (range, feed, cutoff) in [(24_000..<48_000, 4.5, 700.0), (72_000..<96_000, 12, 1400)] {
            let k = crossGain(feed: feed)
            XCTAssertEqual(dB(amplitude(r[range], 40) / amplitude(l[range], 40)), -feed, accuracy: 0.2, "feed \(feed)")
            XCTAssertEqual(dB(amplitude(r[range], 2800) / (k * 0.3)), dB(lowPassMagnitude(2800, cutoff: cutoff)), accuracy: 0.2,
                           "cutoff \(cutoff)")
        }
    }

    func testRenderAllocatesNothingAcrossTenThousandBlocks() throws {
        try XCTSkipUnless(MallocCounter.isAvailable, "allocation counting is unavailable under sanitizers")
        for channels in [2, 6, 8] {
            let json = #"""
            {"format": "agraph/1", "nodes": [{"id": "tone", "type": "test-tone", "params": {"waveform": "pink", "channels": \#(channels)}},
              {"id": "cf", "type": "\#(Self.crossfeed)", "params": {"lfe": "mix"}}, {"id": "cap", "type": "capture"}],
             "links": [{"from": "tone", "to": "cf"}, {"from": "cf", "to": "cap"}]}
            """#
            let compiled = try GraphCompiler.compile(try folder.validate(json, registry(store: CaptureStore(capacityFrames: 1024))).get(),
                                                     maxFrames: 256)
            let engine = compiled.engine
            engine.render(frames: 256)   // warm-up: the Swift runtime instantiates metadata on first use
            let changes = try [("cf.feed", 9.0), ("cf.cutoff", 300), ("cf.feed", 2), ("cf.cutoff", 1800)].map { try compiled.change($0.0, $0.1) }
            engine.post(changes[0])
            engine.render(frames: 256)
            let allocations = MallocCounter.countRendering(engine, sizes: [64, 256, 100, 1], changes: changes)
            XCTAssertEqual(allocations, 0, "\(channels) channels: allocations on the render path across 10,000 blocks")
        }
    }

    // MARK: - The example graph

    /// Graphs/crossfeed-vs-binaural.json validates with the plugins (the
    /// crossfeed, the ffmpeg decoder). Until the `binaural` node type is in
    /// the registry, a stand-in with its declared interface takes its place
    /// (any speaker layout in, 2 channels tagged binaural out, virtualizes).
    func testTheExampleGraphValidates() throws {
        var (registry, report) = NodeRegistry.withPlugins(.builtIn.addingJACK())
        XCTAssertNotNil(registry[Self.crossfeed], report.note)
        if registry["binaural"] == nil { registry.register(BuiltInVirtualizerStandIn(typeID: "binaural")) }
        let path = TestMedia.packageRoot + "/Graphs/crossfeed-vs-binaural.json"
        switch GraphValidator(registry: registry).validate(file: path) {
        case .failure(let errors):
            XCTFail("\(errors)")
        case .success(let g):
            XCTAssertEqual(g.warnings.map(\.description), [])
            XCTAssertEqual(g.node("cf")?.outputFormat, StreamFormat(channels: 2, sampleRate: 48_000, layout: .binaural))
            XCTAssertEqual(g.node("cf")?.descriptor.typeID, Self.crossfeed)
            XCTAssertEqual(g.node("ab")?.parameters.string("match"), "loudness")
            XCTAssertTrue(g.node("ab")?.inputFormats.allSatisfy { $0.layout == .binaural } ?? false)
        }
    }
}

// MARK: - Test nodes

/// Samples for the `signal` source: one array per channel, and a tag.
struct Signal: Sendable {
    var layout: ChannelLayout
    var channels: [[Float]]
    init(_ layout: ChannelLayout, _ channels: [[Float]]) { self.layout = layout; self.channels = channels }
    var frames: Int { channels.first?.count ?? 0 }
}

/// `signal`: plays fixed samples with a layout tag, then ends (tests only).
struct SignalSourceType: NodeType {
    let signals: [String: Signal]

    var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: "signal", role: .source, summary: "Fixed samples (tests only).", inputs: .none,
                       parameters: [.init("name", .string, default: .string("main"), "The signal to play.")],
                       origin: "CrossfeedPluginTests")
    }

    func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let s = signals[c.parameters.string("name") ?? ""] else { c.error(parameter: "name", "no such signal"); return nil }
        return StreamFormat(channels: s.channels.count, sampleRate: c.sampleRate, layout: s.layout)
    }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let s = signals[c.parameters.string("name") ?? ""] else { throw EngineError("no signal") }
        return SignalSourceNode(s.channels)
    }
}

final class SignalSourceNode: RenderNode {
    let channels: [[Float]]
    var position = 0
    var output: AudioBus?
    init(_ channels: [[Float]]) { self.channels = channels }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws { self.output = output }

    func render(frames: Int) {
        guard let output else { return }
        let n = max(0, min(frames, (channels.first?.count ?? 0) - position))
        for c in 0..<output.channels {
            let dst = output.channel(c)
            for i in 0..<frames { dst[i] = i < n ? channels[c][position + i] : 0 }
        }
        position += n
        output.state = BusState(validFrames: n, ended: position >= (channels.first?.count ?? 0))
    }
}

/// A built-in node type that virtualizes, as the `binaural` node declares
/// itself (issue 11): any speaker layout in, two channels tagged binaural
/// out, silence. For validation only: it checks that plugin and built-in
/// virtualizers are refused alike, and stands in for `binaural` where that
/// type is not in the registry yet.
struct BuiltInVirtualizerStandIn: NodeType {
    let typeID: String

    var descriptor: NodeDescriptor {
        NodeDescriptor(typeID: typeID, role: .processor, summary: "Virtualizer stand-in (tests only).", inputs: .single,
                       parameters: [], origin: "CrossfeedPluginTests", virtualizes: true)
    }

    func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard c.input != nil else { return nil }
        return StreamFormat(channels: 2, sampleRate: c.sampleRate, layout: .binaural)
    }

    func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        throw EngineError(nodeID: c.nodeID, "a validation stand-in does not render")
    }
}
