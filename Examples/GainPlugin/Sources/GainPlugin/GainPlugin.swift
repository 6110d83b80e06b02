// `com.example.gain`: every channel times one gain in dB, changed live
// between blocks. The smallest useful node plugin: one input, one output
// with the input's channels, one live parameter.
import AGraphPluginKit
#if canImport(Glibc)
import Glibc
#endif

final class Gain: PluginNode {
    static let description = PluginNodeDescription(
        typeID: "com.example.gain",
        summary: "Multiplies every channel by a gain in dB (the example of an out-of-tree plugin).",
        input: .input(channels: 1...64),
        output: .output(channels: .sameAsInput),
        parameters: [
            .number("gain", -96...24, default: 0, unit: "dB", live: true, "Gain applied to every channel."),
        ])

    /// The linear factor; written by `setParameter`, read by `process`,
    /// both on the audio thread.
    var factor: Float

    /// [main-thread]
    init(_ setup: PluginNodeSetup) throws {
        factor = Self.linear(setup.number("gain") ?? 0)
    }

    /// dB to a linear factor. [any-thread]
    static func linear(_ dB: Double) -> Float { Float(pow(10, dB / 20)) }

    /// [audio-thread & active]
    func setParameter(_ index: Int, value: Double) {
        if index == 0 { factor = Self.linear(value) }
    }

    /// [audio-thread & active]: no allocation, no locks, no printing.
    func process(_ block: PluginBlock) {
        let factor = self.factor
        for c in 0..<block.outputChannels {
            let input = block.input(c), output = block.output(c)
            for i in 0..<block.frames { output[i] = input[i] * factor }
        }
    }
}

/// Everything `agraph_plugin_entry` hands the host, built once.
let gainPlugin = PluginExport(name: "AudioGraph gain example", vendor: "AudioGraph Examples", version: "1.0.0",
                              nodes: [Gain.self])

/// The one exported C symbol. [main-thread]
@c(agraph_plugin_entry)
public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { gainPlugin.descriptor }
