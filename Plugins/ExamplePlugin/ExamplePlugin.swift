// The example plugin: a ring modulator, written with AGraphPluginKit.
// Copy this file to start a plugin of your own (see README.md here).
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

/// Everything `agraph_plugin_entry` hands the host, built once.
let examplePlugin = PluginExport(
    name: "AudioGraph example plugin", vendor: "AudioGraph", version: "1.0.0",
    nodes: [RingModulator.self])

/// The one exported C symbol. [main-thread]
@c(agraph_plugin_entry)
public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { examplePlugin.descriptor }
