#ifndef AGRAPH_LAZY_INTERNAL_H
#define AGRAPH_LAZY_INTERNAL_H
/* Shared by lazy.c and the generated stubs.c. [any-thread] */
#include "agraph_lazy.h"
#include <stdatomic.h>

/* Each library's resolved functions, in the order of its names array in
 * stubs.c; NULL until it is loaded. */
extern _Atomic(void **) agraph_lazy_tables[AGRAPH_LAZY_COUNT];

/* Loads `library` or ends the process with the reason (a stub called when
 * the library cannot be loaded, by code that did not ask agraph_lazy_load
 * first). Returns its table. */
void **agraph_lazy_load_or_exit(int library);

/* The function `index` of `library`, loading the library first if needed. */
static inline void *agraph_lazy_symbol(int library, int index) {
    void **table = atomic_load_explicit(&agraph_lazy_tables[library], memory_order_acquire);
    if (__builtin_expect(table == 0, 0)) table = agraph_lazy_load_or_exit(library);
    return table[index];
}

extern const char *const agraph_lazy_names_avformat[];
extern const char *const agraph_lazy_names_avcodec[];
extern const char *const agraph_lazy_names_swresample[];
extern const char *const agraph_lazy_names_avutil[];
extern const char *const agraph_lazy_names_lilv[];
extern const char *const agraph_lazy_names_serd[];
extern const char *const agraph_lazy_names_mysofa[];
extern const char *const agraph_lazy_names_lo[];
extern const char *const agraph_lazy_names_jack[];
extern const char *const agraph_lazy_names_sndfile[];
#endif
