/*
 * agraph_plugin.h — the AudioGraph node-plugin ABI 2.0, all of it: the core
 * (agraph/plugin.h) and every extension (ext/*.h). A plugin includes this
 * one file. docs/plugin-abi.md is the reference.
 *
 *   agraph/plugin.h        core: entry, descriptor, node type, process, host table
 *   ext/decoder.h          AGRAPH_EXT_DECODER            "agraph.decoder/1"         instance
 *   ext/decoder-stream.h   AGRAPH_EXT_DECODER_STREAM     "agraph.decoder-stream/1"  instance
 *   ext/output-route.h     AGRAPH_EXT_OUTPUT_ROUTE       "agraph.output-route/1"    instance + host
 *   ext/plugin-info.h      AGRAPH_EXT_PLUGIN_INFO        "agraph.plugin-info/1"     plugin
 *   ext/log.h              AGRAPH_HOST_EXT_LOG           "agraph.log/1"             host
 *   ext/latency.h          AGRAPH_HOST_EXT_LATENCY       "agraph.latency/1"         host
 *   ext/thread-check.h     AGRAPH_HOST_EXT_THREAD_CHECK  "agraph.thread-check/1"    host
 */
#ifndef AGRAPH_PLUGIN_H
#define AGRAPH_PLUGIN_H

#include "agraph/plugin.h"
#include "ext/decoder.h"
#include "ext/decoder-stream.h"
#include "ext/output-route.h"
#include "ext/plugin-info.h"
#include "ext/log.h"
#include "ext/latency.h"
#include "ext/thread-check.h"

#endif /* AGRAPH_PLUGIN_H */
