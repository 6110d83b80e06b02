import AudioGraphCore
import AudioGraphNodeAPI

/// Frames in a 20 ms gain ramp at `sampleRate`.
func rampFrames(_ sampleRate: Double) -> Int { max(Int(sampleRate * 0.02), 1) }

/// Linear gain of a dB value, as Float.
func linear(_ dB: Double) -> Float { Float(Decibels.toLinear(dB)) }

/// Writes `input * gain` (ramped) into `output`, channel by channel.
@inline(__always)
func applyGain(_ gain: inout SmoothedGain, from input: AudioBus, to output: AudioBus, frames: Int) {
    gain.process(count: frames, channels: output.channels) { c, start, n, from, step in
        let src = input.channel(c) + start
        let dst = output.channel(c) + start
        // In place (the engine gave the output the input's bus): one
        // pointer, so that the loop vectorizes (with two equal pointers
        // the vectorizer's overlap check takes the scalar loop).
        if src == dst {
            if step == 0 {
                if from != 1 { Kernels.scale(dst, count: n, gain: from) }
            } else {
                _ = Kernels.scaleRamped(dst, count: n, from: from, step: step)
            }
        } else if step == 0 {
            Kernels.copyScaled(src, to: dst, count: n, gain: from)
        } else {
            _ = Kernels.copyRamped(src, to: dst, count: n, from: from, step: step)
        }
    }
}
