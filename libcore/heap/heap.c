/* Census of every VM's heap, the object index, diffs against a
 * baseline (a snapshot file or another core), snapshots. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "heap/heap.h"
#include "report/session.h"

#define SNAP_MAGIC	"LCHEAP03"	/* 03: strings hashed by lanes (vm.c) */
/* Bytes of a core kept read while the heap is walked. */
#define HEAP_BLOCKS	((size_t)17 << 20)

/* ---- small helpers ---- */

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* A bounded list of the biggest: a min-heap on bytes. */
struct topn {
	struct lc_htop *v;
	size_t n, cap;
};

static void top_sift_down(struct topn *t, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct lc_htop x;

		if (l < t->n && t->v[l].bytes < t->v[m].bytes)
			m = l;
		if (r < t->n && t->v[r].bytes < t->v[m].bytes)
			m = r;
		if (m == i)
			return;
		x = t->v[i];
		t->v[i] = t->v[m];
		t->v[m] = x;
		i = m;
	}
}

static void top_add(struct topn *t, const struct lc_htop *e)
{
	if (!t->cap)
		return;
	if (t->n < t->cap) {
		size_t i = t->n++;

		t->v[i] = *e;
		while (i) {
			size_t p = (i - 1) / 2;
			struct lc_htop x;

			if (t->v[p].bytes <= t->v[i].bytes)
				break;
			x = t->v[p];
			t->v[p] = t->v[i];
			t->v[i] = x;
			i = p;
		}
		return;
	}
	if (e->bytes <= t->v[0].bytes)
		return;
	t->v[0] = *e;
	top_sift_down(t, 0);
}

static int cmp_top(const void *a, const void *b)
{
	const struct lc_htop *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Class map: (kind, klass) -> index in classes. */
struct cmap {
	uint64_t *keys;		/* klass * 8 + kind + 1, 0 free */
	uint32_t *idx;
	size_t cap, n;
};

/* A long string that may have duplicates: found by sorting these by
 * hash after the walk (a map with an entry per distinct string costs a
 * cache miss per string). */
struct lstr {
	uint64_t hash, addr;
	uint32_t size, len;	/* clamped to 2^32 - 1 */
};

/* Every long string of the walk, in order: its hash (lc_hobj.klass
 * mixed with its length) in hash[], and its address, length and size
 * in the byte stream b[] as varints of the address's distance from the
 * previous string's (zigzag), of the length, and of size - length
 * (zigzag).  About 13 bytes a string where they lie side by side,
 * against 24 in a struct lstr. */
struct lstrs {
	uint64_t *hash;
	size_t n, hcap;
	uint8_t *b;
	size_t nb, bcap;
	uint64_t prev;		/* the last string's address */
};

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Our own stream, written by put_varint: ten bytes at most. */
static const uint8_t *get_varint(const uint8_t *p, uint64_t *v)
{
	uint64_t x = 0;

	for (int s = 0; s < 70; s += 7) {
		uint8_t c = *p++;

		x |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80))
			break;
	}
	*v = x;
	return p;
}

static void lstrs_free(struct lstrs *l)
{
	lc_huge_free(l->hash, l->hcap * sizeof(*l->hash));
	lc_huge_free(l->b, l->bcap);
	memset(l, 0, sizeof(*l));
}

static int map_grow(uint64_t **keys, uint32_t **idx, size_t *cap, size_t n)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint64_t *nk;
	uint32_t *ni;

	if (n * 2 < *cap)
		return 0;
	nk = calloc(ncap, sizeof(*nk));
	ni = calloc(ncap, sizeof(*ni));
	if (!nk || !ni) {
		free(nk);
		free(ni);
		return -1;
	}
	for (size_t i = 0; i < *cap; i++) {
		size_t j;

		if (!(*keys)[i])
			continue;
		for (j = mix((*keys)[i]) & (ncap - 1); nk[j]; j = (j + 1) & (ncap - 1))
			;
		nk[j] = (*keys)[i];
		ni[j] = (*idx)[i];
	}
	free(*keys);
	free(*idx);
	*keys = nk;
	*idx = ni;
	*cap = ncap;
	return 0;
}

