/* A test fixture: an LV2 plugin that uses the worker extension. */
