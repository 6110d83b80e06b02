#ifndef AGRAPH_CLILV_SHIM_H
#define AGRAPH_CLILV_SHIM_H
/* lilv (Debian: liblilv-dev), the LV2 project's host library, and the LV2
 * headers (lv2-dev) of the features AudioGraph gives plugins. */
#include <lilv-0/lilv/lilv.h>   /* no pkg-config: lilv is loaded on first use (CLazyLibs) */
#include <lv2/core/lv2.h>
#include <lv2/urid/urid.h>
#include <lv2/options/options.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/worker/worker.h>
#include <lv2/state/state.h>
#include <lv2/log/log.h>
#include <lv2/atom/atom.h>
#include <lv2/port-props/port-props.h>
#include <lv2/units/units.h>
#endif
