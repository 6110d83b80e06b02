import AudioGraphCore
import AudioGraphNodeAPI
import CMySOFA
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One SOFA HRTF set (AES69 SimpleFreeFieldHRIR) read by libmysofa, used
/// at one sample rate, with the `binaural` node's normalisation.
///
/// Opened as libmysofa's "easy" API opens a set, minus its loudness
/// normalisation and its resampling of the whole set: `mysofa_load`,
/// `mysofa_check`, `mysofa_tocartesian`, `mysofa_lookup_init` and
/// `mysofa_neighborhood_init_withstepdefine` (0.5°, 0.01 m, libmysofa's
/// defaults). A direction's responses come from `mysofa_lookup`,
/// `mysofa_neighborhood` and `mysofa_interpolate`, as
/// `mysofa_getfilter_float` (interpolated) and
/// `mysofa_getfilter_float_nointerp` (the nearest measurement's data
/// exactly) do.
///
/// When `sampleRate` differs from the set's own, the responses taken are
/// resampled by libmysofa's `mysofa_resample` (its Speex resampler,
/// quality 10, `Data.Delay` scaled by the same factor), one response pair
/// at a time as they are needed, each exactly as `mysofa_open` at that
/// rate would have resampled it; the nearest measurements' are kept.
/// (Resampling the whole set when it opens, as `mysofa_open` does, takes
/// half a second for MIT KEMAR at 48 kHz; a renderer uses a few responses.)
/// A renderer that interpolates while the head turns (live, `interpolate`)
/// has the whole set resampled in the background
/// (`startResamplingWholeSet`); from then on directions are interpolated
/// at the graph's rate, as `mysofa_open` at that rate then
/// `mysofa_getfilter_float` would, which needs no resampling per query.
///
/// Directions are SOFA's: azimuth in degrees counter-clockwise from the
/// front (positive to the left), elevation in degrees up from the
/// horizontal plane. A direction is looked up at the set's largest
/// measured distance.
///
/// Threading: [any-thread]. The queries share scratch memory and the
/// cache, so they take a lock: call them from the main or a worker thread,
/// never the audio thread.
public final class HRTFSet: @unchecked Sendable {
    /// The file, as opened (absolute).
    public let path: String
    /// The rate the responses are given at (the graph's).
    public let sampleRate: Double
    /// The rate the set was measured at (`Data.SamplingRate`).
    public let fileSampleRate: Double
    /// Samples per impulse response, at `sampleRate`.
    public let filterLength: Int
    /// Measurements in the set.
    public let measurements: Int
    /// The largest `Data.Delay` of the set, in whole samples at
    /// `sampleRate` (0 for sets without delays, such as MIT KEMAR).
    public let maximumDelay: Int
    /// The one gain applied to every impulse response of the set:
    /// g = 1 / √((E_L + E_R) / 2), where E_L and E_R are the energies (sums
    /// of squared samples) of the left and right impulse responses of the
    /// measurement nearest to the front (azimuth 0°, elevation 0°), at
    /// `sampleRate`. A source in front thus reaches each ear with unit
    /// energy gain, on average over the two ears.
    public let gain: Float
    /// The measurement `gain` was taken from.
    public let frontMeasurement: Int

    private let hrtf: UnsafeMutablePointer<MYSOFA_HRTF>
    private let lookup: UnsafeMutablePointer<MYSOFA_LOOKUP>
    private let neighborhood: UnsafeMutablePointer<MYSOFA_NEIGHBORHOOD>
    /// libmysofa's interpolation output, 2 × the file's length.
    private let scratch: UnsafeMutablePointer<Float>
    /// Samples per response in the file.
    private let fileLength: Int
    /// The distance directions are looked up at.
    private let radius: Float
    /// What the queries share, behind `lock`.
    private struct Cache {
        /// Per measurement taken nearest: its two responses at `sampleRate`
        /// (left then right, unscaled).
        var nearest: [Int: [Float]] = [:]
        /// The whole set at `sampleRate`, once resampled: the file's set
        /// with every response resampled (`DataIR` and `N` replaced;
        /// positions and delays shared with `hrtf`), and its interpolation
        /// output (2 × `filterLength`).
        var atRate: (set: UnsafeMutablePointer<MYSOFA_HRTF>, values: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>)?
    }
    private let lock = Locked<Cache>(Cache())
    /// `startResamplingWholeSet` was called. [any-thread]
    private let wholeSetStarted = Atomic<Bool>(false)

