import AudioGraphCore
import AudioGraphNodeAPI

extension ProcessingNodes {
    static var rateNodes: [any NodeType] { [ResampleType()] }
}

/// `resample`: converts a stream's sample rate with libsoxr.
///
/// **How rates live in a graph.** The engine has one clock: every block is
/// `n` frames at the graph's rate, and every node renders every block. A
/// stream whose rate differs from the graph's therefore cannot carry `n`
/// frames per block. The design:
///
/// - A stream at the graph's rate carries the whole block, as always.
/// - A stream below the graph's rate (a *rate island*, e.g. 44.1 kHz in a
///   48 kHz graph) carries, in each block, the frames that fall due in it
///   (`RatePacer`): on average `n × rate / graphRate`, at most `n`, in
///   `BusState.validFrames`. Its frame `j` stands at graph time
///   `j × graphRate / rate`, so the island stays in step with the graph
///   and nothing piles up. Islands start at a source that emits its own
///   rate (`file` with `"resample": "native"`) or at a `resample` node with
///   a lower `rate`, and end at a `resample` node back to the graph's rate.
///   Nodes in between that pass `validFrames` on (gain, split) work
///   unchanged; the mixer refuses a stream that is not at the graph's rate.
/// - A rate above the graph's cannot flow inside the graph (more than `n`
///   frames per block): such a source converts by itself on its reader
///   thread (`file` with `"resample": "auto"`, the default).
///
/// The node itself runs on the audio thread (`realtime`): its libsoxr
/// resampler is made and warmed up in `prepare`, and `render` calls
/// `soxr_process` on buffers allocated there, so nothing allocates per
/// block (the allocation test counts zero). libsoxr works in internal
/// blocks and returns output in bursts; a FIFO in front of the output
/// evens them out. Its fill is the node's latency (`latency`, in graph
/// frames): the largest amount libsoxr holds back, measured while warming
/// up, plus a small margin. Output frame `g` carries the input's frame at
/// graph time `g − latency`, exactly.
///
/// `rate` and `quality` are fixed when the graph is built (a libsoxr
/// resampler is made for one ratio and quality); they are not live.
public struct ResampleType: NodeType, RateConversionReporting {
    public init() {}

    /// The lowest and highest output rates, in Hz.
    public static let rateRange: ClosedRange<Double> = 1000...384_000

    public let descriptor = NodeDescriptor(
        typeID: "resample", role: .processor,
        summary: "Converts the sample rate (libsoxr), e.g. a 44.1 kHz branch to the graph's 48 kHz; reports the converter's delay as latency.",
        inputs: .single,
        parameters: [
            .init("rate", .integer, range: ResampleType.rateRange, optional: true, unit: "Hz",
                  "The output rate; default: the graph's. At most the graph's rate: below it, the output is a rate island that another resample node brings back."),
            .init("quality", .choice(ResampleQuality.names), default: .string("high"),
                  "libsoxr's recipe, as SoX names them: quick (cubic), low, medium (16-bit), high (20-bit), very-high (28-bit)."),
        ], acceptsRateIslands: true)

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        let graphRate = c.sampleRate
        let out = c.parameters.number("rate") ?? graphRate
        let name = c.parameters.string("quality") ?? "high"
        guard let quality = ResampleQuality(rawValue: name) else {
            c.error(parameter: "quality", "unknown quality \"\(name)\"; choose one of: \(ResampleQuality.names.joined(separator: ", "))")
            return nil
        }
        if out > graphRate {
            c.error(parameter: "rate", "\(rateText(out)) Hz is above the graph's \(rateText(graphRate)) Hz: inside a graph a stream runs at the graph's rate or below (each block holds the graph's frames); raise the graph's \"sampleRate\" to \(rateText(out)), or leave \"rate\" out to convert to the graph's rate")
            return nil
        }
        guard let input = c.input else { return nil }
        guard input.encoding == .pcm else { return nil }
        if input.sampleRate != out, let problem = Resampler.problem(from: input.sampleRate, to: out, channels: max(input.channels, 1), quality: quality) {
            c.error(parameter: "rate", problem)
            return nil
        }
        return StreamFormat(channels: input.channels, sampleRate: out, layout: input.layout,
                            surroundsAreBack: input.surroundsAreBack)
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        guard let input = c.inputFormats.first else { throw EngineError(nodeID: c.nodeID, "resample has no input") }
        let quality = ResampleQuality(rawValue: c.parameters.string("quality") ?? "high") ?? .high
        return ResampleNode(nodeID: c.nodeID, channels: input.channels, inputRate: Int(input.sampleRate),
                            outputRate: Int(c.parameters.number("rate") ?? c.sampleRate),
                            graphRate: Int(c.sampleRate), quality: quality)
    }

    public func rateConversion(parameters: NodeParameters, inputFormats: [StreamFormat], outputFormats: [StreamFormat],
                               graphRate: Double, directory: String) -> String? {
        guard let i = inputFormats.first, let o = outputFormats.first else { return nil }
        let quality = parameters.string("quality") ?? "high"
        if i.sampleRate == o.sampleRate { return "passes \(rateText(i.sampleRate)) Hz through (nothing to convert)" }
        var line = "converts \(rateText(i.sampleRate)) → \(rateText(o.sampleRate)) Hz (libsoxr, quality \(quality), on the audio thread)"
        if o.sampleRate < graphRate { line += "; the output is a rate island below the graph's \(rateText(graphRate)) Hz" }
        return line
    }
}

