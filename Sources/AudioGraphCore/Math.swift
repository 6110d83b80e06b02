#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Thin wrappers so inlinable code elsewhere need not import the C library.
@inlinable func _pow10(_ x: Double) -> Double { pow(10, x) }
@inlinable func _log10(_ x: Double) -> Double { log10(x) }
