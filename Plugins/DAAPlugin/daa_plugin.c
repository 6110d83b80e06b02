/*
 * daa_plugin.c — the `daa` node: Dolby AC-4 decoding through a licensee's
 * Dolby Audio for Applications (DAA) library, loaded at run time.
 *
 * ========================================================================
 * For users
 * ========================================================================
 * The project never ships the DAA library: you need a licensee's build of
 * it. The node finds it, in this order:
 *   1. the node's `library` parameter: a file name (or a path) that the
 *      host resolves, before this plugin sees it, inside the vendor-library
 *      folders configured outside any graph (AGRAPH_VENDOR_LIBRARY_PATH,
 *      $XDG_CONFIG_HOME/agraph/vendor-library-path; the parameter carries
 *      AGRAPH_PARAM_VENDOR_LIBRARY). A graph file is data: it cannot make
 *      the node load a library from anywhere else. The plugin receives the
 *      real absolute path;
 *   2. the DAA_LIBRARY environment variable (a path, or a bare file name
 *      that the dynamic loader resolves: set by the user, not a graph);
 *   3. the usual names, on the dynamic loader's path (LD_LIBRARY_PATH,
 *      /etc/ld.so.cache, /lib, /usr/lib): libdlb_decode.so,
 *      libdlbdecode.so, libdaa.so (see `usual_names` below).
 * When none loads, the graph fails to validate with a message saying how to
 * provide it and what was searched; a library that lacks one of the eight
 * interface functions is named with the missing symbols.
 *
 * Graph node:  {"id": "dec", "type": "daa", "params": {"endpoint": "headphones"}}
 * linked from an `ac4` node (AC-4 sync frames from an .ac4 file, "ac4-sync")
 * or from a `media` node over an MP4's `ac-4` track (raw AC-4 frames, as
 * ETSI TS 103 190-2 Annex E stores them: "ac4-raw") to anything taking
 * stereo. Output: 2 channels, float, 48 kHz, tagged `binaural` when
 * the virtualizer runs on the headphone endpoint, else `stereo` (so nothing
 * downstream virtualizes it again).
 *
 * Parameters (LIVE ones change from the next frame decoded):
 *   library               string, optional      the DAA library (see above)
 *   endpoint              headphones|speakers|auto (default auto)
 *   fallbackEndpoint      headphones|speakers (default headphones): the
 *                         endpoint used when `endpoint` is auto and nothing
 *                         tells the node the output device (offline)
 *   virtualizer           bool, LIVE, default true
 *   dialogueEnhancement   0…9, LIVE, default 0 (DAAPlay's setting)
 *   outputReferenceLevel  -23…-11 LKFS, LIVE, default -16 (DAAPlay's)
 *   presentation          -1…510, LIVE, default -1 = the first decodable
 *   mainAssociatedMix     -32…32, LIVE, default 0 (-32 associated muted,
 *                         32 main muted)
 * `endpoint` and `fallbackEndpoint` are LIVE choices (the value is the
 * choice's index). With endpoint auto, the output route picks the
 * endpoint, as DAAPlay follows route changes: the host's
 * `agraph.output-route/1` extension (ext/output-route.h), read at create and at
 * activate, and followed from the next frame when the host says it changed
 * (agraph run works it out from the jack-out node's connections and its
 * `headphones` patterns); unknown (offline, or a host without the
 * extension) falls back to fallbackEndpoint.
 *
 * The library is opened once per process per path (the plugin's init
 * prepares the cache; without init it works the same, lazily): check,
 * create and the plugin-info details share it; deinit closes them all.
 *
 * ========================================================================
 * How it drives the library (docs/daa-api.md; DAAPlay's behaviour)
 * ========================================================================
 * first use of a library (check, create or details; cached per path):
 *           dlopen(RTLD_NOW|RTLD_LOCAL), dlsym of the eight functions,
 *           query_info (versions, kept for messages and `agraph nodes`).
 * activate: query_memory for AC-4 simple transport (type 0), float32 output
 *           (type 7), timescale 48000 → calloc(decoder_size) → open →
 *           setparam DE, ORL, presentation, mixing, endpoint, virtualizer.
 * open_stream (AGRAPH_EXT_DECODER_STREAM; the host calls it for `media`
 *           sources, never for `ac4`): codec "ac4-raw" → close, query_memory
 *           for raw frames (type 1), open again with every parameter;
 *           "ac4-sync" keeps type 0; other codecs are refused. The 'dac4'
 *           DSI (extradata) is not passed on: the DAA interface has no input
 *           for it (raw frames carry their own TOC).
 * trim_next_frame: the samples the container leaves out of the next frame
 *           (daa_trim.h), placed by the frame's length from its TOC
 *           (agraph_framing.h) and dropped from the output as it goes by.
 * decode:   pending parameter changes (setparam) → addbytes in a loop until
 *           the whole frame is consumed (the library may take fewer bytes
 *           than given), process whenever it reports frame_complete.
 * flush:    close, zero the memory, open again, set every parameter (the
 *           interface has no reset).
 * deactivate: close, free.
 *
 * Latency: after open, the first PCM frame written is sample 0 of the first
 * compressed frame fed. The delay is measured at the first process call that
 * returns samples: input timestamp of the first frame minus the
 * output_timestamp the library reports; else the library's
 * delay_samples_num; else DAAPlay's estimate, 3168 samples. That many
 * samples are dropped from the start. At the end of the stream (decode with
 * frame NULL, size 0: "drain") the held-back tail is pushed out by feeding
 * copies of the last frame (sequence counter advanced; a sync frame's CRC
 * recomputed) and
 * keeping only the tail, so the output has exactly as many samples as the
 * frames fed. decoder_latency() is 0 after trimming.
 *
 * Errors: every DAA error code becomes "DAA error <code>: <meaning>
 * (<function>…)": in check/create/activate through the error buffer, in
 * decode through the diagnostics extension (daa_plugin.h). Codes about the
 * frame (1005 frame not valid, 1006 needs more data, 1007 processing, 1011
 * program change, 1012 program mixing) make decode return BAD_FRAME (the
 * host writes silence for the frame and goes on); the others FATAL.
 */
#define _GNU_SOURCE /* dladdr */
#include "agraph_framing.h"
#include "daa_plugin.h"
#include "daa_trim.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================
 * The DAA interface, in this project's words (field order of daa-api.md)
 * ====================================================================== */

typedef struct daa_query_in {
    int output_datatype;        /* 7 = float32 in [-1, 1] */
    int input_bitstream_format; /* 1 = AC-4 */
    int input_bitstream_type;   /* 0 = sync frames ("simple transport") */
    unsigned long timescale;    /* ticks per second */
} daa_query_in;

typedef struct daa_query_info_out {
    char daa_version[20];
    char daa_api_version;
    char core_decoder_version[10];
    char dap_version[10];
} daa_query_info_out;

typedef struct daa_query_mem_out {
    size_t decoder_size;
    size_t output_buffer_size;
} daa_query_mem_out;

typedef struct daa_pcm_buffer {
    unsigned nchannel;
    ptrdiff_t nstride;
    int data_type;
    void **ppdata;
} daa_pcm_buffer;

