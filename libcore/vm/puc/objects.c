/* The heap of a PUC Lua VM: every object with the size its free
 * function frees, and the references out of each (vm/vm.h heap_walk,
 * heap_refs, heap_class, heap_string).
 *
 * Where objects live, per release (lgc.c, lstring.c, lfunc.c):
 *  5.1  rootgc (userdata after the main thread), the string table's
 *       chains, tmudata (a circular list, userdata whose __gc is due),
 *       each thread's open upvalues (L->openupval, off rootgc);
 *  5.2  allgc, finobj, tobefnz, the string table's chains (short
 *       strings), each thread's open upvalues;
 *  5.3  allgc, finobj, tobefnz, fixedgc; upvalues are no GC objects
 *       (reference-counted, lfunc.c): the distinct UpVals the Lua
 *       closures point to are counted as objects of their own;
 *  5.4, 5.5  allgc, finobj, tobefnz, fixedgc (upvalues on allgc).
 * Sizes (what freeobj frees): ltable.c luaH_free, lfunc.c
 * sizeLclosure/sizeCclosure and luaF_freeproto, lstate.c
 * luaE_freethread, lstring.c/lobject.h sizestring, sizelstring,
 * sizeudata; 5.5 lgc.c objsize says the same in one place.
 *
 * Nothing here prints.  Every count and link read is bounded; a list
 * that breaks or cycles marks the walk partial and says where. */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/puc/objects.h"
#include "vm/puc/heap.h"
#include "vm/puc/values.h"

#define ADDR_LIMIT	(1ull << 56)
#define MAX_STRT	(1u << 28)	/* string table slots believed */
#define MAX_NODES_LOG	30		/* MAXHBITS */
#define MAX_ASIZE	(1u << 31)
#define MAX_UPVALS	255		/* MAXUPVAL */
#define MAX_CI_COUNT	1000000		/* 5.2: CallInfos counted */
#define MAX_REFS_SLOTS	2000000		/* stack slots visited per thread */

/* Header tags of GC objects (no collectable bit), per family. */
enum { K_BAD = -1 };

struct hcache {
	/* metatable -> its __mode bits (LC_HF_WEAKK/V) + 1; open
	 * addressing, 0 free */
	uint64_t *mt_key;
	uint8_t *mt_val;
	size_t mt_cap, mt_n;
	/* registry's string keys whose values are tables: metatables
	 * made by luaL_newmetatable (5.1/5.2 have no __name) */
	uint64_t *reg_tab;
	char **reg_name;
	size_t nreg;
	uint64_t reg_vm;	/* the VM the list is of */
	bool reg_done;
};

void lc_puc_heap_cache_free(void *p)
{
	struct hcache *c = p;

	if (!c)
		return;
	free(c->mt_key);
	free(c->mt_val);
	for (size_t i = 0; i < c->nreg; i++)
		free(c->reg_name[i]);
	free(c->reg_tab);
	free(c->reg_name);
	free(c);
}

static struct hcache *cache_of(void **slot)
{
	if (!*slot)
		*slot = calloc(1, sizeof(struct hcache));
	return *slot;
}

/* ---- reading ---- */

static bool ptr_ok(uint64_t p)
{
	return p && !(p & 7) && p < ADDR_LIMIT;
}

/* [addr, addr + len) as bytes: the core's image where it holds them,
 * else a copy in buf (len <= sizeof buf of the caller); NULL if
 * unreadable. */
static const uint8_t *view(struct lc_memory *m, uint64_t addr, size_t len,
			   uint8_t *buf)
{
	return lc_memory_bytes(m, addr, len, buf, true);
}

/* A field of the object at p, little-endian; by size, so that each is
 * one load (a copy of f.size bytes into a wider variable makes the
 * compiler store bytes and load them back, a stall an object). */
static inline uint64_t get(const uint8_t *p, struct lc_field f)
{
	const uint8_t *q = p + f.off;
	uint64_t v8 = 0;
	uint32_t v4;
	uint16_t v2;

	if (f.off < 0)
		return 0;
	switch (f.size) {
	case 1:
		return *q;
	case 2:
		memcpy(&v2, q, 2);
		return v2;
	case 4:
		memcpy(&v4, q, 4);
		return v4;
	case 8:
		memcpy(&v8, q, 8);
		return v8;
	default:
		if (f.size == 0 || f.size > 8)
			return 0;
		memcpy(&v8, q, f.size);
		return v8;
	}
}

static int64_t sget(const uint8_t *p, struct lc_field f)
{
	uint64_t v = get(p, f);

	if (f.size && f.size < 8 && (v >> (f.size * 8 - 1)) & 1)
		v |= ~0ull << (f.size * 8);
	return (int64_t)v;
}

/* The kind of the GC object whose header tag is tt (K_BAD: none); for
 * 5.1 functions, LFUNC (the caller reads isC). */
static int kind_of(int major, unsigned tt, bool *islong)
{
	*islong = false;
	if (major == 501) {
		switch (tt) {
		case 4: return LC_HK_STRING;
		case 5: return LC_HK_TABLE;
		case 6: return LC_HK_LFUNC;
		case 7: return LC_HK_USERDATA;
		case 8: return LC_HK_THREAD;
		case 9: return LC_HK_PROTO;
		case 10: return LC_HK_UPVAL;
		default: return K_BAD;
		}
	}
	switch (tt) {
	case 0x04: return LC_HK_STRING;
	case 0x14: *islong = true; return LC_HK_STRING;
	case 0x05: return LC_HK_TABLE;
	case 0x06: return LC_HK_LFUNC;
	case 0x26: return LC_HK_CFUNC;
	case 0x07: return LC_HK_USERDATA;
	case 0x08: return LC_HK_THREAD;
	case 0x09: return major >= 504 ? LC_HK_UPVAL : LC_HK_PROTO;
	case 0x0a:
		return major >= 504 ? LC_HK_PROTO :
		       major == 502 ? LC_HK_UPVAL : K_BAD;
	default: return K_BAD;
	}
}

/* A TValue's tag names a collectable object: its kind, else K_BAD. */
static int tv_kind(int major, unsigned tag)
{
	bool lng;

	if (major == 501)
		return tag >= 4 && tag <= 8 ? kind_of(501, tag, &lng) : K_BAD;
	if (!(tag & 0x40))
		return K_BAD;
	tag &= 0x3f;
	if ((tag & 0x0f) < 4 || (tag & 0x0f) > 8)
		return K_BAD;
	return kind_of(major, tag, &lng);
}

/* ---- objects seen: a bit per 16 bytes, in 1 MiB chunks made as the
 * walk reaches them (8 KiB each; open addressing by chunk number) ---- */

#define SEEN_SHIFT	20
/* One bit per 16 bytes: every collectable object is 16 bytes or more,
 * so no two start in one 16-byte cell. */
#define SEEN_CELL	4
#define SEEN_WORDS	((1u << SEEN_SHIFT) / (1u << SEEN_CELL) / 64)

#define SEEN_SLAB	((size_t)2 << 20)	/* bitmaps carved from these */

struct seen {
	uint64_t *keys;		/* chunk number + 1, 0 free */
	uint64_t **bits;
	size_t cap, n;
	uint64_t last_key;
	uint64_t *last_bits;
	uint8_t **slabs;	/* lc_huge_alloc'd, SEEN_SLAB each */
	size_t nslabs, slab_used;
};

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->nslabs; i++)
		lc_huge_free(s->slabs[i], SEEN_SLAB);
	free(s->slabs);
	free(s->keys);
	free(s->bits);
}

/* A zeroed bitmap of SEEN_WORDS words, from the current slab. */
static uint64_t *seen_bitmap(struct seen *s)
{
	size_t size = SEEN_WORDS * sizeof(uint64_t);

	if (!s->nslabs || s->slab_used + size > SEEN_SLAB) {
		uint8_t **v = realloc(s->slabs, (s->nslabs + 1) * sizeof(*v));

		if (!v)
			return NULL;
		s->slabs = v;
		if (!(v[s->nslabs] = lc_huge_alloc(SEEN_SLAB)))
			return NULL;
		s->nslabs++;
		s->slab_used = 0;
	}
	s->slab_used += size;
	return (uint64_t *)(void *)(s->slabs[s->nslabs - 1] + s->slab_used - size);
}

