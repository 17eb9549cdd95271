/* VMs: the memory scan for global_States, the decoding of a VM (GC state,
 * parameters, every coroutine on its GC lists) and of a lua_State's
 * internals.  Definitions per version are documented in vm/puc/heap.h; every
 * offset comes from the layout (DWARF).
 *
 * Cost on big cores: the scan reads the writable segments of the core
 * file with pread into one buffer (page cache, not our RSS) and compares
 * each word with what a global_State's mainthread field would hold there;
 * the GC list walk reads object headers through the core's mapping and
 * lets go of the pages it touched every so often. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <libelf.h>

#include "vm/puc/heap.h"

#define TAG_TABLE	5
#define TAG_THREAD	8
#define ST_YIELD	1	/* LUA_YIELD in every version */

#define SCAN_CHUNK	(1u << 20)	/* bytes per pread; stays in cache */
#define SCAN_OVERLAP	256		/* > offset of lua_State.l_G */
/* The walk lets go of the core pages it touched once it has touched this
 * many distinct 2 MiB windows of the mapping (a fault maps at most that
 * much: a PMD over a large folio of the page cache): at most 64 MiB of
 * the core in our RSS at any time. */
#define WINDOW_SHIFT	21
#define WINDOW_SIZE	((uintptr_t)1 << WINDOW_SHIFT)
#define RELEASE_WINDOWS	32
/* Prefetch ahead of the walk: PREFETCH_LINES cache lines PREFETCH_DIST
 * bytes away in the list's direction, when the last step was shorter
 * than PREFETCH_NEAR. */
#define PREFETCH_DIST	2048
#define PREFETCH_LINES	4
#define PREFETCH_NEAR	4096

/* ---- small readers ---- */


/* An int-sized field, or "dflt" when absent or unreadable. */
static int rd_int_or(struct lc_lua_ctx *ctx, uint64_t base, struct lc_field f,
		     int dflt)
{
	int64_t v;

	if (!LC_HAS(f) || lc_lua_read_sfield(ctx, base, f, &v) < 0 || v < INT32_MIN ||
	    v > INT32_MAX)
		return dflt;
	return (int)v;
}

static int gcstate_max(int major)
{
	switch (major) {
	case 501: return 4;
	case 502: return 5;
	case 503: return 7;
	default: return 8;
	}
}

const char *lc_vm_gcstate_name(int major, int gcstate)
{
	static const char *const n501[] = {
		"pause", "propagate", "sweepstring", "sweep", "finalize",
	};
	static const char *const n502[] = {
		"propagate", "atomic", "sweepstring", "sweepudata", "sweep",
		"pause",
	};
	static const char *const n503[] = {
		"propagate", "atomic", "swpallgc", "swpfinobj", "swptobefnz",
		"swpend", "callfin", "pause",
	};
	static const char *const n504[] = {
		"propagate", "enteratomic", "atomic", "swpallgc", "swpfinobj",
		"swptobefnz", "swpend", "callfin", "pause",
	};
	const char *const *names;
	int n;

	switch (major) {
	case 501: names = n501; n = (int)LC_ARRAY_SIZE(n501); break;
	case 502: names = n502; n = (int)LC_ARRAY_SIZE(n502); break;
	case 503: names = n503; n = (int)LC_ARRAY_SIZE(n503); break;
	/* 5.5's lgc.h has 5.4's states. */
	case 504: case 505: names = n504; n = (int)LC_ARRAY_SIZE(n504); break;
	default: return NULL;
	}
	return gcstate >= 0 && gcstate < n ? names[gcstate] : NULL;
}

void lc_vm_release_core_pages(struct lc_memory *m)
{
	lc_memory_release(m);
}

/* ---- the scan ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_luathread(const void *a, const void *b)
{
	const struct lc_luathread *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int push_u64(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		uint64_t *p = realloc(*v, ncap * sizeof(*p));

		if (!p)
			return -1;
		*v = p;
		*cap = ncap;
	}
	(*v)[(*n)++] = x;
	return 0;
}

/* Is the global_State candidate g a VM?  Its main thread must validate and
 * point back to g, its gcstate be one the version has, and its registry
 * be a table (lua_newstate sets it before it returns). */
static bool vm_validate(struct lc_lua_ctx *ctx, uint64_t g,
			uint64_t mainthread)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	struct lc_lstate st;
	struct lc_tvalue reg;
	uint64_t gcstate;
	uint8_t tt;

	if (lc_lua_state_read(ctx, mainthread, &st) < 0 || st.g != g ||
	    st.mainthread != mainthread)
		return false;
	if (lc_lua_read_field(ctx, g, l->G.gcstate, &gcstate) < 0 ||
	    gcstate > (uint64_t)gcstate_max(l->major))
		return false;
	if (LC_HAS(l->G.l_registry) &&
	    (lc_lua_read_tvalue(ctx, g + (uint64_t)l->G.l_registry.off,
				&reg) < 0 ||
	     (reg.tag & 0x0f) != TAG_TABLE ||
	     !lc_memory_is_data(t, reg.value, 16) ||
	     lc_read_u8(t, reg.value + (uint64_t)l->L.tt.off, &tt) < 0 ||
	     (tt & 0x0f) != TAG_TABLE))
		return false;
	return true;
}

/* Words of buf (at target address addr) equal to their own address minus
 * k: where a global_State's mainthread field points "delta" bytes below
 * the global_State. */
static int scan_words(const uint64_t *w, size_t nw, uint64_t addr, uint64_t k,
		      uint64_t **hits, size_t *nhits, size_t *cap)
{
	uint64_t want = addr - k;
	size_t i = 0;

	/* Blocks of 8 words without branches first (vectorizes). */
	for (; i + 8 <= nw; i += 8, want += 64) {
		unsigned any = 0;

		for (unsigned j = 0; j < 8; j++)
			any |= w[i + j] == want + 8 * j;
		if (!any)
			continue;
		for (unsigned j = 0; j < 8; j++)
			if (w[i + j] == want + 8 * j &&
			    push_u64(hits, nhits, cap, addr + 8 * (i + j)) < 0)
				return -1;
	}
	for (; i < nw; i++, want += 8)
		if (w[i] == want &&
		    push_u64(hits, nhits, cap, addr + 8 * i) < 0)
			return -1;
	return 0;
}

