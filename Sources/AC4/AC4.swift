// AC-4 sync-frame reader (issue 4).
//
// A small library with no dependency beyond the C library, free of
// AudioGraph types so that both the `ac4` source node and the DAA decoder
// plugin can use it:
//
//   AC4CRC16              the sync frame's CRC-16 (poly 0x8005), table-driven
//                         (and in O(1) over any range of a buffer, after a linear set-up)
//   AC4TOC                the first fields of raw_ac4_frame's ac4_toc()
//   AC4Frame              one accepted sync frame: where it is, its TOC, its timestamp
//   AC4SyncFrameReader    iterates frames over bytes in memory, with resync, in linear time
//   AC4Statistics         what the reader counted: CRC errors, skipped bytes, gaps, tail
//   AC4FileReader         reads a regular file (≤ 1 GiB) into memory, with descriptive errors
//   AC4Index              frame offsets and timestamps; nearest I-frame before a sample
//   AC4SyncFrameWriter    wraps raw frames in sync frames (tests, re-muxing)
//
// Format facts: docs/ac4-sync-frames.md (ETSI TS 103 190-1 Annex G and the
// ac4_toc() syntax). Every type here is a value type and `Sendable`; use it
// from any thread.