/// The audio-thread side of `resample`. [main-thread | audio-thread; init, prepare: main; render:
/// audio]
final class ResampleNode: RenderNode {
    let nodeID: String
    let channels: Int
    let inputRate: Int
    let outputRate: Int
    let graphRate: Int
    let quality: ResampleQuality

    private var resampler: Resampler?
    private var input: AudioBus?
    private var output: AudioBus?
    /// Interleaved input of one block.
    private var inScratch: UnsafeMutablePointer<Float>?
    /// Interleaved output of one `soxr_process` call.
    private var outScratch: UnsafeMutablePointer<Float>?
    private var outScratchFrames = 0
    /// Interleaved FIFO between libsoxr's bursts and the steady output.
    private var fifo: UnsafeMutablePointer<Float>?
    private var fifoCapacity = 0
    private var fifoRead = 0
    private var fifoCount = 0
    /// Paces an output below the graph's rate.
    private var pacer: RatePacer?
    private var flushed = false
    private var latencyFrames = 0
    /// Blocks in which the FIFO ran short (never, when the latency holds). [audio-thread]
    private(set) var shortBlocks = 0

    init(nodeID: String, channels: Int, inputRate: Int, outputRate: Int, graphRate: Int, quality: ResampleQuality) {
        self.nodeID = nodeID
        self.channels = max(channels, 1)
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.graphRate = graphRate
        self.quality = quality
    }

    deinit {
        inScratch?.deallocate()
        outScratch?.deallocate()
        fifo?.deallocate()
    }

    /// The converter's delay plus the FIFO's fill, in graph frames.
    var latency: Int { latencyFrames }

    /// Makes the resampler, allocates every buffer and warms libsoxr up
    /// (see the type's notes). [main-thread & !active]
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        self.output = output
        if outputRate < graphRate { pacer = RatePacer(rate: outputRate, graphRate: graphRate) }
        guard inputRate != outputRate else { return }
        let r: Resampler
        do {
            r = try Resampler(from: Double(inputRate), to: Double(outputRate), channels: channels, quality: quality)
        } catch {
            throw EngineError(nodeID: nodeID, error.message)
        }
        resampler = r
        let maxIn = context.maxFrames
        let ratio = r.ratio
        let inBuf = UnsafeMutablePointer<Float>.allocate(capacity: maxIn * channels)
        inBuf.initialize(repeating: 0, count: maxIn * channels)
        inScratch = inBuf
        outScratchFrames = 4096 + 2 * Int((Double(maxIn) * ratio).rounded(.up))
        let outBuf = UnsafeMutablePointer<Float>.allocate(capacity: outScratchFrames * channels)
        outBuf.initialize(repeating: 0, count: outScratchFrames * channels)
        outScratch = outBuf

        // Warm-up on silence: libsoxr sizes its buffers (with blocks of the
        // largest size) and shows how much it holds back (with small
        // blocks, to see the lag between bursts). Silence in makes the
        // same state as a fresh start; the input's first frame follows it.
        var inTotal = 0
        var outTotal = 0
        var maxLag = 0.0
        func feed(_ frames: Int) {
            var offset = 0
            while offset < frames {
                let (c, p) = r.process(inBuf, frames: frames - offset, into: outBuf, capacity: outScratchFrames)
                offset += c
                outTotal += p
                if c == 0 && p == 0 { break }
            }
            while true {
                let p = r.drain(into: outBuf, capacity: outScratchFrames)
                if p == 0 { break }
                outTotal += p
            }
            inTotal += frames
            maxLag = max(maxLag, Double(inTotal) * ratio - Double(outTotal))
        }
        let big = max(inputRate / 4, 8 * maxIn)
        var fed = 0
        while fed < big { feed(maxIn); fed += maxIn }
        // Then small steps, ending on a whole number of output frames when
        // the ratio allows it, so the FIFO's fill is a whole number too.
        let g = gcd(inputRate, outputRate)
        let period = inputRate / g
        var total = inTotal + max(inputRate / 2, 4 * maxIn)
        if period <= 4 * inputRate { total = (total + period - 1) / period * period }
        let step = min(32, maxIn)
        while inTotal < total { feed(min(step, total - inTotal)) }
        // Lag now, and the most libsoxr ever held back; the input arrives
        // paced (up to one frame late at the input's rate) and the output
        // is taken whole blocks at a time.
        let lagNow = Double(inTotal) * ratio - Double(outTotal)
        let fill = Int((maxLag + ratio).rounded(.up)) + 16
        let zeros = max(Int((Double(fill) - lagNow).rounded()), 0)

