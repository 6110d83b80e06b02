// A decoder plugin written in Swift on AGraphPluginKit: the proof that the
// kit covers the decoder extension, plugin info, output layout, live
// parameters and the host extensions (log, output route, latency, thread
// check) of ABI 2.0. Built as `libAGraphPCMFramesPlugin.so` (product
// `AGraphPCMFramesPlugin`).
//
// The codec, "pcm-frames", is the simplest one with frames: each frame
// carries PCM.
//
//     offset 0  "PCMF"                 magic
//            4  channels (UInt8)       1 or 2 (more: the node cannot follow)
//            5  0                      reserved
//            6  samples (UInt16, LE)   samples per channel, 1…8192
//            8  samples × channels Int16 LE, interleaved (value / 32768)
//
// `com.audiograph.pcm-frames` decodes it to stereo (mono is doubled):
// - `gain` (dB, live: set on the worker thread between two frames);
// - `priming`: the "codec" holds back that many samples, as a real
//   decoder's overlap does; the node gives them back when drained, so the
//   output is sample-exact (nothing to trim, decoder latency 0);
// - `speakerDelay`: on the speakers route (agraph.output-route/1) the
//   output is delayed by that many samples (time alignment), reported as
//   the decoder's latency; when the route changes the node tells the host
//   (agraph.latency/1) and applies it from the next frame;
// - `layout`: the output's layout tag (output_layout).
import AGraphPluginKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The frame format above.
public enum PCMFrameFormat {
    public static let magic: [UInt8] = [0x50, 0x43, 0x4D, 0x46]
    public static let headerBytes = 8
    public static let maxSamples = 8192
}

final class PCMFramesDecoder: PluginDecoder {
    static let inputCodec = "pcm-frames"
    static let description = PluginNodeDescription(
        typeID: "com.audiograph.pcm-frames",
        summary: "Decodes pcm-frames (frames carrying 16-bit PCM) to stereo: a decoder plugin written on AGraphPluginKit.",
        input: .input("in", channels: 1...2),
        output: .output(channels: .fixed(2)),
        parameters: [
            .number("gain", -60...12, default: 0, unit: "dB", live: true, "Gain applied to the decoded PCM."),
            .number("priming", 0...8192, default: 0, integer: true,
                    "Samples the codec holds back (given back when the stream is drained)."),
            .number("speakerDelay", 0...4800, default: 0, integer: true,
                    "Delay on the speakers output route, in samples (reported as latency)."),
            .choice("layout", ["stereo", "binaural"], default: "stereo", "Layout tag of the output."),
        ])

    static let gainIndex = 0

    static func outputLayout(_ setup: PluginNodeSetup) -> String? { setup.string("layout") }

    let host: PluginHost
    let priming: Int
    let speakerDelay: Int
    /// Worker-thread state.
    var gain: Float
    var fifo: [UnsafeMutablePointer<Float>] = []
    var fifoCapacity = 0
    var count = 0
    var appliedDelay = 0
    var framesFed = 0
    /// Told on the main thread, applied by decode.
    let route = Atomic<UInt32>(PluginOutputRoute.unknown.rawValue)
    /// The latency the host reads (main thread), set when the route changes.
    let reportedLatency = Atomic<Int>(0)
    var active = false

    /// [main-thread]
    init(_ setup: PluginNodeSetup) throws {
        host = setup.host
        priming = setup.integer("priming") ?? 0
        speakerDelay = setup.integer("speakerDelay") ?? 0
        gain = Self.linear(setup.number("gain") ?? 0)
        route.store(host.outputRoute.rawValue, ordering: .relaxed)
    }

    deinit { release() }

    static func linear(_ dB: Double) -> Float { Float(pow(10, dB / 20)) }

    func delay(for route: UInt32) -> Int { route == PluginOutputRoute.speakers.rawValue ? speakerDelay : 0 }

