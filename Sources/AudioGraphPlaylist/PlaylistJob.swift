import AudioGraphCore
import AudioGraphNodeAPI
import AudioGraphProcessing
import Synchronization

/// The worker-thread side of a playlist: takes the next item from the
/// queue at each boundary, opens it (`PlaylistItemSource`), decodes it
/// through the decoder plugin (`DecodedStream`), mixes it to the
/// playlist's layout with its gain (`ChannelMixer`) and writes it into the
/// ring right after the previous item's last sample: no gap, no overlap.
/// It marks each boundary in the event log at its place in the ring.
///
/// Threading: [worker-thread], except `requestNext`, `setTargetFill` and
/// `hasFailed` (any thread), `isReady` (the offline driver), `finish`
/// (after the worker stopped).
final class PlaylistJob: BackgroundJob, FillTargeting, DecodedPCMOutput, @unchecked Sendable {
    let nodeID: String
    let queue: PlaylistQueue
    let log: PlaylistEventLog
    let feed: FeedRing
    let decoder: any FrameDecoder
    let target: PlaylistItemSource.Target
    let loop: Bool
    let framesPerDecode: Int
    /// The playlist's channels.
    let channels: Int
    /// Frames refused as corrupt or missing, over every item.
    let badFrames = SharedCount()
    /// Offline with `onError: "fail"`: damage ends the render (`hasFailed`)
    /// and `finish` throws, naming each damaged item.
    let failsOnDamage: Bool
    /// Live, at least this much stays buffered, so that opening the next
    /// item never runs the ring dry (0.1 s).
    let minimumFill: Int
    /// The most it reads ahead (`bufferTime`; offline too), so that an edit
    /// reaches items a little ahead of what plays.
    let readAhead: Int
    /// When the list has run out, the end of the stream waits until no
    /// more than this is left to play (the largest block): an item added
    /// until then still follows with no gap.
    let endMargin: Int
    private let fillTarget = Atomic<Int>(Int.max)
    private let nextRequests = Atomic<Int>(0)
    /// Transport locates, in frames from the list's start.
    let seeks = SeekRequests()
    /// Each entry's length in frames (its window; nil: not known), by its
    /// identity, as found when a locate needed it. [worker-thread]
    private var lengths: [Int: Int?] = [:]

    /// The item being decoded.
    private struct Current {
        var id: Int
        var index: Int
        var path: String
        var stream: DecodedStream
        var mixer: ChannelMixer
        /// The ring's write position when it started.
        var startedAt: Int
        /// The damage counts (`badFrames`, the decoder's concealed frames)
        /// when it started: what they grow by is this item's.
        var badAtStart: Int
        var concealedAtStart: Int
    }
    private var current: Current?
    /// No item will start any more.
    private var ended = false
    /// Items that failed in a row (a looping list of bad files ends after
    /// one lap).
    private var failuresInARow = 0
    /// Items in a row that played no frame, failed or empty (a 0-frame
    /// file): a looping list of them would start items without end and
    /// never fill the ring, so it ends after one lap.
    private var silentInARow = 0
    /// What failed, for the end of a render. [worker-thread; read after stop]
    private(set) var failures: [String] = []
    private var failuresNotKept = 0
    /// Each damaged item, in words ("item 2: damaged input PATH: 3 damaged
    /// frames concealed (last: …)"). [worker-thread; read after stop]
    private(set) var damaged: [String] = []
    private var damagedNotKept = 0
    /// One decode's worth, mixed to the playlist's channels (planar), then interleaved.
    private let mixed: UnsafeMutablePointer<Float>
    private let interleaved: UnsafeMutablePointer<Float>

