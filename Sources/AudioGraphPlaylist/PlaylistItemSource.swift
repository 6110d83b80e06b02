import AudioGraphCore
import AudioGraphMedia
import AudioGraphNodeAPI
import AudioGraphProcessing

/// What one item plays: its file opened with libavformat, its audio stream,
/// the part that plays, and the matrix from its layout to the playlist's.
/// Made once to check an item at validation, and again on the worker
/// thread when the item starts: the same checks, so an item that fails
/// later (a file replaced, a live `add`) fails with the same words.
struct PlaylistItemSource {
    let file: MediaFile
    let stream: MediaStream
    /// In samples at the graph's rate.
    let window: PlaybackWindow
    /// One row per playlist channel, one column per stream channel: the
    /// standard up/downmix (ITU-R BS.775 Lo/Ro, LFE dropped) with the
    /// item's gain in it.
    let matrix: [[Double]]

    /// What is wrong with an item, and which of its fields says so.
    struct Problem: Error, Sendable {
        /// "path", "start" or "end".
        var field: String
        var message: String
    }

    /// What an item is checked against.
    struct Target: Sendable {
        /// The playlist's layout (mono, stereo, 5.1 or 7.1).
        var layout: ChannelLayout
        var sampleRate: Double
        /// The decoder's type id and the codecs it takes.
        var decoder: String
        var codecs: [String]
    }

    /// Opens `item` and checks everything that can be known before it plays.
    /// [main-thread | worker-thread; validation: main; playback: worker]
    static func open(_ item: PlaylistItem, for target: Target) throws(Problem) -> PlaylistItemSource {
        let path = item.path
        if let why = FileChecks.readableFileProblem(path) {
            throw Problem(field: "path", message: "cannot read \(path): \(why)")
        }
        let file: MediaFile
        do { file = try MediaFile(path: path) } catch { throw Problem(field: "path", message: error.message) }
        guard let stream = file.defaultAudioStream else {
            throw Problem(field: "path", message: "\(path) (\(file.container)) has no audio stream")
        }
        guard stream.sampleRate > 0, stream.channels > 0 else {
            throw Problem(field: "path", message: "the audio stream of \(path) (\(stream.codec)) says no sample rate or channel count")
        }
        guard target.codecs.contains(stream.codec) else {
            throw Problem(field: "path", message: "\(path) holds \(stream.codec) audio, which the \(target.decoder) decoder does not decode")
        }
        guard let matrix = Self.matrix(stream, to: target.layout, gain: item.gain) else {
            let positions = stream.layoutIsDiscrete ? "channel positions the project has no layout for" : "\(stream.layout)"
            throw Problem(field: "path", message: "\(path) has \(stream.channels) channel\(stream.channels == 1 ? "" : "s") (\(positions)): there is no standard matrix from it to the playlist's \(target.layout)")
        }
        let length = stream.durationSeconds ?? file.durationSeconds
        if let length, item.start > 0, item.start >= length {
            throw Problem(field: "start", message: "start at \(ParameterValue.number(item.start)) s is past the end of \(path) (\(ParameterValue.number((length * 1000).rounded() / 1000)) s long)")
        }
        if let end = item.end, end <= item.start {
            throw Problem(field: "end", message: "end (\(ParameterValue.number(end)) s) must be after start (\(ParameterValue.number(item.start)) s)")
        }
        let start: Int
        var end: Int?
        do { start = try FrameTime.frames(seconds: item.start, sampleRate: target.sampleRate) } catch {
            throw Problem(field: "start", message: "start \(error)")
        }
        do { end = try item.end.map { try FrameTime.frames(seconds: $0, sampleRate: target.sampleRate) } } catch {
            throw Problem(field: "end", message: "end \(error)")
        }
        if let end, end <= start {
            throw Problem(field: "end", message: "end (\(ParameterValue.number(item.end ?? 0)) s) is less than one frame after start (\(ParameterValue.number(item.start)) s) at \(ParameterValue.number(target.sampleRate)) Hz: nothing would play")
        }
        if let length = file.presentationFrames(of: stream, sampleRate: target.sampleRate) {
            end = min(end ?? length, length)
        }
        return PlaylistItemSource(file: file, stream: stream, window: PlaybackWindow(start: start, end: end), matrix: matrix)
    }

    /// The stream's layout to `layout`, times the gain: a standard matrix,
    /// or channel for channel when the stream's channels have no known
    /// positions but are as many as the playlist's. nil when neither fits.
    /// [any-thread]
    static func matrix(_ stream: MediaStream, to layout: ChannelLayout, gain: Double) -> [[Double]]? {
        let base: [[Double]]?
        if stream.layoutIsDiscrete || stream.layout == .discrete {
            let n = stream.channels
            base = n == layout.channelCount ? (0..<n).map { o in (0..<n).map { $0 == o ? 1 : 0 } } : nil
        } else {
            base = ChannelMatrices.standard(from: stream.layout, to: layout, mode: .loro)
        }
        let g = Decibels.toLinear(gain)
        return base.map { $0.map { $0.map { $0 * g } } }
    }
}
