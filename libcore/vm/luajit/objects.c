/* The heap of a LuaJIT 2.1 VM: every object with the size its free
 * function frees, and the references out of each (vm/vm.h heap_walk,
 * heap_refs, heap_class, heap_string; family.c names stack slots by
 * the frames' locals).
 *
 * Where objects live (lj_gc.c, lj_str.c, lj_udata.c): g->gc.root holds
 * every object but strings and open upvalues (userdata after the main
 * thread, which ends it); the string table's chains (g->str.tab, whose
 * slots keep a flag in bit 0: lj_str.c); g->gc.mmudata, a circular
 * list of userdata and cdata whose finalizers are due; each thread's
 * open upvalues (L->openupval).  Sizes as gc_freefunc[] frees them:
 * lj_str_free (lj_str_size), lj_func_freeuv, lj_state_free (the stack
 * and the lua_State; the main thread is part of GG_State),
 * lj_func_freeproto (sizept), lj_func_free (sizeLfunc, sizeCfunc),
 * lj_trace_free, lj_cdata_free (the header: the payload's size is in
 * the FFI's ctype table, not read), lj_tab_free (colocated array or
 * not), lj_udata_free (sizeudata). */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm.h"
#include "vm/luajit/lj.h"
#include "vm/luajit/layout.h"
#include "vm/luajit/objects.h"

#define MAX_STRTAB	(1u << 28)

struct ljwalk {
	struct lc_program *p;
	struct lc_memory *m;
	bool exact;		/* LC_HW_EXACT */
	const struct lc_lj_layout *l;
	lc_hobj_fn *fn;
	void *arg;
	struct lc_hvm *vm;
	size_t max, seen;
	bool stop;
	uint64_t mainthread;
	uint64_t *threads;
	size_t nthreads, cthreads;
	bool nomem;
};

static int rd(struct ljwalk *w, uint64_t obj, struct lc_lj_field f,
	      uint64_t *ret)
{
	return lc_lj_field_u(w->m, obj, f, ret);
}

/* o's size and class from the object at obj of tag gct; -1 when it
 * does not read as one. */
static int describe(struct ljwalk *w, uint64_t obj, unsigned gct,
		    struct lc_hobj *o)
{
	const struct lc_lj_layout *l = w->l;
	uint64_t a = 0, b = 0, c = 0, d = 0;

