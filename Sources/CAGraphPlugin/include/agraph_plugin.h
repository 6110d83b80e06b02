/* AudioGraph plugin ABI: placeholder, written with the plugins issue. */
#ifndef AGRAPH_PLUGIN_H
#define AGRAPH_PLUGIN_H
#define AGRAPH_PLUGIN_ABI_MAJOR 0
#endif
