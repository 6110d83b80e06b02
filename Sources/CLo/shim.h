#ifndef AGRAPH_CLO_SHIM_H
#define AGRAPH_CLO_SHIM_H
// liblo (0.31 on Debian 12): OSC messages and bundles, (de)serialised.
// AudioGraphOSC keeps its own socket (liblo 0.31's servers cannot bind one
// address: they always bind the wildcard) and uses liblo for the wire format.
#include <lo/lo.h>
#endif