/* The slot of key: *found whether it is there. */
static size_t map_slot(uint64_t *keys, size_t cap, uint64_t key, bool *found)
{
	size_t j;

	for (j = mix(key) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
		if (keys[j] == key) {
			*found = true;
			return j;
		}
	*found = false;
	return j;
}

/* ---- the walk ---- */

struct census {
	struct lc_heap *h;
	struct lc_hvmres *v;
	struct lc_interp *in;
	struct lc_pass *pass;
	bool keep;
	size_t objcap;
	struct topn strings, tables, threads;
	struct cmap cm;
	uint64_t last_key;	/* class_add's last key (0: none) and index */
	uint32_t last_idx;
	size_t ccap;
	struct lstrs ls;
	bool nomem;
};

static bool classed(int kind)
{
	return kind == LC_HK_LFUNC || kind == LC_HK_CFUNC ||
	       kind == LC_HK_TABLE || kind == LC_HK_USERDATA;
}

static int class_add(struct census *c, const struct lc_hobj *o)
{
	struct lc_hvmres *v = c->v;
	uint64_t key = o->klass * 8 + o->kind + 1;
	bool found;
	size_t j;

	/* runs of one class (tables without a metatable) skip the map */
	if (key == c->last_key) {
		v->classes[c->last_idx].count++;
		v->classes[c->last_idx].bytes += o->size;
		return 0;
	}
	if (map_grow(&c->cm.keys, &c->cm.idx, &c->cm.cap, c->cm.n) < 0)
		return -1;
	j = map_slot(c->cm.keys, c->cm.cap, key, &found);
	if (!found) {
		if (v->nclasses == c->ccap) {
			size_t nc = c->ccap ? 2 * c->ccap : 256;
			struct lc_hclass *n = realloc(v->classes, nc * sizeof(*n));

			if (!n)
				return -1;
			v->classes = n;
			c->ccap = nc;
		}
		memset(&v->classes[v->nclasses], 0, sizeof(*v->classes));
		v->classes[v->nclasses].kind = o->kind;
		v->classes[v->nclasses].klass = o->klass;
		c->cm.keys[j] = key;
		c->cm.idx[j] = (uint32_t)v->nclasses++;
		c->cm.n++;
	}
	c->last_key = key;
	c->last_idx = c->cm.idx[j];
	v->classes[c->last_idx].count++;
	v->classes[c->last_idx].bytes += o->size;
	return 0;
}

static int dup_add(struct census *c, const struct lc_hobj *o)
{
	struct lstrs *l = &c->ls;
	uint8_t *p;

	if (l->n == l->hcap) {
		size_t nc = l->hcap ? 2 * l->hcap : 65536;
		uint64_t *n = lc_huge_grow(l->hash, l->hcap * sizeof(*n),
					   nc * sizeof(*n));

		if (!n)
			return -1;
		l->hash = n;
		l->hcap = nc;
	}
	if (l->nb + 30 > l->bcap) {
		size_t nc = l->bcap ? 2 * l->bcap : 1 << 20;
		uint8_t *n = lc_huge_grow(l->b, l->bcap, nc);

		if (!n)
			return -1;
		l->b = n;
		l->bcap = nc;
	}
	/* the family's hash of the bytes (lc_hobj.klass), and the length */
	l->hash[l->n++] = o->klass ^ (o->len * 0x9e3779b97f4a7c15ull);
	p = l->b + l->nb;
	p = put_varint(p, zigzag((int64_t)(o->addr - l->prev)));
	p = put_varint(p, o->len);
	p = put_varint(p, zigzag((int64_t)(o->size - o->len)));
	l->nb = (size_t)(p - l->b);
	l->prev = o->addr;
	return 0;
}

static int cmp_lstr(const void *a, const void *b)
{
	const struct lstr *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Without LC_HW_EXACT, a long string's hash covers its ends only: the
 * strings of each run of one such hash (sorted) get the hash of all
 * their bytes, read now, so that only equal strings stay together.
 * True when a hash changed. */
static bool sketched(struct census *c, struct lstr *ls, size_t n)
{
	bool changed = false;

	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && ls[j].hash == ls[i].hash; j++)
			;
		if (j - i < 2 || ls[i].len <= LC_SKETCH_MIN)
			continue;
		for (size_t k = i; k < j; k++) {
			struct lstr *e = &ls[k];
			struct lc_hobj o = { .addr = e->addr, .len = e->len,
					     .kind = LC_HK_STRING,
					     .flags = LC_HF_LONG };
			size_t got = 0;
			char *b = e->len < UINT32_MAX ?
				  c->in->ops->heap_string(c->pass, &o, e->len, &got) :
				  NULL;

			/* unreadable: its address stands for it (no copy) */
			e->hash = b && got == e->len ?
				  lc_hash_buf(b, got) ^ (e->len * 0x9e3779b97f4a7c15ull) :
				  e->addr | 1;
			free(b);
			changed = true;
		}
	}
	return changed;
}

/* The filter of dups_of: a pair of words (seen once, seen twice) per
 * four strings, two bits of one word per hash (a blocked Bloom
 * filter's): one cache line a string, fetched ahead. */
#define DUP_AHEAD	16

static inline uint64_t *dup_word(uint64_t *f, uint64_t x, int sh)
{
	return f + 2 * (x >> sh);
}

static inline uint64_t dup_bits(uint64_t x)
{
	return 1ull << (x & 63) | 1ull << ((x >> 6) & 63);
}

/* The duplicated long strings: hashes that two or more have.  A filter
 * of what was seen once and what was seen twice leaves only the
 * strings that may share their hash with another (a few in a hundred
 * more than those that do); those alone are unpacked into an array and
 * sorted. */
