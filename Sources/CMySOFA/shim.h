#ifndef AGRAPH_CMYSOFA_SHIM_H
#define AGRAPH_CMYSOFA_SHIM_H
/* libmysofa (Debian: libmysofa-dev; its runtime package libmysofa1 installs
 * the default HRTF set, /usr/share/libmysofa/default.sofa): SOFA (AES69)
 * HRTF files for the `binaural` node. */
#include <mysofa.h>
#endif
