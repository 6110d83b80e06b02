/* Test fixture: a plugin whose descriptor claims absurd counts or carries
 * overlong strings. It exports only `agraph_plugin_entry` (declared in
 * agraph_plugin.h); AGRAPH_TEST_HUGE_COUNTS picks the case (see the .c). */
#ifndef AGRAPH_TEST_HUGE_COUNTS_H
#define AGRAPH_TEST_HUGE_COUNTS_H
#endif
