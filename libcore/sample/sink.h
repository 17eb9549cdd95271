/* Output sinks: the files a profile (sample/profile.h) is written to,
 * behind one table.  luacore-sample picks a sink by --format or by the
 * output file's suffix; tests/flame/make-flame and the fuzzer go through
 * the same table.
 *
 * Internal to libluacore.  The sinks are constant data and keep nothing
 * between calls.  A sink's write reads the profile and writes the whole
 * file to out, which stays the caller's to close; it returns 0, or -1
 * with errno set (EIO for a short write), and never writes to stderr.
 *
 * One file per sink: sample/sink_folded.c, sink_pprof.c, sink_svg.c and
 * sink_speedscope.c.  The table and lc_sink_for are sample/sink.c.  The
 * second part of this header is for the sink files only: their table
 * entries, and the helpers the text sinks share (sample/sink_text.c).
 * Buffers passed to those belong to the caller; nothing keeps a
 * pointer. */
#ifndef LC_SINK_H
#define LC_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct lc_profile;
struct lc_prof_sample;

struct lc_sink {
	const char *name;		/* "folded", "pprof", "svg",
					   "speedscope" */
	const char *const *suffixes;	/* file-name endings that choose it,
					   e.g. ".pb.gz", ".pprof";
					   NULL-terminated */
	int (*write)(const struct lc_profile *p, const char *title,
		     FILE *out);	/* 0, or -1 with errno */
	const char *what;		/* one line for --help */
};

/* Every sink, NULL-terminated, folded first (the default), in the order
 * luacore-sample names them. */
extern const struct lc_sink *const lc_sinks[];

/* The sink named `name` when name is non-NULL (NULL if none has that
 * name), else the one whose suffix ends `path` (folded when none does or
 * path is NULL).  Names and suffixes are compared case-sensitively. */
const struct lc_sink *lc_sink_for(const char *path, const char *name);

/* The sinks' writes, by name for a caller that wants one format whatever
 * the file is called (tests/pprof/make-profile).  title is the SVG's
 * title (NULL or "": "CPU profile" or "Wall-clock profile"); the other
 * formats have no place for it and ignore it.  Weights: lc_sink_weight
 * in the folded stacks, speedscope and the SVG; pprof carries both the
 * sample count and nanoseconds. */
int lc_profile_write_folded(const struct lc_profile *p, const char *title,
			    FILE *out);
int lc_profile_write_pprof(const struct lc_profile *p, const char *title,
			   FILE *out);
int lc_profile_write_svg(const struct lc_profile *p, const char *title,
			 FILE *out);
int lc_profile_write_speedscope(const struct lc_profile *p,
				const char *title, FILE *out);

/* ---- for the sink files only ------------------------------------------ */

/* The table's entries, each defined beside its write. */
extern const struct lc_sink lc_sink_folded;
extern const struct lc_sink lc_sink_pprof;
extern const struct lc_sink lc_sink_svg;
extern const struct lc_sink lc_sink_speedscope;

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
 * least 1; bytes in an allocation profile. */
int64_t lc_sink_weight(const struct lc_profile *p,
		       const struct lc_prof_sample *s);

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
