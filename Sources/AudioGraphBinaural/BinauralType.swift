import AudioGraphCore
import AudioGraphNodeAPI

/// The node types of this module, for the built-in registry.
public enum BinauralNodes {
    /// [main-thread | control-thread; a registry is built where the graph is validated]
    public static var all: [any NodeType] { ThreadRole.check(.main, .control); return [BinauralType()] }
}

/// `binaural`: renders a speaker layout for headphones through the HRTFs of
/// a SOFA file (an open binaural renderer, built in).
///
/// - HRTFs: `sofa` names a SOFA (AES69 SimpleFreeFieldHRIR) file, read by
///   libmysofa; without it, the set Debian's libmysofa1 installs,
///   `/usr/share/libmysofa/default.sofa` (MIT KEMAR, 44.1 kHz), is used, or
///   the first `libmysofa/default.sofa` under /usr/local/share or
///   `XDG_DATA_DIRS` (`HRTFSets.defaultSearchPaths`). When the graph's rate
///   differs from the set's, libmysofa's `mysofa_resample` resamples the
///   responses used (`HRTFSet`). Sets are opened at validation and cached
///   per file and rate for the process.
/// - Directions: each input channel sits at its ITU-R BS.2051 direction
///   (`StandardDirections`: stereo ±30°; 5.1 L +30 R −30 C 0 LFE Ls +110
///   Rs −110; 7.1 L +30 R −30 C 0 LFE Ls +90 Rs −90 Lb +135 Rb −135; mono
///   0°; azimuth positive to the left, SOFA's convention), or where
///   `positions` puts it. With `interpolate` false each direction takes the
///   nearest measurement exactly; with true, libmysofa's interpolation of
///   it and its neighbours. `Data.Delay` is applied in whole samples.
/// - Normalisation: the whole set is scaled by one gain, so that the
///   measurement nearest the front (0°, 0°) has unit energy on average over
///   the two ears: g = 1 / √((E_L + E_R) / 2) (`HRTFSet.gain`).
/// - LFE: not rendered through HRTFs; added to both ears with gain `lfe`,
///   0 dB by default: with the normalisation above, an LFE signal reaches
///   each ear at the level a front channel's would, and 0 dB is also
///   ffmpeg's sofalizer `lfegain` default, so the two compare level for level.
///   (No +10 dB in-band gain: that belongs to a calibrated loudspeaker
///   system, and on headphones it mostly clips.)
/// - Head rotation: `yaw`, `pitch`, `roll` (live, degrees), the head's
///   orientation (`HeadOrientation`): yaw +90° turns the head left, so a
///   source in front is heard at the right ear. A change computes the new
///   filter set on the worker thread and crossfades to it over one
///   partition.
/// - Convolution: uniformly partitioned overlap-save, partition P =
///   `partition`, FFmpeg's av_tx real DFTs of 2P; each channel's input is
///   transformed once and the channels' spectra are summed per ear, one
///   inverse DFT per ear per partition. No latency: the output at t
///   depends on inputs up to t, for any render size (a call smaller than
///   P renders the part of the partition it has). By default P is the
///   engine's block, at most 1024, offline (the cheapest per frame: one
///   partition per block), and 128 live: the live engine's buses are sized
///   for the largest period JACK may switch to (8192), not the period, and
///   a 128-frame partition keeps each callback's cost small whatever the
///   period (a 64-frame period renders half a partition per callback, a
///   1024-frame one eight partitions). `agraph-bench binaural` measures
///   each size (docs/performance.md).
public struct BinauralType: NodeType {
    public init() {}

    /// The partition when the graph gives none, live, in frames.
    public static let defaultLivePartition = 128
    /// The largest partition chosen by default offline (the block's size
    /// up to this).
    public static let defaultOfflinePartitionLimit = 1024

    public static let positionFields: [ParameterDescriptor] = [
        .init("azimuth", .number, range: -360...360, optional: true, unit: "degrees",
              "Counter-clockwise from the front: 30 is front left, -30 (or 330) front right, 180 behind. Required unless \"lfe\" is true."),
        .init("elevation", .number, range: -90...90, default: .number(0), unit: "degrees", "Up from the horizontal plane."),
        .init("lfe", .boolean, default: .boolean(false), "The channel is an LFE: added to both ears with the node's lfe gain, not rendered from a direction."),
    ]

