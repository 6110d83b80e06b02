import AudioGraph
import AudioGraphPlugins
import Foundation
import TestSupport
import XCTest

/// What the playlist tests share: a folder of media made in the test, the
/// registry with the `ffmpeg` plugin loaded as `agraph` loads it, and an
/// offline render of `playlist → capture` that runs console commands at
/// given frames through the control surface.
class PlaylistTestCase: XCTestCase {
    static let rate = 48_000.0
    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("agraph-playlist")
        let (registry, _) = TestGraph.pluginRegistry()
        guard registry["ffmpeg"] != nil else { throw XCTSkip("the ffmpeg decoder plugin is not built (build with --build-tests)") }
    }

    override func tearDown() { dir = nil }

    /// A sine of `frequency` in every channel (or `frequencies`, one per
    /// channel) written to `name` in `format`; returns its path and its
    /// interleaved samples.
    @discardableResult
    func sineFile(_ name: String, frequency: Double = 1000, frequencies: [Double]? = nil, amplitude: Double = 0.5,
                  seconds: Double = 1, rate: Double = PlaylistTestCase.rate, channels: Int = 1,
                  format: SoundFileFormat = .flacInt24) throws -> (path: String, samples: [Float]) {
        let frames = Int(seconds * rate)
        let perChannel = frequencies ?? Array(repeating: frequency, count: channels)
        let n = perChannel.count
        var samples = [Float](repeating: 0, count: frames * n)
        for (c, f) in perChannel.enumerated() {
            let s = Synth.sine(frequency: f, amplitude: amplitude, sampleRate: rate, frames: frames)
            for i in 0..<frames { samples[i * n + c] = s[i] }
        }
        let path = dir.file(name)
        try writeSoundFile(path, format: format, channels: n, sampleRate: rate, samples: samples)
        return (path, samples)
    }

    /// A graph: a playlist with `params` (a JSON object's members) into a
    /// capture node.
    func graph(_ params: String) -> String {
        """
        {"format": "agraph/1", "sampleRate": \(Int(Self.rate)),
         "nodes": [{"id": "pl", "type": "playlist", "params": {\(params)}},
                   {"id": "cap", "type": "capture"}],
         "links": [{"from": "pl", "to": "cap"}]}
        """
    }

    /// `items` as the graph's JSON: paths, with optional extra members.
    func items(_ entries: [(path: String, extra: String)]) -> String {
        "\"items\": [" + entries.map { "{\"path\": \"\($0.path)\"\($0.extra.isEmpty ? "" : ", " + $0.extra)}" }
            .joined(separator: ", ") + "]"
    }

    struct Rendered {
        var channels: [[Float]]
        var events: [PlaylistEvent]
        /// Each command's reply, or its error as "error: …".
        var replies: [String]
        var result: OfflineRenderer.Result
    }

    /// Validates and renders `json` offline in blocks of `blockFrames`;
    /// after the block that ends at frame F, runs the console lines
    /// `commands[F]`. `beforeRendering` runs between compiling and
    /// rendering.
    func render(_ json: String, seconds: Double = 10, blockFrames: Int = 480, commands: [Int: [String]] = [:],
                beforeRendering: () throws -> Void = {}) throws -> Rendered {
        let store = CaptureStore(capacityFrames: Int(seconds * Self.rate) + blockFrames)
        let (registry, _) = TestGraph.pluginRegistry(["main": store])
        let graph = try TestGraph.validate(json, registry: registry, directory: dir.path).get()
        let compiled = try GraphCompiler.compile(graph, maxFrames: blockFrames)
        let control = ControlSurface(compiled: compiled, host: OfflineHost())
        try beforeRendering()
        var replies: [String] = []
        for line in commands[0] ?? [] { replies.append(run(line, control)) }
        let result = OfflineRenderer(engine: compiled.engine, blockFrames: blockFrames)
            .run(maxFrames: Int(seconds * Self.rate), progress: { done in
                for line in commands[done] ?? [] { replies.append(self.run(line, control)) }
            })
        var cursor = PlaylistEventCursor()
        let events = control.playlistEvents(since: &cursor)
        return Rendered(channels: (0..<store.channels.count).map { store.samples($0) }, events: events,
                        replies: replies, result: result)
    }

    private func run(_ line: String, _ control: ControlSurface) -> String {
        switch control.execute(line: line) {
        case .success(let reply)?: reply.text
        case .failure(let error)?: "error: " + error.message
        case nil: ""
        }
    }

    /// The level (dBFS, peak) of `frequency` in `x[range]`.
    func level(_ x: [Float], _ range: Range<Int>, _ frequency: Double) -> Double {
        SignalAnalysis.dBFS(SignalAnalysis.goertzelMagnitude(Array(x[range]), sampleRate: Self.rate, frequency: frequency))
    }

    /// The events as short words: "started 0", "failed 1", …
    func words(_ events: [PlaylistEvent]) -> [String] {
        events.map { e in
            let kind = switch e.kind {
            case .started: "started"
            case .ended: "ended"
            case .skipped: "skipped"
            case .failed: "failed"
            }
            return "\(kind) \(e.item)"
        }
    }
}