	memset(o, 0, sizeof(*o));
	o->addr = obj;
	switch (gct) {
	case LC_LJ_TSTR:
		if (rd(w, obj, l->str.len, &a) < 0 || a >= (1ull << 31))
			return -1;
		o->kind = LC_HK_STRING;
		o->len = a;
		/* lj_str.h lj_str_size */
		o->size = l->sz_str + ((a + 4) & ~3ull);
		o->klass = w->exact ? lc_hash_bytes(w->m, obj + l->sz_str, a, obj) :
				      lc_hash_sketch(w->m, obj + l->sz_str, a, obj);
		if (a > 40)
			o->flags = LC_HF_LONG;
		return 0;
	case LC_LJ_TUPVAL:
		o->kind = LC_HK_UPVAL;
		o->size = l->sz_upval;
		return 0;
	case LC_LJ_TTHREAD:
		if (rd(w, obj, l->L.stacksize, &a) < 0 || a > (1u << 28))
			return -1;
		o->kind = LC_HK_THREAD;
		o->len = a;
		o->size = a * 8;
		if (obj == w->mainthread)
			o->flags = LC_HF_MAIN;	/* its lua_State: GG_State's */
		else
			o->size += l->sz_lstate;
		return 0;
	case LC_LJ_TPROTO:
		if (rd(w, obj, l->pt.sizept, &a) < 0 || a > (1u << 30))
			return -1;
		o->kind = LC_HK_PROTO;
		o->size = a;
		if (rd(w, obj, l->pt.sizebc, &b) == 0)
			o->len = b;
		return 0;
	case LC_LJ_TFUNC:
		if (rd(w, obj, l->fn.ffid, &a) < 0 ||
		    rd(w, obj, l->fn.nupvalues, &b) < 0 || b > 255)
			return -1;
		o->len = b;
		if (a == LC_LJ_FF_LUA) {
			o->kind = LC_HK_LFUNC;
			/* lj_obj.h sizeLfunc; funcproto: pc - sizeof(GCproto) */
			o->size = l->sz_funcl - 8 + 8 * b;
			if (rd(w, obj, l->fn.pc, &c) == 0 && c > l->sz_proto)
				o->klass = c - l->sz_proto;
		} else {
			o->kind = LC_HK_CFUNC;
			o->size = l->sz_funcc - 8 + 8 * b;	/* sizeCfunc */
			if (rd(w, obj, l->fn.f, &c) == 0)
				o->klass = c;
		}
		return 0;
	case LC_LJ_TTRACE:
		if (rd(w, obj, l->tr.nins, &a) < 0 || rd(w, obj, l->tr.nk, &b) < 0 ||
		    rd(w, obj, l->tr.nsnap, &c) < 0 ||
		    rd(w, obj, l->tr.nsnapmap, &d) < 0 || a < b ||
		    a - b > (1u << 24) || c > (1u << 20) || d > (1u << 24))
			return -1;
		/* lj_trace.c lj_trace_free */
		o->kind = LC_HK_TRACE;
		o->size = ((l->sz_trace + 7) & ~7u) + (a - b) * LC_LJ_IRINS_SIZE +
			  c * l->snap.size + d * 4;
		return 0;
	case LC_LJ_TCDATA:
		o->kind = LC_HK_CDATA;
		o->size = l->sz_cdata;
		return 0;
	case LC_LJ_TTAB: {
		uint64_t asize, hmask, colo = 0;

		if (rd(w, obj, l->tab.asize, &asize) < 0 ||
		    rd(w, obj, l->tab.hmask, &hmask) < 0 ||
		    asize > (1u << 28) || hmask >= (1u << 28) ||
		    (LC_LJ_HAS(l->tab.colo) && rd(w, obj, l->tab.colo, &colo) < 0))
			return -1;
		o->kind = LC_HK_TABLE;
		o->len = asize;
		o->hsize = hmask ? (uint32_t)hmask + 1 : 0;
		/* lj_tab.c lj_tab_free: the colocated array with the table */
		if ((int8_t)colo)
			o->size = ((uint64_t)colo & 0x7f) * 8 + l->sz_tab;
		else
			o->size = l->sz_tab;
		if (asize && (int8_t)colo <= 0)
			o->size += asize * 8;
		if (hmask)
			o->size += (hmask + 1) * l->sz_node;
		if (rd(w, obj, l->tab.metatable, &c) == 0)
			o->klass = c;
		return 0;
	}
	case LC_LJ_TUDATA:
		if (rd(w, obj, l->ud.len, &a) < 0 || a >= (1ull << 40))
			return -1;
		o->kind = LC_HK_USERDATA;
		o->len = a;
		o->size = l->sz_udata + a;	/* sizeudata */
		if (rd(w, obj, l->ud.metatable, &c) == 0)
			o->klass = c;
		return 0;
	}
	return -1;
}

static int push_thread(struct ljwalk *w, uint64_t L)
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

/* Walk a list by nextgc from first to stop (a circular list's end),
 * bounded, with Brent's cycle check. */
