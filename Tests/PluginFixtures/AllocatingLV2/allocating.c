/* TEST FIXTURE, not a plugin to use: an LV2 gain of 1 that calls malloc
 * and free in every run, so that `agraph check-plugin lv2:URI` must name
 * it. Its bundle (manifest.ttl) is written by the test that uses it. */
#include <lv2/core/lv2.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const float *in; float *out; } Fixture;

static LV2_Handle instantiate(const LV2_Descriptor *d, double rate, const char *path, const LV2_Feature *const *f) {
    (void)d; (void)rate; (void)path; (void)f;
    return calloc(1, sizeof(Fixture));
}

static void connect_port(LV2_Handle h, uint32_t port, void *data) {
    Fixture *s = (Fixture *)h;
    if (port == 0) s->in = (const float *)data;
    if (port == 1) s->out = (float *)data;
}

static void run(LV2_Handle h, uint32_t n) {
    Fixture *s = (Fixture *)h;
    void *volatile scratch = malloc(64 + n);
    if (s->in && s->out) memcpy(s->out, s->in, n * sizeof(float));
    free(scratch);
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
    "urn:audiograph:test:allocating", instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index == 0 ? &descriptor : NULL;
}