    /// Opens `path` for use at `sampleRate`, outside the cache (`HRTFSets`
    /// opens through it; the SOFA fuzz target calls it directly).
    /// [main-thread | worker-thread]
    /// libmysofa reads the file first in `agraph-sofa-check`, a process of
    /// its own bounded in time and memory (`SOFACheck`, up to 5 s), and
    /// here only when that succeeded.
    /// - Throws: `HRTFSetError` with libmysofa's reason (or that it did not
    ///   finish, or crashed, in the checker), or the limit of `HRTFLimits`
    ///   the file passes.
    public init(path: String, sampleRate: Double) throws(HRTFSetError) {
        ThreadRole.check(.main, .worker)
        self.path = path
        self.sampleRate = sampleRate
        if let problem = FileChecks.readableFileProblem(path) { throw HRTFSetError(path: path, reason: problem) }
        guard sampleRate >= 8000, sampleRate.isFinite else {
            throw HRTFSetError(path: path, reason: "libmysofa resamples HRTFs to rates of 8000 Hz or more; the graph runs at \(HRTFLimits.hertz(sampleRate))")
        }
        // libmysofa reads it in a bounded process of its own first (SOFACheck):
        // a file that keeps it busy, exhausts memory or crashes it costs that one.
        if let problem = SOFACheck.problem(path: path) { throw HRTFSetError(path: path, reason: problem) }
        // libmysofa is loaded the first time a graph needs it (CLazyLibs).
        if let missing = LazyLibrary.require(.mysofa, for: "reading a SOFA file") { throw HRTFSetError(path: path, reason: missing) }
        var err: Int32 = 0
        guard let loaded = mysofa_load(path, &err) else {
            throw HRTFSetError(path: path, reason: "libmysofa: " + Self.describe(err))
        }
        err = mysofa_check(loaded)
        guard err == 0 else {
            mysofa_free(loaded)
            throw HRTFSetError(path: path, reason: "libmysofa: " + Self.describe(err))
        }
        let h = loaded.pointee
        guard h.R == 2, h.N > 0, h.M > 0, h.C == 3, h.DataSamplingRate.elements == 1, let rate = h.DataSamplingRate.values,
              UInt64(h.DataIR.elements) == UInt64(h.R) * UInt64(h.M) * UInt64(h.N), h.DataIR.values != nil else {
            mysofa_free(loaded)
            throw HRTFSetError(path: path, reason: "libmysofa read it, but it is not one set of two-ear impulse responses at one rate (SimpleFreeFieldHRIR)")
        }
        // libmysofa's interpolation reads Data.Delay without checking it: one
        // pair for every measurement (M×R) or one for all (I×R), as SOFA's
        // SimpleFreeFieldHRIR requires. A set without it (mysofa_check lets
        // one through) or of another size would crash agraph at its first query.
        let delays = UInt64(h.DataDelay.elements)
        guard h.DataDelay.values != nil, delays == UInt64(h.R) || delays == UInt64(h.R) * UInt64(h.M) else {
            mysofa_free(loaded)
            throw HRTFSetError(path: path, reason: h.DataDelay.values == nil
                ? "it has no Data.Delay (SimpleFreeFieldHRIR requires one: a pair of delays for every measurement or one for all)"
                : "its Data.Delay holds \(delays) values; SimpleFreeFieldHRIR requires \(h.R) (one pair for all measurements) or \(UInt64(h.R) * UInt64(h.M)) (one pair per measurement)")
        }
        // Read before anything can free the set: every message below names it.
        let declaredRate = Double(rate[0])
        if let problem = HRTFLimits.problem(fileRate: declaredRate, taps: Int(h.N), measurements: Int(h.M),
                                            graphRate: sampleRate) {
            mysofa_free(loaded)
            throw HRTFSetError(path: path, reason: problem)
        }
        mysofa_tocartesian(loaded)
        guard loaded.pointee.SourcePosition.elements == h.C * h.M, let look = mysofa_lookup_init(loaded) else {
            mysofa_free(loaded)
            throw HRTFSetError(path: path, reason: "libmysofa: its source positions cannot be searched (MYSOFA_INVALID_FORMAT)")
        }
        guard let near = mysofa_neighborhood_init_withstepdefine(loaded, look, 0.5, 0.01) else {
            mysofa_lookup_free(look)
            mysofa_free(loaded)
            throw HRTFSetError(path: path, reason: "libmysofa: cannot find the measurements' neighbours (MYSOFA_NO_MEMORY)")
        }
        hrtf = loaded
        lookup = look
        neighborhood = near
        fileSampleRate = declaredRate
        fileLength = Int(h.N)
        measurements = Int(h.M)
        radius = look.pointee.radius_max
        scratch = .allocate(capacity: 2 * fileLength)
        scratch.initialize(repeating: 0, count: 2 * fileLength)
        // The front measurement, at the graph's rate: the normalisation and
        // the responses' length there.
        var c: [Float] = [0, 0, radius]
        mysofa_s2c(&c)
        let front = Int(mysofa_lookup(look, &c))
        frontMeasurement = front
        var maxDelay = 0
        let factor = sampleRate / declaredRate
        if let values = h.DataDelay.values {
            for i in 0..<Int(h.DataDelay.elements) {
                // Clamped before it becomes an Int: a delay of 1e30 samples is finite too.
                let d = (Double(values[i]) * factor).rounded()
                if d.isFinite, d > 0 { maxDelay = max(maxDelay, Int(min(d, Double(HRTFLimits.maximumDelay)))) }
            }
        }
        maximumDelay = min(maxDelay, HRTFLimits.maximumDelay)
        guard front >= 0, front < measurements,
              let frontResponses = Self.resample(h.DataIR.values + front * 2 * fileLength, length: fileLength,
                                                 from: rate[0], to: Float(sampleRate)) else {
            mysofa_neighborhood_free(near)
            mysofa_lookup_free(look)
            mysofa_free(loaded)
            scratch.deallocate()
            throw HRTFSetError(path: path, reason: "libmysofa could not resample it from \(HRTFLimits.hertz(declaredRate)) to \(HRTFLimits.hertz(sampleRate))")
        }
        filterLength = frontResponses.count / 2
        let energy = frontResponses.reduce(0.0) { $0 + Double($1) * Double($1) }
        guard energy > 0, energy.isFinite else {
            mysofa_neighborhood_free(near)
            mysofa_lookup_free(look)
            mysofa_free(loaded)
            scratch.deallocate()
            throw HRTFSetError(path: path, reason: "the impulse responses nearest the front (measurement \(front)) are silent; the set cannot be normalised")
        }
        gain = Float(1 / (energy / 2).squareRoot())
        lock.withLock { $0.nearest[front] = frontResponses }
    }

