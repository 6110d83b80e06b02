import AudioGraphCore
import CLilv
import CLV2Host
import Foundation
import Synchronization

// LV2's worker extension: a plugin schedules work from `run` (the audio
// thread); the engine's worker thread (the same one that feeds file
// sources) runs it; its replies reach the plugin at the start of the next
// cycle, before `run`. Requests and replies cross in two lock-free
// single-producer/single-consumer byte rings, each message a 4-byte length
// then its bytes.

/// One instance's worker rings.
///
/// Threading: `schedule` (the plugin's `schedule_work`), `deliverResponses`,
/// `endRun`: [audio-thread]; `service` and the plugin's `respond`:
/// [worker-thread]; `attach`: [main-thread & !rendering].
final class LV2WorkerChannel: @unchecked Sendable {
    static let ringBytes = 1 << 16
    /// The largest message either way.
    static let maxMessage = 1 << 14

    let requests = SPSCRing<UInt8>(minimumCapacity: ringBytes)
    let responses = SPSCRing<UInt8>(minimumCapacity: ringBytes)
    private var iface: UnsafePointer<LV2_Worker_Interface>?
    private var handle: LV2_Handle?
    /// Where a message is read into: one for each side.
    private let audioScratch = UnsafeMutableRawPointer.allocate(byteCount: maxMessage, alignment: 8)
    private let workerScratch = UnsafeMutableRawPointer.allocate(byteCount: maxMessage, alignment: 8)
    /// Requests refused because the ring was full (or too large).
    let refused = Atomic<Int>(0)
    /// Requests scheduled and not yet worked off.
    let pending = Atomic<Int>(0)

    deinit {
        audioScratch.deallocate()
        workerScratch.deallocate()
    }

    var hasWorker: Bool { iface != nil }

    func attach(_ inst: UnsafeMutablePointer<LilvInstance>) {
        handle = lilv_instance_get_handle(inst)
        iface = lilv_instance_get_extension_data(inst, LV2URI.workerInterface)?.assumingMemoryBound(to: LV2_Worker_Interface.self)
    }

    /// Writes one message to `ring`; false when it does not fit. [the ring's producer]
    @inline(__always)
    static func post(_ ring: SPSCRing<UInt8>, size: UInt32, data: UnsafeRawPointer?) -> Bool {
        let n = Int(size)
        guard n <= maxMessage, ring.writable >= 4 + n else { return false }
        var length = size
        _ = withUnsafeBytes(of: &length) { ring.write($0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 4) }
        if n > 0, let data { _ = ring.write(data.assumingMemoryBound(to: UInt8.self), count: n) }
        return true
    }

    /// Reads one message from `ring` into `into`; its size, or nil. [the ring's consumer]
    @inline(__always)
    static func take(_ ring: SPSCRing<UInt8>, into: UnsafeMutableRawPointer) -> Int? {
        guard ring.readable >= 4 else { return nil }
        var length: UInt32 = 0
        _ = withUnsafeMutableBytes(of: &length) { ring.read(into: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 4) }
        let n = Int(length)
        if n > 0 { _ = ring.read(into: into.assumingMemoryBound(to: UInt8.self), count: n) }
        return n
    }

    /// The replies of work done since the last cycle. [audio-thread]
    @inline(__always)
    func deliverResponses() {
        guard let iface, let respond = iface.pointee.work_response else { return }
        while let n = Self.take(responses, into: audioScratch) {
            _ = respond(handle, UInt32(n), audioScratch)
        }
    }

    /// [audio-thread]
    @inline(__always)
    func endRun() {
        guard let iface, let end = iface.pointee.end_run else { return }
        _ = end(handle)
    }

    /// Runs the work scheduled so far. Returns whether there was any. [worker-thread]
    func service() -> Bool {
        guard let iface, let work = iface.pointee.work else { return false }
        var did = false
        while let n = Self.take(requests, into: workerScratch) {
            did = true
            _ = work(handle, lv2Respond, Unmanaged.passUnretained(self).toOpaque(), UInt32(n), workerScratch)
            pending.subtract(1, ordering: .releasing)
        }
        return did
    }
}

/// [audio-thread] The plugin's `schedule_work`.
let lv2ScheduleWork: @convention(c) (LV2_Worker_Schedule_Handle?, UInt32, UnsafeRawPointer?) -> LV2_Worker_Status = { handle, size, data in
    guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
    let channel = Unmanaged<LV2WorkerChannel>.fromOpaque(handle).takeUnretainedValue()
    channel.pending.add(1, ordering: .relaxed)
    guard LV2WorkerChannel.post(channel.requests, size: size, data: data) else {
        channel.pending.subtract(1, ordering: .relaxed)
        channel.refused.add(1, ordering: .relaxed)
        return LV2_WORKER_ERR_NO_SPACE
    }
    return LV2_WORKER_SUCCESS
}

/// [worker-thread] The `respond` a plugin's `work` calls.
let lv2Respond: @convention(c) (LV2_Worker_Respond_Handle?, UInt32, UnsafeRawPointer?) -> LV2_Worker_Status = { handle, size, data in
    guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
    let channel = Unmanaged<LV2WorkerChannel>.fromOpaque(handle).takeUnretainedValue()
    return LV2WorkerChannel.post(channel.responses, size: size, data: data) ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
}

/// The node's work off the audio thread: the plugins' scheduled work, their
/// log messages from the audio thread, and latency changes. [worker-thread]
final class LV2Job: OnDemandJob, @unchecked Sendable {
    weak var node: LV2Node?
    /// The node's worker channels and the log its instances' logs joined,
    /// for `hasWork` (set in prepare, before rendering; unchecked
    /// exclusivity: `hasWork` runs on the audio thread every block).
    @exclusivity(unchecked) var channels: ContiguousArray<LV2WorkerChannel> = []
    @exclusivity(unchecked) var logGroup: UnsafeMutablePointer<agraph_lv2_log>?
    @exclusivity(unchecked) var latencyFlag: LV2LatencyFlag?

    /// Scheduled work, queued log messages or a latency change. [audio-thread]
    var hasWork: Bool {
        var i = 0
        while i < channels.count {
            if channels[i].pending.load(ordering: .relaxed) != 0 { return true }
            i += 1
        }
        if let logGroup, agraph_lv2_log_group_pending(logGroup) != 0 { return true }
        return latencyFlag?.changed.load(ordering: .relaxed) ?? false
    }

    func service() -> Bool {
        guard let node else { return false }
        var did = false
        for w in node.workers where w.hasWorker { did = w.service() || did }
        did = node.drainLog() || did
        if node.latencyFlag.changed.exchange(false, ordering: .acquiring) {
            node.onLatencyChange?()
            did = true
        }
        return did
    }

    /// Offline rendering waits until the work scheduled so far is done
    /// (its replies then reach the plugin at the next block, every time).
    func isReady(forFrames frames: Int) -> Bool {
        guard let node else { return true }
        return node.workers.allSatisfy { !$0.hasWorker || $0.pending.load(ordering: .acquiring) == 0 }
    }
    func finish() throws {}
}
