/*
 * ext/decoder.h — a node that decodes compressed frames on the worker
 * thread. Per instance: `type->get_extension(instance, AGRAPH_EXT_DECODER)`.
 *
 *   worker thread:  read frame ─▶ decode(frame, timestamp) ─▶ PCM ─▶ ring
 *   audio thread:   ring ─▶ node output   (host code; no `process`)
 *
 * The node type declares `domain = AGRAPH_DOMAIN_WORKER`, one input port
 * with `input_codec`, one output port. The host owns the reading of the
 * stream, the ring, seeking, underrun counting and latency reporting.
 *
 * Lifecycle: create → activate → configure? → { decode | flush |
 * set_parameter }* [worker-thread] → decode(NULL, 0) at the end → deactivate
 * → destroy; never two of these at once.
 *
 * Timing: after activate and after each flush, the first PCM frame written
 * is sample 0 of the first frame fed. A decoder whose library delays its
 * output drops that delay itself and gives the held-back tail when called
 * with frame = NULL, size = 0 ("drain"). The host seeks by flushing,
 * feeding from the independent frame at or before the target, and
 * discarding PCM up to the exact sample.
 */
#ifndef AGRAPH_EXT_DECODER_H
#define AGRAPH_EXT_DECODER_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_EXT_DECODER "agraph.decoder/1"

typedef enum agraph_decode_status {
    /** PCM written (possibly 0 frames while priming). */
    AGRAPH_DECODE_OK = 0,
    /** The frame is corrupt: the host counts it, writes silence for it and
     *  goes on. */
    AGRAPH_DECODE_BAD_FRAME = 1,
    /** The node cannot go on: the host stops it with an error. */
    AGRAPH_DECODE_FATAL = 2
} agraph_decode_status_t;

typedef struct agraph_decoder_ext {
    /** Optional: out-of-band codec configuration, before the first decode.
     *  1 on success; 0 after writing a reason. (agraph does not call it
     *  yet.) [worker-thread & active] */
    int32_t (*configure)(agraph_instance_t *instance, const uint8_t *bytes, uint32_t size,
                         char *error, uint32_t error_capacity);

    /** Most PCM frames one decode produces; the host sizes `pcm` by it.
     *  [main-thread & active] */
    uint32_t (*max_frames_per_decode)(const agraph_instance_t *instance);

    /** Decodes one frame (host bytes, valid during the call; NULL/0 at the
     *  end of the stream: write what is held back, 0 frames = drained).
     *  `timestamp`: the frame's time in samples at the graph's rate, -1
     *  when unknown. `pcm`: output_port_channels[0] buffers of
     *  `capacity_frames`; write `*frames_written` frames to each.
     *  Returns an agraph_decode_status_t. [worker-thread & active] */
    int32_t (*decode)(agraph_instance_t *instance, const uint8_t *frame, uint32_t size,
                      int64_t timestamp, float *const *pcm, uint32_t capacity_frames,
                      uint32_t *frames_written);

    /** Drops all state before frames from another position.
     *  [worker-thread & active] */
    void (*flush)(agraph_instance_t *instance);

    /** How far the PCM lags the timestamps (0 when the decoder trims its
     *  own delay). [main-thread & active] */
    uint32_t (*decoder_latency)(const agraph_instance_t *instance);

    /** Optional: why the last decode was BAD_FRAME or FATAL, in words; ""
     *  otherwise. Valid until the next call on the instance.
     *  [worker-thread & active] */
    const char *(*last_error)(const agraph_instance_t *instance);
} agraph_decoder_ext_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_DECODER_H */
