/* daa_trim.c — see daa_trim.h. */
#include "daa_trim.h"

#include <string.h>

void daa_trims_reset(daa_trims *t) { t->count = 0; }

void daa_trims_add(daa_trims *t, uint64_t start, uint64_t end) {
    if (end <= start) return;
    if (t->count == DAA_TRIM_RANGES) { /* full: widen the last one (trims are rare) */
        if (start < t->start[t->count - 1]) t->start[t->count - 1] = start;
        if (end > t->end[t->count - 1]) t->end[t->count - 1] = end;
        return;
    }
    t->start[t->count] = start;
    t->end[t->count] = end;
    t->count++;
}

/* Whether `p` is in a range; if not, `*until` is where the next range starts
 * (or UINT64_MAX); if so, where the range ends. */
static int dropped(const daa_trims *t, uint64_t p, uint64_t *until) {
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < t->count; i++) {
        if (p >= t->start[i] && p < t->end[i]) { *until = t->end[i]; return 1; }
        if (t->start[i] > p && t->start[i] < next) next = t->start[i];
    }
    *until = next;
    return 0;
}

uint32_t daa_trims_copy(daa_trims *t, uint64_t position, float *const *dst, float *const *src, int channels,
                        uint32_t count) {
    uint32_t copied = 0, i = 0;
    while (i < count) {
        uint64_t until;
        int drop = dropped(t, position + i, &until);
        uint64_t run64 = until - (position + i);
        uint32_t run = run64 < (uint64_t)(count - i) ? (uint32_t)run64 : count - i;
        if (!drop) {
            for (int c = 0; c < channels; c++) memmove(dst[c] + copied, src[c] + i, run * sizeof(float));
            copied += run;
        }
        i += run;
    }
    /* Ranges wholly behind the samples seen are done. */
    uint64_t seen = position + count;
    uint32_t kept = 0;
    for (uint32_t r = 0; r < t->count; r++) {
        if (t->end[r] <= seen) continue;
        t->start[kept] = t->start[r];
        t->end[kept] = t->end[r];
        kept++;
    }
    t->count = kept;
    return copied;
}