static void walk_from(struct ljwalk *w, uint64_t first, uint64_t stop,
		      unsigned flags, const char *list)
{
	const struct lc_lj_layout *l = w->l;
	uint64_t obj = first & ~7ull, saved = obj;
	size_t power = 1, lam = 0, here = 0;

	while (obj && obj != stop && !w->stop) {
		uint64_t next, gct;
		struct lc_hobj o;

		if (w->seen >= w->max) {
			lc_hvm_note(w->vm, "stopped after %zu objects (in '%s')", w->seen,
			     list);
			w->stop = true;
			return;
		}
		if (rd(w, obj, l->L.nextgc, &next) < 0 ||
		    rd(w, obj, l->L.gct, &gct) < 0) {
			lc_hvm_note(w->vm, "GC list '%s' broken at object %zu (0x%" PRIx64 " unreadable)",
			     list, here, obj);
			return;
		}
		w->seen++;
		if (describe(w, obj, (unsigned)gct, &o) < 0) {
			lc_hvm_note(w->vm, "object 0x%" PRIx64 " on '%s' (tag %u) does not read as one",
			     obj, list, (unsigned)gct);
			return;
		}
		o.flags |= (uint8_t)flags;
		if (o.kind == LC_HK_THREAD && push_thread(w, obj) < 0)
			return;
		w->vm->objects++;
		if (w->fn(w->arg, &o) < 0) {
			w->stop = true;
			return;
		}
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

struct lc_error *lc_lj_heap_walk(struct lc_program *p,
				 const struct lc_lj_layout *l, uint64_t g,
				 size_t max, unsigned flags, lc_hobj_fn *fn,
				 void *arg, struct lc_hvm *ret)
{
	struct ljwalk w = { .p = p, .m = p->mem, .l = l, .fn = fn, .arg = arg,
			    .vm = ret, .max = max,
			    .exact = flags & LC_HW_EXACT };
	uint64_t root, tab, mask = 0, mm;

	memset(ret, 0, sizeof(*ret));
	if (!l->sz_tab || !l->sz_funcl || !l->sz_funcc || !l->sz_udata ||
	    !l->sz_upval || !LC_LJ_HAS(l->L.nextgc) || !LC_LJ_HAS(l->G.gc_root))
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"the LuaJIT layout lacks what a heap walk reads (GCtab, GCfunc, GCudata, GCupval)");
	if (rd(&w, g, l->G.mainthref, &w.mainthread) < 0)
		return lc_error_create(LC_ERR_CORRUPT,
			"0x%" PRIx64 " is no global_State: its main thread is unreadable",
			g);
	w.mainthread &= LC_LJ_GCVMASK;
	{
		uint64_t total = 0;

		rd(&w, g, l->G.gc_total, &total);
		ret->memory = total;
	}
	if (rd(&w, g, l->G.gc_root, &root) < 0) {
		lc_hvm_note(ret, "the head of the GC root list is unreadable");
		root = 0;
	}
	walk_from(&w, root, 0, 0, "gc.root");
	/* the string table's chains */
	if (rd(&w, g, l->G.str_tab, &tab) < 0 || rd(&w, g, l->G.str_mask, &mask) < 0 ||
	    mask >= MAX_STRTAB) {
		lc_hvm_note(ret, "the string table is unreadable");
	} else {
		for (uint64_t i = 0; i <= mask && !w.stop; i++) {
			uint64_t first;

			if (lc_read_u64(w.m, tab + 8 * i, &first) < 0) {
				lc_hvm_note(ret, "the string table's slot %" PRIu64 " is unreadable", i);
				break;
			}
			if (first & ~1ull)
				walk_from(&w, first & ~1ull, 0, 0, "str.tab");
		}
		ret->own = l->sz_gg + 8 * (mask + 1);
	}
	/* userdata and cdata whose finalizers are due: mmudata is the last
	 * of a circular list */
	if (LC_LJ_HAS(l->G.gc_mmudata) && rd(&w, g, l->G.gc_mmudata, &mm) == 0 &&
	    mm && !w.stop) {
		uint64_t first;

		if (rd(&w, mm, l->L.nextgc, &first) == 0) {
			walk_from(&w, first, mm, LC_HF_TOBEFNZ, "gc.mmudata");
			if (!w.stop && first != mm)
				walk_from(&w, mm, first, LC_HF_TOBEFNZ, "gc.mmudata");
			else if (!w.stop)
				walk_from(&w, mm, 0xffffffffffffffffull,
					  LC_HF_TOBEFNZ, "gc.mmudata");
		}
	}
	/* the empty string: in global_State (its bytes are GG_State's) */
	if (LC_LJ_HAS(l->G.strempty) && !w.stop) {
		struct lc_hobj o;

		if (describe(&w, g + (uint64_t)l->G.strempty.off, LC_LJ_TSTR, &o) == 0) {
			o.size = 0;
			o.flags |= LC_HF_FIXED;
			w.vm->objects++;
			if (w.fn(w.arg, &o) < 0)
				w.stop = true;
		}
	}
	/* each thread's open upvalues */
	for (size_t i = 0; i < w.nthreads && !w.stop; i++) {
		uint64_t uv;

		if (rd(&w, w.threads[i], l->L.openupval, &uv) == 0)
			walk_from(&w, uv, 0, LC_HF_OPEN, "openupval");
	}
	free(w.threads);
	if (w.nomem)
		return &lc_error_nomem;
	return NULL;
}

/* The string at s: its bytes (at most max) malloc'd, *len how many. */
static char *str_read(struct lc_memory *m, const struct lc_lj_layout *l,
		      uint64_t s, size_t max, size_t *len)
{
	uint64_t n;
	char *buf;

	*len = 0;
	if (lc_lj_field_u(m, s, l->str.len, &n) < 0 || n >= (1ull << 31))
		return NULL;
	if (n > max)
		n = max;
	buf = malloc(n + 1);
	if (!buf || (n && lc_read(m, s + l->sz_str, buf, n) < 0)) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

char *lc_lj_heap_string(struct lc_program *p, const struct lc_lj_layout *l,
			const struct lc_hobj *o, size_t max, size_t *len)
{
	*len = 0;
	if (o->kind != LC_HK_STRING)
		return NULL;
	return str_read(p->mem, l, o->addr, max, len);
}

/* A table's hash part: the value of string key name, 0 when found. */
static int field_of(struct lc_memory *m, const struct lc_lj_layout *l,
		    uint64_t t, const char *name, uint64_t *ret)
{
	uint64_t node, hmask;
	size_t want = strlen(name);

	if (lc_lj_field_u(m, t, l->tab.node, &node) < 0 ||
	    lc_lj_field_u(m, t, l->tab.hmask, &hmask) < 0 || hmask >= (1u << 20))
		return -1;
	for (uint64_t i = 0; node && i <= hmask; i++) {
		uint64_t n = node + i * l->sz_node, k, v;
		size_t len;
		char *s;

		if (lc_read_u64(m, n + (uint64_t)l->tab.key.off, &k) < 0 ||
		    lc_read_u64(m, n + (uint64_t)l->tab.val.off, &v) < 0)
			return -1;
		/* GC64: a string key's itype (~LJ_TSTR) in the top 17 bits */
		if ((k >> 47) != (0x1ffffu & ~LC_LJ_TSTR))
			continue;
		s = str_read(m, l, k & LC_LJ_GCVMASK, 256, &len);
		if (s && len == want && memcmp(s, name, len) == 0) {
			free(s);
			*ret = v;
			return 0;
		}
		free(s);
	}
	return -1;
}

char *lc_lj_heap_class(struct lc_program *p, const struct lc_lj_layout *l,
		       uint64_t g, enum lc_hkind kind, uint64_t klass)
{
	struct lc_memory *m = p->mem;
	char buf[400];

	if (!klass)
		return NULL;
	if (kind == LC_HK_LFUNC || kind == LC_HK_PROTO) {
		uint64_t cn = 0, line = 0;
		size_t len = 0;
		char *s = NULL;

		if (lc_lj_field_u(m, klass, l->pt.chunkname, &cn) == 0)
			s = str_read(m, l, cn & LC_LJ_GCVMASK, 256, &len);
		lc_lj_field_u(m, klass, l->pt.firstline, &line);
		snprintf(buf, sizeof(buf), "%s:%u",
			 !s ? "?" : (s[0] == '@' || s[0] == '=') ? s + 1 : "[string]",
			 (unsigned)line);
		free(s);
		return strdup(buf);
	}
	if (kind == LC_HK_CFUNC) {
		const char *name = lc_program_symbol(p, klass);

		if (name)
			return strdup(name);
		snprintf(buf, sizeof(buf), "0x%" PRIx64, klass);
		return strdup(buf);
	}
	if (kind == LC_HK_TABLE || kind == LC_HK_USERDATA) {
		uint64_t v, reg;

		if (field_of(m, l, klass, "__name", &v) == 0 &&
		    (v >> 47) == (0x1ffffu & ~LC_LJ_TSTR)) {
			size_t len;
			char *s = str_read(m, l, v & LC_LJ_GCVMASK, 256, &len);

			if (s)
				return s;
		}
		/* luaL_newmetatable: registry[name] = the metatable */
		if (lc_read_u64(m, g + (uint64_t)l->G.registrytv.off, &reg) == 0) {
			uint64_t t = reg & LC_LJ_GCVMASK, node, hmask;

			if (lc_lj_field_u(m, t, l->tab.node, &node) == 0 &&
			    lc_lj_field_u(m, t, l->tab.hmask, &hmask) == 0 &&
			    hmask < (1u << 20)) {
				for (uint64_t i = 0; node && i <= hmask; i++) {
					uint64_t n = node + i * l->sz_node, k, val;
					size_t len;
					char *s;

					if (lc_read_u64(m, n + (uint64_t)l->tab.key.off, &k) < 0 ||
					    lc_read_u64(m, n + (uint64_t)l->tab.val.off, &val) < 0)
						break;
					if ((val & LC_LJ_GCVMASK) != klass ||
					    (k >> 47) != (0x1ffffu & ~LC_LJ_TSTR))
						continue;
					s = str_read(m, l, k & LC_LJ_GCVMASK, 256, &len);
					if (s)
						return s;
				}
			}
		}
	}
	return NULL;
}

/* ---- references ---- */

struct ljrefs {
	struct lc_program *p;
	struct lc_memory *m;
	const struct lc_lj_layout *l;
	uint64_t g;
	lc_href_fn *fn;
	void *arg;
	bool stop;
};

/* The GC object a TValue (GC64) holds: its kind, or -1. */
static int tv_kind(uint64_t tv, uint64_t *obj)
{
	uint32_t it = (uint32_t)(tv >> 47);

	*obj = tv & LC_LJ_GCVMASK;
	switch (0x1ffffu & ~it) {
	case LC_LJ_TSTR: return LC_HK_STRING;
	case LC_LJ_TUPVAL: return LC_HK_UPVAL;
	case LC_LJ_TTHREAD: return LC_HK_THREAD;
	case LC_LJ_TPROTO: return LC_HK_PROTO;
	case LC_LJ_TFUNC: return LC_HK_LFUNC;	/* Lua or C: the index says */
	case LC_LJ_TTRACE: return LC_HK_TRACE;
	case LC_LJ_TCDATA: return LC_HK_CDATA;
	case LC_LJ_TTAB: return LC_HK_TABLE;
	case LC_LJ_TUDATA: return LC_HK_USERDATA;
	default: return -1;
	}
}

static int lref(struct ljrefs *r, uint64_t to, int kind, enum lc_hedge edge,
		bool weak, bool open, int64_t index, const char *name,
		const char *where)
{
	struct lc_href h = { .to = to, .kind = (uint8_t)kind,
			     .edge = (uint8_t)edge, .weak = weak, .open = open,
			     .index = index, .name = name, .where = where };

	if (r->stop || !to)
		return -1;
	if (r->fn(r->arg, &h) < 0) {
		r->stop = true;
		return -1;
	}
	return 0;
}

/* A key (GC64 TValue) as a label. */
static void key_label(struct ljrefs *r, uint64_t k, enum lc_hedge *edge,
		      int64_t *index, char *buf, size_t size)
{
	uint64_t obj;
	int kind = tv_kind(k, &obj);
	uint32_t it = (uint32_t)(k >> 47);

	*index = 0;
	*edge = LC_HE_KEY;
	if (kind == LC_HK_STRING) {
		size_t len;
		char *s = str_read(r->m, r->l, obj, 120, &len);

		if (s && lc_lua_ident(s, len)) {
			*edge = LC_HE_FIELD;
			snprintf(buf, size, "%s", s);
		} else if (s) {
			struct lc_strbuf sb = { 0 };
			char *t;

			lc_strbuf_append(&sb, "\"", 1);
			lc_esc_append(&sb, s, len, LC_ESC_LUA | LC_ESC_QUOTE, SIZE_MAX);
			lc_strbuf_append(&sb, "\"", 1);
			t = lc_strbuf_steal(&sb);
			snprintf(buf, size, "%s", t ? t : "?");
			free(t);
		} else {
			snprintf(buf, size, "string: 0x%" PRIx64, obj);
		}
		free(s);
		return;
	}
	if (it < 0x1fff2u) {		/* a number (LJ_TISNUM: doubles) */
		double d;

		memcpy(&d, &k, 8);
		if (d == (double)(int64_t)d && d > -9e15 && d < 9e15) {
			*edge = LC_HE_INDEX;
			*index = (int64_t)d;
		}
		snprintf(buf, size, "%.14g", d);
		return;
	}
	if (0x1ffffu - it == 1 || 0x1ffffu - it == 2)	/* ~LJ_TFALSE, ~LJ_TTRUE */
		snprintf(buf, size, "%s", 0x1ffffu - it == 2 ? "true" : "false");
	else if (kind >= 0)
		snprintf(buf, size, "%s: 0x%" PRIx64, lc_hkind_name(kind), obj);
	else
		snprintf(buf, size, "0x%" PRIx64, k);
}

static void table_refs(struct ljrefs *r, uint64_t t)
{
	const struct lc_lj_layout *l = r->l;
	uint64_t mt = 0, array = 0, asize = 0, node = 0, hmask = 0, marked = 0;
	bool wk, wv;

	lc_lj_field_u(r->m, t, l->L.marked, &marked);
	wk = marked & 0x08;	/* lj_gc.h LJ_GC_WEAKKEY */
	wv = marked & 0x10;	/* LJ_GC_WEAKVAL */
	if (lc_lj_field_u(r->m, t, l->tab.metatable, &mt) == 0 && mt) {
		uint64_t mode, obj;

		/* the marks say it once a collection traversed the table;
		 * before, its metatable's __mode does */
		if (field_of(r->m, l, mt, "__mode", &mode) == 0 &&
		    tv_kind(mode, &obj) == LC_HK_STRING) {
			size_t len;
			char *s = str_read(r->m, l, obj, 8, &len);

			if (s) {
				wk = wk || strchr(s, 'k');
				wv = wv || strchr(s, 'v');
				free(s);
			}
		}
		lref(r, mt, LC_HK_TABLE, LC_HE_METATABLE, false, false, 0, NULL, NULL);
	}
	if (lc_lj_field_u(r->m, t, l->tab.array, &array) < 0 ||
	    lc_lj_field_u(r->m, t, l->tab.asize, &asize) < 0 ||
	    lc_lj_field_u(r->m, t, l->tab.node, &node) < 0 ||
	    lc_lj_field_u(r->m, t, l->tab.hmask, &hmask) < 0 ||
	    asize > (1u << 28) || hmask >= (1u << 28))
		return;
	for (uint64_t i = 0; i < asize && !r->stop; i++) {
		uint64_t v, obj;
		int k;
		char label[24];

		if (lc_read_u64(r->m, array + 8 * i, &v) < 0)
			return;
		if ((k = tv_kind(v, &obj)) < 0)
			continue;
		snprintf(label, sizeof(label), "%" PRIu64, i);
		lref(r, obj, k, LC_HE_INDEX, wv || wk, false, (int64_t)i, label, NULL);
	}
	for (uint64_t i = 0; node && i <= hmask && !r->stop; i++) {
		uint64_t n = node + i * l->sz_node, kv, vv, ko, vo;
		int kk, vk;
		char label[160];
		enum lc_hedge edge;
		int64_t index;

		if (lc_read_u64(r->m, n + (uint64_t)l->tab.key.off, &kv) < 0 ||
		    lc_read_u64(r->m, n + (uint64_t)l->tab.val.off, &vv) < 0)
			return;
		vk = tv_kind(vv, &vo);
		kk = tv_kind(kv, &ko);
		if ((uint32_t)(vv >> 47) == 0x1ffffu)	/* a nil value: no entry */
			continue;
		if (vk < 0 && kk < 0)
			continue;
		key_label(r, kv, &edge, &index, label, sizeof(label));
		if (vk >= 0)
			lref(r, vo, vk, edge, wv || wk, false, index, label, NULL);
		if (kk >= 0)
			lref(r, ko, kk, LC_HE_ASKEY, wk, false, 0, label, NULL);
	}
}

/* "chunk:firstline" of a proto. */
static void proto_where(struct ljrefs *r, uint64_t pt, char *buf, size_t size)
{
	char *s = lc_lj_heap_class(r->p, r->l, r->g, LC_HK_PROTO, pt);

	snprintf(buf, size, "%s", s ? s : "?");
	free(s);
}

static void func_refs(struct ljrefs *r, const struct lc_hobj *o)
{
	const struct lc_lj_layout *l = r->l;
	uint64_t env = 0;
	char where[300];

	if (o->kind == LC_HK_LFUNC) {
		uint64_t pt = o->klass, uvinfo = 0;
		char names[2048];
		size_t nn = 0;

		proto_where(r, pt, where, sizeof(where));
		/* lj_obj.h proto_uvinfo: the names, one after the other */
		if (pt && lc_lj_field_u(r->m, pt, l->pt.uvinfo, &uvinfo) == 0 &&
		    uvinfo && lc_read(r->m, uvinfo, names, sizeof(names)) == 0)
			nn = sizeof(names);
		for (uint64_t i = 0, at = 0; i < o->len && !r->stop; i++) {
			uint64_t uv, vp, v, obj, closed = 1;
			const char *name = NULL;
			int k;

			if (at < nn && memchr(names + at, 0, nn - at)) {
				name = names + at;
				at += strlen(name) + 1;
			}
			if (lc_read_u64(r->m, o->addr + (uint64_t)l->fn.uvptr.off + 8 * i,
					&uv) < 0)
				return;
			uv &= LC_LJ_GCVMASK;
			if (!uv || lc_lj_field_u(r->m, uv, l->uv.v, &vp) < 0 ||
			    lc_read_u64(r->m, vp, &v) < 0)
				continue;
			lc_lj_field_u(r->m, uv, l->uv.closed, &closed);
			if ((k = tv_kind(v, &obj)) >= 0)
				lref(r, obj, k, LC_HE_UPVALUE, false, !closed,
				     (int64_t)i + 1, name, where);
		}
		if (pt)
			lref(r, pt, LC_HK_PROTO, LC_HE_PROTO, false, false, 0, NULL,
			     where);
	} else {
		const char *sym = lc_program_symbol(r->p, o->klass);

		snprintf(where, sizeof(where), "C function %s", sym ? sym : "?");
		for (uint64_t i = 0; i < o->len && !r->stop; i++) {
			uint64_t v, obj;
			int k;

			if (lc_read_u64(r->m, o->addr + (uint64_t)l->fn.upvalue.off + 8 * i,
					&v) < 0)
				return;
			if ((k = tv_kind(v, &obj)) >= 0)
				lref(r, obj, k, LC_HE_UPVALUE, false, false,
				     (int64_t)i + 1, NULL, where);
		}
	}
	if (lc_lj_field_u(r->m, o->addr, l->fn.env, &env) == 0 && env)
		lref(r, env & LC_LJ_GCVMASK, LC_HK_TABLE, LC_HE_ENV, false, false, 0,
		     NULL, where);
}

static void thread_refs(struct ljrefs *r, uint64_t L)
{
	const struct lc_lj_layout *l = r->l;
	uint64_t stack = 0, top = 0, env = 0;

	if (lc_lj_field_u(r->m, L, l->L.env, &env) == 0 && env)
		lref(r, env & LC_LJ_GCVMASK, LC_HK_TABLE, LC_HE_ENV, false, false, 0,
		     "globals", NULL);
	if (lc_lj_field_u(r->m, L, l->L.stack, &stack) < 0 ||
	    lc_lj_field_u(r->m, L, l->L.top, &top) < 0 || top < stack ||
	    top - stack > (8ull << 24))
		return;
	/* every slot up to top: frames are not told apart (yet) */
	for (uint64_t s = stack; s < top && !r->stop; s += 8) {
		uint64_t v, obj;
		int k;

		if (lc_read_u64(r->m, s, &v) < 0)
			return;
		if ((k = tv_kind(v, &obj)) >= 0)
			lref(r, obj, k, LC_HE_LOCAL, false, false,
			     (int64_t)((s - stack) / 8), NULL, "its stack");
	}
}

static void proto_refs(struct ljrefs *r, uint64_t pt)
{
	const struct lc_lj_layout *l = r->l;
	uint64_t k = 0, n = 0, cn = 0;

	if (lc_lj_field_u(r->m, pt, l->pt.chunkname, &cn) == 0 && cn)
		lref(r, cn & LC_LJ_GCVMASK, LC_HK_STRING, LC_HE_CONST, false, false, 0,
		     "source", NULL);
	if (lc_lj_field_u(r->m, pt, l->pt.k, &k) < 0 ||
	    lc_lj_field_u(r->m, pt, l->pt.sizekgc, &n) < 0 || n > (1u << 20))
		return;
	/* lj_obj.h proto_kgc: GC constants below k, downwards */
	for (uint64_t i = 0; i < n && !r->stop; i++) {
		uint64_t c;
		uint8_t gct;

		if (lc_read_u64(r->m, k - 8 * (i + 1), &c) < 0)
			return;
		c &= LC_LJ_GCVMASK;
		if (!c || lc_read_u8(r->m, c + (uint64_t)l->L.gct.off, &gct) < 0)
			continue;
		lref(r, c, gct == LC_LJ_TPROTO ? LC_HK_PROTO :
			   gct == LC_LJ_TTAB ? LC_HK_TABLE : LC_HK_STRING,
		     LC_HE_CONST, false, false, (int64_t)i + 1,
		     gct == LC_LJ_TPROTO ? "nested function" : "constant", NULL);
	}
}

int lc_lj_heap_refs(struct lc_program *p, const struct lc_lj_layout *l,
		    uint64_t g, const struct lc_hobj *o, lc_href_fn *fn,
		    void *arg)
{
	struct ljrefs r = { .p = p, .m = p->mem, .l = l, .g = g, .fn = fn,
			    .arg = arg };

	if (!o) {
		uint64_t reg = 0, main = 0, env = 0, loaded, obj;
		char name[48];

		if (lc_read_u64(r.m, g + (uint64_t)l->G.registrytv.off, &reg) == 0 &&
		    tv_kind(reg, &obj) == LC_HK_TABLE) {
			reg = obj;
			if (field_of(r.m, l, reg, "_LOADED", &loaded) == 0 &&
			    tv_kind(loaded, &obj) == LC_HK_TABLE)
				lref(&r, obj, LC_HK_TABLE, LC_HE_ROOT, false, false, 0,
				     "_LOADED", NULL);
		} else {
			reg = 0;
		}
		if (lc_lj_field_u(r.m, g, l->G.mainthref, &main) == 0) {
			main &= LC_LJ_GCVMASK;
			if (lc_lj_field_u(r.m, main, l->L.env, &env) == 0 && env)
				lref(&r, env & LC_LJ_GCVMASK, LC_HK_TABLE, LC_HE_ROOT,
				     false, false, 0, "_G", NULL);
		}
		if (reg)
			lref(&r, reg, LC_HK_TABLE, LC_HE_ROOT, false, false, 0,
			     "registry", NULL);
		if (main)
			lref(&r, main, LC_HK_THREAD, LC_HE_ROOT, false, false, 0,
			     "main thread", NULL);
		/* g->gcroot[]: metamethod names, the basic types'
		 * metatables, the default files, the FFI's finalizers */
		for (int64_t i = 0; l->gcroot_max > 0 && i < l->gcroot_max &&
		     i < 256 && !r.stop; i++) {
			uint64_t c;
			uint8_t gct;

			if (lc_read_u64(r.m, g + (uint64_t)l->G.gcroot.off + 8 * (uint64_t)i,
					&c) < 0)
				break;
			c &= LC_LJ_GCVMASK;
			if (!c || lc_read_u8(r.m, c + (uint64_t)l->L.gct.off, &gct) < 0)
				continue;
			snprintf(name, sizeof(name), "the VM's root %" PRId64, i);
			lref(&r, c, gct == LC_LJ_TTAB ? LC_HK_TABLE :
				    gct == LC_LJ_TUDATA ? LC_HK_USERDATA : LC_HK_STRING,
			     LC_HE_ROOT, false, false, 0, name, NULL);
		}
		return 0;
	}
	switch (o->kind) {
	case LC_HK_TABLE:
		table_refs(&r, o->addr);
		break;
	case LC_HK_LFUNC:
	case LC_HK_CFUNC:
		func_refs(&r, o);
		break;
	case LC_HK_USERDATA: {
		uint64_t env = 0;

		if (o->klass)
			lref(&r, o->klass, LC_HK_TABLE, LC_HE_METATABLE, false, false,
			     0, NULL, NULL);
		if (lc_lj_field_u(r.m, o->addr, l->ud.env, &env) == 0 && env)
			lref(&r, env & LC_LJ_GCVMASK, LC_HK_TABLE, LC_HE_ENV, false,
			     false, 0, NULL, NULL);
		break;
	}
	case LC_HK_THREAD:
		thread_refs(&r, o->addr);
		break;
	case LC_HK_PROTO:
		proto_refs(&r, o->addr);
		break;
	case LC_HK_UPVAL: {
		uint64_t vp, v, obj;
		int k;

		if (lc_lj_field_u(r.m, o->addr, l->uv.v, &vp) == 0 &&
		    lc_read_u64(r.m, vp, &v) == 0 && (k = tv_kind(v, &obj)) >= 0)
			lref(&r, obj, k, LC_HE_OTHER, false, false, 0, "value", NULL);
		break;
	}
	default:
		break;
	}
	return 0;
}