    deinit {
        lock.withLock { cache in
            if let a = cache.atRate {
                a.set.deallocate()
                a.values.deallocate()
                a.scratch.deallocate()
            }
        }
        mysofa_neighborhood_free(neighborhood)
        mysofa_lookup_free(lookup)
        mysofa_free(hrtf)
        scratch.deallocate()
    }

    /// A response pair (left then right, `length` samples each) at `to` Hz,
    /// by libmysofa's `mysofa_resample` on a set of this one measurement:
    /// the same resampler and procedure as for a whole set. nil when
    /// libmysofa refuses. [main-thread | worker-thread | owner-thread | control-thread]
    static func resample(_ pair: UnsafePointer<Float>, length: Int, from: Float, to: Float) -> [Float]? {
        resample(pairs: pair, count: 1, length: length, from: from, to: to)
    }

    /// `count` pairs of responses (left, right; `length` samples each, one
    /// after another) resampled in one libmysofa call: its resampler is set
    /// up once (the sinc table is most of the cost of one pair), then reset
    /// before each response, so each comes out as it would alone. The
    /// pairs at the new rate, one after another. [any-thread]
    static func resample(pairs: UnsafePointer<Float>, count: Int, length: Int, from: Float, to: Float) -> [Float]? {
        let values = 2 * count * length
        if from == to { return Array(UnsafeBufferPointer(start: pairs, count: values)) }
        // mysofa_resample frees DataIR.values and puts a malloc'd array in
        // its place: hand it malloc'd memory and free what it returns.
        guard count > 0, let raw = malloc(values * MemoryLayout<Float>.size) else { return nil }
        let ir = raw.bindMemory(to: Float.self, capacity: values)
        ir.update(from: pairs, count: values)
        var rate = from
        return withUnsafeMutablePointer(to: &rate) { ratePointer -> [Float]? in
            var set = MYSOFA_HRTF()
            set.I = 1
            set.C = 3
            set.R = 2
            set.E = 1
            set.N = UInt32(length)
            set.M = UInt32(count)
            set.DataSamplingRate.values = ratePointer
            set.DataSamplingRate.elements = 1
            set.DataIR.values = ir
            set.DataIR.elements = UInt32(values)
            let rc = mysofa_resample(&set, to)
            defer { free(set.DataIR.values) }
            guard rc == 0, let out = set.DataIR.values, set.N > 0, set.DataIR.elements == 2 * UInt32(count) * set.N else { return nil }
            return Array(UnsafeBufferPointer(start: out, count: Int(set.DataIR.elements)))
        }
    }

