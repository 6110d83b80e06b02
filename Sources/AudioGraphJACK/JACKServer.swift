import AudioGraphHost
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A `jackd` this process started and will stop ("embedded" server).
public final class JACKServer: @unchecked Sendable {
    public let name: String?
    public let process: Process
    private var stopped = false

    /// Starts `jackd [-n NAME] --no-realtime -d DRIVER -r RATE -p PERIOD` and
    /// waits until it accepts clients. With `realtime`, `-R -P 70` instead
    /// of `--no-realtime`: the server's and its clients' process threads
    /// run SCHED_FIFO, as in a studio setup (the process needs the right to
    /// it: root, or an rtprio limit). [main-thread]
    /// - Throws: `JACKError` when jackd is missing, exits, or does not answer in `timeout` s.
    public init(name: String?, driver: String = "dummy", sampleRate: Int, period: Int,
                realtime: Bool = false, timeout: Double = 10) throws(JACKError) {
        ThreadRole.check(.main)
        self.name = name
        guard let jackd = Self.findExecutable("jackd") else {
            throw JACKError("jackd is not installed (Debian: apt-get install jackd2); cannot start an embedded JACK server")
        }
        var arguments: [String] = []
        if let name { arguments += ["-n", name] }
        arguments += (realtime ? ["-R", "-P", "70"] : ["--no-realtime"]) + ["-d", driver, "-r", String(sampleRate), "-p", String(period)]
        let p = Process()
        p.executableURL = URL(fileURLWithPath: jackd)
        p.arguments = arguments
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch {
            throw JACKError("cannot start \(jackd): \(error)")
        }
        process = p
        let deadline = Date().addingTimeInterval(timeout)
        while !JACKClient.serverIsRunning(name) {
            if !p.isRunning {
                throw JACKError("jackd exited at once (status \(p.terminationStatus)): `\(jackd) \(arguments.joined(separator: " "))`; is the driver '\(driver)' available?")
            }
            if Date() > deadline {
                p.terminate()
                throw JACKError("jackd did not accept clients within \(Int(timeout)) s")
            }
            usleep(20_000)
        }
    }

    deinit { stop() }

    /// Stops the server (SIGTERM, then SIGKILL after 3 s). Idempotent. [main-thread]
    public func stop() {
        ThreadRole.check(.main)
        guard !stopped else { return }
        stopped = true
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"] {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
