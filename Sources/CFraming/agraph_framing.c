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

int agraph_ac4_advance_sync_frame(uint8_t *f, size_t size) {
    if (size < 7) return 0;
    unsigned sync = (unsigned)f[0] << 8 | f[1];
    if (sync != 0xAC40 && sync != 0xAC41) return 0;
    size_t header = ((unsigned)f[2] << 8 | f[3]) == 0xFFFF ? 7u : 4u;
    size_t crc_bytes = sync == 0xAC41 ? 2u : 0u;
    if (size < header + 2 + crc_bytes) return 0;
    uint8_t *raw = f + header;
    if ((raw[0] >> 6) == 3) return 0; /* bitstream_version escape: the counter moves */
    unsigned seq = ((unsigned)(raw[0] & 0x3F) << 4) | (raw[1] >> 4);
    seq = agraph_ac4_sequence_next(seq);
    raw[0] = (uint8_t)((raw[0] & 0xC0) | (seq >> 4));
    raw[1] = (uint8_t)((raw[1] & 0x0F) | ((seq & 0x0F) << 4));
    if (crc_bytes) {
        uint16_t crc = agraph_crc16_update(0, f + 2, size - 4);
        f[size - 2] = (uint8_t)(crc >> 8);
        f[size - 1] = (uint8_t)(crc & 0xFF);
    }
    return 1;
}
