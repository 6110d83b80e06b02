import CLazyLibs

/// A library AudioGraph loads the first time a graph needs it, not when a
/// program starts (`CLazyLibs`): FFmpeg's (`media`, and the FFT of
/// `binaural` and `analyze`), lilv and serd (`lv2`), libmysofa (`binaural`),
/// liblo (OSC), libjack (live graphs), libsndfile (sound files). Code that can report an error asks for its libraries first
/// with `require`, so that a missing one is an error naming it rather than
/// the end of the process at the first call.
public enum LazyLibrary: Sendable, CaseIterable {
    case avformat, avcodec, swresample, avutil, lilv, serd, mysofa, liblo, jack, sndfile

    var raw: agraph_lazy_library {
        switch self {
        case .avformat: AGRAPH_LAZY_AVFORMAT
        case .avcodec: AGRAPH_LAZY_AVCODEC
        case .swresample: AGRAPH_LAZY_SWRESAMPLE
        case .avutil: AGRAPH_LAZY_AVUTIL
        case .lilv: AGRAPH_LAZY_LILV
        case .serd: AGRAPH_LAZY_SERD
        case .mysofa: AGRAPH_LAZY_MYSOFA
        case .liblo: AGRAPH_LAZY_LO
        case .jack: AGRAPH_LAZY_JACK
        case .sndfile: AGRAPH_LAZY_SNDFILE
        }
    }

    /// The file it is loaded from (its soname), e.g. `libavformat.so.59`. [any-thread]
    public var soname: String { String(cString: agraph_lazy_soname(raw)) }

    /// Whether it is loaded. Loads nothing. [any-thread]
    public var isLoaded: Bool { agraph_lazy_is_loaded(raw) != 0 }

    /// Loads each of `libraries` not loaded yet; nil when all are loaded,
    /// else why the first that cannot be is missing (its file, its Debian
    /// package and the loader's reason). `for` names what needs them, e.g.
    /// "the `media` source". Blocks while a library loads: never call it
    /// on the audio thread. [any-thread; loads a library the first time: not the audio thread]
    public static func require(_ libraries: LazyLibrary..., for user: String) -> String? {
        for library in libraries where agraph_lazy_load(library.raw) != 0 {
            let reason = agraph_lazy_error(library.raw).map { String(cString: $0) } ?? "cannot load \(library.soname)"
            return "\(user) needs \(library.soname), which is not available: \(reason)"
        }
        return nil
    }
}
