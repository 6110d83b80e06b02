@_exported import AudioGraphCore
@_exported import GraphFile
import AudioGraphNodes
import AudioGraphProcessing
import AudioGraphBinaural
@_exported import AudioGraphLV2
import AudioGraphSndFile
import AudioGraphMedia
@_exported import AudioGraphPlaylist

extension NodeRegistry {
    /// Every node type that ships with AudioGraph.
    public static var builtIn: NodeRegistry {
        NodeRegistry([
            TestToneType(), FileSourceType(), AC4SourceType(), MediaSourceType(),
            GainType(), MixerType(), SplitType(), FormatTagType(),
            FileSinkType(), NullType(), PlaylistType(), LV2NodeType(),
        ] + ProcessingNodes.all + BinauralNodes.all)
    }
}
