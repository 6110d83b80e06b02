// What Swift cannot call directly in libjack: variadic functions.
#ifndef AGRAPH_CJACKSHIM_H
#define AGRAPH_CJACKSHIM_H

#include <jack/jack.h>

#ifdef __cplusplus
extern "C" {
#endif

/// jack_client_open with an optional server name (NULL: the default
/// server), never starting a server itself (JackNoStartServer): AudioGraph
/// decides when to start one. [main-thread]
jack_client_t *agraph_jack_client_open(const char *client_name, const char *server_name,
                                       jack_status_t *status);

/* jack_client_close, keeping the calling thread's signal mask (shim.c). */
int agraph_jack_client_close(jack_client_t *client);

#ifdef __cplusplus
}
#endif
#endif
