#include "CJackShim.h"
#include <signal.h>

/* JACK2's library globals save the signal mask of the thread that opens the
   first client and, when the last client goes (a close, or an open that
   fails), apply it with SIG_BLOCK on that thread: a thread that blocks
   SIGINT/SIGTERM/SIGHUP (AudioGraph's owner thread) would pass them on to
   whichever thread closes last (a test's main thread, and every process it
   spawns). Both calls keep the calling thread's mask as it was. */

jack_client_t *agraph_jack_client_open(const char *client_name, const char *server_name,
                                       jack_status_t *status) {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    jack_options_t options = JackNoStartServer;
    jack_client_t *client;
    if (server_name != NULL && server_name[0] != '\0') {
        options |= JackServerName;
        client = jack_client_open(client_name, options, status, server_name);
    } else {
        client = jack_client_open(client_name, options, status);
    }
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    return client;
}

int agraph_jack_client_close(jack_client_t *client) {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    int rc = jack_client_close(client);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    return rc;
}
