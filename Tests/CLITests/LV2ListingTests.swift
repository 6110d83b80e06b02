import Foundation
import TestSupport
import XCTest

/// Issue 22, item 15: `agraph nodes lv2 --search WORD`, and folders on
/// LV2_PATH holding entries that are not bundles (lilv printed three
/// errors for each, on every command).
final class LV2ListingTests: XCTestCase {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"

    func agraph(_ args: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let agraph = locateAgraph().path else { throw XCTSkip("agraph is not built next to the tests") }
        let r = try runTool(agraph, args, environment: environment)
        return (r.status, r.stdout, r.stderr)
    }

    /// A folder for LV2_PATH with a few of Debian's bundles (links): the
    /// listing of all 393 installed plugins takes seconds.
    func fewBundles(_ dir: TemporaryDirectory) throws -> String {
        let folder = dir.path + "/lv2"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for bundle in ["core.lv2", "amp-swh.lv2", "delay-swh.lv2", "mda.lv2", "darc.lv2"] {
            let target = "/usr/lib/lv2/" + bundle
            guard FileManager.default.fileExists(atPath: target + "/manifest.ttl") else { throw XCTSkip("\(target) is not installed") }
            try FileManager.default.createSymbolicLink(atPath: folder + "/" + bundle, withDestinationPath: target)
        }
        return folder
    }

    /// The plugins' lines: "  NAME <URI>".
    static func plugins(_ listing: String) -> [String] {
        listing.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("      ") }.map(String.init)
    }

    func testSearchListsOnlyThePluginsWhoseNameURIOrClassHoldsTheWord() throws {
        let dir = try TemporaryDirectory()
        let env = ["LV2_PATH": try fewBundles(dir)]
        let all = try agraph(["nodes", "lv2"], environment: env)
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertTrue(all.stdout.contains(Self.amp), all.stdout)
        let found = try agraph(["nodes", "lv2", "--search", "SIMPLE amplifier"], environment: env)
        XCTAssertEqual(found.status, 0, found.stderr)
        let lines = Self.plugins(found.stdout)
        XCTAssertTrue(lines.contains { $0.contains("<\(Self.amp)>") }, found.stdout)
        XCTAssertTrue(lines.allSatisfy { $0.lowercased().contains("simple amplifier") }, found.stdout)
        XCTAssertTrue(found.stdout.contains("\(lines.count) matching \"SIMPLE amplifier\""), found.stdout)
        XCTAssertLessThan(lines.count, Self.plugins(all.stdout).count)
        // By URI too; a word nothing holds lists none.
        let byURI = try agraph(["nodes", "lv2", "--search", "swh-plugins/amp"], environment: env)
        XCTAssertTrue(Self.plugins(byURI.stdout).contains { $0.contains("<\(Self.amp)>") }, byURI.stdout)
        let none = try agraph(["nodes", "lv2", "--search", "no-plugin-is-called-this"], environment: env)
        XCTAssertEqual(none.status, 0)
        XCTAssertEqual(Self.plugins(none.stdout), [], none.stdout)
        // --search filters LV2 plugins only.
        let misplaced = try agraph(["nodes", "--search", "amp"])
        XCTAssertEqual(misplaced.status, 64, misplaced.stderr)
        XCTAssertTrue(misplaced.stderr.contains("agraph nodes lv2 --search WORD"), misplaced.stderr)
    }

    /// A stray file and a folder without manifest.ttl in a folder on
    /// LV2_PATH: nothing on stderr, the plugins listed as before. A bundle
    /// that is broken is still reported.
    func testEntriesThatAreNotBundlesAreNotReported() throws {
        let dir = try TemporaryDirectory()
        let bundles = try fewBundles(dir)
        let all = try agraph(["nodes", "lv2"], environment: ["LV2_PATH": bundles])
        XCTAssertTrue(all.stdout.contains(Self.amp), all.stdout)
        let folder = dir.path + "/more"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "not a bundle".write(toFile: folder + "/stray.txt", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: folder + "/empty.lv2", withIntermediateDirectories: true)
        let path = ["LV2_PATH": folder + ":" + bundles]
        let listed = try agraph(["nodes", "lv2"], environment: path)
        XCTAssertEqual(listed.status, 0)
        XCTAssertEqual(listed.stderr, "", "nothing said about entries that are not bundles")
        XCTAssertEqual(Self.plugins(listed.stdout), Self.plugins(all.stdout))
        let one = try agraph(["nodes", "lv2:" + Self.amp], environment: path)
        XCTAssertEqual(one.status, 0)
        XCTAssertEqual(one.stderr, "")
        // A bundle whose manifest is broken: lilv's error is still shown.
        try FileManager.default.createDirectory(atPath: folder + "/broken.lv2", withIntermediateDirectories: true)
        try "@prefix lv2: <http://lv2plug.in/ns/lv2core#> .\n<urn:x> a lv2:Plugin ; \"unterminated".write(
            toFile: folder + "/broken.lv2/manifest.ttl", atomically: true, encoding: .utf8)
        let broken = try agraph(["nodes", "lv2"], environment: path)
        XCTAssertTrue(broken.stderr.contains("broken.lv2/manifest.ttl"), broken.stderr)
    }
}