    public let descriptor = NodeDescriptor(
        typeID: "binaural", role: .processor,
        summary: "Renders a speaker layout (mono, stereo, 5.1, 7.1, or discrete with positions) for headphones through the HRTFs of a SOFA file (libmysofa); output: 2 channels tagged binaural. "
            + "HRTFs: sofa, by default Debian's /usr/share/libmysofa/default.sofa (MIT KEMAR); libmysofa resamples a set measured at another rate than the graph's (mysofa_resample). "
            + "Directions: ITU-R BS.2051, azimuth counter-clockwise (positive left): stereo L +30 R -30; 5.1 L +30 R -30 C 0 Ls +110 Rs -110; 7.1 L +30 R -30 C 0 Ls +90 Rs -90 Lb +135 Rb -135; mono 0; elevation 0; positions overrides. The nearest measurement is used exactly, or libmysofa's interpolation (interpolate); Data.Delay in whole samples. "
            + "Normalisation: one gain for the whole set such that the measurement nearest the front (0°, 0°) has unit energy averaged over both ears, g = 1/sqrt((E_L + E_R)/2). "
            + "LFE: bypasses the HRTFs, added to both ears at lfe dB (default 0 dB: a front channel's level, and ffmpeg sofalizer's lfegain default). "
            + "Head rotation: yaw, pitch, roll in degrees, live: yaw + turns the head left (a front source moves to the right ear), pitch + lifts the nose, roll + tilts the head right; a change crossfades to the new filters over one partition. "
            + "Uniformly partitioned FFT convolution (av_tx), zero latency; partition: the block up to 1024 offline, 128 live.",
        inputs: .single,
        parameters: [
            .init("sofa", .path, default: .string(HRTFSets.defaultPath),
                  "The SOFA file (AES69 SimpleFreeFieldHRIR). When not given, /usr/share/libmysofa/default.sofa (Debian's libmysofa1), else libmysofa/default.sofa under /usr/local/share or XDG_DATA_DIRS."),
            .init("positions", .objectList(BinauralType.positionFields), optional: true,
                  "One per input channel, in order, replacing the layout's directions: [{\"azimuth\": 30}, {\"azimuth\": -30, \"elevation\": 0}, {\"lfe\": true}, …]. Required for discrete input."),
            .init("interpolate", .boolean, default: .boolean(false),
                  "false: the nearest measurement to each direction, exactly; true: libmysofa's interpolation between the nearest and its neighbours."),
            .init("lfe", .number, range: -96...24, default: .number(0), unit: "dB",
                  "Gain of the LFE channel, added to both ears without HRTFs."),
            .init("yaw", .number, range: -180...180, default: .number(0), unit: "degrees", live: true,
                  "Head turn about the vertical axis; positive turns left (a source in front moves to the right ear)."),
            .init("pitch", .number, range: -90...90, default: .number(0), unit: "degrees", live: true,
                  "Head tilt about the ear axis, after yaw; positive lifts the nose (a source in front moves down)."),
            .init("roll", .number, range: -180...180, default: .number(0), unit: "degrees", live: true,
                  "Head tilt about the front axis, after pitch; positive tilts the head to the right (right ear down)."),
            .init("partition", .integer, range: 16...8192, optional: true, unit: "frames",
                  "Frames per convolution partition, a power of two, at most the engine's block; default: the block up to 1024 offline, 128 live. Larger: less CPU per frame; smaller: less per callback when periods are small."),
        ],
        virtualizes: true)

    /// The parameters' indexes, for `apply`.
    static let orientationNames = ["yaw", "pitch", "roll"]