    /// [main-thread]
    init(nodeID: String, queue: PlaylistQueue, log: PlaylistEventLog, feed: FeedRing, decoder: any FrameDecoder,
         target: PlaylistItemSource.Target, loop: Bool, framesPerDecode: Int, readAhead: Int, maxFrames: Int,
         failsOnDamage: Bool = false) {
        self.failsOnDamage = failsOnDamage
        self.nodeID = nodeID
        self.queue = queue
        self.log = log
        self.feed = feed
        self.decoder = decoder
        self.target = target
        self.loop = loop
        self.framesPerDecode = framesPerDecode
        channels = feed.channels
        minimumFill = Int(target.sampleRate / 10)
        self.readAhead = max(readAhead, minimumFill)
        endMargin = maxFrames
        mixed = .allocate(capacity: channels * framesPerDecode)
        mixed.initialize(repeating: 0, count: channels * framesPerDecode)
        interleaved = .allocate(capacity: channels * framesPerDecode)
    }

    deinit {
        mixed.deallocate()
        interleaved.deallocate()
    }

    // MARK: requests [any-thread]

    /// Skip what is heard now. [control-thread]
    func requestNext() { nextRequests.add(1, ordering: .releasing) }

    /// Live: a period and a little more, at least `minimumFill`.
    func setTargetFill(frames: Int) { fillTarget.store(max(frames, minimumFill), ordering: .relaxed) }
    /// What the worker keeps buffered: the live target, at most `readAhead`.
    var targetFill: Int { min(fillTarget.load(ordering: .relaxed), readAhead) }

    func isReady(forFrames frames: Int) -> Bool {
        nextRequests.load(ordering: .acquiring) == 0 && (feed.isEnded || feed.bufferedFrames >= min(frames, targetFill))
    }

    // MARK: work [worker-thread]

    func service() -> Bool {
        if let request = seeks.take() {
            relocate(to: request.frame)
            seeks.done(request.sequence)
            return true
        }
        // The requests stay counted until the skip is done: the offline
        // driver (`isReady`) must not render a block from the ring the
        // skip is about to flush.
        let asked = nextRequests.load(ordering: .acquiring)
        if asked > 0 {
            skip()
            nextRequests.subtract(asked, ordering: .releasing)
            return true
        }
        guard !ended else { return false }
        guard let item = current else { return startNext() }
        if feed.bufferedFrames >= targetFill { return false }
        let worked = item.stream.step(into: self)
        if item.stream.isDone {
            finishCurrent()
            return true
        }
        return worked
    }

    /// Opens the next item and marks its start; an item that cannot be
    /// opened is marked failed (the one after it starts next time). With
    /// `offset`, the item starts that many frames after its start (a
    /// transport locate).
    private func startNext(offset: Int = 0) -> Bool {
        guard let (entry, index) = queue.takeNext(loop: loop) else {
            // Nothing more, for now: an item added before the audio reaches
            // the end still plays.
            guard feed.bufferedFrames <= endMargin else { return false }
            end()
            return true
        }
        let position = feed.ring.writePosition
        do throws(PlaylistItemSource.Problem) {
            let source = try PlaylistItemSource.open(entry.item, for: target)
            let cursor: any CompressedFrameCursor
            do { cursor = try source.file.cursor(over: source.stream, graphRate: target.sampleRate) } catch {
                throw PlaylistItemSource.Problem(field: "path", message: error.message)
            }
            // Another stream for the same decoder: flush, then its parameters.
            decoder.flush()
            let stream = DecodedStream(cursor: cursor, decoder: decoder, window: source.window,
                                       framesPerDecode: framesPerDecode, sampleRate: target.sampleRate, badFrames: badFrames)
            if let why = stream.openIfNeeded() { throw PlaylistItemSource.Problem(field: "path", message: why) }
            if offset > 0 { stream.restart(at: source.window.start + offset) }
            current = Current(id: entry.id, index: index, path: entry.item.path, stream: stream,
                              mixer: ChannelMixer(matrix: source.matrix, columns: source.stream.channels),
                              startedAt: position, badAtStart: badFrames.count, concealedAtStart: decoder.concealedFrames)
            log.mark(.started, id: entry.id, index: index, path: entry.item.path, at: position)
        } catch {
            fail(id: entry.id, index: index, path: entry.item.path, error.message, at: position)
        }
        return true
    }

