#ifndef AGRAPH_CSNDFILE_SHIM_H
#define AGRAPH_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
