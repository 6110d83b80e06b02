import AudioGraph
import AudioGraphLive
import Synchronization
import TestSupport
import XCTest

/// `agraph run`'s console in-process: control lines against a control
/// surface over a graph compiled offline (no JACK, no subprocess).
final class ConsoleTests: XCTestCase {
    final class Target: ConsoleTarget {
        let control: ControlSurface
        init(_ control: ControlSurface) { self.control = control }
        func status() -> GraphStatus { (try? control.status()) ?? OfflineHost().status() }
    }

    final class Captured: Sendable {
        let out = Mutex<String>("")
        let err = Mutex<String>("")
        var output: TextOutput {
            TextOutput(writeOut: { t in self.out.withLock { $0 += t } }, writeErr: { t in self.err.withLock { $0 += t } })
        }
    }

    static let graph = """
        {"format": "agraph/1", "name": "console", "sampleRate": 48000, "nodes": [
          {"id": "tone", "type": "test-tone", "params": {"frequency": 1000, "level": -12, "channels": 1}},
          {"id": "g", "type": "gain", "params": {"gain": 0}},
          {"id": "sink", "type": "null"}],
         "links": [{"from": "tone", "to": "g"}, {"from": "g", "to": "sink"}]}
        """

    func testControlLinesSetGetRefuseAndQuit() throws {
        let compiled = try compileBuiltIn(Self.graph, file: "console.json", maxFrames: 256)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        let captured = Captured()
        let console = Console(target: Target(surface), quiet: true, output: captured.output)

        console.handle(.text("set g.gain -6"))
        XCTAssertEqual(try surface.get("g.gain").value, -6, "the line reached the surface")
        console.handle(.text("get g.gain"))
        let replies = captured.out.withLock { $0 }.split(separator: "\n").map(String.init)
        XCTAssertEqual(replies.last, try surface.get("g.gain").description, "the reply is the surface's reading")

        // A refused value changes nothing and is said as an error.
        console.handle(.text("set g.gain loud"))
        XCTAssertEqual(try surface.get("g.gain").value, -6)
        XCTAssertTrue(captured.err.withLock { $0 }.hasPrefix("error: "), captured.err.withLock { $0 })

        // Without a reloader, `reload` is the surface's to refuse; the graph plays on.
        XCTAssertFalse(console.quitRequested)
        console.handle(.text("quit"))
        XCTAssertTrue(console.quitRequested)
    }

    /// Lines read from a file descriptor: several in one read, the last
    /// one unterminated at the end of input, and a quit stops the rest.
    func testLinesFromAPipeStopAtQuit() throws {
        let compiled = try compileBuiltIn(Self.graph, file: "console.json", maxFrames: 256)
        let surface = ControlSurface(compiled: compiled, host: OfflineHost())
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let text = Array("set g.gain -3\r\nquit\nset g.gain -9\n".utf8)
        XCTAssertEqual(text.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }, text.count)
        close(fds[1])
        let console = Console(target: Target(surface), quiet: true, output: Captured().output, input: LineReader(fd: fds[0]))
        console.pollCommands(timeout: 1)
        XCTAssertTrue(console.quitRequested)
        XCTAssertEqual(try surface.get("g.gain").value, -3, "the line after quit was not run")
    }

    func testDroppedSummary() {
        XCTAssertEqual(Console.droppedSummary([:]), "")
        XCTAssertEqual(Console.droppedSummary(["rec": 1]), "; dropped 1 frame not in their file (rec 1: the writer fell behind)")
        XCTAssertEqual(Console.droppedSummary(["b": 2, "a": 3]), "; dropped 5 frames not in their file (a 3, b 2: the writer fell behind)")
    }
}