static int dups_of(struct census *c)
{
	struct lc_hvmres *v = c->v;
	const struct lstrs *l = &c->ls;
	const uint8_t *p = l->b, *end = l->b + l->nb;
	uint64_t *f, addr = 0;
	struct lstr *ls = NULL;
	size_t words = 64, cap = 0, n = 0, lcap = 0;
	int sh, ret = -1;

	if (l->n < 2)
		return 0;
	while (words < l->n / 4 && words < ((size_t)1 << 30))
		words *= 2;
	sh = 64 - __builtin_ctzll(words);
	if (!(f = lc_huge_alloc(2 * words * sizeof(*f))))
		return -1;
	for (size_t i = 0; i < l->n; i++) {
		uint64_t x = mix(l->hash[i]), m = dup_bits(x);
		uint64_t *w = dup_word(f, x, sh);

		if (i + DUP_AHEAD < l->n)
			__builtin_prefetch(dup_word(f, mix(l->hash[i + DUP_AHEAD]), sh), 1);
		if ((w[0] & m) == m)
			w[1] |= m;
		w[0] |= m;
	}
	for (size_t i = 0; i < l->n && p < end; i++) {
		uint64_t x = mix(l->hash[i]), m = dup_bits(x), d, len, extra;

		if (i + DUP_AHEAD < l->n)
			__builtin_prefetch(dup_word(f, mix(l->hash[i + DUP_AHEAD]), sh));
		p = get_varint(p, &d);
		p = get_varint(p, &len);
		p = get_varint(p, &extra);
		addr += (uint64_t)unzigzag(d);
		if ((dup_word(f, x, sh)[1] & m) != m)
			continue;
		if (n == lcap) {
			size_t nc = lcap ? 2 * lcap : 4096;
			struct lstr *nl = lc_huge_grow(ls, lcap * sizeof(*ls),
						       nc * sizeof(*ls));

			if (!nl)
				goto out;
			ls = nl;
			lcap = nc;
		}
		{
			uint64_t size = len + (uint64_t)unzigzag(extra);

			ls[n].hash = l->hash[i];
			ls[n].addr = addr;
			ls[n].len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
			ls[n].size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
			n++;
		}
	}
	lc_huge_free(f, 2 * words * sizeof(*f));
	f = NULL;
	if (n > 1)
		qsort(ls, n, sizeof(*ls), cmp_lstr);
	if (!c->keep && sketched(c, ls, n) && n > 1)
		qsort(ls, n, sizeof(*ls), cmp_lstr);
	for (size_t i = 0, j; i < n; i = j) {
		struct lc_hdup *d;

		for (j = i + 1; j < n && ls[j].hash == ls[i].hash; j++)
			;
		if (j - i < 2)
			continue;
		if (v->ndups == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct lc_hdup *nd = realloc(v->dups, nc * sizeof(*nd));

			if (!nd)
				goto out;
			v->dups = nd;
			cap = nc;
		}
		d = &v->dups[v->ndups++];
		memset(d, 0, sizeof(*d));
		d->hash = ls[i].hash;
		d->len = ls[i].len;
		d->example = ls[i].addr;
		d->copies = j - i;
		for (size_t k = i; k < j; k++)
			d->bytes += ls[k].size;
	}
	ret = 0;
out:
	lc_huge_free(f, 2 * words * sizeof(*f));
	lc_huge_free(ls, lcap * sizeof(*ls));
	return ret;
}

/* o into t when it is among the biggest so far. */
static void top_offer(struct topn *t, const struct lc_hobj *o)
{
	struct lc_htop e;

	if (t->n == t->cap && (!t->cap || o->size <= t->v[0].bytes))
		return;
	memset(&e, 0, sizeof(e));
	e.addr = o->addr;
	e.bytes = o->size;
	e.len = o->len;
	e.hsize = o->hsize;
	e.kind = o->kind;
	e.klass = o->klass;
	top_add(t, &e);
}

static int census_fn(void *arg, const struct lc_hobj *o)
{
	struct census *c = arg;
	struct lc_hvmres *v = c->v;

	if (o->kind >= LC_HK_NKINDS)
		return 0;
	v->count[o->kind]++;
	v->bytes[o->kind] += o->size;
	v->total += o->size;
	switch (o->kind) {
	case LC_HK_STRING:
		if (o->flags & LC_HF_LONG) {
			v->long_count++;
			v->long_bytes += o->size;
			if (dup_add(c, o) < 0)
				goto nomem;
		} else {
			v->short_count++;
			v->short_bytes += o->size;
		}
		top_offer(&c->strings, o);
		break;
	case LC_HK_TABLE:
		top_offer(&c->tables, o);
		break;
	case LC_HK_THREAD:
		v->threads_total++;
		top_offer(&c->threads, o);
		break;
	default:
		break;
	}
	if (classed(o->kind) && class_add(c, o) < 0)
		goto nomem;
	if (c->keep) {
		if (v->nobjs == c->objcap) {
			size_t nc = c->objcap ? 2 * c->objcap : 4096;
			struct lc_hobj *n = realloc(v->objs, nc * sizeof(*n));

			if (!n)
				goto nomem;
			v->objs = n;
			c->objcap = nc;
		}
		v->objs[v->nobjs++] = *o;
	}
	return 0;
nomem:
	c->nomem = true;
	return -1;
}

