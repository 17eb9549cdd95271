/* LuaJIT values as the report shows them (frames.h lc_lj_value).
 *
 * A GC64 TValue is 8 bytes: a number is a double whose top 17 bits are
 * not all ones above LJ_TISNUM; else those bits, shifted down (itype),
 * are the inverted type tag, and a GC object's address is the low 47
 * bits (lj_obj.h).  Every read is checked; a value that cannot be read
 * whole is marked partial. */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "luacore.h"
#include "prog/program.h"
#include "vm/luajit/frames.h"
#include "vm/luajit/lj.h"
#include "vm/vm.h"

/* lj_obj.h: the inverted type tags (itype) of a GC64 TValue. */
#define IT_NIL		0xffffffffu	/* ~LJ_TNIL */
#define IT_FALSE	0xfffffffeu
#define IT_TRUE		0xfffffffdu
#define IT_LIGHTUD	0xfffffffcu
#define IT_STR		0xfffffffbu
#define IT_THREAD	0xfffffff9u
#define IT_FUNC		0xfffffff7u
#define IT_CDATA	0xfffffff5u
#define IT_TAB		0xfffffff4u
#define IT_UDATA	0xfffffff3u
#define IT_ISNUM	0xfffffff2u	/* ~LJ_TNUMX: itype <= it: a number */

/* Shown of a string: at most this many bytes read, this many shown. */
#define STR_KEEP	4096
#define TEXT_MAX	60