    /// The item being decoded is done: ended, or failed on the way.
    private func finishCurrent() {
        guard let item = current else { return }
        current = nil
        queue.finishCurrent()
        noteDamage(of: item)
        let position = feed.ring.writePosition
        if let why = item.stream.failure {
            fail(id: item.id, index: item.index, path: item.path, why, at: position)
        } else {
            failuresInARow = 0
            log.mark(.ended, id: item.id, index: item.index, path: item.path, at: position)
            if position > item.startedAt { silentInARow = 0 } else { countSilent() }
        }
    }

    /// One more item in a row played no frame: a looping list ends when a
    /// whole lap played none.
    private func countSilent() {
        silentInARow += 1
        if loop && !ended && silentInARow >= max(queue.count, 1) {
            failures.append("'\(nodeID)': no item of the looping playlist gave a frame in a whole lap (\(silentInARow) in a row); it stopped")
            end()
        }
    }

    private func fail(id: Int, index: Int, path: String, _ reason: String, at position: Int) {
        queue.finishCurrent()
        log.mark(.failed(reason: reason), id: id, index: index, path: path, at: position)
        if failures.count < 100 {
            failures.append("'\(nodeID)': item \(index) (\(path)) failed: \(reason); went on with the next item")
        } else {
            failuresNotKept += 1
        }
        failuresInARow += 1
        if loop && failuresInARow >= max(queue.count, 1) {
            failures.append("'\(nodeID)': every item of the looping playlist failed in a row; it stopped")
            end()
        }
        countSilent()
    }

    /// Keeps what `item` found damaged, if anything, in words.
    private func noteDamage(of item: Current) {
        guard let line = damage(of: item) else { return }
        if damaged.count < 100 { damaged.append(line) } else { damagedNotKept += 1 }
    }

    /// "item 2: damaged input PATH: 3 damaged frames concealed (last: …)",
    /// or nil when the item found none. [worker-thread | main-thread; the main thread after stop]
    private func damage(of item: Current) -> String? {
        let bad = badFrames.count - item.badAtStart + decoder.concealedFrames - item.concealedAtStart
        guard bad > 0 else { return nil }
        return "item \(item.index): damaged input \(item.path): \(bad) damaged frame\(bad == 1 ? "" : "s") concealed"
            + (item.stream.lastBadFrame.map { " (last: \($0))" } ?? "")
    }

    /// No more items: the stream ends after what the ring holds.
    private func end() {
        ended = true
        queue.markEnded()
        feed.markEnd()
    }

    /// `next`: drops what the ring holds beyond what is heard, ends the
    /// item heard (skipped), and goes on from the item after it (the one
    /// the worker had started ahead, if any, starts again from its start).
    private func skip() {
        let heardUpTo = feed.ring.readPosition
        feed.flush()
        let (heard, unheard) = log.cut(at: heardUpTo)
        if let heard {
            log.mark(.skipped, id: heard.id, index: heard.index, path: heard.path, at: feed.ring.writePosition)
        }
        if let item = current {
            noteDamage(of: item)
            current = nil
            queue.finishCurrent()
        }
        if let unheard { queue.replay(unheard.id) }
        if ended { feed.markEnd() }
    }

