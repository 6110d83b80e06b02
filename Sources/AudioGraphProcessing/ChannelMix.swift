import AudioGraphCore
import AudioGraphNodeAPI

/// The standard channel matrices between the project's layouts (docs/processing/channels.md
/// lists each with its coefficients). A matrix has one row per output
/// channel and one column per input channel, both in layout order
/// (5.1 = L R C LFE Ls Rs, 7.1 = L R C LFE Ls Rs Lb Rb).
/// [any-thread]
public enum ChannelMatrices {
    /// −3 dB: 1/√2, the ITU-R BS.775 coefficient of the centre and the
    /// surrounds in a downmix.
    public static let minus3dB = 0.5.squareRoot()

    /// How a stereo pair carries surround sound.
    public enum Mode: String, Sendable, CaseIterable {
        /// Lo/Ro: a plain stereo fold-down (BS.775), or a plain placement
        /// when going up.
        case loro
        /// Lt/Rt: matrix-surround encoding (surrounds summed into S, S in
        /// antiphase), or its passive decoding when going up.
        case ltrt
    }

    /// 7.1 → 5.1: sides stay, each back channel joins the surround on its
    /// side at −3 dB, LFE passes.
    static var from71to51: [[Double]] {
        let r = minus3dB
        return [
            // L  R  C  LFE Ls Rs Lb Rb
            [1, 0, 0, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0, 0, 0, 0],
            [0, 0, 0, 1, 0, 0, 0, 0],
            [0, 0, 0, 0, 1, 0, r, 0],
            [0, 0, 0, 0, 0, 1, 0, r],
        ]
    }

    /// 5.1 → stereo. Lo/Ro is BS.775's 2/0 downmix (L + 0.7071 C + 0.7071 Ls);
    /// Lt/Rt the matrix-surround encode: S = 0.7071 (Ls + Rs), subtracted
    /// from Lt and added to Rt at −3 dB (no 90° phase shift). `lfe` is the
    /// LFE's linear gain into both (0: dropped).
    static func from51toStereo(_ mode: Mode, lfe: Double) -> [[Double]] {
        let r = minus3dB
        switch mode {
        case .loro:
            return [
                // L  R  C  LFE  Ls Rs
                [1, 0, r, lfe, r, 0],
                [0, 1, r, lfe, 0, r],
            ]
        case .ltrt:
            let s = r * r   // S = r (Ls + Rs), then S at −3 dB: 0.5 each
            return [
                [1, 0, r, lfe, -s, -s],
                [0, 1, r, lfe, s, s],
            ]
        }
    }

    /// 5.1 → mono: BS.775's 1/0 downmix, M = 0.7071 (L + R) + C + 0.5 (Ls + Rs).
    static func from51toMono(lfe: Double) -> [[Double]] {
        let r = minus3dB
        return [[r, r, 1, lfe, 0.5, 0.5]]
    }

    /// Stereo → mono: M = 0.7071 (L + R).
    static var fromStereoToMono: [[Double]] { [[minus3dB, minus3dB]] }

    /// Mono → stereo: L = R = 0.7071 M (a centred source at equal power).
    static var fromMonoToStereo: [[Double]] { [[minus3dB], [minus3dB]] }

    /// Mono → 5.1: M into C.
    static var fromMonoTo51: [[Double]] { [[0], [0], [1], [0], [0], [0]] }

    /// Stereo → 5.1. Lo/Ro: L and R placed, the rest silent. Lt/Rt: the
    /// passive matrix-surround decode of `from51toStereo(.ltrt)`: L, R
    /// as they are, C = 0.7071 (Lt + Rt), Ls = Rs = S = 0.7071 (Rt − Lt),
    /// LFE silent.
    static func fromStereoTo51(_ mode: Mode) -> [[Double]] {
        let r = minus3dB
        switch mode {
        case .loro:
            return [[1, 0], [0, 1], [0, 0], [0, 0], [0, 0], [0, 0]]
        case .ltrt:
            return [[1, 0], [0, 1], [r, r], [0, 0], [-r, r], [-r, r]]
        }
    }

