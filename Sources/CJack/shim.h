#ifndef AGRAPH_CJACK_SHIM_H
#define AGRAPH_CJACK_SHIM_H
#include <jack/jack.h>
#include <jack/thread.h>
#include <jack/metadata.h>
#include <jack/uuid.h>
#endif