    /// A transport locate: drops what the ring holds beyond what is heard,
    /// reports the item heard as skipped, and goes on from where the list
    /// is `frame` frames after its first item's start: each item counts
    /// its window (start to end, or to the end its container gives); with
    /// `loop` and every length known, `frame` wraps around the list. From
    /// an item whose length is not known on, the frames left go to it.
    /// Past the end of a list that does not loop, the stream ends (until
    /// the next locate).
    private func relocate(to frame: Int) {
        let heardUpTo = feed.ring.readPosition
        feed.flush()
        let (heard, _) = log.cut(at: heardUpTo)
        if let heard {
            log.mark(.skipped, id: heard.id, index: heard.index, path: heard.path, at: feed.ring.writePosition)
        }
        if let item = current { noteDamage(of: item) }
        current = nil
        ended = false
        failuresInARow = 0
        silentInARow = 0
        let entries = queue.contents.entries
        let known = entries.map { length(of: $0) }
        var left = max(frame, 0)
        if loop, !known.isEmpty, !known.contains(where: { $0 == nil }) {
            let total = known.reduce(0) { $0 + ($1 ?? 0) }
            if total > 0 { left %= total }
        }
        var index = 0
        while index < entries.count, let n = known[index], left >= n {
            left -= n
            index += 1
        }
        queue.restart(at: index)
        if index >= entries.count {
            end()
        } else {
            _ = startNext(offset: left)
        }
    }

    /// How many frames an entry plays: its window's end (given, or the
    /// length its container gives) less its start; nil when not known or
    /// it cannot be opened. Remembered by entry. [worker-thread]
    private func length(of entry: PlaylistQueue.Entry) -> Int? {
        if let known = lengths[entry.id] { return known }
        var n: Int?
        if let source = try? PlaylistItemSource.open(entry.item, for: target) {
            let seconds = source.stream.durationSeconds ?? source.file.durationSeconds
            let end = source.window.end ?? seconds.map { Int(($0 * target.sampleRate).rounded()) }
            n = end.map { max($0 - source.window.start, 0) }
        }
        lengths[entry.id] = n
        return n
    }

    // MARK: DecodedPCMOutput [worker-thread]

    var writableFrames: Int { feed.writableFrames }

    /// Mixes decoded frames to the playlist's channels, with the item's
    /// gain, and writes them into the ring.
    func write(_ decoded: UnsafePointer<UnsafeMutablePointer<Float>?>, count: Int, offset: Int, frames: Int) {
        guard let mixer = current?.mixer else { return }
        for c in 0..<min(mixer.columns, count) {
            if let p = decoded[c] { mixer.inputs[c] = UnsafePointer(p + offset) }
        }
        for o in 0..<mixer.rows { mixer.outputs[o] = mixed + o * framesPerDecode }
        mixer.run(count: frames)
        for o in 0..<channels {
            Kernels.interleave(mixed + o * framesPerDecode, to: interleaved, stride: channels, channel: o, count: frames)
        }
        feed.write(interleaved, frames: frames)
    }

    // MARK: end [control-thread & !rendering]

    func finish() throws {
        _ = try finish(completed: true)
    }

    /// Damage found with `onError: "fail"` (offline): the render stops at
    /// the next block. [any-thread]
    var hasFailed: Bool { failsOnDamage && badFrames.count + decoder.concealedFrames > 0 }

    /// What failed and what was damaged, for `agraph render` to show. A
    /// failed item never fails the render: the playlist went on. Damaged
    /// items, each named with what was concealed, fail it with `onError:
    /// "fail"` (an error) and are warnings with "skip".
    func finish(completed: Bool) throws -> [String] {
        var notices = failures
        if failuresNotKept > 0 { notices.append("'\(nodeID)': \(failuresNotKept) more items failed") }
        var lines = damaged + (current.flatMap { damage(of: $0) }.map { [$0] } ?? [])
        if damagedNotKept > 0 { lines.append("\(damagedNotKept) more damaged items") }
        let total = badFrames.count + decoder.concealedFrames
        if lines.isEmpty && total > 0 {
            lines.append("\(total) damaged frame\(total == 1 ? "" : "s") concealed")
        }
        guard !lines.isEmpty else { return notices }
        if failsOnDamage {
            throw EngineError(nodeID: nodeID, lines.joined(separator: "; ")
                              + "; the render stopped there (onError: fail; --allow-damaged or onError: skip renders what decodes)"
                              + (notices.isEmpty ? "" : "; also: " + notices.joined(separator: "; ")))
        }
        return notices + lines.map { "warning: '\(nodeID)': \($0) (onError: skip)" }
    }
}
