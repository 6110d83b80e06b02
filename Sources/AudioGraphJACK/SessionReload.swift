import AudioGraphHost
import CJack
import Foundation
import Synchronization

/// A reload whose swap the callback has not finished yet. [owner-thread]
final class PendingReload {
    let swap: ReloadSwap
    /// Services the retired nodes' background jobs during the crossfade.
    let retiredWorker: BackgroundWorker
    let retiredJobs: [any BackgroundJob]
    let removedSlots: [Int]

    init(swap: ReloadSwap, retiredWorker: BackgroundWorker, retiredJobs: [any BackgroundJob], removedSlots: [Int]) {
        self.swap = swap
        self.retiredWorker = retiredWorker
        self.retiredJobs = retiredJobs
        self.removedSlots = removedSlots
    }
}

extension JACKSession {
    /// Hot reload, the owner thread's part: checks the new graph, works out
    /// what changed (`GraphDiff`), and either posts live parameter changes
    /// (nothing else changed) or builds the new engine around the kept
    /// nodes, registers new ports, and publishes the swap
    /// (`ReloadSwap`). Nothing of the running graph changes when it throws.
    /// [owner-thread]
    func prepareReload(_ newGraph: ValidatedGraph, crossfadeMs: Double) throws -> (GraphDiff, ReloadSwap?) {
        guard reloading == nil else { throw JACKError("reload: the previous reload's crossfade is still running; try again") }
        guard !cycle.serverGone.load(ordering: .acquiring) else { throw JACKError("reload: the JACK server is gone") }
        guard crossfadeMs >= 0, crossfadeMs <= 10_000 else { throw JACKError("reload: the crossfade must be 0…10000 ms; got \(crossfadeMs)") }
        var new = newGraph
        if new.sampleRate != graph.sampleRate {
            guard !new.sampleRateIsExplicit else {
                throw JACKError("reload: the new graph's \"sampleRate\" is \(Int(new.sampleRate)) Hz but the graph runs at \(Int(graph.sampleRate)) Hz")
            }
            switch new.revalidated(sampleRate: graph.sampleRate) {
            case .success(let g): new = g
            case .failure(let errors):
                throw JACKError("reload: at the running rate of \(Int(graph.sampleRate)) Hz the graph does not validate:\n\(errors)")
            }
        }
        try RunningGraph.checkPortNames(new)
        let diff = GraphDiff(from: graph, to: new)
        if diff.isParameterOnly {
            let next = compiled.withGraph(new)
            let changes = diff.parameterChanges + compiled.liveResets(for: diff, in: next)
            // Check every value before setting any.
            for c in changes { _ = try next.change(c.address, c.value) }
            for c in changes { try next.set(c.address, c.value) }
            graph = new
            compiled = next
            return (diff, nil)
        }

        // A file-out made anew would write the same file as the one it
        // replaces while that one still finishes.
        let replaced = Set(diff.replaced)
        if let sink = new.nodes.first(where: { $0.descriptor.typeID == "file-out" && replaced.contains($0.id) }) {
            throw JACKError("reload: the file-out '\(sink.id)' would be made anew (it or a node feeding it changed) and write its file again; give it another id and path, or stop and run again")
        }
        let old = compiled
        let oldEngine = old.engine
        let leaving = Set(graph.nodes.map(\.id)).subtracting(diff.kept)
        let saved = binder.beginReload(replacing: leaving)
        let next: CompiledGraph
        do {
            next = try GraphCompiler.compile(new, maxFrames: cycle.maxFrames, live: true, keeping: (old, diff.kept))
            binder.endReload(restoring: nil)
        } catch {
            binder.endReload(restoring: saved)
            throw error
        }
        // The new nodes' jobs get their first period ready before anything
        // is committed, on a worker of their own (the kept ones stay on the
        // running graph's): when they are not ready within
        // `options.readyTimeout`, or a stop is asked for, the reload is
        // refused and the running graph plays on.
        let running = Set(oldEngine.ids.compactMap { oldEngine.node($0)?.backgroundJob.map { ObjectIdentifier($0) } })
        let fresh = next.engine.ids.compactMap { next.engine.node($0)?.backgroundJob }
            .filter { !running.contains(ObjectIdentifier($0)) }
        if !fresh.isEmpty {
            let frames = cycle.bufferSize.load(ordering: .relaxed)
            for job in fresh { (job as? FillTargeting)?.setTargetFill(frames: frames + options.extraFill) }
            let warmup = BackgroundWorker(jobs: fresh)
            warmup.start()
            let problem = waitForJobs(warmup, of: next.engine, frames: frames)
            warmup.stop()
            if let problem {
                for job in fresh { _ = try? job.finish(completed: false) }
                binder.endReload(restoring: saved)
                throw JACKError("reload: \(problem)")
            }
        }
        // The transport's followers in the new graph; the first one needs
        // the transport (and its driver's thread).
        let nextFollowers = Self.transportFollowers(new, next.engine, mode: options.transport)
        if !nextFollowers.isEmpty {
            do { try makeTransport() } catch {
                binder.endReload(restoring: saved)
                throw error
            }
        }
        // Slots of leaving nodes no new node took over.
        let removed = saved.indices.filter { !saved[$0].removed && leaving.contains(saved[$0].nodeID) && !binder.reused.contains($0) }
        // New slots: register (and connect, below) before the swap.
        var ports = jackPorts
        var registered: [OpaquePointer] = []
        do {
            for slot in saved.count ..< binder.ports.count {
                let p = binder.ports[slot]
                let port = try client.registerPort(p.name, isInput: p.isInput)
                registered.append(port)
                client.setProperty(port, key: RunningGraph.prettyNameKey, value: p.prettyName)
                client.setProperty(port, key: RunningGraph.layoutKey, value: p.layout.rawValue)
                ports.append(port)
            }
        } catch {
            for p in registered { client.unregister(p) }
            binder.endReload(restoring: saved)
            throw error
        }
        for (i, p) in binder.ports.enumerated() where i < saved.count && binder.reused.contains(i) {
            if let port = ports[i] {
                client.setProperty(port, key: RunningGraph.prettyNameKey, value: p.prettyName)
                client.setProperty(port, key: RunningGraph.layoutKey, value: p.layout.rawValue)
            }
        }
        for c in diff.parameterChanges + old.liveResets(for: diff, in: next) { try? next.set(c.address, c.value) }

        // Fade slots: output ports written by a jack-out that is not kept, in either graph.
        var fade = Set<Int>()
        for (i, p) in binder.ports.enumerated() where !p.isInput && !p.removed && !diff.kept.contains(p.nodeID) && i < ports.count {
            fade.insert(i)
        }
        for i in removed where !saved[i].isInput { fade.insert(i) }
        let outputs = binder.ports.indices.filter { !binder.ports[$0].isInput && !binder.ports[$0].removed }
        let retired = oldEngine.ids.map { !diff.kept.contains($0) }
        let retiredJobs = oldEngine.ids.enumerated().compactMap { i, id in retired[i] ? oldEngine.node(id)?.backgroundJob : nil }
        let fadeFrames = Int((crossfadeMs / 1000 * graph.sampleRate).rounded())
        // The transport's followers in the new graph. Kept followers are
        // where the transport is; a new one starts at its beginning, so
        // then all are located again, as for a locate.
        next.engine.setTransportFollowers(Set(nextFollowers.map(\.id)))
        let (transport, relocate) = follow(nextFollowers, kept: diff.kept)
        let swap = ReloadSwap(engine: next.engine, old: oldEngine, retired: retired, fadeSlots: fade.sorted(),
                              fadeFrames: fadeFrames, ports: ports, outputSlots: outputs, removedSlots: removed,
                              transport: transport, relocateFollowers: relocate)

        next.engine.prefaultOwnBuses()
        next.engine.useRenderThreads(renderThreads)
        // Workers: the kept jobs move to the new engine's worker; the retired
        // ones get their own until the fade is over.
        oldEngine.worker.stop()
        let retiredWorker = BackgroundWorker(jobs: retiredJobs)
        retiredWorker.start()
        graph = new
        compiled = next
        setTargetFill(bufferSize: cycle.bufferSize.load(ordering: .relaxed))
        next.engine.worker.start()
        // Bounded: the new jobs were ready just before, and the kept ones
        // were running; past the commit the swap goes ahead either way.
        _ = waitForJobs(next.engine.worker, of: next.engine, frames: cycle.bufferSize.load(ordering: .relaxed))
        publishFollowers()
        jackPorts = ports
        // Route-aware new nodes learn their route before their first block.
        for id in leaving.union(diff.added) { nodeRoutes[id] = nil }
        updateRoute(connectionsBySlot())
        next.engine.continuePosition(from: oldEngine)
        // New ports with `connect` patterns, connected before the swap so
        // that their fade-in is heard from its start (until the swap they
        // carry JACK's cleared buffers).
        let planned = plannedConnections().filter { $0.key >= saved.count }
        try? connect(planned)
        reloading = PendingReload(swap: swap, retiredWorker: retiredWorker, retiredJobs: retiredJobs, removedSlots: removed)
        cycle.pendingSwap.store(Unmanaged.passUnretained(swap).toOpaque(), ordering: .releasing)
        return (diff, swap)
    }

    /// After the callback finished a swap's crossfade: unregisters the
    /// ports given up, finishes the retired nodes' jobs, releases the old
    /// engine, publishes the new latency plan. [owner-thread]
    func finishReloadIfDone() {
        guard let r = reloading, r.swap.done.load(ordering: .acquiring) else { return }
        reloading = nil
        r.retiredWorker.stop()
        for job in r.retiredJobs { _ = try? job.finish(completed: false) }
        for slot in r.removedSlots {
            if let port = jackPorts[slot] {
                client.removeProperties(port)
                client.unregister(port)
            }
            jackPorts[slot] = nil
        }
        binder.markRemoved(r.removedSlots)
        r.swap.old = nil
        latencyChanged()
        onReloaded?()
    }
}
