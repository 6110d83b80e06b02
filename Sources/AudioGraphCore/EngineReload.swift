/// How a rebuilt engine takes over steps of a running one (hot reload).
///
/// A kept step is the running engine's node object, already prepared: the
/// new engine schedules it with the output buses and the delay lines it
/// was prepared with, so it is never prepared again and its state (file
/// positions, rings, decoder state) goes on. Only a node whose whole
/// upstream is kept can be kept (its inputs are then kept buses).
public struct EngineReuse {
    /// The running engine.
    public let old: Engine
    /// For each step of the new schedule: the index in `old` of the step it
    /// keeps, or nil for a node made anew.
    public let keptFrom: [Int?]

    public init(old: Engine, keptFrom: [Int?]) {
        self.old = old
        self.keptFrom = keptFrom
    }
}

extension BusPool {
    /// Whether `bus` is one of this pool's. [any-thread]
    public func owns(_ bus: AudioBus) -> Bool {
        bus.layout >= layouts && bus.layout < layouts + max(busCount, 1)
    }
}

extension Engine {
    /// Renders only the steps `retired` marks (and the delay lines in front
    /// of them), in schedule order: during a hot reload's crossfade the old
    /// engine renders its replaced and removed nodes this way, after the new
    /// engine has rendered the kept ones (whose buses they read), so that
    /// every node renders once per cycle. Does not apply parameter changes,
    /// count frames or wake the worker. [audio-thread]
    /// - Parameter retired: one flag per step.
    public func renderRetired(frames: Int, retired: UnsafePointer<Bool>) {
        ThreadRole.check(.audio)
        let n = frames < maxFrames ? frames : maxFrames
        var p = 0
        while p < pools.count {
            pools[p].setBlockFrames(n)
            p += 1
        }
        var i = 0
        var d = 0
        while i < nodes.count {
            while d < delayLines.count && lineSteps[d] == i {
                if retired[i] { delayLines[d].render(frames: n) }
                d += 1
            }
            if retired[i] {
                if transportHeld && anyFollower && followers[i] {
                    hold(step: i, frames: n)
                } else {
                    nodes[i].render(frames: n)
                }
            }
            i += 1
        }
    }

    /// Continues the frame count of `other` (the engine this one replaces).
    /// [audio-thread | main-thread; at the swap, or on the owner thread while it swaps]
    public func continuePosition(from other: Engine) {
        ThreadRole.check(.audio, .main)
        position.store(other.framePosition, ordering: .relaxed)
    }
}

extension Engine {
    /// Writes zeros through this engine's own bus memory, so that its pages
    /// are mapped before the audio thread first touches them (a hot reload
    /// calls it before the swap; kept buses, in other pools, are not
    /// touched). [main-thread & !rendering]
    public func prefaultOwnBuses() {
        ThreadRole.check(.main)
        guard let own = pools.first else { return }
        for bus in own.buses {
            for c in 0..<bus.channels { Kernels.fill(bus.channel(c), count: bus.capacity, value: 0) }
        }
    }
}
