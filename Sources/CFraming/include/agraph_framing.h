/*
 * agraph_framing.h — bit-exact framing helpers with one home, shared by the
 * Swift modules (AC4, AudioGraphSndFile) and the C plugins (the DAA node, its
 * test double): the CRC-16 that AC-4 sync frames and FLAC frames use, and the
 * AC-4 sync frame's sequence counter (docs/ac4-sync-frames.md).
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
