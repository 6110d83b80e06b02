// The umbrella module: `import AudioGraph` gives everything offline — the
// host layer, every built-in node, plugin discovery and loading, LV2,
// media, analysis — and the registry that composes them.
@_exported import AudioGraphHost
@_exported import AudioGraphNodes
@_exported import AudioGraphProcessing
@_exported import AudioGraphBinaural
@_exported import AudioGraphLV2
@_exported import AudioGraphSndFile
@_exported import AudioGraphMedia
@_exported import AudioGraphPlaylist
@_exported import AudioGraphPlugins
@_exported import AudioGraphAnalysis
@_exported import AC4

extension NodeRegistry {
    /// Every node type that ships with AudioGraph (no plugins, no JACK
    /// ports). [any-thread]
    public static var builtIn: NodeRegistry {
        NodeRegistry([
            TestToneType(), FileSourceType(), AC4SourceType(), MediaSourceType(),
            GainType(), MixerType(), SplitType(), FormatTagType(),
            FileSinkType(), NullType(), PlaylistType(), LV2NodeType(),
        ] + ProcessingNodes.all + BinauralNodes.all)
    }
}