    /// The impulse responses for the direction (`azimuth`, `elevation`) in
    /// degrees, SOFA's convention, at `sampleRate`, each scaled by `gain`:
    /// the nearest measurement's (`interpolate` false: its data exactly,
    /// as `mysofa_getfilter_float_nointerp`), or libmysofa's interpolation
    /// between the nearest measurement and its neighbours (as
    /// `mysofa_getfilter_float`). `left` and `right` hold `filterLength`
    /// samples. Returns the delays (`Data.Delay`, at `sampleRate`) rounded
    /// to whole samples (negative ones as 0) and the nearest measurement.
    /// [main-thread | worker-thread; takes a lock]
    public func filter(azimuth: Double, elevation: Double, interpolate: Bool,
                       left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) -> (left: Int, right: Int, measurement: Int) {
        ThreadRole.check(.main, .worker)
        var delays: (Float, Float) = (0, 0)
        var nearest = -1
        let n = filterLength
        lock.withLock { cache in
            if let whole = cache.atRate {
                // Interpolated (or taken) at the graph's rate already.
                guard let found = interpolated(in: whole.set, azimuth: azimuth, elevation: elevation, atNearest: !interpolate,
                                               fir: whole.scratch, length: n) else {
                    Kernels.fill(left, count: n, value: 0)
                    Kernels.fill(right, count: n, value: 0)
                    return
                }
                (nearest, delays) = (found.measurement, found.delays)
                Kernels.copy(whole.scratch, to: left, count: n)
                Kernels.copy(whole.scratch + n, to: right, count: n)
                return
            }
            guard let found = interpolated(in: hrtf, azimuth: azimuth, elevation: elevation, atNearest: !interpolate,
                                           fir: scratch, length: fileLength) else {
                Kernels.fill(left, count: n, value: 0)
                Kernels.fill(right, count: n, value: 0)
                return
            }
            (nearest, delays) = (found.measurement, found.delays)
            let resampled: [Float]?
            if !interpolate, let kept = cache.nearest[nearest] {
                resampled = kept
            } else {
                resampled = Self.resample(scratch, length: fileLength, from: Float(fileSampleRate), to: Float(sampleRate))
                if !interpolate { cache.nearest[nearest] = resampled }
            }
            resampled.map { r in
                r.withUnsafeBufferPointer { b in
                    guard let base = b.baseAddress, b.count == 2 * n else { return }
                    Kernels.copy(base, to: left, count: n)
                    Kernels.copy(base + n, to: right, count: n)
                }
            }
            if resampled?.count != 2 * n {
                Kernels.fill(left, count: n, value: 0)
                Kernels.fill(right, count: n, value: 0)
            }
        }
        Kernels.scale(left, count: n, gain: gain)
        Kernels.scale(right, count: n, gain: gain)
        return (wholeSamples(delays.0), wholeSamples(delays.1), nearest)
    }

