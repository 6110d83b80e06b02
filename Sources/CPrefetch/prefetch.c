/* CPrefetch is header-only (static inline functions in include/CPrefetch.h);
 * SwiftPM needs one source file per C target. */
#include "CPrefetch.h"
