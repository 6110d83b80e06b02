/*
 * The plugin ABI is a header only (include/agraph_plugin.h); this file
 * exists because a C target needs one source. It checks at compile time
 * that the layout rules the header promises hold on this platform.
 */
#include "agraph_plugin.h"

/* The ABI version must be the first field of the plugin descriptor. */
typedef char agraph_check_abi_first[offsetof(agraph_plugin_t, abi) == 0 ? 1 : -1];
/* Parameter values are 8-byte aligned doubles after two 32-bit words. */
typedef char agraph_check_value_layout[offsetof(agraph_param_value_t, number) == 8 ? 1 : -1];
