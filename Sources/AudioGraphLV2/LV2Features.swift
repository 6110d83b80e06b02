import AudioGraphCore
import CLilv
import CLV2Host
import Foundation

// The host features AudioGraph gives an LV2 instance (`LV2URI.givenFeatures`):
// URID map and unmap (one table for the process), options (block length
// bounds, nominal block length, sample rate, sequence size), bounded block
// length, log (CLV2Host), worker schedule (`LV2Worker`), and the flags
// `isLive`, `hardRTCapable`, `inPlaceBroken` that need no data.

/// URIDs for the process: every instance maps through the same table.
/// [any-thread; takes a lock: plugins map URIs when they are made, not in `run`]
public final class LV2URIDTable: @unchecked Sendable {
    public static let shared = LV2URIDTable()
    private init() {}
    private let lock = NSLock()
    private var ids: [String: LV2_URID] = [:]
    /// C strings of every URI mapped, by URID − 1 (kept for the process: unmap hands them out).
    private var strings: [UnsafeMutablePointer<CChar>] = []

    public func map(_ uri: String) -> LV2_URID {
        lock.lock()
        defer { lock.unlock() }
        if let id = ids[uri] { return id }
        strings.append(strdup(uri))
        let id = LV2_URID(strings.count)
        ids[uri] = id
        return id
    }

    public func unmap(_ id: LV2_URID) -> UnsafePointer<CChar>? {
        lock.lock()
        defer { lock.unlock() }
        guard id >= 1, Int(id) <= strings.count else { return nil }
        return UnsafePointer(strings[Int(id) - 1])
    }

    /// The feature structs, made once for the process.
    public let mapFeature: UnsafeMutablePointer<LV2_URID_Map> = {
        let m = UnsafeMutablePointer<LV2_URID_Map>.allocate(capacity: 1)
        m.initialize(to: LV2_URID_Map(handle: nil, map: { _, uri in
            guard let uri else { return 0 }
            return LV2URIDTable.shared.map(String(cString: uri))
        }))
        return m
    }()

    public let unmapFeature: UnsafeMutablePointer<LV2_URID_Unmap> = {
        let m = UnsafeMutablePointer<LV2_URID_Unmap>.allocate(capacity: 1)
        m.initialize(to: LV2_URID_Unmap(handle: nil, unmap: { _, id in LV2URIDTable.shared.unmap(id) }))
        return m
    }()
}

/// The features of one instance: what `lilv_plugin_instantiate` is given.
/// The memory lives as long as the instance. [main-thread]
final class LV2FeatureSet {
    let log = UnsafeMutablePointer<agraph_lv2_log>.allocate(capacity: 1)
    let schedule = UnsafeMutablePointer<LV2_Worker_Schedule>.allocate(capacity: 1)
    /// Option values: min, max, nominal block length (Int32), sample rate (Float), sequence size (Int32).
    private let values = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
    private let options: UnsafeMutablePointer<LV2_Options_Option>
    private var uriStrings: [UnsafeMutablePointer<CChar>] = []
    private var featureStructs: [UnsafeMutablePointer<LV2_Feature>] = []
    /// NULL-terminated, for `lilv_plugin_instantiate`.
    let features: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>

    /// - Parameters:
    ///   - logSink: messages from threads other than the audio thread.
    init(sampleRate: Double, maxFrames: Int, owner: UnsafeMutableRawPointer,
         logSink: @convention(c) (UnsafeMutableRawPointer?, LV2_URID, UnsafePointer<CChar>?) -> Void,
         scheduleWork: @convention(c) (LV2_Worker_Schedule_Handle?, UInt32, UnsafeRawPointer?) -> LV2_Worker_Status) {
        let urids = LV2URIDTable.shared
        agraph_lv2_log_init(log, owner, logSink, { ThreadRole.current == .audio ? 1 : 0 })
        schedule.initialize(to: LV2_Worker_Schedule(handle: owner, schedule_work: scheduleWork))
        values.storeBytes(of: Int32(1), toByteOffset: 0, as: Int32.self)
        values.storeBytes(of: Int32(clamping: maxFrames), toByteOffset: 4, as: Int32.self)
        values.storeBytes(of: Int32(clamping: maxFrames), toByteOffset: 8, as: Int32.self)
        values.storeBytes(of: Float(sampleRate), toByteOffset: 12, as: Float.self)
        values.storeBytes(of: Int32(LV2Node.atomBufferBytes), toByteOffset: 16, as: Int32.self)
        let intType = urids.map(LV2URI.atomInt), floatType = urids.map(LV2URI.atomFloat)
        let entries: [(String, Int, LV2_URID)] = [
            (LV2URI.minBlockLength, 0, intType), (LV2URI.maxBlockLength, 4, intType),
            (LV2URI.nominalBlockLength, 8, intType), (LV2URI.sampleRate, 12, floatType),
            (LV2URI.sequenceSize, 16, intType),
        ]
        options = .allocate(capacity: entries.count + 1)
        for (i, e) in entries.enumerated() {
            options[i] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: urids.map(e.0),
                                            size: 4, type: e.2, value: UnsafeRawPointer(values + e.1))
        }
        options[entries.count] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil)

        let list: [(String, UnsafeMutableRawPointer?)] = [
            (LV2URI.uridMap, UnsafeMutableRawPointer(urids.mapFeature)),
            (LV2URI.uridUnmap, UnsafeMutableRawPointer(urids.unmapFeature)),
            (LV2URI.options, UnsafeMutableRawPointer(options)),
            (LV2URI.boundedBlockLength, nil),
            (LV2URI.log, UnsafeMutableRawPointer(log)),
            (LV2URI.workerSchedule, UnsafeMutableRawPointer(schedule)),
            (LV2URI.isLive, nil), (LV2URI.hardRTCapable, nil), (LV2URI.inPlaceBroken, nil),
        ]
        features = .allocate(capacity: list.count + 1)
        for (i, (uri, data)) in list.enumerated() {
            let s = strdup(uri)!
            uriStrings.append(s)
            let f = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
            f.initialize(to: LV2_Feature(URI: UnsafePointer(s), data: data))
            featureStructs.append(f)
            features[i] = UnsafePointer(f)
        }
        features[list.count] = nil
    }

    deinit {
        for s in uriStrings { free(s) }
        for f in featureStructs { f.deallocate() }
        features.deallocate()
        options.deallocate()
        values.deallocate()
        schedule.deallocate()
        log.deallocate()
    }
}
