/*
 * ext/log.h — messages from a node to the user, printed by the host with
 * the node's id and type ("node 'dec' (daa): warning: …"). Host side:
 * `info->host->get_extension(info->host, AGRAPH_HOST_EXT_LOG)`.
 */
#ifndef AGRAPH_EXT_LOG_H
#define AGRAPH_EXT_LOG_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_HOST_EXT_LOG "agraph.log/1"

typedef enum agraph_log_severity {
    AGRAPH_LOG_DEBUG = 0,
    AGRAPH_LOG_INFO = 1,
    AGRAPH_LOG_WARNING = 2,
    AGRAPH_LOG_ERROR = 3
} agraph_log_severity_t;

/** Longest message `log_rt` keeps, bytes including the NUL. */
#define AGRAPH_LOG_RT_CAPACITY 240

typedef struct agraph_host_log {
    /** Reports a message (UTF-8, valid during the call). May allocate and
     *  lock. [main-thread] [worker-thread] */
    void (*log)(const agraph_host_t *host, int32_t severity, const char *message);

    /** The realtime variant: copies the message into a preallocated
     *  lock-free queue of this node (a full queue drops and counts it);
     *  the host prints it later. Call it only inside a call the host made
     *  on this node (one writer). [audio-thread] */
    void (*log_rt)(const agraph_host_t *host, int32_t severity, const char *message);
} agraph_host_log_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_LOG_H */