/* Mark obj: 1 if it was marked already, 0 if not, -1 out of memory. */
static int seen_mark(struct seen *s, uint64_t obj)
{
	uint64_t key = (obj >> SEEN_SHIFT) + 1, bit = (obj & ((1u << SEEN_SHIFT) - 1)) >> SEEN_CELL;
	uint64_t *b = s->last_key == key ? s->last_bits : NULL;

	if (!b) {
		size_t i;

		if ((s->n + 1) * 2 > s->cap) {
			size_t nc = s->cap ? s->cap * 2 : 256;
			uint64_t *nk = calloc(nc, sizeof(*nk));
			uint64_t **nb = calloc(nc, sizeof(*nb));

			if (!nk || !nb) {
				free(nk);
				free(nb);
				return -1;
			}
			for (size_t k = 0; k < s->cap; k++) {
				if (!s->keys[k])
					continue;
				for (i = (s->keys[k] * 0x9e3779b97f4a7c15ull >> 17) & (nc - 1);
				     nk[i]; i = (i + 1) & (nc - 1))
					;
				nk[i] = s->keys[k];
				nb[i] = s->bits[k];
			}
			free(s->keys);
			free(s->bits);
			s->keys = nk;
			s->bits = nb;
			s->cap = nc;
		}
		for (i = (key * 0x9e3779b97f4a7c15ull >> 17) & (s->cap - 1);
		     s->keys[i] && s->keys[i] != key; i = (i + 1) & (s->cap - 1))
			;
		if (!s->keys[i]) {
			s->bits[i] = seen_bitmap(s);
			if (!s->bits[i])
				return -1;
			s->keys[i] = key;
			s->n++;
		}
		b = s->last_bits = s->bits[i];
		s->last_key = key;
	}
	if (b[bit >> 6] & (1ull << (bit & 63)))
		return 1;
	b[bit >> 6] |= 1ull << (bit & 63);
	return 0;
}

/* ---- sizes ---- */

struct walk {
	struct lc_lua_ctx *ctx;
	const struct lc_layout *l;
	struct lc_memory *m;
	int major;
	lc_hobj_fn *fn;
	void *arg;
	struct lc_hvm *vm;
	size_t max, seen;
	bool stop;
	uint64_t mainthread;
	/* 5.1/5.2: the threads, for their open upvalues; 5.3: the
	 * distinct UpVals of the Lua closures (open addressing) */
	uint64_t *threads;
	size_t nthreads, cthreads;
	uint64_t *uvset;
	size_t uvcap, uvn;
	struct seen seen_map;	/* every object visited, once */
	bool nomem;
	/* RSS: the 2 MiB windows of a core's mapping touched since the
	 * last release (open addressing, 0 free); released by 8, so that
	 * a walk of a heap of any size keeps about 16 MiB of it */
	uintptr_t last_window;
	uintptr_t windows[64];
	size_t nwindows;
	bool exact;		/* LC_HW_EXACT */
	bool blocks;		/* the memory serves a core by blocks (the
				   heap layer turns them on) */
};

#define WINDOW_SHIFT	21
#define RELEASE_WINDOWS	8

static void release_windows(struct walk *w)
{
	for (size_t i = 0; i < LC_ARRAY_SIZE(w->windows); i++) {
		if (!w->windows[i])
			continue;
		lc_memory_release_host(w->m, w->windows[i] << WINDOW_SHIFT,
				       (w->windows[i] + 1) << WINDOW_SHIFT);
		w->windows[i] = 0;
	}
	w->nwindows = 0;
	w->last_window = 0;
}

/* view() for the walk, valid until the next read or view: with blocks
 * on, a block; else the windows of the mapping it touches are counted.
 * buf NULL: a view or nothing. */
static const uint8_t *wview(struct walk *w, uint64_t addr, size_t len,
			    uint8_t *buf)
{
	const uint8_t *p = lc_memory_view(w->m, addr, len);
	uintptr_t win;
	size_t i;

	if (!p)
		return buf && lc_read(w->m, addr, buf, len) == 0 ? buf : NULL;
	if (w->blocks)
		return p;
	win = (uintptr_t)p >> WINDOW_SHIFT;
	if (win == w->last_window)
		return p;
	w->last_window = win;
	for (i = (size_t)((win * 0x9e3779b97f4a7c15ull) >> 32) %
		 LC_ARRAY_SIZE(w->windows);;
	     i = (i + 1) % LC_ARRAY_SIZE(w->windows)) {
		if (w->windows[i] == win)
			return p;
		if (!w->windows[i])
			break;
	}
	w->windows[i] = win;
	if (++w->nwindows >= RELEASE_WINDOWS)
		release_windows(w);
	return p;
}

/* 5.4 ltable.c luaH_realasize: alimit is the size unless BITRAS (bit 7
 * of flags) is set and it is no power of 2: then the next power of 2. */
static uint64_t real_asize(const struct lc_layout *l, uint64_t asz,
			   uint64_t flags)
{
	if (l->major == 504 && (flags & 0x80) && (asz & (asz - 1))) {
		for (int sh = 1; sh < 64; sh <<= 1)
			asz |= asz >> sh;
		asz++;
	}
	return asz;
}

/* The table's sizes: *asize array slots, *hsize hash nodes (0: the
 * shared dummy node), *bytes what luaH_free frees.  -1 if implausible. */
static int table_sizes(const struct lc_layout *l, const uint8_t *p,
		       uint64_t *asize, uint32_t *hsize, uint64_t *bytes)
{
	uint64_t lsz = get(p, l->tab.lsizenode);
	uint64_t asz = get(p, l->tab.sizearray);
	uint64_t node = get(p, l->tab.node);
	uint64_t flags = LC_HAS(l->tab.flags) ? get(p, l->tab.flags) : 0;
	bool dummy;

	if (l->major == 501 || l->major == 502 || l->major == 503)
		asz = (uint64_t)(int64_t)(int32_t)asz;	/* int sizearray */
	asz = real_asize(l, asz, flags);
	if (lsz > MAX_NODES_LOG || asz > MAX_ASIZE)
		return -1;
	if (l->major >= 505)
		dummy = flags & 0x40;			/* BITDUMMY */
	else if (l->major >= 503)
		dummy = get(p, l->tabx.lastfree) == 0;	/* isdummy */
	else
		/* 5.1/5.2: node == &dummynode_, a static of the module,
		 * where setnodevector leaves lastfree too */
		dummy = lsz == 0 &&
			((LC_HAS(l->tabx.lastfree) &&
			  get(p, l->tabx.lastfree) == node) ||
			 (node >= l->module_start && node < l->module_end));
	*asize = asz;
	*hsize = dummy ? 0 : (uint32_t)1 << lsz;
	*bytes = l->sz_table + (uint64_t)*hsize * l->sz_node;
	if (l->major >= 505) {
		/* ltable.c concretesize, and the Limbox before the nodes of
		 * parts with lastfree (lsizenode >= LIMFORLAST, 3) */
		if (asz)
			*bytes += asz * (8 + 1) + 4;
		if (!dummy && lsz >= 3)
			*bytes += 8;
	} else {
		*bytes += asz * l->sz_tvalue;
	}
	return 0;
}

static int uvset_add(struct walk *w, uint64_t uv)
{
	size_t i;

	if (w->uvn * 2 >= w->uvcap) {
		size_t ncap = w->uvcap ? w->uvcap * 2 : 1024;
		uint64_t *n = calloc(ncap, sizeof(*n));

		if (!n) {
			w->nomem = true;
			return -1;
		}
		for (size_t k = 0; k < w->uvcap; k++) {
			uint64_t x = w->uvset[k];

			if (!x)
				continue;
			for (i = (x * 0x9e3779b97f4a7c15ull >> 20) & (ncap - 1);
			     n[i]; i = (i + 1) & (ncap - 1))
				;
			n[i] = x;
		}
		free(w->uvset);
		w->uvset = n;
		w->uvcap = ncap;
	}
	for (i = (uv * 0x9e3779b97f4a7c15ull >> 20) & (w->uvcap - 1);
	     w->uvset[i]; i = (i + 1) & (w->uvcap - 1))
		if (w->uvset[i] == uv)
			return 0;
	w->uvset[i] = uv;
	w->uvn++;
	return 1;
}

/* The CallInfos of a 5.2 thread beyond base_ci: its ci list. */
static uint64_t count_ci52(struct walk *w, uint64_t L)
{
	uint64_t ci = L + (uint64_t)w->l->L.base_ci.off, n = 0;

	while (n < MAX_CI_COUNT &&
	       lc_read_u64(w->m, ci + (uint64_t)w->l->ci.next.off, &ci) == 0 &&
	       ptr_ok(ci))
		n++;
	return n;
}

/* Bytes the walk views of every object at once (pre), when they are
 * there: enough for the headers of all kinds, and a short string. */
#define PRE_VIEW	256

/* [obj, obj + len) from pre when it holds them, else a view. */
static const uint8_t *dview(struct walk *w, uint64_t obj, const uint8_t *pre,
			    size_t len, uint8_t *buf)
{
	return pre && len <= PRE_VIEW ? pre : wview(w, obj, len, buf);
}

/* Fill o's size and class from its bytes (pre: PRE_VIEW of them, or
 * NULL); -1 when they are not an object of that kind. */