    /// The direction's pair of responses in `set` (`hrtf`, at the file's
    /// rate, or the whole set at the graph's; `length` samples each):
    /// libmysofa's interpolation between the nearest measurement and its
    /// neighbours, or with `atNearest` the nearest's own data, as
    /// `mysofa_getfilter_float_nointerp`, written to `fir` (2 × `length`);
    /// its delays (file rate) and the nearest measurement; nil when no
    /// measurement is found. [under `lock`]
    private func interpolated(in set: UnsafeMutablePointer<MYSOFA_HRTF>, azimuth: Double, elevation: Double, atNearest: Bool,
                              fir: UnsafeMutablePointer<Float>, length: Int) -> (delays: (Float, Float), measurement: Int)? {
        var c: [Float] = [Float(azimuth), Float(elevation), radius]
        mysofa_s2c(&c)
        var q = c
        let nearest = Int(mysofa_lookup(lookup, &q))
        guard nearest >= 0, nearest < measurements, let neighbours = mysofa_neighborhood(neighborhood, Int32(nearest)) else { return nil }
        if atNearest {
            // At the nearest measurement's own position libmysofa returns its data.
            for k in 0..<3 { c[k] = hrtf.pointee.SourcePosition.values[nearest * 3 + k] }
        }
        var delays: [Float] = [0, 0]
        guard let response = mysofa_interpolate(set, &c, Int32(nearest), neighbours, fir, &delays) else { return nil }
        if response != fir { fir.update(from: response, count: 2 * length) }
        return ((delays[0], delays[1]), nearest)
    }

    /// Resamples every measurement to `sampleRate` on a thread of its own,
    /// at the lowest priority (once per set; nothing when the rates
    /// match), after which queries interpolate at the graph's rate. For
    /// renderers that interpolate while the head turns, so that a new
    /// filter set needs no resampling.
    /// [main-thread | worker-thread]
    public func startResamplingWholeSet() {
        ThreadRole.check(.main, .worker)
        guard sampleRate != fileSampleRate, !wholeSetStarted.exchange(true, ordering: .relaxed) else { return }
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = ThreadSignals.blockedInNewThreads {
            pthread_create(&thread, nil, { raw in
                guard let raw else { return nil }
                // The lowest priority (Linux nice values are per thread): the
                // audio and the worker threads come first.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
                Unmanaged<HRTFSet>.fromOpaque(raw).takeRetainedValue().resampleWholeSet()
                return nil
            }, box.toOpaque())
        }
        if rc == 0 {
            pthread_detach(thread)
        } else {
            box.release()
            wholeSetStarted.store(false, ordering: .relaxed)
        }
    }