/* Objects in buf that may be lua_States: a thread tag in the GC header
 * and an aligned, non-null l_G.  Only words whose fields lie inside the
 * nw + extra words of buf are looked at (buf overlaps the next chunk). */
static int scan_threads(const uint8_t *buf, size_t n, size_t avail,
			uint64_t addr, uint32_t tt_off, uint32_t lg_off,
			uint64_t lo, uint64_t hi, uint64_t **th, size_t *nth,
			size_t *cap)
{
	for (size_t off = 0; off < n; off += 8) {
		uint64_t lg;

		if (off + lg_off + 8 > avail || off + tt_off >= avail)
			break;
		if ((buf[off + tt_off] & 0x3f) != TAG_THREAD)
			continue;
		memcpy(&lg, buf + off + lg_off, 8);
		if (!lg || (lg & 7) || lg < lo || lg >= hi)
			continue;
		if (push_u64(th, nth, cap, addr + off) < 0)
			return -1;
	}
	return 0;
}

struct lc_error *lc_vm_scan(struct lc_lua_ctx *ctx, uint64_t **ret,
			    size_t *nret)
{
	return lc_vm_scan_threads(ctx, ret, nret, NULL, NULL);
}

/* What the scan collects, chunk by chunk. */
struct scan {
	struct lc_lua_ctx *ctx;
	bool want_threads;
	uint64_t lo, hi;	/* where l_G may point: writable memory */
	uint64_t moff, k;	/* a hit at X: g = X - moff (see below) */
	uint64_t *th, *hits, *vms;
	size_t nth, tcap, nhits, hcap, nvms, vcap;
};

/* What vm_validate checks first, on the chunk's bytes where they hold
 * the field: a gcstate of the version, a registry tagged as a table.
 * True when a field lies outside the chunk (vm_validate decides). */
static bool hit_plausible(const struct lc_layout *l, uint64_t g,
			  uint64_t addr, const uint8_t *buf, size_t avail)
{
	uint64_t v = 0;

	if (g < addr)
		return true;
	if (LC_HAS(l->G.gcstate) && l->G.gcstate.size <= 8 &&
	    g - addr + (uint64_t)l->G.gcstate.off + l->G.gcstate.size <= avail) {
		memcpy(&v, buf + (g - addr) + (uint64_t)l->G.gcstate.off,
		       l->G.gcstate.size);
		if (v > (uint64_t)gcstate_max(l->major))
			return false;
	}
	if (LC_HAS(l->G.l_registry) && LC_HAS(l->tv.tt) && l->tv.tt.size <= 8 &&
	    g - addr + (uint64_t)l->G.l_registry.off + (uint64_t)l->tv.tt.off +
	    l->tv.tt.size <= avail) {
		v = 0;
		memcpy(&v, buf + (g - addr) + (uint64_t)l->G.l_registry.off +
		       (uint64_t)l->tv.tt.off, l->tv.tt.size);
		if ((v & 0x0f) != TAG_TABLE)
			return false;
	}
	return true;
}

static int scan_chunk(void *arg, uint64_t addr, const uint8_t *buf, size_t n,
		      size_t avail, struct lc_error **err)
{
	struct scan *sc = arg;
	const struct lc_layout *l = lc_lua_layout(sc->ctx);

	if (sc->want_threads &&
	    scan_threads(buf, n, avail, addr, (uint32_t)l->L.tt.off,
			 (uint32_t)l->L.l_G.off, sc->lo, sc->hi, &sc->th,
			 &sc->nth, &sc->tcap) < 0)
		return -1;
	sc->nhits = 0;
	if (scan_words((const uint64_t *)buf, n / 8, addr, sc->k, &sc->hits,
		       &sc->nhits, &sc->hcap) < 0)
		return -1;
	/* Validate this chunk's hits (a few reads through the mapping
	 * each). */
	for (size_t h = 0; h < sc->nhits; h++) {
		uint64_t g = sc->hits[h] - sc->moff;

		/* A heap whose objects lie side by side has many words
		 * that point as far back as a global_State's mainthread
		 * does (a GC link to the object allocated before): the
		 * fields the chunk holds of the candidate are checked
		 * first, without a read. */
		if (!hit_plausible(l, g, addr, buf, avail))
			continue;
		if (vm_validate(sc->ctx, g, g - (uint64_t)l->lg_g_minus_l) &&
		    push_u64(&sc->vms, &sc->nvms, &sc->vcap, g) < 0)
			return -1;
	}
	return 0;
}

struct lc_error *lc_vm_scan_threads(struct lc_lua_ctx *ctx, uint64_t **ret,
				    size_t *nret, uint64_t **threads,
				    size_t *nthreads)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	struct scan sc = { .ctx = ctx, .want_threads = threads != NULL };
	struct lc_error *err;

	*ret = NULL;
	*nret = 0;
	if (threads) {
		*threads = NULL;
		*nthreads = 0;
	}
	/* A core's writable segments, read from its file; or the regions a
	 * callback target was given, read through the callback. */
	if (!lc_memory_scannable(t))
		return NULL;
	/* l_G of a thread points into writable memory. */
	lc_memory_data_span(t, &sc.lo, &sc.hi);
	if (LC_HAS(l->G.mainth) && LC_HAS(l->G.gcstate) &&
	    l->lg_g_minus_l < 0) {
		/* 5.5: the main thread inside global_State points back to
		 * it: the word at X == X - moff, with moff the offset of
		 * its l_G in global_State, makes g = X - moff a
		 * candidate. */
		sc.moff = (uint64_t)l->G.mainth.off + (uint64_t)l->L.l_G.off;
		sc.k = sc.moff;
	} else if (LC_HAS(l->G.mainthread) && LC_HAS(l->G.gcstate) &&
		   l->lg_g_minus_l > 0) {
		sc.moff = (uint64_t)l->G.mainthread.off;
		/* word at X == X - moff - delta  <=>  g = X - moff is a
		 * candidate. */
		sc.k = sc.moff + (uint64_t)l->lg_g_minus_l;
	} else {
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"cannot scan for Lua VMs: the layout of global_State or struct LG is unknown");
	}
	{
		double t0 = lc_now_s();

		lc_log(LC_LOG_VERBOSE, "scanning writable memory [0x%" PRIx64 ", 0x%" PRIx64 ") for Lua VMs%s",
		       sc.lo, sc.hi, threads ? " and coroutines" : "");
		err = lc_memory_scan(t, SCAN_CHUNK, SCAN_OVERLAP, scan_chunk,
				     &sc);
		lc_log(LC_LOG_VERBOSE, "scan: %zu VM(s), %zu coroutine candidate(s) in %.3f s",
		       sc.nvms, sc.nth, lc_now_s() - t0);
	}
	free(sc.hits);
	if (err) {
		free(sc.vms);
		free(sc.th);
		return err;
	}
	if (sc.nvms) {
		qsort(sc.vms, sc.nvms, sizeof(*sc.vms), cmp_u64);
		*ret = sc.vms;
		*nret = sc.nvms;
	}
	if (threads) {
		*threads = sc.th;
		*nthreads = sc.nth;
	} else {
		free(sc.th);
	}
	return NULL;
}

