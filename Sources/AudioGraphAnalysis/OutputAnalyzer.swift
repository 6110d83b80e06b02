import AudioGraphCore
import AudioGraphProcessing

/// What `OutputAnalyzer` measured of one stream.
public struct OutputMeasurements: Sendable {
    /// A correlation between two channels of the stream.
    public struct Correlation: Sendable, Equatable {
        public var channels: (Int, Int)
        public var labels: (String, String)
        /// Pearson's r; nil when a channel is silent (or constant).
        public var coefficient: Double?

        public static func == (a: Correlation, b: Correlation) -> Bool {
            a.channels == b.channels && a.labels == b.labels && a.coefficient == b.coefficient
        }
    }

    public var format: StreamFormat
    /// The layout's label of each channel (L, R, C …).
    public var labels: [String]
    public var frames: Int
    /// ITU-R BS.1770-4 integrated loudness, LUFS (−inf: silent or under 400 ms).
    public var integratedLUFS: Double
    /// EBU Tech 3342 loudness range, LU (0 under 3 s).
    public var loudnessRangeLU: Double
    /// BS.1770-4 true peak of the loudest channel, dBTP.
    public var truePeakDBTP: Double
    public var samplePeakDBFS: Double
    /// The one-third-octave bands measured (`ThirdOctaveBands(sampleRate:)`).
    public var bands: ThirdOctaveBands
    /// Per channel, per band: the band's level, dB of mean square (see
    /// `WelchSpectrum.bandLevels`), before any loudness matching.
    public var bandLevelsDB: [[Double]]
    /// The FFT size of the Welch estimate, and the segments averaged.
    public var fftSize: Int
    public var segments: Int
    /// The layout's left/right pairs (`ChannelPairs`).
    public var correlations: [Correlation]

    public var seconds: Double { Double(frames) / format.sampleRate }
}

/// Measures one stream fed block by block: integrated loudness and
/// loudness range (`ProgrammeLoudness`, with the layout's BS.1770 channel
/// weights; `binaural` counts as stereo), true and sample peak
/// (`TruePeakScanner`), one-third-octave band levels per channel
/// (`WelchSpectrum` over `ThirdOctaveBands`) and the correlation of the
/// layout's left/right channel pairs (`ChannelPairs`).
///
/// Every measure streams: memory does not grow with the length (but for
/// the 100 ms loudness energies, 8 bytes each).
///
/// Threading: one thread at a time; `add` appends to arrays (it may
/// allocate), so not for the audio thread. [main-thread | worker-thread | owner-thread |
/// control-thread]
public final class OutputAnalyzer: @unchecked Sendable {
    public let format: StreamFormat
    private let loudness: ProgrammeLoudness
    private let peaks: TruePeakScanner
    private let spectrum: WelchSpectrum
    private let pairs: [(Int, Int)]
    private var correlations: [PearsonCorrelation]
    private var frames = 0

    /// - Parameter fftSize: the Welch segment; default `WelchSpectrum.defaultFFTSize`.
    /// - Throws: `AnalysisError` for a stream that is not PCM, or that the
    ///   meters refuse (no channels, an odd rate).
    public init(format: StreamFormat, fftSize: Int? = nil) throws(AnalysisError) {
        guard format.encoding == .pcm, format.channels > 0 else {
            throw AnalysisError("only PCM audio can be measured, not \(format)")
        }
        self.format = format
        let weights = ProgrammeLoudness.weights(layout: format.layout, channels: format.channels)
        do {
            loudness = try ProgrammeLoudness(channels: format.channels, sampleRate: format.sampleRate, weights: weights)
        } catch {
            throw AnalysisError("\(error)")
        }
        peaks = TruePeakScanner(channels: format.channels)
        spectrum = try WelchSpectrum(channels: format.channels, sampleRate: format.sampleRate, fftSize: fftSize)
        pairs = ChannelPairs.pairs(layout: format.layout, channels: format.channels)
        correlations = pairs.map { _ in PearsonCorrelation() }
    }

    /// Adds `count` interleaved frames. [any-thread; the object's owning thread]
    public func add(interleaved src: UnsafePointer<Float>, frames count: Int) {
        guard count > 0 else { return }
        loudness.add(interleaved: src, frames: count)
        peaks.add(interleaved: src, frames: count)
        spectrum.add(interleaved: src, frames: count)
        for (i, (x, y)) in pairs.enumerated() {
            correlations[i].add(interleaved: src, stride: format.channels, x: x, y: y, frames: count)
        }
        frames += count
    }

    /// The measurements of everything added. [any-thread; the object's owning thread]
    public func finish() -> OutputMeasurements {
        spectrum.finish()
        let bands = ThirdOctaveBands(sampleRate: format.sampleRate)
        let labels = format.layout.channelLabels(count: format.channels)
        let truePeak = (0..<format.channels).map { peaks.truePeak(channel: $0) }.max() ?? 0
        let samplePeak = (0..<format.channels).map { peaks.samplePeak(channel: $0) }.max() ?? 0
        return OutputMeasurements(
            format: format, labels: labels, frames: frames,
            integratedLUFS: loudness.integrated, loudnessRangeLU: loudness.loudnessRange,
            truePeakDBTP: Decibels.fromLinear(Double(truePeak)), samplePeakDBFS: Decibels.fromLinear(Double(samplePeak)),
            bands: bands, bandLevelsDB: spectrum.bandLevels(bands), fftSize: spectrum.fftSize, segments: spectrum.segments,
            correlations: zip(pairs, correlations).map { pair, r in
                OutputMeasurements.Correlation(channels: pair, labels: (labels[pair.0], labels[pair.1]), coefficient: r.coefficient)
            })
    }
}
