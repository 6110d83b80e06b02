#include "agraph_plugin.h"
