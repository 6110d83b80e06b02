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

// MARK: - Every command the docs show runs

/// One `agraph` command shown in a code block of README.md or docs/.
struct DocCommand: CustomStringConvertible {
    var file: String
    var line: Int
    /// The command as shown, continuations joined, `$ ` and the comment cut.
    var text: String
    /// The exit status the docs say it has (`# exit 1` in its comment), else 0.
    var expectedStatus: Int32

    var description: String { "\(file):\(line): \(text)" }

    /// The agraph subcommand (`run`, `render`…), or "" for `agraph` alone.
    var subcommand: String {
        let words = text.split(separator: " ").map(String.init)
        guard let i = words.firstIndex(where: { $0 == "agraph" || $0.hasSuffix("/agraph") }), i + 1 < words.count else { return "" }
        return words[i + 1]
    }

    /// Live commands play on JACK until their streams end or they are stopped.
    var isLive: Bool { ["run", "abx"].contains(subcommand) }
}

extension DocsTests {
    /// README.md and every Markdown file under docs/, repository-relative.
    static func docFiles() -> [String] {
        var files = ["README.md"]
        let root = TestMedia.packageRoot
        if let walker = FileManager.default.enumerator(atPath: root + "/docs") {
            while let item = walker.nextObject() as? String {
                if item.hasSuffix(".md") { files.append("docs/" + item) }
            }
        }
        return files.sorted { a, b in a == "README.md" || (b != "README.md" && a < b) }
    }

    static func text(_ file: String) throws -> String {
        try String(contentsOfFile: TestMedia.packageRoot + "/" + file, encoding: .utf8)
    }