    /// Resamples every measurement to `sampleRate` now, as `mysofa_open`
    /// at that rate does (about half a second for MIT KEMAR at 48 kHz), and
    /// makes the queries use it. [main-thread | worker-thread | owner-thread | control-thread]
    public func resampleWholeSet() {
        ThreadRole.check(.main, .worker, .control)
        guard sampleRate != fileSampleRate, !isResampledWhole, let data = hrtf.pointee.DataIR.values,
              let all = Self.resample(pairs: data, count: measurements, length: fileLength,
                                      from: Float(fileSampleRate), to: Float(sampleRate)),
              all.count == measurements * 2 * filterLength else { return }
        let values = UnsafeMutablePointer<Float>.allocate(capacity: all.count)
        all.withUnsafeBufferPointer { values.initialize(from: $0.baseAddress!, count: all.count) }
        let set = UnsafeMutablePointer<MYSOFA_HRTF>.allocate(capacity: 1)
        set.initialize(to: hrtf.pointee)
        set.pointee.N = UInt32(filterLength)
        set.pointee.DataIR.values = values
        set.pointee.DataIR.elements = UInt32(all.count)
        let fir = UnsafeMutablePointer<Float>.allocate(capacity: 2 * filterLength)
        fir.initialize(repeating: 0, count: 2 * filterLength)
        let installed = lock.withLock { cache -> Bool in
            guard cache.atRate == nil else { return false }
            cache.atRate = (set, values, fir)
            return true
        }
        if !installed {
            set.deallocate()
            values.deallocate()
            fir.deallocate()
        }
    }

    /// Queries interpolate at the graph's rate (`resampleWholeSet` done).
    /// [main-thread | worker-thread | owner-thread | control-thread]
    public var isResampledWhole: Bool { ThreadRole.check(.main, .worker, .control); return lock.withLock { $0.atRate != nil } }

    /// A delay in samples at the file's rate as whole samples at
    /// `sampleRate` (negative or unknown: 0). [any-thread]
    private func wholeSamples(_ d: Float) -> Int {
        let samples = (Double(d) * sampleRate / fileSampleRate).rounded()
        return samples.isFinite && samples > 0 ? Int(min(samples, Double(maximumDelay))) : 0
    }

    /// One direction's responses at `sampleRate`, as `filter` gives them.
    public struct Responses: Sendable {
        public var left: [Float]
        public var right: [Float]
        public var delays: (left: Int, right: Int)
        public var measurement: Int
    }

    /// The responses for several directions at once (a head rotation's
    /// whole set of channels): each as `filter` gives it, but with
    /// `interpolate` the interpolated responses are resampled together in
    /// one libmysofa call, which sets its resampler up once instead of once
    /// per direction (about a fifth less time for 7.1 at 48 kHz from a
    /// 44.1 kHz set); once the whole set is resampled
    /// (`resampleWholeSet`), none is. [main-thread | worker-thread; takes a lock]
    public func filters(for directions: [(azimuth: Double, elevation: Double)], interpolate: Bool) -> [Responses] {
        ThreadRole.check(.main, .worker)
        let n = filterLength
        guard interpolate, !directions.isEmpty, !isResampledWhole else {
            let left = UnsafeMutablePointer<Float>.allocate(capacity: n), right = UnsafeMutablePointer<Float>.allocate(capacity: n)
            defer { left.deallocate(); right.deallocate() }
            return directions.map { d in
                let r = filter(azimuth: d.azimuth, elevation: d.elevation, interpolate: interpolate, left: left, right: right)
                return Responses(left: Array(UnsafeBufferPointer(start: left, count: n)), right: Array(UnsafeBufferPointer(start: right, count: n)),
                                 delays: (r.left, r.right), measurement: r.measurement)
            }
        }
        let pair = 2 * fileLength
        let pairs = UnsafeMutablePointer<Float>.allocate(capacity: directions.count * pair)
        defer { pairs.deallocate() }
        pairs.initialize(repeating: 0, count: directions.count * pair)
        var found = [(delays: (Float, Float), measurement: Int)?](repeating: nil, count: directions.count)
        let resampled: [Float]? = lock.withLock { _ -> [Float]? in
            for (i, d) in directions.enumerated() {
                found[i] = interpolated(in: hrtf, azimuth: d.azimuth, elevation: d.elevation, atNearest: false,
                                        fir: scratch, length: fileLength)
                (pairs + i * pair).update(from: scratch, count: pair)
            }
            return Self.resample(pairs: pairs, count: directions.count, length: fileLength,
                                 from: Float(fileSampleRate), to: Float(sampleRate))
        }
        return directions.indices.map { i in
            guard let f = found[i], let r = resampled, r.count == directions.count * 2 * n else {
                return Responses(left: [Float](repeating: 0, count: n), right: [Float](repeating: 0, count: n), delays: (0, 0),
                                 measurement: found[i]?.measurement ?? -1)
            }
            let base = i * 2 * n
            return Responses(left: r[base..<(base + n)].map { $0 * gain }, right: r[(base + n)..<(base + 2 * n)].map { $0 * gain },
                             delays: (wholeSamples(f.delays.0), wholeSamples(f.delays.1)), measurement: f.measurement)
        }
    }

