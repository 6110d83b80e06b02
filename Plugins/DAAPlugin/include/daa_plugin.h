/*
 * daa_plugin.h — what the `daa` node plugin offers beyond the plugin ABI:
 * two small extensions (proposals for agraph_plugin.h; until the host knows
 * them, tests and tools look them up by these ids).
 */
#ifndef DAA_PLUGIN_H
#define DAA_PLUGIN_H

#include "agraph_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Per instance (`get_extension(instance, DAA_EXT_DIAGNOSTICS)`): why the
 *  last decode call returned AGRAPH_DECODE_BAD_FRAME or AGRAPH_DECODE_FATAL
 *  ("DAA error 1005: frame not valid (dlb_decode_process, frame 12)"), ""
 *  when it did not; the latency measured from the library (frames dropped
 *  from the start of the output after activate/flush) and where it came
 *  from ("output_timestamp", "delay_samples_num", "estimate"); the library's
 *  path and version text. Strings stay valid until the next call on the
 *  instance. [worker-thread or main-thread, never concurrently with decode] */
#define DAA_EXT_DIAGNOSTICS "org.audiograph.daa.diagnostics/1"
typedef struct daa_diagnostics_ext {
    const char *(*last_error)(const agraph_instance_t *instance);
    uint32_t (*measured_latency)(const agraph_instance_t *instance);
    const char *(*latency_source)(const agraph_instance_t *instance);
    const char *(*library)(const agraph_instance_t *instance);
} daa_diagnostics_ext_t;

/** Plugin-wide (`agraph_plugin_t.get_extension(AGRAPH_EXT_PLUGIN_INFO)`):
 *  details for `agraph nodes daa`: which DAA library the default lookup
 *  finds (DAA_LIBRARY, else the usual names) and its version strings, or
 *  why none was found. Multi-line text, static until the next call.
 *  [main-thread] */
#define AGRAPH_EXT_PLUGIN_INFO "agraph.plugin-info/1"
typedef struct agraph_plugin_info_ext {
    const char *(*details)(void);
} agraph_plugin_info_ext_t;

#ifdef __cplusplus
}
#endif

#endif /* DAA_PLUGIN_H */
