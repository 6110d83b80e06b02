/*
 * test_double_daa.h — a TEST DOUBLE of the DAA decoder library's interface.
 *
 *                  *** TEST DOUBLE — NOT A DECODER ***
 *
 * libTestDoubleDAA.so exports the eight functions of the DAA interface
 * (docs/daa-api.md) with the same calling convention, structures (same field
 * order) and error codes, so that the project's `daa` node can be tested
 * without the licensee's library. It decodes nothing: it checks what it is
 * given like the real library would, and writes PCM that *encodes what it was
 * told*, so tests can read the call sequence back from the samples.
 *
 * Its version strings say so: daa_version "TEST DOUBLE 1.0",
 * core_decoder_version "NOT A", dap_version "DECODER".
 *
 * ------------------------------------------------------------------------
 * What it accepts
 * ------------------------------------------------------------------------
 * - query_ip: output_datatype must be 7 (float32), else 1008;
 *   input_bitstream_format must be 1 (AC-4), else 1009 (it does not do
 *   DD/DD+); input_bitstream_type 0 (sync frames) or 1 (raw frames), else
 *   1010; timescale 1 … 10^9, else 1001. NULL structs: 1000.
 * - addbytes, type 0: consumes AT MOST 1000 BYTES PER CALL (the caller must
 *   loop) and never past the end of the sync frame it is assembling (sync
 *   word, frame_size (16 or 16+24 bits), raw frame, CRC when 0xAC41);
 *   `*frame_complete` = 1 once the frame is whole. A bad sync word completes
 *   the "frame" at once as invalid (process then returns 1005).
 *   Type 1: the bytes of one call are one whole raw frame (up to 65536
 *   bytes, consumed at once, frame complete).
 *   While a complete frame waits for process, addbytes consumes nothing.
 * - process: 1006 when no frame is complete; 1005 for a bad sync word, a
 *   CRC mismatch (type 0, 0xAC41) or an unreadable TOC; 1008 when
 *   pcm_output_buf->data_type != 7; 1002 when pcm_output_buf is NULL or has
 *   fewer than 2 channels.
 * - setparam: value NULL 1001; size != sizeof(int) 1002; unknown id 1003;
 *   value out of range 1001. Ids and ranges as in daa-api.md
 *   (0: 0/1, 1: 1/2, 100: 0/1, 101: 0..9, 102: -23..-11, 200: 0..510 or
 *   0xFFFF, 201: -32..32). getparam: *size < sizeof(int) 1002, unknown 1003.
 *   Library defaults: DAP 1, endpoint 2 (headphones), virtualizer 1, DE 6,
 *   ORL -14, presentation 0xFFFF, mixing 0.
 *
 * ------------------------------------------------------------------------
 * Latency (like the real library)
 * ------------------------------------------------------------------------
 * The output is delayed by D samples (env TEST_DOUBLE_DAA_DELAY, read at
 * open; default 1000 — deliberately not DAAPlay's 3168 estimate, to prove
 * the caller measures it). Every process call returns `samples per frame`
 * samples (2048 for frame_rate_index 13; round(48000 / fps) otherwise) of
 * the stream  [D priming samples] ++ frame 0 ++ frame 1 ++ …  The priming
 * samples are -0.25 on both channels (not silence, so an untrimmed start is
 * obvious). `output_timestamp` = timestamp of the first output sample in
 * timescale ticks = (input_timestamp of the first frame since open)
 * + (samples output before) - D, so it is -D at the start when the first
 * frame's timestamp is 0; `delay_samples_num` = D.
 * With env TEST_DOUBLE_DAA_REPORT_DELAY=0 it leaves both fields untouched
 * (a library that reports nothing: the caller must fall back to 3168).
 *
 * ------------------------------------------------------------------------
 * PCM encoding (every sample of one frame carries the same two values)
 * ------------------------------------------------------------------------
 *   left  = sequence_counter / 1024 + p / 2^20
 *           p = presentation index 0…510, or 511 for 0xFFFF (default);
 *           so sequence_counter = floor(left * 1024), p = (left*2^20) mod 1024
 *   right = code / 2^17, code = (((((dap * 2 + virtualizer) * 3 + endpoint)
 *                                   * 10 + de) * 13 + (orl + 23)) * 65
 *                                   + (mix + 32))
 *           decode: mix = code % 65 - 32; code /= 65; orl = code % 13 - 23;
 *           code /= 13; de = code % 10; code /= 10; endpoint = code % 3;
 *           code /= 3; virtualizer = code % 2; dap = code / 2.
 * Both are exact in float32. The parameters are those in force when the
 * frame was processed (a setparam takes effect on the next process).
 * If the library gives more than 2 output channels, the rest are zero.
 *
 * ------------------------------------------------------------------------
 * Test hooks (not part of the DAA interface)
 * ------------------------------------------------------------------------
 * - test_double_daa_call_log(): every call since the last reset, one per
 *   line, e.g. "addbytes length=1734 consumed=1000 complete=0 ts=0 -> 0".
 * - test_double_daa_frame_count() / test_double_daa_frame(i, …): every
 *   frame addbytes completed (and found well-formed) since the last reset,
 *   in order: its raw_ac4_frame bytes (for sync frames the payload without
 *   sync word, frame size and CRC; raw frames as given), the input type
 *   (0 sync, 1 raw) and the input timestamp of its first byte. So a test
 *   can tell which frames reached the library, whatever their transport.
 * - test_double_daa_reset(): clears the log, the frames and the call counters.
 * - env TEST_DOUBLE_DAA_FAIL=<function>:<code>[:<n>]  (read at every call):
 *   the named function (e.g. dlb_decode_process) returns <code> instead of
 *   working — on every call, or only on its n-th call (1-based) since the
 *   last reset.
 */
