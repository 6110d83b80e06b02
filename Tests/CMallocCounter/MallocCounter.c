#include "CMallocCounter.h"

#include <stddef.h>
#include <stdatomic.h>
#include <errno.h>

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define AGRAPH_NO_INTERPOSE 1
#  endif
#endif

static _Atomic int64_t total_allocations;
static __thread int thread_counted;

void agraph_malloc_counter_thread_begin(void) { thread_counted = 1; }
void agraph_malloc_counter_thread_end(void) { thread_counted = 0; }
int64_t agraph_malloc_counter_total(void) { return atomic_load(&total_allocations); }
void agraph_malloc_counter_reset(void) { atomic_store(&total_allocations, 0); }

#ifndef AGRAPH_NO_INTERPOSE

// glibc's own allocator entry points (exported since glibc 2.2.5).
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);

static inline void note(void) {
    if (thread_counted) atomic_fetch_add_explicit(&total_allocations, 1, memory_order_relaxed);
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

int agraph_malloc_counter_available(void) {
    int was = thread_counted;
    thread_counted = 1;
    int64_t before = agraph_malloc_counter_total();
    // volatile keeps the compiler from removing the pair.
    void *volatile p = malloc(1);
    extern void free(void *);
    free(p);
    int64_t after = agraph_malloc_counter_total();
    thread_counted = was;
    atomic_fetch_sub(&total_allocations, after - before);
    return after > before;
}

#else
int agraph_malloc_counter_available(void) { return 0; }
#endif
