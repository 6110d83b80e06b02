@_exported import AudioGraphCore
@_exported import GraphFile
import AudioGraphNodes
import AudioGraphProcessing
import AudioGraphBinaural
import AudioGraphSndFile
import AudioGraphMedia
@_exported import AudioGraphPlaylist

extension NodeRegistry {
    /// Every node type that ships with AudioGraph.
    public static var builtIn: NodeRegistry {
        NodeRegistry([
            TestToneType(), FileSourceType(), AC4SourceType(), MediaSourceType(),
            GainType(), MixerType(), SplitType(), FormatTagType(),
            FileSinkType(), NullType(), PlaylistType(),
        ] + ProcessingNodes.all + BinauralNodes.all)
    }
}