static int describe(struct walk *w, uint64_t obj, int kind, bool islong,
		    const uint8_t *pre, struct lc_hobj *o)
{
	const struct lc_layout *l = w->l;
	uint8_t buf[512];
	const uint8_t *p;

	o->addr = obj;
	o->kind = (uint8_t)kind;
	o->flags = islong ? LC_HF_LONG : 0;
	o->klass = 0;
	o->len = 0;
	o->hsize = 0;
	switch (kind) {
	case LC_HK_STRING: {
		uint64_t len, at;
		int64_t k = 0;

		if (!(p = dview(w, obj, pre, l->ts_contents, buf)))
			return -1;
		if (l->major <= 502)
			len = get(p, l->ts.len);
		else if (islong)
			len = get(p, l->ts.lnglen);
		else
			len = get(p, l->ts.shrlen);
		if (l->major >= 505 && islong)
			k = sget(p, l->ts.shrlen);
		/* p is not used below: the reads that follow may replace
		 * the block it points into */
		if (len >= (1ull << 40))
			return -1;
		o->len = len;
		o->size = l->ts_contents + len + 1;
		if (!islong && !w->exact)
			/* interned: no two alike, nothing to hash */
			o->klass = 0;
		else if (lc_lua_string_bytes(w->ctx, obj, islong, &at) < 0)
			o->klass = obj | 1;
		else if (pre && !(islong && l->ts_lngptr) &&
			 l->ts_contents + len <= PRE_VIEW)
			/* the whole string in the object's view */
			o->klass = lc_hash_buf(pre + l->ts_contents, (size_t)len);
		else if (pre && !(islong && l->ts_lngptr) && !w->exact &&
			 len > LC_SKETCH_MIN &&
			 l->ts_contents + LC_SKETCH_MIN / 2 <= PRE_VIEW) {
			/* its head in the object's view (copied: the
			 * tail's view may replace it) */
			uint8_t head[LC_SKETCH_MIN / 2], tb[LC_SKETCH_MIN / 2];
			const uint8_t *tail;

			memcpy(head, pre + l->ts_contents, sizeof(head));
			tail = wview(w, at + len - sizeof(tb), sizeof(tb), tb);
			o->klass = tail ? lc_hash_ends(head, tail, len) : obj | 1;
		} else
			o->klass = w->exact ? lc_hash_bytes(w->m, at, len, obj) :
					      lc_hash_sketch(w->m, at, len, obj);
		if (l->major >= 505 && islong) {
			/* lstring.c luaS_sizelngstr by shrlen's kind */
			if (k == -1 && LC_HAS(l->tsx.falloc))
				o->size = (uint64_t)l->tsx.falloc.off + len + 1;
			else if (k == -2 && LC_HAS(l->tsx.falloc))
				o->size = (uint64_t)l->tsx.falloc.off;
			else
				o->size = l->sz_tstring;
		}
		return 0;
	}
	case LC_HK_TABLE: {
		uint64_t a, bytes;
		uint32_t h;

		if (!(p = dview(w, obj, pre, l->sz_table, buf)) ||
		    table_sizes(l, p, &a, &h, &bytes) < 0)
			return -1;
		o->len = a;
		o->hsize = h;
		o->size = bytes;
		o->klass = get(p, l->tab.metatable);
		return 0;
	}
	case LC_HK_LFUNC:
	case LC_HK_CFUNC: {
		uint64_t n;
		size_t want = (size_t)(LC_HAS(l->clx.upvalue) ?
				       l->clx.upvalue.off : 0) + 8;

		if (want < (size_t)l->clx.upvals.off + 8)
			want = (size_t)l->clx.upvals.off + 8;
		if (want < (size_t)l->cl.p.off + 8)
			want = (size_t)l->cl.p.off + 8;
		if (want < (size_t)l->cl.f.off + 8)
			want = (size_t)l->cl.f.off + 8;
		if (!(p = dview(w, obj, pre, want, buf)))
			return -1;
		if (l->major == 501 && get(p, l->cl.isC))
			kind = o->kind = LC_HK_CFUNC;
		n = get(p, l->clx.nupvalues);
		if (n > MAX_UPVALS)
			return -1;
		o->len = n;
		if (kind == LC_HK_LFUNC) {
			o->size = (uint64_t)l->clx.upvals.off + 8 * n;
			o->klass = get(p, l->cl.p);
			if (l->major == 503 && n) {
				/* 5.3: the UpVals, each once */
				uint8_t ub[MAX_UPVALS * 8];
				const uint8_t *u = wview(w, obj + (uint64_t)l->clx.upvals.off,
							8 * n, ub);

				for (uint64_t i = 0; u && i < n; i++) {
					uint64_t uv;

					memcpy(&uv, u + 8 * i, 8);
					if (ptr_ok(uv))
						uvset_add(w, uv);
				}
			}
		} else {
			o->size = (uint64_t)l->clx.upvalue.off + l->sz_tvalue * n;
			o->klass = get(p, l->cl.f);
		}
		return 0;
	}
	case LC_HK_USERDATA: {
		uint64_t len, nuv = 0;

		if (!(p = dview(w, obj, pre, l->sz_udata ? l->sz_udata : 48, buf)))
			return -1;
		len = get(p, l->ud.len);
		if (len >= (1ull << 44))
			return -1;
		o->len = len;
		o->klass = get(p, l->ud.metatable);
		if (l->major <= 503) {
			o->size = l->sz_udata + len;
		} else {
			nuv = get(p, l->udx.nuvalue);
			o->size = nuv ? l->sz_udata + nuv * l->sz_uvalue + len :
					l->sz_udata0 + len;
		}
		return 0;
	}
	case LC_HK_THREAD: {
		uint64_t stack, last, slots, nci;

		if (!(p = dview(w, obj, pre, l->sz_lstate, buf)))
			return -1;
		stack = get(p, l->L.stack);
		if (LC_HAS(l->L.stacksize)) {
			slots = (uint64_t)(int64_t)(int32_t)get(p, l->L.stacksize);
		} else {
			/* 5.4+: stack_last - stack, and EXTRA_STACK (5)
			 * slots beyond; 5.4.5+ keep them as pointers too
			 * (StkIdRel's p). */
			last = get(p, l->L.stack_last);
			slots = last >= stack && stack ?
				(last - stack) / l->sz_stack_slot + 5 : 0;
		}
		if (!stack)
			slots = 0;
		if (slots > (1ull << 32))
			return -1;
		if (l->major == 501)
			nci = (uint64_t)(int64_t)(int32_t)get(p, l->L.size_ci);
		else if (LC_HAS(l->Lx.nci))
			nci = get(p, l->Lx.nci);
		else
			nci = count_ci52(w, obj);
		if (nci > (1ull << 32))
			return -1;
		o->len = slots;
		o->size = slots * l->sz_stack_slot + nci * l->sz_callinfo;
		if (obj == w->mainthread) {
			o->flags |= LC_HF_MAIN;
			/* the main thread's lua_State is the VM's
			 * allocation (struct LG, or 5.5's global_State) */
		} else {
			o->size += l->sz_lx;
		}
		return 0;
	}
	case LC_HK_PROTO: {
		uint64_t sz;
		int64_t n[8];
		struct lc_field f[8] = {
			l->p.sizecode, l->p.sizep, l->p.sizek, l->p.sizelineinfo,
			l->p.sizeabslineinfo, l->p.sizelocvars, l->p.sizeupvalues,
			l->p.flag,
		};
		uint64_t each[7] = {
			4, 8, l->sz_tvalue, l->major >= 504 ? 1 : 4,
			l->sz_abslineinfo, l->sz_locvar,
			l->major == 501 ? 8 : l->sz_upvaldesc,
		};

		if (!(p = dview(w, obj, pre, l->sz_proto, buf)))
			return -1;
		sz = l->sz_proto;
		for (int i = 0; i < 8; i++)
			n[i] = LC_HAS(f[i]) ? sget(p, f[i]) : 0;
		for (int i = 0; i < 7; i++) {
			if (n[i] < 0 || n[i] > (1 << 28))
				return -1;
			/* 5.5 PF_FIXED: code and line info not the VM's */
			if (l->major >= 505 && (n[7] & 4) &&
			    (i == 0 || i == 3 || i == 4))
				continue;
			sz += (uint64_t)n[i] * each[i];
		}
		o->size = sz;
		o->len = (uint64_t)n[0];
		return 0;
	}
	case LC_HK_UPVAL:
		o->size = l->sz_upval;
		return 0;
	}
	return -1;
}

static int emit(struct walk *w, const struct lc_hobj *o)
{
	if (w->fn(w->arg, o) < 0) {
		w->stop = true;
		return -1;
	}
	return 0;
}

static int push_thread(struct walk *w, uint64_t L)
{
	if (w->nthreads == w->cthreads) {
		size_t nc = w->cthreads ? 2 * w->cthreads : 64;
		uint64_t *n = realloc(w->threads, nc * sizeof(*n));

		if (!n) {
			w->nomem = true;
			return -1;
		}
		w->threads = n;
		w->cthreads = nc;
	}
	w->threads[w->nthreads++] = L;
	return 0;
}

