/// The node plugins this package builds (Package.swift's dynamic library
/// products) and the node types each provides: the one table an unknown
/// node type is looked up in, so that a graph naming `ffmpeg` without the
/// plugin built is told which product to build, not only that the type is
/// unknown. UnknownNodeMessageTests loads each product and checks that it
/// provides exactly these types.
public enum PackagePlugins {
    /// A plugin product of this package and its node type ids.
    public struct Product: Sendable, Equatable {
        /// The product's name in Package.swift (`swift build --product …`).
        public let name: String
        public let typeIDs: [String]
        /// The library file the product builds and the loader opens.
        public var fileName: String { "lib\(name).so" }
    }

    public static let products: [Product] = [
        Product(name: "AGraphFFmpegPlugin", typeIDs: ["ffmpeg"]),
        Product(name: "AGraphDAAPlugin", typeIDs: ["daa"]),
        Product(name: "AGraphPCMFramesPlugin", typeIDs: ["com.audiograph.pcm-frames"]),
        Product(name: "AGraphCrossfeedPlugin", typeIDs: ["com.example.crossfeed"]),
        Product(name: "AGraphExamplePlugin", typeIDs: ["com.example.ring-modulator", "com.example.ducker"]),
    ]

    /// The product that provides `typeID`, if it is one of this package's
    /// plugins. [any-thread]
    public static func product(providing typeID: String) -> Product? {
        products.first { $0.typeIDs.contains(typeID) }
    }

    /// What to do about `typeID` missing from a registry when a plugin of
    /// this package provides it, e.g. `it comes from the plugin product
    /// AGraphFFmpegPlugin of this package; build it with …`; nil for any
    /// other type. [any-thread]
    public static func buildHint(for typeID: String) -> String? {
        product(providing: typeID).map {
            "it comes from the plugin product \($0.name) of this package; build it with "
                + "`swift build --product \($0.name)` (or scripts/demo), or put the folder holding "
                + "\($0.fileName) on AGRAPH_PLUGIN_PATH"
        }
    }
}