        fifoCapacity = 3 * fill + 4 * maxIn + outScratchFrames + 4096
        let f = UnsafeMutablePointer<Float>.allocate(capacity: fifoCapacity * channels)
        f.initialize(repeating: 0, count: fifoCapacity * channels)
        fifo = f
        fifoRead = 0
        fifoCount = zeros
        latencyFrames = outputRate == graphRate ? fill
            : Int((Double(fill) * Double(graphRate) / Double(outputRate)).rounded())
    }

    func render(frames: Int) {
        guard let input, let output else { return }
        guard let resampler, let inScratch, let outScratch, let fifo else {
            // Same rate in and out: the stream passes unchanged.
            var c = 0
            while c < output.channels {
                Kernels.copy(input.channel(c), to: output.channel(c), count: frames)
                c += 1
            }
            output.state = input.state
            return
        }
        let state = input.state
        let k = state.validFrames < frames ? state.validFrames : frames
        let ch = channels
        if k > 0 && !flushed {
            if ch == 2 && input.channels >= 2 {
                Kernels.interleave2(input.channel(0), input.channel(1), to: inScratch, count: k)
            } else {
                var c = 0
                while c < ch {
                    Kernels.interleave(input.channel(c), to: inScratch, stride: ch, channel: c, count: k)
                    c += 1
                }
            }
            var offset = 0
            while offset < k {
                let (used, made) = resampler.process(inScratch + offset * ch, frames: k - offset,
                                                     into: outScratch, capacity: outScratchFrames)
                push(outScratch, frames: made, fifo: fifo)
                offset += used
                if used == 0 && made == 0 { break }
                if made == outScratchFrames { drain(resampler, outScratch, fifo) }
            }
        }
        if state.ended && !flushed {
            while true {
                let made = resampler.flush(into: outScratch, capacity: outScratchFrames)
                if made == 0 { break }
                push(outScratch, frames: made, fifo: fifo)
            }
            flushed = true
        }
        var want = frames
        if var p = pacer {
            want = p.next(frames)
            pacer = p
        }
        let got = want < fifoCount ? want : fifoCount
        pop(got, into: output, fifo: fifo)
        if got < frames { output.clear(from: got, to: frames) }
        if flushed && got < want {
            output.state = BusState(validFrames: got, ended: true)
        } else {
            if got < want { shortBlocks &+= 1 }
            output.state = BusState(validFrames: want, ended: false)
        }
    }

    @inline(__always)
    private func drain(_ r: Resampler, _ scratch: UnsafeMutablePointer<Float>, _ fifo: UnsafeMutablePointer<Float>) {
        while true {
            let made = r.drain(into: scratch, capacity: outScratchFrames)
            if made == 0 { return }
            push(scratch, frames: made, fifo: fifo)
        }
    }

    /// Appends interleaved frames to the FIFO (what would not fit is
    /// dropped; the capacity leaves room for several bursts). [audio-thread]
    @inline(__always)
    private func push(_ src: UnsafePointer<Float>, frames: Int, fifo: UnsafeMutablePointer<Float>) {
        let room = fifoCapacity - fifoCount
        let n = frames < room ? frames : room
        if n <= 0 { return }
        var write = fifoRead + fifoCount
        if write >= fifoCapacity { write -= fifoCapacity }
        let first = n < fifoCapacity - write ? n : fifoCapacity - write
        Kernels.copy(src, to: fifo + write * channels, count: first * channels)
        if first < n { Kernels.copy(src + first * channels, to: fifo, count: (n - first) * channels) }
        fifoCount += n
    }

    /// Takes `frames` frames from the FIFO into the output's channels. [audio-thread]
    @inline(__always)
    private func pop(_ frames: Int, into bus: AudioBus, fifo: UnsafeMutablePointer<Float>) {
        if frames <= 0 { return }
        let first = frames < fifoCapacity - fifoRead ? frames : fifoCapacity - fifoRead
        var c = 0
        while c < bus.channels {
            if c < channels {
                Kernels.deinterleave(fifo + fifoRead * channels, stride: channels, channel: c, to: bus.channel(c), count: first)
                if first < frames {
                    Kernels.deinterleave(fifo, stride: channels, channel: c, to: bus.channel(c) + first, count: frames - first)
                }
            } else {
                Kernels.fill(bus.channel(c), count: frames, value: 0)
            }
            c += 1
        }
        fifoRead += frames
        if fifoRead >= fifoCapacity { fifoRead -= fifoCapacity }
        fifoCount -= frames
    }
}

/// Greatest common divisor of two positive integers.
private func gcd(_ a: Int, _ b: Int) -> Int {
    var (x, y) = (abs(a), abs(b))
    while y != 0 { (x, y) = (y, x % y) }
    return max(x, 1)
}
