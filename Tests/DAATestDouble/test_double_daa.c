/*
 * TEST DOUBLE of the DAA decoder interface — NOT A DECODER.
 * See include/test_double_daa.h for what it checks and the PCM it writes.
 */
#include "agraph_framing.h"
#include "test_double_daa.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    E_OK = 0, E_GENERIC = 1000, E_PARAM = 1001, E_SIZE = 1002, E_UNSUPPORTED_ID = 1003,
    E_FRAME_INVALID = 1005, E_NEED_DATA = 1006, E_DATATYPE = 1008, E_FORMAT = 1009, E_TYPE = 1010
};

#define TDD_MAGIC 0x54444441u /* "TDDA" */
#define TDD_MAX_FRAME 65536
#define TDD_MAX_BYTES_PER_CALL 1000u
#define TDD_MAX_SEGMENTS 256

/* A run of identical output samples in the delay line. */
typedef struct segment { float left, right; unsigned count; } segment;

typedef struct state {
    uint32_t magic;
    int type;
    unsigned long timescale;
    /* parameters */
    int dap, endpoint, virtualizer, de, orl, presentation, mix;
    /* frame being assembled */
    unsigned have, total; /* total 0 = not yet known */
    int complete, invalid;
    long long frame_ts;
    /* timing */
    unsigned delay;
    int report_delay;
    int started;
    long long first_ts;
    unsigned long long samples_out;
    /* delay line */
    segment seg[TDD_MAX_SEGMENTS];
    unsigned seg_head, seg_count;
    unsigned char frame[TDD_MAX_FRAME + 16];
} state;

/* ---------------------------------------------------------------- log */

#define LOG_CAPACITY (8u << 20)
static char log_text[LOG_CAPACITY];
static size_t log_length;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned call_counts[8];

static void log_line(const char *format, ...) {
    pthread_mutex_lock(&log_lock);
    if (log_length < LOG_CAPACITY - 256) {
        va_list ap;
        va_start(ap, format);
        int n = vsnprintf(log_text + log_length, LOG_CAPACITY - log_length - 1, format, ap);
        va_end(ap);
        if (n > 0) {
            log_length += (size_t)n;
            if (log_length > LOG_CAPACITY - 2) log_length = LOG_CAPACITY - 2;
            log_text[log_length++] = '\n';
            log_text[log_length] = 0;
        }
    }
    pthread_mutex_unlock(&log_lock);
}

const char *test_double_daa_call_log(void) { return log_text; }


/* Counts the call and returns the injected error code, or 0. */
static int injected(int which, const char *name) {
    pthread_mutex_lock(&log_lock);
    unsigned n = ++call_counts[which];
    pthread_mutex_unlock(&log_lock);
    const char *spec = getenv("TEST_DOUBLE_DAA_FAIL");
    if (!spec) return 0;
    size_t len = strlen(name);
    if (strncmp(spec, name, len) != 0 || spec[len] != ':') return 0;
    char *end = NULL;
    long code = strtol(spec + len + 1, &end, 10);
    if (end && *end == ':') {
        long nth = strtol(end + 1, NULL, 10);
        if (nth > 0 && (unsigned)nth != n) return 0;
    }
    return (int)code;
}

enum { F_INFO, F_MEMORY, F_OPEN, F_ADD, F_PROCESS, F_SET, F_GET, F_CLOSE };

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return (v && *v) ? atoi(v) : fallback;
}

/* ---------------------------------------------------------------- bits */

/* The CRC of AC-4 sync frames (agraph_framing.h). */
static uint16_t crc16(const unsigned char *p, size_t n) { return agraph_crc16_update(0, p, n); }

/* Sequence counter and samples per frame from the TOC (agraph_framing.h,
 * the reader the DAA plugin and the AC4 module use); 0 on success. */
static int read_toc(const unsigned char *raw, size_t n, unsigned *sequence, unsigned *samples) {
    agraph_ac4_toc_t toc;
    if (agraph_ac4_toc_read(raw, n, &toc) != AGRAPH_AC4_TOC_OK) return -1;
    *sequence = toc.sequence_counter;
    *samples = toc.samples_per_frame;
    return 0;
}

