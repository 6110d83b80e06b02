#ifndef AGRAPH_CAVUTIL_SHIM_H
#define AGRAPH_CAVUTIL_SHIM_H
/* libavutil alone (Debian: libavutil-dev): av_tx, FFmpeg's FFT, for the
 * `binaural` node's partitioned convolution. */
#include <libavutil/tx.h>
#include <libavutil/mem.h>
#endif
