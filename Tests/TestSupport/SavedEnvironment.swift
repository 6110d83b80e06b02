import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Environment variables a test sets for itself (AGRAPH_PLUGIN_PATH,
/// DAA_LIBRARY, …): made with the names, it saves their values and unsets
/// them, so that each test starts from none of them whatever the shell or
/// an earlier test left; on deinit it puts the saved values back (and
/// unsets the others). Keep it in a property set in `setUp` and cleared in
/// `tearDown`: tests in other targets (the CLI ones) inherit the process
/// environment. [main-thread]
public final class SavedEnvironment {
    /// The names saved, in the order given.
    public let names: [String]
    private var saved: [String: String] = [:]

    public init(_ names: [String]) {
        self.names = names
        for name in names {
            if let value = getenv(name) { saved[name] = String(cString: value) }
            unsetenv(name)
        }
    }

    deinit {
        for name in names {
            if let value = saved[name] { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
}