typedef struct daa_io {
    daa_pcm_buffer *pcm_output_buf;
    unsigned long output_sample_rate;
    unsigned int output_channels_num;
    unsigned int output_samples_num;
    unsigned int delay_samples_num;
    long long output_timestamp;
} daa_io;

typedef int (*fn_query_info)(const daa_query_in *, daa_query_info_out *);
typedef int (*fn_query_memory)(const daa_query_in *, daa_query_mem_out *);
typedef int (*fn_open)(const daa_query_in *, void *);
typedef int (*fn_addbytes)(void *, const char *, unsigned int, long long, unsigned int *, int *);
typedef int (*fn_process)(void *, daa_io *);
typedef int (*fn_setparam)(void *, int, void *, int);
typedef int (*fn_getparam)(const void *, int, void *, int *);
typedef int (*fn_close)(void *);

enum {
    DAA_DATATYPE_FLOAT32 = 7,
    DAA_FORMAT_AC4 = 1,
    DAA_AC4_SIMPLE_TRANSPORT = 0, /* sync frames, as in .ac4 files */
    DAA_AC4_RAW_FRAMES = 1,       /* raw frames, as MP4 carries them */
    DAA_PARAM_ENDPOINT = 1,
    DAA_PARAM_VIRTUALIZER = 100,
    DAA_PARAM_DIALOGUE_ENHANCEMENT = 101,
    DAA_PARAM_OUTPUT_REFERENCE_LEVEL = 102,
    DAA_PARAM_PRESENTATION = 200,
    DAA_PARAM_MAIN_ASSOCIATED_MIX = 201,
    DAA_ENDPOINT_SPEAKERS = 1,
    DAA_ENDPOINT_HEADPHONES = 2,
    DAA_PRESENTATION_DEFAULT = 0xFFFF,
};

#define DAA_LATENCY_ESTIMATE 3168u
#define DAA_SAMPLE_RATE 48000

static const char *daa_error_text(int code) {
    switch (code) {
    case 0: return "no error";
    case 1000: return "generic error";
    case 1001: return "invalid parameter value";
    case 1002: return "invalid parameter size";
    case 1003: return "unsupported parameter";
    case 1004: return "internal buffer error";
    case 1005: return "frame not valid";
    case 1006: return "frame needs more data";
    case 1007: return "processing error";
    case 1008: return "unsupported output data type";
    case 1009: return "unsupported bitstream format";
    case 1010: return "unsupported AC-4 bitstream type";
    case 1011: return "program change";
    case 1012: return "program mixing error";
    default: return "unknown error code";
    }
}

/* Codes about one frame: the host can go on with the next one. */
static int daa_error_is_per_frame(int code) {
    return code == 1005 || code == 1006 || code == 1007 || code == 1011 || code == 1012;
}

/* ======================================================================
 * Finding and binding the library
 * ====================================================================== */

static const char *const usual_names[] = { "libdlb_decode.so", "libdlbdecode.so", "libdaa.so" };
#define USUAL_NAME_COUNT (sizeof usual_names / sizeof usual_names[0])

typedef struct daa_library {
    void *dl;
    char path[PATH_MAX];
    fn_query_info query_info;
    fn_query_memory query_memory;
    fn_open open;
    fn_addbytes addbytes;
    fn_process process;
    fn_setparam setparam;
    fn_getparam getparam;
    fn_close close;
    char versions[160];
} daa_library;

/* The library is opened for sync frames unless a stream says otherwise. */
static daa_query_in daa_config(int bitstream_type) {
    daa_query_in q = { DAA_DATATYPE_FLOAT32, DAA_FORMAT_AC4, bitstream_type, DAA_SAMPLE_RATE };
    return q;
}

/* The input type in words, for messages. */
static const char *transport_text(int bitstream_type) {
    return bitstream_type == DAA_AC4_RAW_FRAMES ? "AC-4 raw frames (MP4)" : "AC-4 sync frames";
}

static void copy_field(char *dst, size_t cap, const char *src, size_t n) {
    size_t i = 0;
    for (; i < n && i + 1 < cap && src[i]; i++) dst[i] = src[i];
    dst[i] = 0;
}

/* Binds the symbols of an opened library; 0 on success, else writes the
 * missing symbols into `error`. */
static int bind_symbols(daa_library *lib, const char *origin, char *error, size_t cap) {
    static const char *const names[8] = {
        "dlb_decode_query_info", "dlb_decode_query_memory", "dlb_decode_open", "dlb_decode_addbytes",
        "dlb_decode_process", "dlb_decode_setparam", "dlb_decode_getparam", "dlb_decode_close",
    };
    void *found[8];
    char missing[320] = "";
    int missing_count = 0;
    for (int i = 0; i < 8; i++) {
        dlerror();
        found[i] = dlsym(lib->dl, names[i]);
        if (!found[i]) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, "%s%s", missing_count ? ", " : "", names[i]);
            missing_count++;
        }
    }
    if (missing_count) {
        snprintf(error, cap, "'%s' (%s) is not a DAA decoder library: it lacks %s %s", lib->path, origin,
                 missing_count == 1 ? "the symbol" : "the symbols", missing);
        return -1;
    }
    lib->query_info = (fn_query_info)found[0];
    lib->query_memory = (fn_query_memory)found[1];
    lib->open = (fn_open)found[2];
    lib->addbytes = (fn_addbytes)found[3];
    lib->process = (fn_process)found[4];
    lib->setparam = (fn_setparam)found[5];
    lib->getparam = (fn_getparam)found[6];
    lib->close = (fn_close)found[7];
    return 0;
}

/* The path the loader actually opened (for bare names). */
static void resolve_path(daa_library *lib, const char *name) {
    Dl_info info;
    void *symbol = dlsym(lib->dl, "dlb_decode_open");
    if (symbol && dladdr(symbol, &info) && info.dli_fname && info.dli_fname[0])
        copy_field(lib->path, sizeof lib->path, info.dli_fname, sizeof lib->path);
    else
        copy_field(lib->path, sizeof lib->path, name, sizeof lib->path);
}

static int try_open(daa_library *lib, const char *name, const char *origin, char *error, size_t cap) {
    dlerror();
    lib->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib->dl) {
        const char *why = dlerror();
        snprintf(error, cap,
                 "cannot load the DAA library '%s' (%s): %s. Set DAA_LIBRARY to the path of the licensee's DAA "
                 "library, or put it in a vendor-library folder (AGRAPH_VENDOR_LIBRARY_PATH) and name it in the "
                 "node's `library` parameter",
                 name, origin, why ? why : "unknown reason");
        return -1;
    }
    resolve_path(lib, name);
    return 0;
}

/* Loads and binds the library: the `library` parameter (may be NULL), else
 * DAA_LIBRARY, else the usual names. 0 on success. [main-thread] */