    /// libmysofa's error code in words.
    static func describe(_ err: Int32) -> String {
        switch err {
        case 10000: "not a SOFA file it can read (MYSOFA_INVALID_FORMAT)"
        case 10001: "an unsupported SOFA format (MYSOFA_UNSUPPORTED_FORMAT)"
        case 10002: "out of memory (MYSOFA_NO_MEMORY)"
        case 10003: "read error (MYSOFA_READ_ERROR)"
        case 10004: "invalid attributes; a SimpleFreeFieldHRIR set is needed (MYSOFA_INVALID_ATTRIBUTES)"
        case 10005: "invalid dimensions (MYSOFA_INVALID_DIMENSIONS)"
        case 10006: "invalid dimension list (MYSOFA_INVALID_DIMENSION_LIST)"
        case 10007: "invalid coordinate type (MYSOFA_INVALID_COORDINATE_TYPE)"
        case 10008: "only emitters with ECI are supported (MYSOFA_ONLY_EMITTER_WITH_ECI_SUPPORTED)"
        case 10009: "only delays with IR or MR are supported (MYSOFA_ONLY_DELAYS_WITH_IR_OR_MR_SUPPORTED)"
        case 10010: "only one sampling rate is supported (MYSOFA_ONLY_THE_SAME_SAMPLING_RATE_SUPPORTED)"
        case 10011: "only receivers with RCI are supported (MYSOFA_RECEIVERS_WITH_RCI_SUPPORTED)"
        case 10012: "only Cartesian receiver positions are supported (MYSOFA_RECEIVERS_WITH_CARTESIAN_SUPPORTED)"
        case 10013: "invalid receiver positions (MYSOFA_INVALID_RECEIVER_POSITIONS)"
        case 10014: "only sources with MC are supported (MYSOFA_ONLY_SOURCES_WITH_MC_SUPPORTED)"
        case -1: "internal error (MYSOFA_INTERNAL_ERROR)"
        case 1..<10000: String(cString: strerror(err)) + " (error \(err))"
        default: "error \(err)"
        }
    }
}

/// Why a SOFA file could not be used.
public struct HRTFSetError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}

/// The process-wide cache of opened HRTF sets, one per file and rate: a
/// graph validated, then compiled, and several `binaural` nodes on one set
/// open it once. An entry is keyed by the file's identity and modification
/// time too, so an edited file is opened again. Failures are not cached.
/// [any-thread; the audio thread; opening may take a lock and, the first time, half a second
/// (resampling)]
public enum HRTFSets {
    struct Key: Hashable {
        var path: String
        var sampleRate: Double
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var modifiedNanos: Int64
    }

    private static let cache = Locked<[Key: HRTFSet]>([:])