/* ---------------------------------------------------------------- frames received */

/* Every frame completed by addbytes since the last reset: its raw_ac4_frame
 * bytes (a sync frame's payload without sync word, size and CRC; a raw
 * frame as given), the input type and the input timestamp. */
typedef struct received { size_t offset, size; long long ts; int type; } received;
static received *frames;
static size_t frame_count, frame_capacity;
static unsigned char *frame_bytes;
static size_t bytes_used, bytes_capacity;
#define FRAMES_BYTE_LIMIT ((size_t)256 << 20)

/* Keeps one frame (under log_lock); past the limit, or out of memory, it is dropped. */
static void keep_frame(int type, const unsigned char *raw, size_t size, long long ts) {
    pthread_mutex_lock(&log_lock);
    if (frame_count == frame_capacity) {
        size_t grown = frame_capacity ? frame_capacity * 2 : 1024;
        received *f = realloc(frames, grown * sizeof *f);
        if (f) { frames = f; frame_capacity = grown; }
    }
    if (bytes_used + size > bytes_capacity && bytes_used + size <= FRAMES_BYTE_LIMIT) {
        size_t grown = bytes_capacity ? bytes_capacity * 2 : (size_t)1 << 20;
        while (grown < bytes_used + size) grown *= 2;
        unsigned char *b = realloc(frame_bytes, grown);
        if (b) { frame_bytes = b; bytes_capacity = grown; }
    }
    if (frame_count < frame_capacity && bytes_used + size <= bytes_capacity) {
        memcpy(frame_bytes + bytes_used, raw, size);
        frames[frame_count++] = (received){ bytes_used, size, ts, type };
        bytes_used += size;
    }
    pthread_mutex_unlock(&log_lock);
}

size_t test_double_daa_frame_count(void) {
    pthread_mutex_lock(&log_lock);
    size_t n = frame_count;
    pthread_mutex_unlock(&log_lock);
    return n;
}

const unsigned char *test_double_daa_frame(size_t index, size_t *size, long long *timestamp, int *type) {
    const unsigned char *p = NULL;
    pthread_mutex_lock(&log_lock);
    if (index < frame_count) {
        p = frame_bytes + frames[index].offset;
        if (size) *size = frames[index].size;
        if (timestamp) *timestamp = frames[index].ts;
        if (type) *type = frames[index].type;
    }
    pthread_mutex_unlock(&log_lock);
    return p;
}

void test_double_daa_reset(void) {
    pthread_mutex_lock(&log_lock);
    frame_count = 0;
    bytes_used = 0;
    log_length = 0;
    log_text[0] = 0;
    memset(call_counts, 0, sizeof call_counts);
    pthread_mutex_unlock(&log_lock);
}

/* ---------------------------------------------------------------- checks */

static int check_query(const tdd_query_ip *in) {
    if (!in) return E_GENERIC;
    if (in->output_datatype != 7) return E_DATATYPE;
    if (in->input_bitstream_format != 1) return E_FORMAT;
    if (in->input_bitstream_type != 0 && in->input_bitstream_type != 1) return E_TYPE;
    if (in->timescale == 0 || in->timescale > 1000000000ul) return E_PARAM;
    return E_OK;
}

static state *valid(const void *handle) {
    state *s = (state *)handle;
    return (s && s->magic == TDD_MAGIC) ? s : NULL;
}

/* ---------------------------------------------------------------- interface */

int dlb_decode_query_info(const tdd_query_ip *in, tdd_query_info_op *out) {
    int rc = injected(F_INFO, "dlb_decode_query_info");
    if (!rc) rc = out ? check_query(in) : E_GENERIC;
    if (!rc) {
        memset(out, 0, sizeof *out);
        strcpy(out->daa_version, "TEST DOUBLE 1.0");
        out->daa_api_version = 1;
        strcpy(out->core_decoder_version, "NOT A");
        strcpy(out->dap_version, "DECODER");
    }
    log_line("query_info -> %d", rc);
    return rc;
}

