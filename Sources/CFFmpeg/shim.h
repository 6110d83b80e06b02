#ifndef AGRAPH_CFFMPEG_SHIM_H
#define AGRAPH_CFFMPEG_SHIM_H
/* FFmpeg's libraries (Debian: libavformat-dev libavcodec-dev
 * libswresample-dev libavutil-dev) for the `media` source, the `ffmpeg`
 * decoder plugin and the FFTs of `agraph compare` (libavutil's av_tx). The
 * inline functions give Swift what FFmpeg defines as macros. */
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libavutil/error.h>
#include <libavutil/samplefmt.h>
#include <libavutil/tx.h>
#include <libswresample/swresample.h>

static inline int agraph_averror_eof(void) { return AVERROR_EOF; }
static inline int agraph_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int agraph_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int64_t agraph_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int agraph_av_time_base(void) { return AV_TIME_BASE; }
/* av_err2str is a macro around a compound literal. */
static inline void agraph_av_strerror(int code, char *buffer, size_t size) { av_strerror(code, buffer, size); }
#endif