/* ---- GC list walk ---- */

struct walker {
	struct lc_memory *t;
	bool mapped;		/* read headers through lc_memory_map */
	int major;		/* the layout's Lua version */
	uint64_t registry;	/* the VM's registry table, or 0 */
	uint32_t next_off, tt_off, hdr_len;
	/* RSS control (cores whose image is a file mapping): the distinct
	 * windows of the mapping touched since the last release. */
	uintptr_t last_window;
	uintptr_t windows[2 * RELEASE_WINDOWS];	/* open addressing, 0 free */
	size_t nwindows;
};

static void walker_release(struct walker *w)
{
	for (size_t i = 0; i < LC_ARRAY_SIZE(w->windows); i++) {
		uintptr_t lo;

		if (!w->windows[i])
			continue;
		lo = w->windows[i] << WINDOW_SHIFT;
		lc_memory_release_host(w->t, lo, lo + WINDOW_SIZE);
		w->windows[i] = 0;
	}
	w->nwindows = 0;
	w->last_window = 0;
}

/* Account for the window of host address a. */
static void walker_touch(struct walker *w, uintptr_t a)
{
	uintptr_t win = a >> WINDOW_SHIFT;
	size_t i;

	if (win == w->last_window)
		return;
	w->last_window = win;
	for (i = (size_t)((win * 0x9e3779b97f4a7c15ull) >> 32) %
		 LC_ARRAY_SIZE(w->windows);;
	     i = (i + 1) % LC_ARRAY_SIZE(w->windows)) {
		if (w->windows[i] == win)
			return;
		if (!w->windows[i])
			break;
	}
	w->windows[i] = win;
	if (++w->nwindows >= RELEASE_WINDOWS)
		walker_release(w);
}

/* The next link and type tag of the GC object at obj. */
static int read_header(struct walker *w, uint64_t obj, uint64_t *next,
		       uint8_t *tt)
{
	const uint8_t *p;
	uint8_t buf[64];
	int64_t d;

	if (!w->mapped) {
		if (lc_read(w->t, obj, buf, w->hdr_len) < 0)
			return -1;
		memcpy(next, buf + w->next_off, 8);
		*tt = buf[w->tt_off];
		return 0;
	}
	p = lc_memory_map(w->t, obj, w->hdr_len);
	if (!p)
		return -1;
	memcpy(next, p + w->next_off, 8);
	*tt = p[w->tt_off];
	/* Objects allocated one after the other lie side by side, and the
	 * lists run newest first: the coming objects are likely a little
	 * further in the direction the list just went.  Ask for those
	 * lines ahead of time (a prefetch never faults); this takes a third
	 * off a walk that is otherwise one memory latency per object. */
	d = (int64_t)(*next - obj);
	if (d < 0 && d > -PREFETCH_NEAR) {
		for (int q = 0; q < PREFETCH_LINES; q++)
			__builtin_prefetch(p - PREFETCH_DIST - 64 * q);
	} else if (d > 0 && d < PREFETCH_NEAR) {
		for (int q = 0; q < PREFETCH_LINES; q++)
			__builtin_prefetch(p + PREFETCH_DIST + 64 * q);
	}
	walker_touch(w, (uintptr_t)p);
	return 0;
}

struct walk_out {
	struct lc_lua_ctx *ctx;
	uint64_t g;		/* the VM walked */
	uint64_t *threads;	/* thread objects that validate, in list order */
	size_t n, cap;
	size_t nbad;		/* thread objects that do not */
	uint64_t *bad;		/* the first LC_VM_LISTED_DAMAGED of them */
	size_t nb, bcap;
	size_t over;		/* past LC_VM_MAX_THREADS */
	size_t objects;		/* objects visited, all lists */
	size_t max;
	bool stop;		/* the bound was reached */
	bool partial;
	struct lc_strbuf note;
};

static void walk_out_free(struct walk_out *o)
{
	free(o->note.buf);
	free(o->threads);
	free(o->bad);
}

