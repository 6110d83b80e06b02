/*
 * ext/plugin-info.h — details that `agraph nodes <type>` and `agraph probe`
 * show (which external library the plugin found, its versions, or why it
 * found none). Plugin-wide: `plugin->get_extension(AGRAPH_EXT_PLUGIN_INFO)`.
 */
#ifndef AGRAPH_EXT_PLUGIN_INFO_H
#define AGRAPH_EXT_PLUGIN_INFO_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_EXT_PLUGIN_INFO "agraph.plugin-info/1"

typedef struct agraph_plugin_info_ext {
    /** Multi-line UTF-8, at most AGRAPH_MAX_DETAILS bytes, owned by the
     *  plugin, valid until the next call. [main-thread] */
    const char *(*details)(void);
} agraph_plugin_info_ext_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_PLUGIN_INFO_H */
