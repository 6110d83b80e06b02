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

/* The plugin-wide details for `agraph nodes daa` and `agraph probe` (the
 * DAA library found and its version strings) come through the ABI's
 * AGRAPH_EXT_PLUGIN_INFO extension. */

#ifdef __cplusplus
}
#endif

#endif /* DAA_PLUGIN_H */