int dlb_decode_query_memory(const tdd_query_ip *in, tdd_query_mem_op *out) {
    int rc = injected(F_MEMORY, "dlb_decode_query_memory");
    if (!rc) rc = out ? check_query(in) : E_GENERIC;
    if (!rc) {
        out->decoder_size = sizeof(state);
        out->output_buffer_size = 2 * 2048 * sizeof(float);
    }
    log_line("query_memory datatype=%d format=%d type=%d timescale=%lu -> %d decoder_size=%zu output_buffer_size=%zu",
             in ? in->output_datatype : -99, in ? in->input_bitstream_format : -99,
             in ? in->input_bitstream_type : -99, in ? in->timescale : 0ul, rc,
             rc ? (size_t)0 : out->decoder_size, rc ? (size_t)0 : out->output_buffer_size);
    return rc;
}

int dlb_decode_open(const tdd_query_ip *in, void *handle) {
    int rc = injected(F_OPEN, "dlb_decode_open");
    if (!rc) rc = handle ? check_query(in) : E_GENERIC;
    if (!rc) {
        /* The caller must pass decoder_size zeroed bytes. */
        const unsigned char *p = handle;
        for (size_t i = 0; i < sizeof(state); i += 4096) if (p[i]) { rc = E_GENERIC; break; }
    }
    if (!rc) {
        state *s = handle;
        s->magic = TDD_MAGIC;
        s->type = in->input_bitstream_type;
        s->timescale = in->timescale;
        s->dap = 1; s->endpoint = 2; s->virtualizer = 1; s->de = 6; s->orl = -14;
        s->presentation = 0xFFFF; s->mix = 0;
        int d = env_int("TEST_DOUBLE_DAA_DELAY", 1000);
        s->delay = d < 0 ? 0u : (unsigned)d;
        s->report_delay = env_int("TEST_DOUBLE_DAA_REPORT_DELAY", 1);
        if (s->delay) { s->seg[0] = (segment){ -0.25f, -0.25f, s->delay }; s->seg_count = 1; }
    }
    log_line("open datatype=%d format=%d type=%d timescale=%lu -> %d", in ? in->output_datatype : -99,
             in ? in->input_bitstream_format : -99, in ? in->input_bitstream_type : -99,
             in ? in->timescale : 0ul, rc);
    return rc;
}