    /// The `agraph` commands in a Markdown text's fenced code blocks. A
    /// block fenced as `text` is a synopsis or a script for elsewhere (a
    /// cluster's job array) and is not run.
    static func commands(in markdown: String, file: String) -> [DocCommand] {
        let start = try! Regex(#"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:\.build/debug/)?agraph\s"#)
        var result: [DocCommand] = []
        var fence: String?
        var pending: (line: Int, text: String)?
        for (n, raw) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                fence = fence == nil ? String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces) : nil
                pending = nil
                continue
            }
            guard let info = fence, info != "text" else { continue }
            var line = trimmed
            if var p = pending {
                p.text += " " + line
                pending = p
                line = p.text
            } else {
                if line.hasPrefix("$ ") { line = String(line.dropFirst(2)) }
                guard line.firstMatch(of: start) != nil else { continue }
                pending = (n + 1, line)
            }
            if line.hasSuffix("\\") {
                pending = (pending!.line, String(line.dropLast()).trimmingCharacters(in: .whitespaces))
                continue
            }
            let lineNumber = pending!.line
            pending = nil
            var command = line
            var comment = ""
            // A comment starts at " #" followed by a space or the end of the line.
            if let hash = line.ranges(of: " #").first(where: { $0.upperBound == line.endIndex || line[$0.upperBound] == " " }) {
                command = String(line[..<hash.lowerBound]).trimmingCharacters(in: .whitespaces)
                comment = String(line[hash.upperBound...])
            }
            var status: Int32 = 0
            if let m = comment.firstMatch(of: #/exit (\d+)/#), let n = Int32(m.1) { status = n }
            result.append(DocCommand(file: file, line: lineNumber, text: command, expectedStatus: status))
        }
        return result
    }

    static func allCommands() throws -> [DocCommand] {
        try docFiles().flatMap { try commands(in: text($0), file: $0) }
    }

    func testTheCommandScanFindsTheDocsCommands() throws {
        let commands = try Self.allCommands()
        XCTAssertGreaterThan(commands.count, 40, "found the docs' commands")
        let sample = Self.commands(in: """
            ```sh
            $ agraph render g.json \\
                -o a.wav   # exit 1 when it fails
            agraph-bench offline
            AGRAPH_PLUGIN_PATH=/p agraph nodes
            ```

            ```text
            agraph render GRAPH [--duration S]
            ```
            """, file: "x.md")
        XCTAssertEqual(sample.map(\.text), ["agraph render g.json -o a.wav", "AGRAPH_PLUGIN_PATH=/p agraph nodes"])
        XCTAssertEqual(sample.map(\.expectedStatus), [1, 0])
        XCTAssertEqual(sample.first?.line, 2)
    }

    /// Runs every command in a folder that holds a copy of Graphs/ and
    /// Tests/Media/, `.build/debug` (this build), and the inputs the docs
    /// name (`music/a.flac`, `music/b.flac`, `song.m4a`). Live commands play
    /// on an embedded dummy JACK server of this test's own.
    func testEveryCommandInTheDocsRuns() throws {
        let agraph = try CLITests.agraphPath()
        let buildFolder = (agraph as NSString).deletingLastPathComponent
        let commands = try Self.allCommands()
        let work = try TemporaryDirectory("agraph-docs")
        let fm = FileManager.default
        let root = TestMedia.packageRoot
        try fm.copyItem(atPath: root + "/Graphs", toPath: work.file("Graphs"))
        try fm.createDirectory(atPath: work.file("Tests"), withIntermediateDirectories: true)
        try fm.copyItem(atPath: root + "/Tests/Media", toPath: work.file("Tests/Media"))
        try fm.createDirectory(atPath: work.file(".build"), withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: work.file(".build/debug"), withDestinationPath: buildFolder)
        try fm.createDirectory(atPath: work.file("music"), withIntermediateDirectories: true)
        try fm.copyItem(atPath: root + "/Graphs/media/tone-1k.flac", toPath: work.file("music/a.flac"))
        try fm.copyItem(atPath: root + "/Graphs/media/tone-44k1.flac", toPath: work.file("music/b.flac"))
        try fm.copyItem(atPath: root + "/Graphs/media/tone-440.m4a", toPath: work.file("song.m4a"))

        var environment = [
            "PATH": buildFolder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            // `agraph run` starts an embedded server when none runs: a name
            // of this test's own, so that no other server is joined.
            "JACK_DEFAULT_SERVER": "agraph-docs-\(getpid())",
        ]
        // The DAA commands run against the test double of the DAA interface.
        let daaDouble = buildFolder + "/libTestDoubleDAA.so"
        if fm.fileExists(atPath: daaDouble) { environment["DAA_LIBRARY"] = daaDouble }
        let hasDot = findExecutable("dot") != nil

        var ran = 0
        for command in commands {
            var line = command.text
            if line.contains("| dot "), !hasDot {
                // Graphviz is not installed: run agraph's part of the pipeline.
                line = String(line[..<line.range(of: "| dot ")!.lowerBound])
            }
            let before = Self.soundFiles(in: work.path)
            let status: Int32
            let log = work.file(".command-output")
            if command.isLive {
                // `exec`: the signal reaches agraph, not the shell. Stdin is a
                // pipe held open, as a terminal would be (`abx` ends at the
                // end of its input).
                let stdin = try PipeEnds()
                defer { close(stdin.write) }
                let p = try ChildProcess(["/bin/sh", "-c", "exec " + line], environment: environment,
                                         directory: work.path, stdin: .descriptor(stdin.read),
                                         stdout: .file(log), stderr: .sameAsStdout)
                close(stdin.read)
                if p.waitUntilExit(timeout: LiveTiming.seconds(4)) {
                    status = p.terminationStatus
                } else {
                    // Still running after a few seconds: it must stop cleanly on SIGINT.
                    p.send(SIGINT)
                    if !p.waitUntilExit(timeout: LiveTiming.seconds(20)) {
                        p.send(SIGKILL)
                        p.waitUntilExit()
                        XCTFail("\(command)\ndid not stop within 20 s of SIGINT\n\(Self.tail(log))")
                        continue
                    }
                    status = p.terminationStatus
                }
            } else {
                let p = try ChildProcess(["/bin/sh", "-c", line], environment: environment,
                                         directory: work.path, stdout: .file(log), stderr: .sameAsStdout)
                if !p.waitUntilExit(timeout: 300) {
                    p.send(SIGKILL)
                    p.waitUntilExit()
                    XCTFail("\(command)\ndid not finish within 300 s\n\(Self.tail(log))")
                    continue
                }
                status = p.terminationStatus
            }
            ran += 1
            XCTAssertEqual(status, command.expectedStatus, "\(command)\n\(Self.tail(log))")
            guard status == 0 else { continue }
            // Every sound file the command wrote holds frames.
            let after = Self.soundFiles(in: work.path)
            for (path, stamp) in after where before[path] != stamp {
                let frames = (try? soundFileInfo(work.file(path)).frames) ?? 0
                XCTAssertGreaterThan(frames, 0, "\(command)\nwrote \(path) without frames")
            }
            for output in Self.outputsNamed(by: line) {
                XCTAssertTrue(fm.fileExists(atPath: work.file(output)), "\(command)\ndid not write \(output)\n\(Self.tail(log))")
            }
        }
        XCTAssertEqual(ran, commands.count, "every command ran")
    }

    /// Sound files (WAV, FLAC) under `folder` other than the inputs the test
    /// put there, with their size and modification time.
    static func soundFiles(in folder: String) -> [String: String] {
        var files: [String: String] = [:]
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return files }
        while let item = walker.nextObject() as? String {
            if item.hasPrefix("Graphs/") || item.hasPrefix("Tests/") || item.hasPrefix("music/") || item.hasPrefix(".build") {
                walker.skipDescendants()
                continue
            }
            guard ["wav", "flac"].contains((item as NSString).pathExtension.lowercased()),
                  !item.split(separator: "/").contains(where: { $0.hasPrefix(".") }),
                  let a = try? FileManager.default.attributesOfItem(atPath: folder + "/" + item) else { continue }
            files[item] = "\(a[.size] ?? 0) \((a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        }
        return files
    }

    /// The files and folders a command line names as its outputs: `-o FILE`,
    /// `--json FILE`, `--report DIR` (its report.json and index.html),
    /// `--output-dir DIR`, `> FILE`.
    static func outputsNamed(by line: String) -> [String] {
        let words = line.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "'\"")) }
        var outputs: [String] = []
        for (i, w) in words.enumerated() where i + 1 < words.count {
            switch w {
            case "-o", "--json", "--output-dir", ">": outputs.append(words[i + 1])
            case "--report": outputs += [words[i + 1] + "/report.json", words[i + 1] + "/index.html"]
            default: break
            }
        }
        return outputs
    }

    static func tail(_ log: String) -> String {
        String(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").suffix(3000))
    }
}