static void note_add(struct walk_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note_add(struct walk_out *o, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (o->note.len)
		lc_strbuf_append(&o->note, "; ", 2);
	lc_strbuf_append(&o->note, buf, strlen(buf));
}

/* Walk one GC list by the CommonHeader next links, bounded by o->max
 * objects over all lists; a cycle is found with Brent's algorithm. */
static int walk_list(struct walker *w, uint64_t g, uint64_t mainthread,
		     struct lc_field head, const char *name,
		     struct walk_out *o)
{
	uint64_t obj, saved;
	size_t power = 1, lam = 0, here = 0;
	/* 5.1's rootgc and 5.4+'s allgc start with the main thread
	 * (lstate.c lua_newstate) and never lose it: it ends the list. */
	int major = w->major;
	bool want_main = (major == 501 && strcmp(name, "rootgc") == 0) ||
			 (major >= 504 && strcmp(name, "allgc") == 0);
	bool seen_main = false;
	/* 5.2's and 5.3's allgc ends with the registry instead, the first
	 * object lua_newstate makes (lstate.c init_registry): the strings
	 * made before it are fixed, off the list (5.3 luaC_fix; 5.2 keeps
	 * them on its own fixed list too). */
	bool want_reg = (major == 502 || major == 503) && w->registry &&
			strcmp(name, "allgc") == 0;
	uint64_t last = 0;

	if (!LC_HAS(head) || o->stop)
		return 0;
	if (lc_read_u64(w->t, g + (uint64_t)head.off, &obj) < 0) {
		o->partial = true;
		note_add(o, "the head of GC list '%s' is unreadable", name);
		return 0;
	}
	saved = obj;
	while (obj) {
		uint64_t next;
		uint8_t tt;

		if (o->objects >= o->max) {
			o->partial = true;
			o->stop = true;
			note_add(o, "stopped walking the GC lists after %zu objects (in '%s')",
				 o->objects, name);
			return 0;
		}
		if ((obj & 7) || read_header(w, obj, &next, &tt) < 0) {
			o->partial = true;
			note_add(o, "GC list '%s' broken at object %zu (0x%" PRIx64 " unreadable)",
				 name, here, obj);
			return 0;
		}
		/* Collectable types only: string 4 to upvalue/proto 10. */
		if ((tt & 0x0f) < 4 || (tt & 0x0f) > 10) {
			o->partial = true;
			note_add(o, "GC list '%s' broken at object %zu (0x%" PRIx64 ": tag 0x%x is no object type)",
				 name, here, obj, tt);
			return 0;
		}
		o->objects++;
		here++;
		if (obj == mainthread)
			seen_main = true;
		last = obj;
		/* Only the threads that validate are kept: a list can claim
		 * any number of thread objects, and what is kept must stay
		 * within the core's size. */
		if ((tt & 0x3f) == TAG_THREAD && obj != mainthread) {
			struct lc_lstate ts;

			if (lc_lua_state_read(o->ctx, obj, &ts) < 0 ||
			    ts.g != o->g) {
				/* The first few are listed as damaged. */
				if (o->nbad++ < LC_VM_LISTED_DAMAGED &&
				    push_u64(&o->bad, &o->nb, &o->bcap, obj) < 0)
					return -1;
			}
			else if (o->n == LC_VM_MAX_THREADS)
				o->over++;
			else if (push_u64(&o->threads, &o->n, &o->cap, obj) < 0)
				return -1;
		}
		obj = next;
		if (obj && obj == saved) {
			o->partial = true;
			note_add(o, "GC list '%s' is cyclic (back at 0x%" PRIx64 " after %zu objects)",
				 name, obj, here);
			return 0;
		}
		if (++lam == power) {
			saved = obj;
			power *= 2;
			lam = 0;
		}
	}
	if (want_reg && last != w->registry) {
		o->partial = true;
		note_add(o, "GC list '%s' ends after %zu objects, not with the registry, which ends it: a link is damaged and the objects after it are missing",
			 name, here);
	}
	if (want_main && !seen_main) {
		o->partial = true;
		note_add(o, "GC list '%s' ends after %zu objects without the main thread, which ends it: a link is damaged and the objects after it are missing",
			 name, here);
	}
	return 0;
}

/* ---- VMs ---- */

static const char *gckind_name(const struct lc_layout *l, int kind,
			       int emergency)
{
	switch (l->major) {
	case 501:
		return "incremental";
	case 502:
		return kind == 0 ? "incremental" : kind == 1 ? "emergency" :
		       kind == 2 ? "generational" : "?";
	case 503:
		return kind == 0 ? "incremental" : kind == 1 ? "emergency" :
		       "?";
	default:
		if (kind == 0)
			return emergency > 0 ? "incremental (emergency)" :
			       "incremental";
		if (kind == 1)
			return emergency > 0 ? "generational (emergency)" :
			       "generational";
		/* 5.5 KGC_GENMAJOR: generational, in a major collection */
		if (kind == 2 && l->major >= 505)
			return emergency > 0 ? "generational major (emergency)" :
			       "generational major";
		return "?";
	}
}

/* A 5.5 GC parameter as collectgarbage("param") gives it: the
 * floating-point byte p (4-bit mantissa, exponent in excess 7, like
 * lobject.c:luaO_applyparam) applied to 100, capped at INT_MAX. */
static int gcparam55(uint8_t p)
{
	int64_t m = p & 0xf, e = p >> 4, x = 100;

	if (e > 0) {
		e--;
		m += 0x10;
	}
	e -= 7;
	if (e >= 0) {
		x = (x * m) << e;	/* at most 100 * 31 << 8 */
	} else {
		x = (x * m) >> -e;
	}
	return x > INT32_MAX ? INT32_MAX : (int)x;
}

static void decode_gc(struct lc_lua_ctx *ctx, uint64_t g, struct lc_vm *vm,
		      struct walk_out *o)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	int64_t v;
	int kind;

	if (lc_lua_read_sfield(ctx, g, LC_HAS(l->Gx.GCtotalbytes) ?
			       l->Gx.GCtotalbytes : l->Gx.totalbytes, &v) == 0)
		vm->totalbytes = v;
	if (LC_HAS(l->Gx.GCdebt) && lc_lua_read_sfield(ctx, g, l->Gx.GCdebt, &v) == 0)
		vm->gcdebt = v;
	if (LC_HAS(l->Gx.GCestimate) &&
	    lc_lua_read_sfield(ctx, g, l->Gx.GCestimate, &v) == 0)
		vm->gcestimate = v;
	else if (LC_HAS(l->Gx.estimate) &&
		 lc_lua_read_sfield(ctx, g, l->Gx.estimate, &v) == 0)
		vm->gcestimate = v;
	/* lstate.h gettotalbytes: 5.2-5.4 totalbytes + GCdebt, 5.5
	 * GCtotalbytes - GCdebt (the debt is counted but not allocated);
	 * 5.1 counts totalbytes itself. */
	/* (In unsigned arithmetic: damaged counts may overflow.) */
	if (LC_HAS(l->Gx.GCtotalbytes))
		vm->memory = (int64_t)((uint64_t)vm->totalbytes -
				       (uint64_t)vm->gcdebt);
	else
		vm->memory = (int64_t)((uint64_t)vm->totalbytes +
				       (l->major >= 502 ? (uint64_t)vm->gcdebt : 0));

	vm->gcstate = rd_int_or(ctx, g, l->G.gcstate, -1);
	vm->gcstate_name = lc_vm_gcstate_name(l->major, vm->gcstate);
	if (!vm->gcstate_name) {
		vm->gcstate_name = "?";
		o->partial = true;
		note_add(o, "gcstate %d is not one of Lua %s's", vm->gcstate,
			 l->version);
	}
	kind = rd_int_or(ctx, g, l->Gx.gckind, 0);
	vm->gckind = gckind_name(l, kind,
				 rd_int_or(ctx, g, l->Gx.gcemergency, 0));

	vm->gcpause = rd_int_or(ctx, g, l->Gx.gcpause, -1);
	vm->gcstepmul = rd_int_or(ctx, g, l->Gx.gcstepmul, -1);
	vm->gcstepsize = rd_int_or(ctx, g, l->Gx.gcstepsize, -1);
	vm->genminormul = rd_int_or(ctx, g, l->Gx.genminormul, -1);
	vm->genmajormul = rd_int_or(ctx, g, l->Gx.genmajormul, -1);
	if (LC_HAS(l->Gx.gcparams)) {
		/* 5.5: lua.h LUA_GCP* index an array of floating-point
		 * bytes; collectgarbage("param") returns each applied to
		 * 100 (lapi.c).  genmajormul has no 5.5 counterpart. */
		uint8_t gp[6];

		if (l->Gx.gcparams.size >= sizeof(gp) &&
		    lc_read(lc_lua_mem(ctx), g + (uint64_t)l->Gx.gcparams.off,
			    gp, sizeof(gp)) == 0) {
			vm->genminormul = gcparam55(gp[0]);
			vm->gcpause = gcparam55(gp[3]);
			vm->gcstepmul = gcparam55(gp[4]);
			vm->gcstepsize = gcparam55(gp[5]);
		}
		vm->genmajormul = -1;
	} else if (l->major == 504) {
		/* lgc.h getgcparam: stored divided by 4. */
		if (vm->gcpause >= 0)
			vm->gcpause *= 4;
		if (vm->gcstepmul >= 0)
			vm->gcstepmul *= 4;
		if (vm->genmajormul >= 0)
			vm->genmajormul *= 4;
	} else {
		vm->gcstepsize = vm->genminormul = vm->genmajormul = -1;
	}
}

