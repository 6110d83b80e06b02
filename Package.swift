// swift-tools-version: 6.3
//
// AudioGraph: a modular audio node graph for Linux, run inside a JACK client
// or offline. Module map: every target, one role each.
//
// Core and graphs
//   AudioGraphCore     formats, buses, SPSC rings, @_noLocks DSP kernels, delay lines,
//                      the engine, the offline renderer, host services (route, thread roles)
//   CPrefetch          C: cache prefetch hints (__builtin_prefetch) for the engine's cycle
//   AudioGraphNodeAPI  the node-authoring API: node types, descriptors, ports, resolve and
//                      instance contexts, the registry, path and file checks
//   GraphFile          graph files: positioned JSON parser, validation, diagnostics, the
//                      validated graph model (re-exports AudioGraphNodeAPI)
//   AudioGraphHost     the host layer, naming no node module: compiler, control surface and
//                      control lines, reload diffs, offline passes, describe/schema, dot,
//                      JSON writer (JACK, OSC and plugin loading sit on it)
//   AudioGraph         the umbrella: composes the built-in nodes, plugin loading, LV2 and
//                      analysis over the host layer and re-exports them; `render -o`
//   AudioGraphAnalysis renderer comparison (`agraph compare`): outputs of two nodes captured
//                      offline, loudness-matched measures, 1/3-octave bands (Welch PSD over
//                      libavutil's av_tx), correlation, ILD/ITD from impulses, the report
// Nodes
//   AudioGraphNodes    built-in realtime nodes (test-tone, gain, mixer, split, format-tag,
//                      null) and the `ac4` sync-frame source
//   AudioGraphSndFile  libsndfile: `file` and `file-out`, formats, channel maps, outputs
//                      written under a temporary name
//   AudioGraphMedia    the `media` demuxer source (libavformat)
//   AudioGraphPlaylist the `playlist` source: items decoded through a decoder plugin (ffmpeg),
//                      gapless, edited live
//   AudioGraphProcessing  processing nodes: resample (libsoxr), channel-map, downmix/upmix,
//                      delay, filter, limiter, meter, loudness (libebur128)
//   CSoxr, CEBUR128    libsoxr and libebur128 (pkg-config)
//   AudioGraphBinaural the `binaural` renderer: HRTFs from a SOFA file (libmysofa), uniformly
//                      partitioned FFT convolution (av_tx), head rotation crossfaded off a worker
//   CMySOFA, CAVUtil   libmysofa and libavutil alone (headers; loaded on first use, CLazyLibs)
//   CLazyLibs          C: FFmpeg, lilv, serd, libmysofa, liblo, libjack, libsndfile loaded on first use (dlopen),
//                      not at start-up: a stub per function called (scripts/lazy-stubs)
//   AudioGraphLV2      the `lv2` node: LV2 plugins through lilv (descriptions, parameters by
//                      port symbol, instances, URID/options/worker/state/log features)
//   CLilv, CLV2Host    lilv and the LV2 headers (loaded on first use, CLazyLibs); C for LV2 log's variadic printf
//   AC4                the AC-4 sync-frame reader, TOC, index, writer (no audio)
//   CFraming           C: CRC-16/0x8005, the AC-4 TOC's first fields and sequence counter,
//                      shared by AC4, the FLAC repair, the DAA plugin and its test double
// Live JACK
//   AudioGraphJACK     the only module that imports libjack: session, process cycle,
//                      embedded server, jack-in/jack-out, RunningGraph
//   CJack, CJackShim   libjack (headers; loaded on first use, CLazyLibs) and a C shim for its variadic calls
//   AudioGraphOSC      the OSC server (`agraph run --osc`): a control surface's set/get/seek/
//                      pause/play/status and subscriptions over UDP; no JACK (works on any
//                      ControlSurface); NSMClient, the client side of the NSM session API
//   CLo                liblo (headers; loaded on first use, CLazyLibs): reads OSC messages, parses OSC URLs
//   CSndFile           libsndfile (headers; loaded on first use, CLazyLibs)
// Applications (agraph's logic, reached by tests without a subprocess)
//   AudioGraphLive     `agraph run`'s live side: the console (control lines, status line),
//                      the reloader (file watching, hot reload), the NSM session, the ABX player
//   AudioGraphTools    the offline commands' logic: `render --each` planning, the batch runner
//                      and its render children, leftovers, the ABX trials and their scoring,
//                      `analyze`'s loudness measurement
// Plugins
//   CAGraphPlugin      the plugin ABI 2.0: the core header (agraph/plugin.h) and one header
//                      per extension (ext/*.h), the single source of truth
//   AudioGraphPlugins  loader, host extensions, decoder host, conformance check
//   AGraphPluginKit    write plugins in Swift
//   CAGraphAllocCount  C: per-thread allocation counting for `agraph check-plugin` and the tests
//   ExamplePlugin, PCMFramesPlugin, DAAPlugin   the plugins shipped (Plugins/)
//   CrossfeedPlugin    a renderer as a plugin: headphone crossfeed (input layout tags,
//                      a virtualizing node type)
// Tools
//   agraph             the command-line tool
//   agraph-bench       benchmarks (run in release)
//   agraph-sofa-check  C: reads a SOFA file with libmysofa in a bounded process of its own
//                      (HRTFSet runs it before loading the file in-process)
//   fuzz-*, FuzzSupport  libFuzzer targets (Fuzz/, scripts/fuzz)
// Tests
//   TestSupport        shared test helpers: MallocCounter (over CAGraphAllocCount), the plugin
//                      and C ABI harnesses, JACK test servers and recorders, ChildProcess
//   TestDoubleDAA      a test double of the DAA library's interface (NOT a decoder)
//   AbiMismatchPlugin, HugeCountsPlugin, AllocatingPlugin   plugin fixtures that must be refused
//   AllocatingLV2      an LV2 plugin fixture that allocates in run (check-plugin lv2:URI names it)
//   WorkerLV2          an LV2 plugin fixture that uses the worker extension
//   *Tests             XCTest suites (Tests/)
import PackageDescription