// MARK: - Versions in the docs are the code's

extension DocsTests {
    /// The plugin ABI version from the header that defines it (the include
    /// folder, searched recursively: a core header or an ext/ header).
    static func pluginABIVersion() throws -> (major: Int, minor: Int) {
        let include = TestMedia.packageRoot + "/Sources/CAGraphPlugin/include"
        var major: Int?, minor: Int?
        let walker = FileManager.default.enumerator(atPath: include)
        while let item = walker?.nextObject() as? String {
            guard item.hasSuffix(".h"), let text = try? String(contentsOfFile: include + "/" + item, encoding: .utf8) else { continue }
            for m in text.matches(of: #/#define\s+AGRAPH_(?:PLUGIN_ABI|ABI_VERSION)_(MAJOR|MINOR)\s+(\d+)/#) {
                if m.1 == "MAJOR" { major = Int(m.2) } else { minor = Int(m.2) }
            }
        }
        guard let major, let minor else { throw XCTSkip("no ABI version macros found under \(include)") }
        return (major, minor)
    }

    func testThePluginABIVersionInTheDocsIsTheHeaders() throws {
        let (major, minor) = try Self.pluginABIVersion()
        let current = "\(major).\(minor)"
        var stated = 0
        // The README states only the current version; the guides say
        // "plugin ABI X.Y" for it (history is written "ABI 1.2" elsewhere).
        for m in try Self.text("README.md").matches(of: #/ABI (\d+\.\d+)/#) {
            stated += 1
            XCTAssertEqual(String(m.1), current, "README.md states ABI \(m.1); the header says \(current)")
        }
        for file in Self.docFiles() where file != "README.md" {
            for m in try Self.text(file).matches(of: #/[Pp]lugin ABI (?:version )?(\d+\.\d+)/#) {
                stated += 1
                XCTAssertEqual(String(m.1), current, "\(file) states plugin ABI \(m.1); the header says \(current)")
            }
        }
        XCTAssertTrue(try Self.text("docs/plugins.md").contains("plugin ABI \(current)"), "docs/plugins.md states the current ABI")
        XCTAssertGreaterThan(stated, 1)
    }

    func testAgraphsVersionInTheDocsIsTheTools() throws {
        let run = try CLITests.agraph(arguments: ["--version"])
        XCTAssertEqual(run.status, 0)
        let version = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        var stated = 0
        for file in Self.docFiles() {
            for m in try Self.text(file).matches(of: #/agraph --version`?\s*(\d+\.\d+\.\d+)/#) {
                stated += 1
                XCTAssertEqual(String(m.1), version, "\(file) states agraph \(m.1); agraph --version says \(version)")
            }
        }
        XCTAssertGreaterThan(stated, 0, "the README states agraph's version")
    }

