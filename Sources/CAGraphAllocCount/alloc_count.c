#include "CAGraphAllocCount.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define AGRAPH_NO_INTERPOSE 1
#  endif
#endif

/* Threads counting right now: while 0, an allocation only loads this. */
static _Atomic int counting_threads;
static __thread int thread_counting;
static __thread int64_t thread_count;
/* Allocations by all counting threads since the last reset. */
static _Atomic int64_t total_count;

int64_t agraph_alloc_count_total(void) { return atomic_load(&total_count); }
void agraph_alloc_count_reset(void) { atomic_store(&total_count, 0); }

void agraph_alloc_count_begin(void) {
    thread_count = 0;
    if (!thread_counting) {
        thread_counting = 1;
        atomic_fetch_add(&counting_threads, 1);
    }
}

int agraph_alloc_count_active(void) { return thread_counting; }

int64_t agraph_alloc_count_end(void) {
    if (thread_counting) {
        thread_counting = 0;
        atomic_fetch_sub(&counting_threads, 1);
    }
    return thread_count;
}

#ifndef AGRAPH_NO_INTERPOSE

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);

static inline void note(void) {
    if (atomic_load_explicit(&counting_threads, memory_order_relaxed) && thread_counting) {
        thread_count++;
        atomic_fetch_add_explicit(&total_count, 1, memory_order_relaxed);
    }
}

void *malloc(size_t n) { note(); return __libc_malloc(n); }
void *calloc(size_t c, size_t n) { note(); return __libc_calloc(c, n); }
void *realloc(void *p, size_t n) { note(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { note(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { note(); return __libc_memalign(a, n); }
void *valloc(size_t n) { note(); return __libc_valloc(n); }
int posix_memalign(void **out, size_t a, size_t n) {
    note();
    if (a < sizeof(void *) || (a & (a - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(a, n);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

int agraph_alloc_count_available(void) {
    int was = thread_counting;
    int64_t saved = thread_count;
    agraph_alloc_count_begin();
    void *volatile p = malloc(1);
    extern void free(void *);
    free(p);
    int64_t n = agraph_alloc_count_end();
    atomic_fetch_sub(&total_count, n);
    if (was) agraph_alloc_count_begin();
    thread_count = saved;
    return n > 0;
}

#else
int agraph_alloc_count_available(void) { return 0; }
#endif