/* One object reached by a list: described and handed on. */
static int visit(struct walk *w, uint64_t obj, uint8_t tt, unsigned flags,
		 const char *list, size_t here, const uint8_t *pre)
{
	struct lc_hobj o;
	bool islong;
	int kind = kind_of(w->major, tt, &islong);

	if (kind == K_BAD) {
		lc_hvm_note(w->vm, "GC list '%s' broken at object %zu (0x%" PRIx64 ": tag 0x%x is no object type)",
		     list, here, obj, tt);
		return -1;
	}
	if (describe(w, obj, kind, islong, pre, &o) < 0) {
		lc_hvm_note(w->vm, "object 0x%" PRIx64 " on '%s' (a %s) does not read as one",
		     obj, list, lc_hkind_name(kind));
		return -1;
	}
	o.flags |= (uint8_t)flags;
	if (o.kind == LC_HK_THREAD && w->major <= 502 && push_thread(w, obj) < 0)
		return -1;
	w->vm->objects++;
	return emit(w, &o);
}

/* Walk one list by its 'next' links from first (stop: where a circular
 * list ends), bounded, with Brent's cycle check. */
static void walk_from(struct walk *w, uint64_t first, uint64_t stop,
		      unsigned flags, const char *list)
{
	const struct lc_layout *l = w->l;
	uint64_t obj = first, saved = first;
	size_t power = 1, lam = 0, here = 0;
	uint32_t hdr = (uint32_t)(l->L.tt.off + 1);

	if (hdr < (uint32_t)l->Lx.next.off + 8)
		hdr = (uint32_t)l->Lx.next.off + 8;
	while (obj && obj != stop && !w->stop) {
		uint8_t buf[16];
		const uint8_t *p, *pre = NULL;
		uint64_t next;

		if (w->seen >= w->max) {
			lc_hvm_note(w->vm, "stopped after %zu objects (in '%s')", w->seen,
			     list);
			w->stop = true;
			return;
		}
		/* the object's first PRE_VIEW bytes where they are there,
		 * for describe() too; else its header */
		if (!ptr_ok(obj))
			p = NULL;
		else if (!(p = pre = wview(w, obj, PRE_VIEW, NULL)))
			p = wview(w, obj, hdr, buf);
		if (!p) {
			lc_hvm_note(w->vm, "GC list '%s' broken at object %zu (0x%" PRIx64 " unreadable)",
			     list, here, obj);
			return;
		}
		memcpy(&next, p + l->Lx.next.off, 8);
		if (p != buf) {
			/* Objects made one after the other lie side by
			 * side, and lists run newest first: ask for the
			 * lines a little further in the list's direction
			 * ahead of time (a prefetch never faults). */
			int64_t d = (int64_t)(next - obj);

			if (d < 0 && d > -4096)
				for (int q = 0; q < 4; q++)
					__builtin_prefetch(p - 2048 - 64 * q);
			else if (d > 0 && d < 4096)
				for (int q = 0; q < 4; q++)
					__builtin_prefetch(p + 2048 + 64 * q);
		}
		switch (seen_mark(&w->seen_map, obj)) {
		case 1:
			/* Lists are disjoint: a link leads into another list
			 * or back into this one. */
			lc_hvm_note(w->vm, "GC list '%s' reaches object 0x%" PRIx64 " a second time (at position %zu): a link is damaged; the objects after it are not counted again",
			     list, obj, here);
			return;
		case -1:
			w->nomem = true;
			w->stop = true;
			return;
		}
		w->seen++;
		if (visit(w, obj, p[l->L.tt.off], flags, list, here, pre) < 0 &&
		    (w->stop || w->nomem))
			return;
		here++;
		obj = next;
		if (obj && obj == saved) {
			lc_hvm_note(w->vm, "GC list '%s' is cyclic (back at 0x%" PRIx64 " after %zu objects)",
			     list, obj, here);
			return;
		}
		if (++lam == power) {
			saved = obj;
			power *= 2;
			lam = 0;
		}
	}
}

static void walk_head(struct walk *w, uint64_t g, struct lc_field head,
		      unsigned flags, const char *list)
{
	uint64_t first;

	if (!LC_HAS(head))
		return;
	if (lc_read_u64(w->m, g + (uint64_t)head.off, &first) < 0) {
		lc_hvm_note(w->vm, "the head of GC list '%s' is unreadable", list);
		return;
	}
	walk_from(w, first, 0, flags, list);
}

/* 5.1/5.2: the strings, in the string table's chains. */
static void walk_strt(struct walk *w, uint64_t g)
{
	const struct lc_layout *l = w->l;
	uint64_t hash, size;

	if (!LC_HAS(l->Gh.strt_hash) ||
	    lc_read_u64(w->m, g + (uint64_t)l->Gh.strt_hash.off, &hash) < 0 ||
	    lc_read_uint(w->m, g + (uint64_t)l->Gh.strt_size.off,
			 l->Gh.strt_size.size, &size) < 0) {
		lc_hvm_note(w->vm, "the string table is unreadable");
		return;
	}
	size &= 0xffffffffu;
	if (size > MAX_STRT) {
		lc_hvm_note(w->vm, "the string table claims %" PRIu64 " slots", size);
		return;
	}
	for (uint64_t i = 0; i < size && !w->stop; i++) {
		uint64_t first;

		if (lc_read_u64(w->m, hash + 8 * i, &first) < 0) {
			lc_hvm_note(w->vm, "the string table's slot %" PRIu64 " is unreadable", i);
			return;
		}
		if (first)
			walk_from(w, first, 0, 0, "strt");
	}
}

/* 5.1/5.2: each thread's open upvalues (its openupval list). */
static void walk_open(struct walk *w)
{
	const struct lc_layout *l = w->l;

	for (size_t i = 0; i < w->nthreads && !w->stop; i++) {
		uint64_t uv;

		if (lc_read_u64(w->m, w->threads[i] + (uint64_t)l->L.openupval.off,
				&uv) < 0)
			continue;
		walk_from(w, uv, 0, LC_HF_OPEN, "openupval");
	}
}

/* 5.3: the UpVals the closures hold, as objects of their own. */
static void emit_upvals53(struct walk *w)
{
	for (size_t i = 0; i < w->uvcap && !w->stop; i++) {
		struct lc_hobj o = { .addr = w->uvset[i], .size = w->l->sz_upval,
				     .kind = LC_HK_UPVAL };

		if (!o.addr)
			continue;
		w->vm->objects++;
		emit(w, &o);
	}
}

static uint64_t vm_memory(struct walk *w, uint64_t g)
{
	const struct lc_layout *l = w->l;
	uint64_t tb = 0;
	int64_t debt = 0;

	if (l->major >= 505) {
		lc_lua_read_field(w->ctx, g, l->Gx.GCtotalbytes, &tb);
		lc_lua_read_sfield(w->ctx, g, l->Gx.GCdebt, &debt);
		return tb - (uint64_t)debt;
	}
	lc_lua_read_field(w->ctx, g, l->Gx.totalbytes, &tb);
	if (LC_HAS(l->Gx.GCdebt))
		lc_lua_read_sfield(w->ctx, g, l->Gx.GCdebt, &debt);
	return tb + (uint64_t)debt;
}

struct lc_error *lc_puc_heap_walk(struct lc_lua_ctx *ctx, uint64_t g,
				  size_t max, unsigned flags, lc_hobj_fn *fn,
				  void *arg, struct lc_hvm *ret)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct walk w = { .ctx = ctx, .l = l, .m = lc_lua_mem(ctx),
			  .major = l->major, .fn = fn, .arg = arg, .vm = ret,
			  .max = max, .exact = flags & LC_HW_EXACT };
	struct lc_lstate st;
	uint64_t strt = 0;

	memset(ret, 0, sizeof(*ret));
	if (!l->sz_table || !l->sz_proto || !l->sz_node || !l->sz_lstate ||
	    !LC_HAS(l->clx.nupvalues) || !LC_HAS(l->Lx.next))
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"the layout of Lua %s lacks what a heap walk reads (the sizes of Table, Proto, lua_State, closures): a layout from DWARF has them",
			l->version);
	if (lc_lua_mainthread(ctx, g, &w.mainthread) < 0 ||
	    lc_lua_state_read(ctx, w.mainthread, &st) < 0 || st.g != g)
		return lc_error_create(LC_ERR_CORRUPT,
			"0x%" PRIx64 " is no global_State: its main thread does not read as one",
			g);
	ret->memory = vm_memory(&w, g);
	w.blocks = lc_memory_blocks_on(w.m);
	if (LC_HAS(l->Gh.strt_size))
		lc_read_uint(w.m, g + (uint64_t)l->Gh.strt_size.off,
			     l->Gh.strt_size.size, &strt);
	strt &= 0xffffffffu;
	ret->own = l->sz_global + 8 * strt;
	if (l->major == 501) {
		walk_head(&w, g, l->Gx.rootgc, 0, "rootgc");
		walk_strt(&w, g);
		/* tmudata points at the last of a circular list */
		if (LC_HAS(l->Gh.tmudata) && !w.stop) {
			uint64_t last, first;

			if (lc_read_u64(w.m, g + (uint64_t)l->Gh.tmudata.off, &last) == 0 &&
			    last && lc_read_u64(w.m, last + (uint64_t)l->Lx.next.off,
						&first) == 0) {
				walk_from(&w, first, last, LC_HF_TOBEFNZ, "tmudata");
				if (!w.stop)
					walk_from(&w, last, first, LC_HF_TOBEFNZ, "tmudata");
			}
		}
		walk_open(&w);
	} else {
		walk_head(&w, g, l->Gx.allgc, 0, "allgc");
		walk_head(&w, g, l->Gx.finobj, LC_HF_FINOBJ, "finobj");
		walk_head(&w, g, l->Gx.tobefnz, LC_HF_TOBEFNZ, "tobefnz");
		walk_head(&w, g, l->Gx.fixedgc, LC_HF_FIXED, "fixedgc");
		if (l->major == 502) {
			walk_strt(&w, g);
			walk_open(&w);
		}
		if (l->major == 503)
			emit_upvals53(&w);
		/* 5.2/5.3 keep the main thread off allgc (lstate.c) */
		if (l->major <= 503 && !w.stop) {
			uint8_t tt;

			if (lc_read_u8(w.m, w.mainthread + (uint64_t)l->L.tt.off, &tt) == 0)
				visit(&w, w.mainthread, tt, 0, "mainthread", 0, NULL);
		}
	}
	free(w.threads);
	free(w.uvset);
	seen_free(&w.seen_map);
	release_windows(&w);
	if (w.nomem)
		return &lc_error_nomem;
	return NULL;
}

