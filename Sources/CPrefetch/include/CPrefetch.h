/*
 * Cache prefetch hints for the engine's cycle (AudioGraphCore.Engine).
 *
 * Swift has no prefetch intrinsic; these static inline wrappers of the
 * compiler's __builtin_prefetch are imported and inlined into Swift code.
 * A prefetch is a hint: it never faults, never blocks and has no effect
 * on results. [any thread; realtime-safe]
 */
#ifndef AGRAPH_CPREFETCH_H
#define AGRAPH_CPREFETCH_H

#include <stddef.h>
#ifdef __linux__
#include <malloc.h>
#endif

/** Brings the line holding `p` towards the L1 data cache, for reading. */
static inline void agraph_prefetch_read(const void *p) { __builtin_prefetch(p, 0, 3); }

/** Brings the line holding `p` towards the L1 data cache, for writing. */
static inline void agraph_prefetch_write(const void *p) { __builtin_prefetch(p, 1, 3); }

/** A spin-wait hint (x86 `pause`, ARM `yield`): a thread polling an
 *  atomic in a loop (the parallel render's wait for a helper's task) lets
 *  the core's other hyperthread run and saves power. [any thread; realtime-safe] */
static inline void agraph_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/** Bytes usable in the heap block `p` (from malloc), 64 where unknown.
 *  [main-thread: the engine sizes node objects with it] */
static inline size_t agraph_heap_block_size(void *p) {
#ifdef __linux__
    return malloc_usable_size(p);
#else
    (void)p;
    return 64;
#endif
}

/** Bytes of the heap in use now (glibc's mallinfo2: blocks handed out,
 *  mmapped ones included), -1 where unknown. For measurements: what a
 *  validated graph or a compiled engine holds (agraph-bench scale).
 *  [any thread; not realtime-safe: glibc takes the arenas' locks] */
static inline long long agraph_heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 m = mallinfo2();
    return (long long)(m.uordblks + m.hblkhd);
#else
    return -1;
#endif
}

#endif