static int load_library(daa_library *lib, const char *parameter, char *error, size_t cap) {
    memset(lib, 0, sizeof *lib);
    const char *origin = NULL, *name = NULL;
    const char *env = getenv("DAA_LIBRARY");
    if (parameter && parameter[0]) {
        name = parameter;
        origin = "the node's `library` parameter";
    } else if (env && env[0]) {
        name = env;
        origin = "the DAA_LIBRARY environment variable";
    }
    if (name) {
        if (try_open(lib, name, origin, error, cap)) return -1;
    } else {
        origin = "found on the loader path";
        for (size_t i = 0; i < USUAL_NAME_COUNT && !lib->dl; i++) {
            dlerror();
            lib->dl = dlopen(usual_names[i], RTLD_NOW | RTLD_LOCAL);
            if (lib->dl) resolve_path(lib, usual_names[i]);
        }
        if (!lib->dl) {
            char names[160] = "";
            for (size_t i = 0; i < USUAL_NAME_COUNT; i++) {
                size_t len = strlen(names);
                snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", usual_names[i]);
            }
            snprintf(error, cap,
                     "no DAA decoder library found: the project does not ship it; set the DAA_LIBRARY "
                     "environment variable to the path of the licensee's library, or put it in a vendor-library "
                     "folder (AGRAPH_VENDOR_LIBRARY_PATH) and name it in the node's `library` parameter "
                     "(searched: `library` unset, DAA_LIBRARY unset, then %s on the loader path "
                     "LD_LIBRARY_PATH, ld.so.cache, /lib, /usr/lib)",
                     names);
            return -1;
        }
    }
    if (bind_symbols(lib, origin, error, cap)) {
        dlclose(lib->dl);
        lib->dl = NULL;
        return -1;
    }
    daa_query_info_out info;
    memset(&info, 0, sizeof info);
    daa_query_in query = daa_config(DAA_AC4_SIMPLE_TRANSPORT);
    int rc = lib->query_info(&query, &info);
    if (rc) {
        snprintf(error, cap, "DAA error %d: %s (dlb_decode_query_info, library '%s')", rc, daa_error_text(rc),
                 lib->path);
        dlclose(lib->dl);
        lib->dl = NULL;
        return -1;
    }
    char v[24], core[12], dap[12];
    copy_field(v, sizeof v, info.daa_version, sizeof info.daa_version);
    copy_field(core, sizeof core, info.core_decoder_version, sizeof info.core_decoder_version);
    copy_field(dap, sizeof dap, info.dap_version, sizeof info.dap_version);
    snprintf(lib->versions, sizeof lib->versions, "DAA %s (API %d), core decoder %s, DAP %s", v,
             (int)info.daa_api_version, core, dap);
    return 0;
}

static void unload_library(daa_library *lib) {
    if (lib->dl) dlclose(lib->dl);
    lib->dl = NULL;
}

/* ---- the libraries opened, once per process per path ---- */

/* Keyed by where the name came from and the name: the `library` parameter's
 * absolute path (the host resolved it), DAA_LIBRARY's value, or the usual
 * names. Entries are immutable once added and live until deinit; failures
 * are not kept (the next call tries again, e.g. after the user fixed it). */
typedef struct cached_library {
    struct cached_library *next;
    char key[PATH_MAX + 8];
    daa_library lib;
} cached_library;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cached_library *cache_head;
static char plugin_file[PATH_MAX];

/* The library for this `library` parameter (may be NULL), loaded on first
 * use; NULL after writing the reason into `error`. [main-thread] */
static const daa_library *acquire_library(const char *parameter, char *error, size_t cap) {
    char key[PATH_MAX + 8];
    const char *env = getenv("DAA_LIBRARY");
    if (parameter && parameter[0]) snprintf(key, sizeof key, "param:%s", parameter);
    else if (env && env[0]) snprintf(key, sizeof key, "env:%s", env);
    else snprintf(key, sizeof key, "usual:");
    pthread_mutex_lock(&cache_lock);
    for (cached_library *c = cache_head; c; c = c->next) {
        if (strcmp(c->key, key) == 0) {
            pthread_mutex_unlock(&cache_lock);
            return &c->lib;
        }
    }
    cached_library *entry = calloc(1, sizeof *entry);
    if (!entry) {
        pthread_mutex_unlock(&cache_lock);
        snprintf(error, cap, "out of memory");
        return NULL;
    }
    if (load_library(&entry->lib, parameter, error, cap)) {
        pthread_mutex_unlock(&cache_lock);
        free(entry);
        return NULL;
    }
    snprintf(entry->key, sizeof entry->key, "%s", key);
    entry->next = cache_head;
    cache_head = entry;
    pthread_mutex_unlock(&cache_lock);
    return &entry->lib;
}

/* init: remembers where the plugin lives (for messages); the
 * libraries themselves load on first use, so `agraph nodes` pays for one
 * dlopen (the details), not one per call. [main-thread] */
static int32_t daa_init(const char *plugin_path, char *error, uint32_t capacity) {
    (void)error; (void)capacity;
    snprintf(plugin_file, sizeof plugin_file, "%s", plugin_path ? plugin_path : "");
    return 1;
}

/* deinit: closes every library opened (after the last instance was
 * destroyed). [main-thread] */
static void daa_deinit(void) {
    pthread_mutex_lock(&cache_lock);
    cached_library *c = cache_head;
    cache_head = NULL;
    pthread_mutex_unlock(&cache_lock);
    while (c) {
        cached_library *next = c->next;
        unload_library(&c->lib);
        free(c);
        c = next;
    }
}

/* ======================================================================
 * Node type description
 * ====================================================================== */

enum {
    P_LIBRARY, P_ENDPOINT, P_FALLBACK_ENDPOINT, P_VIRTUALIZER, P_DIALOGUE_ENHANCEMENT,
    P_OUTPUT_REFERENCE_LEVEL, P_PRESENTATION, P_MAIN_ASSOCIATED_MIX, P_COUNT
};
enum { ENDPOINT_HEADPHONES, ENDPOINT_SPEAKERS, ENDPOINT_AUTO };

static const char *const endpoint_choices[] = { "headphones", "speakers", "auto" };
static const char *const fallback_choices[] = { "headphones", "speakers" };

#define LIVE_RANGE (AGRAPH_PARAM_LIVE | AGRAPH_PARAM_HAS_RANGE)