/* Does a scanned thread candidate look alive?  Its GC link is NULL or
 * leads to a Lua object header: a freed block has allocator links there
 * (glibc mangles them, or they point into its arenas, whose "tag" byte is
 * that of an aligned pointer). */
static bool candidate_alive(struct lc_lua_ctx *ctx, uint64_t a)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	uint64_t next;
	uint8_t tt;

	if (lc_read_u64(t, a + (uint64_t)l->Lx.next.off, &next) < 0)
		return false;
	if (!next)
		return true;
	if ((next & 7) || !lc_memory_is_data(t, next, 16) ||
	    lc_read_u8(t, next + (uint64_t)l->L.tt.off, &tt) < 0)
		return false;
	return (tt & 0x0f) >= 4 && (tt & 0x0f) <= 10;
}

static struct lc_error *decode_impl(struct lc_lua_ctx *ctx, uint64_t g,
				    size_t max_objects, bool scanned,
				    const uint64_t *cands, size_t ncands,
				    struct lc_vm *vm);
static void th_note(struct lc_luathread *th, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A thread object of the VM at g that does not validate as a lua_State:
 * listed as damaged. */
static void damaged_thread(struct lc_luathread *bt, uint64_t a, uint64_t g)
{
	bt->addr = a;
	bt->g = g;
	bt->status = "damaged";
	bt->raw_status = -1;
	bt->errorjmp_status = -1;
	bt->topslot = -1;
	th_note(bt, "a thread object of this VM that does not validate as a lua_State (its stack, CallInfo or state fields are damaged)");
}

struct lc_error *lc_vm_decode_max(struct lc_lua_ctx *ctx, uint64_t g,
				  size_t max_objects, struct lc_vm *vm)
{
	return decode_impl(ctx, g, max_objects, false, NULL, 0, vm);
}

struct lc_error *lc_vm_decode_scanned(struct lc_lua_ctx *ctx, uint64_t g,
				      const uint64_t *cands, size_t ncands,
				      struct lc_vm *vm)
{
	return decode_impl(ctx, g, LC_VM_MAX_OBJECTS, true, cands, ncands, vm);
}

/* Every thread value on a listed thread's stack is a live thread of
 * this VM, so it is on the GC lists too: one that is not was lost to a
 * damaged link (a list that skips objects still ends where it should).
 * Slots are read in bulk, at most REF_BUDGET of them in all. */
#define REF_BUDGET	(1u << 22)
#define REF_CHUNK	4096

static int check_stack_refs(struct lc_lua_ctx *ctx, struct lc_vm *vm,
			    struct walk_out *o)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	uint32_t sz = l->sz_stack_slot;
	uint8_t want = l->major == 501 ? 8 : 0x48;	/* LUA_TTHREAD, ctb'd */
	uint64_t *known, first = 0, from = 0;
	uint8_t *buf;
	size_t budget = REF_BUDGET, nmiss = 0;

	if (!sz || sz > 64 || l->tv.tt.off < 0 || l->tv.value.off < 0 ||
	    (uint32_t)l->tv.tt.off >= sz || (uint32_t)l->tv.value.off + 8 > sz)
		return 0;
	known = malloc((vm->nthreads + 1) * sizeof(*known));
	buf = malloc((size_t)REF_CHUNK * sz);
	if (!known || !buf) {
		free(known);
		free(buf);
		return -1;
	}
	for (size_t i = 0; i < vm->nthreads; i++)
		known[i] = vm->threads[i].addr;
	qsort(known, vm->nthreads, sizeof(*known), cmp_u64);
	for (size_t i = 0; i < vm->nthreads && budget; i++) {
		const struct lc_luathread *th = &vm->threads[i];
		uint64_t n;

		if (!th->stack || th->top < th->stack ||
		    (th->top - th->stack) % sz)
			continue;
		n = (th->top - th->stack) / sz;
		if (n > budget)
			n = budget;
		budget -= n;
		for (uint64_t at = 0; at < n; at += REF_CHUNK) {
			size_t k = n - at < REF_CHUNK ? (size_t)(n - at) : REF_CHUNK;

			if (lc_read(t, th->stack + at * sz, buf, k * sz) < 0)
				break;
			for (size_t j = 0; j < k; j++) {
				const uint8_t *s = buf + j * sz;
				uint64_t v;

				if (s[l->tv.tt.off] != want)
					continue;
				memcpy(&v, s + l->tv.value.off, 8);
				if (!v || bsearch(&v, known, vm->nthreads,
						  sizeof(*known), cmp_u64))
					continue;
				if (!nmiss++) {
					first = v;
					from = th->addr;
				}
			}
		}
	}
	if (nmiss && vm->nthreads < LC_VM_MAX_THREADS) {
		o->partial = true;
		if (nmiss == 1)
			note_add(o, "a thread value on the stack of 0x%" PRIx64 " names 0x%" PRIx64 ", a thread not on the GC lists: a list link is damaged and objects are missing",
				 from, first);
		else
			note_add(o, "%zu thread values on the stacks name threads not on the GC lists (the first, on the stack of 0x%" PRIx64 ", names 0x%" PRIx64 "): a list link is damaged and objects are missing",
				 nmiss, from, first);
	}
	free(known);
	free(buf);
	return 0;
}

