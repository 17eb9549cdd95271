/* Output sinks: the files a profile (sample/profile.h) is written to.
 *
 * Internal to libluacore.  What follows is for the sink files
 * (sample/sink_*.c) only: the helpers the text sinks share, defined in
 * sample/sink_text.c.  Buffers belong to the caller; nothing here keeps
 * a pointer or writes to stderr. */
#ifndef LC_SINK_H
#define LC_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct lc_profile;
struct lc_prof_sample;

/* Room for a frame label (lc_profile_label) in every sink; longer ones
 * are cut. */
#define LC_SINK_LABEL_MAX	512

#define LC_SINK_UTF8_BAD	UINT32_MAX

/* The code point at s, or LC_SINK_UTF8_BAD if s does not start a
 * well-formed sequence (overlong forms, surrogates and values past
 * U+10FFFF are not well formed); *len is what to skip: the whole
 * sequence, or 1 byte.  The NUL terminator fails the continuation test,
 * so a sequence cut by the end of the string never reads past it. */
uint32_t lc_sink_utf8_next(const unsigned char *s, size_t *len);

/* v with dec (0 to 6) decimals, rounded half away from zero, in buf. */
const char *lc_sink_fixed(char *buf, size_t size, double v, int dec);

/* v with thousands separated by commas (weights are read by people), in
 * buf. */
const char *lc_sink_grouped(char *buf, size_t size, int64_t v);

/* Append to the string in buf, truncating at size. */
void lc_sink_cat(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A sample's weight in the folded stacks, speedscope and the SVG:
 * microseconds of CPU time (of wall-clock time with --wall), rounded, at
 * least 1. */
int64_t lc_sink_weight(const struct lc_prof_sample *s);

/* "pid 1234 (lua x.lua), CPU time, 10.00 s from 2024-05-01 12:00:00 UTC" */
void lc_sink_describe_run(const struct lc_profile *p, char *buf, size_t size);

/* "1,234 samples taken of 1,240 tried, 6 lost (...), ...; 99.5 Hz of
 * 100 Hz; stops ...": enough to judge whether the profile can be trusted
 * without the run's stderr at hand. */
void lc_sink_describe_quality(const struct lc_profile *p, char *buf,
			      size_t size);

/* Flush out at the end of a write: 0, or -1 with errno set as the
 * failure left it, or to EIO when stdio did not set it. */
int lc_sink_finish(FILE *out);

#endif /* LC_SINK_H */