/* ---- references ---- */

struct refs {
	struct lc_lua_ctx *ctx;
	const struct lc_layout *l;
	struct lc_memory *m;
	struct hcache *c;
	uint64_t g;
	lc_href_fn *fn;
	void *arg;
	bool stop;
	bool bad;
};

static int ref(struct refs *r, uint64_t to, int kind, enum lc_hedge edge,
	       bool weak, int64_t index, const char *name, const char *where)
{
	struct lc_href h = { .to = to, .kind = (uint8_t)kind,
			     .edge = (uint8_t)edge, .weak = weak,
			     .index = index, .name = name, .where = where };

	if (r->stop)
		return -1;
	if (r->fn(r->arg, &h) < 0) {
		r->stop = true;
		return -1;
	}
	return 0;
}

/* A TValue at addr (value word, tag) as stored. */
static int tv_at(struct refs *r, uint64_t addr, uint64_t *val, unsigned *tag)
{
	uint8_t buf[32];
	const uint8_t *p = view(r->m, addr, r->l->sz_tvalue, buf);

	if (!p)
		return -1;
	memcpy(val, p + (r->l->tv.value.off > 0 ? r->l->tv.value.off : 0), 8);
	*tag = (unsigned)get(p, r->l->tv.tt);
	return 0;
}

/* The bytes of the string ts into buf (at most size - 1, NUL-ended);
 * the stored length, or -1. */
static int64_t str_bytes(struct refs *r, uint64_t ts, char *buf, size_t size)
{
	const struct lc_layout *l = r->l;
	uint8_t hb[64];
	const uint8_t *p = view(r->m, ts, l->ts_contents, hb);
	uint64_t len, at;
	unsigned tt;
	bool islong;

	if (!p)
		return -1;
	tt = p[l->L.tt.off];
	if (kind_of(l->major, tt, &islong) != LC_HK_STRING)
		return -1;
	if (l->major <= 502)
		len = get(p, l->ts.len);
	else
		len = islong ? get(p, l->ts.lnglen) : get(p, l->ts.shrlen);
	if (lc_lua_string_bytes(r->ctx, ts, islong, &at) < 0)
		return -1;
	{
		size_t n = len < size - 1 ? (size_t)len : size - 1;

		if (n && lc_read(r->m, at, buf, n) < 0)
			return -1;
		buf[n] = 0;
	}
	return (int64_t)len;
}

/* Is the value (val, tag) a string equal to s? */
static bool str_is(struct refs *r, uint64_t val, unsigned tag, const char *s)
{
	char buf[64];
	int64_t n;

	if (tv_kind(r->l->major, tag) != LC_HK_STRING)
		return false;
	n = str_bytes(r, val, buf, sizeof(buf));
	return n == (int64_t)strlen(s) && strcmp(buf, s) == 0;
}

/* The value of table t's field name (a string key), by its hash part:
 * 0 when found. */
struct find {
	struct refs *r;
	const char *name;
	struct lc_tvalue v;
	bool found;
};

static bool find_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
		    const struct lc_tvalue *v, void *arg)
{
	struct find *f = arg;

	(void)ctx;
	if (str_is(f->r, k->value, k->tag, f->name)) {
		f->v = *v;
		f->found = true;
		return false;
	}
	return true;
}

static int field_of(struct refs *r, uint64_t t, const char *name,
		    struct lc_tvalue *ret)
{
	struct find f = { .r = r, .name = name };
	size_t budget = 1u << 16;

	if (!t)
		return -1;
	lc_lua_table_scan(r->ctx, t, find_fn, &f, &budget);
	if (!f.found)
		return -1;
	*ret = f.v;
	return 0;
}

/* A table's weak mode from its metatable's __mode: LC_HF_WEAKK/V. */
static unsigned weak_mode(struct refs *r, uint64_t mt)
{
	struct hcache *c = r->c;
	struct lc_tvalue v;
	unsigned mode = 0;
	size_t i;

	if (!mt || !c)
		return 0;
	if (c->mt_cap && c->mt_key) {
		for (i = (mt * 0x9e3779b97f4a7c15ull >> 20) & (c->mt_cap - 1);
		     c->mt_key[i]; i = (i + 1) & (c->mt_cap - 1))
			if (c->mt_key[i] == mt)
				return c->mt_val[i];
	}
	if (field_of(r, mt, "__mode", &v) == 0) {
		char buf[16];

		if (tv_kind(r->l->major, v.tag) == LC_HK_STRING &&
		    str_bytes(r, v.value, buf, sizeof(buf)) >= 0) {
			if (strchr(buf, 'k'))
				mode |= LC_HF_WEAKK;
			if (strchr(buf, 'v'))
				mode |= LC_HF_WEAKV;
		}
	}
	if (c->mt_n * 2 >= c->mt_cap) {
		size_t ncap = c->mt_cap ? c->mt_cap * 2 : 256;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint8_t *nv = calloc(ncap, 1);

		if (!nk || !nv) {
			free(nk);
			free(nv);
			return mode;
		}
		for (size_t k = 0; k < c->mt_cap; k++) {
			if (!c->mt_key[k])
				continue;
			for (i = (c->mt_key[k] * 0x9e3779b97f4a7c15ull >> 20) & (ncap - 1);
			     nk[i]; i = (i + 1) & (ncap - 1))
				;
			nk[i] = c->mt_key[k];
			nv[i] = c->mt_val[k];
		}
		free(c->mt_key);
		free(c->mt_val);
		c->mt_key = nk;
		c->mt_val = nv;
		c->mt_cap = ncap;
	}
	for (i = (mt * 0x9e3779b97f4a7c15ull >> 20) & (c->mt_cap - 1);
	     c->mt_key[i]; i = (i + 1) & (c->mt_cap - 1))
		;
	c->mt_key[i] = mt;
	c->mt_val[i] = (uint8_t)mode;
	c->mt_n++;
	return mode;
}

/* A key as a label: *edge and text in buf. */
static void key_label(struct refs *r, uint64_t kv, unsigned ktag,
		      enum lc_hedge *edge, int64_t *index, char *buf,
		      size_t size)
{
	const struct lc_layout *l = r->l;
	int k = tv_kind(l->major, ktag);

	*index = 0;
	if (k == LC_HK_STRING) {
		char s[128];
		int64_t n = str_bytes(r, kv, s, sizeof(s));

		if (n >= 0 && (size_t)n < sizeof(s) && lc_lua_ident(s, (size_t)n)) {
			*edge = LC_HE_FIELD;
			snprintf(buf, size, "%s", s);
			return;
		}
		*edge = LC_HE_KEY;
		if (n < 0) {
			snprintf(buf, size, "string: 0x%" PRIx64, kv);
			return;
		}
		{
			struct lc_strbuf sb = { 0 };
			char *t;

			lc_strbuf_append(&sb, "\"", 1);
			lc_esc_append(&sb, s, (size_t)n < sizeof(s) - 1 ?
				      (size_t)n : sizeof(s) - 1,
				      LC_ESC_LUA | LC_ESC_QUOTE, SIZE_MAX);
			if ((size_t)n >= sizeof(s) - 1)
				lc_strbuf_append(&sb, "...", 3);
			lc_strbuf_append(&sb, "\"", 1);
			t = lc_strbuf_steal(&sb);
			snprintf(buf, size, "%s", t ? t : "\"?\"");
			free(t);
		}
		return;
	}
	*edge = LC_HE_KEY;
	if (l->major == 501) {
		if (ktag == 3) {	/* LUA_TNUMBER: a double */
			double d;

			memcpy(&d, &kv, 8);
			if (d == (double)(int64_t)d && d > -9e15 && d < 9e15) {
				*edge = LC_HE_INDEX;
				*index = (int64_t)d;
			}
			snprintf(buf, size, "%.14g", d);
			return;
		}
	} else if ((ktag == 0x03 && l->major >= 504) ||
		   (ktag == 0x13 && l->major == 503)) {
		*edge = LC_HE_INDEX;
		*index = (int64_t)kv;
		snprintf(buf, size, "%" PRId64, (int64_t)kv);
		return;
	} else if ((ktag == 0x03 && l->major <= 503) ||
		   (ktag == 0x13 && l->major >= 504)) {
		double d;

		memcpy(&d, &kv, 8);
		snprintf(buf, size, "%.14g", d);
		return;
	}
	if ((l->major == 501 && ktag == 1) || (l->major <= 503 && ktag == 1))
		snprintf(buf, size, "%s", kv ? "true" : "false");
	else if (l->major >= 504 && (ktag == 0x01 || ktag == 0x11))
		snprintf(buf, size, "%s", ktag == 0x11 ? "true" : "false");
	else if (k >= 0)
		snprintf(buf, size, "%s: 0x%" PRIx64, lc_hkind_name(k), kv);
	else
		snprintf(buf, size, "0x%" PRIx64, kv);
}

