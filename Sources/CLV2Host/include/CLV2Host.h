// What Swift cannot write for an LV2 host: the log feature's variadic
// printf. Messages are formatted into fixed slots (no allocation): from
// the audio thread they are queued (a lock-free ring of 32 slots, drained
// off the audio thread); from any other thread they go to `sink` at once.
#ifndef AGRAPH_CLV2HOST_H
#define AGRAPH_CLV2HOST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <lv2/log/log.h>
#include <lv2/urid/urid.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_LV2_LOG_SLOTS 32
#define AGRAPH_LV2_LOG_TEXT 256

typedef struct agraph_lv2_log {
    /// Handed to the plugin as the log feature's data; `handle` is this struct.
    LV2_Log_Log log;
    /// A message from a thread other than the audio thread. [that thread]
    void (*sink)(void *owner, LV2_URID type, const char *text);
    void *owner;
    /// Whether the calling thread is the audio thread. [any thread, realtime-safe]
    int (*is_audio_thread)(void);
    /// Queued audio-thread messages (single producer: the audio thread;
    /// single consumer: `agraph_lv2_log_pop`'s caller).
    LV2_URID types[AGRAPH_LV2_LOG_SLOTS];
    char texts[AGRAPH_LV2_LOG_SLOTS][AGRAPH_LV2_LOG_TEXT];
    _Atomic uint32_t head;
    _Atomic uint32_t tail;
    /// Audio-thread messages dropped because the queue was full.
    _Atomic uint32_t dropped;
    /// The log whose `queued` counts this one's queued messages too (a
    /// node's instances join their first instance's), so that one load
    /// says whether any of them has something to print. Itself by default.
    struct agraph_lv2_log *group;
    /// Messages queued in this log and those that joined it, not yet popped.
    _Atomic uint32_t queued;
} agraph_lv2_log;

/// Sets the log feature's functions. [main-thread, before the plugin is made]
void agraph_lv2_log_init(agraph_lv2_log *log, void *owner,
                         void (*sink)(void *owner, LV2_URID type, const char *text),
                         int (*is_audio_thread)(void));

/// Counts `log`'s queued messages in `group`'s `queued` as well.
/// [main-thread, before the plugin runs]
void agraph_lv2_log_join(agraph_lv2_log *log, agraph_lv2_log *group);

/// Whether `group` or a log that joined it has queued messages: one
/// relaxed load. [any thread, realtime-safe]
static inline int agraph_lv2_log_group_pending(agraph_lv2_log *group) {
    return atomic_load_explicit(&group->queued, memory_order_relaxed) != 0;
}

/// Takes the oldest queued message: its type and text (copied into `text`,
/// AGRAPH_LV2_LOG_TEXT bytes). Returns 0 when none is queued.
/// [one consumer thread, never the audio thread]
int agraph_lv2_log_pop(agraph_lv2_log *log, LV2_URID *type, char *text);

/* Time spent in the plugins' `run` calls, summed over every lv2 node, for
 * a benchmark that sets a host's cycle against the plugins' own work in
 * the same cycles (`agraph-bench lv2`). Off by default: a node's render
 * then pays one relaxed load. */
extern _Atomic int agraph_lv2_run_timing_on;
extern _Atomic uint64_t agraph_lv2_run_timing_ns;

/** Turns the timing on or off for nodes prepared from then on (each reads
 *  it once, when it is prepared). [main-thread] */
static inline void agraph_lv2_run_timing_enable(int on) {
    atomic_store_explicit(&agraph_lv2_run_timing_on, on, memory_order_relaxed);
}
/** [main-thread, when a node is prepared] */
static inline int agraph_lv2_run_timing_enabled(void) {
    return atomic_load_explicit(&agraph_lv2_run_timing_on, memory_order_relaxed);
}
/** Adds a node's run time of one block. [audio-thread, realtime-safe] */
static inline void agraph_lv2_run_timing_add(uint64_t ns) {
    atomic_fetch_add_explicit(&agraph_lv2_run_timing_ns, ns, memory_order_relaxed);
}
/** Nanoseconds summed since the process started. [any thread] */
static inline uint64_t agraph_lv2_run_timing_total(void) {
    return atomic_load_explicit(&agraph_lv2_run_timing_ns, memory_order_relaxed);
}

/// Parses `text` as Turtle and keeps nothing, to find its first syntax
/// error (`turtle.c`): 0 when there is none; else 1, with serd's message
/// in `message` (at most `capacity` bytes, terminated) and the 1-based
/// line and column in `text`. `has_preset`: whether a subject is a
/// `pset:Preset` (what lilv_state_new_from_string needs: it crashes on
/// Turtle without one). [any thread]
int agraph_turtle_check(const char *text, char *message, size_t capacity, unsigned *line, unsigned *column,
                        int *has_preset);

#ifdef __cplusplus
}
#endif
#endif
