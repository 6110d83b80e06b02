/*
 * ext/output-route.h — what the node's output reaches in the end:
 * headphones, speakers, or unknown. A live host works it out from the JACK
 * ports the graph's outputs reach, before activation; it may change while
 * the graph runs. Two sides under one id:
 *   host side:   info->host->get_extension(host, AGRAPH_HOST_EXT_OUTPUT_ROUTE)
 *                → agraph_host_output_route_t (the route now);
 *   plugin side: type->get_extension(instance, AGRAPH_EXT_OUTPUT_ROUTE)
 *                → agraph_output_route_ext_t (told when it changes).
 */
#ifndef AGRAPH_EXT_OUTPUT_ROUTE_H
#define AGRAPH_EXT_OUTPUT_ROUTE_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_HOST_EXT_OUTPUT_ROUTE "agraph.output-route/1"
#define AGRAPH_EXT_OUTPUT_ROUTE "agraph.output-route/1"

/** Treat values you do not know as UNKNOWN. */
typedef enum agraph_output_route {
    AGRAPH_ROUTE_UNKNOWN = 0,
    AGRAPH_ROUTE_HEADPHONES = 1,
    AGRAPH_ROUTE_SPEAKERS = 2
} agraph_output_route_t;

typedef struct agraph_host_output_route {
    /** The route now (already known when activate runs); an atomic read.
     *  [any-thread] */
    uint32_t (*get)(const agraph_host_t *host);
} agraph_host_output_route_t;

typedef struct agraph_output_route_ext {
    /** The route changed (also once before activate when known). May run
     *  while the instance processes on another thread: store it atomically,
     *  apply it from the next process/decode. [main-thread] */
    void (*changed)(agraph_instance_t *instance, uint32_t route);
} agraph_output_route_ext_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_OUTPUT_ROUTE_H */