struct tscan {
	struct refs *r;
	unsigned mode;
};

static bool node_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
		    const struct lc_tvalue *v, void *arg)
{
	struct tscan *ts = arg;
	struct refs *r = ts->r;
	int vk = tv_kind(r->l->major, v->tag), kk = tv_kind(r->l->major, k->tag);
	char label[160];
	enum lc_hedge edge;
	int64_t index;

	(void)ctx;
	if (vk < 0 && kk < 0)
		return true;
	key_label(r, k->value, k->tag, &edge, &index, label, sizeof(label));
	if (vk >= 0 && ref(r, v->value, vk, edge, ts->mode & (LC_HF_WEAKV | LC_HF_WEAKK),
			   index, label, NULL) < 0)
		return false;
	if (kk >= 0 && ref(r, k->value, kk, LC_HE_ASKEY, ts->mode & LC_HF_WEAKK, 0,
			   label, NULL) < 0)
		return false;
	return true;
}

static int table_refs(struct refs *r, const struct lc_hobj *o)
{
	const struct lc_layout *l = r->l;
	uint8_t buf[512];
	const uint8_t *p = view(r->m, o->addr, l->sz_table, buf);
	uint64_t mt, array, asize, bytes;
	uint32_t hsize;
	unsigned mode;
	int rc = 0;

	if (!p || table_sizes(l, p, &asize, &hsize, &bytes) < 0)
		return -1;
	mt = get(p, l->tab.metatable);
	array = get(p, l->tab.array);
	mode = weak_mode(r, mt);
	if (mt && ref(r, mt, LC_HK_TABLE, LC_HE_METATABLE, false, 0, NULL, NULL) < 0)
		return 0;
	for (uint64_t i = 0; i < asize && !r->stop; i++) {
		uint64_t val;
		unsigned tag;
		int k;

		if (l->major >= 505) {
			uint8_t t;

			if (lc_read_u64(r->m, array - 8 * (i + 1), &val) < 0 ||
			    lc_read_u8(r->m, array + 4 + i, &t) < 0) {
				rc = -1;
				break;
			}
			tag = t;
		} else if (tv_at(r, array + i * l->sz_tvalue, &val, &tag) < 0) {
			rc = -1;
			break;
		}
		k = tv_kind(l->major, tag);
		if (k >= 0) {
			char label[24];

			snprintf(label, sizeof(label), "%" PRIu64, i + 1);
			ref(r, val, k, LC_HE_INDEX, mode & (LC_HF_WEAKV | LC_HF_WEAKK),
			    (int64_t)(i + 1), label, NULL);
		}
	}
	if (hsize && !r->stop) {
		struct tscan ts = { .r = r, .mode = mode };
		size_t budget = (size_t)hsize + 1;

		if (lc_lua_table_scan(r->ctx, o->addr, node_fn, &ts, &budget) < 0)
			rc = -1;
	}
	return rc;
}

/* "source:linedefined" of a Proto, as luaO_chunkid shortens sources
 * for "@file" and "=name" (a string chunk is "[string]"). */
static void proto_where(struct refs *r, uint64_t proto, char *buf, size_t size)
{
	const struct lc_layout *l = r->l;
	uint64_t src = 0, line = 0;
	char s[256];
	int64_t n = -1;

	if (lc_lua_read_field(r->ctx, proto, l->p.source, &src) == 0 && src)
		n = str_bytes(r, src, s, sizeof(s));
	lc_lua_read_field(r->ctx, proto, l->p.linedefined, &line);
	if (n < 0)
		snprintf(s, sizeof(s), "?");
	else if (s[0] == '@' || s[0] == '=')
		memmove(s, s + 1, strlen(s));
	else
		snprintf(s, sizeof(s), "[string]");
	if ((int32_t)line == 0)
		snprintf(buf, size, "main chunk of %s", s);
	else
		snprintf(buf, size, "%s:%d", s, (int)(int32_t)line);
}

static void cfunc_where(struct refs *r, uint64_t f, char *buf, size_t size)
{
	const char *name = lc_program_symbol(lc_lua_program(r->ctx), f);

	if (name)
		snprintf(buf, size, "C function %s", name);
	else
		snprintf(buf, size, "C function 0x%" PRIx64, f);
}

static int lfunc_refs(struct refs *r, const struct lc_hobj *o)
{
	const struct lc_layout *l = r->l;
	uint64_t proto = 0, n = o->len;
	const struct lc_proto_view *pv;
	char where[300];

	if (lc_lua_read_field(r->ctx, o->addr, l->cl.p, &proto) < 0)
		return -1;
	proto_where(r, proto, where, sizeof(where));
	pv = lc_lua_proto_view(r->ctx, proto);
	for (uint64_t i = 0; i < n && i < MAX_UPVALS && !r->stop; i++) {
		uint64_t uv, v, val;
		unsigned tag;
		int k;

		if (lc_read_u64(r->m, o->addr + (uint64_t)l->clx.upvals.off + 8 * i,
				&uv) < 0)
			return -1;
		if (!ptr_ok(uv) ||
		    lc_lua_read_field(r->ctx, uv, l->uv.v, &v) < 0 ||
		    tv_at(r, v, &val, &tag) < 0)
			continue;
		k = tv_kind(l->major, tag);
		if (k >= 0) {
			/* closed: v points at the UpVal's own value */
			bool open = LC_HAS(l->uvv.value) &&
				    v != uv + (uint64_t)l->uvv.value.off;
			struct lc_href h = {
				.to = val, .kind = (uint8_t)k,
				.edge = LC_HE_UPVALUE, .open = open,
				.index = (int64_t)i + 1,
				.name = pv && (int)i < pv->nupvalnames ?
					pv->upvalnames[i] : NULL,
				.where = where,
			};

			if (r->fn(r->arg, &h) < 0) {
				r->stop = true;
				return 0;
			}
		}
	}
	if (ptr_ok(proto))
		ref(r, proto, LC_HK_PROTO, LC_HE_PROTO, false, 0, NULL, where);
	if (LC_HAS(l->clx.env)) {
		uint64_t env;

		if (lc_read_u64(r->m, o->addr + (uint64_t)l->clx.env.off, &env) == 0 &&
		    ptr_ok(env))
			ref(r, env, LC_HK_TABLE, LC_HE_ENV, false, 0, NULL, where);
	}
	return 0;
}

static int cfunc_refs(struct refs *r, const struct lc_hobj *o)
{
	const struct lc_layout *l = r->l;
	char where[300];

	cfunc_where(r, o->klass, where, sizeof(where));
	for (uint64_t i = 0; i < o->len && i < MAX_UPVALS && !r->stop; i++) {
		uint64_t val;
		unsigned tag;
		int k;

		if (tv_at(r, o->addr + (uint64_t)l->clx.upvalue.off + i * l->sz_tvalue,
			  &val, &tag) < 0)
			return -1;
		k = tv_kind(l->major, tag);
		if (k >= 0)
			ref(r, val, k, LC_HE_UPVALUE, false, (int64_t)i + 1, NULL,
			    where);
	}
	if (LC_HAS(l->clx.env)) {
		uint64_t env;

		if (lc_read_u64(r->m, o->addr + (uint64_t)l->clx.env.off, &env) == 0 &&
		    ptr_ok(env))
			ref(r, env, LC_HK_TABLE, LC_HE_ENV, false, 0, NULL, where);
	}
	return 0;
}

