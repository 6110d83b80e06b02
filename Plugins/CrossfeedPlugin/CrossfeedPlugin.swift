// A renderer as a plugin: `com.example.crossfeed`, a headphone crossfeed
// written with AGraphPluginKit (ABI 2.0: it reads its input's layout tag and
// declares that it virtualizes). Built as `libAGraphCrossfeedPlugin.so`
// (product `AGraphCrossfeedPlugin`).
//
// On headphones each ear hears one channel only; in front of speakers each
// ear also hears the other speaker, later (the longer path round the head),
// quieter and duller (the head shadows high frequencies). A crossfeed, in
// the spirit of Bauer's stereophonic-to-binaural filter (1961) and of bs2b,
// gives each ear the opposite channel low-passed, delayed and attenuated.
// This one, with its formulas (the tests check each property):
//
// 1. To stereo (Lo, Ro), by the input's layout tag (the channel order of
//    the tags is in agraph/plugin.h, "Audio, ports and layouts"):
//      mono    Lo = Ro = M
//      stereo  Lo = L, Ro = R
//      5.1     Lo = L + c·C + c·Ls,         Ro = R + c·C + c·Rs
//      7.1     Lo = L + c·C + c·Ls + c·Lb,  Ro = R + c·C + c·Rs + c·Rb
//    with c = 1/√2 (−3 dB): ITU-R BS.775's 3/2 → 2/0 downmix; its 3/4
//    back pair gets the same −3 dB. The LFE is left out, as BS.775 does
//    (`lfe: "drop"`), or added to both sides at c (`lfe: "mix"`).
//    "discrete" input is refused: where its channels sit is unknown.
//    "binaural" input is refused by the host (the node virtualizes) and,
//    should a host not read the flag, by `check`.
// 2. Crossfeed, per sample n, at the graph's rate fs:
//      g  = 10^(−feed/20),   k = g / (1 + g)
//      LP = first-order low-pass, H(s) = ωc / (s + ωc), by the bilinear
//           transform prewarped so that |H| = 1/√2 (−3 dB) at `cutoff`:
//             w = tan(π·cutoff/fs),  b = w/(1 + w),  a = (1 − w)/(1 + w)
//             y[n] = b·(x[n] + x[n−1]) + a·y[n−1]
//      D  = round(delay·fs/1000) samples
//      left  = Lo[n] + k·(LP(Ro)[n − D] − LP(Lo)[n − D])
//      right = Ro[n] + k·(LP(Lo)[n − D] − LP(Ro)[n − D])
//    Each ear hears its own channel plus k times the low-passed, delayed
//    difference. So a left-only input reaches the right ear as k·LP(Lo),
//    D samples late; the left ear keeps Lo − k·LP(Lo)[n − D]: at low
//    frequencies the cross path lies `feed` dB below the direct path
//    (k / (1 − k) = g), above `cutoff` the cross path falls by 6 dB per
//    octave and the direct path tends to Lo itself. A centred source
//    (Lo = Ro) passes unchanged, sample for sample: the difference is 0,
//    so a mono voice is not coloured (a hard-panned source is: its own
//    ear gets Lo − k·LP(Lo)[n − D], 20·log10(1 − k) dB at low
//    frequencies, 0 dB well above the cutoff).
//    `feed` moves k towards its new value with a 5 ms one-pole smoother
//    (no click); a new `cutoff` takes effect at the next sample.
// The output is two channels tagged "binaural": nothing downstream
// virtualizes it again.
import AGraphPluginKit
#if canImport(Glibc)
import Glibc
#endif

