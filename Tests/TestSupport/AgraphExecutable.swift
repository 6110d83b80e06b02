import Foundation

/// The built `agraph` executable for tests that run it as a user would:
/// `$AGRAPH` if set, else the one in the same build folder as the test
/// bundle. Returns nil and the folders searched when there is none.
public func locateAgraph() -> (path: String?, searched: [String]) {
    let fm = FileManager.default
    if let explicit = ProcessInfo.processInfo.environment["AGRAPH"], fm.isExecutableFile(atPath: explicit) {
        return (explicit, [])
    }
    var folders: [URL] = []
    let bundle = Bundle.main.bundleURL
    folders += [bundle, bundle.deletingLastPathComponent()]
    for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") {
        folders += [b.bundleURL.deletingLastPathComponent()]
    }
    if let argument0 = CommandLine.arguments.first {
        var url = URL(fileURLWithPath: argument0).deletingLastPathComponent()
        // macOS: …/debug/X.xctest/Contents/MacOS/X
        for _ in 0..<4 {
            folders.append(url)
            url = url.deletingLastPathComponent()
        }
    }
    for folder in folders {
        let candidate = folder.appendingPathComponent("agraph").path
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
           fm.isExecutableFile(atPath: candidate) {
            return (candidate, folders.map(\.path))
        }
    }
    return (nil, folders.map(\.path))
}
