#ifndef AGRAPH_CSOXR_SHIM_H
#define AGRAPH_CSOXR_SHIM_H
#include <soxr.h>
#endif
