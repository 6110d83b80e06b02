import AudioGraphCore
import AudioGraphNodeAPI

/// The loop behind `channel-map`, `downmix` and `upmix`: a matrix multiply
/// per block, over the non-zero terms of each output row.
/// [audio-thread; any thread may call it on memory it owns]
enum ChannelKernels {
    /// For each output row `o`: `outputs[o][i] = Σ gain[t] · inputs[source[t]][i]`
    /// over the terms `t` in `rowStart[o] ..< rowStart[o + 1]`, summed in
    /// term order; a row without terms is silence, a row whose only term
    /// has gain 1 is an exact copy.
    @_noLocks
    static func mix(inputs: UnsafePointer<UnsafePointer<Float>>,
                    outputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                    rows: Int,
                    rowStart: UnsafePointer<Int>,
                    source: UnsafePointer<Int>,
                    gain: UnsafePointer<Float>,
                    count: Int) {
        var o = 0
        while o < rows {
            let dst = outputs[o]
            var t = rowStart[o]
            let end = rowStart[o + 1]
            if t == end {
                Kernels.fill(dst, count: count, value: 0)
                o += 1
                continue
            }
            if gain[t] == 1 {
                Kernels.copy(inputs[source[t]], to: dst, count: count)
            } else {
                Kernels.copyScaled(inputs[source[t]], to: dst, count: count, gain: gain[t])
            }
            t += 1
            while end - t >= 4 {
                Kernels.addScaled4(inputs[source[t]], gain[t], inputs[source[t + 1]], gain[t + 1],
                                   inputs[source[t + 2]], gain[t + 2], inputs[source[t + 3]], gain[t + 3],
                                   to: dst, count: count)
                t += 4
            }
            if end - t >= 2 {
                Kernels.addScaled2(inputs[source[t]], gain[t], inputs[source[t + 1]], gain[t + 1], to: dst, count: count)
                t += 2
            }
            if t < end {
                Kernels.addScaled(inputs[source[t]], to: dst, count: count, gain: gain[t])
            }
            o += 1
        }
    }
}

/// A fixed channel matrix reduced to its non-zero terms, in raw memory:
/// output channel `o` = Σ `matrix[o][i]` × input channel `i`. The caller
/// points `inputs` and `outputs` at this block's channels and calls `run`,
/// which allocates, locks and waits for nothing. `channel-map`, `downmix`
/// and `upmix` run one per block; a playlist runs one per item, on its
/// worker thread.
/// [any-thread; init: main or worker; the tables and `run`: the thread that renders with it]
public final class ChannelMixer {
    public let rows: Int
    public let columns: Int
    /// `rows + 1` entries: row `o`'s terms are `rowStart[o] ..< rowStart[o + 1]`.
    let rowStart: UnsafeMutablePointer<Int>
    let source: UnsafeMutablePointer<Int>
    let gain: UnsafeMutablePointer<Float>
    let termCount: Int
    /// This block's input channels (`columns` of them); set before `run`.
    public let inputs: UnsafeMutablePointer<UnsafePointer<Float>>
    /// This block's output channels (`rows` of them); set before `run`.
    public let outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// What the pointer tables hold before the first block.
    private let placeholder: UnsafeMutablePointer<Float>

    /// - Parameter matrix: one row per output channel, one coefficient per
    ///   input channel (`columns` of them; missing ones are 0).
    public init(matrix: [[Double]], columns: Int) {
        rows = matrix.count
        self.columns = columns
        var starts: [Int] = [0]
        var sources: [Int] = []
        var gains: [Float] = []
        for row in matrix {
            for (i, g) in row.prefix(columns).enumerated() where Float(g) != 0 {
                sources.append(i)
                gains.append(Float(g))
            }
            starts.append(sources.count)
        }
        termCount = sources.count
        rowStart = .allocate(capacity: rows + 1)
        rowStart.initialize(from: starts, count: rows + 1)
        source = .allocate(capacity: max(termCount, 1))
        source.initialize(from: sources, count: termCount)
        gain = .allocate(capacity: max(termCount, 1))
        gain.initialize(from: gains, count: termCount)
        placeholder = .allocate(capacity: 1)
        placeholder.initialize(to: 0)
        inputs = .allocate(capacity: max(columns, 1))
        inputs.initialize(repeating: UnsafePointer(placeholder), count: max(columns, 1))
        outputs = .allocate(capacity: max(rows, 1))
        outputs.initialize(repeating: placeholder, count: max(rows, 1))
    }

