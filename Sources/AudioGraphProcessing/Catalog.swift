import AudioGraphCore
import AudioGraphNodeAPI

/// The processing node types: rates, channels, time and tone, dynamics,
/// metering and loudness, comparison. Each group is declared in its own file.
public enum ProcessingNodes {
    /// Every processing node type, for the built-in registry. [main-thread | control-thread;
    /// OSC's reload builds the registry on its thread]
    public static var all: [any NodeType] {
        ThreadRole.check(.main, .control)
        return rateNodes + channelNodes + timeAndToneNodes + dynamicsNodes + loudnessNodes + comparisonNodes
    }
}