static const agraph_param_t daa_params[P_COUNT] = {
    { "library", "File name of the licensee's DAA library, found only in the vendor-library folders "
                 "(AGRAPH_VENDOR_LIBRARY_PATH, ~/.config/agraph/vendor-library-path); default: DAA_LIBRARY, "
                 "then libdlb_decode.so, libdlbdecode.so, libdaa.so on the loader path.",
      NULL, AGRAPH_PARAM_STRING, AGRAPH_PARAM_OPTIONAL | AGRAPH_PARAM_VENDOR_LIBRARY, 0, 0, 0, NULL, NULL, 0, 0 },
    { "endpoint", "Playback endpoint: headphones, speakers, or auto (the output device decides; offline: "
                  "fallbackEndpoint).",
      NULL, AGRAPH_PARAM_CHOICE, AGRAPH_PARAM_LIVE, 0, 0, ENDPOINT_AUTO, NULL, endpoint_choices, 3, 0 },
    { "fallbackEndpoint", "Endpoint used when endpoint is auto and the output device is unknown.",
      NULL, AGRAPH_PARAM_CHOICE, AGRAPH_PARAM_LIVE, 0, 0, ENDPOINT_HEADPHONES, NULL, fallback_choices, 2, 0 },
    { "virtualizer", "Headphone virtualizer (binaural output on the headphone endpoint).",
      NULL, AGRAPH_PARAM_BOOLEAN, AGRAPH_PARAM_LIVE, 0, 1, 1, NULL, NULL, 0, 0 },
    { "dialogueEnhancement", "Dialogue enhancement gain, 0 (off) to 9.",
      NULL, AGRAPH_PARAM_INTEGER, LIVE_RANGE, 0, 9, 0, NULL, NULL, 0, 0 },
    { "outputReferenceLevel", "Output reference level (loudness target).",
      "LKFS", AGRAPH_PARAM_INTEGER, LIVE_RANGE, -23, -11, -16, NULL, NULL, 0, 0 },
    { "presentation", "AC-4 presentation index 0-510; -1: the first decodable one.",
      NULL, AGRAPH_PARAM_INTEGER, LIVE_RANGE, -1, 510, -1, NULL, NULL, 0, 0 },
    { "mainAssociatedMix", "Main/associated mixing: -32 associated muted, 0 neutral, 32 main muted.",
      NULL, AGRAPH_PARAM_INTEGER, LIVE_RANGE, -32, 32, 0, NULL, NULL, 0, 0 },
};

static const agraph_port_t daa_input = { "in", AGRAPH_CHANNELS_FIXED, 0, 0, 0 };
static const agraph_port_t daa_output = { "out", AGRAPH_CHANNELS_FIXED, 2, 0, 0 };

/* ======================================================================
 * Instance
 * ====================================================================== */

typedef struct daa_node {
    const daa_library *lib;   /* shared, from the cache */
    /* host extensions (NULL when the host lacks one) */
    const agraph_host_t *host;
    const agraph_host_output_route_t *route_host;
    const agraph_host_log_t *log;
    _Atomic uint32_t route;   /* the latest route the host told (any thread) */
    uint32_t applied_route;   /* the route the endpoint was set for (worker) */
    char library_text[PATH_MAX + 200];
    double sample_rate;
    int values[P_COUNT];   /* current values (library: unused) */
    unsigned dirty;        /* bit per parameter index: setparam before the next process */

    /* the input type (DAA_AC4_*): sync frames until open_stream says raw */
    int bitstream_type;
    /* AGRAPH_EXT_DECODER_STREAM: a stream was opened (timestamps may then
     * be negative; INT64_MIN is unknown), its coded rate, and the trim the
     * host asked for the next frame */
    int stream_opened;
    uint32_t coded_rate;
    uint32_t pending_skip, pending_discard;

    /* decoder (activate … deactivate) */
    void *memory;
    size_t memory_size;
    int opened;
    int broken;            /* flush failed: decode reports FATAL */
    float *out[2];
    uint32_t out_capacity; /* per channel, what the library may write per process */
    float *fifo[2];
    uint32_t fifo_capacity, fifo_count;

    /* timing, since open */
    int have_first_timestamp;
    long long first_timestamp;
    long long next_timestamp;
    int latency_known;
    uint32_t latency;
    const char *latency_source;
    uint64_t trim_remaining;
    uint64_t frames_fed;   /* since activate, for messages */
    uint64_t frames_since_open;
    int draining;
    /* output positions since open: where the next frame's samples start
     * (fed), how many went to the FIFO (out), and what to leave out */
    uint64_t fed_samples, out_samples;
    daa_trims trims;

    /* the last frame fed, for draining */
    unsigned char *last_frame;
    uint32_t last_size, last_capacity;
    long long last_timestamp;
    uint32_t last_samples;

    char last_error[AGRAPH_ERROR_CAPACITY];
} daa_node;

/* The DAA endpoint for these values and output route (AGRAPH_ROUTE_*). */
static int endpoint_value(const int *values, uint32_t route) {
    int e = values[P_ENDPOINT];
    if (e == ENDPOINT_AUTO) {
        /* Like DAAPlay's route-change handling: the output decides when known. */
        if (route == AGRAPH_ROUTE_HEADPHONES) e = ENDPOINT_HEADPHONES;
        else if (route == AGRAPH_ROUTE_SPEAKERS) e = ENDPOINT_SPEAKERS;
        else e = values[P_FALLBACK_ENDPOINT] == 1 ? ENDPOINT_SPEAKERS : ENDPOINT_HEADPHONES;
    }
    return e == ENDPOINT_SPEAKERS ? DAA_ENDPOINT_SPEAKERS : DAA_ENDPOINT_HEADPHONES;
}

static void read_values(const agraph_create_info_t *info, int *values) {
    for (int i = 0; i < P_COUNT; i++) values[i] = (int)daa_params[i].default_number;
    for (uint32_t i = 1; i < info->value_count && i < P_COUNT; i++)
        if (info->values[i].is_set) values[i] = (int)(info->values[i].number < 0 ? info->values[i].number - 0.5
                                                                              : info->values[i].number + 0.5);
}

static const char *library_parameter(const agraph_create_info_t *info) {
    if (info->value_count > P_LIBRARY && info->values[P_LIBRARY].is_set) return info->values[P_LIBRARY].string;
    return NULL;
}

/* Sets one parameter in the library; 0 or the DAA error code. */
static int apply_parameter(daa_node *n, int index) {
    int id, value;
    switch (index) {
    case P_ENDPOINT: case P_FALLBACK_ENDPOINT:
        id = DAA_PARAM_ENDPOINT; value = endpoint_value(n->values, n->applied_route); break;
    case P_VIRTUALIZER: id = DAA_PARAM_VIRTUALIZER; value = n->values[index] ? 1 : 0; break;
    case P_DIALOGUE_ENHANCEMENT: id = DAA_PARAM_DIALOGUE_ENHANCEMENT; value = n->values[index]; break;
    case P_OUTPUT_REFERENCE_LEVEL: id = DAA_PARAM_OUTPUT_REFERENCE_LEVEL; value = n->values[index]; break;
    case P_PRESENTATION:
        id = DAA_PARAM_PRESENTATION;
        value = n->values[index] < 0 ? DAA_PRESENTATION_DEFAULT : n->values[index];
        break;
    case P_MAIN_ASSOCIATED_MIX: id = DAA_PARAM_MAIN_ASSOCIATED_MIX; value = n->values[index]; break;
    default: return 0;
    }
    int rc = n->lib->setparam(n->memory, id, &value, (int)sizeof value);
    if (rc)
        snprintf(n->last_error, sizeof n->last_error, "DAA error %d: %s (dlb_decode_setparam id %d = %d, %s)", rc,
                 daa_error_text(rc), id, value, daa_params[index].name);
    return rc;
}

/* DAAPlay's order: DE, ORL, presentation, mixing, endpoint, virtualizer. */
static const int parameter_order[] = { P_DIALOGUE_ENHANCEMENT, P_OUTPUT_REFERENCE_LEVEL, P_PRESENTATION,
                                       P_MAIN_ASSOCIATED_MIX, P_ENDPOINT, P_VIRTUALIZER };