    /// 5.1 → 7.1: every channel placed, Lb and Rb silent.
    static var from51to71: [[Double]] {
        (0..<8).map { o in (0..<6).map { i in o == i ? 1 : 0 } }
    }

    /// `a · b`: first `b`, then `a`. [any-thread]
    static func product(_ a: [[Double]], _ b: [[Double]]) -> [[Double]] {
        let inner = b.count
        let columns = b.first?.count ?? 0
        return a.map { row in
            (0..<columns).map { j in
                var s = 0.0
                for k in 0..<min(inner, row.count) { s += row[k] * b[k][j] }
                return s
            }
        }
    }

    /// The identity on `n` channels.
    static func identity(_ n: Int) -> [[Double]] {
        (0..<n).map { o in (0..<n).map { i in o == i ? 1 : 0 } }
    }

    /// The layouts the standard matrices know, by channel count order.
    static let standard: [ChannelLayout] = [.mono, .stereo, .surround51, .surround71]

    /// The standard matrix from `input` to `output` (binaural counts as
    /// stereo), or nil when there is none. `lfe` is the LFE's linear gain
    /// where the LFE is folded into other channels. [any-thread]
    public static func standard(from input: ChannelLayout, to output: ChannelLayout,
                                mode: Mode, lfe: Double = 0) -> [[Double]]? {
        let from = input == .binaural ? .stereo : input
        let to = output == .binaural ? .stereo : output
        guard standard.contains(from), standard.contains(to) else { return nil }
        if from == to { return identity(from.channelCount ?? 0) }
        switch (from, to) {
        // down
        case (.surround71, .surround51): return from71to51
        case (.surround71, _):
            guard let rest = standard(from: .surround51, to: to, mode: mode, lfe: lfe) else { return nil }
            return product(rest, from71to51)
        case (.surround51, .stereo): return from51toStereo(mode, lfe: lfe)
        case (.surround51, .mono): return from51toMono(lfe: lfe)
        case (.stereo, .mono): return fromStereoToMono
        // up
        case (.mono, .stereo): return fromMonoToStereo
        case (.mono, .surround51): return fromMonoTo51
        case (.stereo, .surround51): return fromStereoTo51(mode)
        case (.surround51, .surround71): return from51to71
        case (_, .surround71):
            guard let rest = standard(from: from, to: .surround51, mode: mode, lfe: lfe) else { return nil }
            return product(from51to71, rest)
        default: return nil
        }
    }

    /// `matrix` scaled so that no output can exceed the largest input: the
    /// largest row sum of |coefficients| becomes 1 when it was above 1;
    /// a matrix already within 1 is returned as it is. [any-thread]
    public static func normalized(_ matrix: [[Double]]) -> [[Double]] {
        let largest = matrix.map { $0.reduce(0) { $0 + abs($1) } }.max() ?? 0
        guard largest > 1 else { return matrix }
        return matrix.map { $0.map { $0 / largest } }
    }
}

/// `downmix` and `upmix`: one input, one output of the target `layout`,
/// through a standard matrix (`ChannelMatrices`) or a given `matrix`.
public struct ChannelMixType: NodeType {
    public enum Direction: Sendable { case down, up }
    public let direction: Direction
    public let descriptor: NodeDescriptor

    public init(_ direction: Direction) {
        self.direction = direction
        descriptor = Self.describe(direction)
    }

    static let targetLayouts = ["mono", "stereo", "5.1", "7.1", "discrete"]

