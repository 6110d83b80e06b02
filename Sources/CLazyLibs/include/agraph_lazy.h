#ifndef AGRAPH_LAZY_H
#define AGRAPH_LAZY_H
/* The libraries AudioGraph loads on first use, not when a program starts:
 * FFmpeg's (the `media` source, the FFT of `binaural` and `analyze`),
 * lilv and serd (LV2 hosting), libmysofa (SOFA sets), liblo (OSC),
 * libjack (live graphs), libsndfile (sound files). The
 * package does not link them; stubs.c (written by scripts/lazy-stubs)
 * defines every function AudioGraph calls in them, and the first call
 * loads the library with dlopen. `agraph --version`, `agraph validate` of a
 * graph that needs none of them and a render of a tone start without them
 * (docs/performance.md, "Start-up").
 *
 * Code that can report an error calls agraph_lazy_load first and reports
 * agraph_lazy_error; a stub called when its library cannot be loaded ends
 * the process with that error on stderr. After a library is loaded a stub
 * costs an atomic load and an indirect call: no lock, no allocation (audio
 * threads may call them; only the loading itself must not happen there). */

#ifdef __cplusplus
extern "C" {
#endif

enum agraph_lazy_library {
    AGRAPH_LAZY_AVFORMAT,
    AGRAPH_LAZY_AVCODEC,
    AGRAPH_LAZY_SWRESAMPLE,
    AGRAPH_LAZY_AVUTIL,
    AGRAPH_LAZY_LILV,
    AGRAPH_LAZY_SERD,
    AGRAPH_LAZY_MYSOFA,
    AGRAPH_LAZY_LO,
    AGRAPH_LAZY_JACK,
    AGRAPH_LAZY_SNDFILE,
    AGRAPH_LAZY_COUNT
};

/* Loads `library` (with what it links) now if it is not loaded yet and
 * resolves every function AudioGraph calls in it. 0 when it is loaded; -1
 * when it cannot be, with the reason in agraph_lazy_error (and every later
 * call fails the same way). [any-thread but the audio thread: may load a
 * library] */
int agraph_lazy_load(enum agraph_lazy_library library);

/* Whether `library` is loaded: 1 or 0. Loads nothing. [any-thread] */
int agraph_lazy_is_loaded(enum agraph_lazy_library library);

/* Why `library` could not be loaded (the file names tried and dlopen's
 * reason, or the missing function), or NULL. [any-thread] */
const char *agraph_lazy_error(enum agraph_lazy_library library);

/* The file name `library` is loaded from first (its soname, as the
 * headers AudioGraph was built with give its major version). [any-thread] */
const char *agraph_lazy_soname(enum agraph_lazy_library library);

/* The Debian package that holds `library`, for error messages. [any-thread] */
const char *agraph_lazy_package(enum agraph_lazy_library library);

#ifdef __cplusplus
}
#endif
#endif
