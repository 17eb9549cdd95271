/* pprof output: one perftools.profiles.Profile message (pprof's
 * profile.proto), gzipped, as pprof and the tools that read its format
 * expect.
 *
 * The encoder is written by hand: the message needs only varints and
 * length-delimited fields, far less than a protobuf library brings.
 *
 * Memory stays bounded by one chunk of encoded fields plus the string
 * table, whatever the number of samples: top-level fields are encoded
 * into a buffer that is deflated into the file each time it passes
 * CHUNK.  Protobuf lets a message's fields come in any order, and the
 * elements of a repeated field are read in the order they appear, so the
 * string table can go last, once every index into it has been handed
 * out. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/base.h"
#include "sample/profile.h"
#include "sample/sink.h"

/* Field numbers, from profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,

	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,

	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,

	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,

	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,

	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,

	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

enum {
	WIRE_VARINT = 0,
	WIRE_LEN = 2,		/* length-delimited: a varint length, then bytes */
};

#define CHUNK (64 * 1024)	/* deflate the encoded fields at this size */
#define MAX_COMMENTS 8

struct buf {
	uint8_t *data;
	size_t len, cap;
};

/* One write.  Every step after the first failure does nothing, so the
 * encoding code need not check each call: the error is looked at once,
 * at the end. */
struct pw {
	const struct lc_profile *p;
	FILE *out;
	int err;		/* first errno; 0 while all is well */
	z_stream z;
	bool z_ready;		/* deflateInit2 succeeded: deflateEnd owed */
	struct buf top;		/* encoded top-level fields, not yet deflated */
	struct buf msg;		/* the top-level message being built */
	struct buf sub;		/* a message nested in msg */
	/* The string table.  Index i is the NUL-terminated string at
	 * chars.data + offs[i]; slots is an open-addressing index over it
	 * (i + 1, 0 = free), kept under half full. */
	struct buf chars;
	size_t *offs;
	size_t nstr, capstr;
	size_t *slots;
	size_t nslots;
	uint8_t zout[16384];	/* deflate's output, on its way to the file */
};

static void fail(struct pw *w, int err)
{
	if (!w->err)
		w->err = err;
}

static int buf_reserve(struct pw *w, struct buf *b, size_t n)
{
	size_t ncap;
	uint8_t *d;

	if (w->err)
		return -1;
	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - b->len) {
		fail(w, ENOMEM);
		return -1;
	}
	ncap = b->cap ? b->cap : 256;
	while (ncap - b->len < n)
		ncap *= 2;
	d = realloc(b->data, ncap);
	if (!d) {
		fail(w, ENOMEM);
		return -1;
	}
	b->data = d;
	b->cap = ncap;
	return 0;
}