    /// The descriptor of `downmix` or `upmix`. [any-thread]
    static func describe(_ direction: Direction) -> NodeDescriptor {
        var parameters: [ParameterDescriptor] = [
            .init("layout", .choice(Self.targetLayouts), default: .string(direction == .down ? "stereo" : "5.1"),
                  "The output's layout. \"discrete\" takes its channel count from \"matrix\", which it needs."),
            .init("mode", .choice(ChannelMatrices.Mode.allCases.map(\.rawValue)), default: .string("loro"),
                  direction == .down
                    ? "How surround reaches stereo: \"loro\" (Lo/Ro, ITU-R BS.775: centre and surrounds at −3 dB) or \"ltrt\" (Lt/Rt matrix-surround encode, no 90° phase shift). Only for 5.1 or 7.1 to stereo."
                    : "How stereo is read: \"loro\" places L and R and leaves the new channels silent; \"ltrt\" decodes matrix surround passively (C = 0.7071 (L + R), Ls = Rs = 0.7071 (R − L)). \"ltrt\" needs a stereo input."),
        ]
        if direction == .down {
            parameters.append(.init("lfe", .number, range: -96...12, optional: true, unit: "dB",
                                    "Gain of the LFE channel into the channels it folds into (5.1 or 7.1 to stereo or mono); default: the LFE is dropped."))
        }
        parameters += [
            .init("matrix", .numberMatrix, range: -16...16, optional: true,
                  "Coefficients instead of the standard matrix: one row per output channel, one column per input channel, in layout order. Replaces \"mode\"."),
            .init("normalize", .boolean, default: .boolean(false),
                  "Scale the matrix down so that no output can clip: the largest row sum of |coefficients| becomes 1 (when above 1)."),
        ]
        return NodeDescriptor(
            typeID: direction == .down ? "downmix" : "upmix", role: .processor,
            summary: direction == .down
                ? "Mixes down to fewer channels: 7.1 → 5.1 → stereo (Lo/Ro per ITU-R BS.775, or Lt/Rt) or mono, or through a given matrix."
                : "Spreads to more channels: mono → stereo or 5.1, stereo → 5.1 (placed, or a passive Lt/Rt decode), 5.1 → 7.1, or through a given matrix.",
            inputs: .single, parameters: parameters, acceptsRateIslands: true)
    }

    /// What `resolve` works out, also used by `makeNode`.
    struct Plan {
        var matrix: [[Double]]
        var output: StreamFormat
    }

