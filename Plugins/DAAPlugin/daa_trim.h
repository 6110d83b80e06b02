/*
 * daa_trim.h — the samples a container says are not part of the
 * presentation (AGRAPH_EXT_DECODER_STREAM's trim_next_frame: an MP4 edit
 * list's start, the last frame's padding), kept as ranges of output sample
 * positions and dropped as the decoded PCM goes by. Private to the `daa`
 * plugin; one instance per node, used on the worker thread only.
 */
#ifndef DAA_TRIM_H
#define DAA_TRIM_H

#include <stddef.h>
#include <stdint.h>

/* Ranges waiting to be dropped; a few at a time are plenty (one frame's
 * start, one frame's end), more are merged into the last. */
#define DAA_TRIM_RANGES 8

typedef struct daa_trims {
    /* [start, end) in output samples since the decoder was opened. */
    uint64_t start[DAA_TRIM_RANGES], end[DAA_TRIM_RANGES];
    uint32_t count;
} daa_trims;

/* Forgets every range (the decoder was opened again). [worker-thread] */
void daa_trims_reset(daa_trims *t);

/* Drops [start, end) when it comes by; empty ranges are ignored. [worker-thread] */
void daa_trims_add(daa_trims *t, uint64_t start, uint64_t end);

/* Copies the samples at output positions [position, position + count) from
 * `src` to `dst` (each `channels` planar buffers), leaving out those in a
 * range; forgets ranges that are behind. Returns the samples copied.
 * [worker-thread] */
uint32_t daa_trims_copy(daa_trims *t, uint64_t position, float *const *dst, float *const *src, int channels,
                        uint32_t count);

#endif
