/*
 * Test fixture: a plugin whose descriptor says ABI major = current + 1.
 * The host must refuse it after reading the version, naming both versions,
 * and must read nothing past `abi` (the rest of this struct is garbage on
 * purpose: a real future plugin's layout could be anything).
 */
#include "abi_mismatch.h"
/* The target does not depend on CAGraphPlugin; include the header by path. */
#include "../../../Sources/CAGraphPlugin/include/agraph_plugin.h"

typedef struct future_plugin {
    agraph_abi_version_t abi;
    const char *garbage[4];
} future_plugin_t;

static const future_plugin_t plugin = {
    { AGRAPH_PLUGIN_ABI_MAJOR + 1, 0 },
    { (const char *)1, (const char *)2, (const char *)3, (const char *)4 },
};

const agraph_plugin_t *agraph_plugin_entry(void) {
    return (const agraph_plugin_t *)(const void *)&plugin;
}