    /// The set at `path` (absolute) opened at `sampleRate`, from the cache
    /// or opened now. [main-thread | worker-thread]
    public static func open(path: String, sampleRate: Double) -> Result<HRTFSet, HRTFSetError> {
        ThreadRole.check(.main, .worker)
        var st = stat()
        guard stat(path, &st) == 0 else {
            return .failure(HRTFSetError(path: path, reason: FileChecks.readableFileProblem(path) ?? "cannot be read"))
        }
        let key = Key(path: path, sampleRate: sampleRate, device: UInt64(st.st_dev), inode: UInt64(st.st_ino),
                      size: Int64(st.st_size), modified: Int64(st.st_mtim.tv_sec), modifiedNanos: Int64(st.st_mtim.tv_nsec))
        return cache.withLock { sets in
            if let set = sets[key] { return .success(set) }
            let opened: HRTFSet
            do throws(HRTFSetError) {
                opened = try HRTFSet(path: path, sampleRate: sampleRate)
            } catch {
                return .failure(error)
            }
            // An older version of the same file at this rate is dropped.
            for k in sets.keys where k.path == path && k.sampleRate == sampleRate { sets[k] = nil }
            sets[key] = opened
            return .success(opened)
        }
    }

    /// Where the default set is looked for, in order: Debian's libmysofa1
    /// package's `/usr/share/libmysofa/default.sofa`, then
    /// `/usr/local/share/libmysofa/default.sofa` (libmysofa built from
    /// source), then `libmysofa/default.sofa` under each folder of
    /// `XDG_DATA_DIRS`. [any-thread]
    public static var defaultSearchPaths: [String] {
        var folders = ["/usr/share", "/usr/local/share"]
        if let xdg = getenv("XDG_DATA_DIRS") {
            for f in String(cString: xdg).split(separator: ":") where f.hasPrefix("/") {
                let folder = GraphPaths.resolve(String(f), against: "/")
                if !folders.contains(folder) { folders.append(folder) }
            }
        }
        return folders.map { $0 + "/libmysofa/default.sofa" }
    }

    /// The default path as the descriptor shows it.
    public static let defaultPath = "/usr/share/libmysofa/default.sofa"

    /// Opens the set a node's `sofa` parameter names: `written` (resolved
    /// against `directory`) when the graph gives one, else the first of
    /// `defaultSearchPaths` that opens. On failure the message names every
    /// path tried and why each failed (libmysofa's words).
    /// [main-thread | worker-thread]
    public static func find(written: String?, directory: String, sampleRate: Double) -> Result<HRTFSet, HRTFSetSearchError> {
        ThreadRole.check(.main, .worker)
        if let written { return search([GraphPaths.resolve(written, against: directory)], given: true, sampleRate: sampleRate) }
        return search(defaultSearchPaths, given: false, sampleRate: sampleRate)
    }

    /// The first of `candidates` that opens; `given`: the graph named the
    /// file (else they are the default's places). [main-thread | worker-thread]
    static func search(_ candidates: [String], given: Bool, sampleRate: Double) -> Result<HRTFSet, HRTFSetSearchError> {
        var problems: [String] = []
        for path in candidates {
            switch open(path: path, sampleRate: sampleRate) {
            case .success(let set): return .success(set)
            case .failure(let e): problems.append("\(path): \(e.reason)")
            }
        }
        if given {
            return .failure(HRTFSetSearchError(searched: candidates, message: "cannot use the SOFA file " + problems.joined(separator: "; ")))
        }
        return .failure(HRTFSetSearchError(searched: candidates, message: "no default HRTF set found; searched "
            + problems.joined(separator: "; ")
            + ". Install Debian's libmysofa1 (it ships /usr/share/libmysofa/default.sofa) or give \"sofa\": a SOFA file"))
    }
}

/// No usable SOFA file where a node's `sofa` parameter looked.
public struct HRTFSetSearchError: Error, Sendable, CustomStringConvertible {
    /// Every path tried, in order.
    public var searched: [String]
    /// Each path and why it failed (libmysofa's words).
    public var message: String
    public var description: String { message }
}
