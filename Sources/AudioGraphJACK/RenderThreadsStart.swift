import AudioGraphHost
import CJack

extension JACKSession {
    /// The helper threads that render `engine`'s independent branches beside
    /// JACK's process thread, as `setting` asks (`agraph run --threads`, else
    /// the graph's `"threads"`): N − 1 helpers for N; for `auto`, one per
    /// independent branch beyond the first, up to the number of CPUs, and
    /// none for a graph without two branches or a machine with one CPU.
    /// Started before the client is activated, at the client's real-time
    /// priority (that of JACK's process thread) when the server runs real
    /// time; nil for one thread. The engine renders on them from here on.
    /// [owner-thread]
    static func startRenderThreads(_ setting: GraphThreads, engine: Engine,
                                   client: JACKClient) throws -> RenderThreads? {
        let count = setting.resolved(branches: setting == .auto ? engine.independentBranches : 0,
                                     processors: RenderThreads.processorCount)
        guard count > 1 else { return nil }
        let priority: Int32? = jack_is_realtime(client.handle) != 0
            ? Int32(jack_client_real_time_priority(client.handle)) : nil
        let threads: RenderThreads
        do {
            threads = try RenderThreads(helpers: count - 1, realtimePriority: priority.flatMap { $0 > 0 ? $0 : nil })
        } catch {
            throw JACKError("\(error)")
        }
        engine.useRenderThreads(threads)
        return threads
    }
}