static struct lc_error *decode_impl(struct lc_lua_ctx *ctx, uint64_t g,
				    size_t max_objects, bool scanned,
				    const uint64_t *cands, size_t ncands,
				    struct lc_vm *vm)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	struct walk_out o = { .ctx = ctx, .g = g, .max = max_objects };
	/* A core's headers are read through its mapping; what a callback
	 * serves, through reads. */
	struct walker w = { .t = t, .mapped = !lc_memory_has_space(t),
			    .major = l->major };
	struct lc_lstate st;
	struct lc_tvalue reg;
	uint64_t mainthread, *sorted = NULL;
	size_t nbad = 0, ndup = 0;
	bool *seen = NULL;

	memset(vm, 0, sizeof(*vm));
	vm->g = g;
	vm->gcstate = -1;
	vm->gcpause = vm->gcstepmul = vm->gcstepsize = -1;
	vm->genminormul = vm->genmajormul = -1;
	if ((!LC_HAS(l->G.mainthread) && !LC_HAS(l->G.mainth)) ||
	    !LC_HAS(l->Lx.next))
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"the layout of global_State in %s is unknown",
			l->module_path ? l->module_path : "the Lua module");
	if (lc_lua_mainthread(ctx, g, &mainthread) < 0)
		return lc_error_fault(g + (uint64_t)l->G.mainthread.off,
				      "global_State");
	if (lc_lua_state_read(ctx, mainthread, &st) < 0 || st.g != g)
		return lc_error_create(LC_ERR_CORRUPT,
			"0x%" PRIx64 " is not a global_State: its mainthread 0x%" PRIx64 " is not a lua_State pointing back to it",
			g, mainthread);
	vm->mainthread = mainthread;
	if (LC_HAS(l->G.l_registry) &&
	    lc_lua_read_tvalue(ctx, g + (uint64_t)l->G.l_registry.off,
			       &reg) == 0 && (reg.tag & 0x0f) == TAG_TABLE)
		vm->registry = reg.value;
	decode_gc(ctx, g, vm, &o);
	w.registry = vm->registry;

	/* Every thread object on the GC lists.  Threads are only ever linked
	 * into rootgc (5.1) / allgc (5.2+): lua_setmetatable gives only
	 * tables and userdata finalizers, and fixedgc holds strings; the
	 * other lists are walked anyway.  In 5.4 the generational sublists
	 * (survival, old1, reallyold) are tails of allgc, finobjsur... of
	 * finobj.  5.1 and 5.4 keep the main thread on rootgc/allgc too. */
	w.next_off = (uint32_t)l->Lx.next.off;
	w.tt_off = (uint32_t)l->L.tt.off;
	w.hdr_len = (w.next_off + 8 > w.tt_off + 1 ? w.next_off + 8 :
		     w.tt_off + 1);
	if (w.hdr_len > 64)
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"unexpected CommonHeader layout in %s",
			l->module_path ? l->module_path : "the Lua module");
	if (scanned) {
		/* Threads from the memory scan: those whose l_G is this VM
		 * and that look alive; validated below like listed ones. */
		for (size_t i = 0; i < ncands; i++) {
			uint64_t lg;

			if (cands[i] == mainthread ||
			    lc_read_u64(t, cands[i] + (uint64_t)l->L.l_G.off,
					&lg) < 0 || lg != g ||
			    !candidate_alive(ctx, cands[i]))
				continue;
			/* Freed threads keep their header, l_G and status
			 * (lstate.c freestack resets ci to base_ci): what
			 * does not validate, or says yielded with no frame,
			 * is taken for one of them (or for a copy a C
			 * function made).  A damaged thread still on a GC
			 * list is found by the walk below, and listed. */
			struct lc_lstate cs;

			if (lc_lua_state_read(ctx, cands[i], &cs) < 0 ||
			    (cs.status == ST_YIELD && !lc_lua_state_active(&cs)))
				continue;
			if (push_u64(&o.threads, &o.n, &o.cap, cands[i]) < 0)
				goto nomem;
		}
		/* The GC lists too, as a cross-check: a thread whose own
		 * link is damaged fails the scan's liveness test but is
		 * still on its list, and a damaged link shows there.  The
		 * scan saw every object, so the walk's cap is no loss. */
		{
			struct walk_out lo = { .ctx = ctx, .g = g,
					       .max = max_objects };

			if (walk_list(&w, g, mainthread, l->Gx.rootgc, "rootgc", &lo) < 0 ||
			    walk_list(&w, g, mainthread, l->Gx.allgc, "allgc", &lo) < 0) {
				walk_out_free(&lo);
				goto nomem;
			}
			/* Its damaged threads are this VM's. */
			free(o.bad);
			o.bad = lo.bad;
			o.nb = lo.nb;
			o.bcap = lo.bcap;
			o.nbad = lo.nbad;
			lo.bad = NULL;
			size_t nscan = o.n;

			if (w.mapped)
				walker_release(&w);
			if (nscan)
				qsort(o.threads, nscan, sizeof(*o.threads), cmp_u64);
			for (size_t i = 0; i < lo.n; i++)
				if (lo.threads[i] != mainthread &&
				    !(nscan && bsearch(&lo.threads[i], o.threads, nscan,
						       sizeof(*o.threads), cmp_u64)) &&
				    push_u64(&o.threads, &o.n, &o.cap, lo.threads[i]) < 0) {
					walk_out_free(&lo);
					goto nomem;
				}
			if (lo.partial && !lo.stop) {
				o.partial = true;
				if (lo.note.len)
					note_add(&o, "%.*s", (int)lo.note.len, lo.note.buf);
			}
			walk_out_free(&lo);
		}
	} else {
		if (walk_list(&w, g, mainthread, l->Gx.rootgc, "rootgc", &o) < 0 ||
		    walk_list(&w, g, mainthread, l->Gx.allgc, "allgc", &o) < 0 ||
		    walk_list(&w, g, mainthread, l->Gx.finobj, "finobj", &o) < 0 ||
		    walk_list(&w, g, mainthread, l->Gx.tobefnz, "tobefnz", &o) < 0 ||
		    walk_list(&w, g, mainthread, l->Gx.fixedgc, "fixedgc", &o) < 0)
			goto nomem;
		if (w.mapped)
			walker_release(&w);
	}

	/* Main thread first, then the others each once. */
	vm->threads = calloc(o.n + o.nb + 1, sizeof(*vm->threads));
	sorted = malloc((o.n + 1) * sizeof(*sorted));
	seen = calloc(o.n + 1, sizeof(*seen));
	if (!vm->threads || !sorted || !seen)
		goto nomem;
	lc_luathread_decode(ctx, &st, &vm->threads[vm->nthreads++]);
	if (o.n) {	/* o.threads is NULL when there is none */
		memcpy(sorted, o.threads, o.n * sizeof(*sorted));
		qsort(sorted, o.n, sizeof(*sorted), cmp_u64);
	}
	for (size_t i = o.n; i-- > 0;) {
		uint64_t a = o.threads[i];
		uint64_t *p = bsearch(&a, sorted, o.n, sizeof(*sorted),
				      cmp_u64);
		struct lc_lstate ts;
		size_t k;

		/* The first of equal keys stands for all of them. */
		while (p && p > sorted && p[-1] == a)
			p--;
		k = p ? (size_t)(p - sorted) : 0;
		if (seen[k]) {
			ndup++;
			continue;
		}
		seen[k] = true;
		if (lc_lua_state_read(ctx, a, &ts) < 0 || ts.g != g) {
			nbad++;
			damaged_thread(&vm->threads[vm->nthreads++], a, g);
			continue;
		}
		lc_luathread_decode(ctx, &ts, &vm->threads[vm->nthreads++]);
	}
	/* The GC lists' thread objects that did not validate, each once. */
	for (size_t i = 0; i < o.nb; i++) {
		bool again = false;

		for (size_t j = 0; j < i && !again; j++)
			again = o.bad[j] == o.bad[i];
		if (!again)
			damaged_thread(&vm->threads[vm->nthreads++], o.bad[i], g);
	}
	/* Whatever found them (GC lists, memory scan), list them in one
	 * order: by address. */
	if (vm->nthreads > 2)
		qsort(vm->threads + 1, vm->nthreads - 1, sizeof(*vm->threads),
		      cmp_luathread);
	nbad += o.nbad;
	if (o.over) {
		o.partial = true;
		note_add(&o, "%zu more thread objects than the %d listed",
			 o.over, LC_VM_MAX_THREADS);
	}
	if (nbad) {
		o.partial = true;
		note_add(&o, "%zu thread object%s on the GC lists do%s not validate as lua_State of this VM",
			 nbad, nbad == 1 ? "" : "s", nbad == 1 ? "es" : "");
	}
	if (ndup) {
		o.partial = true;
		note_add(&o, "%zu thread object%s linked more than once", ndup,
			 ndup == 1 ? "" : "s");
	}
	if (check_stack_refs(ctx, vm, &o) < 0)
		goto nomem;
	for (size_t i = 0; i < vm->nthreads; i++)
		if (vm->threads[i].partial)
			o.partial = true;
	vm->partial = o.partial;
	vm->note = o.note.len ? lc_strbuf_steal(&o.note) : NULL;
	walk_out_free(&o);
	free(sorted);
	free(seen);
	return NULL;

