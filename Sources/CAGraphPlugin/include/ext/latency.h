/*
 * ext/latency.h — the node says that its `latency` (a decoder: its
 * `decoder_latency`) changed; the host asks again and reports the graph's
 * latencies anew (to JACK, when live). Host side:
 * `info->host->get_extension(info->host, AGRAPH_HOST_EXT_LATENCY)`.
 */
#ifndef AGRAPH_EXT_LATENCY_H
#define AGRAPH_EXT_LATENCY_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_HOST_EXT_LATENCY "agraph.latency/1"

typedef struct agraph_host_latency {
    /** The latency changed (it may be read right away). Calls from another
     *  thread are ignored, and counted by `agraph check-plugin`.
     *  [main-thread & active] */
    void (*changed)(const agraph_host_t *host);
} agraph_host_latency_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_LATENCY_H */
