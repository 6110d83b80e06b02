/* TEST FIXTURE, not a plugin to use: exercises LV2's worker extension.
 * Each run schedules one request holding the run's number (1, 2, …); work
 * answers with that number and whether it ran on another thread than run;
 * work_response keeps the last answer. The output is a DC level: the
 * number of the last answer delivered, and the control output "other"
 * is 1 when every work call ran off the run thread. Its bundle is written
 * by the test that uses it. */
#include <lv2/core/lv2.h>
#include <lv2/worker/worker.h>
#include <lv2/urid/urid.h>
#include <lv2/log/log.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const float *in;
    float *out;
    float *other;
    LV2_Worker_Schedule *schedule;
    LV2_Log_Log *log;
    LV2_URID note;
    uint32_t runs;
    float last;
    pthread_t run_thread;
    int off_thread;
    int works;
} Fixture;

typedef struct { uint32_t number; int32_t off_thread; } Answer;

static LV2_Handle instantiate(const LV2_Descriptor *d, double rate, const char *path, const LV2_Feature *const *features) {
    (void)d; (void)rate; (void)path;
    Fixture *s = calloc(1, sizeof(Fixture));
    for (int i = 0; features && features[i]; i++) {
        if (!strcmp(features[i]->URI, LV2_WORKER__schedule)) s->schedule = (LV2_Worker_Schedule *)features[i]->data;
        if (!strcmp(features[i]->URI, LV2_LOG__log)) s->log = (LV2_Log_Log *)features[i]->data;
        if (!strcmp(features[i]->URI, LV2_URID__map)) {
            LV2_URID_Map *map = (LV2_URID_Map *)features[i]->data;
            s->note = map->map(map->handle, LV2_LOG__Note);
        }
    }
    if (s->log) s->log->printf(s->log->handle, s->note, "instantiated at %d Hz\n", (int)rate);
    if (!s->schedule) { free(s); return NULL; }
    s->off_thread = 1;
    return s;
}

static void connect_port(LV2_Handle h, uint32_t port, void *data) {
    Fixture *s = (Fixture *)h;
    if (port == 0) s->in = (const float *)data;
    if (port == 1) s->out = (float *)data;
    if (port == 2) s->other = (float *)data;
}

static void run(LV2_Handle h, uint32_t n) {
    Fixture *s = (Fixture *)h;
    s->run_thread = pthread_self();
    s->runs++;
    uint32_t number = s->runs;
    if (s->log && number == 3) s->log->printf(s->log->handle, s->note, "run number %u\n", number);
    s->schedule->schedule_work(s->schedule->handle, sizeof number, &number);
    for (uint32_t i = 0; i < n; i++) s->out[i] = s->last;
    if (s->other) *s->other = (s->works > 0 && s->off_thread) ? 1.0f : 0.0f;
}

static LV2_Worker_Status work(LV2_Handle h, LV2_Worker_Respond_Function respond, LV2_Worker_Respond_Handle rh,
                              uint32_t size, const void *data) {
    Fixture *s = (Fixture *)h;
    if (size != sizeof(uint32_t)) return LV2_WORKER_ERR_UNKNOWN;
    Answer a = { *(const uint32_t *)data, !pthread_equal(pthread_self(), s->run_thread) };
    return respond(rh, sizeof a, &a);
}

static LV2_Worker_Status work_response(LV2_Handle h, uint32_t size, const void *data) {
    Fixture *s = (Fixture *)h;
    if (size != sizeof(Answer)) return LV2_WORKER_ERR_UNKNOWN;
    const Answer *a = (const Answer *)data;
    s->last = (float)a->number;
    s->works++;
    if (!a->off_thread) s->off_thread = 0;
    return LV2_WORKER_SUCCESS;
}

static const LV2_Worker_Interface worker = { work, work_response, NULL };

static const void *extension_data(const char *uri) {
    return strcmp(uri, LV2_WORKER__interface) == 0 ? &worker : NULL;
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
    "urn:audiograph:test:worker", instantiate, connect_port, NULL, run, NULL, cleanup, extension_data,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index == 0 ? &descriptor : NULL;
}
