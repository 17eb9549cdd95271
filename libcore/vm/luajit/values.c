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

void lc_lj_value(struct lc_program *p, const struct lc_lj_layout *l,
		 uint64_t addr, struct lc_value *v)
{
	struct lc_memory *m = p->mem;
	uint64_t raw, gc;
	uint32_t it;

	lc_value_init(v);
	if (lc_read_u64(m, addr, &raw) < 0) {
		v->partial = true;
		set_text(v, "?", fmt("(unreadable at 0x%" PRIx64 ")", addr));
		return;
	}
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
