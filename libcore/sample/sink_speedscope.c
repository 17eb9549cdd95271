/* Speedscope's file format (JSON): one "sampled" profile per thread over
 * frames shared by all, the frames being lc_profile_label's labels.  A
 * thread's samples are in the order they were taken (the profile's
 * events), each weighing its own microseconds, so that speedscope's Time
 * Order view shows the run as it went; a profile whose events were cut
 * (or that has none) lists its merged samples in the order first seen,
 * with lc_sink_weight's weights.  Output depends on the profile only:
 * the same profile gives the same bytes. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "base/base.h"
#include "sample/profile.h"
#include "sample/sink.h"

/* A JSON string.  Ill-formed UTF-8 becomes U+FFFD so that every file we
 * write parses; U+2028/U+2029 are escaped too, for JavaScript readers
 * older than ES2019 that take them for line ends. */
static void json_str(FILE *out, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t len;

	putc('"', out);
	for (; *u; u += len) {
		uint32_t c = lc_sink_utf8_next(u, &len);

		switch (c) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\b':
			fputs("\\b", out);
			break;
		case '\f':
			fputs("\\f", out);
			break;
		default:
			if (c == LC_SINK_UTF8_BAD)
				fputs("\\ufffd", out);
			else if (c < 0x20 || c == 0x7f || c == 0x2028 ||
				 c == 0x2029)
				fprintf(out, "\\u%04" PRIx32, c);
			else
				fwrite(u, 1, len, out);
			break;
		}
	}
	putc('"', out);
}

/* A sample of a thread's list: the merged sample and its weight, the
 * position (event or sample index) ordering them. */
struct by_tid {
	int tid;
	uint32_t sample;
	uint32_t pos;
	int64_t weight;
};

static int by_tid_cmp(const void *a, const void *b)
{
	const struct by_tid *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Frame i of shared.frames is function i, so a sample's frames are its
 * locations' functions.  Speedscope lists stacks root first; ours are
 * leaf first. */
static void speedscope_stack(const struct lc_profile *p,
			     const struct lc_prof_sample *s, FILE *out)
{
	bool first = true;

	putc('[', out);
	for (size_t k = s->nlocs; k-- > 0;) {
		if (s->locs[k] >= p->nlocs)
			continue;
		fprintf(out, "%s%" PRIu32, first ? "" : ",",
			p->locs[s->locs[k]].func);
		first = false;
	}
	putc(']', out);
}

/* One "sampled" profile per thread, threads in tid order. */
static void speedscope_thread(const struct lc_profile *p,
			      const struct by_tid *v, size_t n, FILE *out)
{
	const char *tname = NULL;
	char name[LC_SINK_LABEL_MAX], esc[LC_SINK_LABEL_MAX - 32];
	int64_t end = 0;

	for (size_t i = 0; i < n; i++) {
		const struct lc_prof_sample *s = &p->samples[v[i].sample];

		end += v[i].weight;
		if (!tname && s->thread_name && s->thread_name < p->nstrings &&
		    p->strings[s->thread_name][0])
			tname = p->strings[s->thread_name];
	}
	/* The thread's name is the target's: escaped as labels are. */
	if (tname) {
		lc_esc_copy(esc, sizeof(esc), tname);
		snprintf(name, sizeof(name), "Thread %d (%s)", v[0].tid, esc);
	} else
		snprintf(name, sizeof(name), "Thread %d", v[0].tid);
	fputs("{\"type\":\"sampled\",\"name\":", out);
	json_str(out, name);
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64
		",\n\"samples\":[", p->at ? "none" : p->alloc ? "bytes" : "microseconds", end);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(i % 16 ? "," : ",\n", out);
		speedscope_stack(p, &p->samples[v[i].sample], out);
	}
	fputs("],\n\"weights\":[", out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%" PRId64, i ? (i % 16 ? "," : ",\n") : "",
			v[i].weight);
	fputs("]}", out);
}

int lc_profile_write_speedscope(const struct lc_profile *p,
				const char *title, FILE *out)
{
	char label[LC_SINK_LABEL_MAX], run[1024], quality[1024];
	bool timed = p->nevents && !p->events_cut;
	size_t nv = timed ? p->nevents : p->nsamples;
	struct by_tid *v;

	v = malloc((nv ? nv : 1) * sizeof(*v));
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < nv; i++) {
		uint32_t sm = timed ? p->events[i].sample : (uint32_t)i;

		if (sm >= p->nsamples) {
			free(v);
			errno = EINVAL;
			return -1;
		}
		v[i].tid = p->samples[sm].tid;
		v[i].sample = sm;
		v[i].pos = (uint32_t)i;
		if (timed) {
			double w = (double)p->events[i].weight_us *
				   p->samples[sm].scale + 0.5;

			v[i].weight = w < 1 ? 1 : (int64_t)w;
		} else {
			v[i].weight = lc_sink_weight(p, &p->samples[sm]);
		}
	}
	qsort(v, nv, sizeof(*v), by_tid_cmp);
	errno = 0;

	lc_sink_describe_run(p, run, sizeof(run));
	lc_sink_describe_quality(p, quality, sizeof(quality));
	lc_sink_cat(run, sizeof(run), ": %s", quality);
	fputs("{\"$schema\":"
	      "\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":", out);
	json_str(out, PACKAGE_STRING);
	fputs(",\n\"name\":", out);
	json_str(out, run);
	fputs(",\n\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[", out);
	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct lc_prof_func *f = &p->funcs[i];

		lc_profile_label(p, (uint32_t)i, label, sizeof(label));
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
		json_str(out, label);
		if (f->file) {
			fputs(",\"file\":", out);
			json_str(out, f->file);
		}
		if (f->start_line > 0)
			fprintf(out, ",\"line\":%" PRId64, f->start_line);
		putc('}', out);
	}
	fputs("]},\n\"profiles\":[\n", out);
	for (size_t i = 0, j; i < nv; i = j) {
		for (j = i + 1; j < nv && v[j].tid == v[i].tid; j++)
			;
		if (i)
			fputs(",\n", out);
		speedscope_thread(p, v + i, j - i, out);
	}
	/* Speedscope wants a profile to show, even an empty one. */
	if (!nv)
		fprintf(out, "{\"type\":\"sampled\",\"name\":\"no samples\","
			"\"unit\":\"%s\",\"startValue\":0,"
			"\"endValue\":0,\"samples\":[],\"weights\":[]}",
			p->at ? "none" : p->alloc ? "bytes" : "microseconds");
	fputs("\n]}\n", out);
	free(v);
	return lc_sink_finish(out);
}

/* .speedscope.json, speedscope's own ending, is one of these. */
static const char *const suffixes[] = { ".json", NULL };

const struct lc_sink lc_sink_speedscope = {
	.name = "speedscope",
	.suffixes = suffixes,
	.write = lc_profile_write_speedscope,
	.what = "speedscope's JSON file format",
};
