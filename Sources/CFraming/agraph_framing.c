#include "agraph_framing.h"

static uint16_t table[256];
static int table_ready;

static void build_table(void) {
    for (unsigned b = 0; b < 256; b++) {
        uint16_t crc = (uint16_t)(b << 8);
        for (int i = 0; i < 8; i++) crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ AGRAPH_CRC16_POLYNOMIAL) : (uint16_t)(crc << 1);
        table[b] = crc;
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/* Built before main (a constructor), so no call ever builds it on an audio
 * thread; the check keeps a call from another constructor correct too. */
__attribute__((constructor)) static void init_table(void) { build_table(); }

const uint16_t *agraph_crc16_table(void) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) build_table();
    return table;
}

uint16_t agraph_crc16_update(uint16_t crc, const uint8_t *bytes, size_t count) {
    const uint16_t *t = agraph_crc16_table();
    for (size_t i = 0; i < count; i++) crc = (uint16_t)((crc << 8) ^ t[(uint8_t)(crc >> 8) ^ bytes[i]]);
    return crc;
}

unsigned agraph_ac4_sequence_next(unsigned counter) {
    return counter >= 1020 ? 1u : counter + 1u;
}

int agraph_ac4_sequence_follows(unsigned previous, unsigned next) {
    return previous == 0 || next == 0 || next == agraph_ac4_sequence_next(previous);
}

/* Bits most significant first; reading past the end sets `overrun`. */
typedef struct bit_reader { const uint8_t *p; size_t bits, pos; int overrun; } bit_reader;

static uint32_t read_bits(bit_reader *b, int count) {
    uint32_t v = 0;
    for (int i = 0; i < count; i++) {
        if (b->pos >= b->bits) { b->overrun = 1; return 0; }
        v = (v << 1) | ((b->p[b->pos >> 3] >> (7 - (b->pos & 7))) & 1u);
        b->pos++;
    }
    return v;
}

/* variable_bits(n); an implausibly long escape chain counts as truncated. */
static uint32_t variable_bits(bit_reader *b, int n) {
    uint32_t value = 0;
    for (;;) {
        value += read_bits(b, n);
        if (!read_bits(b, 1) || b->overrun) return value;
        if (value >= 1u << 24) { b->overrun = 1; return 0; }
        value <<= n;
        value += 1u << n;
    }
}

/* Frames per second of frame_rate_index 0…12, as numerator / denominator. */
static const uint32_t rate_num[13] = { 24000, 24, 25, 30000, 30, 48000, 48, 50, 60000, 60, 100, 120000, 120 };
static const uint32_t rate_den[13] = { 1001, 1, 1, 1001, 1, 1001, 1, 1, 1001, 1, 1, 1001, 1 };

int agraph_ac4_toc_read(const uint8_t *raw, size_t size, agraph_ac4_toc_t *toc) {
    bit_reader b = { raw, raw ? size * 8 : 0, 0, 0 };
    agraph_ac4_toc_t t = { 0, 0, -1, 0, 0, 0, 0, 0 };
    t.bitstream_version = read_bits(&b, 2);
    if (t.bitstream_version == 3) t.bitstream_version += variable_bits(&b, 2);
    t.sequence_counter = read_bits(&b, 10);
    if (read_bits(&b, 1)) {
        t.wait_frames = (int32_t)read_bits(&b, 3);
        if (t.wait_frames > 0) (void)read_bits(&b, 2);
    }
    t.fs_index = read_bits(&b, 1);
    t.frame_rate_index = read_bits(&b, 4);
    t.is_iframe = read_bits(&b, 1);
    if (b.overrun) return AGRAPH_AC4_TOC_TRUNCATED;
    t.sample_rate = t.fs_index ? 48000u : 44100u;
    if (toc) *toc = t;
    if (t.frame_rate_index > 13) return AGRAPH_AC4_TOC_RESERVED_RATE;
    if (t.frame_rate_index == 13) {
        t.samples_per_frame = 2048;
    } else {
        uint64_t n = rate_num[t.frame_rate_index], d = rate_den[t.frame_rate_index];
        t.samples_per_frame = (uint32_t)((2 * (uint64_t)t.sample_rate * d + n) / (2 * n));
    }
    if (toc) *toc = t;
    return AGRAPH_AC4_TOC_OK;
}

int agraph_ac4_sync_payload(const uint8_t *f, size_t size, size_t *offset, size_t *length) {
    if (!f || size < 4) return 0;
    unsigned sync = (unsigned)f[0] << 8 | f[1];
    if (sync != 0xAC40 && sync != 0xAC41) return 0;
    size_t header = 4, n = (size_t)f[2] << 8 | f[3];
    if (n == 0xFFFF) {
        if (size < 7) return 0;
        header = 7;
        n = (size_t)f[4] << 16 | (size_t)f[5] << 8 | f[6];
    }
    size_t crc_bytes = sync == 0xAC41 ? 2u : 0u;
    if (n > size || header + n + crc_bytes > size) return 0;
    if (offset) *offset = header;
    if (length) *length = n;
    return 1;
}

int agraph_ac4_advance_raw_frame(uint8_t *raw, size_t size) {
    if (!raw || size < 2) return 0;
    if ((raw[0] >> 6) == 3) return 0; /* bitstream_version escape: the counter moves */
    unsigned seq = ((unsigned)(raw[0] & 0x3F) << 4) | (raw[1] >> 4);
    seq = agraph_ac4_sequence_next(seq);
    raw[0] = (uint8_t)((raw[0] & 0xC0) | (seq >> 4));
    raw[1] = (uint8_t)((raw[1] & 0x0F) | ((seq & 0x0F) << 4));
    return 1;
}

int agraph_ac4_advance_sync_frame(uint8_t *f, size_t size) {
    size_t header = 0, length = 0;
    if (size < 7 || !agraph_ac4_sync_payload(f, size, &header, &length)) return 0;
    if (length < 2 || !agraph_ac4_advance_raw_frame(f + header, length)) return 0;
    if (f[1] == 0x41) { /* 0xAC41: the CRC covers frame_size … raw_ac4_frame */
        uint16_t crc = agraph_crc16_update(0, f + 2, header - 2 + length);
        f[header + length] = (uint8_t)(crc >> 8);
        f[header + length + 1] = (uint8_t)(crc & 0xFF);
    }
    return 1;
}
