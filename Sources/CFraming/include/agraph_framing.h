/*
 * agraph_framing.h — bit-exact framing helpers with one home, shared by the
 * Swift modules (AC4, AudioGraphSndFile) and the C plugins (the DAA node, its
 * test double): the CRC-16 that AC-4 sync frames and FLAC frames use, the
 * first fields of an AC-4 frame's TOC, and the AC-4 sequence counter in sync
 * frames and raw frames (docs/ac4-sync-frames.md).
 *
 * Every function is pure and realtime-safe. [any-thread]
 */
#ifndef AGRAPH_FRAMING_H
#define AGRAPH_FRAMING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** CRC-16 generator x^16 + x^15 + x^2 + 1, without its x^16 term. Initial
 *  value 0, no bit reflection, no final XOR (CRC-16/BUYPASS): AC-4 sync
 *  frames (ETSI TS 103 190-1 Annex G) and FLAC frame footers. */
#define AGRAPH_CRC16_POLYNOMIAL 0x8005u

/** The 256-entry table: entry b is the register after shifting byte b
 *  through a zero register. */
const uint16_t *agraph_crc16_table(void);

/** Continues a CRC over `count` bytes from `crc` (0 to start afresh). Over
 *  covered bytes followed by their stored CRC (most significant byte
 *  first) the result is 0 for intact data. */
uint16_t agraph_crc16_update(uint16_t crc, const uint8_t *bytes, size_t count);

/** The AC-4 sequence counter after `counter`: 1 … 1020, then 1 again (a
 *  splice, 0, is followed by 1). */
unsigned agraph_ac4_sequence_next(unsigned counter);

/** Whether `next` may follow `previous` without a discontinuity: it is
 *  `agraph_ac4_sequence_next(previous)`, or either is a splice (0). */
int agraph_ac4_sequence_follows(unsigned previous, unsigned next);

/** The first fields of `raw_ac4_frame`'s ac4_toc() (ETSI TS 103 190-1):
 *  enough to time, count and seek frames without decoding them. */
typedef struct agraph_ac4_toc {
    /** bitstream_version, with variable_bits(2) added when the field is 3. */
    uint32_t bitstream_version;
    /** 1 … 1020, wrapping to 1; 0 marks a splice. */
    uint32_t sequence_counter;
    /** wait_frames when b_wait_frames is set, else -1. */
    int32_t wait_frames;
    /** 0 = 44.1 kHz, 1 = 48 kHz. */
    uint32_t fs_index;
    /** 0 … 13 (14 and 15 are reserved: the read fails). */
    uint32_t frame_rate_index;
    /** b_iframe_global: every substream decodes on its own. */
    uint32_t is_iframe;
    /** 44100 or 48000, from fs_index. */
    uint32_t sample_rate;
    /** Samples per frame at sample_rate: 2048 for index 13, else
     *  sample_rate / fps rounded to the nearest integer (an approximation
     *  for 29.97, 59.94 and 119.88 fps, whose frames alternate in length). */
    uint32_t samples_per_frame;
} agraph_ac4_toc_t;

/** Results of agraph_ac4_toc_read. */
enum {
    AGRAPH_AC4_TOC_OK = 0,
    /** The frame ends before the fields do. */
    AGRAPH_AC4_TOC_TRUNCATED = -1,
    /** frame_rate_index 14 or 15 (stored in `toc->frame_rate_index`). */
    AGRAPH_AC4_TOC_RESERVED_RATE = -2
};

/** Reads the TOC fields from the start of `raw` (`size` bytes of
 *  raw_ac4_frame: a sync frame's payload, or an MP4 sample as it is).
 *  Returns AGRAPH_AC4_TOC_OK, or why not. */
int agraph_ac4_toc_read(const uint8_t *raw, size_t size, agraph_ac4_toc_t *toc);

/** Where raw_ac4_frame lies inside the whole sync frame `frame` (sync word
 *  through CRC): its offset (4, or 7 with the 24-bit size) and length.
 *  Returns 1, or 0 when `frame` is not a sync frame whose size fits. */
int agraph_ac4_sync_payload(const uint8_t *frame, size_t size, size_t *offset, size_t *length);

/** Advances the sequence counter of the raw frame `raw` (`size` bytes of
 *  raw_ac4_frame, as MP4 carries it), so a decoder fed the copy sees a
 *  continuing stream. Returns 1, or 0 when the frame is too short or has a
 *  bitstream_version escape (the counter then moves). */
int agraph_ac4_advance_raw_frame(uint8_t *raw, size_t size);

/** Advances the sequence counter inside the whole sync frame `frame`
 *  (`size` bytes, sync word through CRC) and rewrites its CRC word when it
 *  has one, so a decoder fed the copy sees a continuing stream. Returns 1,
 *  or 0 when the frame is not a sync frame this can change (too short, not
 *  0xAC40/0xAC41, or a bitstream_version escape). */
int agraph_ac4_advance_sync_frame(uint8_t *frame, size_t size);

#ifdef __cplusplus
}
#endif

#endif
