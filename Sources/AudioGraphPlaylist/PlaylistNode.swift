import AudioGraphCore
import AudioGraphNodeAPI

/// The `playlist` node in an engine. The audio thread only takes frames
/// from its ring (`render`); the worker fills the ring (`PlaylistJob`);
/// control threads edit the list and read the events (`perform`,
/// `events`, `snapshot`).
public final class PlaylistNode: RenderNode, UnderrunCounting, DamageCounting, PlaylistControlling, TransportFollowing,
                                  @unchecked Sendable {
    public let nodeID: String
    let queue: PlaylistQueue
    let log: PlaylistEventLog
    let target: PlaylistItemSource.Target
    let decoder: any FrameDecoder
    let loop: Bool
    let bufferFrames: Int
    public let transportMode: TransportMode
    /// Offline with `onError: "fail"`: a damaged item ends the render
    /// with an error naming it (`PlaylistJob.hasFailed`). Live: false.
    let failsOnDamage: Bool
    var feed: FeedRing?
    var job: PlaylistJob?
    var output: AudioBus?

    /// [main-thread]
    init(nodeID: String, items: [PlaylistItem], target: PlaylistItemSource.Target, decoder: any FrameDecoder,
         loop: Bool, bufferFrames: Int, transportMode: TransportMode = .free, failsOnDamage: Bool = false) {
        self.transportMode = transportMode
        self.failsOnDamage = failsOnDamage
        self.nodeID = nodeID
        queue = PlaylistQueue(items)
        log = PlaylistEventLog(node: nodeID)
        self.target = target
        self.decoder = decoder
        self.loop = loop
        self.bufferFrames = bufferFrames
    }

    /// Activates the decoder; builds the ring and the job.
    /// [main-thread & !active]
    public func prepare(inputs: [AudioBus], output: AudioBus?, context: PrepareContext) throws {
        ThreadRole.check(.main)
        self.output = output
        try decoder.activate(sampleRate: context.sampleRate, maxFrames: context.maxFrames)
        let perDecode = decoder.maxFramesPerDecode
        // Room for what it reads ahead plus one decode's worth, at the least.
        let ring = FeedRing(channels: target.layout.channelCount ?? 2,
                            capacityFrames: max(bufferFrames + 2 * perDecode, 2 * context.maxFrames),
                            maxFrames: context.maxFrames)
        feed = ring
        job = PlaylistJob(nodeID: nodeID, queue: queue, log: log, feed: ring, decoder: decoder, target: target,
                          loop: loop, framesPerDecode: perDecode, readAhead: bufferFrames, maxFrames: context.maxFrames,
                          failsOnDamage: failsOnDamage)
    }

    /// [audio-thread]
    public func render(frames: Int) {
        ThreadRole.check(.audio)
        guard let feed, let output else { return }
        feed.render(into: output, frames: frames)
    }

    public var backgroundJob: (any BackgroundJob)? { job }

    /// None: the ring is prefetch, not delay. [main-thread]
    public var latency: Int { ThreadRole.check(.main); return 0 }

    public var underrunCount: Int { feed?.underruns.load(ordering: .relaxed) ?? 0 }

    public var damagedFrames: Int { (job?.badFrames.count ?? 0) + decoder.concealedFrames }

    // MARK: TransportFollowing [control-thread]

    /// Transport frame F plays the list as if it had played from its first
    /// item for F frames (`PlaylistJob.relocate`).
    public func locate(toTransportFrame frame: Int) {
        feed?.keepsTime.store(true, ordering: .relaxed)
        job?.seeks.request(frame)
    }

    /// [audio-thread]
    public func renderHeld(frames: Int) { ThreadRole.check(.audio); renderHeld(feed: feed, output: output, frames: frames) }

    public func isLocated(readyFor frames: Int) -> Bool {
        guard let job else { return true }
        return job.seeks.isSettled && job.isReady(forFrames: frames)
    }

    // MARK: PlaylistControlling [control-thread]

    public func perform(_ command: PlaylistCommand) throws(PlaylistError) -> String {
        switch command {
        case .next:
            guard let job else { throw PlaylistError("'\(nodeID)' is not running") }
            job.requestNext()
            return "\(nodeID): next"
        case .list:
            return snapshot.description
        default:
            return "\(nodeID): " + (try queue.edit(command))
        }
    }

    /// How far the audio has read: its ring's read position, or all of it
    /// once the stream has ended and been played.
    private var heardUpTo: Int {
        guard let feed else { return 0 }
        if feed.isEnded && feed.bufferedFrames == 0 { return Int.max }
        return feed.ring.readPosition
    }

    public func events(after sequence: Int) -> [PlaylistEvent] {
        log.events(after: sequence, readPosition: heardUpTo)
    }

    public var snapshot: PlaylistSnapshot {
        let heard = log.heard(readPosition: heardUpTo)
        let (entries, next, ended) = queue.contents
        return PlaylistSnapshot(node: nodeID, items: entries.map(\.item),
                                playing: heard.flatMap { h in entries.firstIndex { $0.id == h.id } },
                                next: next, ended: ended)
    }
}
