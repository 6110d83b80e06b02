// swift-tools-version: 6.3
// An M4A (AAC in MP4) rendered to a stereo WAV through AudioGraph: the
// `media` source demuxes it, the `ffmpeg` decoder plugin decodes it, a
// `downmix` folds it to stereo. Depends on AudioGraph by path.
import PackageDescription

let package = Package(
    name: "RenderM4A",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named: a path dependency is otherwise known by its folder's name.
        .package(name: "AudioGraph", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "render-m4a",
            dependencies: [.product(name: "AudioGraph", package: "AudioGraph")],
            path: "Sources/render-m4a"
        ),
    ]
)
