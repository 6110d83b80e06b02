/*
 * Allocation counting, linked into executables only (never into a library:
 * it replaces the process's malloc): `agraph check-plugin`, and the test
 * bundle (Tests/TestSupport's MallocCounter), where the realtime tests prove
 * that render paths, JACK's process thread included, allocate nothing.
 *
 * malloc, calloc, realloc, memalign, aligned_alloc, valloc and
 * posix_memalign are defined here and forward to glibc's own __libc_*
 * entry points. While no thread counts, each costs one relaxed load of a
 * global flag more than glibc's; a thread that called
 * agraph_alloc_count_begin() has its calls counted (per thread), which is
 * how check-plugin proves a plugin's audio-thread functions allocate
 * nothing. Not interposed under ThreadSanitizer or AddressSanitizer (they
 * bring their own allocator): agraph_alloc_count_available() is then 0.
 */
#ifndef AGRAPH_CAGRAPHALLOCCOUNT_H
#define AGRAPH_CAGRAPHALLOCCOUNT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when allocations are really intercepted in this process. [any thread] */
int agraph_alloc_count_available(void);

/** Starts counting the calling thread's allocations, from 0. [that thread] */
void agraph_alloc_count_begin(void);

/** Stops counting; returns the calling thread's allocations since begin. [that thread] */
int64_t agraph_alloc_count_end(void);

/** 1 while the calling thread is counted (between begin and end). [that thread] */
int agraph_alloc_count_active(void);

/** Allocations by every counting thread since the last reset (for a test
 *  that counts on one thread, JACK's, and reads on another). [any thread] */
int64_t agraph_alloc_count_total(void);

/** Sets the total to 0. [any thread] */
void agraph_alloc_count_reset(void);

#ifdef __cplusplus
}
#endif
#endif