final class Crossfeed: PluginNode {
    static let description = PluginNodeDescription(
        typeID: "com.example.crossfeed",
        summary: "Headphone crossfeed (example renderer plugin): each ear also hears the other channel, low-passed, delayed and attenuated; stereo, 5.1 or 7.1 in (downmixed to stereo by ITU-R BS.775), 2 channels tagged binaural out.",
        input: .input(channels: 1...8),
        output: .output(channels: .fixed(2)),
        parameters: [
            .number("cutoff", 200...2000, default: 700, unit: "Hz", live: true,
                    "Cutoff of the cross path's first-order low-pass (−3 dB)."),
            .number("feed", 1...15, default: 4.5, unit: "dB", live: true,
                    "How far the cross path lies below the direct path at low frequencies."),
            .number("delay", 0...1, default: 0.3, unit: "ms",
                    "Delay of the cross path (the extra way round the head), rounded to whole samples."),
            .choice("lfe", ["drop", "mix"], default: "drop",
                    "5.1/7.1 input: leave the LFE out of the downmix, as ITU-R BS.775 does, or add it to both sides at −3 dB."),
        ],
        virtualizes: true)

    // Parameter indices, in the order of `description.parameters`.
    static let cutoffIndex = 0
    static let feedIndex = 1

    /// −3 dB: BS.775's downmix coefficient.
    static let minus3dB: Float = 0.707_106_77

    /// How the input becomes stereo.
    enum Input: Equatable {
        case mono, stereo, surround51, surround71
    }

    /// The input's layout from its tag (none while the input is not known:
    /// the usual layout for the channel count), or why it is refused.
    /// [main-thread]
    static func input(_ setup: PluginNodeSetup) -> Result<Input, PluginError> {
        let channels = setup.inputChannels
        let usual: String = switch channels {
        case 1: "mono"
        case 2: "stereo"
        case 6: "5.1"
        case 8: "7.1"
        default: "discrete"
        }
        let tag = setup.inputLayout ?? usual
        switch (tag, channels) {
        case ("mono", 1): return .success(.mono)
        case ("stereo", 2): return .success(.stereo)
        case ("5.1", 6): return .success(.surround51)
        case ("7.1", 8): return .success(.surround71)
        case ("binaural", _):
            return .failure(PluginError("the input is tagged binaural: it is already rendered for headphones, and a crossfeed would render it twice; feed the speaker signal instead"))
        default:
            return .failure(PluginError("the input is tagged \"\(tag)\" (\(channels) channel\(channels == 1 ? "" : "s")): a crossfeed needs to know where each channel sits; give it mono, stereo, 5.1 (L R C LFE Ls Rs) or 7.1 (L R C LFE Ls Rs Lb Rb) — tag the stream with a format-tag node if its channels are in that order, or pick them with channel-map"))
        }
    }

    /// [main-thread]
    static func check(_ setup: PluginNodeSetup) -> String? {
        guard setup.inputChannels > 0 else { return nil }
        if case .failure(let why) = input(setup) { return why.description }
        return nil
    }

    /// Always two channels for headphones. [main-thread]
    static func outputLayout(_ setup: PluginNodeSetup) -> String? { "binaural" }

    // Set in init, fixed for the instance.
    let layout: Input
    let mixLFE: Bool
    let delayMilliseconds: Double

    // Audio-thread state: plain values and buffers made in activate.
    var sampleRate: Double
    var cutoff: Double
    var state = CrossfeedState()
    /// The downmix of a 5.1/7.1 block (maxFrames each).
    var downmixL: UnsafeMutablePointer<Float>?
    var downmixR: UnsafeMutablePointer<Float>?
    var maxFrames = 0

    /// [main-thread]
    init(_ setup: PluginNodeSetup) throws {
        layout = try Self.input(setup).get()
        mixLFE = setup.string("lfe") == "mix"
        delayMilliseconds = setup.number("delay") ?? 0.3
        sampleRate = setup.sampleRate
        cutoff = setup.number("cutoff") ?? 700
        let k = Self.crossGain(feed: setup.number("feed") ?? 4.5)
        state.k = k
        state.kTarget = k
    }

    deinit { freeBuffers() }

