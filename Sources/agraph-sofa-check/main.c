/* agraph-sofa-check PATH: reads a SOFA file with libmysofa (mysofa_load,
 * mysofa_check) in a process of its own, bounded, before the `binaural`
 * node reads it in agraph's (HRTFSet, docs/binaural.md "Limits").
 * libmysofa 1.3.1 can be kept busy for minutes by a small file whose HDF5
 * structures declare billions of elements, can allocate gigabytes for a
 * small file, and may crash on a hostile one: here that costs this process
 * only.
 *
 * Limits set on itself: RLIMIT_AS 1 GiB (an allocation beyond fails, and
 * libmysofa reports MYSOFA_NO_MEMORY or dies; not in a sanitizer build,
 * whose runtime needs the address space), RLIMIT_CPU 10 s (SIGXCPU,
 * then SIGKILL at 11 s: a backstop; agraph kills it after 5 s of wall
 * time), no core file. It dies with the thread that started it
 * (PR_SET_PDEATHSIG).
 *
 * Exit status: 0 read and checked; 100 + k for libmysofa's error 10000 + k
 * (k < 100); 99 for MYSOFA_INTERNAL_ERROR (-1); e for an errno value e
 * (1 to 98) libmysofa returned; 98 for any other code; 125 for a wrong
 * command line. Nothing is written. [main-thread: a process of its own] */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define AGRAPH_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define AGRAPH_SANITIZED 1
#endif
#ifndef AGRAPH_SANITIZED
#define AGRAPH_SANITIZED 0
#endif

#include <mysofa.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static int status_for(int err) {
    if (err == 0) return 0;
    if (err >= 10000 && err < 10100) return 100 + (err - 10000);
    if (err == MYSOFA_INTERNAL_ERROR) return 99;
    if (err > 0 && err < 98) return err;
    return 98;
}

int main(int argc, char **argv) {
    if (argc != 2) return 125;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    closefrom(3);   /* nothing of agraph's (JACK's sockets, files) stays open here */
    struct rlimit memory = {1UL << 30, 1UL << 30};
    struct rlimit cpu = {10, 11};
    struct rlimit core = {0, 0};
#if !AGRAPH_SANITIZED
    /* A sanitizer's runtime (a --sanitize=thread or address build of the
     * package, as scripts/test makes) reserves terabytes of shadow address
     * space and dies (exit 66) under an address-space limit. */
    setrlimit(RLIMIT_AS, &memory);
#else
    (void)memory;
#endif
    setrlimit(RLIMIT_CPU, &cpu);
    setrlimit(RLIMIT_CORE, &core);
    int err = 0;
    struct MYSOFA_HRTF *hrtf = mysofa_load(argv[1], &err);
    if (hrtf == NULL) return status_for(err == 0 ? MYSOFA_INTERNAL_ERROR : err);
    err = mysofa_check(hrtf);
    mysofa_free(hrtf);
    return status_for(err);
}