    /// Checks the parameters against the input and works out the matrix;
    /// reports through `c` and returns nil on any error. [main-thread]
    func plan(_ c: ResolveContext) -> Plan? {
        let p = c.parameters
        guard let layoutName = p.string("layout"), let target = ChannelLayout(rawValue: layoutName),
              let modeName = p.string("mode"), let mode = ChannelMatrices.Mode(rawValue: modeName) else { return nil }
        let lfeDB = p.number("lfe")
        let given = p.numberMatrix("matrix")
        var ok = true
        if let m = given {
            if lfeDB != nil {
                c.error(parameter: "lfe", "\"lfe\" sets the standard matrices' LFE gain; with \"matrix\", put the LFE gain in the matrix's LFE column")
                ok = false
            }
            if m.isEmpty || m.count > 64 {
                c.error(parameter: "matrix", "the matrix has \(m.count) rows; give one row per output channel (1 to 64)")
                ok = false
            } else if let n = target.channelCount, m.count != n {
                let labels = target.channelLabels(count: n).joined(separator: " ")
                c.error(parameter: "matrix", "the matrix has \(m.count) row\(m.count == 1 ? "" : "s") but \(target) has \(n) channel\(n == 1 ? "" : "s") (\(labels)): give one row per output channel")
                ok = false
            }
        } else if target == .discrete {
            c.error(parameter: "layout", "\"discrete\" has no standard matrix: give \"matrix\", one row per output channel")
            ok = false
        }
        guard ok, let input = c.input else { return nil }
        let inputLabels = input.layout.channelLabels(count: input.channels)
        let inputText = "\(input.channels) channel\(input.channels == 1 ? "" : "s") (\(input.layout): \(inputLabels.joined(separator: " ")))"

        if var m = given {
            for (i, row) in m.enumerated() where row.count != input.channels {
                c.error(parameter: "matrix", element: i, "row \(i) has \(row.count) coefficient\(row.count == 1 ? "" : "s") but the input has \(inputText): give one per input channel")
                ok = false
            }
            guard ok else { return nil }
            if p.boolean("normalize") == true { m = ChannelMatrices.normalized(m) }
            let layout: ChannelLayout? = target == .discrete ? .discrete : target
            return Plan(matrix: m, output: StreamFormat(channels: m.count, sampleRate: input.sampleRate, layout: layout))
        }

        // A standard matrix.
        let from = input.layout == .binaural ? ChannelLayout.stereo : input.layout
        guard ChannelMatrices.standard.contains(from) else {
            c.error(input: 0, "the input has \(inputText), for which there is no standard matrix; give \"matrix\" (one row per output channel, one column per input channel), or tag the input with format-tag")
            return nil
        }
        if direction == .up, input.layout == .binaural {
            c.error(input: 0, "the input is binaural (already rendered for headphones) and cannot be spread over speakers; tag it \"stereo\" with format-tag if it is not")
            return nil
        }
        let inCount = from.channelCount ?? 0
        let outCount = target.channelCount ?? 0
        switch direction {
        case .down where outCount > inCount:
            c.error(parameter: "layout", "\(target) has \(outCount) channels but the input has \(inputText): downmix goes to fewer channels; use upmix")
            return nil
        case .up where outCount < inCount:
            c.error(parameter: "layout", "\(target) has \(outCount) channel\(outCount == 1 ? "" : "s") but the input has \(inputText): upmix goes to more channels; use downmix")
            return nil
        default: break
        }
        if mode == .ltrt {
            let fits = direction == .down ? (target == .stereo && (from == .surround51 || from == .surround71))
                                          : (from == .stereo && outCount > 2)
            if !fits {
                c.error(parameter: "mode", direction == .down
                    ? "\"ltrt\" encodes 5.1 or 7.1 into stereo; this downmix goes from \(input.layout) to \(target)"
                    : "\"ltrt\" decodes a stereo Lt/Rt input into 5.1 or 7.1; this upmix goes from \(input.layout) to \(target)")
                return nil
            }
        }
        var lfe = 0.0
        if let db = lfeDB {
            let folds = (from == .surround51 || from == .surround71) && (target == .stereo || target == .mono)
            if !folds {
                c.error(parameter: "lfe", from.channelCount ?? 0 < 6
                    ? "the input (\(input.layout)) has no LFE channel"
                    : "\(target) keeps the LFE channel as it is; \"lfe\" is for folding it into stereo or mono")
                return nil
            }
            lfe = Decibels.toLinear(db)
        }
        guard var m = ChannelMatrices.standard(from: from, to: target, mode: mode, lfe: lfe) else {
            c.error(parameter: "layout", "no standard matrix from \(input.layout) to \(target); give \"matrix\"")
            return nil
        }
        if p.boolean("normalize") == true { m = ChannelMatrices.normalized(m) }
        let layout: ChannelLayout = from == target ? input.layout : target
        // A 5.1 made from another layout has side surrounds (the ITU
        // convention); 5.1 to 5.1 keeps the input's.
        return Plan(matrix: m, output: StreamFormat(channels: m.count, sampleRate: input.sampleRate, layout: layout,
                                                    surroundsAreBack: from == target && input.surroundsAreBack))
    }

    /// [main-thread | control-thread; validation resolves on the thread that validates]
    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        ThreadRole.check(.main, .control)
        return plan(c)?.output
    }

    /// [main-thread]
    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        ThreadRole.check(.main)
        return try ChannelMatrixNode.make(c) { plan($0)?.matrix }
    }
}