    /// [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws {
        if host.isMainThread == false { throw PluginError("activate called off the main thread") }
        release()
        fifoCapacity = 2 * PCMFrameFormat.maxSamples + priming + speakerDelay + 4800
        fifo = (0..<2).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: fifoCapacity)
            p.initialize(repeating: 0, count: fifoCapacity)
            return p
        }
        // The route is known before activation: read it again.
        route.store(host.outputRoute.rawValue, ordering: .relaxed)
        start()
        active = true
    }

    /// Empties the FIFO and starts it with the route's delay. [main-thread | worker-thread]
    func start() {
        appliedDelay = delay(for: route.load(ordering: .relaxed))
        reportedLatency.store(appliedDelay, ordering: .relaxed)
        for c in 0..<2 { fifo[c].update(repeating: 0, count: appliedDelay) }
        count = appliedDelay
    }

    func release() {
        fifo.forEach { $0.deallocate() }
        fifo = []
        count = 0
    }

    /// [main-thread & active]
    func deactivate() {
        release()
        active = false
    }

    var maxFramesPerDecode: Int { PCMFrameFormat.maxSamples }

    var decoderLatency: Int { reportedLatency.load(ordering: .relaxed) }

    /// [worker-thread & active]
    func setParameter(_ index: Int, value: Double) {
        if index == Self.gainIndex { gain = Self.linear(value) }
    }

    /// [main-thread]: stored, applied from the next frame; the latency
    /// changes with the route, so the host is told.
    func outputRouteChanged(_ route: PluginOutputRoute) {
        let old = self.route.exchange(route.rawValue, ordering: .relaxed)
        let before = delay(for: old), after = delay(for: route.rawValue)
        guard before != after else { return }
        reportedLatency.store(after, ordering: .relaxed)
        if active { host.latencyChanged() }
    }

    /// [worker-thread & active]
    func flush() { start() }

    /// [worker-thread & active]
    func decode(_ frame: UnsafeRawBufferPointer?, timestamp: Int, into pcm: PluginPCM) -> PluginDecodeResult {
        guard fifo.count == 2 else { return .fatal("decode before activate") }
        if host.isAudioThread == true { host.log(.error, "decode called on the audio thread") }
        guard let frame else { return .ok(frames: take(count, into: pcm)) }   // drained: everything held back
        framesFed += 1
        // A route change told since the last frame: move to its delay.
        let wanted = delay(for: route.load(ordering: .relaxed))
        if wanted > appliedDelay {
            let extra = min(wanted - appliedDelay, fifoCapacity - count)
            for c in 0..<2 { (fifo[c] + count).update(repeating: 0, count: extra) }
            count += extra
        } else if wanted < appliedDelay {
            drop(min(appliedDelay - wanted, count))
        }
        appliedDelay = wanted

        guard frame.count >= PCMFrameFormat.headerBytes,
              frame[0] == PCMFrameFormat.magic[0], frame[1] == PCMFrameFormat.magic[1],
              frame[2] == PCMFrameFormat.magic[2], frame[3] == PCMFrameFormat.magic[3] else {
            return bad("frame \(framesFed): no pcm-frames header (\(frame.count) bytes)")
        }
        let channels = Int(frame[4])
        let samples = Int(frame[6]) | Int(frame[7]) << 8
        guard channels >= 1 else { return bad("frame \(framesFed): 0 channels") }
        guard channels <= 2 else {
            return .fatal("frame \(framesFed): the stream changed to \(channels) channels; this node outputs 2")
        }
        guard (1...PCMFrameFormat.maxSamples).contains(samples),
              frame.count == PCMFrameFormat.headerBytes + 2 * channels * samples else {
            return bad("frame \(framesFed): \(frame.count) bytes for \(samples) samples × \(channels) channels")
        }
        guard count + samples <= fifoCapacity else {
            return .fatal("decoded PCM overflows the node's buffer: the host must take the PCM of each decode call")
        }
        let body = frame.baseAddress! + PCMFrameFormat.headerBytes
        for i in 0..<samples {
            for c in 0..<2 {
                let offset = 2 * (i * channels + min(c, channels - 1))
                let raw = Int16(bitPattern: UInt16(body.load(fromByteOffset: offset, as: UInt8.self))
                                | UInt16(body.load(fromByteOffset: offset + 1, as: UInt8.self)) << 8)
                fifo[c][count + i] = Float(raw) / 32768 * gain
            }
        }
        count += samples
        // The codec holds `priming` samples back until the end.
        return .ok(frames: take(max(count - priming, 0), into: pcm))
    }

    func bad(_ why: String) -> PluginDecodeResult {
        host.log(.warning, why)
        return .badFrame(why)
    }

    /// Moves up to `n` samples from the FIFO's head to `pcm`.
    func take(_ n: Int, into pcm: PluginPCM) -> Int {
        let n = min(n, pcm.capacity, count)
        guard n > 0 else { return 0 }
        for c in 0..<min(2, pcm.channels) { pcm.channel(c)?.update(from: fifo[c], count: n) }
        drop(n)
        return n
    }

    func drop(_ n: Int) {
        guard n > 0 else { return }
        for c in 0..<2 { fifo[c].update(from: fifo[c] + n, count: count - n) }
        count -= n
    }
}

let plugin = PluginExport(
    name: "pcm-frames decoder", vendor: "AudioGraph", version: "1.0", nodes: [PCMFramesDecoder.self],
    details: { "Codec pcm-frames: 16-bit PCM, 1 or 2 channels, up to \(PCMFrameFormat.maxSamples) samples per frame." })

@c(agraph_plugin_entry)
public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { plugin.descriptor }