static int udata_refs(struct refs *r, const struct lc_hobj *o)
{
	const struct lc_layout *l = r->l;

	if (o->klass)
		ref(r, o->klass, LC_HK_TABLE, LC_HE_METATABLE, false, 0, NULL, NULL);
	if (LC_HAS(l->udx.env)) {
		uint64_t env;

		if (lc_read_u64(r->m, o->addr + (uint64_t)l->udx.env.off, &env) == 0 &&
		    ptr_ok(env))
			ref(r, env, LC_HK_TABLE, LC_HE_ENV, false, 0, NULL, NULL);
	}
	if (LC_HAS(l->udx.user) && LC_HAS(l->udx.ttuv)) {
		uint64_t val, tag;
		int k;

		if (lc_read_u64(r->m, o->addr + (uint64_t)l->udx.user.off, &val) == 0 &&
		    lc_lua_read_field(r->ctx, o->addr, l->udx.ttuv, &tag) == 0 &&
		    (k = tv_kind(l->major, (unsigned)tag)) >= 0)
			ref(r, val, k, LC_HE_USERVALUE, false, 1, NULL, NULL);
	}
	if (LC_HAS(l->udx.nuvalue) && LC_HAS(l->udx.uv)) {
		uint64_t n = 0;

		lc_lua_read_field(r->ctx, o->addr, l->udx.nuvalue, &n);
		for (uint64_t i = 0; i < n && i < 0x10000 && !r->stop; i++) {
			uint64_t val;
			unsigned tag;
			int k;

			if (tv_at(r, o->addr + (uint64_t)l->udx.uv.off + i * l->sz_uvalue,
				  &val, &tag) < 0)
				return -1;
			if ((k = tv_kind(l->major, tag)) >= 0)
				ref(r, val, k, LC_HE_USERVALUE, false, (int64_t)i + 1,
				    NULL, NULL);
		}
	}
	return 0;
}

static int proto_refs(struct refs *r, const struct lc_hobj *o)
{
	const struct lc_layout *l = r->l;
	uint64_t k = 0, pp = 0, src = 0, upv = 0, lv = 0;
	int64_t nk = 0, np = 0, nup = 0, nlv = 0;

	lc_lua_read_field(r->ctx, o->addr, l->p.k, &k);
	lc_lua_read_sfield(r->ctx, o->addr, l->p.sizek, &nk);
	lc_lua_read_field(r->ctx, o->addr, l->p.p, &pp);
	lc_lua_read_sfield(r->ctx, o->addr, l->p.sizep, &np);
	lc_lua_read_field(r->ctx, o->addr, l->p.source, &src);
	lc_lua_read_field(r->ctx, o->addr, l->p.upvalues, &upv);
	lc_lua_read_sfield(r->ctx, o->addr, l->p.sizeupvalues, &nup);
	lc_lua_read_field(r->ctx, o->addr, l->p.locvars, &lv);
	lc_lua_read_sfield(r->ctx, o->addr, l->p.sizelocvars, &nlv);
	if (ptr_ok(src))
		ref(r, src, LC_HK_STRING, LC_HE_CONST, false, 0, "source", NULL);
	for (int64_t i = 0; i < nk && i < LC_MAX_K && !r->stop; i++) {
		uint64_t val;
		unsigned tag;
		int kk;

		if (tv_at(r, k + (uint64_t)i * l->sz_tvalue, &val, &tag) < 0)
			return -1;
		if ((kk = tv_kind(l->major, tag)) >= 0)
			ref(r, val, kk, LC_HE_CONST, false, i + 1, "constant", NULL);
	}
	for (int64_t i = 0; i < np && i < LC_MAX_K && !r->stop; i++) {
		uint64_t c;

		if (lc_read_u64(r->m, pp + 8 * (uint64_t)i, &c) < 0)
			return -1;
		if (ptr_ok(c))
			ref(r, c, LC_HK_PROTO, LC_HE_CONST, false, i + 1,
			    "nested function", NULL);
	}
	for (int64_t i = 0; i < nup && i < MAX_UPVALS + 1 && !r->stop; i++) {
		uint64_t s;
		uint64_t at = l->major == 501 ? upv + 8 * (uint64_t)i :
			upv + (uint64_t)i * l->sz_upvaldesc + (uint64_t)l->uvd.name.off;

		if (lc_read_u64(r->m, at, &s) == 0 && ptr_ok(s))
			ref(r, s, LC_HK_STRING, LC_HE_CONST, false, i + 1,
			    "upvalue name", NULL);
	}
	for (int64_t i = 0; i < nlv && i < LC_MAX_LOCVARS && !r->stop; i++) {
		uint64_t s;

		if (lc_read_u64(r->m, lv + (uint64_t)i * l->sz_locvar +
				(uint64_t)l->lv.varname.off, &s) == 0 && ptr_ok(s))
			ref(r, s, LC_HK_STRING, LC_HE_CONST, false, i + 1,
			    "local name", NULL);
	}
	return 0;
}

/* A thread's stack: every slot up to top, named by the frame that owns
 * it and, for a Lua frame's local, by the local. */
static int thread_refs(struct refs *r, const struct lc_hobj *o)
{
	const struct lc_layout *l = r->l;
	struct lc_lstate st;
	struct lc_ci *cis = NULL;
	struct lc_slot *slots = NULL;
	size_t n = 0, ns = 0;
	bool partial = false;
	struct lc_error *err;
	char (*where)[300] = NULL;
	struct lc_var **vars = NULL;
	size_t *nvars = NULL;
	int rc = 0;

	if (lc_lua_state_read(r->ctx, o->addr, &st) < 0)
		return -1;
	if (LC_HAS(l->Lh.l_gt)) {
		uint64_t val;
		unsigned tag;
		int k;

		if (tv_at(r, o->addr + (uint64_t)l->Lh.l_gt.off, &val, &tag) == 0 &&
		    (k = tv_kind(l->major, tag)) >= 0)
			ref(r, val, k, LC_HE_ENV, false, 0, "globals", NULL);
	}
	err = lc_lua_walk(r->ctx, &st, 100000, &cis, &n, &partial);
	if (err) {
		lc_error_destroy(err);
		n = 0;
		rc = -1;
	}
	if (partial)
		rc = -1;
	if (n) {
		where = calloc(n, sizeof(*where));
		vars = calloc(n, sizeof(*vars));
		nvars = calloc(n, sizeof(*nvars));
		if (!where || !vars || !nvars) {
			n = 0;
			rc = -1;
		}
	}
	for (size_t j = 0; j < n; j++) {
		if (cis[j].is_lua && ptr_ok(cis[j].proto))
			proto_where(r, cis[j].proto, where[j], sizeof(where[j]));
		else if (cis[j].cfunc)
			cfunc_where(r, cis[j].cfunc, where[j], sizeof(where[j]));
		else
			snprintf(where[j], sizeof(where[j]), "?");
		if (cis[j].is_lua) {
			err = lc_lua_frame_vars(r->ctx, &st, cis, n, j, &vars[j],
						&nvars[j]);
			if (err) {
				lc_error_destroy(err);
				vars[j] = NULL;
				nvars[j] = 0;
			}
		}
	}
	err = lc_lua_stack_slots(r->ctx, &st, cis, n, 0, &slots, &ns);
	if (err) {
		lc_error_destroy(err);
		rc = -1;
	}
	for (size_t s = 0; s < ns && s < MAX_REFS_SLOTS && !r->stop; s++) {
		const struct lc_slot *sl = &slots[s];
		const char *name = NULL, *at = NULL;
		int k;
		uint64_t val;
		unsigned tag;

		if (sl->residue || tv_at(r, sl->addr, &val, &tag) < 0 ||
		    (k = tv_kind(l->major, tag)) < 0)
			continue;
		if (sl->frame >= 0 && (size_t)sl->frame < n) {
			size_t f = (size_t)sl->frame;
			int64_t reg = ((int64_t)sl->addr - (int64_t)cis[f].func) /
				(int64_t)l->sz_stack_slot - 1;

			at = where[f];
			for (size_t v = 0; v < nvars[f]; v++)
				if (strcmp(vars[f][v].kind, "local") == 0 &&
				    vars[f][v].index == reg &&
				    vars[f][v].value.addr == val) {
					name = vars[f][v].name;
					break;
				}
			if (sl->is_func) {
				ref(r, val, k, LC_HE_FUNC, false, (int64_t)f + 1,
				    NULL, at);
				continue;
			}
		}
		ref(r, val, k, LC_HE_LOCAL, false,
		    sl->frame >= 0 ? sl->frame + 1 : 0, name, at);
	}
	for (size_t j = 0; j < n && vars; j++)
		lc_vars_free(vars[j], nvars[j]);
	free(vars);
	free(nvars);
	free(where);
	lc_slots_free(slots, ns);
	free(cis);
	return rc;
}

static int upval_refs(struct refs *r, const struct lc_hobj *o)
{
	uint64_t v, val;
	unsigned tag;
	int k;

	if (lc_lua_read_field(r->ctx, o->addr, r->l->uv.v, &v) < 0 ||
	    tv_at(r, v, &val, &tag) < 0)
		return -1;
	if ((k = tv_kind(r->l->major, tag)) >= 0)
		ref(r, val, k, LC_HE_OTHER, false, 0, "value", NULL);
	return 0;
}

/* The registry, and its globals (5.2+ registry[LUA_RIDX_GLOBALS]) and
 * loaded modules (registry._LOADED). */
