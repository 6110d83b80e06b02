import Synchronization

/// A count shared between the worker that adds to it and any thread that
/// reads it (frames found damaged). [any-thread]
public final class SharedCount: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    public func add(_ n: Int) { value.add(n, ordering: .relaxed) }
    public var count: Int { value.load(ordering: .relaxed) }
}

/// One compressed stream decoded to PCM, a step at a time, on the worker
/// thread: frames from a cursor through a `FrameDecoder`, the container's
/// trim passed on, restarts (seek, loop) that land on the exact sample,
/// the playback window's end, bad frames and missing packets played as
/// silence of their length, and the decoder's tail drained at the end.
/// The decoder node writes what it makes into its ring; a playlist mixes
/// each item into its layout first. [worker-thread; made on the main
/// thread or the worker]
public final class DecodedStream {
    public let cursor: any CompressedFrameCursor
    public let decoder: any FrameDecoder
    /// The part that plays, in samples at the graph's rate.
    public let window: PlaybackWindow
    public let framesPerDecode: Int
    /// Frames refused as corrupt or missing from the container.
    public let badFrames: SharedCount
    /// The last bad frame, in words.
    public private(set) var lastBadFrame: String?
    /// Why decoding stopped for good, if it did (the stream is then done).
    public private(set) var failure: String?
    /// The window has played to its end (or decoding failed).
    public private(set) var isDone = false
    /// Largest gap of missing packets taken for a gap, in samples: a jump
    /// beyond it is a broken timestamp.
    private let largestGap: Int
    private let planar: UnsafeMutablePointer<Float>
    private let channelPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    /// Samples still to drop after a restart (up to the exact target).
    private var discard = 0
    /// The graph-rate position of the next sample given out (for the
    /// window's end and loop).
    private var position = 0
    /// Where the next frame should start if none is missing (graph
    /// samples; nil after a restart or when timestamps are unknown).
    private var nextTimestamp: Int?
    private var opened = false
    /// Samples of a gap's silence still to give out, before `heldFrame`
    /// (an output with too little room takes the gap over several steps).
    private var silenceLeft = 0
    /// The frame after a gap, decoded once the gap's silence is out.
    private var heldFrame: CompressedFrame?
    /// Restarts so far (a step notices one made while it gave out silence).
    private var restarts = 0

    /// - Parameters:
    ///   - framesPerDecode: the decoder's `maxFramesPerDecode`.
    ///   - badFrames: where bad frames are counted (a playlist shares one
    ///     across its items).
    /// Starts at the window's start (a restart there when it is not 0).
    /// [main-thread | worker-thread]
    public init(cursor: any CompressedFrameCursor, decoder: any FrameDecoder, window: PlaybackWindow,
                framesPerDecode: Int, sampleRate: Double, badFrames: SharedCount = SharedCount()) {
        ThreadRole.check(.main, .worker)
        self.cursor = cursor
        self.decoder = decoder
        self.window = window
        self.framesPerDecode = max(framesPerDecode, 1)
        self.badFrames = badFrames
        largestGap = Int(sampleRate * 60)
        let channels = max(decoder.channels, 1)
        planar = .allocate(capacity: channels * self.framesPerDecode)
        planar.initialize(repeating: 0, count: channels * self.framesPerDecode)
        channelPointers = .allocate(capacity: channels)
        for c in 0..<channels { (channelPointers + c).initialize(to: planar + c * self.framesPerDecode) }
    }

    deinit {
        planar.deallocate()
        channelPointers.deallocate()
    }

    /// Gives the decoder the stream's parameters, once, before anything
    /// else; then moves to the window's start. Returns why the decoder
    /// refused the stream (the stream is then done). [worker-thread]
    public func openIfNeeded() -> String? {
        ThreadRole.check(.worker)
        guard !opened else { return nil }
        opened = true
        if let info = cursor.streamInfo, let why = decoder.openStream(info) {
            failure = "the decoder refused the stream (\(info.codec), \(info.channels) ch, \(info.sampleRate) Hz): \(why)"
            isDone = true
            return failure
        }
        if window.start > 0 { restart(at: window.start) }
        return nil
    }

