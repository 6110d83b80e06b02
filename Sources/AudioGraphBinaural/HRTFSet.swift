import AudioGraphCore
import AudioGraphNodeAPI
import CMySOFA
#if canImport(Glibc)
import Glibc
#endif

/// One SOFA HRTF set (AES69 SimpleFreeFieldHRIR) opened by libmysofa at one
/// sample rate, with the `binaural` node's normalisation.
///
/// Opened with libmysofa's "easy" API, `mysofa_open_advanced(path, rate, …,
/// norm: false, …)`: libmysofa checks the file, resamples every impulse
/// response to `sampleRate` when the set was measured at another rate
/// (its Speex resampler, quality 10; `Data.Delay` scaled with it) and
/// builds its nearest-neighbour lookup. libmysofa's own loudness
/// normalisation is not used; `gain` is this type's (see `gain`).
///
/// Directions are SOFA's: azimuth in degrees counter-clockwise from the
/// front (positive to the left), elevation in degrees up from the
/// horizontal plane. A direction is looked up at the set's largest
/// measured distance.
///
/// Threading: [any thread]. The filter queries share libmysofa's scratch
/// buffer (`MYSOFA_EASY.fir`), so they take a lock: call them from the
/// main or a worker thread, never the audio thread.
public final class HRTFSet: @unchecked Sendable {
    /// The file, as opened (absolute).
    public let path: String
    /// The rate the impulse responses are at (the graph's).
    public let sampleRate: Double
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
    /// measurement nearest to the front (azimuth 0°, elevation 0°), as
    /// opened at `sampleRate`. A source in front thus reaches each ear
    /// with unit energy gain, on average over the two ears.
    public let gain: Float
    /// The measurement `gain` was taken from.
    public let frontMeasurement: Int

    private let easy: UnsafeMutablePointer<MYSOFA_EASY>
    private let lock = Locked<Void>(())
    /// The distance directions are looked up at.
    private let radius: Float

    /// Opens `path` at `sampleRate`. [main-thread or worker-thread]
    /// - Throws: `HRTFSetError` with libmysofa's reason.
    init(path: String, sampleRate: Double) throws(HRTFSetError) {
        self.path = path
        self.sampleRate = sampleRate
        if let problem = FileChecks.readableFileProblem(path) { throw HRTFSetError(path: path, reason: problem) }
        guard sampleRate >= 8000 else {
            throw HRTFSetError(path: path, reason: "libmysofa resamples HRTFs to rates of 8000 Hz or more; the graph runs at \(Int(sampleRate)) Hz")
        }
        var err: Int32 = 0
        var length: Int32 = 0
        guard let opened = mysofa_open_advanced(path, Float(sampleRate), &length, &err, false, 0.5, 0.01) else {
            throw HRTFSetError(path: path, reason: "libmysofa: " + Self.describe(err))
        }
        easy = opened
        guard let hrtf = opened.pointee.hrtf, opened.pointee.lookup != nil, opened.pointee.neighborhood != nil,
              hrtf.pointee.R == 2, length > 0 else {
            mysofa_close(opened)
            throw HRTFSetError(path: path, reason: "libmysofa opened it, but it is not a set of two-ear impulse responses (SimpleFreeFieldHRIR)")
        }
        filterLength = Int(length)
        measurements = Int(hrtf.pointee.M)
        radius = opened.pointee.lookup.pointee.radius_max
        var maxDelay = 0
        let delays = hrtf.pointee.DataDelay
        if let values = delays.values {
            for i in 0..<Int(delays.elements) where values[i].isFinite {
                maxDelay = max(maxDelay, Int(values[i].rounded()))
            }
        }
        maximumDelay = min(maxDelay, 1 << 16)
        // The normalisation: the measurement nearest the front.
        var energy = 0.0
        var c: [Float] = [0, 0, radius]
        mysofa_s2c(&c)
        let front = Int(mysofa_lookup(opened.pointee.lookup, &c))
        if front >= 0, front < measurements, let ir = hrtf.pointee.DataIR.values {
            let base = ir + front * 2 * filterLength
            for i in 0..<(2 * filterLength) { energy += Double(base[i]) * Double(base[i]) }
        }
        frontMeasurement = front
        guard energy > 0, energy.isFinite else {
            mysofa_close(opened)
            throw HRTFSetError(path: path, reason: "the impulse responses nearest the front (measurement \(front)) are silent; the set cannot be normalised")
        }
        gain = Float(1 / (energy / 2).squareRoot())
    }

    deinit { mysofa_close(easy) }

    /// The impulse responses for the direction (`azimuth`, `elevation`) in
    /// degrees, SOFA's convention, at `sampleRate`, each scaled by `gain`:
    /// the nearest measurement's (`interpolate` false: its data exactly,
    /// libmysofa's `mysofa_getfilter_float_nointerp`), or libmysofa's
    /// interpolation between the nearest measurement and its neighbours
    /// (`mysofa_getfilter_float`). `left` and `right` hold `filterLength`
    /// samples. Returns the delays (`Data.Delay`) rounded to whole samples
    /// (negative ones as 0) and, for the nearest, its index.
    /// [main-thread or worker-thread; takes a lock]
    public func filter(azimuth: Double, elevation: Double, interpolate: Bool,
                       left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) -> (left: Int, right: Int, measurement: Int) {
        var c: [Float] = [Float(azimuth), Float(elevation), radius]
        mysofa_s2c(&c)
        var dl: Float = 0, dr: Float = 0
        var nearest: Int32 = -1
        lock.withLock { _ in
            var q = c
            nearest = mysofa_lookup(easy.pointee.lookup, &q)
            if interpolate {
                mysofa_getfilter_float(easy, c[0], c[1], c[2], left, right, &dl, &dr)
            } else {
                mysofa_getfilter_float_nointerp(easy, c[0], c[1], c[2], left, right, &dl, &dr)
            }
        }
        let g = gain
        for i in 0..<filterLength {
            left[i] *= g
            right[i] *= g
        }
        func whole(_ d: Float) -> Int { d.isFinite && d > 0 ? min(Int(d.rounded()), maximumDelay) : 0 }
        return (whole(dl), whole(dr), Int(nearest))
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
/// [any thread but the audio thread; opening may take a lock and, the
/// first time, half a second (resampling)]
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
    /// or opened now. [main-thread or worker-thread]
    public static func open(path: String, sampleRate: Double) -> Result<HRTFSet, HRTFSetError> {
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
    /// `XDG_DATA_DIRS`. [any thread]
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
    /// [main-thread or worker-thread]
    public static func find(written: String?, directory: String, sampleRate: Double) -> Result<HRTFSet, HRTFSetSearchError> {
        if let written { return search([GraphPaths.resolve(written, against: directory)], given: true, sampleRate: sampleRate) }
        return search(defaultSearchPaths, given: false, sampleRate: sampleRate)
    }

    /// The first of `candidates` that opens; `given`: the graph named the
    /// file (else they are the default's places). [main-thread or worker-thread]
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