#ifndef TEST_DOUBLE_DAA_H
#define TEST_DOUBLE_DAA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdd_query_ip {
    int output_datatype;
    int input_bitstream_format;
    int input_bitstream_type;
    unsigned long timescale;
} tdd_query_ip;

typedef struct tdd_query_info_op {
    char daa_version[20];
    char daa_api_version;
    char core_decoder_version[10];
    char dap_version[10];
} tdd_query_info_op;

typedef struct tdd_query_mem_op {
    size_t decoder_size;
    size_t output_buffer_size;
} tdd_query_mem_op;

typedef struct tdd_buffer {
    unsigned nchannel;
    ptrdiff_t nstride;
    int data_type;
    void **ppdata;
} tdd_buffer;

typedef struct tdd_io_params {
    tdd_buffer *pcm_output_buf;
    unsigned long output_sample_rate;
    unsigned int output_channels_num;
    unsigned int output_samples_num;
    unsigned int delay_samples_num;
    long long output_timestamp;
} tdd_io_params;

int dlb_decode_query_info(const tdd_query_ip *in, tdd_query_info_op *out);
int dlb_decode_query_memory(const tdd_query_ip *in, tdd_query_mem_op *out);
int dlb_decode_open(const tdd_query_ip *in, void *handle);
int dlb_decode_addbytes(void *handle, const char *bytes, unsigned int length, long long input_timestamp,
                        unsigned int *bytes_consumed, int *frame_complete);
int dlb_decode_process(void *handle, tdd_io_params *io);
int dlb_decode_setparam(void *handle, int id, void *value, int size);
int dlb_decode_getparam(const void *handle, int id, void *value, int *size);
int dlb_decode_close(void *handle);

/* Test hooks. */
const char *test_double_daa_call_log(void);
void test_double_daa_reset(void);
size_t test_double_daa_frame_count(void);
/* Frame `index` (NULL past the end): its bytes, valid until the next reset;
 * its size, input timestamp and input type (each pointer may be NULL). */
const unsigned char *test_double_daa_frame(size_t index, size_t *size, long long *timestamp, int *type);

#ifdef __cplusplus
}
#endif

#endif /* TEST_DOUBLE_DAA_H */