    /// [main-thread | control-thread; validation resolves on the thread that validates]
    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        ThreadRole.check(.main, .control)
        var ok = true
        let written = c.writtenParameters.contains("sofa") ? c.parameters.string("sofa") : nil
        if case .failure(let e) = HRTFSets.find(written: written, directory: c.directory, sampleRate: c.sampleRate) {
            if written != nil { c.error(parameter: "sofa", e.message) } else { c.error(e.message) }
            ok = false
        }
        if let p = c.parameters.integer("partition"), p & (p - 1) != 0 {
            c.error(parameter: "partition", "partition must be a power of two (16, 32, … 8192); got \(p)")
            ok = false
        }
        guard let input = c.input else { return nil }
        guard input.encoding == .pcm else {
            c.error(input: 0, "binaural renders PCM audio; this input is \(input.encoding): decode it first")
            return nil
        }
        guard input.layout != .binaural else {
            c.error(input: 0, "the input is already binaural (virtualized for headphones); binaural would virtualize it twice")
            return nil
        }
        switch Self.channelDirections(c.parameters, input: input) {
        case .success: break
        case .failure(let problems):
            for p in problems.list {
                switch p.place {
                case .input: c.error(input: 0, p.message)
                case .positions(nil): c.error(parameter: "positions", p.message)
                case .positions(let path?): c.error(parameter: "positions", path: path, p.message)
                }
            }
            ok = false
        }
        return ok ? StreamFormat(channels: 2, sampleRate: c.sampleRate, layout: .binaural) : nil
    }

    /// What is wrong with a node's channel directions, and where.
    struct DirectionProblem {
        enum Place { case input, positions([String]?) }
        var place: Place
        var message: String
    }

    struct DirectionProblems: Error {
        var list: [DirectionProblem]
    }

    /// The direction of every input channel: `positions`, or the input
    /// layout's standard directions. [any-thread]
    static func channelDirections(_ p: NodeParameters, input: StreamFormat) -> Result<[SpeakerDirection], DirectionProblems> {
        let labels = input.layout.channelLabels(count: input.channels)
        guard let positions = p.objectList("positions") else {
            guard let standard = StandardDirections.directions(for: input.layout), standard.count == input.channels else {
                return .failure(DirectionProblems(list: [DirectionProblem(place: .input, message:
                    "the input has \(input.channels) \(input.layout) channels, which have no standard directions: give \"positions\", one {\"azimuth\": …, \"elevation\": …} (or {\"lfe\": true}) per channel, in order")]))
            }
            return .success(standard)
        }
        guard positions.count == input.channels else {
            let names = input.layout == .discrete ? "" : " (\(labels.joined(separator: " ")))"
            return .failure(DirectionProblems(list: [DirectionProblem(place: .positions(nil), message:
                "\"positions\" gives \(positions.count) position\(positions.count == 1 ? "" : "s") but the input has \(input.channels) channel\(input.channels == 1 ? "" : "s")\(names): give one per channel, in order")]))
        }
        var out: [SpeakerDirection] = []
        var problems: [DirectionProblem] = []
        for (i, object) in positions.enumerated() {
            let isLFE: Bool
            if case .boolean(let b)? = object["lfe"] { isLFE = b } else { isLFE = false }
            var elevation = 0.0
            if case .number(let e)? = object["elevation"] { elevation = e }
            if isLFE {
                if object["azimuth"] != nil {
                    problems.append(DirectionProblem(place: .positions([String(i), "azimuth"]), message:
                        "positions[\(i)] is an LFE (\"lfe\": true), which has no direction: drop \"azimuth\""))
                }
                out.append(.lfe)
            } else if case .number(let a)? = object["azimuth"] {
                out.append(SpeakerDirection(azimuth: a, elevation: elevation))
            } else {
                problems.append(DirectionProblem(place: .positions([String(i)]), message:
                    "positions[\(i)] (channel \(labels.indices.contains(i) ? labels[i] : String(i + 1))) has no \"azimuth\": give one in degrees (positive to the left), or \"lfe\": true"))
            }
        }
        return problems.isEmpty ? .success(out) : .failure(DirectionProblems(list: problems))
    }

    /// [main-thread]
    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        ThreadRole.check(.main)
        guard let input = c.inputFormats.first else { throw EngineError(nodeID: c.nodeID, "binaural has no input") }
        let directions: [SpeakerDirection]
        switch Self.channelDirections(c.parameters, input: input) {
        case .success(let d): directions = d
        case .failure(let problems): throw EngineError(nodeID: c.nodeID, problems.list.map { $0.message }.joined(separator: "; "))
        }
        let p = c.parameters
        let written = p.string("sofa") == HRTFSets.defaultPath ? nil : p.string("sofa")
        let set: HRTFSet
        switch HRTFSets.find(written: written, directory: c.directory, sampleRate: c.sampleRate) {
        case .success(let s): set = s
        case .failure(let e): throw EngineError(nodeID: c.nodeID, e.message)
        }
        let orientation = HeadOrientation(yaw: p.number("yaw") ?? 0, pitch: p.number("pitch") ?? 0, roll: p.number("roll") ?? 0)
        return BinauralRenderNode(set: set, directions: directions, interpolate: p.boolean("interpolate") ?? false,
                                  lfeGainDB: p.number("lfe") ?? 0, orientation: orientation,
                                  partition: p.integer("partition"), live: c.live,
                                  orientationIndexes: Self.orientationNames.map { descriptor.parameterIndex(named: $0) ?? -1 })
    }
}