static int cmp_obj(const void *a, const void *b)
{
	const struct lc_hobj *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_class(const void *a, const void *b)
{
	const struct lc_hclass *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->klass < y->klass ? -1 : x->klass > y->klass;
}

static int cmp_dup(const void *a, const void *b)
{
	const struct lc_hdup *x = a, *y = b;
	uint64_t wx = x->bytes - x->bytes / (x->copies ? x->copies : 1);
	uint64_t wy = y->bytes - y->bytes / (y->copies ? y->copies : 1);

	if (wx != wy)
		return wx > wy ? -1 : 1;
	return x->example < y->example ? -1 : x->example > y->example;
}

long lc_heap_find(const struct lc_hvmres *v, uint64_t addr)
{
	size_t lo = 0, hi = v->nobjs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v->objs[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->nobjs && v->objs[lo].addr == addr ? (long)lo : -1;
}

static char *preview(struct lc_interp *in, struct lc_pass *pass,
		     const struct lc_hobj *o)
{
	size_t len = 0;
	char *s = in->ops->heap_string(pass, o, LC_HEAP_PREVIEW, &len);
	struct lc_strbuf sb = { 0 };

	if (!s)
		return NULL;
	lc_strbuf_append(&sb, "\"", 1);
	lc_esc_append(&sb, s, len, LC_ESC_LUA | LC_ESC_QUOTE, SIZE_MAX);
	lc_strbuf_append(&sb, "\"", 1);
	if (o->len > len)
		lc_strbuf_append(&sb, "...", 3);
	free(s);
	return lc_strbuf_steal(&sb);
}

static struct lc_htop *top_take(struct topn *t, size_t *n)
{
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_top);
	*n = t->n;
	return t->v;
}

/* Census of VM v->g; the index kept when keep. */
static struct lc_error *walk_vm(struct lc_heap *h, struct lc_interp *in,
				struct lc_pass *pass, struct lc_hvmres *v,
				bool keep)
{
	struct census c = { .h = h, .v = v, .in = in, .pass = pass,
			    .keep = keep };
	struct lc_error *err;
	size_t top = h->top;

	c.strings.cap = c.tables.cap = top;
	c.threads.cap = top > 100 ? top : 100;
	c.strings.v = calloc(c.strings.cap, sizeof(struct lc_htop));
	c.tables.v = calloc(c.tables.cap, sizeof(struct lc_htop));
	c.threads.v = calloc(c.threads.cap, sizeof(struct lc_htop));
	if (!c.strings.v || !c.tables.v || !c.threads.v) {
		free(c.strings.v);
		free(c.tables.v);
		free(c.threads.v);
		return &lc_error_nomem;
	}
	double t0 = lc_now_s();

	err = in->ops->heap_walk(pass, v->g, keep ? LC_HW_EXACT : 0, census_fn,
				 &c, &v->info);
	free(c.cm.keys);
	free(c.cm.idx);
	if (!err && !c.nomem && dups_of(&c) < 0)
		c.nomem = true;
	lstrs_free(&c.ls);
	v->walk_seconds = lc_now_s() - t0;
	lc_log(LC_LOG_VERBOSE, "heap of VM 0x%" PRIx64 ": %" PRIu64 " objects walked in %.3f s (%.1f M objects/s)",
	       v->g, v->info.objects, v->walk_seconds,
	       v->walk_seconds > 0 ? (double)v->info.objects / v->walk_seconds / 1e6 : 0.0);
	v->strings = top_take(&c.strings, &v->nstrings);
	v->tables = top_take(&c.tables, &v->ntables);
	v->threads = top_take(&c.threads, &v->nthreads);
	if (err)
		return err;
	if (c.nomem)
		return &lc_error_nomem;
	/* Names, once per class and entry. */
	for (size_t i = 0; i < v->nclasses; i++)
		v->classes[i].name = in->ops->heap_class(pass, v->g,
			v->classes[i].kind, v->classes[i].klass);
	if (v->nclasses)
		qsort(v->classes, v->nclasses, sizeof(*v->classes), cmp_class);
	for (size_t i = 0; i < v->ntables; i++)
		v->tables[i].name = in->ops->heap_class(pass, v->g, LC_HK_TABLE,
							v->tables[i].klass);
	for (size_t i = 0; i < v->nstrings; i++) {
		struct lc_hobj o = { .addr = v->strings[i].addr,
				     .len = v->strings[i].len,
				     .kind = LC_HK_STRING };

		/* the long flag matters to 5.5 only: its long strings keep
		 * a pointer; a length above the short limit says it */
		if (o.len > 40)
			o.flags = LC_HF_LONG;
		v->strings[i].preview = preview(in, pass, &o);
	}
	{
		if (v->ndups)
			qsort(v->dups, v->ndups, sizeof(*v->dups), cmp_dup);
		if (v->ndups > top)
			v->ndups = top;
		for (size_t i = 0; i < v->ndups; i++) {
			struct lc_hobj o = { .addr = v->dups[i].example,
					     .len = v->dups[i].len,
					     .kind = LC_HK_STRING,
					     .flags = LC_HF_LONG };

			v->dups[i].preview = preview(in, pass, &o);
		}
	}
	if (keep && v->nobjs)
		qsort(v->objs, v->nobjs, sizeof(*v->objs), cmp_obj);
	if (v->info.partial)
		h->partial = true;
	return NULL;
}

/* ---- baselines ---- */

struct base_vm {
	uint64_t g;
	struct lc_hobj *objs;	/* sorted by address */
	size_t n;
};

struct baseline {
	struct base_vm *vms;
	size_t n;
};

static void baseline_free(struct baseline *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->vms[i].objs);
	free(b->vms);
	b->vms = NULL;
	b->n = 0;
}

static struct lc_error *load_snapshot(FILE *f, const char *path,
				      struct baseline *b)
{
	char magic[8];
	uint32_t nvms;

