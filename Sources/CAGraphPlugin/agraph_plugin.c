/*
 * The plugin ABI is headers only (include/agraph_plugin.h, the core in
 * include/agraph/plugin.h and the extensions in include/ext/); this file
 * exists because a C target needs one source. It checks at compile time
 * that the layout rules the headers promise hold on this platform.
 */
#include "agraph_plugin.h"

/* The ABI version must be the first field of the plugin descriptor, in
 * every version: a host reads it from a plugin of any version. */
typedef char agraph_check_abi_first[offsetof(agraph_plugin_t, abi) == 0 ? 1 : -1];
typedef char agraph_check_abi_size[sizeof(agraph_abi_version_t) == 8 ? 1 : -1];
/* Parameter values are 8-byte aligned doubles after two 32-bit words. */
typedef char agraph_check_value_layout[offsetof(agraph_param_value_t, number) == 8 ? 1 : -1];