    deinit {
        rowStart.deallocate()
        source.deallocate()
        gain.deallocate()
        inputs.deallocate()
        outputs.deallocate()
        placeholder.deallocate()
    }

    /// Mixes `count` frames from `inputs` into `outputs`.
    @inline(__always)
    public func run(count: Int) {
        ChannelKernels.mix(inputs: inputs, outputs: outputs, rows: rows, rowStart: rowStart, source: source,
                           gain: gain, count: count)
    }
}

/// Runs a fixed channel matrix (`ChannelMixer`) on a block: `render` only
/// fills the mixer's two pointer tables and runs it.
/// [main-thread | audio-thread; init, prepare: main; render: audio]
final class ChannelMatrixNode: RenderNode {
    /// The buses, set in `prepare`; behind a pointer so that the audio
    /// thread reads them without a dynamic exclusivity check.
    struct Wiring {
        var input: AudioBus?
        var output: AudioBus?
    }
    let wiring: UnsafeMutablePointer<Wiring>
    let mixer: ChannelMixer
    var rows: Int { mixer.rows }
    var columns: Int { mixer.columns }

    /// - Parameter matrix: one row per output channel, one coefficient per
    ///   input channel (`columns` of them). [main-thread]
    init(matrix: [[Double]], columns: Int) {
        mixer = ChannelMixer(matrix: matrix, columns: columns)
        wiring = .allocate(capacity: 1)
        wiring.initialize(to: Wiring())
    }

    deinit {
        wiring.deinitialize(count: 1)
        wiring.deallocate()
    }

    /// [main-thread & !active]
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        guard let input = inputs.first, let output else {
            throw EngineError("a channel matrix needs its input and its output")
        }
        guard input.channels == columns, output.channels == rows else {
            throw EngineError("a \(rows) × \(columns) channel matrix got a \(input.channels)-channel input and a \(output.channels)-channel output")
        }
        wiring.pointee = Wiring(input: input, output: output)
    }

    /// [audio-thread]
    func render(frames: Int) {
        guard let input = wiring.pointee.input, let output = wiring.pointee.output else { return }
        let m = mixer
        var c = 0
        while c < m.columns {
            m.inputs[c] = UnsafePointer(input.channel(c))
            c += 1
        }
        c = 0
        while c < m.rows {
            m.outputs[c] = output.channel(c)
            c += 1
        }
        m.run(count: frames)
        output.state = input.state
    }
}

extension ChannelMatrixNode {
    /// The node of a channel type (channel-map, downmix, upmix): resolves
    /// the type again for the instance and builds the node from the
    /// `matrix` (rows: outputs, columns: input channels) that gives.
    /// [main-thread]
    static func make(_ c: InstanceContext, matrix: (ResolveContext) -> [[Double]]?) throws -> ChannelMatrixNode {
        let rc = ResolveContext(nodeID: c.nodeID, parameters: c.parameters, inputFormats: c.inputFormats,
                                sampleRate: c.sampleRate, directory: c.directory)
        guard let m = matrix(rc), let input = c.inputFormats.first else {
            throw EngineError("'\(c.nodeID)': " + (rc.issues.first?.message ?? "no input"))
        }
        return ChannelMatrixNode(matrix: m, columns: input.channels)
    }
}