    /// k = g / (1 + g), g = 10^(−feed/20). [any-thread]
    static func crossGain(feed: Double) -> Float {
        let g = pow(10, -feed / 20)
        return Float(g / (1 + g))
    }

    /// The low-pass coefficients for `cutoff` at `sampleRate` (see the top
    /// of the file). No allocation. [any-thread]
    static func lowPass(cutoff: Double, sampleRate: Double) -> (b: Float, a: Float) {
        let w = tan(Double.pi * min(cutoff, 0.49 * sampleRate) / sampleRate)
        return (Float(w / (1 + w)), Float((1 - w) / (1 + w)))
    }

    /// [main-thread & !active]
    func activate(sampleRate: Double, maxFrames: Int) throws {
        freeBuffers()
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        let delay = Int((delayMilliseconds * sampleRate / 1000).rounded())
        state.ringLength = delay + 1
        state.ringLeft = .allocate(capacity: delay + 1)
        state.ringRight = .allocate(capacity: delay + 1)
        state.ringLeft?.initialize(repeating: 0, count: delay + 1)
        state.ringRight?.initialize(repeating: 0, count: delay + 1)
        state.write = 0
        (state.b, state.a) = Self.lowPass(cutoff: cutoff, sampleRate: sampleRate)
        state.smoothing = Float(1 - exp(-1 / (0.005 * sampleRate)))
        state.k = state.kTarget
        state.xLeft = 0; state.yLeft = 0; state.xRight = 0; state.yRight = 0
        if layout == .surround51 || layout == .surround71 {
            downmixL = .allocate(capacity: max(maxFrames, 1))
            downmixR = .allocate(capacity: max(maxFrames, 1))
        }
    }

    /// [main-thread & active]
    func deactivate() { freeBuffers() }

    func freeBuffers() {
        state.ringLeft?.deallocate(); state.ringLeft = nil
        state.ringRight?.deallocate(); state.ringRight = nil
        downmixL?.deallocate(); downmixL = nil
        downmixR?.deallocate(); downmixR = nil
    }

    /// [audio-thread & active]: no allocation (tan and pow allocate nothing).
    func setParameter(_ index: Int, value: Double) {
        switch index {
        case Self.cutoffIndex:
            cutoff = value
            (state.b, state.a) = Self.lowPass(cutoff: value, sampleRate: sampleRate)
        case Self.feedIndex:
            state.kTarget = Self.crossGain(feed: value)
        default: break
        }
    }

    /// [audio-thread & active]: no allocation, no locks.
    func process(_ block: PluginBlock) {
        let frames = min(block.frames, maxFrames)
        let outL = block.output(0), outR = block.output(1)
        let left: UnsafePointer<Float>, right: UnsafePointer<Float>
        switch layout {
        case .mono:
            left = block.input(0); right = left
        case .stereo:
            left = block.input(0); right = block.input(1)
        case .surround51, .surround71:
            guard let dl = downmixL, let dr = downmixR else { return }
            let back = layout == .surround71
            CrossfeedKernels.downmix(
                l: block.input(0), r: block.input(1), c: block.input(2), lfe: block.input(3),
                ls: block.input(4), rs: block.input(5),
                lb: back ? block.input(6) : nil, rb: back ? block.input(7) : nil,
                lfeGain: mixLFE ? Self.minus3dB : 0, surroundGain: Self.minus3dB,
                intoLeft: dl, intoRight: dr, frames: frames)
            left = UnsafePointer(dl); right = UnsafePointer(dr)
        }
        CrossfeedKernels.crossfeed(&state, left: left, right: right, outLeft: outL, outRight: outR, frames: frames)
        // Output state: the host preset it to the input's; nothing to change.
    }
}