nomem:
	walk_out_free(&o);
	free(sorted);
	free(seen);
	lc_vm_clear(vm);
	return &lc_error_nomem;
}

struct lc_error *lc_vm_decode(struct lc_lua_ctx *ctx, uint64_t g,
			      struct lc_vm *ret)
{
	return lc_vm_decode_max(ctx, g, LC_VM_MAX_OBJECTS, ret);
}

/* ---- one lua_State ---- */

#define LC_MAX_ERRORJMPS	4096	/* nested pcall/resume depth, at most */

static void th_note(struct lc_luathread *th, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void th_note(struct lc_luathread *th, const char *fmt, ...)
{
	struct lc_strbuf sb = { 0 };
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	th->partial = true;
	if (th->note) {
		lc_strbuf_append(&sb, th->note, strlen(th->note));
		lc_strbuf_append(&sb, "; ", 2);
	}
	lc_strbuf_append(&sb, buf, strlen(buf));
	free(th->note);
	th->note = lc_strbuf_steal(&sb);
}

/* CallInfos above the base one (5.1: array index; 5.2+: previous links,
 * each confirmed by the next link back). */
static long ci_depth(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		     struct lc_luathread *th)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_ci_cursor cur = { 0 };
	uint64_t ci = st->ci;
	long n = 0;

	if (l->major == 501)
		return l->sz_callinfo ?
		       (long)((st->ci - st->base_ci) / l->sz_callinfo) : 0;
	while (ci != st->base_ci) {
		uint64_t at = ci;
		int k;

		if (n >= LC_MAX_CI) {
			th_note(th, "more than %d CallInfos", LC_MAX_CI);
			break;
		}
		k = lc_lua_ci_prev(ctx, st, &cur, at, &ci);
		if (k < 0) {
			th_note(th, "%s at 0x%" PRIx64, lc_lua_ci_why(k), at);
			break;
		}
		n++;
	}
	return n;
}

/* lua_gettop of a thread at its base level (lapi.c: top - (func + 1); 5.1
 * top - base). */
static long base_gettop(struct lc_lua_ctx *ctx, const struct lc_lstate *st)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint64_t slot = l->sz_stack_slot ? l->sz_stack_slot : 16;
	uint64_t base;

	if (l->major == 501) {
		if (lc_read_u64(lc_lua_mem(ctx),
				st->base_ci + (uint64_t)l->ci.base.off,
				&base) < 0 || base < st->stack)
			base = st->stack + slot;
	} else {
		uint64_t func;

		if (lc_lua_read_stkid(ctx, st->base_ci, l->ci.func, st->stack,
				      &func) < 0 || func < st->stack)
			func = st->stack;
		base = func + slot;
	}
	return st->top >= base ? (long)((st->top - base) / slot) :
	       -(long)((base - st->top) / slot);
}