	if (fread(magic, 1, 8, f) != 8 || memcmp(magic, SNAP_MAGIC, 8) != 0 ||
	    fread(&nvms, 4, 1, f) != 1 || nvms > 100000)
		return lc_error_create(LC_ERR_FORMAT,
			"%s is no heap snapshot of luacore (luacore-inspect --heap --heap-save)",
			path);
	b->vms = calloc(nvms ? nvms : 1, sizeof(*b->vms));
	if (!b->vms)
		return &lc_error_nomem;
	for (uint32_t i = 0; i < nvms; i++) {
		uint64_t hdr[2];
		struct base_vm *v = &b->vms[b->n];

		if (fread(hdr, 8, 2, f) != 2 || hdr[1] > (1ull << 32))
			return lc_error_create(LC_ERR_FORMAT, "%s is truncated", path);
		v->g = hdr[0];
		v->objs = malloc((hdr[1] ? hdr[1] : 1) * sizeof(*v->objs));
		if (!v->objs)
			return &lc_error_nomem;
		b->n++;
		for (uint64_t k = 0; k < hdr[1]; k++) {
			uint64_t rec[4];

			if (fread(rec, 8, 4, f) != 4)
				return lc_error_create(LC_ERR_FORMAT, "%s is truncated",
						       path);
			memset(&v->objs[k], 0, sizeof(v->objs[k]));
			v->objs[k].addr = rec[0];
			v->objs[k].size = rec[1];
			v->objs[k].klass = rec[2];
			v->objs[k].kind = (uint8_t)rec[3];
			v->objs[k].flags = (uint8_t)(rec[3] >> 8);
		}
		v->n = hdr[1];
		if (v->n)
			qsort(v->objs, v->n, sizeof(*v->objs), cmp_obj);
	}
	return NULL;
}

/* The baseline: a snapshot file, or a core read with the same options. */
static struct lc_error *load_baseline(const struct lc_heap_options *opts,
				      struct baseline *b)
{
	FILE *f = fopen(opts->baseline, "rb");
	char magic[8] = { 0 };
	struct lc_error *err;
	struct lc_target *t;
	struct lc_heap *a;
	struct lc_heap_options o;

	if (!f)
		return lc_error_create(LC_ERR_OS, "cannot open the baseline %s: %s",
				       opts->baseline, strerror(errno));
	if (fread(magic, 1, 8, f) == 8 && memcmp(magic, SNAP_MAGIC, 8) == 0) {
		rewind(f);
		err = load_snapshot(f, opts->baseline, b);
		fclose(f);
		return err;
	}
	if (memcmp(magic, SNAP_MAGIC, 6) == 0) {
		fclose(f);
		return lc_error_create(LC_ERR_FORMAT,
			"%s is a heap snapshot of another version of luacore (format %.2s, this one reads %.2s): take it again",
			opts->baseline, magic + 6, SNAP_MAGIC + 6);
	}
	fclose(f);
	err = lc_target_open_core(opts->baseline, opts->baseline_exe, &t);
	if (err)
		return err;
	memset(&o, 0, sizeof(o));
	o.vm = opts->vm;
	o.top = 1;
	o.snapshot = true;
	err = lc_heap_create(t, &o, &a);
	lc_target_destroy(t);
	if (err)
		return err;
	b->vms = calloc(a->nvms ? a->nvms : 1, sizeof(*b->vms));
	if (!b->vms) {
		lc_heap_destroy(a);
		return &lc_error_nomem;
	}
	for (size_t i = 0; i < a->nvms; i++) {
		b->vms[i].g = a->vms[i].g;
		b->vms[i].objs = a->vms[i].objs;
		b->vms[i].n = a->vms[i].nobjs;
		a->vms[i].objs = NULL;
		a->vms[i].nobjs = 0;
	}
	b->n = a->nvms;
	lc_heap_destroy(a);
	return NULL;
}

static const struct base_vm *base_find(const struct baseline *b, uint64_t g)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->vms[i].g == g)
			return &b->vms[i];
	return b->n == 1 ? &b->vms[0] : NULL;
}

static bool survives(const struct base_vm *a, const struct lc_hobj *o)
{
	size_t lo = 0, hi = a->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->objs[mid].addr < o->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The same address holding an object of another kind or class
	 * is a new object where a freed one was. */
	return lo < a->n && a->objs[lo].addr == o->addr &&
	       a->objs[lo].kind == o->kind && a->objs[lo].klass == o->klass;
}

struct gmap {
	uint64_t *keys;
	uint32_t *idx;
	size_t cap, n, gcap;
};

static int cmp_group(const void *a, const void *b)
{
	const struct lc_hgroup *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->pattern ? x->pattern : "", y->pattern ? y->pattern : "");
}

static void groups_free(struct lc_hgroup *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(g[i].name);
		free(g[i].pattern);
		free(g[i].example);
	}
	free(g);
}

/* Group objects (those flagged in pick, or all) by class and path
 * pattern. */
static struct lc_error *group(struct lc_interp *in, struct lc_pass *pass,
			      struct lc_hvmres *v, const uint8_t *pick,
			      struct lc_hgroup **ret, size_t *nret)
{
	struct gmap m = { 0 };
	struct lc_hgroup *g = NULL;
	size_t n = 0;
	char **cname = NULL;
	uint64_t *ckey = NULL;
	size_t nc = 0;

