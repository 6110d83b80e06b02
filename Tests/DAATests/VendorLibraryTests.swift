import XCTest
import AudioGraph
import AudioGraphCore
import GraphFile
import AudioGraphPlugins
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Graph files are data (issue 7, item 13): the `daa` node's `library`
/// names a vendor library that the host resolves only inside the folders
/// configured outside any graph (AGRAPH_VENDOR_LIBRARY_PATH, the config
/// file). A library anywhere else is refused at validation, on the
/// parameter, and never loaded: its constructor, which would create a
/// marker file, never runs.
final class VendorLibraryTests: XCTestCase {
    var root: TemporaryDirectory!
    var trusted: String { root.file("trusted") }
    var outside: String { root.file("outside") }
    var graphs: String { root.file("graphs") }
    var config: String { root.file("config") }
    var marker: String { root.file("constructor-ran") }
    var evil: String { outside + "/libevil.so" }

    var environment: SavedEnvironment?

    override func setUpWithError() throws {
        environment = SavedEnvironment(["DAA_LIBRARY", VendorLibraryLocations.environmentVariable, "XDG_CONFIG_HOME", "AGRAPH_TEST_MARKER"])
        try DAATests.requireFixtures()
        root = try TemporaryDirectory("agraph-vendor")
        for folder in [trusted, outside, graphs, config] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        setenv(VendorLibraryLocations.environmentVariable, trusted, 1)
        setenv("XDG_CONFIG_HOME", config, 1)
        setenv("AGRAPH_TEST_MARKER", marker, 1)
        try buildEvilLibrary(at: evil)
    }

    override func tearDown() {
        environment = nil
        root = nil
    }

    /// A shared library whose constructor creates the file named by
    /// AGRAPH_TEST_MARKER: the proof that it was loaded. It also has the
    /// DAA interface's symbols, so that only the host can stop it.
    func buildEvilLibrary(at path: String) throws {
        let source = root.file("evil.c")
        var c = """
            #include <stdio.h>
            #include <stdlib.h>
            __attribute__((constructor)) static void ran(void) {
                const char *m = getenv("AGRAPH_TEST_MARKER");
                FILE *f = m ? fopen(m, "w") : NULL;
                if (f) { fputs("the constructor ran\\n", f); fclose(f); }
            }

            """
        for name in ["query_info", "query_memory", "open", "addbytes", "process", "setparam", "getparam", "close"] {
            c += "int dlb_decode_\(name)(void) { return 1000; }\n"
        }
        try c.write(toFile: source, atomically: true, encoding: .utf8)
        try CCompiler.sharedLibrary(path, [source])
    }

    var markerExists: Bool { FileManager.default.fileExists(atPath: marker) }

