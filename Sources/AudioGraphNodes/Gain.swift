import AudioGraphCore
import AudioGraphNodeAPI

/// `gain`: a level change in dB, with mute; both smoothed.
public struct GainType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "gain", role: .processor,
        summary: "Changes the level; changes are smoothed over 20 ms.",
        inputs: .single,
        parameters: [
            .init("gain", .number, range: -144...48, default: .number(0), unit: "dB", live: true, "Gain."),
            .init("mute", .boolean, default: .boolean(false), live: true, "Silences the output (smoothed)."),
        ], acceptsRateIslands: true)

    public func resolve(_ c: ResolveContext) -> StreamFormat? { c.input }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        GainNode(gainDB: c.parameters.number("gain") ?? 0, mute: c.parameters.boolean("mute") ?? false,
                 sampleRate: c.sampleRate, descriptor: descriptor)
    }
}

final class GainNode: RenderNode {
    var input: AudioBus?
    var output: AudioBus?
    var gainDB: Double
    var mute: Bool
    var gain: SmoothedGain
    let gainIndex: Int32
    let muteIndex: Int32

    init(gainDB: Double, mute: Bool, sampleRate: Double, descriptor: NodeDescriptor) {
        self.gainDB = gainDB
        self.mute = mute
        gain = SmoothedGain(mute ? 0 : linear(gainDB), rampFrames: rampFrames(sampleRate))
        gainIndex = Int32(descriptor.parameterIndex(named: "gain") ?? -1)
        muteIndex = Int32(descriptor.parameterIndex(named: "mute") ?? -1)
    }

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        self.output = output
    }

    func apply(_ change: ParameterChange) {
        if change.parameter == gainIndex { gainDB = change.value }
        else if change.parameter == muteIndex { mute = change.value != 0 }
        else { return }
        gain.setTarget(mute ? 0 : linear(gainDB))
    }

    /// y[i] = g(i)·x[i], sample by sample: the output may be the input's bus.
    var processesInPlace: Bool { true }

    func render(frames: Int) {
        guard let input, let output else { return }
        applyGain(&gain, from: input, to: output, frames: frames)
        output.state = input.state
    }
}

/// `format-tag`: sets the stream's layout tag; the samples pass unchanged.
public struct FormatTagType: NodeType {
    public init() {}

    public let descriptor = NodeDescriptor(
        typeID: "format-tag", role: .processor,
        summary: "Sets the channel-layout tag of the stream (e.g. binaural, so nothing virtualizes it again).",
        inputs: .single,
        parameters: [
            .init("layout", .choice(ChannelLayout.allCases.map(\.rawValue)),
                  "The layout; its channel count must match the stream's (any count for discrete)."),
        ], acceptsRateIslands: true)

    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        guard let name = c.parameters.string("layout"), let layout = ChannelLayout(rawValue: name) else { return nil }
        guard var format = c.input else { return nil }
        if let n = layout.channelCount, n != format.channels {
            let fits = ChannelLayout.allCases.filter { $0.channelCount == format.channels || $0 == .discrete }
            c.error(parameter: "layout", "layout \"\(name)\" has \(n) channel\(n == 1 ? "" : "s") but the stream has \(format.channels); for \(format.channels) channels use one of: \(fits.map(\.rawValue).joined(separator: ", "))")
            return nil
        }
        format.layout = layout
        return format
    }

    public func makeNode(_ c: InstanceContext) throws -> any RenderNode { CopyNode() }
}

/// Copies its input to its output (the data path of `format-tag`).
final class CopyNode: RenderNode {
    var input: AudioBus?
    var output: AudioBus?

    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        input = inputs.first
        self.output = output
    }

    func render(frames: Int) {
        guard let input, let output else { return }
        for c in 0..<output.channels { Kernels.copy(input.channel(c), to: output.channel(c), count: frames) }
        output.state = input.state
    }
}
