#include "CLV2Host.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Atomic int agraph_lv2_run_timing_on = 0;
_Atomic uint64_t agraph_lv2_run_timing_ns = 0;

static int agraph_lv2_vprintf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, va_list ap) {
    agraph_lv2_log *l = (agraph_lv2_log *)handle;
    if (!l || !fmt) return 0;
    if (l->is_audio_thread && l->is_audio_thread()) {
        uint32_t head = atomic_load_explicit(&l->head, memory_order_relaxed);
        uint32_t tail = atomic_load_explicit(&l->tail, memory_order_acquire);
        if (head - tail >= AGRAPH_LV2_LOG_SLOTS) {
            atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
            return 0;
        }
        uint32_t slot = head % AGRAPH_LV2_LOG_SLOTS;
        int n = vsnprintf(l->texts[slot], AGRAPH_LV2_LOG_TEXT, fmt, ap);
        l->types[slot] = type;
        atomic_store_explicit(&l->head, head + 1, memory_order_release);
        atomic_fetch_add_explicit(&l->group->queued, 1, memory_order_release);
        return n;
    }
    char text[1024];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    if (l->sink) l->sink(l->owner, type, text);
    return n;
}

static int agraph_lv2_printf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = agraph_lv2_vprintf(handle, type, fmt, ap);
    va_end(ap);
    return n;
}

void agraph_lv2_log_init(agraph_lv2_log *log, void *owner,
                         void (*sink)(void *owner, LV2_URID type, const char *text),
                         int (*is_audio_thread)(void)) {
    memset(log, 0, sizeof *log);
    log->log.handle = log;
    log->log.printf = agraph_lv2_printf;
    log->log.vprintf = agraph_lv2_vprintf;
    log->sink = sink;
    log->owner = owner;
    log->is_audio_thread = is_audio_thread;
    log->group = log;
}

void agraph_lv2_log_join(agraph_lv2_log *log, agraph_lv2_log *group) {
    log->group = group ? group : log;
}

int agraph_lv2_log_pop(agraph_lv2_log *log, LV2_URID *type, char *text) {
    uint32_t tail = atomic_load_explicit(&log->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&log->head, memory_order_acquire);
    if (tail == head) return 0;
    uint32_t slot = tail % AGRAPH_LV2_LOG_SLOTS;
    *type = log->types[slot];
    memcpy(text, log->texts[slot], AGRAPH_LV2_LOG_TEXT);
    text[AGRAPH_LV2_LOG_TEXT - 1] = 0;
    atomic_store_explicit(&log->tail, tail + 1, memory_order_release);
    atomic_fetch_sub_explicit(&log->group->queued, 1, memory_order_relaxed);
    return 1;
}

