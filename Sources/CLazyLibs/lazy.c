/* Loading the libraries of agraph_lazy.h on first use. [any-thread; loading
 * takes a lock and may block: never on the audio thread] */
#define _GNU_SOURCE
#include "lazy_internal.h"
#include <dlfcn.h>
#include <libavcodec/version_major.h>
#include <libavformat/version_major.h>
#include <libavutil/macros.h>
#include <libavutil/version.h>
#include <libswresample/version_major.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic(void **) agraph_lazy_tables[AGRAPH_LAZY_COUNT];

struct library {
    const char *soname;       /* as the headers built against give its major version */
    const char *fallback;     /* the development link, when the soname is missing */
    const char *package;      /* Debian's */
    const char *const *names; /* from stubs.c */
};

static const struct library libraries[AGRAPH_LAZY_COUNT] = {
    [AGRAPH_LAZY_AVFORMAT] = {"libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR), "libavformat.so",
                              "libavformat" AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR), agraph_lazy_names_avformat},
    [AGRAPH_LAZY_AVCODEC] = {"libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR), "libavcodec.so",
                             "libavcodec" AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR), agraph_lazy_names_avcodec},
    [AGRAPH_LAZY_SWRESAMPLE] = {"libswresample.so." AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR), "libswresample.so",
                                "libswresample" AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR), agraph_lazy_names_swresample},
    [AGRAPH_LAZY_AVUTIL] = {"libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR), "libavutil.so",
                            "libavutil" AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR), agraph_lazy_names_avutil},
    [AGRAPH_LAZY_LILV] = {"liblilv-0.so.0", "liblilv-0.so", "liblilv-0-0", agraph_lazy_names_lilv},
    [AGRAPH_LAZY_SERD] = {"libserd-0.so.0", "libserd-0.so", "libserd-0-0", agraph_lazy_names_serd},
    [AGRAPH_LAZY_MYSOFA] = {"libmysofa.so.1", "libmysofa.so", "libmysofa1", agraph_lazy_names_mysofa},
    [AGRAPH_LAZY_LO] = {"liblo.so.7", "liblo.so", "liblo7", agraph_lazy_names_lo},
    [AGRAPH_LAZY_JACK] = {"libjack.so.0", "libjack.so", "libjack-jackd2-0", agraph_lazy_names_jack},
    [AGRAPH_LAZY_SNDFILE] = {"libsndfile.so.1", "libsndfile.so", "libsndfile1", agraph_lazy_names_sndfile},
};

static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;
static char *errors[AGRAPH_LAZY_COUNT];

static int valid(int library) { return library >= 0 && library < AGRAPH_LAZY_COUNT; }

/* Under `loading`. */
static int load_locked(int library) {
    if (atomic_load_explicit(&agraph_lazy_tables[library], memory_order_acquire)) return 0;
    if (errors[library]) return -1;
    const struct library *lib = &libraries[library];
    char reason[1024];
    void *handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(reason, sizeof reason, "%s", dlerror());
        handle = dlopen(lib->fallback, RTLD_NOW | RTLD_LOCAL);
    }
    if (!handle) {
        char message[1400];
        snprintf(message, sizeof message, "cannot load %s (Debian package %s): %s", lib->soname, lib->package, reason);
        errors[library] = strdup(message);
        return -1;
    }
    size_t count = 0;
    while (lib->names[count]) count++;
    void **table = calloc(count ? count : 1, sizeof(void *));
    if (!table) {
        errors[library] = strdup("out of memory resolving its functions");
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        table[i] = dlsym(handle, lib->names[i]);
        if (!table[i]) {
            char message[512];
            snprintf(message, sizeof message, "%s has no function %s (another version than AudioGraph was built with?)",
                     lib->soname, lib->names[i]);
            errors[library] = strdup(message);
            free(table);
            return -1;
        }
    }
    /* The handle stays open for the life of the process. */
    atomic_store_explicit(&agraph_lazy_tables[library], table, memory_order_release);
    return 0;
}

int agraph_lazy_load(enum agraph_lazy_library library) {
    if (!valid(library)) return -1;
    if (atomic_load_explicit(&agraph_lazy_tables[library], memory_order_acquire)) return 0;
    pthread_mutex_lock(&loading);
    int rc = load_locked(library);
    pthread_mutex_unlock(&loading);
    return rc;
}

int agraph_lazy_is_loaded(enum agraph_lazy_library library) {
    return valid(library) && atomic_load_explicit(&agraph_lazy_tables[library], memory_order_acquire) != 0;
}

const char *agraph_lazy_error(enum agraph_lazy_library library) {
    if (!valid(library)) return "no such library";
    pthread_mutex_lock(&loading);
    const char *e = errors[library];
    pthread_mutex_unlock(&loading);
    return e;
}

const char *agraph_lazy_soname(enum agraph_lazy_library library) {
    return valid(library) ? libraries[library].soname : "";
}

const char *agraph_lazy_package(enum agraph_lazy_library library) {
    return valid(library) ? libraries[library].package : "";
}

void **agraph_lazy_load_or_exit(int library) {
    if (agraph_lazy_load(library) != 0) {
        fprintf(stderr, "agraph: %s\n", agraph_lazy_error(library));
        fflush(stderr);
        _Exit(70);
    }
    return atomic_load_explicit(&agraph_lazy_tables[library], memory_order_acquire);
}
