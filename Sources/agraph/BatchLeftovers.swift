import AudioGraphTools
#if canImport(Glibc)
import Glibc
#endif

/// How a render started by `agraph render --each` ties itself to its batch.
extension BatchLeftovers {
    /// Makes this process (an `agraph render` started by a batch) die with
    /// the batch: `PR_SET_PDEATHSIG` with SIGKILL, so that a batch killed
    /// with SIGKILL leaves no render running; then, as the parent may have
    /// died before that, exits at once when it is no longer `parent`.
    /// prctl is variadic in C, so it is called through dlsym with its
    /// integer arguments (the x86-64 and AArch64 conventions pass them as
    /// for a plain function). [main-thread; at the start]
    static func dieWithParent(_ parent: pid_t) {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        let PR_SET_PDEATHSIG: Int32 = 1
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") {
            _ = unsafeBitCast(symbol, to: Prctl.self)(PR_SET_PDEATHSIG, UInt(SIGKILL), 0, 0, 0)
        }
        if getppid() != parent {
            printError("agraph: the batch that started this render (process \(parent), \(parentVariable)) has ended; not rendering")
            exit(1)
        }
    }
}