static long count_openupval(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			    struct lc_luathread *th)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	uint64_t uv, saved;
	size_t power = 1, lam = 0;
	long n = 0;

	if (!LC_HAS(l->L.openupval) || !LC_HAS(l->uvx.open_next))
		return -1;
	if (lc_read_u64(t, st->addr + (uint64_t)l->L.openupval.off, &uv) < 0)
		return -1;
	saved = uv;
	while (uv) {
		if (n >= LC_VM_MAX_OPENUPVAL) {
			th_note(th, "more than %d open upvalues",
				LC_VM_MAX_OPENUPVAL);
			break;
		}
		if (lc_read_u64(t, uv + (uint64_t)l->uvx.open_next.off,
				&uv) < 0) {
			th_note(th, "open upvalue list broken after %ld", n);
			break;
		}
		n++;
		if (uv && uv == saved) {
			th_note(th, "open upvalue list is cyclic");
			break;
		}
		if (++lam == power) {
			saved = uv;
			power *= 2;
			lam = 0;
		}
	}
	return n;
}


void lc_luathread_decode(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			 struct lc_luathread *th)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	uint64_t slot = l->sz_stack_slot ? l->sz_stack_slot : 16;
	uint64_t v;
	bool active = lc_lua_state_active(st);

	memset(th, 0, sizeof(*th));
	th->addr = st->addr;
	th->g = st->g;
	th->is_main = st->addr == st->mainthread;
	th->raw_status = st->status;
	th->stack = st->stack;
	th->top = st->top;
	th->stack_last = st->stack_last;
	th->stacksize = (long)((st->stack_last - st->stack) / slot);
	th->topslot = (long)((st->top - st->stack) / slot);
	th->ci_depth = ci_depth(ctx, st, th);

	/* A status no release has (lua.h: LUA_OK 0 to LUA_ERRERR, 5 in 5.1
	 * and 5.4+, 6 in 5.2 and 5.3 after LUA_ERRGCMM), or a yield with
	 * no frame that yielded, is damage. */
	if (st->status < 0 ||
	    st->status > (l->major == 502 || l->major == 503 ? 6 : 5))
		th_note(th, "status %d is no thread status", st->status);
	else if (st->status == ST_YIELD && !active)
		th_note(th, "status says yielded, but the thread has no frame that yielded");
	/* lcorolib.c auxstatus (5.1 costatus). */
	if (st->status == ST_YIELD)
		th->status = "suspended";
	else if (st->status != 0)
		th->status = "error";
	else if (active)
		th->status = "normal";	/* or running: the report decides */
	else if (th->is_main)
		th->status = "idle";
	else
		th->status = base_gettop(ctx, st) > 0 ? "suspended" : "dead";

	/* C calls and non-yieldable calls. */
	th->nCcalls_raw = st->nCcalls;
	switch (l->major) {
	case 501: {
		uint64_t base = 0;

		th->ccalls = st->nCcalls;
		/* lua_yield refuses when nCcalls > baseCcalls; without
		 * baseCcalls (5.1.1) when nCcalls > 0, resume's start. */
		if (th->is_main)
			th->nny = 1;
		else if (!LC_HAS(l->L.baseCcalls) ||
			 lc_lua_read_field(ctx, st->addr, l->L.baseCcalls,
					   &base) == 0)
			th->nny = st->nCcalls > base;
		break;
	}
	case 502:
	case 503:
		th->ccalls = st->nCcalls;
		if (lc_lua_read_field(ctx, st->addr, l->L.nny, &v) == 0)
			th->nny = (unsigned)v;
		break;
	default:
		th->nny = st->nCcalls >> 16;
		if (lc_lua_state_ccalls(ctx, st, &th->ccalls) < 0)
			th_note(th, "global_State.Cstacklimit unreadable");
		break;
	}

	/* The error recovery point (ldo.c struct lua_longjmp). */
	if (LC_HAS(l->L.errorJmp) &&
	    lc_read_u64(t, st->addr + (uint64_t)l->L.errorJmp.off,
			&th->errorjmp) == 0 && th->errorjmp) {
		int64_t s;

		th->errorjmp_status = -1;
		if (LC_HAS(l->lj.status) &&
		    lc_lua_read_sfield(ctx, th->errorjmp, l->lj.status, &s) == 0)
			th->errorjmp_status = (int)s;
		/* The chain of recovery points (nested pcalls and resumes),
		 * each a struct lua_longjmp on a machine stack: every link
		 * must be readable; bounded, as it may loop. */
		if (LC_HAS(l->lj.previous)) {
			uint64_t j = th->errorjmp;
			unsigned n = 0;

			for (; j && n < LC_MAX_ERRORJMPS; n++) {
				uint64_t prev;

				if ((j & 7) || lc_read_u64(t, j + (uint64_t)l->lj.previous.off,
							   &prev) < 0) {
					th_note(th, "errorJmp chain broken: 0x%" PRIx64
						" (link %u) is unreadable", j, n);
					break;
				}
				j = prev;
			}
			if (j && n == LC_MAX_ERRORJMPS)
				th_note(th, "errorJmp chain longer than %d links (a loop?)",
					LC_MAX_ERRORJMPS);
		}
		th->errorjmp_suspicious = !th->is_main &&
			(st->status == ST_YIELD || !active);
	}

	/* Hooks. */
	if (LC_HAS(l->L.hook) &&
	    lc_read_u64(t, st->addr + (uint64_t)l->L.hook.off, &th->hook) == 0)
		th->hook_name = lc_strdup_or_null(lc_program_symbol(lc_lua_program(ctx), th->hook));
	th->hookmask = rd_int_or(ctx, st->addr, l->L.hookmask, 0);
	th->basehookcount = rd_int_or(ctx, st->addr, l->L.basehookcount, 0);
	th->hookcount = rd_int_or(ctx, st->addr, l->L.hookcount, 0);
	th->allowhook = rd_int_or(ctx, st->addr, l->L.allowhook, 0);

	th->openupval = count_openupval(ctx, st, th);
	if (LC_HAS(l->L.tbclist) &&
	    lc_lua_read_stkid(ctx, st->addr, l->L.tbclist, st->stack, &v) == 0 &&
	    v != st->stack)
		th->tbclist = v;
}
