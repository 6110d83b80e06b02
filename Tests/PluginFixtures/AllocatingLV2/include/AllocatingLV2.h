/* A test fixture: an LV2 plugin that allocates in run (must be named by
 * `agraph check-plugin lv2:URI`). Nothing to include from Swift. */