    func testTheSwiftVersionInTheDocsIsThePackages() throws {
        let manifest = try Self.text("Package.swift")
        let tools = try XCTUnwrap(manifest.firstMatch(of: #/swift-tools-version:\s*(\d+\.\d+)/#)).1
        var stated = 0
        for file in Self.docFiles() {
            let text = try Self.text(file)
            for m in text.matches(of: #/swift-tools-version:\s*(\d+\.\d+)/#) {
                stated += 1
                XCTAssertEqual(m.1, tools, "\(file) states swift-tools-version \(m.1); Package.swift says \(tools)")
            }
            for m in text.matches(of: #/Swift (\d+\.\d+) or later/#) {
                stated += 1
                XCTAssertEqual(m.1, tools, "\(file) asks for Swift \(m.1); Package.swift says \(tools)")
            }
        }
        XCTAssertGreaterThan(stated, 1)
    }

    func testTheGraphFormatInTheDocsIsTheSchemas() throws {
        let schema = try CLITests.agraph(arguments: ["schema"])
        let format = try XCTUnwrap(schema.stdout.firstMatch(of: #/"const": "(agraph\/\d+)"/#)).1
        for file in Self.docFiles() {
            for m in try Self.text(file).matches(of: #/"format": "(agraph\/\d+)"/#) {
                XCTAssertEqual(m.1, format, "\(file) writes \"format\": \"\(m.1)\"; the schema says \(format)")
            }
        }
    }
}

// MARK: - The README is a front door, and every link leads somewhere

extension DocsTests {
    func testTheReadmeIsShort() throws {
        let lines = try Self.text("README.md").split(separator: "\n", omittingEmptySubsequences: false).count
        XCTAssertLessThanOrEqual(lines, 220, "README.md has \(lines) lines: the reference belongs in docs/")
    }

    /// Every relative link of README.md and docs/ leads to a file that
    /// exists, and an anchor to a heading of it.
    func testEveryRelativeLinkResolves() throws {
        let root = TestMedia.packageRoot
        var broken: [String] = []
        var checked = 0
        for file in Self.docFiles() {
            let folder = (file as NSString).deletingLastPathComponent
            for (n, line) in Self.proseLines(try Self.text(file)) {
                for m in line.matches(of: #/\]\(([^)\s]+)\)/#) {
                    let target = String(m.1)
                    if target.contains("://") || target.hasPrefix("mailto:") { continue }
                    checked += 1
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                    let path = parts[0].isEmpty ? file : ((folder.isEmpty ? parts[0] : folder + "/" + parts[0]) as NSString).standardizingPath
                    guard FileManager.default.fileExists(atPath: root + "/" + path) else {
                        broken.append("\(file):\(n): \(target) (no \(path))")
                        continue
                    }
                    if parts.count == 2, path.hasSuffix(".md"),
                       !Self.anchors(try Self.text(path)).contains(parts[1]) {
                        broken.append("\(file):\(n): \(target) (no heading #\(parts[1]) in \(path))")
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 50, "the scan found the links")
        XCTAssertEqual(broken, [], "links that lead nowhere:\n" + broken.joined(separator: "\n"))
    }

    /// The lines outside code blocks, numbered from 1, inline code cut.
    static func proseLines(_ markdown: String) -> [(Int, String)] {
        var fenced = false
        var result: [(Int, String)] = []
        for (n, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { fenced.toggle(); continue }
            if fenced { continue }
            result.append((n + 1, String(line).replacing(#/`[^`]*`/#, with: "``")))
        }
        return result
    }

    /// The anchors GitHub makes of a Markdown file's headings: lower case,
    /// punctuation dropped, spaces to hyphens, repeats numbered.
    static func anchors(_ markdown: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var result: Set<String> = []
        var fenced = false
        for line in markdown.split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced, let m = line.wholeMatch(of: #/#{1,6}\s+(.*?)\s*#*/#) else { continue }
            var slug = ""
            for c in m.1.lowercased() {
                if c.isLetter || c.isNumber || c == "_" || c == "-" { slug.append(c) } else if c == " " { slug.append("-") }
            }
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            result.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return result
    }
}
