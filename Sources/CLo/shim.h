#ifndef AGRAPH_CLO_SHIM_H
#define AGRAPH_CLO_SHIM_H
// liblo (0.31 on Debian 12). AudioGraphOSC reads OSC messages through it
// (lo_message_deserialise) and parses URLs with it; it keeps its own socket
// (liblo 0.31's servers cannot bind one address: they always bind the
// wildcard) and writes messages itself (see OSCMessage.swift).
#include <lo/lo.h>
#endif
