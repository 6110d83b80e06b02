/// Which pool bus each step output of a schedule is written to.
///
/// Without reuse, every output port of every step made anew has a bus of
/// its own. With reuse, buses are assigned by liveness in schedule order:
/// an output takes a free bus of its channel count (or a new one) when its
/// step runs, and the bus is free again once the output's last reader has
/// run, so a chain of N nodes uses two buses, and a tree as many as it has
/// outputs alive at once. The outputs of a step are taken before its
/// inputs are freed, so a node never finds its output in a bus it reads
/// (except in place, below). An output read by a sink stays alive to the
/// end of the block (the engine reads the sinks' input states after the
/// schedule); an output nobody reads is free again right after its step.
///
/// In place: a node that `processesInPlace`, with one input, whose input
/// bus has its channel count and is read by no later step (nor a sink),
/// writes its first output into that bus.
///
/// [main-thread]
struct BusPlan {
    /// Channel count of each pool bus.
    var channelCounts: [Int] = []
    /// For each step, the pool bus of each output port (empty for a kept step).
    var busOf: [[Int]]
    /// Whether a bus serves more than one output.
    var shares = false

    /// "Read until the end of the block."
    static let end = Int.max

    /// The step after which each output of each step is read no more
    /// (`end` when a sink reads it; the step itself when nobody does).
    /// Inputs that name no earlier step's output are left out (the engine
    /// refuses them).
    static func lastReads(_ steps: [Engine.Step]) -> [[Int]] {
        var last = steps.indices.map { i in Array(repeating: i, count: steps[i].outputChannelCounts.count) }
        for (j, step) in steps.enumerated() {
            let sink = step.outputChannelCounts.isEmpty
            for (k, src) in step.inputs.enumerated() where k < step.inputPorts.count {
                let port = step.inputPorts[k]
                guard src >= 0, src < j, port >= 0, port < last[src].count else { continue }
                last[src][port] = sink ? end : max(last[src][port], j)
            }
        }
        return last
    }

    init(steps: [Engine.Step], kept: [Int?], reuse: Bool) {
        busOf = steps.map { _ in [] }
        guard reuse else {
            for (i, step) in steps.enumerated() where kept[i] == nil {
                busOf[i] = step.outputChannelCounts.indices.map { channelCounts.count + $0 }
                channelCounts += step.outputChannelCounts
            }
            return
        }
        let last = Self.lastReads(steps)
        /// Free buses by channel count, most recently freed last (warm in cache).
        var free: [Int: [Int]] = [:]
        /// The step after which each bus is free again; buses to look at after each step.
        var releaseAfter: [Int] = []
        var releases: [Int: [Int]] = [:]
        func hold(_ bus: Int, until step: Int) {
            releaseAfter[bus] = step
            if step != Self.end { releases[step, default: []].append(bus) }
        }
        for (i, step) in steps.enumerated() where kept[i] == nil {
            var outs: [Int] = []
            for (p, channels) in step.outputChannelCounts.enumerated() {
                if p == 0, step.node.processesInPlace, step.inputs.count == 1, step.inputPorts.count == 1 {
                    let src = step.inputs[0], port = step.inputPorts[0]
                    if src >= 0, src < i, port >= 0, port < busOf[src].count, last[src][port] == i {
                        let bus = busOf[src][port]
                        if channelCounts[bus] == channels {
                            outs.append(bus)
                            hold(bus, until: last[i][p])
                            shares = true
                            continue
                        }
                    }
                }
                let bus: Int
                if let b = free[channels]?.popLast() {
                    bus = b
                    shares = true
                } else {
                    bus = channelCounts.count
                    channelCounts.append(channels)
                    releaseAfter.append(Self.end)
                }
                outs.append(bus)
                hold(bus, until: last[i][p])
            }
            busOf[i] = outs
            // Inputs read for the last time, and outputs nobody reads.
            if let done = releases.removeValue(forKey: i) {
                for bus in done where releaseAfter[bus] == i {
                    releaseAfter[bus] = Self.end
                    free[channelCounts[bus], default: []].append(bus)
                }
            }
        }
    }

    /// Refuses to keep (hot reload) steps of an engine that shared buses
    /// when two kept outputs of one bus would be alive at once in the new
    /// schedule: kept nodes write the buses they were prepared with.
    /// - Throws: `EngineError` naming the later step.
    static func checkKept(steps: [Engine.Step], kept: [Int?], buses: [[AudioBus]]) throws {
        let last = lastReads(steps)
        var spans: [UInt: [(start: Int, end: Int)]] = [:]
        for (i, outs) in buses.enumerated() where kept[i] != nil {
            for (p, bus) in outs.enumerated() {
                spans[UInt(bitPattern: bus.layout), default: []].append((i, p < last[i].count ? last[i][p] : i))
            }
        }
        for (_, list) in spans where list.count > 1 {
            let sorted = list.sorted { $0.start < $1.start }
            for k in 1..<sorted.count where sorted[k].start < sorted[k - 1].end && sorted[k].start != sorted[k - 1].start {
                throw EngineError(nodeID: steps[sorted[k].start].id,
                                  "cannot be kept: the running engine shares its output bus with a node still read here (rebuild it without keeping)")
            }
        }
    }
}