/// The runtime `binaural` node: binds the buses, and in `prepare` builds
/// the convolution (`BinauralConvolver`), the first filter set and the
/// worker's job (`BinauralJob`).
final class BinauralRenderNode: RenderNode {
    struct Wiring {
        var input: AudioBus?
        var output: AudioBus?
    }

    let set: HRTFSet
    let directions: [SpeakerDirection]
    let interpolate: Bool
    let lfeGain: Float
    let orientation: HeadOrientation
    let requestedPartition: Int?
    /// Built to run live (the default partition differs).
    let live: Bool
    /// Descriptor indexes of yaw, pitch, roll.
    let yawIndex: Int32, pitchIndex: Int32, rollIndex: Int32
    private let wiring: UnsafeMutablePointer<Wiring>
    private var convolver: BinauralConvolver?
    private var job: BinauralJob?

    /// [main-thread]
    init(set: HRTFSet, directions: [SpeakerDirection], interpolate: Bool, lfeGainDB: Double,
         orientation: HeadOrientation, partition: Int?, live: Bool, orientationIndexes: [Int]) {
        self.set = set
        self.directions = directions
        self.interpolate = interpolate
        lfeGain = Float(Decibels.toLinear(lfeGainDB))
        self.orientation = orientation
        requestedPartition = partition
        self.live = live
        yawIndex = Int32(orientationIndexes[0])
        pitchIndex = Int32(orientationIndexes[1])
        rollIndex = Int32(orientationIndexes[2])
        wiring = .allocate(capacity: 1)
        wiring.initialize(to: Wiring())
    }

    deinit {
        wiring.deinitialize(count: 1)
        wiring.deallocate()
    }

    /// The partition for an engine whose blocks are at most `maxFrames`:
    /// the one asked for, else 128 live and 1024 offline; halved while
    /// above the largest block, never below 16. [any-thread]
    static func partition(requested: Int?, maxFrames: Int, live: Bool) -> Int {
        var p = requested ?? (live ? BinauralType.defaultLivePartition : BinauralType.defaultOfflinePartitionLimit)
        while p > 16 && p > maxFrames { p /= 2 }
        return max(p, 16)
    }

    /// Frames per partition, once prepared. [main-thread]
    var partitionFrames: Int? { convolver?.geometry.partition }

    /// Filter sets taken from the worker so far (rotations rendered).
    /// [main-thread & !rendering]
    var filterSetsTaken: Int { convolver?.setsTaken ?? 0 }

    /// [main-thread & !active]
    func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        guard let input = inputs.first, let output, output.channels == 2, input.channels == directions.count else {
            throw EngineError("binaural needs one input of \(directions.count) channels and a 2-channel output")
        }
        wiring.pointee = Wiring(input: input, output: output)
        let convolved = directions.indices.filter { !directions[$0].isLFE }
        let lfe = directions.indices.filter { directions[$0].isLFE }
        let geometry = ConvolutionGeometry(channels: convolved.count,
                                           partition: Self.partition(requested: requestedPartition, maxFrames: context.maxFrames, live: live),
                                           irLength: set.filterLength + set.maximumDelay)
        let slots = FilterSlots(geometry: geometry)
        let builder = try FilterBuilder(set: set, directions: convolved.map { directions[$0] }, interpolate: interpolate, slots: slots)
        builder.build(orientation, into: 0)
        // Live and interpolating: a head tracker's changes then need no
        // resampling per filter set, once the set is resampled whole (in
        // the background, about half a second; until then as before).
        if live && interpolate { set.startResamplingWholeSet() }
        let handoff = BinauralHandoff()
        handoff.warmUp()
        convolver = try BinauralConvolver(geometry: geometry, slots: slots, handoff: handoff, convolved: convolved, lfe: lfe,
                                          lfeGain: lfeGain, active: 0, orientation: orientation)
        job = BinauralJob(handoff: handoff, builder: builder, free: Array(1..<FilterSlots.count))
    }

    /// The worker's filter computation. [main-thread]
    var backgroundJob: (any BackgroundJob)? { job }

    /// [audio-thread]
    func apply(_ change: ParameterChange) {
        guard let convolver else { return }
        if change.parameter == yawIndex { convolver.setOrientation(0, change.value) }
        else if change.parameter == pitchIndex { convolver.setOrientation(1, change.value) }
        else if change.parameter == rollIndex { convolver.setOrientation(2, change.value) }
    }

    /// [audio-thread]
    func render(frames n: Int) {
        guard let input = wiring.pointee.input, let output = wiring.pointee.output, let convolver else { return }
        convolver.render(input: input, output: output, frames: n)
    }
}
