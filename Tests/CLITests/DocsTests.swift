import Foundation
import TestSupport
import XCTest

/// The README, the docs and the source comments cite repository paths
/// (`docs/daa-api.md`, `Sources/AC4/…`): every one of them exists.
final class DocsTests: XCTestCase {
    static let roots = ["Sources", "Tests", "Plugins", "Graphs", "docs", "scripts", "Fuzz", ".ci"]

    /// Files whose text is read: Markdown, Swift, C and shell sources.
    func citingFiles() throws -> [String] {
        let root = TestMedia.packageRoot
        var files = ["README.md"]
        for folder in Self.roots {
            guard let walker = FileManager.default.enumerator(atPath: root + "/" + folder) else { continue }
            while let item = walker.nextObject() as? String {
                let path = folder + "/" + item
                if ["md", "swift", "c", "h"].contains((item as NSString).pathExtension) || folder == "scripts" || folder == ".ci" {
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                        files.append(path)
                    }
                }
            }
        }
        return files
    }

    func testEveryCitedRepositoryPathExists() throws {
        let root = TestMedia.packageRoot
        let pattern = try Regex(#"(?:^|[^A-Za-z0-9_./-])(?:\.\./)?((?:Sources|Tests|Plugins|Graphs|docs|scripts|Fuzz|\.ci)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*/])"#)
        var missing: [String] = []
        var checked = 0
        for file in try citingFiles() {
            guard let text = try? String(contentsOfFile: root + "/" + file, encoding: .utf8) else { continue }
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                // String interpolations and format placeholders are not paths.
                if line.contains("\\(") || line.contains("%s") { continue }
                for match in line.matches(of: pattern) {
                    guard let cited = match.output[1].substring.map(String.init) else { continue }
                    // Paths inside build folders and made at run time are not the repository's.
                    // Placeholders (`Tests/Media/NAME`) and deliberate misses
                    // (`Graphs/no-such-graph.json`) are not citations.
                    if cited.contains("XXXXXX") || cited.contains("no-such") { continue }
                    if cited.split(separator: "/").contains(where: { $0.count > 1 && $0.allSatisfy { $0.isUppercase } }) { continue }
                    checked += 1
                    if !exists(cited, under: root) { missing.append("\(file):\(n + 1): \(cited)") }
                }
            }
        }
        XCTAssertGreaterThan(checked, 50, "the scan found the citations")
        XCTAssertEqual(missing, [], "cited paths that do not exist:\n" + missing.joined(separator: "\n"))
    }

    /// A path, or a glob with `*` in its last part, that names something.
    func exists(_ cited: String, under root: String) -> Bool {
        let path = cited.hasSuffix("/") ? String(cited.dropLast()) : cited
        guard path.contains("*") else { return FileManager.default.fileExists(atPath: root + "/" + path) }
        let folder = (path as NSString).deletingLastPathComponent
        let glob = (path as NSString).lastPathComponent
        guard !folder.contains("*"), let names = try? FileManager.default.contentsOfDirectory(atPath: root + "/" + folder) else { return false }
        let parts = glob.split(separator: "*", omittingEmptySubsequences: false).map(String.init)
        return names.contains { name in
            guard let first = parts.first, name.hasPrefix(first), let last = parts.last, name.hasSuffix(last) else { return false }
            return true
        }
    }
}
