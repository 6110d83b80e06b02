import Synchronization

/// Renders an engine as fast as the machine allows, on the calling thread.
///
/// Background jobs that can (`RenderThreadJob`: a decoder, a file sink) do
/// their work on this thread, inside their nodes' `render`, in the
/// block's size: no worker thread, no ring, no wait. The others fill and
/// drain their rings on worker threads as live; before each block this
/// driver waits until every job is ready, so nothing underruns and
/// nothing is dropped.
public struct OfflineRenderer {
    /// Why rendering stopped.
    public enum Ending: Sendable, Equatable {
        /// Every stream reaching a sink ended.
        case endOfStream
        /// The requested duration was reached.
        case durationReached
        /// `shouldStop` returned true (e.g. Ctrl-C).
        case interrupted
        /// A background job failed (an input that cannot be decoded): its
        /// error is in `finishErrors`.
        case failed
    }

    public struct Result: Sendable {
        /// Frames of signal rendered: up to the end of the longest stream.
        public var frames: Int
        public var ending: Ending
        /// Errors from finishing background jobs (e.g. closing a file).
        public var finishErrors: [String]
        /// What the jobs said that is not an error (an output kept under a
        /// partial name, a decoding error skipped by `onError: "skip"`).
        public var notices: [String] = []
    }

    public let engine: Engine
    /// Frames per block; at most the engine's `maxFrames`.
    public let blockFrames: Int
    /// Whether jobs that can run on the rendering thread do
    /// (`BackgroundWorker.startOffline`); false: every job runs on a worker
    /// thread, as live (the path tests compare against).
    public var runsJobsOnRenderThread = true

    public init(engine: Engine, blockFrames: Int? = nil) {
        self.engine = engine
        self.blockFrames = min(blockFrames ?? engine.maxFrames, engine.maxFrames)
    }

    /// Renders until end of stream, `maxFrames`, or `shouldStop()`.
    /// - Parameters:
    ///   - maxFrames: stop after this many frames (nil: only at end of stream).
    ///   - progress: called between blocks with the frames rendered so far.
    /// [main-thread]
    public func run(
        maxFrames: Int? = nil,
        shouldStop: () -> Bool = { false },
        progress: (Int) -> Void = { _ in }
    ) -> Result {
        ThreadRole.check(.main)
        if runsJobsOnRenderThread { engine.worker.startOffline() } else { engine.worker.start() }
        // This thread renders the blocks: it is the audio thread for thread
        // checks while it renders one, and the thread that called `run`
        // (waiting for jobs, reporting progress, stopping) between blocks.
        let previousRole = ThreadRole.current
        let between: ThreadRole? = previousRole == .main ? nil : previousRole
        var done = 0
        var ending = Ending.endOfStream
        while true {
            if let limit = maxFrames, done >= limit { ending = .durationReached; break }
            if shouldStop() { ending = .interrupted; break }
            if engine.worker.hasFailedJob { ending = .failed; break }
            let n = min(blockFrames, (maxFrames ?? Int.max) - done)
            // A job that never gets ready must not make Ctrl-C or SIGTERM wait.
            guard engine.worker.waitUntilReady(frames: n, unless: shouldStop) else { ending = .interrupted; break }
            ThreadRole.mark(.audio)
            engine.render(frames: n)
            ThreadRole.mark(between)
            if engine.isFinished {
                done += engine.lastBlockValidFrames
                progress(done)
                ending = .endOfStream
                break
            }
            done += n
            progress(done)
        }
        engine.worker.stop()
        // A job may have failed during the last blocks, after the check above.
        if ending != .interrupted && engine.worker.hasFailedJob { ending = .failed }
        let (errors, notices) = engine.worker.finishJobs(completed: ending == .endOfStream || ending == .durationReached)
        var messages = errors.map { "\($0)" }
        if ending == .failed && messages.isEmpty { messages = ["rendering stopped: a background job failed"] }
        return Result(frames: done, ending: ending, finishErrors: messages, notices: notices)
    }
}
