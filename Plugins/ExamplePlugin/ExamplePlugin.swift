// The example plugin: a ring modulator, written with AGraphPluginKit.
// Copy this file to start a plugin of your own (see README.md here).
//
// `com.example.ducker` (two inputs, `in` and `sidechain`: named ports)
// turns its input down while the sidechain is loud.
//
// `com.example.ring-modulator` multiplies every input channel by a carrier
// oscillator: a 1 kHz tone through a 300 Hz carrier comes out as 700 Hz and
// 1300 Hz, with the 1 kHz gone (at mix 1). Built as the dynamic library
// `libAGraphExamplePlugin.so` (product `AGraphExamplePlugin`).
import AGraphPluginKit
#if canImport(Glibc)
import Glibc
#endif

final class RingModulator: PluginNode {
    static let description = PluginNodeDescription(
        typeID: "com.example.ring-modulator",
        summary: "Multiplies the signal by a carrier oscillator (example plugin).",
        input: .input(channels: 1...64),
        output: .output(channels: .sameAsInput),
        parameters: [
            .number("frequency", 0.1...20_000, default: 440, unit: "Hz", live: true, "Carrier frequency."),
            .number("mix", 0...1, default: 1, live: true, "0: the input unchanged; 1: only the modulated signal."),
            .choice("carrier", ["sine", "square"], default: "sine", "Carrier waveform."),
        ])

    // Parameter indices, in the order of `description.parameters`.
    static let frequencyIndex = 0
    static let mixIndex = 1

    // Audio-thread state: plain stored values, nothing allocated.
    var frequency: Double
    var mix: Float
    let square: Bool
    var sampleRate: Double
    var phase: Double = 0   // in cycles, 0 ..< 1

    /// [main-thread]
    init(_ setup: PluginNodeSetup) throws {
        frequency = setup.number("frequency") ?? 440
        mix = Float(setup.number("mix") ?? 1)
        square = setup.string("carrier") == "square"
        sampleRate = setup.sampleRate
    }

    /// [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws {
        self.sampleRate = sampleRate
        phase = 0
    }

    /// [audio-thread & active]
    func setParameter(_ index: Int, value: Double) {
        switch index {
        case Self.frequencyIndex: frequency = value
        case Self.mixIndex: mix = Float(value)
        default: break
        }
    }

    /// [audio-thread & active]: no allocation, no locks, no printing.
    func process(_ block: PluginBlock) {
        let frames = block.frames
        let channels = block.outputChannels
        let step = frequency / sampleRate
        let dry = 1 - mix
        var c = 0
        while c < channels {
            let input = block.input(c)
            let output = block.output(c)
            var p = phase
            var i = 0
            while i < frames {
                let carrier: Float = square ? (p < 0.5 ? 1 : -1) : Float(sin(2 * Double.pi * p))
                output[i] = input[i] * (dry + mix * carrier)
                p += step
                if p >= 1 { p -= 1 }
                i += 1
            }
            c += 1
        }
        // The carrier runs on whether or not channels exist.
        phase = (phase + step * Double(frames)).truncatingRemainder(dividingBy: 1)
        // Output state: the host preset it to the input's; nothing to change.
    }
}

/// `com.example.ducker`: a node with two inputs (named ports). The main
/// input `in` is turned down while the `sidechain` input is loud (a voice
/// over music): the sidechain's peak envelope (instant attack, `release`
/// fall) above `threshold` moves the gain towards −`depth` dB, else towards
/// 0 dB, by a one-pole smoother of time constant `time`. With a silent
/// sidechain the output is the input, sample for sample.
final class Ducker: PluginNode {
    static let description = PluginNodeDescription(
        typeID: "com.example.ducker",
        summary: "Turns its input down while the sidechain input is loud (example plugin with two inputs).",
        inputs: [.input("in", channels: 1...64), .input("sidechain", channels: 1...64)],
        outputs: [.output("out", channels: .sameAsInput)],
        parameters: [
            .number("threshold", -90...0, default: -30, unit: "dBFS", live: true, "Sidechain level above which the input is ducked."),
            .number("depth", 0...90, default: 12, unit: "dB", live: true, "How far the input is turned down."),
            .number("time", 0.001...1, default: 0.01, unit: "s", "Time constant of the gain's moves."),
            .number("release", 0.001...5, default: 0.2, unit: "s", "Fall time of the sidechain envelope (to 1/e)."),
        ])

    static let thresholdIndex = 0
    static let depthIndex = 1

    // Audio-thread state: plain stored values.
    var threshold: Float
    var ducked: Float
    let time: Double
    let release: Double
    var sampleRate: Double
    var smoothing: Float = 1
    var fall: Float = 0
    var envelope: Float = 0
    var gain: Float = 1

    /// [main-thread]
    init(_ setup: PluginNodeSetup) throws {
        threshold = Self.linear(setup.number("threshold") ?? -30)
        ducked = Self.linear(-(setup.number("depth") ?? 12))
        time = setup.number("time") ?? 0.01
        release = setup.number("release") ?? 0.2
        sampleRate = setup.sampleRate
    }

    static func linear(_ dB: Double) -> Float { Float(pow(10, dB / 20)) }

    /// The sidechain's channels must be 1 or as many as the input's. [main-thread]
    static func check(_ setup: PluginNodeSetup) -> String? {
        let ports = setup.inputPortChannels
        guard ports.count == 2, ports[0] > 0, ports[1] > 0 else { return nil }
        return ports[1] == 1 || ports[1] == ports[0] ? nil
            : "the sidechain has \(ports[1]) channels: give it 1 or as many as the input (\(ports[0]))"
    }

    /// [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws {
        self.sampleRate = sampleRate
        smoothing = Float(1 - exp(-1 / (time * sampleRate)))
        fall = Float(exp(-1 / (release * sampleRate)))
        envelope = 0
        gain = 1
    }

    /// [audio-thread & active]
    func setParameter(_ index: Int, value: Double) {
        switch index {
        case Self.thresholdIndex: threshold = Self.linear(value)
        case Self.depthIndex: ducked = Self.linear(-value)
        default: break
        }
    }

    /// [audio-thread & active]: no allocation, no locks.
    func process(_ block: PluginBlock) {
        let frames = block.frames
        let channels = block.outputChannels
        let sideChannels = block.inputChannels(port: 1)
        var e = envelope
        var g = gain
        var i = 0
        while i < frames {
            var peak: Float = 0
            var c = 0
            while c < sideChannels {
                let v = abs(block.input(port: 1, c)[i])
                if v > peak { peak = v }
                c += 1
            }
            e = peak > e * fall ? peak : e * fall
            let target: Float = e > threshold ? ducked : 1
            g += (target - g) * smoothing
            c = 0
            while c < channels {
                block.output(c)[i] = block.input(c)[i] * g
                c += 1
            }
            i += 1
        }
        envelope = e
        gain = g
        // The output follows the main input's length, not the sidechain's.
        block.setOutput(validFrames: block.inputValidFrames(port: 0), ended: block.inputEnded(port: 0))
    }
}

/// Everything `agraph_plugin_entry` hands the host, built once.
let examplePlugin = PluginExport(
    name: "AudioGraph example plugin", vendor: "AudioGraph", version: "1.0.0",
    nodes: [RingModulator.self, Ducker.self])

/// The one exported C symbol. [main-thread]
@c(agraph_plugin_entry)
public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { examplePlugin.descriptor }