	for (size_t i = 0; i < v->nobjs; i++) {
		const struct lc_hobj *o = &v->objs[i];
		char *pat, *cls = NULL;
		uint64_t key;
		bool found, weak;
		size_t j, k;

		if (pick && !pick[i])
			continue;
		pat = v->parent && v->parent[i] != -1 ?
			lc_heap_path_of(in, pass, v, i, true, &weak) : NULL;
		/* class name, cached */
		if (classed(o->kind)) {
			for (k = 0; k < nc; k++)
				if (ckey[k] == o->klass * 8 + o->kind)
					break;
			if (k == nc) {
				char **nn = realloc(cname, (nc + 1) * sizeof(*nn));
				uint64_t *nk = realloc(ckey, (nc + 1) * sizeof(*nk));

				if (nn)
					cname = nn;
				if (nk)
					ckey = nk;
				if (!nn || !nk) {
					free(pat);
					goto nomem;
				}
				cname[nc] = in->ops->heap_class(pass, v->g, o->kind,
								o->klass);
				ckey[nc++] = o->klass * 8 + o->kind;
			}
			cls = cname[k];
		}
		key = fnv(pat ? pat : "", pat ? strlen(pat) : 0,
			  fnv(cls ? cls : "", cls ? strlen(cls) : 0,
			      0xcbf29ce484222325ull + o->kind)) | 1;
		if (map_grow(&m.keys, &m.idx, &m.cap, m.n) < 0) {
			free(pat);
			goto nomem;
		}
		j = map_slot(m.keys, m.cap, key, &found);
		if (!found) {
			struct lc_hgroup *ng;

			if (n == m.gcap) {
				m.gcap = m.gcap ? 2 * m.gcap : 64;
				ng = realloc(g, m.gcap * sizeof(*g));
				if (!ng) {
					free(pat);
					goto nomem;
				}
				g = ng;
			}
			memset(&g[n], 0, sizeof(g[n]));
			g[n].kind = o->kind;
			g[n].name = cls ? strdup(cls) : NULL;
			g[n].pattern = pat;
			g[n].example_addr = o->addr;
			g[n].example = v->parent && v->parent[i] != -1 ?
				lc_heap_path_of(in, pass, v, i, false, &weak) : NULL;
			pat = NULL;
			m.keys[j] = key;
			m.idx[j] = (uint32_t)n++;
			m.n++;
		}
		free(pat);
		g[m.idx[j]].count++;
		g[m.idx[j]].bytes += o->size;
	}
	for (size_t k = 0; k < nc; k++)
		free(cname[k]);
	free(cname);
	free(ckey);
	free(m.keys);
	free(m.idx);
	if (g)
		qsort(g, n, sizeof(*g), cmp_group);
	*ret = g;
	*nret = n;
	return NULL;
nomem:
	for (size_t k = 0; k < nc; k++)
		free(cname[k]);
	free(cname);
	free(ckey);
	free(m.keys);
	free(m.idx);
	groups_free(g, n);
	return &lc_error_nomem;
}

/* The class of o among v's, by the map cm of (kind, klass); NULL when
 * its kind has none or v has no such class. */
static struct lc_hclass *class_of(const struct cmap *cm, struct lc_hvmres *v,
				  const struct lc_hobj *o)
{
	bool found;
	size_t j;

	if (!classed(o->kind) || !cm->cap)
		return NULL;
	j = map_slot(cm->keys, cm->cap, o->klass * 8 + o->kind + 1, &found);
	return found ? &v->classes[cm->idx[j]] : NULL;
}

static struct lc_error *diff_vm(struct lc_interp *in, struct lc_pass *pass,
				struct lc_hvmres *v, const struct base_vm *a)
{
	uint8_t *pick = calloc(v->nobjs ? v->nobjs : 1, 1);
	struct lc_error *err = NULL;
	struct cmap cm = { 0 };

	if (!pick)
		return &lc_error_nomem;
	v->diffed = true;
	v->a_objects = a->n;
	for (size_t i = 0; i < a->n; i++)
		v->a_bytes += a->objs[i].size;
	/* the classes by (kind, klass) */
	for (size_t k = 0; k < v->nclasses; k++) {
		uint64_t key = v->classes[k].klass * 8 + v->classes[k].kind + 1;
		bool found;
		size_t j;

		if (map_grow(&cm.keys, &cm.idx, &cm.cap, cm.n) < 0) {
			err = &lc_error_nomem;
			goto out;
		}
		j = map_slot(cm.keys, cm.cap, key, &found);
		cm.keys[j] = key;
		cm.idx[j] = (uint32_t)k;
		cm.n++;
	}
	/* per class in the baseline */
	for (size_t i = 0; i < a->n; i++) {
		const struct lc_hobj *o = &a->objs[i];
		struct lc_hclass *c = class_of(&cm, v, o);

		if (c) {
			c->a_count++;
			c->a_bytes += o->size;
		}
	}
	for (size_t i = 0; i < v->nobjs; i++) {
		const struct lc_hobj *o = &v->objs[i];
		struct lc_hclass *c;

		if (survives(a, o))
			continue;
		pick[i] = 1;
		v->new_objects++;
		v->new_bytes += o->size;
		if ((c = class_of(&cm, v, o))) {
			c->new_count++;
			c->new_bytes += o->size;
		}
	}
	/* freed: in the baseline, not here as the same object */
	for (size_t i = 0; i < a->n; i++) {
		long k = lc_heap_find(v, a->objs[i].addr);

		if (k < 0 || v->objs[k].kind != a->objs[i].kind ||
		    v->objs[k].klass != a->objs[i].klass) {
			v->freed_objects++;
			v->freed_bytes += a->objs[i].size;
		}
	}
	err = group(in, pass, v, pick, &v->groups, &v->ngroups);
out:
	free(cm.keys);
	free(cm.idx);
	free(pick);
	return err;
}

/* ---- the heap ---- */