static int apply_dirty(daa_node *n) {
    /* A route change told on the main thread applies from this frame. */
    uint32_t route = atomic_load_explicit(&n->route, memory_order_relaxed);
    if (route != n->applied_route) {
        n->applied_route = route;
        if (n->values[P_ENDPOINT] == ENDPOINT_AUTO) n->dirty |= 1u << P_ENDPOINT;
    }
    unsigned endpoint_bits = (1u << P_ENDPOINT) | (1u << P_FALLBACK_ENDPOINT);
    if (n->dirty & endpoint_bits) n->dirty = (n->dirty & ~endpoint_bits) | (1u << P_ENDPOINT);
    for (size_t i = 0; i < sizeof parameter_order / sizeof parameter_order[0]; i++) {
        int p = parameter_order[i];
        if (!(n->dirty & (1u << p))) continue;
        int rc = apply_parameter(n, p);
        if (rc) return rc;
        n->dirty &= ~(1u << p);
    }
    return 0;
}

static void reset_timing(daa_node *n) {
    n->have_first_timestamp = 0;
    n->first_timestamp = 0;
    n->next_timestamp = 0;
    n->latency_known = 0;
    n->latency = 0;
    n->latency_source = "not measured yet";
    n->trim_remaining = 0;
    n->frames_since_open = 0;
    n->draining = 0;
    n->fifo_count = 0;
    n->last_size = 0;
    n->fed_samples = 0;
    n->out_samples = 0;
    daa_trims_reset(&n->trims);
}

/* Opens the decoder in `memory` (zeroed here) and sets every parameter. */
static int open_decoder(daa_node *n) {
    memset(n->memory, 0, n->memory_size);
    daa_query_in query = daa_config(n->bitstream_type);
    int rc = n->lib->open(&query, n->memory);
    if (rc) {
        snprintf(n->last_error, sizeof n->last_error, "DAA error %d: %s (dlb_decode_open, %s, float32, "
                 "48000 Hz, library '%s')", rc, daa_error_text(rc), transport_text(n->bitstream_type), n->lib->path);
        return rc;
    }
    n->opened = 1;
    n->dirty = 0;
    for (size_t i = 0; i < sizeof parameter_order / sizeof parameter_order[0]; i++) n->dirty |= 1u << parameter_order[i];
    rc = apply_dirty(n);
    reset_timing(n);
    return rc;
}

static void close_decoder(daa_node *n) {
    if (n->opened) n->lib->close(n->memory);
    n->opened = 0;
}

static void set_error(daa_node *n, const char *function, int rc) {
    snprintf(n->last_error, sizeof n->last_error, "DAA error %d: %s (%s, frame %llu)", rc, daa_error_text(rc),
             function, (unsigned long long)n->frames_fed);
}

static int status_for(int rc) { return daa_error_is_per_frame(rc) ? AGRAPH_DECODE_BAD_FRAME : AGRAPH_DECODE_FATAL; }

/* One process call; appends at most `limit` samples (after trimming) to the FIFO. */
static int run_process(daa_node *n, uint64_t *limit) {
    daa_pcm_buffer buffer = { 2, 1, DAA_DATATYPE_FLOAT32, (void **)n->out };
    daa_io io;
    memset(&io, 0, sizeof io);
    io.pcm_output_buf = &buffer;
    io.delay_samples_num = UINT_MAX;   /* sentinels: "not reported" */
    io.output_timestamp = LLONG_MIN;
    int rc = n->lib->process(n->memory, &io);
    if (rc) { set_error(n, "dlb_decode_process", rc); return status_for(rc); }
    uint32_t count = io.output_samples_num;
    if (count > n->out_capacity) {
        snprintf(n->last_error, sizeof n->last_error, "the DAA library wrote %u samples per channel, more than its "
                 "output buffer size (%u)", count, n->out_capacity);
        return AGRAPH_DECODE_FATAL;
    }
    if (count && io.output_sample_rate && io.output_sample_rate != (unsigned long)n->sample_rate) {
        snprintf(n->last_error, sizeof n->last_error, "the DAA library outputs %lu Hz; the graph runs at %.0f Hz",
                 io.output_sample_rate, n->sample_rate);
        return AGRAPH_DECODE_FATAL;
    }
    if (count && io.output_channels_num == 1) memcpy(n->out[1], n->out[0], count * sizeof(float));
    n->last_samples = count;
    if (count && !n->latency_known) {
        long long delay;
        if (io.output_timestamp != LLONG_MIN) {
            delay = n->first_timestamp - io.output_timestamp;
            n->latency_source = "output_timestamp";
        } else if (io.delay_samples_num != UINT_MAX) {
            delay = io.delay_samples_num;
            n->latency_source = "delay_samples_num";
        } else {
            delay = DAA_LATENCY_ESTIMATE;
            n->latency_source = "estimate (the library reports neither output_timestamp nor delay_samples_num)";
            if (n->log && n->log->log) /* decode runs on the worker thread: log may allocate */
                n->log->log(n->host, AGRAPH_LOG_WARNING, "the DAA library reports neither output_timestamp nor "
                            "delay_samples_num: its delay is taken as DAAPlay's estimate, 3168 samples");
        }
        if (delay < 0) delay = 0;
        n->latency = (uint32_t)delay;
        n->trim_remaining = (uint64_t)delay;
        n->latency_known = 1;
    }
    uint32_t skip = 0;
    if (n->trim_remaining) {
        skip = n->trim_remaining < count ? (uint32_t)n->trim_remaining : count;
        n->trim_remaining -= skip;
    }
    uint32_t keep = count - skip;
    if (limit) {
        if (keep > *limit) keep = (uint32_t)*limit;
        *limit -= keep;
    }
    if (n->fifo_count + keep > n->fifo_capacity) {
        snprintf(n->last_error, sizeof n->last_error, "decoded PCM overflows the node's buffer (%u frames): the host "
                 "must take the PCM of each decode call", n->fifo_capacity);
        return AGRAPH_DECODE_FATAL;
    }
    float *dst[2] = { n->fifo[0] + n->fifo_count, n->fifo[1] + n->fifo_count };
    float *src[2] = { n->out[0] + skip, n->out[1] + skip };
    n->fifo_count += daa_trims_copy(&n->trims, n->out_samples, dst, src, 2, keep);
    n->out_samples += keep;
    return AGRAPH_DECODE_OK;
}

/* Feeds one whole frame (addbytes loop, process on frame_complete). */
static int feed(daa_node *n, const uint8_t *frame, uint32_t size, long long timestamp, uint64_t *limit) {
    if (!n->have_first_timestamp) {
        n->have_first_timestamp = 1;
        n->first_timestamp = timestamp;
    }
    uint32_t offset = 0;
    int stalls = 0;
    while (offset < size) {
        unsigned int consumed = 0;
        int complete = 0;
        int rc = n->lib->addbytes(n->memory, (const char *)frame + offset, size - offset, timestamp, &consumed, &complete);
        if (rc) { set_error(n, "dlb_decode_addbytes", rc); return status_for(rc); }
        if (consumed > size - offset) consumed = size - offset;
        offset += consumed;
        if (complete) {
            int status = run_process(n, limit);
            if (status != AGRAPH_DECODE_OK) return status;
            stalls = 0;
        } else if (consumed == 0 && ++stalls > 2) {
            snprintf(n->last_error, sizeof n->last_error, "the DAA library takes no more bytes of frame %llu "
                     "(%u of %u consumed) and reports no complete frame", (unsigned long long)n->frames_fed, offset, size);
            return AGRAPH_DECODE_BAD_FRAME;
        }
    }
    return AGRAPH_DECODE_OK;
}

