import Foundation

/// A fresh folder under the system's temporary directory, removed on deinit.
public final class TemporaryDirectory {
    public let path: String

    public init(_ prefix: String = "agraph-test") throws {
        let base = NSTemporaryDirectory() + "/\(prefix)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }

    /// `path/name`.
    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