    func graph(library: String?) -> String {
        let params = library.map { #""library": "\#($0)""# } ?? ""
        return #"""
        {"format": "agraph/1", "sampleRate": 48000,
         "nodes": [{"id": "stream", "type": "ac4", "params": {"path": "\#(DAATests.channelCheckPath)"}},
                   {"id": "dec", "type": "daa", "params": {\#(params)}},
                   {"id": "cap", "type": "capture", "params": {"store": "main"}}],
         "links": [{"from": "stream", "to": "dec"}, {"from": "dec", "to": "cap"}]}
        """#
    }

    func validate(_ json: String, _ store: CaptureStore = CaptureStore(capacityFrames: 16)) -> Result<ValidatedGraph, GraphErrors> {
        TestGraph.validate(json, registry: TestGraph.pluginRegistry(["main": store]).registry, file: graphs + "/g.json", directory: graphs)
    }

    /// The one error of a refused `library`, on the parameter; the marker absent.
    func refusal(_ library: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard case .failure(let errors) = validate(graph(library: library)) else {
            XCTFail("library \(library) must not validate", file: file, line: line)
            return ""
        }
        XCTAssertFalse(markerExists, "the library's constructor ran: \(library)", file: file, line: line)
        let e = try XCTUnwrap(errors.errors.first { $0.nodeID == "dec" }, errors.description, file: file, line: line)
        XCTAssertEqual(errors.errors.count, 1, errors.description, file: file, line: line)
        XCTAssertTrue("\(e.pointer)".hasSuffix("/params/library"), "\(e.pointer)", file: file, line: line)
        return e.message
    }

    func realPath(_ p: String) -> String {
        guard let r = realpath(p, nil) else { return p }
        defer { free(r) }
        return String(cString: r)
    }

    // MARK: - Refused, never loaded

    func testTheFixtureLibrarysConstructorDoesRunWhenLoaded() throws {
        // The control: without the host's check, loading it leaves the marker.
        let copy = root.file("control.so")
        try FileManager.default.copyItem(atPath: evil, toPath: copy)
        let handle = dlopen(copy, RTLD_NOW | RTLD_LOCAL)
        XCTAssertNotNil(handle)
        XCTAssertTrue(markerExists)
    }

    func testAnAbsolutePathOutsideTheTrustedFoldersIsRefusedAndNeverLoaded() throws {
        let message = try refusal(evil)
        XCTAssertTrue(message.hasPrefix("library \"\(evil)\" (\(realPath(evil))) is outside the trusted vendor-library folders, so it is not loaded."), message)
        XCTAssertTrue(message.contains("searched \(trusted) (AGRAPH_VENDOR_LIBRARY_PATH)"), message)
        XCTAssertTrue(message.contains("add its folder to AGRAPH_VENDOR_LIBRARY_PATH (colon-separated) or to \(config)/agraph/vendor-library-path"), message)
    }

    func testRelativePathsResolveAgainstTheGraphsFolderAndAreRefusedOutside() throws {
        let relative = try refusal("../outside/libevil.so")
        XCTAssertTrue(relative.hasPrefix("library \"../outside/libevil.so\" ("), relative)
        XCTAssertTrue(relative.contains("is outside the trusted vendor-library folders"), relative)
        // `..` out of a trusted folder, relative and absolute.
        for escape in ["../trusted/../outside/libevil.so", trusted + "/../outside/libevil.so", "../trusted/../../" + URL(fileURLWithPath: root.path).lastPathComponent + "/outside/libevil.so"] {
            let message = try refusal(escape)
            XCTAssertTrue(message.contains("is outside the trusted vendor-library folders"), "\(escape): \(message)")
        }
    }

    func testASymbolicLinkInTheTrustedFolderPointingOutsideIsRefused() throws {
        try FileManager.default.createSymbolicLink(atPath: trusted + "/libdlb_decode.so", withDestinationPath: evil)
        let bare = try refusal("libdlb_decode.so")
        XCTAssertTrue(bare.hasPrefix("library \"libdlb_decode.so\" links to \(realPath(evil)), outside the trusted vendor-library folders, so it is not loaded"), bare)
        let path = try refusal(trusted + "/libdlb_decode.so")
        XCTAssertTrue(path.contains("really \(realPath(evil))) is outside the trusted vendor-library folders"), path)
        // A trusted folder that is itself a link is fine: real paths are compared.
        try FileManager.default.createSymbolicLink(atPath: root.file("trusted-link"), withDestinationPath: trusted)
        try FileManager.default.copyItem(atPath: DAATests.doublePath, toPath: trusted + "/libdaa-double.so")
        setenv(VendorLibraryLocations.environmentVariable, root.file("trusted-link"), 1)
        XCTAssertNoThrow(try validate(graph(library: "libdaa-double.so")).get())
    }

    func testABareNameNotInTheTrustedFoldersIsRefused() throws {
        let message = try refusal("libevil.so")
        XCTAssertTrue(message.hasPrefix("library \"libevil.so\" is not in any trusted vendor-library folder."), message)
        XCTAssertTrue(message.contains("searched \(trusted) (AGRAPH_VENDOR_LIBRARY_PATH)"), message)
    }

    func testWithNoFoldersConfiguredNothingAGraphNamesIsLoaded() throws {
        unsetenv(VendorLibraryLocations.environmentVariable)
        let message = try refusal(evil)
        XCTAssertTrue(message.contains("none is configured (AGRAPH_VENDOR_LIBRARY_PATH is unset; \(config)/agraph/vendor-library-path does not exist)"), message)
        _ = try refusal("libevil.so")
        // Even the system's libraries: a graph does not choose native code.
        _ = try refusal("libm.so.6")
        _ = try refusal("/lib/x86_64-linux-gnu/libm.so.6")
        // A config file listing nothing but comments.
        try FileManager.default.createDirectory(atPath: config + "/agraph", withIntermediateDirectories: true)
        try "# nothing yet\n".write(toFile: config + "/agraph/vendor-library-path", atomically: true, encoding: .utf8)
        let empty = try refusal(evil)
        XCTAssertTrue(empty.contains("vendor-library-path lists none)"), empty)
    }

    func testAFileThatIsNotACompleteSharedObjectIsRefusedInTheTrustedFolder() throws {
        let whole = try XCTUnwrap(FileManager.default.contents(atPath: DAATests.doublePath))
        XCTAssertTrue(FileManager.default.createFile(atPath: trusted + "/libcut.so", contents: whole.prefix(whole.count / 2)))
        let cut = try refusal("libcut.so")
        XCTAssertTrue(cut.hasPrefix("library \"libcut.so\" (\(realPath(trusted))/libcut.so) cannot be used: truncated or damaged: "), cut)
        XCTAssertEqual(mkfifo(trusted + "/libfifo.so", 0o600), 0)
        let fifo = try refusal("libfifo.so")
        XCTAssertTrue(fifo.hasSuffix("cannot be used: not a regular file (a FIFO)"), fifo)
        let empty = try refusal("")
        XCTAssertTrue(empty.hasPrefix("an empty library name."), empty)
    }

    /// A graph validated while a folder was trusted, compiled after it no
    /// longer is: `create` never gets the library either.
    func testCompilingResolvesAgainAndRefusesWithoutLoading() throws {
        try FileManager.default.copyItem(atPath: evil, toPath: trusted + "/libevil.so")
        // The library's own check fails (its functions return errors) after
        // loading it: validation with a trusted folder does load it.
        setenv("AGRAPH_TEST_MARKER", root.file("trusted-marker"), 1)
        guard case .failure = validate(graph(library: "libevil.so")) else { return XCTFail("its query_info fails") }
        XCTAssertTrue(FileManager.default.fileExists(atPath: root.file("trusted-marker")), "a trusted library is loaded")
        setenv("AGRAPH_TEST_MARKER", marker, 1)

        try FileManager.default.copyItem(atPath: DAATests.doublePath, toPath: trusted + "/libdlb_decode.so")
        let g = try validate(graph(library: "libdlb_decode.so")).get()
        unsetenv(VendorLibraryLocations.environmentVariable)
        XCTAssertThrowsError(try GraphCompiler.compile(g, maxFrames: 512)) { error in
            XCTAssertTrue("\(error)".contains("parameter library: library \"libdlb_decode.so\" is not in any trusted vendor-library folder"), "\(error)")
        }
    }

    // MARK: - Accepted

    func testABareNameInTheTrustedFolderValidatesAndRenders() throws {
        try FileManager.default.copyItem(atPath: DAATests.doublePath, toPath: trusted + "/libdlb_decode.so")
        let store = CaptureStore(capacityFrames: 48_000)
        let g = try validate(graph(library: "libdlb_decode.so"), store).get()
        XCTAssertEqual(g.node("dec")?.outputFormat?.layout, .binaural)
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 20 * 2048)
        XCTAssertEqual(store.frames, 20 * 2048)
        let left = store.samples(0)
        XCTAssertEqual(DAATests.sequence(left[0]), DAATests.frames[0].sequence, "the double decoded the first frame")
        XCTAssertEqual(DAATests.sequence(left[19 * 2048]), DAATests.frames[19].sequence)
        XCTAssertFalse(markerExists)
        // The same file by a relative path through the graph's folder, and by an absolute one.
        XCTAssertNoThrow(try validate(graph(library: "../trusted/libdlb_decode.so")).get())
        XCTAssertNoThrow(try validate(graph(library: trusted + "/libdlb_decode.so")).get())
    }

    func testTheConfigFileListsFoldersOnePerLine() throws {
        unsetenv(VendorLibraryLocations.environmentVariable)
        let other = root.file("other")
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: DAATests.doublePath, toPath: other + "/libdlb_decode.so")
        try FileManager.default.createDirectory(atPath: config + "/agraph", withIntermediateDirectories: true)
        try """
            # vendor libraries agraph may load
            \(root.file("missing"))
              relative/folder
            \(trusted)
               \(other)

            """.write(toFile: config + "/agraph/vendor-library-path", atomically: true, encoding: .utf8)
        let locations = VendorLibraryLocations.current()
        XCTAssertEqual(locations.folders.map(\.path), [root.file("missing"), trusted, other])
        XCTAssertEqual(locations.trustedFolders, [realPath(trusted), realPath(other)])
        XCTAssertEqual(locations.notes.count, 1, "\(locations.notes)")
        XCTAssertNoThrow(try validate(graph(library: "libdlb_decode.so")).get())
        let message = try refusal(evil)
        XCTAssertTrue(message.contains("searched \(root.file("missing")) (config file, missing), \(trusted) (config file), \(other) (config file)"), message)
        XCTAssertTrue(message.contains("relative folder \"relative/folder\""), message)
        // The environment variable comes first.
        setenv(VendorLibraryLocations.environmentVariable, outside, 1)
        XCTAssertEqual(VendorLibraryLocations.current().trustedFolders.first, realPath(outside))
    }

    func testDAALibrarySetOutsideTheGraphStaysTrusted() throws {
        unsetenv(VendorLibraryLocations.environmentVariable)
        setenv("DAA_LIBRARY", DAATests.doublePath, 1)
        let store = CaptureStore(capacityFrames: 4096)
        let g = try validate(graph(library: nil), store).get()
        let compiled = try GraphCompiler.compile(g, maxFrames: 512)
        _ = OfflineRenderer(engine: compiled.engine).run(maxFrames: 2048)
        XCTAssertEqual(store.frames, 2048)
    }
}