static void vmres_free(struct lc_hvmres *v)
{
	struct lc_htop *lists[] = { v->strings, v->tables, v->threads,
				    v->retainers };
	size_t ns[] = { v->nstrings, v->ntables, v->nthreads, v->nretainers };

	for (size_t l = 0; l < 4; l++) {
		for (size_t i = 0; i < ns[l]; i++) {
			free(lists[l][i].name);
			free(lists[l][i].preview);
			free(lists[l][i].path);
		}
		free(lists[l]);
	}
	for (size_t i = 0; i < v->ndups; i++)
		free(v->dups[i].preview);
	free(v->dups);
	for (size_t i = 0; i < v->nclasses; i++)
		free(v->classes[i].name);
	free(v->classes);
	for (size_t i = 0; i < v->npaths; i++)
		free(v->paths[i].path);
	free(v->paths);
	groups_free(v->groups, v->ngroups);
	groups_free(v->pgroups, v->npgroups);
	free(v->objs);
	free(v->parent);
	free(v->reach);
	free(v->retained);
	for (size_t i = 0; i < v->nroots; i++)
		free(v->roots[i]);
	free(v->roots);
}

void lc_heap_destroy(struct lc_heap *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nvms; i++)
		vmres_free(&h->vms[i]);
	free(h->vms);
	free(h->note);
	free(h);
}

bool lc_heap_partial(const struct lc_heap *h)
{
	return h->partial;
}

/* The objects that keep the most alive (lc_hvmres.retained), each with
 * its class's name and its path; a root's own tables (the registry, _G,
 * _LOADED) among them. */
static struct lc_error *retainers_of(struct lc_interp *in,
				     struct lc_pass *pass,
				     struct lc_hvmres *v, size_t top)
{
	struct topn t = { .cap = top };

	t.v = calloc(top ? top : 1, sizeof(*t.v));
	if (!t.v)
		return &lc_error_nomem;
	for (size_t i = 0; i < v->nobjs; i++) {
		const struct lc_hobj *o = &v->objs[i];
		struct lc_htop e;

		if (!v->retained[i] || v->reach[i] != 1 ||
		    (t.n == t.cap && v->retained[i] <= t.v[0].bytes))
			continue;
		memset(&e, 0, sizeof(e));
		e.addr = o->addr;
		e.bytes = v->retained[i];	/* the heap's order, by retained */
		e.len = o->size;		/* its own bytes, put back below */
		e.kind = o->kind;
		e.klass = o->klass;
		top_add(&t, &e);
	}
	v->retainers = top_take(&t, &v->nretainers);
	for (size_t i = 0; i < v->nretainers; i++) {
		struct lc_htop *e = &v->retainers[i];
		long k = lc_heap_find(v, e->addr);

		e->retained = e->bytes;
		e->bytes = e->len;
		e->len = 0;
		if (classed(e->kind))
			e->name = in->ops->heap_class(pass, v->g, e->kind, e->klass);
		if (k >= 0)
			e->path = lc_heap_path_of(in, pass, v, (size_t)k, false,
						  &e->weak);
	}
	return NULL;
}

static void paths_of_tops(struct lc_interp *in, struct lc_pass *pass,
			  struct lc_hvmres *v)
{
	struct lc_htop *lists[] = { v->tables, v->strings };
	size_t ns[] = { v->ntables, v->nstrings };

	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < ns[l]; i++) {
			long k = lc_heap_find(v, lists[l][i].addr);

			if (k >= 0)
				lists[l][i].retained = v->retained[k];
			if (k >= 0 && v->parent[k] != -1)
				lists[l][i].path = lc_heap_path_of(in, pass, v,
					(size_t)k, false, &lists[l][i].weak);
		}
}

static struct lc_error *asked_paths(struct lc_interp *in, struct lc_pass *pass,
				    struct lc_hvmres *v,
				    const struct lc_heap_options *o)
{
	v->paths = calloc(o->npath_to ? o->npath_to : 1, sizeof(*v->paths));
	if (!v->paths)
		return &lc_error_nomem;
	if (!v->parent)
		return NULL;
	for (size_t i = 0; i < o->npath_to; i++) {
		struct lc_hpath *p = &v->paths[v->npaths];
		long k = lc_heap_find(v, o->path_to[i]);

		p->addr = o->path_to[i];
		if (k < 0) {
			/* Not this VM's: said once, by the last VM. */
			continue;
		}
		v->npaths++;
		p->found = true;
		p->kind = v->objs[k].kind;
		p->size = v->objs[k].size;
		p->retained = v->retained ? v->retained[k] : 0;
		p->reachable = v->parent[k] != -1;
		if (p->reachable)
			p->path = lc_heap_path_of(in, pass, v, (size_t)k, false,
						  &p->weak);
	}
	return NULL;
}

struct lc_error *lc_heap_create(struct lc_target *t,
				const struct lc_heap_options *opts,
				struct lc_heap **ret)
{
	static const struct lc_heap_options defaults = { 0 };
	struct lc_interp *const *ins;
	const struct lc_error *why;
	struct lc_heap *h;
	struct lc_error *err = NULL;
	struct baseline base = { 0 };
	size_t nin;
	bool keep, paths;