static void set_text(struct lc_value *v, const char *type, char *text)
{
	v->type = type;
	free(v->text);
	v->text = text;
	if (!v->text)
		v->partial = true;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;
	int r;

	va_start(ap, f);
	r = vasprintf(&s, f, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

static void string_value(struct lc_memory *m, const struct lc_lj_layout *l,
			 uint64_t s, struct lc_value *v)
{
	struct lc_strbuf sb = { 0 };
	uint64_t len, gct;
	size_t n;
	char *buf;

	v->addr = s;
	if (lc_lj_field_u(m, s, l->str.gct, &gct) < 0 || gct != LC_LJ_TSTR ||
	    lc_lj_field_u(m, s, l->str.len, &len) < 0) {
		v->partial = true;
		set_text(v, "string", fmt("string: 0x%" PRIx64, s));
		return;
	}
	v->len = (int64_t)len;
	n = len < STR_KEEP ? (size_t)len : STR_KEEP;
	buf = malloc(n + 1);
	if (!buf || lc_read(m, s + l->sz_str, buf, n) < 0) {
		free(buf);
		v->partial = true;
		set_text(v, "string", fmt("string: 0x%" PRIx64, s));
		return;
	}
	buf[n] = '\0';
	v->str = buf;
	v->strlen = n;
	lc_strbuf_append(&sb, "\"", 1);
	if (n == len && lc_esc_width(buf, n, LC_ESC_LUA | LC_ESC_QUOTE,
				     TEXT_MAX) + 2 <= TEXT_MAX) {
		lc_esc_append(&sb, buf, n, LC_ESC_LUA | LC_ESC_QUOTE, TEXT_MAX);
		lc_strbuf_append(&sb, "\"", 1);
	} else {
		lc_esc_append(&sb, buf, n, LC_ESC_LUA | LC_ESC_QUOTE,
			      TEXT_MAX - 5);
		lc_strbuf_append(&sb, "\"...", 4);
	}
	set_text(v, "string", lc_strbuf_steal(&sb));
}

static void function_value(struct lc_program *p, const struct lc_lj_layout *l,
			   uint64_t fn, struct lc_value *v)
{
	struct lc_memory *m = p->mem;
	uint64_t ffid, pc, f, first;
	char src[256];

	v->addr = fn;
	if (lc_lj_field_u(m, fn, l->fn.ffid, &ffid) < 0) {
		v->partial = true;
		set_text(v, "function", fmt("function: 0x%" PRIx64, fn));
		return;
	}
	if (ffid == LC_LJ_FF_LUA) {
		if (lc_lj_field_u(m, fn, l->fn.pc, &pc) == 0 && pc > l->sz_proto &&
		    lc_lj_chunkname(m, l, pc - l->sz_proto, src, sizeof(src)) &&
		    lc_lj_field_u(m, pc - l->sz_proto, l->pt.firstline, &first) == 0) {
			set_text(v, "function", fmt("function: %s:%d", src,
						    (int)(int32_t)first));
			return;
		}
		v->partial = true;
		set_text(v, "function", fmt("function: 0x%" PRIx64, fn));
		return;
	}
	if (ffid > LC_LJ_FF_C) {
		set_text(v, "function", fmt("function: builtin#%u", (unsigned)ffid));
		return;
	}
	if (lc_lj_field_u(m, fn, l->fn.f, &f) == 0) {
		const char *sym = lc_program_symbol(p, f);

		set_text(v, "function", sym ?
			 fmt("function: [C] %s", sym) :
			 fmt("function: [C] 0x%" PRIx64, f));
		return;
	}
	v->partial = true;
	set_text(v, "function", fmt("function: 0x%" PRIx64, fn));
}

/* The TValue whose 8 bytes are raw. */
static void value_raw(struct lc_program *p, const struct lc_lj_layout *l,
		      uint64_t raw, struct lc_value *v)
{
	struct lc_memory *m = p->mem;
	uint64_t gc;
	uint32_t it;

	it = (uint32_t)((int64_t)raw >> 47);
	gc = raw & LC_LJ_GCVMASK;
	if (it <= IT_ISNUM) {
		double d;
		char buf[64];

		memcpy(&d, &raw, sizeof(d));
		snprintf(buf, sizeof(buf), "%.14g", d);
		set_text(v, "number", strdup(buf));
		return;
	}
	switch (it) {
	case IT_NIL:
		set_text(v, "nil", strdup("nil"));
		return;
	case IT_FALSE:
		set_text(v, "boolean", strdup("false"));
		return;
	case IT_TRUE:
		set_text(v, "boolean", strdup("true"));
		return;
	case IT_LIGHTUD:
		v->addr = gc;
		set_text(v, "lightuserdata", fmt("lightuserdata: 0x%" PRIx64, gc));
		return;
	case IT_STR:
		string_value(m, l, gc, v);
		return;
	case IT_THREAD:
		v->addr = gc;
		set_text(v, "thread", fmt("thread: 0x%" PRIx64, gc));
		return;
	case IT_FUNC:
		function_value(p, l, gc, v);
		return;
	case IT_TAB:
		v->addr = gc;
		set_text(v, "table", fmt("table: 0x%" PRIx64, gc));
		return;
	case IT_UDATA:
		v->addr = gc;
		set_text(v, "userdata", fmt("userdata: 0x%" PRIx64, gc));
		return;
	case IT_CDATA:
		v->addr = gc;
		set_text(v, "cdata", fmt("cdata: 0x%" PRIx64, gc));
		return;
	default:
		v->partial = true;
		set_text(v, "?", fmt("(not a value: 0x%016" PRIx64 ")", raw));
	}
}

void lc_lj_value(struct lc_program *p, const struct lc_lj_layout *l,
		 uint64_t addr, struct lc_value *v)
{
	uint64_t raw;

	lc_value_init(v);
	if (lc_read_u64(p->mem, addr, &raw) < 0) {
		v->partial = true;
		set_text(v, "?", fmt("(unreadable at 0x%" PRIx64 ")", addr));
		return;
	}
	value_raw(p, l, raw, v);
}

/* ---- single objects (lua-value) ---- */

/* Table entries read at most, as PUC's (luacore.h lc_object). */
#define OBJECT_ENTRIES	100
#define OBJECT_READS	(1u << 20)

struct elist {
	struct lc_object *o;
	size_t max;
	size_t budget;		/* slots and nodes left to read */
	bool nomem;
};

static struct lc_entry *epush(struct elist *el)
{
	struct lc_entry *p;

	if (el->o->nentries >= el->max) {
		el->o->more++;
		return NULL;
	}
	p = realloc(el->o->entries, (el->o->nentries + 1) * sizeof(*p));
	if (!p) {
		el->nomem = true;
		return NULL;
	}
	el->o->entries = p;
	p = &p[el->o->nentries++];
	memset(p, 0, sizeof(*p));
	return p;
}

/* lj_tab.c: the array part (asize slots from array, t[0] first), then
 * the hash part (hmask + 1 Nodes from node), non-nil values only. */
static void table_entries(struct lc_program *p, const struct lc_lj_layout *l,
			  uint64_t t, struct elist *el)
{
	struct lc_memory *m = p->mem;
	uint64_t array, asize, node, hmask;

	if (lc_lj_field_u(m, t, l->tab.array, &array) < 0 ||
	    lc_lj_field_u(m, t, l->tab.asize, &asize) < 0 ||
	    lc_lj_field_u(m, t, l->tab.node, &node) < 0 ||
	    lc_lj_field_u(m, t, l->tab.hmask, &hmask) < 0 || !l->sz_node) {
		el->o->value.partial = true;
		return;
	}
	el->o->value.len = (int64_t)asize;
	el->o->value.hsize = node ? (int64_t)hmask + 1 : 0;
	for (uint64_t i = 0; i < asize && el->budget && !el->nomem;
	     i++, el->budget--) {
		struct lc_entry *e;
		struct lc_value v;

		lc_lj_value(p, l, array + 8 * i, &v);
		if (strcmp(v.type, "nil") == 0 || !(e = epush(el))) {
			lc_value_deinit(&v);
			continue;
		}
		lc_value_init(&e->key);
		set_text(&e->key, "number", fmt("%" PRIu64, i));
		e->value = v;
	}
	/* (hmask + 1 is a power of two: 0 with an empty hash part.) */
	for (uint64_t i = 0; node && i <= hmask && el->budget && !el->nomem;
	     i++, el->budget--) {
		uint64_t n = node + i * l->sz_node;
		struct lc_entry *e;
		struct lc_value v;

		lc_lj_value(p, l, n + (uint64_t)l->tab.val.off, &v);
		if (strcmp(v.type, "nil") == 0 || !(e = epush(el))) {
			lc_value_deinit(&v);
			continue;
		}
		e->value = v;
		lc_lj_value(p, l, n + (uint64_t)l->tab.key.off, &e->key);
	}
	if (!el->budget)
		el->o->more_bounded = true;
	if (el->nomem)
		el->o->value.partial = true;
}

/* A Lua function's upvalues, named as its proto names them. */
static void closure_upvalues(struct lc_program *p, const struct lc_lj_layout *l,
			     uint64_t fn, struct lc_object *o)
{
	struct lc_memory *m = p->mem;
	uint64_t ffid, pc, nup;

	if (!LC_LJ_HAS(l->fn.uvptr) || !LC_LJ_HAS(l->uv.v) ||
	    lc_lj_field_u(m, fn, l->fn.ffid, &ffid) < 0 || ffid != LC_LJ_FF_LUA ||
	    lc_lj_field_u(m, fn, l->fn.pc, &pc) < 0 || pc <= l->sz_proto ||
	    lc_lj_field_u(m, fn, l->fn.nupvalues, &nup) < 0)
		return;
	o->upvalues = calloc(nup ? nup : 1, sizeof(*o->upvalues));
	if (!o->upvalues) {
		o->value.partial = true;
		return;
	}
	for (uint64_t k = 0; k < nup; k++) {
		struct lc_var *var = &o->upvalues[o->nupvalues++];
		uint64_t uv, gct, v;
		char name[256];
		bool bad = false;

		var->kind = "upvalue";
		var->index = (int)k + 1;
		if (!lc_lj_uvname(m, l, pc - l->sz_proto, (uint32_t)k, name,
				  sizeof(name), &bad) || !*name)
			snprintf(name, sizeof(name), "?");
		if (bad)
			o->value.partial = true;
		var->name = strdup(name);
		if (lc_read_u64(m, fn + (uint64_t)l->fn.uvptr.off + 8 * k, &uv) == 0 &&
		    (uv &= LC_LJ_GCVMASK) &&
		    lc_lj_field_u(m, uv, l->uv.gct, &gct) == 0 &&
		    gct == LC_LJ_TUPVAL && lc_lj_field_u(m, uv, l->uv.v, &v) == 0) {
			lc_lj_value(p, l, v, &var->value);
		} else {
			lc_value_init(&var->value);
			set_text(&var->value, "?", strdup("(unreadable)"));
			var->value.partial = true;
		}
		if (var->value.partial)
			o->value.partial = true;
	}
}

/* A string's bytes, escaped and quoted, at most STR_KEEP of them (its
 * value holds what was read). */
static void full_string(struct lc_object *o)
{
	struct lc_strbuf sb = { 0 };
	const struct lc_value *v = &o->value;

	if (!v->str)
		return;
	lc_strbuf_append(&sb, "\"", 1);
	lc_esc_append(&sb, v->str, v->strlen, LC_ESC_LUA | LC_ESC_QUOTE,
		      SIZE_MAX);
	if ((int64_t)v->strlen < v->len)
		lc_strbuf_append(&sb, "\"...", 4);
	else
		lc_strbuf_append(&sb, "\"", 1);
	o->full = lc_strbuf_steal(&sb);
}

struct lc_error *lc_lj_object(struct lc_program *p,
			      const struct lc_lj_layout *l,
			      enum lc_object_kind kind, uint64_t addr,
			      size_t max, struct lc_object **ret)
{
	struct lc_object *o = calloc(1, sizeof(*o));

	if (!o)
		return &lc_error_nomem;
	if (kind == LC_OBJECT_TVALUE) {
		lc_lj_value(p, l, addr, &o->value);
	} else {
		uint64_t gct;

		/* Any GC object's header: its gct is the inverted type tag
		 * a TValue holding it carries (lj_obj.h setgcV). */
		lc_value_init(&o->value);
		if (!addr || (addr & 7) || (addr & ~LC_LJ_GCVMASK) ||
		    lc_lj_field_u(p->mem, addr, l->str.gct, &gct) < 0 ||
		    !(gct == LC_LJ_TSTR || gct == LC_LJ_TTHREAD ||
		      gct == LC_LJ_TFUNC || gct == LC_LJ_TCDATA ||
		      gct == LC_LJ_TTAB || gct == LC_LJ_TUDATA)) {
			o->value.partial = true;
			set_text(&o->value, "?",
				 fmt("? (no Lua value at 0x%" PRIx64 ")", addr));
		} else {
			value_raw(p, l, ((uint64_t)(uint32_t)~(uint32_t)gct << 47) |
				  addr, &o->value);
		}
	}
	if (strcmp(o->value.type, "table") == 0) {
		struct elist el = { .o = o, .max = max ? max : OBJECT_ENTRIES,
				    .budget = OBJECT_READS };

		table_entries(p, l, o->value.addr, &el);
	} else if (strcmp(o->value.type, "function") == 0) {
		closure_upvalues(p, l, o->value.addr, o);
	} else if (strcmp(o->value.type, "string") == 0) {
		full_string(o);
	}
	*ret = o;
	return NULL;
}