/* Drain frames: copies of the last frame with the sequence counter advanced
 * and the CRC rewritten (agraph_framing.h, shared with the AC4 module). */

/* Pushes the held-back tail out (see the top of the file). */
static int drain(daa_node *n) {
    n->draining = 1;
    if (!n->last_size || !n->frames_since_open) return AGRAPH_DECODE_OK;
    uint64_t tail = n->latency_known ? n->latency : DAA_LATENCY_ESTIMATE;
    if (!n->latency_known) n->trim_remaining = 0;
    int rc = apply_dirty(n);
    if (rc) return status_for(rc);
    for (int i = 0; i < 64 && tail > 0; i++) {
        if (n->bitstream_type == DAA_AC4_RAW_FRAMES) (void)agraph_ac4_advance_raw_frame(n->last_frame, n->last_size);
        else (void)agraph_ac4_advance_sync_frame(n->last_frame, n->last_size);
        long long ts = n->last_timestamp + n->last_samples;
        n->last_timestamp = ts;
        uint64_t before = tail;
        int status = feed(n, n->last_frame, n->last_size, ts, &tail);
        if (status != AGRAPH_DECODE_OK) return status;
        if (tail == before && n->latency_known && n->last_samples == 0) break;
    }
    return AGRAPH_DECODE_OK;
}

static uint32_t take_output(daa_node *n, float *const *pcm, uint32_t capacity) {
    uint32_t count = n->fifo_count < capacity ? n->fifo_count : capacity;
    for (int c = 0; c < 2; c++) {
        if (pcm[c]) memcpy(pcm[c], n->fifo[c], count * sizeof(float));
        memmove(n->fifo[c], n->fifo[c] + count, (n->fifo_count - count) * sizeof(float));
    }
    n->fifo_count -= count;
    return count;
}

static void flush_decoder(agraph_instance_t *instance);

/* `samples` at `rate` Hz in samples at the output rate (48 kHz). */
static uint64_t at_output_rate(uint64_t samples, uint32_t rate) {
    if (!rate || rate == DAA_SAMPLE_RATE) return samples;
    return (samples * DAA_SAMPLE_RATE + rate / 2) / rate;
}

/* The frame's length in output samples, from its TOC (agraph_framing.h);
 * 0 when it cannot be read. */
static uint64_t frame_samples(const daa_node *n, const uint8_t *frame, uint32_t size) {
    size_t offset = 0, length = size;
    if (n->bitstream_type != DAA_AC4_RAW_FRAMES && !agraph_ac4_sync_payload(frame, size, &offset, &length)) return 0;
    agraph_ac4_toc_t toc;
    if (agraph_ac4_toc_read(frame + offset, length, &toc) != AGRAPH_AC4_TOC_OK) return 0;
    return at_output_rate(toc.samples_per_frame, toc.sample_rate);
}

/* Places the trim the host asked for (trim_next_frame) on the frame about
 * to be fed, which starts at output sample `fed_samples` and lasts `length`. */
static void place_trim(daa_node *n, uint64_t length) {
    if (!n->pending_skip && !n->pending_discard) return;
    uint64_t skip = at_output_rate(n->pending_skip, n->coded_rate);
    uint64_t discard = at_output_rate(n->pending_discard, n->coded_rate);
    n->pending_skip = n->pending_discard = 0;
    if (skip > length) skip = length;
    if (discard > length) discard = length;
    daa_trims_add(&n->trims, n->fed_samples, n->fed_samples + skip);
    daa_trims_add(&n->trims, n->fed_samples + length - discard, n->fed_samples + length);
}

static int32_t daa_decode(agraph_instance_t *instance, const uint8_t *frame, uint32_t size, int64_t timestamp,
                          float *const *pcm, uint32_t capacity, uint32_t *written) {
    daa_node *n = (daa_node *)instance;
    *written = 0;
    n->last_error[0] = 0;
    if (n->broken || !n->opened) {
        if (!n->last_error[0]) snprintf(n->last_error, sizeof n->last_error, "the DAA decoder is not open");
        return AGRAPH_DECODE_FATAL;
    }
    if (!frame || size == 0) {
        int status = AGRAPH_DECODE_OK;
        if (!n->draining) status = drain(n);
        *written = take_output(n, pcm, capacity);
        return status;
    }
    if (n->draining) {
        flush_decoder(instance); /* a frame after the end: start afresh */
        if (n->broken) return AGRAPH_DECODE_FATAL;
    }
    n->frames_fed++;
    n->frames_since_open++;
    int rc = apply_dirty(n);
    if (rc) { *written = take_output(n, pcm, capacity); return status_for(rc); }
    /* Unknown: -1 by the decoder extension; INT64_MIN once a stream was
     * opened (its timestamps may be negative: priming). */
    int known = n->stream_opened ? timestamp != INT64_MIN : timestamp >= 0;
    long long ts = known ? (long long)timestamp : n->next_timestamp;
    uint64_t length = frame_samples(n, frame, size);
    place_trim(n, length ? length : (n->last_samples ? n->last_samples : 2048));
    if (size > n->last_capacity) {
        unsigned char *grown = realloc(n->last_frame, size);
        if (grown) { n->last_frame = grown; n->last_capacity = size; }
    }
    if (size <= n->last_capacity) {
        memcpy(n->last_frame, frame, size);
        n->last_size = size;
        n->last_timestamp = ts;
    }
    uint32_t before = n->last_samples;
    n->last_samples = 0;
    int status = feed(n, frame, size, ts, NULL);
    if (!n->last_samples) n->last_samples = before;
    n->next_timestamp = ts + n->last_samples;
    if (status == AGRAPH_DECODE_OK) n->fed_samples += length ? length : n->last_samples;
    *written = take_output(n, pcm, capacity);
    return status;
}

static void flush_decoder(agraph_instance_t *instance) {
    daa_node *n = (daa_node *)instance;
    if (!n->memory) return;
    close_decoder(n);
    if (open_decoder(n)) n->broken = 1;
    else n->broken = 0;
}

static uint32_t daa_max_frames_per_decode(const agraph_instance_t *instance) {
    const daa_node *n = (const daa_node *)instance;
    return n->out_capacity ? n->out_capacity : 16384; /* more waits in the FIFO for the next call */
}

static uint32_t daa_decoder_latency(const agraph_instance_t *instance) {
    (void)instance;
    return 0; /* the node drops the library's delay itself */
}