/// The crossfeed's running state: filter memories, the delay rings of the
/// low-passed channels, the coefficients. Plain values and pointers.
struct CrossfeedState {
    var b: Float = 0
    var a: Float = 0
    /// k now, the value `feed` asks for, and the per-sample step towards it.
    var k: Float = 0
    var kTarget: Float = 0
    var smoothing: Float = 1
    /// The low-pass's previous input and output, per side.
    var xLeft: Float = 0, yLeft: Float = 0
    var xRight: Float = 0, yRight: Float = 0
    /// D + 1 past low-pass outputs per side; `write` is the next slot.
    var ringLeft: UnsafeMutablePointer<Float>?
    var ringRight: UnsafeMutablePointer<Float>?
    var ringLength = 1
    var write = 0
}

/// The DSP: plain loops over raw buffers, `@_noLocks` (no allocation,
/// reference counting or locks). [audio-thread]
enum CrossfeedKernels {
    /// BS.775 to stereo: L + g·C + g·Ls (+ g·Lb) + lfeGain·LFE, and the same
    /// on the right.
    @_noLocks
    static func downmix(l: UnsafePointer<Float>, r: UnsafePointer<Float>, c: UnsafePointer<Float>,
                        lfe: UnsafePointer<Float>, ls: UnsafePointer<Float>, rs: UnsafePointer<Float>,
                        lb: UnsafePointer<Float>?, rb: UnsafePointer<Float>?, lfeGain: Float, surroundGain g: Float,
                        intoLeft dl: UnsafeMutablePointer<Float>, intoRight dr: UnsafeMutablePointer<Float>, frames: Int) {
        var i = 0
        while i < frames {
            let common = g * c[i] + lfeGain * lfe[i]
            dl[i] = l[i] + common + g * ls[i]
            dr[i] = r[i] + common + g * rs[i]
            i += 1
        }
        if let lb, let rb {
            i = 0
            while i < frames {
                dl[i] += g * lb[i]
                dr[i] += g * rb[i]
                i += 1
            }
        }
    }

    /// The crossfeed of the formulas at the top of the file. `left` and
    /// `right` may be the same buffer (mono).
    @_noLocks
    static func crossfeed(_ s: inout CrossfeedState, left: UnsafePointer<Float>, right: UnsafePointer<Float>,
                          outLeft: UnsafeMutablePointer<Float>, outRight: UnsafeMutablePointer<Float>, frames: Int) {
        guard let ringL = s.ringLeft, let ringR = s.ringRight else { return }
        let b = s.b, a = s.a, target = s.kTarget, step = s.smoothing, length = s.ringLength
        var k = s.k
        var xl = s.xLeft, yl = s.yLeft, xr = s.xRight, yr = s.yRight
        var w = s.write
        var i = 0
        while i < frames {
            let inL = left[i], inR = right[i]
            yl = b * (inL + xl) + a * yl
            yr = b * (inR + xr) + a * yr
            xl = inL
            xr = inR
            ringL[w] = yl
            ringR[w] = yr
            // The slot after `w` was written D samples ago.
            var r = w + 1
            if r == length { r = 0 }
            // The low-passed difference, D samples ago: 0 for a centred source.
            let difference = ringR[r] - ringL[r]
            k += (target - k) * step
            outLeft[i] = inL + k * difference
            outRight[i] = inR - k * difference
            w = r
            i += 1
        }
        // Denormals would slow the loop once the input falls silent.
        if abs(yl) < 1e-30 { yl = 0 }
        if abs(yr) < 1e-30 { yr = 0 }
        s.k = k
        s.xLeft = xl; s.yLeft = yl; s.xRight = xr; s.yRight = yr
        s.write = w
    }
}

/// Everything `agraph_plugin_entry` hands the host, built once.
let crossfeedPlugin = PluginExport(
    name: "AudioGraph crossfeed renderer", vendor: "AudioGraph", version: "1.0.0",
    nodes: [Crossfeed.self])

/// The one exported C symbol. [main-thread]
@c(agraph_plugin_entry)
public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { crossfeedPlugin.descriptor }
