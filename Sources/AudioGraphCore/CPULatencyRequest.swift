#if canImport(Glibc)
import Glibc
#endif

/// A request to the kernel to keep every CPU's wake-up latency at or
/// under a bound, held while the object lives: Linux's PM QoS interface
/// `/dev/cpu_dma_latency` (the request is the open file; closing it,
/// or the process ending, withdraws it). This is what `cyclictest` does
/// by default and what realtime audio tuning guides recommend: with 0 the
/// idle loop polls instead of halting, so a process thread woken once a
/// period finds its caches, TLBs and branch predictors as it left them
/// (on a virtual machine a halted virtual CPU gives its core to other
/// work, and every cycle starts cold). It costs power: an idle CPU spins.
///
/// `agraph run --cpu-dma-latency µs` holds one while the graph runs
/// (`RunningGraph.Options.cpuDMALatency`). [main-thread]
public final class CPULatencyRequest: @unchecked Sendable {
    /// The device file of the CPU latency request.
    public static let devicePath = "/dev/cpu_dma_latency"
    /// The kernel's value for "no constraint" (2000 s, in µs): what the
    /// device reads when no request bounds the latency.
    public static let unconstrained: Int32 = 2_000_000_000

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The bound asked for, in µs.
    public let microseconds: Int32
    public let path: String
    private var fd: Int32

    /// Opens `path` and writes the bound (4 bytes, native order, as the
    /// kernel reads it). Throws, naming the file and why, when the value
    /// is out of range or the file cannot be opened or written (the
    /// device is root's by default).
    public init(microseconds: Int, path: String = CPULatencyRequest.devicePath) throws(Failure) {
        guard (0...Int(Self.unconstrained)).contains(microseconds) else {
            throw Failure(description: "CPU wake-up latency \(microseconds) µs: give 0 to \(Self.unconstrained) µs")
        }
        self.microseconds = Int32(microseconds)
        self.path = path
        fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw Failure(description: "cannot hold a CPU wake-up latency request: \(path): \(reason)"
                          + Self.hint(errno: errno, path: path))
        }
        var value = Int32(microseconds)
        let written = withUnsafeBytes(of: &value) { write(fd, $0.baseAddress, 4) }
        guard written == 4 else {
            let reason = written < 0 ? String(cString: strerror(errno)) : "wrote \(written) of 4 bytes"
            close(fd)
            fd = -1
            throw Failure(description: "cannot hold a CPU wake-up latency request: writing \(path): \(reason)")
        }
    }

    private static func hint(errno e: Int32, path: String) -> String {
        switch e {
        case EACCES, EPERM:
            return " (the device is root's by default: run as root, or let the audio group write it with a udev rule: "
                + #"KERNEL=="cpu_dma_latency", GROUP="audio", MODE="0660")"#
        case ENOENT where path == devicePath:
            return " (a kernel without PM QoS: nothing to ask)"
        default:
            return ""
        }
    }

    /// True until `release`.
    public var isHeld: Bool { fd >= 0 }

    /// Withdraws the request (closes the file). Idempotent.
    public func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { release() }

    /// The bound in force now, over every process's requests (the device
    /// reads it as 4 bytes); nil when it cannot be read.
    public static func current(path: String = devicePath) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var value: Int32 = 0
        let n = withUnsafeMutableBytes(of: &value) { read(fd, $0.baseAddress, 4) }
        return n == 4 ? value : nil
    }
}
