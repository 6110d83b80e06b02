/*
 * ext/thread-check.h — which thread is this, in the words of the thread
 * tags of agraph/plugin.h (a plugin may check its calls in debug builds).
 * A thread the host did not start or mark counts as the main thread. Host
 * side: `info->host->get_extension(info->host, AGRAPH_HOST_EXT_THREAD_CHECK)`.
 */
#ifndef AGRAPH_EXT_THREAD_CHECK_H
#define AGRAPH_EXT_THREAD_CHECK_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_HOST_EXT_THREAD_CHECK "agraph.thread-check/1"

typedef struct agraph_host_thread_check {
    /** Each returns 1 or 0. [any-thread] */
    int32_t (*is_main_thread)(const agraph_host_t *host);
    int32_t (*is_audio_thread)(const agraph_host_t *host);
    int32_t (*is_worker_thread)(const agraph_host_t *host);
} agraph_host_thread_check_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_THREAD_CHECK_H */