int dlb_decode_addbytes(void *handle, const char *bytes, unsigned int length, long long input_timestamp,
                        unsigned int *bytes_consumed, int *frame_complete) {
    state *s = valid(handle);
    int rc = injected(F_ADD, "dlb_decode_addbytes");
    unsigned consumed = 0;
    if (!rc && (!s || !bytes_consumed || !frame_complete)) rc = E_GENERIC;
    if (!rc && !bytes && length > 0) rc = E_PARAM;
    if (!rc && !s->complete && length > 0) {
        const unsigned char *in = (const unsigned char *)bytes;
        if (s->have == 0) s->frame_ts = input_timestamp;
        if (s->type == 1) {
            if (length > TDD_MAX_FRAME) {
                rc = E_SIZE;
            } else {
                memcpy(s->frame, in, length);
                s->have = s->total = length;
                consumed = length;
                s->complete = 1;
            }
        } else {
            while (consumed < length && consumed < TDD_MAX_BYTES_PER_CALL && !s->complete) {
                unsigned need;
                if (s->total) need = s->total;
                else if (s->have < 4) need = 4;
                else need = 7; /* 24-bit size */
                unsigned take = need - s->have;
                if (take > length - consumed) take = length - consumed;
                if (take > TDD_MAX_BYTES_PER_CALL - consumed) take = TDD_MAX_BYTES_PER_CALL - consumed;
                memcpy(s->frame + s->have, in + consumed, take);
                s->have += take;
                consumed += take;
                if (s->have >= 2 && !s->total) {
                    unsigned sync = (unsigned)s->frame[0] << 8 | s->frame[1];
                    if (sync != 0xAC40 && sync != 0xAC41) { s->invalid = 1; s->complete = 1; break; }
                }
                if (!s->total && s->have >= 4) {
                    unsigned sync = (unsigned)s->frame[0] << 8 | s->frame[1];
                    unsigned size = (unsigned)s->frame[2] << 8 | s->frame[3];
                    unsigned header = 4;
                    if (size == 0xFFFF) {
                        if (s->have < 7) continue;
                        size = (unsigned)s->frame[4] << 16 | (unsigned)s->frame[5] << 8 | s->frame[6];
                        header = 7;
                    }
                    unsigned total = header + size + (sync == 0xAC41 ? 2u : 0u);
                    if (size == 0 || total > TDD_MAX_FRAME) { s->invalid = 1; s->complete = 1; break; }
                    s->total = total;
                }
                if (s->total && s->have == s->total) s->complete = 1;
            }
        }
        if (!rc && s->complete && !s->invalid) {
            size_t header = 0, size = s->have;
            if (s->type == 1 || agraph_ac4_sync_payload(s->frame, s->have, &header, &size))
                keep_frame(s->type, s->frame + header, size, s->frame_ts);
        }
    }
    if (bytes_consumed) *bytes_consumed = consumed;
    if (frame_complete) *frame_complete = (!rc && s) ? s->complete : 0;
    log_line("addbytes length=%u consumed=%u complete=%d ts=%lld -> %d", length, consumed,
             (!rc && s) ? s->complete : 0, input_timestamp, rc);
    return rc;
}

static void reset_frame(state *s) { s->have = s->total = 0; s->complete = s->invalid = 0; }

static int decode_frame(state *s, unsigned *sequence, unsigned *samples) {
    const unsigned char *raw = s->frame;
    size_t raw_size = s->have;
    if (s->invalid) return E_FRAME_INVALID;
    if (s->type == 0) {
        size_t header = 0, size = 0;
        if (!agraph_ac4_sync_payload(s->frame, s->total, &header, &size)) return E_FRAME_INVALID;
        if (s->frame[1] == 0x41 && crc16(s->frame + 2, s->total - 2) != 0) return E_FRAME_INVALID;
        raw = s->frame + header;
        raw_size = size;
    }
    return read_toc(raw, raw_size, sequence, samples) ? E_FRAME_INVALID : E_OK;
}

int dlb_decode_process(void *handle, tdd_io_params *io) {
    state *s = valid(handle);
    int rc = injected(F_PROCESS, "dlb_decode_process");
    unsigned sequence = 0, samples = 0, written = 0;
    if (!rc && (!s || !io)) rc = E_GENERIC;
    if (!rc && !s->complete) rc = E_NEED_DATA;
    if (!rc && (!io->pcm_output_buf || io->pcm_output_buf->nchannel < 2 || !io->pcm_output_buf->ppdata)) rc = E_SIZE;
    if (!rc && io->pcm_output_buf->data_type != 7) rc = E_DATATYPE;
    if (!rc) {
        rc = decode_frame(s, &sequence, &samples);
        if (rc) reset_frame(s);
    }
    if (!rc) {
        if (!s->started) { s->started = 1; s->first_ts = s->frame_ts; }
        int p = s->presentation == 0xFFFF ? 511 : s->presentation;
        unsigned code = (unsigned)(((((s->dap * 2 + s->virtualizer) * 3 + s->endpoint) * 10 + s->de) * 13
                                    + (s->orl + 23)) * 65 + (s->mix + 32));
        segment in = { (float)sequence / 1024.0f + (float)p / 1048576.0f, (float)code / 131072.0f, samples };
        if (s->seg_count >= TDD_MAX_SEGMENTS) { reset_frame(s); rc = E_GENERIC; goto done; }
        s->seg[(s->seg_head + s->seg_count) % TDD_MAX_SEGMENTS] = in;
        s->seg_count++;
        reset_frame(s);
        /* Output `samples` samples from the head of the delay line. */
        tdd_buffer *buf = io->pcm_output_buf;
        float **ch = (float **)buf->ppdata;
        ptrdiff_t stride = buf->nstride;
        while (written < samples && s->seg_count) {
            segment *g = &s->seg[s->seg_head];
            unsigned n = samples - written < g->count ? samples - written : g->count;
            for (unsigned i = 0; i < n; i++) {
                ch[0][(ptrdiff_t)(written + i) * stride] = g->left;
                ch[1][(ptrdiff_t)(written + i) * stride] = g->right;
                for (unsigned c = 2; c < buf->nchannel; c++) ch[c][(ptrdiff_t)(written + i) * stride] = 0;
            }
            written += n;
            g->count -= n;
            if (!g->count) { s->seg_head = (s->seg_head + 1) % TDD_MAX_SEGMENTS; s->seg_count--; }
        }
        io->output_sample_rate = 48000;
        io->output_channels_num = 2;
        io->output_samples_num = written;
        if (s->report_delay) {
            long long ticks = (long long)s->samples_out - (long long)s->delay;
            io->output_timestamp = s->first_ts + ticks * (long long)s->timescale / 48000;
            io->delay_samples_num = s->delay;
        }
        s->samples_out += written;
    }
done:
    log_line("process sequence=%u samples=%u ts=%lld -> %d", sequence, written,
             (!rc && io) ? io->output_timestamp : 0ll, rc);
    return rc;
}

