/* Test fixture: a plugin built against the next ABI major version.
 * It exports only `agraph_plugin_entry` (declared in agraph_plugin.h). */
#ifndef AGRAPH_TEST_ABI_MISMATCH_H
#define AGRAPH_TEST_ABI_MISMATCH_H
#endif
