// swift-tools-version: 6.3
// A node plugin outside AudioGraph: one node type, `com.example.gain`,
// written on AGraphPluginKit and built as libAGraphGainPlugin.so, the name
// agraph's plugin search opens (libAGraph*.so). Depends on AudioGraph by path.
import PackageDescription

let package = Package(
    name: "GainPlugin",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AGraphGainPlugin", type: .dynamic, targets: ["GainPlugin"]),
    ],
    dependencies: [
        // Named: a path dependency is otherwise known by its folder's name.
        .package(name: "AudioGraph", path: "../.."),
    ],
    targets: [
        .target(
            name: "GainPlugin",
            dependencies: [.product(name: "AGraphPluginKit", package: "AudioGraph")],
            path: "Sources/GainPlugin"
        ),
    ]
)
