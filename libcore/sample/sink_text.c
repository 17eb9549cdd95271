/* What the text sinks share: UTF-8 decoding for the escaping of
 * speedscope and the SVG, numbers formatted without the locale, the
 * sample weight of all three (folded stacks too) and the description of
 * the run that speedscope and the SVG print, so that the text formats of
 * one profile agree on names and numbers.  Declared in sample/sink.h,
 * for the sink files only.
 *
 * Numbers with a fraction are formatted by hand (lc_sink_fixed()), not
 * with printf's %f: the library may live in a program that set a locale
 * with a decimal comma, which SVG, CSS and JavaScript would all misread.
 * Nothing here reads a clock or draws a random number, so the same
 * profile always gives the same bytes. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>	/* isfinite, a macro */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "sample/profile.h"
#include "sample/sink.h"

/* ---- text ------------------------------------------------------------- */

uint32_t lc_sink_utf8_next(const unsigned char *s, size_t *len)
{
	uint32_t c = s[0], min;
	size_t n;

	*len = 1;
	if (c < 0x80)
		return c;
	if (c >= 0xc2 && c < 0xe0) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c < 0xf0) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c < 0xf5) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return LC_SINK_UTF8_BAD;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return LC_SINK_UTF8_BAD;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return LC_SINK_UTF8_BAD;
	*len = n;
	return c;
}

/* ---- numbers ---------------------------------------------------------- */

const char *lc_sink_fixed(char *buf, size_t size, double v, int dec)
{
	int64_t scale = 1, r;
	char frac[8];
	bool neg;

	if (dec < 0)
		dec = 0;
	if (dec > 6)
		dec = 6;
	if (!isfinite(v))
		v = 0;
	neg = v < 0;
	if (neg)
		v = -v;
	if (v > 1e12)
		v = 1e12;
	for (int i = 0; i < dec; i++)
		scale *= 10;
	r = (int64_t)(v * (double)scale + 0.5);
	frac[0] = '.';
	for (int i = dec, f = (int)(r % scale); i > 0; i--, f /= 10)
		frac[i] = (char)('0' + f % 10);
	frac[dec ? dec + 1 : 0] = '\0';
	snprintf(buf, size, "%s%" PRId64 "%s", neg && r ? "-" : "", r / scale,
		 frac);
	return buf;
}

/* lc_sink_fixed(), without trailing zeros: "100", "99.5". */
static const char *trimmed(char *buf, size_t size, double v, int dec)
{
	char *dot, *e;

	lc_sink_fixed(buf, size, v, dec);
	dot = strchr(buf, '.');
	if (!dot)
		return buf;
	for (e = buf + strlen(buf); e > dot + 1 && e[-1] == '0'; e--)
		;
	if (e == dot + 1)
		e = dot;
	*e = '\0';
	return buf;
}

const char *lc_sink_grouped(char *buf, size_t size, int64_t v)
{
	char digits[32];
	size_t n, o = 0;

	snprintf(digits, sizeof(digits), "%" PRId64, v);
	n = strlen(digits);
	for (size_t i = 0; i < n && o + 1 < size; i++) {
		buf[o++] = digits[i];
		if (digits[i] != '-' && (n - i - 1) % 3 == 0 && i + 1 < n &&
		    o + 1 < size)
			buf[o++] = ',';
	}
	buf[o] = '\0';
	return buf;
}

