// Per-thread allocation counter for the real-time tests.
//
// Why not ordo-one/malloc-interposer: it counts for the whole process and must
// be LD_PRELOADed. The tests here need to count only what one thread (the one
// running the render loop, or JACK's process thread) allocates while other
// threads (feeders, disk writers, XCTest itself) allocate freely, and they
// run inside the ordinary `swift test` binary. Defining malloc in the test
// executable replaces glibc's for the whole process (glibc supports this);
// the replacements call glibc's __libc_* entry points.
//
// Not compiled in under ThreadSanitizer or AddressSanitizer, which bring
// their own allocator: agraph_malloc_counter_available() then returns 0.
#ifndef AGRAPH_CMALLOCCOUNTER_H
#define AGRAPH_CMALLOCCOUNTER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// 1 when allocations are really intercepted in this process. [any thread]
int agraph_malloc_counter_available(void);

/// Start counting allocations made by the calling thread. [any thread]
void agraph_malloc_counter_thread_begin(void);

/// Stop counting allocations made by the calling thread. [any thread]
void agraph_malloc_counter_thread_end(void);

/// Allocations made by counted threads since the last reset. [any thread]
int64_t agraph_malloc_counter_total(void);

/// Set the total to zero. [any thread]
void agraph_malloc_counter_reset(void);

#ifdef __cplusplus
}
#endif
#endif
