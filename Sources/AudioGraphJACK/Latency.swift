import AudioGraphHost
import CJack
import Synchronization

/// What JACK's latency callback needs, worked out on the owner thread from
/// the engine's latencies and published whole: the callback only reads it
/// and the ports' ranges, never a node.
struct LatencyPlan: @unchecked Sendable {
    /// A graph output port: its capture latency is `own` plus the largest
    /// capture latency of the `feeders` (the jack-in ports whose signal
    /// reaches it).
    struct Output {
        var port: OpaquePointer
        var own: UInt32
        var feeders: [OpaquePointer]
    }

    /// A graph input port: its playback latency is the largest of the
    /// playback latency of each port it reaches plus the delay on the way.
    struct Input {
        var port: OpaquePointer
        var reaches: [(port: OpaquePointer, own: UInt32)]
    }

    var outputs: [Output] = []
    var inputs: [Input] = []

    /// The plan for `ports` (JACK handles by binder slot). Latencies are
    /// the engine's aligned totals: where paths meet, the shorter ones are
    /// delayed to the longest, so a jack-in's delay to a jack-out is the
    /// difference of their steps' latencies. [owner-thread]
    init(engine: Engine, binder: JACKPortBinder, ports: [OpaquePointer?]) {
        guard ports.count == binder.ports.count else { return }
        let latencies = engine.latencies
        var step: [String: Int] = [:]
        for (i, id) in engine.ids.enumerated() { step[id] = i }
        // Each jack-out's upstream steps, walked once per node (not once
        // per pair of ports: a graph may have many ports and many nodes).
        var upstreamOf: [Int: Set<Int>] = [:]
        func upstream(_ s: Int) -> Set<Int> {
            if let known = upstreamOf[s] { return known }
            var seen: Set<Int> = [], stack = [s]
            while let x = stack.popLast() {
                for u in engine.inputIndices[x] where !seen.contains(u) { seen.insert(u); stack.append(u) }
            }
            upstreamOf[s] = seen
            return seen
        }
        let slots = binder.ports.indices
        let inSlots = slots.filter { binder.ports[$0].isInput }
        let outSlots = slots.filter { !binder.ports[$0].isInput }
        /// The latency at a jack-out's input.
        func feedLatency(_ out: Int) -> Int? {
            guard let s = step[binder.ports[out].nodeID], let feed = engine.inputIndices[s].first else { return nil }
            return latencies[feed]
        }
        for o in outSlots {
            guard let s = step[binder.ports[o].nodeID], let at = feedLatency(o) else { continue }
            let above = upstream(s)
            let feeders = inSlots.filter { i in step[binder.ports[i].nodeID].map(above.contains) ?? false }
            // From a jack-in: the delay after it; from the graph's own sources: all of it.
            let from = feeders.compactMap { step[binder.ports[$0].nodeID].map { latencies[$0] } }.min() ?? 0
            guard let port = ports[o] else { continue }
            outputs.append(Output(port: port, own: UInt32(clamping: max(at - from, 0)), feeders: feeders.compactMap { ports[$0] }))
        }
        for i in inSlots {
            guard let inStep = step[binder.ports[i].nodeID] else { continue }
            var reaches: [(port: OpaquePointer, own: UInt32)] = []
            for o in outSlots {
                guard let s = step[binder.ports[o].nodeID], let at = feedLatency(o), upstream(s).contains(inStep) else { continue }
                guard let port = ports[o] else { continue }
                reaches.append((port, UInt32(clamping: max(at - latencies[inStep], 0))))
            }
            if let port = ports[i] { inputs.append(Input(port: port, reaches: reaches)) }
        }
    }

    init() {}
}

/// Holds the published `LatencyPlan`; JACK's latency callback reads it.
final class LatencyPublisher: @unchecked Sendable {
    private let plan = Locked(LatencyPlan())

    /// Replaces the plan. [owner-thread]
    func publish(_ new: LatencyPlan) { plan.withLock { $0 = new } }

    /// Sets our ports' latency ranges for `mode` from the plan and the
    /// ranges JACK holds for the ports around them. Reads the plan under
    /// the lock `publish` replaces it under: the old plan is freed only
    /// after a report that reads it is done (a copy taken out of the lock
    /// would be ordered by Swift's reference counts alone, which
    /// ThreadSanitizer cannot see in the uninstrumented runtime).
    /// [any-thread; JACK's notification thread, not the process thread]
    func report(mode: jack_latency_callback_mode_t) {
        plan.withLock { p in Self.report(p, mode: mode) }
    }

    private static func report(_ p: LatencyPlan, mode: jack_latency_callback_mode_t) {
        if mode == JackCaptureLatency {
            for o in p.outputs {
                var r = jack_latency_range_t(min: 0, max: 0)
                for f in o.feeders {
                    var fr = jack_latency_range_t()
                    jack_port_get_latency_range(f, JackCaptureLatency, &fr)
                    r.min = max(r.min, fr.min)
                    r.max = max(r.max, fr.max)
                }
                r.min += o.own
                r.max += o.own
                jack_port_set_latency_range(o.port, JackCaptureLatency, &r)
            }
        } else {
            for i in p.inputs {
                var r = jack_latency_range_t(min: 0, max: 0)
                for (port, own) in i.reaches {
                    var out = jack_latency_range_t()
                    jack_port_get_latency_range(port, JackPlaybackLatency, &out)
                    r.min = max(r.min, out.min + own)
                    r.max = max(r.max, out.max + own)
                }
                jack_port_set_latency_range(i.port, JackPlaybackLatency, &r)
            }
        }
    }
}
