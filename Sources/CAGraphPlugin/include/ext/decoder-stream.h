/*
 * ext/decoder-stream.h — what a demuxer knows about a stream, for a decoder
 * fed by one (the `media` source: MP4, Matroska, Ogg, MPEG-TS, ADTS…). Per
 * instance, beside AGRAPH_EXT_DECODER:
 * `type->get_extension(instance, AGRAPH_EXT_DECODER_STREAM)`. The host
 * calls it only for sources that have such information.
 *
 * With it, the `timestamp` given to `decode` may be negative (priming
 * before the presentation's sample 0), and INT64_MIN means unknown.
 */
#ifndef AGRAPH_EXT_DECODER_STREAM_H
#define AGRAPH_EXT_DECODER_STREAM_H

#include "../agraph/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGRAPH_EXT_DECODER_STREAM "agraph.decoder-stream/1"

/** One stream, as the container describes it. Valid during `open_stream`. */
typedef struct agraph_stream_info {
    /** The codec, as named in `input_codec` ("aac", "eac3", …). */
    const char *codec;
    /** The coded rate (the decoder converts to the graph's, or refuses). */
    uint32_t sample_rate;
    /** Coded channels and their WAVE channel mask (0: no positions). */
    uint32_t channels;
    uint64_t channel_mask;
    /** The container's format tag or fourcc; 0 when none. */
    uint32_t codec_tag;
    /** Each 0 when unknown. */
    uint32_t bits_per_coded_sample;
    uint32_t bits_per_raw_sample;
    uint32_t block_align;
    uint32_t frame_size;
    /** FFmpeg's profile number, -1 when unknown. */
    int32_t profile;
    /** Bits per second, 0 when unknown. */
    int64_t bit_rate;
    /** Codec-specific configuration (AudioSpecificConfig, OpusHead, …). */
    const uint8_t *extradata;
    uint32_t extradata_size;
    uint32_t reserved0;
} agraph_stream_info_t;

typedef struct agraph_decoder_stream_ext {
    /** The stream's parameters, before the first decode (and after a flush
     *  that changes streams). 1 on success; 0 after writing a reason (the
     *  host stops the node with it). [worker-thread & active] */
    int32_t (*open_stream)(agraph_instance_t *instance, const agraph_stream_info_t *stream,
                           char *error, uint32_t error_capacity);

    /** Drop `skip_start` samples at the start and `discard_end` at the end
     *  of the next frame's output (coded rate); called only when one is
     *  not 0. [worker-thread & active] */
    void (*trim_next_frame)(agraph_instance_t *instance, uint32_t skip_start, uint32_t discard_end);

    /** Frames found damaged and concealed by the decoder since activate.
     *  [any-thread] */
    uint64_t (*concealed_frames)(const agraph_instance_t *instance);
} agraph_decoder_stream_ext_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_EXT_DECODER_STREAM_H */