static void put_bytes(struct pw *w, struct buf *b, const void *data, size_t n)
{
	if (!n || buf_reserve(w, b, n) < 0)
		return;
	memcpy(b->data + b->len, data, n);
	b->len += n;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Seven bits a byte, least significant first; the high bit says that
 * more bytes follow.  A negative int64 is its two's complement as a
 * uint64 (ten bytes), which is how protobuf encodes int64. */
static void put_varint(struct pw *w, struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	put_bytes(w, b, tmp, n);
}

static void put_tag(struct pw *w, struct buf *b, unsigned field, unsigned wire)
{
	put_varint(w, b, (uint64_t)field << 3 | wire);
}

/* A scalar field.  proto3 reads an absent scalar as 0, so a zero is left
 * out rather than written. */
static void put_uint(struct pw *w, struct buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	put_tag(w, b, field, WIRE_VARINT);
	put_varint(w, b, v);
}

static void put_int(struct pw *w, struct buf *b, unsigned field, int64_t v)
{
	put_uint(w, b, field, (uint64_t)v);
}

static void put_len(struct pw *w, struct buf *b, unsigned field,
		    const void *data, size_t n)
{
	put_tag(w, b, field, WIRE_LEN);
	put_varint(w, b, n);
	put_bytes(w, b, data, n);
}

/* The message encoded in m becomes field of b; m is emptied for the next
 * one.  Written even when empty: an element of a repeated message field
 * counts whether or not it has content. */
static void put_msg(struct pw *w, struct buf *b, unsigned field,
		    struct buf *m)
{
	put_len(w, b, field, m->data, m->len);
	m->len = 0;
}

/* Packed repeated integers: one length-delimited field holding the
 * varints back to back.  Nothing for an empty list. */
static void put_packed(struct pw *w, struct buf *b, unsigned field,
		       const uint64_t *v, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint_size(v[i]);
	put_tag(w, b, field, WIRE_LEN);
	put_varint(w, b, len);
	for (size_t i = 0; i < n; i++)
		put_varint(w, b, v[i]);
}

/* The same for location ids, which are indexes + 1 (0 is not an id). */
static void put_packed_ids(struct pw *w, struct buf *b, unsigned field,
			   const uint32_t *idx, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint_size((uint64_t)idx[i] + 1);
	put_tag(w, b, field, WIRE_LEN);
	put_varint(w, b, len);
	for (size_t i = 0; i < n; i++)
		put_varint(w, b, (uint64_t)idx[i] + 1);
}

/* Deflate what top holds (all of it), writing what comes out.  Z_FINISH
 * also ends the gzip member: the trailer with the CRC and length. */
static void deflate_top(struct pw *w, int flush)
{
	size_t done = 0;
	int rc;

	if (w->err)
		return;
	do {
		/* avail_in is an unsigned int: feed a huge buffer in
		 * slices. */
		size_t n = w->top.len - done;

		if (n > UINT_MAX / 2)
			n = UINT_MAX / 2;
		w->z.next_in = w->top.data + done;
		w->z.avail_in = (uInt)n;
		done += n;
		for (;;) {
			int f = done < w->top.len ? Z_NO_FLUSH : flush;
			size_t out;

			w->z.next_out = w->zout;
			w->z.avail_out = sizeof(w->zout);
			rc = deflate(&w->z, f);
			/* With fresh output space deflate always makes
			 * progress; anything else is a broken stream. */
			if (rc != Z_OK && rc != Z_STREAM_END &&
			    !(rc == Z_BUF_ERROR && f != Z_FINISH)) {
				fail(w, EIO);
				return;
			}
			out = sizeof(w->zout) - w->z.avail_out;
			errno = 0;
			if (out && fwrite(w->zout, 1, out, w->out) != out) {
				fail(w, errno ? errno : EIO);
				return;
			}
			if (f == Z_FINISH ? rc == Z_STREAM_END :
			    w->z.avail_out != 0)
				break;
		}
	} while (done < w->top.len);
	w->top.len = 0;
}

/* A top-level field is complete: deflate once enough has piled up. */
static void top_done(struct pw *w)
{
	if (w->top.len >= CHUNK)
		deflate_top(w, Z_NO_FLUSH);
}

static void top_msg(struct pw *w, unsigned field)
{
	put_msg(w, &w->top, field, &w->msg);
	top_done(w);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int str_rehash(struct pw *w)
{
	size_t ncap = w->nslots ? w->nslots * 2 : 1024;
	size_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns) {
		fail(w, ENOMEM);
		return -1;
	}
	for (size_t id = 0; id < w->nstr; id++) {
		const char *s = (const char *)w->chars.data + w->offs[id];
		size_t i = str_hash(s) & (ncap - 1);

		while (ns[i])
			i = (i + 1) & (ncap - 1);
		ns[i] = id + 1;
	}
	free(w->slots);
	w->slots = ns;
	w->nslots = ncap;
	return 0;
}

/* The string table index of s, added if new.  After a failure the
 * answer is 0 (""): the write is lost anyway, and callers stay simple. */
static int64_t str(struct pw *w, const char *s)
{
	size_t len, i, m;

	if (w->err)
		return 0;
	if ((w->nstr + 1) * 2 > w->nslots && str_rehash(w) < 0)
		return 0;
	m = w->nslots - 1;
	for (i = str_hash(s) & m; w->slots[i]; i = (i + 1) & m) {
		size_t id = w->slots[i] - 1;

		if (strcmp((const char *)w->chars.data + w->offs[id], s) == 0)
			return (int64_t)id;
	}
	if (w->nstr == w->capstr) {
		size_t ncap = w->capstr ? w->capstr * 2 : 256;
		size_t *no = realloc(w->offs, ncap * sizeof(*no));

		if (!no) {
			fail(w, ENOMEM);
			return 0;
		}
		w->offs = no;
		w->capstr = ncap;
	}
	len = strlen(s);
	w->offs[w->nstr] = w->chars.len;
	put_bytes(w, &w->chars, s, len + 1);
	if (w->err)
		return 0;
	w->slots[i] = w->nstr + 1;
	return (int64_t)w->nstr++;
}

/* str() of a formatted string, however long. */
static int64_t strf(struct pw *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int64_t strf(struct pw *w, const char *fmt, ...)
{
	char small[256], *s = small;
	va_list ap;
	int64_t id;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		fail(w, EINVAL);
		return 0;
	}
	if ((size_t)n >= sizeof(small)) {
		s = malloc((size_t)n + 1);
		if (!s) {
			fail(w, ENOMEM);
			return 0;
		}
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	id = str(w, s);
	if (s != small)
		free(s);
	return id;
}

static void value_type(struct pw *w, unsigned field, const char *type,
		       const char *unit)
{
	put_int(w, &w->msg, VALUE_TYPE_TYPE, str(w, type));
	put_int(w, &w->msg, VALUE_TYPE_UNIT, str(w, unit));
	top_msg(w, field);
}

/* The header: what the values mean, when and for how long the run was,
 * and how it went, as comments a reader shows with the profile. */
static void write_header(struct pw *w)
{
	const struct lc_profile *p = w->p;
	const struct lc_prof_quality *q = &p->q;
	const char *what = p->wall ? "wall" : "cpu";
	uint64_t comments[MAX_COMMENTS];
	size_t nc = 0;

	if (p->at) {
		/* calls (the stops' estimate of them: the default) and
		 * stops; the period, stops' mean spacing at the start */
		value_type(w, PROFILE_SAMPLE_TYPE, "stops", "count");
		value_type(w, PROFILE_SAMPLE_TYPE, "calls", "count");
		put_int(w, &w->top, PROFILE_DEFAULT_SAMPLE_TYPE,
			str(w, "calls"));
		value_type(w, PROFILE_PERIOD_TYPE, "calls", "count");
		put_int(w, &w->top, PROFILE_PERIOD, p->alloc_mean);
	} else if (p->alloc) {
		/* Go's heap profile's types, so that pprof's
		 * -sample_index=alloc_space and the others work as they do
		 * on Go's; alloc_space shown when none is asked for */
		value_type(w, PROFILE_SAMPLE_TYPE, "alloc_objects", "count");
		value_type(w, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes");
		value_type(w, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
		value_type(w, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
		put_int(w, &w->top, PROFILE_DEFAULT_SAMPLE_TYPE,
			str(w, "alloc_space"));
		value_type(w, PROFILE_PERIOD_TYPE, "space", "bytes");
		put_int(w, &w->top, PROFILE_PERIOD, p->alloc_mean);
	} else {
		value_type(w, PROFILE_SAMPLE_TYPE, "samples", "count");
		value_type(w, PROFILE_SAMPLE_TYPE, what, "nanoseconds");
		put_int(w, &w->top, PROFILE_DEFAULT_SAMPLE_TYPE, str(w, what));
		value_type(w, PROFILE_PERIOD_TYPE, what, "nanoseconds");
		put_int(w, &w->top, PROFILE_PERIOD, p->period_ns);
	}
	put_int(w, &w->top, PROFILE_TIME_NANOS, p->start_ns);
	put_int(w, &w->top, PROFILE_DURATION_NANOS, p->duration_ns);

	if (p->at)
		comments[nc++] = (uint64_t)strf(w,
			"luacore-sample: pid %d, calls of functions, a stop every %" PRId64 " calls on average at the start; each stop weighs the calls since the last",
			p->pid, p->alloc_mean);
	else if (p->alloc)
		comments[nc++] = (uint64_t)strf(w,
			"luacore-sample: pid %d, allocations, one sampled per %" PRId64 " bytes on average",
			p->pid, p->alloc_mean);
	else
		comments[nc++] = (uint64_t)strf(w,
			"luacore-sample: pid %d, %s, rate %g Hz requested, %.1f Hz achieved",
			p->pid, p->wall ? "wall clock" : "CPU time", q->rate_hz,
			q->achieved_hz);
	if (p->alloc)
		comments[nc++] = (uint64_t)strf(w,
			"%s: %" PRIu64 ", taken %" PRIu64
			", lost %" PRIu64 " (stack read failed %" PRIu64
			", read as it ran %" PRIu64 "), truncated %" PRIu64
			"; decoding took the sampler %.3f s of CPU",
			p->at ? "stops" : "allocations sampled", q->attempted, q->taken, lc_prof_lost(q), q->lost_read,
			q->lost_inconsistent, q->truncated,
			q->sampler_decode_cpu_s);
	else
		comments[nc++] = (uint64_t)strf(w,
			"samples: attempted %" PRIu64 ", taken %" PRIu64
			", lost %" PRIu64 " (stack read failed %" PRIu64
			", thread gone %" PRIu64 ", inconsistent %" PRIu64
			", released at the stop budget %" PRIu64 "), truncated %" PRIu64 ", idle skipped %" PRIu64
			"; ticks %" PRIu64 ", late ticks %" PRIu64,
			q->attempted, q->taken,
			lc_prof_lost(q),
			q->lost_read, q->lost_gone, q->lost_inconsistent, q->lost_held,
			q->truncated, q->idle_skipped, q->ticks, q->late_ticks);
	if (!p->alloc)
		comments[nc++] = (uint64_t)strf(w,
			"target stopped: total %.3f s, median %.1f us, p99 %.1f us, longest hold %.1f us (stop budget %.0f us), its threads held stopped %.3f%% of the time (at most %.3f%%); sampler CPU %.3f s",
			q->stop_total_s, q->stop_median_us, q->stop_p99_us,
			q->stop_max_us, q->stop_budget_us, 100 * q->stop_share, 100 * q->stop_share_max,
			q->sampler_cpu_s);
	if (q->cpu_before_ns >= 0 && !p->alloc)
		comments[nc++] = (uint64_t)strf(w,
			"process CPU time before sampling began: %.3f s (not in the profile)",
			(double)q->cpu_before_ns / 1e9);
	if (p->command) {
		char esc[LC_SINK_LABEL_MAX];

		lc_esc_copy(esc, sizeof(esc), p->command);
		comments[nc++] = (uint64_t)strf(w, "command: %s", esc);
	}
	put_packed(w, &w->top, PROFILE_COMMENT, comments, nc);
	top_done(w);
}

/* Functions carry lc_profile_label's text as their name, so that pprof
 * shows the frames as the folded stacks and the flame graph do; the raw
 * name goes to system_name.  Ids are indexes + 1. */
static void write_functions(struct pw *w)
{
	const struct lc_profile *p = w->p;
	char label[LC_SINK_LABEL_MAX];

	for (size_t i = 0; i < p->nfuncs && !w->err; i++) {
		const struct lc_prof_func *f = &p->funcs[i];

		lc_profile_label(p, (uint32_t)i, label, sizeof(label));
		put_uint(w, &w->msg, FUNCTION_ID, i + 1);
		put_int(w, &w->msg, FUNCTION_NAME, str(w, label));
		put_int(w, &w->msg, FUNCTION_SYSTEM_NAME, str(w, f->name));
		if (f->file)
			put_int(w, &w->msg, FUNCTION_FILENAME,
				str(w, f->file));
		put_int(w, &w->msg, FUNCTION_START_LINE, f->start_line);
		top_msg(w, PROFILE_FUNCTION);
	}
}

/* One mapping over the whole address space, for every location.  It
 * says that functions, files and lines are already there: without it
 * pprof makes up a mapping of its own and tries to symbolize it again,
 * from a binary it cannot know (and Lua frames have no address at all). */
static void write_mapping(struct pw *w)
{
	put_uint(w, &w->msg, MAPPING_ID, 1);
	put_uint(w, &w->msg, MAPPING_MEMORY_START, 0);
	put_uint(w, &w->msg, MAPPING_MEMORY_LIMIT, UINT64_MAX);
	put_uint(w, &w->msg, MAPPING_HAS_FUNCTIONS, 1);
	put_uint(w, &w->msg, MAPPING_HAS_FILENAMES, 1);
	put_uint(w, &w->msg, MAPPING_HAS_LINE_NUMBERS, 1);
	top_msg(w, PROFILE_MAPPING);
}

/* One Line per location: the profile has no inlined frames. */
static void write_locations(struct pw *w)
{
	const struct lc_profile *p = w->p;

	for (size_t i = 0; i < p->nlocs && !w->err; i++) {
		const struct lc_prof_loc *l = &p->locs[i];

		if (l->func >= p->nfuncs) {
			fail(w, EINVAL);
			return;
		}
		put_uint(w, &w->msg, LOCATION_ID, i + 1);
		put_uint(w, &w->msg, LOCATION_MAPPING_ID, 1);
		put_uint(w, &w->msg, LOCATION_ADDRESS, l->addr);
		put_uint(w, &w->sub, LINE_FUNCTION_ID, (uint64_t)l->func + 1);
		put_int(w, &w->sub, LINE_LINE, l->line);
		put_msg(w, &w->msg, LOCATION_LINE, &w->sub);
		top_msg(w, PROFILE_LOCATION);
	}
}

static const char *leaf_name(enum lc_prof_kind k)
{
	switch (k) {
	case LC_PROF_LUA:
		return "lua";
	case LC_PROF_LUA_C:
		return "c";
	case LC_PROF_GC:
		return "gc";
	case LC_PROF_NATIVE:
		return "host";
	case LC_PROF_IDLE:
		return "idle";
	}
	return "unknown";
}

static void label_str(struct pw *w, int64_t key, int64_t val)
{
	put_int(w, &w->sub, LABEL_KEY, key);
	put_int(w, &w->sub, LABEL_STR, val);
	put_msg(w, &w->msg, SAMPLE_LABEL, &w->sub);
}

static void label_num(struct pw *w, int64_t key, int64_t val)
{
	put_int(w, &w->sub, LABEL_KEY, key);
	put_int(w, &w->sub, LABEL_NUM, val);
	put_msg(w, &w->msg, SAMPLE_LABEL, &w->sub);
}

/* Values: [count, nanoseconds]: the CPU time the thread used since its
 * previous sample or, with --wall, the wall-clock time since then.  An
 * allocation profile's: [alloc_objects, alloc_space, inuse_objects,
 * inuse_space], estimates of the whole. */
static void write_samples(struct pw *w)
{
	const struct lc_profile *p = w->p;
	int64_t k_thread = str(w, "thread"), k_tid = str(w, "tid");
	int64_t k_vm = str(w, "vm"), k_co = str(w, "coroutine");
	int64_t k_leaf = str(w, "leaf"), k_vm_addr = str(w, "vm_addr");
	int64_t k_alloc = str(w, "vm_allocator");
	int64_t k_vmstate = str(w, "vmstate");

	for (size_t i = 0; i < p->nsamples && !w->err; i++) {
		const struct lc_prof_sample *s = &p->samples[i];
		const char *tname = "";
		char esc[LC_SINK_LABEL_MAX];
		uint64_t v[4];

		for (size_t k = 0; k < s->nlocs; k++)
			if (s->locs[k] >= p->nlocs) {
				fail(w, EINVAL);
				return;
			}
		if (s->thread_name >= p->nstrings) {
			fail(w, EINVAL);
			return;
		}
		if (s->thread_name)
			tname = p->strings[s->thread_name];

		put_packed_ids(w, &w->msg, SAMPLE_LOCATION_ID, s->locs,
			       s->nlocs);
		if (p->at) {
			v[0] = (uint64_t)s->alloc_objects;
			v[1] = (uint64_t)lc_profile_cpu(s);
			put_packed(w, &w->msg, SAMPLE_VALUE, v, 2);
		} else if (p->alloc) {
			v[0] = (uint64_t)s->alloc_objects;
			v[1] = (uint64_t)lc_profile_cpu(s);
			v[2] = (uint64_t)s->inuse_objects;
			v[3] = (uint64_t)s->inuse_bytes;
			put_packed(w, &w->msg, SAMPLE_VALUE, v, 4);
		} else {
			v[0] = (uint64_t)s->count;
			v[1] = (uint64_t)lc_profile_cpu(s);
			put_packed(w, &w->msg, SAMPLE_VALUE, v, 2);
		}

		/* The thread's name is the target's: escaped, as in the
		 * labels of functions. */
		if (*tname)
			label_str(w, k_thread,
				  strf(w, "%d (%s)", s->tid,
				       (lc_esc_copy(esc, sizeof(esc), tname),
					esc)));
		else
			label_str(w, k_thread, strf(w, "%d", s->tid));
		label_num(w, k_tid, s->tid);
		/* vm: the VM's name where it has one (--vm-name), its
		 * address then in vm_addr; else the address. */
		if (s->vm) {
			const char *nm = lc_profile_vm_name(p, s->vm);
			const char *al = lc_profile_vm_alloc(p, s->vm);

			if (nm) {
				label_str(w, k_vm, strf(w, "%s",
					  (lc_esc_copy(esc, sizeof(esc), nm), esc)));
				label_str(w, k_vm_addr,
					  strf(w, "0x%" PRIx64, s->vm));
			} else {
				label_str(w, k_vm, strf(w, "0x%" PRIx64, s->vm));
			}
			if (al)
				label_str(w, k_alloc, strf(w, "%s",
					  (lc_esc_copy(esc, sizeof(esc), al), esc)));
		}
		if (s->coroutine)
			label_str(w, k_co,
				  strf(w, "0x%" PRIx64, s->coroutine));
		label_str(w, k_leaf, str(w, leaf_name(s->leaf)));
		/* What the VM was doing (LuaJIT's vmstate: lua, trace#N, c,
		 * gc, jit). */
		if (s->vmstate && s->vmstate < p->nstrings)
			label_str(w, k_vmstate, str(w, p->strings[s->vmstate]));
		top_msg(w, PROFILE_SAMPLE);
	}
}

static void write_strings(struct pw *w)
{
	for (size_t i = 0; i < w->nstr && !w->err; i++) {
		const char *s = (const char *)w->chars.data + w->offs[i];

		put_len(w, &w->top, PROFILE_STRING_TABLE, s, strlen(s));
		top_done(w);
	}
}

int lc_profile_write_pprof(const struct lc_profile *p, const char *title,
			   FILE *out)
{
	struct pw *w = calloc(1, sizeof(*w));
	int err, rc;

	if (!w) {
		errno = ENOMEM;
		return -1;
	}
	w->p = p;
	w->out = out;
	/* windowBits 15 + 16: the largest window, with a gzip header and
	 * trailer instead of zlib's. */
	rc = deflateInit2(&w->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16,
			  8, Z_DEFAULT_STRATEGY);
	if (rc == Z_OK)
		w->z_ready = true;
	else
		fail(w, rc == Z_MEM_ERROR ? ENOMEM : EINVAL);

	/* string_table[0] must be "". */
	str(w, "");
	write_header(w);
	write_functions(w);
	write_mapping(w);
	write_locations(w);
	write_samples(w);
	write_strings(w);
	deflate_top(w, Z_FINISH);
	if (!w->err) {
		errno = 0;
		if (fflush(out) != 0 || ferror(out))
			fail(w, errno ? errno : EIO);
	}

	err = w->err;
	if (w->z_ready)
		deflateEnd(&w->z);
	free(w->top.data);
	free(w->msg.data);
	free(w->sub.data);
	free(w->chars.data);
	free(w->offs);
	free(w->slots);
	free(w);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

static const char *const suffixes[] = { ".pb.gz", ".pprof", ".pb", NULL };

const struct lc_sink lc_sink_pprof = {
	.name = "pprof",
	.suffixes = suffixes,
	.write = lc_profile_write_pprof,
	.what = "pprof's profile.proto, gzipped",
};
