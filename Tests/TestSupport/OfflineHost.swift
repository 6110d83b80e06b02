import AudioGraph

/// A control host for a graph rendered offline (a `ControlSurface` over
/// it): no transport, a fixed status. [any thread]
public final class OfflineHost: ControlHost, @unchecked Sendable {
    public init() {}
    public func pause() {}
    public func play() {}
    public func status() -> GraphStatus {
        GraphStatus(seconds: 0, frames: 0, peaks: [], xruns: 0, underruns: 0, cpuLoad: 0, bufferSize: 0,
                    paused: false, finished: false, serverGone: false)
    }
}