let package = Package(
    name: "AudioGraph",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AudioGraph", targets: ["AudioGraph"]),
        .library(name: "AudioGraphCore", targets: ["AudioGraphCore"]),
        .library(name: "AudioGraphJACK", targets: ["AudioGraphJACK"]),
        .library(name: "AudioGraphAnalysis", targets: ["AudioGraphAnalysis"]),
        .library(name: "AC4", targets: ["AC4"]),
        .library(name: "AGraphPluginKit", targets: ["AGraphPluginKit"]),
        // Node plugins: dynamic libraries loaded at run time.
        .library(name: "AGraphExamplePlugin", type: .dynamic, targets: ["ExamplePlugin"]),
        // A renderer as a plugin: `com.example.crossfeed`, headphone crossfeed.
        .library(name: "AGraphCrossfeedPlugin", type: .dynamic, targets: ["CrossfeedPlugin"]),
        // The Dolby DAA decoder node (loads a licensee's library at run time).
        .library(name: "AGraphDAAPlugin", type: .dynamic, targets: ["DAAPlugin"]),
        // A decoder plugin written on AGraphPluginKit (codec "pcm-frames").
        .library(name: "AGraphPCMFramesPlugin", type: .dynamic, targets: ["PCMFramesPlugin"]),
        // The `ffmpeg` decoder node: libavcodec, written on AGraphPluginKit.
        .library(name: "AGraphFFmpegPlugin", type: .dynamic, targets: ["FFmpegPlugin"]),
        // Test double of the DAA library's interface: NOT a decoder.
        .library(name: "TestDoubleDAA", type: .dynamic, targets: ["TestDoubleDAA"]),
        // Test fixture: a plugin built against another ABI major version.
        .library(name: "AGraphTestAbiMismatchPlugin", type: .dynamic, targets: ["AbiMismatchPlugin"]),
        // Test fixture: a plugin claiming 4 billion node types, parameters or choices, or overlong strings.
        .library(name: "AGraphTestHugeCountsPlugin", type: .dynamic, targets: ["HugeCountsPlugin"]),
        // Test fixture: a plugin that allocates in process (agraph check-plugin must fail it).
        .library(name: "AGraphTestAllocatingPlugin", type: .dynamic, targets: ["AllocatingPlugin"]),
        // An LV2 plugin that allocates in run (a fixture for check-plugin lv2:URI).
        .library(name: "LV2TestAllocating", type: .dynamic, targets: ["AllocatingLV2"]),
        // An LV2 plugin that uses the worker extension (a fixture for the lv2 node's worker).
        .library(name: "LV2TestWorker", type: .dynamic, targets: ["WorkerLV2"]),
        .executable(name: "agraph", targets: ["agraph"]),
        .executable(name: "agraph-bench", targets: ["agraph-bench"]),
        // Reads a SOFA file with libmysofa in a bounded process of its own
        // before the `binaural` node reads it in agraph's (HRTFSet).
        .executable(name: "agraph-sofa-check", targets: ["agraph-sofa-check"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSndFile",
            path: "Sources/CSndFile",
            providers: [.apt(["libsndfile1-dev"])]
        ),
        .systemLibrary(
            name: "CJack",
            path: "Sources/CJack",
            providers: [.apt(["libjack-jackd2-dev"])]
        ),
        .target(name: "CJackShim", dependencies: ["CJack", "CLazyLibs"], path: "Sources/CJackShim"),
        .systemLibrary(
            name: "CSoxr",
            path: "Sources/CSoxr",
            pkgConfig: "soxr",
            providers: [.apt(["libsoxr-dev"])]
        ),
        .systemLibrary(
            name: "CLo",
            path: "Sources/CLo",
            providers: [.apt(["liblo-dev"])]
        ),
        .systemLibrary(
            name: "CEBUR128",
            path: "Sources/CEBUR128",
            pkgConfig: "libebur128",
            providers: [.apt(["libebur128-dev"])]
        ),
        .systemLibrary(
            name: "CLilv",
            path: "Sources/CLilv",
            providers: [.apt(["liblilv-dev", "lv2-dev"])]
        ),
        // FFmpeg, lilv, serd, libmysofa and liblo loaded on first use (dlopen):
        // the stubs of every function AudioGraph calls in them (scripts/lazy-stubs).
        .target(name: "CLazyLibs", path: "Sources/CLazyLibs", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CLV2Host", dependencies: ["CLazyLibs"], path: "Sources/CLV2Host"),
        .target(
            name: "AudioGraphLV2",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "CLilv", "CLV2Host", "CLazyLibs"],
            path: "Sources/AudioGraphLV2"
        ),
        .systemLibrary(
            name: "CMySOFA",
            path: "Sources/CMySOFA",
            providers: [.apt(["libmysofa-dev"])]
        ),
        // libavutil alone (av_tx, the FFT of the `binaural` node).
        .systemLibrary(
            name: "CAVUtil",
            path: "Sources/CAVUtil",
            providers: [.apt(["libavutil-dev"])]
        ),
        // FFmpeg: libavformat (the `media` source's demuxer), libavcodec and
        // libswresample (the `ffmpeg` decoder plugin), libavutil.
        .systemLibrary(
            name: "CFFmpeg",
            path: "Sources/CFFmpeg",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswresample-dev", "libavutil-dev"])]
        ),
        .target(
            name: "AudioGraphProcessing",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "CSoxr", "CEBUR128"],
            path: "Sources/AudioGraphProcessing"
        ),
        .target(
            name: "AudioGraphBinaural",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "CMySOFA", "CAVUtil", "CLazyLibs"],
            path: "Sources/AudioGraphBinaural"
        ),
        .target(name: "CPrefetch", path: "Sources/CPrefetch"),
        .target(name: "AudioGraphCore", dependencies: ["CPrefetch", "CLazyLibs"], path: "Sources/AudioGraphCore"),
        .target(
            name: "AudioGraphNodeAPI",
            dependencies: ["AudioGraphCore"],
            path: "Sources/AudioGraphNodeAPI"
        ),
        .target(
            name: "GraphFile",
            dependencies: [
                "AudioGraphCore",
                "AudioGraphNodeAPI",
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            path: "Sources/GraphFile"
        ),
        .target(
            name: "AudioGraphNodes",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "AC4"],
            path: "Sources/AudioGraphNodes"
        ),
        .target(
            name: "AudioGraphSndFile",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "AudioGraphProcessing", "CSndFile", "CFraming"],
            path: "Sources/AudioGraphSndFile"
        ),
        .target(
            name: "AudioGraphMedia",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "CFFmpeg", "CLazyLibs"],
            path: "Sources/AudioGraphMedia"
        ),
        .target(
            name: "AudioGraphPlaylist",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "GraphFile", "AudioGraphMedia", "AudioGraphProcessing"],
            path: "Sources/AudioGraphPlaylist"
        ),
        // The host layer: compiler, control surface and control lines, reload
        // diffs, offline passes, describe/schema, the graph monitor. It names
        // no node module (DependencyRuleTests).
        .target(
            name: "AudioGraphHost",
            dependencies: ["AudioGraphCore", "AudioGraphNodeAPI", "GraphFile"],
            path: "Sources/AudioGraphHost"
        ),
        // The umbrella: composes the built-in nodes, plugin loading, LV2 and
        // analysis over the host layer, and re-exports them.
        .target(
            name: "AudioGraph",
            dependencies: ["AudioGraphHost", "AudioGraphNodes", "AudioGraphProcessing", "AudioGraphSndFile",
                           "AudioGraphMedia", "AudioGraphPlaylist", "AudioGraphBinaural", "AudioGraphLV2", "AC4",
                           "AudioGraphPlugins", "AudioGraphAnalysis"],
            path: "Sources/AudioGraph"
        ),
        .target(
            name: "AudioGraphAnalysis",
            dependencies: ["AudioGraphHost", "AudioGraphProcessing", "CFFmpeg", "CLazyLibs"],
            path: "Sources/AudioGraphAnalysis"
        ),
        .target(
            name: "AudioGraphJACK",
            dependencies: ["AudioGraphHost", "CJack", "CJackShim"],
            path: "Sources/AudioGraphJACK"
        ),
        .target(
            name: "AudioGraphOSC",
            dependencies: ["AudioGraphHost", "CLo", "CLazyLibs"],
            path: "Sources/AudioGraphOSC"
        ),
        // agraph's live application logic: console, reloader, NSM session.
        .target(
            name: "AudioGraphLive",
            dependencies: ["AudioGraph", "AudioGraphJACK", "AudioGraphOSC", "AudioGraphTools"],
            path: "Sources/AudioGraphLive"
        ),
        // agraph's offline application logic: batch plans, ABX trials, analyze.
        .target(
            name: "AudioGraphTools",
            dependencies: ["AudioGraph"],
            path: "Sources/AudioGraphTools"
        ),
        // CRC-16 (AC-4 and FLAC), the AC-4 TOC and sequence counter: one home
        // for the Swift modules and the C plugins.
        .target(name: "CFraming", path: "Sources/CFraming"),
        .target(name: "AC4", dependencies: ["CFraming"], path: "Sources/AC4"),
        // The plugin ABI: one C header, the single source of truth.
        .target(name: "CAGraphPlugin", path: "Sources/CAGraphPlugin"),
        .target(
            name: "AudioGraphPlugins",
            dependencies: ["AudioGraphHost", "CAGraphPlugin"],
            path: "Sources/AudioGraphPlugins"
        ),
        .target(
            name: "AGraphPluginKit",
            dependencies: ["CAGraphPlugin"],
            path: "Sources/AGraphPluginKit"
        ),
        .target(
            name: "ExamplePlugin",
            dependencies: ["AGraphPluginKit"],
            path: "Plugins/ExamplePlugin",
            exclude: ["README.md"]
        ),
        .target(
            name: "CrossfeedPlugin",
            dependencies: ["AGraphPluginKit"],
            path: "Plugins/CrossfeedPlugin"
        ),
        .target(
            name: "PCMFramesPlugin",
            dependencies: ["AGraphPluginKit"],
            path: "Plugins/PCMFramesPlugin"
        ),
        .target(
            name: "FFmpegPlugin",
            dependencies: ["AGraphPluginKit", "CFFmpeg"],
            path: "Plugins/FFmpegPlugin",
            // A plugin, loaded only when a graph needs it: it links FFmpeg itself.
            linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("swresample"),
                             .linkedLibrary("avutil")]
        ),
        .target(
            name: "DAAPlugin",
            dependencies: ["CAGraphPlugin", "CFraming"],
            path: "Plugins/DAAPlugin",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        .target(
            name: "TestDoubleDAA",
            dependencies: ["CFraming"],
            path: "Tests/DAATestDouble"
        ),
        .target(
            name: "AbiMismatchPlugin",
            path: "Tests/PluginFixtures/AbiMismatchPlugin"
        ),
        .target(
            name: "HugeCountsPlugin",
            path: "Tests/PluginFixtures/HugeCountsPlugin"
        ),
        .target(
            name: "AllocatingPlugin",
            path: "Tests/PluginFixtures/AllocatingPlugin"
        ),
        .target(
            name: "AllocatingLV2",
            dependencies: ["CLilv"],
            path: "Tests/PluginFixtures/AllocatingLV2"
        ),
        .target(
            name: "WorkerLV2",
            dependencies: ["CLilv"],
            path: "Tests/PluginFixtures/WorkerLV2"
        ),
        // Per-thread allocation counting for `agraph check-plugin`: replaces
        // malloc, so it is linked into the agraph executable only.
        .target(name: "CAGraphAllocCount", path: "Sources/CAGraphAllocCount"),
        .executableTarget(
            name: "agraph",
            dependencies: [
                "AudioGraph",
                "AudioGraphAnalysis",
                "AudioGraphJACK",
                "AudioGraphOSC",
                "AudioGraphLive",
                "AudioGraphTools",
                "AudioGraphPlugins",
                "AudioGraphProcessing",
                "AudioGraphSndFile",
                "AudioGraphMedia",
                "AC4",
                "CAGraphAllocCount",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/agraph",
            // The Swift runtime, Foundation and ICU linked in: loading them as
            // ~15 shared libraries took ~13 ms of every start (docs/performance.md,
            // "Start-up"). The modules are built against the shared Foundation,
            // whose link entries name no CoreFoundation: named here. Plugins
            // talk to agraph through the C ABI only.
            // Release builds only: a sanitizer build (debug) needs a PIE executable
            // that exports the sanitizer's interceptors to libraries loaded later
            // (-static-stdlib hides every static archive's symbols: libjack's
            // threads started unseen by ThreadSanitizer).
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-lFoundation", "-lFoundationInternationalization",
                                           "-lFoundationEssentials", "-lCoreFoundation", "-l_FoundationICU",
                                           "-l_FoundationCShims", "-l_FoundationCollections", "-lstdc++", "-Xlinker", "-no-pie"],
                                          .when(configuration: .release))]
        ),
        // C: libmysofa's mysofa_load and mysofa_check on one file under
        // resource limits (RLIMIT_AS, RLIMIT_CPU); HRTFSet spawns it.
        .executableTarget(name: "agraph-sofa-check", dependencies: ["CMySOFA"], path: "Sources/agraph-sofa-check",
                          linkerSettings: [.linkedLibrary("mysofa")]),
        .executableTarget(
            name: "agraph-bench",
            dependencies: [
                "AudioGraph",
                "AudioGraphJACK",
                "AudioGraphOSC",
                "CJack",
                "CLilv",
                "CLV2Host",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/agraph-bench"
        ),

        // MARK: tests
        .target(
            name: "TestSupport",
            dependencies: ["AudioGraph", "AudioGraphOSC", "AudioGraphPlugins", "CAGraphPlugin", "CAGraphAllocCount", "CSndFile",
                           "CJack", "CJackShim"],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "AudioGraphCoreTests",
            dependencies: ["AudioGraphCore", "TestSupport"],
            path: "Tests/AudioGraphCoreTests"
        ),
        .testTarget(
            name: "GraphFileTests",
            dependencies: ["GraphFile", "TestSupport"],
            path: "Tests/GraphFileTests"
        ),
        .testTarget(
            name: "AudioGraphTests",
            dependencies: ["AudioGraph", "AudioGraphJACK", "TestSupport", "CSndFile"],
            path: "Tests/AudioGraphTests"
        ),
        .testTarget(
            name: "LiveJACKTests",
            dependencies: ["AudioGraphJACK", "AudioGraphOSC", "AudioGraphPlugins", "TestSupport", "CJack", "CJackShim",
                           "CAGraphAllocCount", "CLo"],
            path: "Tests/LiveJACKTests"
        ),
        .testTarget(
            name: "OSCTests",
            dependencies: ["AudioGraphOSC", "AudioGraph", "AudioGraphProcessing", "TestSupport", "CLo"],
            path: "Tests/OSCTests"
        ),
        .testTarget(
            name: "AC4Tests",
            dependencies: ["AC4", "TestSupport"],
            path: "Tests/AC4Tests"
        ),
        .testTarget(
            name: "DAATests",
            dependencies: ["AudioGraphPlugins", "AudioGraphMedia", "AC4", "TestSupport"],
            path: "Tests/DAATests"
        ),
        .testTarget(
            name: "PluginTests",
            dependencies: ["AudioGraphPlugins", "AGraphPluginKit", "AudioGraphJACK", "TestSupport"],
            path: "Tests/PluginTests"
        ),
        .testTarget(
            name: "CLITests",
            dependencies: ["AudioGraph", "AudioGraphProcessing", "TestSupport"],
            path: "Tests/CLITests"
        ),
        .testTarget(
            name: "AudioGraphToolsTests",
            dependencies: ["AudioGraphTools", "AudioGraphLive", "AudioGraph", "TestSupport", "CSndFile"],
            path: "Tests/AudioGraphToolsTests"
        ),
        .testTarget(
            name: "AnalysisTests",
            dependencies: ["AudioGraphAnalysis", "AudioGraph", "AudioGraphProcessing", "TestSupport"],
            path: "Tests/AnalysisTests"
        ),
        .testTarget(
            name: "PlaylistTests",
            dependencies: ["AudioGraph", "AudioGraphPlugins", "TestSupport"],
            path: "Tests/PlaylistTests"
        ),
        .testTarget(
            name: "ProcessingTests",
            dependencies: ["AudioGraph", "AudioGraphProcessing", "AudioGraphSndFile", "TestSupport", "CSndFile"],
            path: "Tests/ProcessingTests"
        ),
        .testTarget(
            name: "LV2Tests",
            dependencies: ["AudioGraph", "AudioGraphLV2", "TestSupport"],
            path: "Tests/LV2Tests"
        ),
        .testTarget(
            name: "BinauralTests",
            dependencies: ["AudioGraph", "AudioGraphBinaural", "TestSupport", "CMySOFA", "CSndFile"],
            path: "Tests/BinauralTests"
        ),
    ]
)

// MARK: fuzzing (Fuzz/README.md)
// libFuzzer targets. scripts/fuzz builds them in .build-fuzz with
// -Xswiftc -DAGRAPH_FUZZ --sanitize=fuzzer --sanitize=address; in the normal
// build they replay saved inputs instead (`fuzz-json FILE|FOLDER…`).
package.targets.append(.target(name: "FuzzSupport", path: "Fuzz/Support"))
for (name, folder, dependencies) in [
    ("fuzz-json", "json", ["GraphFile"]),
    ("fuzz-validator", "validator", ["AudioGraph"]),
    ("fuzz-ac4", "ac4", ["AC4"]),
    ("fuzz-control-line", "control-line", ["AudioGraph"]),
    ("fuzz-osc", "osc", ["AudioGraphOSC"]),
    ("fuzz-media", "media", ["AudioGraphMedia"]),
    ("fuzz-sofa", "sofa", ["AudioGraphBinaural", "CMySOFA"]),
    ("fuzz-playlist", "playlist", ["AudioGraph"]),
    ("fuzz-reload-diff", "reload-diff", ["AudioGraph"]),
] as [(String, String, [Target.Dependency])] {
    package.targets.append(.executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies, path: "Fuzz/\(folder)"))
}