static int roots(struct refs *r)
{
	const struct lc_layout *l = r->l;
	uint64_t mainthread, reg = 0;
	unsigned tag = 0;
	struct lc_tvalue v;
	static const char *const mtnames[] = {
		"nil", "booleans", "light userdata", "numbers", "strings",
		"tables", "functions", "userdata", "threads",
	};

	if (lc_lua_mainthread(r->ctx, r->g, &mainthread) < 0)
		return -1;
	if (tv_at(r, r->g + (uint64_t)l->G.l_registry.off, &reg, &tag) < 0 ||
	    tv_kind(l->major, tag) != LC_HK_TABLE)
		reg = 0;
	if (reg && field_of(r, reg, "_LOADED", &v) == 0 &&
	    tv_kind(l->major, v.tag) == LC_HK_TABLE)
		ref(r, v.value, LC_HK_TABLE, LC_HE_ROOT, false, 0, "_LOADED", NULL);
	if (l->major == 501) {
		uint64_t val;

		if (tv_at(r, mainthread + (uint64_t)l->Lh.l_gt.off, &val, &tag) == 0 &&
		    tv_kind(l->major, tag) == LC_HK_TABLE)
			ref(r, val, LC_HK_TABLE, LC_HE_ROOT, false, 0, "_G", NULL);
	} else if (reg) {
		uint64_t array = 0, val;

		/* LUA_RIDX_GLOBALS is 2: the array part's second slot */
		if (lc_lua_read_field(r->ctx, reg, l->tab.array, &array) == 0 &&
		    array) {
			if (l->major >= 505) {
				uint8_t t;

				if (lc_read_u64(r->m, array - 16, &val) == 0 &&
				    lc_read_u8(r->m, array + 5, &t) == 0 &&
				    tv_kind(l->major, t) == LC_HK_TABLE)
					ref(r, val, LC_HK_TABLE, LC_HE_ROOT, false,
					    0, "_G", NULL);
			} else if (tv_at(r, array + l->sz_tvalue, &val, &tag) == 0 &&
				   tv_kind(l->major, tag) == LC_HK_TABLE) {
				ref(r, val, LC_HK_TABLE, LC_HE_ROOT, false, 0, "_G",
				    NULL);
			}
		}
	}
	if (reg)
		ref(r, reg, LC_HK_TABLE, LC_HE_ROOT, false, 0, "registry", NULL);
	ref(r, mainthread, LC_HK_THREAD, LC_HE_ROOT, false, 0, "main thread",
	    NULL);
	if (LC_HAS(l->Gh.mt)) {
		for (int i = 0; i < 9 && !r->stop; i++) {
			uint64_t mt;
			char name[64];

			if (lc_read_u64(r->m, r->g + (uint64_t)l->Gh.mt.off + 8 * (uint64_t)i,
					&mt) < 0 || !ptr_ok(mt))
				continue;
			snprintf(name, sizeof(name), "metatable of %s", mtnames[i]);
			ref(r, mt, LC_HK_TABLE, LC_HE_ROOT, false, 0, name, NULL);
		}
	}
	/* Unreachable objects whose finalizers are due: alive until they
	 * ran. */
	{
		struct lc_field head = l->major == 501 ? l->Gh.tmudata : l->Gx.tobefnz;
		uint64_t first = 0, o;
		size_t i = 0;

		if (LC_HAS(head))
			lc_read_u64(r->m, r->g + (uint64_t)head.off, &first);
		for (o = first; ptr_ok(o) && i < 1000000 && !r->stop; i++) {
			uint8_t tt;
			bool lng;
			int k;

			if (lc_read_u8(r->m, o + (uint64_t)l->L.tt.off, &tt) < 0)
				break;
			k = kind_of(l->major, tt, &lng);
			if (k >= 0)
				ref(r, o, k, LC_HE_ROOT, false, 0, "to be finalized",
				    NULL);
			if (lc_read_u64(r->m, o + (uint64_t)l->Lx.next.off, &o) < 0 ||
			    o == first)
				break;
		}
	}
	return 0;
}

int lc_puc_heap_refs(struct lc_lua_ctx *ctx, void **cache, uint64_t g,
		     const struct lc_hobj *o, lc_href_fn *fn, void *arg)
{
	struct refs r = { .ctx = ctx, .l = lc_lua_layout(ctx),
			  .m = lc_lua_mem(ctx), .c = cache_of(cache), .g = g,
			  .fn = fn, .arg = arg };

	if (!o)
		return roots(&r);
	switch (o->kind) {
	case LC_HK_TABLE: return table_refs(&r, o);
	case LC_HK_LFUNC: return lfunc_refs(&r, o);
	case LC_HK_CFUNC: return cfunc_refs(&r, o);
	case LC_HK_USERDATA: return udata_refs(&r, o);
	case LC_HK_THREAD: return thread_refs(&r, o);
	case LC_HK_PROTO: return proto_refs(&r, o);
	case LC_HK_UPVAL: return r.l->major == 503 ? 0 : upval_refs(&r, o);
	default: return 0;
	}
}

/* ---- class names ---- */

struct regscan {
	struct refs *r;
	struct hcache *c;
};

static bool reg_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
		   const struct lc_tvalue *v, void *arg)
{
	struct regscan *rs = arg;
	struct hcache *c = rs->c;
	char buf[128];
	int64_t n;
	uint64_t *nt;
	char **nn;

	(void)ctx;
	if (tv_kind(rs->r->l->major, k->tag) != LC_HK_STRING ||
	    tv_kind(rs->r->l->major, v->tag) != LC_HK_TABLE)
		return true;
	n = str_bytes(rs->r, k->value, buf, sizeof(buf));
	if (n < 0 || strcmp(buf, "_LOADED") == 0 || strcmp(buf, "_PRELOAD") == 0 ||
	    strcmp(buf, "_LOADLIB") == 0 || strcmp(buf, "_CLIBS") == 0)
		return true;
	if (c->nreg >= 100000)
		return false;
	nt = realloc(c->reg_tab, (c->nreg + 1) * sizeof(*nt));
	if (!nt)
		return false;
	c->reg_tab = nt;
	nn = realloc(c->reg_name, (c->nreg + 1) * sizeof(*nn));
	if (!nn)
		return false;
	c->reg_name = nn;
	c->reg_tab[c->nreg] = v->value;
	c->reg_name[c->nreg] = strdup(buf);
	if (c->reg_name[c->nreg])
		c->nreg++;
	return true;
}

char *lc_puc_heap_class(struct lc_lua_ctx *ctx, void **cache, uint64_t g,
			enum lc_hkind kind, uint64_t klass)
{
	struct refs r = { .ctx = ctx, .l = lc_lua_layout(ctx),
			  .m = lc_lua_mem(ctx), .c = cache_of(cache), .g = g };
	char buf[300];

	if (!klass)
		return NULL;
	if (kind == LC_HK_LFUNC || kind == LC_HK_PROTO) {
		proto_where(&r, klass, buf, sizeof(buf));
		return strdup(buf);
	}
	if (kind == LC_HK_CFUNC) {
		const char *name = lc_program_symbol(lc_lua_program(ctx), klass);

		if (name)
			return strdup(name);
		snprintf(buf, sizeof(buf), "0x%" PRIx64, klass);
		return strdup(buf);
	}
	if (kind == LC_HK_TABLE || kind == LC_HK_USERDATA) {
		struct lc_tvalue v;

		/* luaL_newmetatable: __name (5.3+), and registry[name] */
		if (field_of(&r, klass, "__name", &v) == 0 &&
		    str_bytes(&r, v.value, buf, sizeof(buf)) >= 0 &&
		    tv_kind(r.l->major, v.tag) == LC_HK_STRING)
			return strdup(buf);
		if (r.c && (!r.c->reg_done || r.c->reg_vm != g)) {
			uint64_t reg = 0;
			unsigned tag = 0;

			for (size_t i = 0; i < r.c->nreg; i++)
				free(r.c->reg_name[i]);
			r.c->nreg = 0;
			r.c->reg_done = true;
			r.c->reg_vm = g;
			if (tv_at(&r, g + (uint64_t)r.l->G.l_registry.off, &reg, &tag) == 0 &&
			    tv_kind(r.l->major, tag) == LC_HK_TABLE) {
				struct regscan rs = { .r = &r, .c = r.c };
				size_t budget = 1u << 20;

				lc_lua_table_scan(ctx, reg, reg_fn, &rs, &budget);
			}
		}
		for (size_t i = 0; r.c && i < r.c->nreg; i++)
			if (r.c->reg_tab[i] == klass)
				return strdup(r.c->reg_name[i]);
	}
	return NULL;
}

char *lc_puc_heap_string(struct lc_lua_ctx *ctx, const struct lc_hobj *o,
			 size_t max, size_t *len)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint64_t at;
	size_t n = o->len < max ? (size_t)o->len : max;
	char *buf;

	*len = 0;
	if (o->kind != LC_HK_STRING ||
	    lc_lua_string_bytes(ctx, o->addr, o->flags & LC_HF_LONG, &at) < 0)
		return NULL;
	(void)l;
	buf = malloc(n + 1);
	if (!buf)
		return NULL;
	if (n && lc_read(lc_lua_mem(ctx), at, buf, n) < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}