/* Asks the library for the memory the decoder needs with the current input
 * type, and allocates the decoder memory and the PCM buffers, or larger ones
 * when they are too small (nothing is kept in them: the decoder is closed and
 * the FIFO empty). 0 on success; -1 after writing the reason into `error`.
 * [main-thread (activate) or worker-thread (open_stream)] */
static int size_decoder(daa_node *n, char *error, size_t cap) {
    daa_query_mem_out mem = { 0, 0 };
    daa_query_in query = daa_config(n->bitstream_type);
    int rc = n->lib->query_memory(&query, &mem);
    if (rc) {
        snprintf(error, cap, "DAA error %d: %s (dlb_decode_query_memory, %s, float32, 48000 Hz, library '%s')", rc,
                 daa_error_text(rc), transport_text(n->bitstream_type), n->lib->path);
        return -1;
    }
    if (mem.decoder_size == 0) {
        snprintf(error, cap, "the DAA library '%s' asks for 0 bytes of decoder memory", n->lib->path);
        return -1;
    }
    if (!n->memory || mem.decoder_size > n->memory_size) {
        free(n->memory);
        n->memory = malloc(mem.decoder_size);
        n->memory_size = n->memory ? mem.decoder_size : 0;
    }
    /* output_buffer_size: taken as an upper bound of the samples per channel
     * (whether it counts bytes or samples, this is enough). */
    size_t per_channel = mem.output_buffer_size > 16384 ? mem.output_buffer_size : 16384;
    if (per_channel > (1u << 22)) per_channel = 1u << 22;
    int ok = n->memory != NULL;
    if (ok && per_channel > n->out_capacity) {
        n->out_capacity = (uint32_t)per_channel;
        n->fifo_capacity = (uint32_t)per_channel * 4;
        for (int c = 0; c < 2 && ok; c++) {
            free(n->out[c]);
            free(n->fifo[c]);
            n->out[c] = calloc(n->out_capacity, sizeof(float));
            n->fifo[c] = calloc(n->fifo_capacity, sizeof(float));
            ok = n->out[c] && n->fifo[c];
        }
    }
    if (ok && !n->last_frame) {
        n->last_capacity = 65536;
        n->last_frame = malloc(n->last_capacity);
        ok = n->last_frame != NULL;
    }
    if (!ok) {
        snprintf(error, cap, "out of memory (DAA decoder: %zu bytes)", mem.decoder_size);
        return -1;
    }
    return 0;
}

/* ---- diagnostics extension ---- */

static const char *diag_last_error(const agraph_instance_t *instance) {
    return ((const daa_node *)instance)->last_error;
}

static const agraph_decoder_ext_t decoder_ext = {
    NULL, daa_max_frames_per_decode, daa_decode, flush_decoder, daa_decoder_latency, diag_last_error,
};
static uint32_t diag_latency(const agraph_instance_t *instance) {
    return ((const daa_node *)instance)->latency;
}
static const char *diag_latency_source(const agraph_instance_t *instance) {
    return ((const daa_node *)instance)->latency_source;
}
static const char *diag_library(const agraph_instance_t *instance) {
    return ((const daa_node *)instance)->library_text;
}

static const daa_diagnostics_ext_t diagnostics_ext = { diag_last_error, diag_latency, diag_latency_source, diag_library };

/* ---- decoder-stream extension (ext/decoder-stream.h): what a demuxer says about the stream ---- */

/* The input type for a codec name of `input_codec`, or -1. */
static int bitstream_type_for(const char *codec) {
    if (!codec) return -1;
    if (strcmp(codec, "ac4-raw") == 0) return DAA_AC4_RAW_FRAMES;
    if (strcmp(codec, "ac4-sync") == 0) return DAA_AC4_SIMPLE_TRANSPORT;
    return -1;
}

/* Raw frames or sync frames, decided per stream: the library is opened
 * again for the stream's input type when it differs (the interface fixes
 * the type at open). The extradata (MP4's 'dac4' DSI) is not passed on: the
 * DAA interface takes none. [worker-thread & active] */
static int32_t stream_open(agraph_instance_t *instance, const agraph_stream_info_t *stream, char *error,
                           uint32_t capacity) {
    daa_node *n = (daa_node *)instance;
    int type = bitstream_type_for(stream ? stream->codec : NULL);
    if (type < 0) {
        snprintf(error, capacity, "the daa node decodes AC-4 (ac4-sync, ac4-raw), not %s",
                 stream && stream->codec ? stream->codec : "an unnamed codec");
        return 0;
    }
    if (!n->memory) {
        snprintf(error, capacity, "the DAA decoder is not active");
        return 0;
    }
    n->stream_opened = 1;
    n->coded_rate = stream->sample_rate;
    n->pending_skip = n->pending_discard = 0;
    if (type == n->bitstream_type && n->opened && !n->broken) return 1;
    close_decoder(n);
    n->bitstream_type = type;
    if (size_decoder(n, error, capacity)) {
        n->broken = 1;
        return 0;
    }
    n->last_error[0] = 0;
    if (open_decoder(n)) {
        snprintf(error, capacity, "%s", n->last_error);
        n->broken = 1;
        return 0;
    }
    n->broken = 0;
    return 1;
}

/* Drops samples the container leaves out of the next frame (placed when
 * that frame is fed). [worker-thread & active] */
static void stream_trim_next_frame(agraph_instance_t *instance, uint32_t skip_start, uint32_t discard_end) {
    daa_node *n = (daa_node *)instance;
    n->pending_skip = skip_start;
    n->pending_discard = discard_end;
}

/* The DAA interface reports no concealment of its own: every damaged frame
 * it meets is an error code (BAD_FRAME), which the host counts. [any-thread] */
static uint64_t stream_concealed_frames(const agraph_instance_t *instance) {
    (void)instance;
    return 0;
}

static const agraph_decoder_stream_ext_t stream_ext = { stream_open, stream_trim_next_frame, stream_concealed_frames };

/* ---- node type functions ---- */

static int32_t daa_check(const agraph_create_info_t *info, char *error, uint32_t capacity) {
    if (info->sample_rate > 0 && info->sample_rate != DAA_SAMPLE_RATE) {
        snprintf(error, capacity, "the DAA decoder outputs 48000 Hz; this graph runs at %.0f Hz", info->sample_rate);
        return 0;
    }
    return acquire_library(library_parameter(info), error, capacity) ? 1 : 0;
}

static agraph_instance_t *daa_create(const agraph_create_info_t *info, char *error, uint32_t capacity) {
    daa_node *n = calloc(1, sizeof *n);
    if (!n) { snprintf(error, capacity, "out of memory"); return NULL; }
    n->lib = acquire_library(library_parameter(info), error, capacity);
    if (!n->lib) { free(n); return NULL; }
    read_values(info, n->values);
    if (info->host && info->host->get_extension) {
        n->host = info->host;
        n->route_host = info->host->get_extension(info->host, AGRAPH_HOST_EXT_OUTPUT_ROUTE);
        n->log = info->host->get_extension(info->host, AGRAPH_HOST_EXT_LOG);
    }
    uint32_t route = n->route_host && n->route_host->get ? n->route_host->get(n->host) : AGRAPH_ROUTE_UNKNOWN;
    atomic_store(&n->route, route);
    n->applied_route = route;
    n->sample_rate = info->sample_rate > 0 ? info->sample_rate : DAA_SAMPLE_RATE;
    snprintf(n->library_text, sizeof n->library_text, "%s: %s", n->lib->path, n->lib->versions);
    n->latency_source = "not measured yet";
    return (agraph_instance_t *)n;
}