    /// One step: decodes the next frame (or drains the decoder at the end
    /// of the stream) into `output`, when a decode's worth fits there.
    /// Returns whether it did anything. [worker-thread]
    @discardableResult
    public func step(into output: some DecodedPCMOutput) -> Bool {
        ThreadRole.check(.worker)
        guard !isDone, output.writableFrames >= framesPerDecode else { return false }
        if silenceLeft > 0 {
            emitGapSilence(output)
            return true
        }
        if let frame = heldFrame ?? cursor.next() {
            if heldFrame != nil {
                heldFrame = nil
            } else {
                let restartsBefore = restarts
                if concealGap(before: frame, output) {
                    // The frame after the gap waits for the next step (the
                    // gap's silence may take several, as room allows),
                    // unless the silence reached the window's end.
                    if restarts == restartsBefore && !isDone { heldFrame = frame }
                    return true
                }
            }
            if frame.skipStart > 0 || frame.discardEnd > 0 {
                decoder.trimNextFrame(skipStart: frame.skipStart, discardEnd: frame.discardEnd)
            }
            let status = frame.bytes.withUnsafeBufferPointer { bytes in
                decoder.decode(bytes, timestamp: frame.timestamp, into: channelPointers, capacity: framesPerDecode)
            }
            switch status {
            case .ok(let n):
                emit(n, output)
            case .badFrame:
                badFrames.add(1)
                lastBadFrame = decoder.lastError
                emitSilence(min(frame.samplesPerFrame, framesPerDecode), output)
            case .fatal:
                failure = "the decoder stopped at frame \(frame.index)" + (decoder.lastError.map { ": \($0)" } ?? "")
                isDone = true
            }
        } else {
            // The end of the stream: take what the decoder still holds back.
            var rounds = 0
            while rounds < 64, !isDone {
                // No room for what the decoder still holds: the next step
                // drains on (the cursor stays at its end).
                guard output.writableFrames >= framesPerDecode else { return true }
                guard case .ok(let n) = decoder.decode(nil, timestamp: -1, into: channelPointers, capacity: framesPerDecode)
                else { break }
                emit(n, output)
                rounds += 1
                if n == 0 { break }
            }
            if !isDone { endOfWindow() }
        }
        return true
    }

    /// Flushes the decoder and goes on from graph sample `sample`: the
    /// cursor starts at a frame at or before it and the PCM before it is
    /// dropped. Past the end, the stream is done. [worker-thread]
    public func restart(at sample: Int) {
        ThreadRole.check(.worker)
        decoder.flush()
        nextTimestamp = nil
        silenceLeft = 0
        heldFrame = nil
        restarts &+= 1
        if let start = cursor.seek(toSample: sample) {
            discard = max(sample - start, 0)
            position = sample
            isDone = false
        } else {
            discard = 0
            isDone = true
        }
    }

    /// The stream or the window ended: loop to the window's start, or stop.
    /// A loop that gave no frame since its start (a file with no samples,
    /// a start at or past its end) would loop for ever without a frame: it
    /// stops, as a failure that says so.
    private func endOfWindow() {
        if window.loops, position > window.start {
            restart(at: window.start)
        } else {
            if window.loops, failure == nil {
                failure = "nothing to loop: the stream gives no frame from its loop's start (frame \(window.start)) on"
            }
            isDone = true
        }
    }

    /// Frames missing from the stream (a damaged container lost packets:
    /// the next frame starts later than the last one ended) are counted as
    /// damaged and their time played as silence, so that what follows
    /// stays in place. Returns whether there was a gap (its silence is
    /// given out, or some of it and the rest at the next steps).
    private func concealGap(before frame: CompressedFrame, _ output: some DecodedPCMOutput) -> Bool {
        defer {
            nextTimestamp = frame.timestamp == Int.min ? nil : frame.timestamp + frame.samplesPerFrame
        }
        guard let expected = nextTimestamp, frame.timestamp != Int.min, frame.samplesPerFrame > 0 else { return false }
        let gap = frame.timestamp - expected
        guard gap > frame.samplesPerFrame / 2, gap < largestGap else { return false }
        badFrames.add(max(1, (gap + frame.samplesPerFrame / 2) / frame.samplesPerFrame))
        lastBadFrame = "\(gap) samples of the stream missing before frame \(frame.index)"
        decoder.flush()
        silenceLeft = gap
        emitGapSilence(output)
        return true
    }

    /// Gives out as much of the gap's silence as fits.
    private func emitGapSilence(_ output: some DecodedPCMOutput) {
        while silenceLeft > 0 && !isDone && output.writableFrames >= framesPerDecode {
            let n = min(silenceLeft, framesPerDecode)
            emitSilence(n, output)
            silenceLeft -= n
        }
        if isDone { silenceLeft = 0 }
    }

    /// Hands `n` decoded frames (after a restart's discard, up to the
    /// window's end) to `output`.
    private func emit(_ n: Int, _ output: some DecodedPCMOutput) {
        let n = min(n, framesPerDecode)
        let skip = min(discard, n)
        discard -= skip
        var count = n - skip
        if let end = window.end { count = min(count, max(end - position, 0)) }
        if count > 0 {
            output.write(channelPointers, count: max(decoder.channels, 1), offset: skip, frames: count)
            position += count
        }
        if let end = window.end, position >= end { endOfWindow() }
    }

    private func emitSilence(_ n: Int, _ output: some DecodedPCMOutput) {
        for c in 0..<max(decoder.channels, 1) { Kernels.fill(planar + c * framesPerDecode, count: n, value: 0) }
        emit(n, output)
    }
}
