#if canImport(Glibc)
import Glibc
#endif

/// The monotonic clock, read through the vDSO: no system call, no lock, so
/// the audio thread may read it too. [any-thread]
public enum MonotonicClock {
    @inline(__always)
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    public static func seconds() -> Double { Double(nanoseconds()) * 1e-9 }
}

/// `x` with exactly `digits` decimals ("12.30"), without Foundation. [main-thread | worker-thread
/// | owner-thread | control-thread]
public func formatFixed(_ x: Double, _ digits: Int) -> String {
    ThreadRole.check(.main, .worker, .control)
    guard x.isFinite else { return "\(x)" }
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (x * p).rounded() / p
    var s = String(r)
    if s.contains("e") { return s }
    if let dot = s.firstIndex(of: ".") {
        if digits == 0 { return String(s[..<dot]) }
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
    } else if digits > 0 {
        s += "." + String(repeating: "0", count: digits)
    }
    return s
}