static void free_buffers(daa_node *n) {
    free(n->memory);
    n->memory = NULL;
    for (int c = 0; c < 2; c++) {
        free(n->out[c]);
        free(n->fifo[c]);
        n->out[c] = n->fifo[c] = NULL;
    }
    free(n->last_frame);
    n->last_frame = NULL;
    n->last_capacity = n->last_size = 0;
    n->fifo_capacity = n->out_capacity = 0;
    n->memory_size = 0;
}

static int32_t daa_activate(agraph_instance_t *instance, double sample_rate, uint32_t max_frames, char *error,
                            uint32_t capacity) {
    (void)max_frames;
    daa_node *n = (daa_node *)instance;
    if (sample_rate != DAA_SAMPLE_RATE) {
        snprintf(error, capacity, "the DAA decoder outputs 48000 Hz; this graph runs at %.0f Hz", sample_rate);
        return 0;
    }
    n->sample_rate = sample_rate;
    /* The route is known by now: read it again (the host may have learnt it
     * after create). */
    if (n->route_host && n->route_host->get) atomic_store(&n->route, n->route_host->get(n->host));
    n->applied_route = atomic_load(&n->route);
    /* Sync frames (the `ac4` source) until open_stream names raw frames. */
    n->bitstream_type = DAA_AC4_SIMPLE_TRANSPORT;
    n->stream_opened = 0;
    n->coded_rate = 0;
    n->pending_skip = n->pending_discard = 0;
    if (size_decoder(n, error, capacity)) {
        free_buffers(n);
        return 0;
    }
    n->last_error[0] = 0;
    if (open_decoder(n)) {
        snprintf(error, capacity, "%s", n->last_error);
        close_decoder(n);
        free_buffers(n);
        return 0;
    }
    n->broken = 0;
    n->frames_fed = 0;
    return 1;
}

static void daa_set_parameter(agraph_instance_t *instance, uint32_t index, double value) {
    daa_node *n = (daa_node *)instance;
    if (index == P_LIBRARY || index >= P_COUNT) return;
    n->values[index] = (int)(value < 0 ? value - 0.5 : value + 0.5);
    n->dirty |= 1u << index;
}

static uint32_t daa_latency(const agraph_instance_t *instance) {
    (void)instance;
    return 0; /* trimmed by the node itself */
}

static void daa_deactivate(agraph_instance_t *instance) {
    daa_node *n = (daa_node *)instance;
    close_decoder(n);
    free_buffers(n);
}

static void daa_destroy(agraph_instance_t *instance) {
    daa_node *n = (daa_node *)instance;
    if (n->memory) daa_deactivate(instance);
    free(n); /* the library stays open for the next instance (deinit closes it) */
}

/* ---- output route (ext/output-route.h): told on the main thread, applied by decode ---- */

static void route_changed(agraph_instance_t *instance, uint32_t route) {
    daa_node *n = (daa_node *)instance;
    atomic_store_explicit(&n->route, route, memory_order_relaxed);
}

static const agraph_output_route_ext_t route_ext = { route_changed };

static const void *daa_get_extension(const agraph_instance_t *instance, const char *id) {
    (void)instance;
    if (!id) return NULL;
    if (strcmp(id, AGRAPH_EXT_OUTPUT_ROUTE) == 0) return &route_ext;
    if (strcmp(id, AGRAPH_EXT_DECODER) == 0) return &decoder_ext;
    if (strcmp(id, AGRAPH_EXT_DECODER_STREAM) == 0) return &stream_ext;
    if (strcmp(id, DAA_EXT_DIAGNOSTICS) == 0) return &diagnostics_ext;
    return NULL;
}

static const char *daa_output_layout(const agraph_create_info_t *info, uint32_t port) {
    int values[P_COUNT];
    (void)port; /* one output */
    read_values(info, values);
    /* The layout is decided at validation, before any route is known: with
     * endpoint auto it follows fallbackEndpoint. */
    return (values[P_VIRTUALIZER] && endpoint_value(values, AGRAPH_ROUTE_UNKNOWN) == DAA_ENDPOINT_HEADPHONES)
               ? "binaural" : "stereo";
}

static const agraph_node_type_t daa_type = {
    .type_id = "daa",
    .summary = "Dolby AC-4 decoder (Dolby Audio for Applications): AC-4 sync frames (ac4) or raw frames from MP4 "
               "(media) to stereo or binaural PCM at 48 kHz, through the licensee's DAA library loaded at run time (DAA_LIBRARY, or the `library` "
               "parameter naming a file in a vendor-library folder).",
    .domain = AGRAPH_DOMAIN_WORKER,
    .flags = 0,
    .input_count = 1,
    .output_count = 1,
    .inputs = &daa_input,
    .outputs = &daa_output,
    .param_count = P_COUNT,
    .params = daa_params,
    .input_codec = "ac4-sync ac4-raw",
    .plugin_data = NULL,
    .check = daa_check,
    .output_layout = daa_output_layout,
    .create = daa_create,
    .activate = daa_activate,
    .process = NULL,
    .set_parameter = daa_set_parameter,
    .latency = daa_latency,
    .deactivate = daa_deactivate,
    .destroy = daa_destroy,
    .get_extension = daa_get_extension,
};

/* ---- plugin-wide: library details for `agraph nodes daa` ---- */

static char details_text[PATH_MAX + 700];

static const char *plugin_details(void) {
    char error[AGRAPH_ERROR_CAPACITY];
    const daa_library *lib = acquire_library(NULL, error, sizeof error);
    if (!lib)
        snprintf(details_text, sizeof details_text, "DAA library: none (%s)", error);
    else
        snprintf(details_text, sizeof details_text, "DAA library: %s\n%s", lib->path, lib->versions);
    return details_text;
}

static const agraph_plugin_info_ext_t plugin_info_ext = { plugin_details };

static const void *plugin_get_extension(const char *id) {
    if (id && strcmp(id, AGRAPH_EXT_PLUGIN_INFO) == 0) return &plugin_info_ext;
    return NULL;
}

_Static_assert(AGRAPH_PLUGIN_ABI_MAJOR == 2, "written for the plugin ABI 2.x");

static const agraph_node_type_t *const daa_types[] = { &daa_type };

static const agraph_plugin_t daa_plugin = {
    .abi = { AGRAPH_PLUGIN_ABI_MAJOR, AGRAPH_PLUGIN_ABI_MINOR },
    .name = "Dolby AC-4 decoder (DAA)",
    .vendor = "AudioGraph",
    .version = "1.0",
    .node_type_count = 1,
    .node_types = daa_types,
    .init = daa_init,
    .deinit = daa_deinit,
    .get_extension = plugin_get_extension,
};

const agraph_plugin_t *agraph_plugin_entry(void) { return &daa_plugin; }
