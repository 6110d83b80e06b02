/* Test fixture: a plugin built for ABI 1.4, which a 2.0 host refuses.
 * It exports only `agraph_plugin_entry`. */
#ifndef AGRAPH_TEST_ABI_MISMATCH_H
#define AGRAPH_TEST_ABI_MISMATCH_H
#endif