void lc_sink_cat(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

/* ---- what the files say about the run --------------------------------- */

int64_t lc_sink_weight(const struct lc_profile *p,
		       const struct lc_prof_sample *s)
{
	int64_t w = p->alloc ? lc_profile_cpu(s) :
		    (lc_profile_cpu(s) + 500) / 1000;

	return w < 1 ? 1 : w;
}

void lc_sink_describe_run(const struct lc_profile *p, char *buf, size_t size)
{
	char num[32];

	buf[0] = '\0';
	if (p->pid > 0)
		lc_sink_cat(buf, size, "pid %d", p->pid);
	if (p->command && p->command[0]) {
		char esc[LC_SINK_LABEL_MAX];

		/* The target's command line, escaped as its names are. */
		lc_esc_copy(esc, sizeof(esc), p->command);
		lc_sink_cat(buf, size, "%s(%s)", buf[0] ? " " : "", esc);
	}
	lc_sink_cat(buf, size, "%s%s", buf[0] ? ", " : "",
	    p->at ? "calls of functions" :
	    p->alloc ? "allocated bytes" :
	    p->wall ? "wall-clock samples" : "CPU time");
	if (p->duration_ns > 0)
		lc_sink_cat(buf, size, ", %s s",
		    lc_sink_fixed(num, sizeof(num),
				  (double)p->duration_ns / 1e9, 2));
	if (p->start_ns > 0) {
		time_t t = (time_t)(p->start_ns / 1000000000);
		struct tm tm;
		char when[64];

		if (gmtime_r(&t, &tm) &&
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
			lc_sink_cat(buf, size, " from %s", when);
	}
}

void lc_sink_describe_quality(const struct lc_profile *p, char *buf,
			      size_t size)
{
	const struct lc_prof_quality *q = &p->q;
	uint64_t lost = lc_prof_lost(q);
	char a[32], b[32], c[32];

	buf[0] = '\0';
	lc_sink_cat(buf, size, "%s samples taken",
	    lc_sink_grouped(a, sizeof(a), (int64_t)q->taken));
	if (q->attempted)
		lc_sink_cat(buf, size, " of %s tried",
		    lc_sink_grouped(a, sizeof(a), (int64_t)q->attempted));
	lc_sink_cat(buf, size, ", %s lost",
	    lc_sink_grouped(a, sizeof(a), (int64_t)lost));
	if (lost)
		lc_sink_cat(buf, size, " (%" PRIu64 " unreadable, %" PRIu64
		    " exited, %" PRIu64 " inconsistent, %" PRIu64
		    " over the stop budget)", q->lost_read,
		    q->lost_gone, q->lost_inconsistent, q->lost_held);
	if (q->truncated)
		lc_sink_cat(buf, size, ", %" PRIu64 " truncated", q->truncated);
	if (q->idle_skipped)
		lc_sink_cat(buf, size, ", %" PRIu64 " idle skipped",
		    q->idle_skipped);
	if (q->rate_hz > 0)
		lc_sink_cat(buf, size, "; %s Hz of %s Hz",
		    trimmed(a, sizeof(a), q->achieved_hz, 1),
		    trimmed(b, sizeof(b), q->rate_hz, 1));
	if (q->late_ticks)
		lc_sink_cat(buf, size, ", %" PRIu64 " late ticks",
		    q->late_ticks);
	if (q->stop_median_us > 0)
		lc_sink_cat(buf, size, "; stops %s us median, %s us p99",
		    trimmed(a, sizeof(a), q->stop_median_us, 1),
		    trimmed(b, sizeof(b), q->stop_p99_us, 1));
	if (!p->wall && q->cpu_used_ns > 0) {
		lc_sink_cat(buf, size, "; CPU %s s used, %s s charged to "
		    "samples, %s s between samples",
		    trimmed(a, sizeof(a), (double)q->cpu_used_ns / 1e9, 2),
		    trimmed(b, sizeof(b), (double)q->cpu_charged_ns / 1e9, 2),
		    trimmed(c, sizeof(c), (double)q->cpu_between_ns / 1e9, 2));
		lc_sink_cat(buf, size, ", %s s after scaling each thread's "
		    "samples to its CPU time",
		    trimmed(a, sizeof(a), (double)q->cpu_scaled_ns / 1e9, 2));
	}
}

int lc_sink_finish(FILE *out)
{
	if (fflush(out) != 0 || ferror(out)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}