static int param_in_range(int id, int v) {
    switch (id) {
    case 0: case 100: return v == 0 || v == 1;
    case 1: return v == 1 || v == 2;
    case 101: return v >= 0 && v <= 9;
    case 102: return v >= -23 && v <= -11;
    case 200: return (v >= 0 && v <= 510) || v == 0xFFFF;
    case 201: return v >= -32 && v <= 32;
    default: return -1;
    }
}

static int *param_slot(state *s, int id) {
    switch (id) {
    case 0: return &s->dap;
    case 1: return &s->endpoint;
    case 100: return &s->virtualizer;
    case 101: return &s->de;
    case 102: return &s->orl;
    case 200: return &s->presentation;
    case 201: return &s->mix;
    default: return NULL;
    }
}

int dlb_decode_setparam(void *handle, int id, void *value, int size) {
    state *s = valid(handle);
    int rc = injected(F_SET, "dlb_decode_setparam");
    int v = value && size == (int)sizeof(int) ? *(const int *)value : 0;
    if (!rc && !s) rc = E_GENERIC;
    if (!rc && !param_slot(s, id)) rc = E_UNSUPPORTED_ID;
    if (!rc && !value) rc = E_PARAM;
    if (!rc && size != (int)sizeof(int)) rc = E_SIZE;
    if (!rc && param_in_range(id, v) != 1) rc = E_PARAM;
    if (!rc) *param_slot(s, id) = v;
    log_line("setparam id=%d value=%d size=%d -> %d", id, v, size, rc);
    return rc;
}

int dlb_decode_getparam(const void *handle, int id, void *value, int *size) {
    state *s = valid(handle);
    int rc = injected(F_GET, "dlb_decode_getparam");
    if (!rc && !s) rc = E_GENERIC;
    if (!rc && !param_slot(s, id)) rc = E_UNSUPPORTED_ID;
    if (!rc && (!value || !size)) rc = E_PARAM;
    if (!rc && *size < (int)sizeof(int)) rc = E_SIZE;
    if (!rc) { *(int *)value = *param_slot(s, id); *size = (int)sizeof(int); }
    log_line("getparam id=%d -> %d", id, rc);
    return rc;
}

int dlb_decode_close(void *handle) {
    state *s = valid(handle);
    int rc = injected(F_CLOSE, "dlb_decode_close");
    if (!rc && !s) rc = E_GENERIC;
    if (!rc) s->magic = 0;
    log_line("close -> %d", rc);
    return rc;
}