	if (!opts)
		opts = &defaults;
	h = calloc(1, sizeof(*h));
	if (!h)
		return &lc_error_nomem;
	h->opts = *opts;
	h->top = opts->top ? opts->top : 20;
	if (h->top > LC_HEAP_TOP_MAX)
		h->top = LC_HEAP_TOP_MAX;
	paths = opts->paths || opts->npath_to || opts->baseline ||
		opts->pprof_paths;
	keep = paths || opts->snapshot;
	if (opts->baseline && (err = load_baseline(opts, &base))) {
		lc_heap_destroy(h);
		return err;
	}
	lc_target_invalidate(t);
	ins = lc_target_interps(t, &why, &nin);
	if (!nin) {
		baseline_free(&base);
		lc_heap_destroy(h);
		return lc_error_create(lc_error_code(why), "%s",
				       lc_error_message(why));
	}
	for (size_t i = 0; i < nin && !err; i++) {
		struct lc_interp *in = ins[i];
		struct lc_pass *pass;
		uint64_t *gs = NULL;
		size_t ng = 0;

		if (!in->ops->heap_walk) {
			if (!h->note && asprintf(&h->note,
				"%s: luacore does not read this VM's heap (its heap commands read PUC Lua 5.1 to 5.5)",
				in->version ? in->version : in->ops->name) < 0)
				h->note = NULL;
			h->partial = true;
			continue;
		}
		err = in->ops->begin(in, &pass);
		if (err)
			break;
		/* A core is read by blocks (pread) while it is scanned for
		 * VMs and while each VM's objects are walked: its mapping's
		 * pages cost more to fault in than to copy, and count in our
		 * RSS. */
		lc_memory_set_blocks(t->prog->mem, HEAP_BLOCKS);
		err = in->ops->scan(pass, &gs, &ng, NULL, NULL);
		for (size_t k = 0; k < ng && !err; k++) {
			struct lc_hvmres *v, *nv;

			if (opts->vm && gs[k] != opts->vm)
				continue;
			nv = realloc(h->vms, (h->nvms + 1) * sizeof(*nv));
			if (!nv) {
				err = &lc_error_nomem;
				break;
			}
			h->vms = nv;
			v = &h->vms[h->nvms++];
			memset(v, 0, sizeof(*v));
			v->g = gs[k];
			v->version = in->version;
			lc_memory_set_blocks(t->prog->mem, HEAP_BLOCKS);
			err = walk_vm(h, in, pass, v, keep);
			/* paths go from object to object across the heap,
			 * which blocks would read again and again: through
			 * the mapping */
			if (paths)
				lc_memory_set_blocks(t->prog->mem, 0);
			if (err) {
				/* One VM that is no VM: said, the others go on */
				if (lc_error_code(err) == LC_ERR_CORRUPT) {
					snprintf(v->info.note, sizeof(v->info.note), "%s",
						 lc_error_message(err));
					v->info.partial = true;
					h->partial = true;
					lc_error_destroy(err);
					err = NULL;
				}
				continue;
			}
			if (paths && !in->ops->heap_refs) {
				v->no_paths = true;
				h->partial = true;
				lc_hvm_note(&v->info, "no reference paths: this VM family's references are not read");
			} else if (paths) {
				lc_heap_bfs(in, pass, v, opts->strong);
				if (v->info.partial)
					h->partial = true;
				if (opts->paths && v->retained) {
					paths_of_tops(in, pass, v);
					err = retainers_of(in, pass, v, h->top);
				}
				if (!err && opts->npath_to)
					err = asked_paths(in, pass, v, opts);
			}
			if (!err && opts->baseline) {
				const struct base_vm *a = base_find(&base, v->g);

				if (a)
					err = diff_vm(in, pass, v, a);
				else
					v->diffed = false;
			}
			if (!err && opts->pprof_paths)
				err = group(in, pass, v, NULL, &v->pgroups,
					    &v->npgroups);
		}
		free(gs);
		in->ops->end(pass);
	}
	baseline_free(&base);
	lc_memory_set_blocks(t->prog->mem, 0);
	if (err) {
		lc_heap_destroy(h);
		return err;
	}
	if (!h->nvms) {
		if (h->note) {
			err = lc_error_create(LC_ERR_UNSUPPORTED, "%s", h->note);
			lc_heap_destroy(h);
			return err;
		}
		lc_heap_destroy(h);
		if (opts->vm)
			return lc_error_create(LC_ERR_NOT_FOUND,
				"no VM has its global_State at 0x%" PRIx64 " (luacore-inspect lists the VMs)",
				opts->vm);
		return lc_error_create(LC_ERR_NOT_FOUND,
			"no Lua VM found in the target's memory");
	}
	*ret = h;
	return NULL;
}

struct lc_error *lc_heap_save(const struct lc_heap *h, FILE *out)
{
	uint32_t n = (uint32_t)h->nvms;

	if (!h->opts.snapshot && !h->opts.baseline && !h->opts.paths &&
	    !h->opts.npath_to && !h->opts.pprof_paths)
		return lc_error_create(LC_ERR_INVALID,
			"the heap was read without its objects (lc_heap_options.snapshot)");
	fwrite(SNAP_MAGIC, 1, 8, out);
	fwrite(&n, 4, 1, out);
	for (size_t i = 0; i < h->nvms; i++) {
		const struct lc_hvmres *v = &h->vms[i];
		uint64_t hdr[2] = { v->g, v->nobjs };

		fwrite(hdr, 8, 2, out);
		for (size_t k = 0; k < v->nobjs; k++) {
			uint64_t rec[4] = { v->objs[k].addr, v->objs[k].size,
					    v->objs[k].klass,
					    v->objs[k].kind |
					    ((uint64_t)v->objs[k].flags << 8) };

			fwrite(rec, 8, 4, out);
		}
	}
	if (fflush(out) || ferror(out))
		return lc_error_create(LC_ERR_OS, "cannot write the snapshot: %s",
				       strerror(errno));
	return NULL;
}
