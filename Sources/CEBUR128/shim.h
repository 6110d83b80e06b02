#ifndef AGRAPH_CEBUR128_SHIM_H
#define AGRAPH_CEBUR128_SHIM_H
#include <ebur128.h>
#endif
