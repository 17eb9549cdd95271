/* Lua values for display, a frame's variables, a thread's data stack
 * (Lua 5.1-5.5).  Tag values per version follow lobject.h/lua.h of
 * 5.1.5, 5.2.4, 5.3.6, 5.4.4, 5.4.7 and 5.5.0 (whose tags are 5.4's); the rules each function mirrors
 * are named where they are applied.  See vm/puc/values.h. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/puc/values.h"
#include "vm/puc/names.h"

#define EXTRA_STACK	5	/* lstate.h, every version */
#define MAXREGS		255	/* registers of one Lua function */
#define ADDR_LIMIT	(1ull << 56)	/* above any user-space address */

/* What a raw tag says a value is. */
enum vkind {
	VK_BAD,
	VK_NIL,
	VK_BOOL,	/* 5.1-5.3: the payload's int says which */
	VK_FALSE,	/* 5.4 variants */
	VK_TRUE,
	VK_LUD,
	VK_FLT,
	VK_INT,
	VK_STR,
	VK_TABLE,
	VK_FUNC51,	/* 5.1: a Closure, Lua or C per isC */
	VK_LCL,
	VK_LCF,
	VK_CCL,
	VK_UDATA,
	VK_THREAD,
};

/* lua.h/lobject.h per version: 5.1 plain types; 5.2+ variants in bits
 * 4-5 and BIT_ISCOLLECTABLE (bit 6) on every collectable value.  Only
 * the exact values Lua stores are accepted. */
static enum vkind classify(const struct lc_layout *l, unsigned tag)
{
	if (l->major == 501) {
		static const enum vkind k51[] = {
			VK_NIL, VK_BOOL, VK_LUD, VK_FLT, VK_STR, VK_TABLE,
			VK_FUNC51, VK_UDATA, VK_THREAD,
		};

		return tag < LC_ARRAY_SIZE(k51) ? k51[tag] : VK_BAD;
	}
	switch (tag) {
	case 0x00: return VK_NIL;
	case 0x10:			/* LUA_VEMPTY */
	case 0x20:			/* LUA_VABSTKEY */
		return l->major >= 504 ? VK_NIL : VK_BAD;
	case 0x01: return l->major >= 504 ? VK_FALSE : VK_BOOL;
	case 0x11: return l->major >= 504 ? VK_TRUE : VK_BAD;
	case 0x02: return VK_LUD;
	/* 5.2 LUA_TNUMBER; 5.3 LUA_TNUMFLT 0x03, LUA_TNUMINT 0x13; 5.4
	 * LUA_VNUMINT 0x03, LUA_VNUMFLT 0x13. */
	case 0x03: return l->major >= 504 ? VK_INT : VK_FLT;
	case 0x13:
		return l->major == 503 ? VK_INT :
		       l->major >= 504 ? VK_FLT : VK_BAD;
	case 0x44:			/* short string */
	case 0x54:			/* long string */
		return VK_STR;
	case 0x45: return VK_TABLE;
	case 0x46: return VK_LCL;
	case 0x16: return VK_LCF;	/* not collectable */
	case 0x66: return VK_CCL;
	case 0x47: return VK_UDATA;
	case 0x48: return VK_THREAD;
	default: return VK_BAD;
	}
}

static bool ptr_ok(uint64_t p)
{
	return p && !(p & 7) && p < ADDR_LIMIT;
}

/* The CommonHeader tt of the GC object at obj is want.  lua_State's tt
 * is the CommonHeader's, at the same offset in every GC object. */
static bool gc_check(struct lc_lua_ctx *ctx, uint64_t obj, unsigned want)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint8_t tt;

	return ptr_ok(obj) && LC_HAS(l->L.tt) &&
	       lc_read_u8(lc_lua_mem(ctx), obj + (uint64_t)l->L.tt.off,
			  &tt) == 0 &&
	       tt == want;
}

static int rd_ptr(struct lc_lua_ctx *ctx, uint64_t base, int32_t off,
		  uint64_t *ret)
{
	if (off < 0)
		return -1;
	return lc_read_u64(lc_lua_mem(ctx), base + (uint64_t)off, ret);
}

static int rd_s32(struct lc_lua_ctx *ctx, uint64_t addr, int *ret)
{
	int32_t v;

	if (lc_read(lc_lua_mem(ctx), addr, &v, 4) < 0)
		return -1;
	*ret = v;
	return 0;
}


/* ---- escaping ---- */

/* Values are shown as Lua literals: base/escape.c in Lua's notation. */
static size_t esc_width(const char *s, size_t n, bool quote, size_t cap)
{
	return lc_esc_width(s, n, LC_ESC_LUA | (quote ? LC_ESC_QUOTE : 0),
			    cap);
}

static size_t esc_append(struct lc_strbuf *sb, const char *s, size_t n,
			 bool quote, size_t room)
{
	return lc_esc_append(sb, s, n, LC_ESC_LUA | (quote ? LC_ESC_QUOTE : 0),
			     room);
}

/* ---- strings ---- */

struct sread {
	uint64_t len;		/* as stored */
	char *buf;		/* the first bytes, NUL-terminated, or NULL */
	size_t n;		/* bytes in buf */
	bool partial;		/* bytes or terminator unreadable */
};

/* Read the TString at ts: its length and at most keep bytes.  want is
 * the header tt the value's tag implies, or -1 for either string
 * variant.  Returns -1 if ts is not a readable TString. */
static int str_read(struct lc_lua_ctx *ctx, uint64_t ts, int want,
		    size_t keep, struct sread *r)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_memory *t = lc_lua_mem(ctx);
	uint64_t len = 0, contents, n;
	uint8_t tt, z;

	memset(r, 0, sizeof(*r));
	if (!ptr_ok(ts) || !LC_HAS(l->L.tt) ||
	    lc_read_u8(t, ts + (uint64_t)l->L.tt.off, &tt) < 0)
		return -1;
	if (l->major == 501) {
		if (tt != 4)
			return -1;
	} else if (want >= 0 ? tt != want : (tt != 0x04 && tt != 0x14)) {
		return -1;
	}
	/* 5.1/5.2: tsv.len for both kinds; 5.3+: shrlen or u.lnglen. */
	if (l->major <= 502) {
		if (lc_lua_read_field(ctx, ts, l->ts.len, &len) < 0)
			return -1;
	} else if (lc_lua_read_field(ctx, ts, tt == 0x04 ? l->ts.shrlen :
				     l->ts.lnglen, &len) < 0) {
		return -1;
	}
	r->len = len;
	if (l->major == 501)
		contents = ts + l->ts_contents;
	else if (lc_lua_string_bytes(ctx, ts, tt == 0x14, &contents) < 0)
		return -1;
	n = len < keep ? len : keep;
	r->buf = malloc(n + 1);
	if (!r->buf) {
		r->partial = true;
		return 0;
	}
	if (lc_read(t, contents, r->buf, n) == 0) {
		r->n = n;
	} else {
		/* The head alone, for display. */
		r->partial = true;
		n = n < 64 ? n : 64;
		r->n = lc_read(t, contents, r->buf, n) == 0 ? n : 0;
	}
	r->buf[r->n] = '\0';
	/* Every TString ends in a NUL (lstring.c): a length pointing past
	 * readable memory or at something else is not believed. */
	if (len >= ADDR_LIMIT || contents + len >= ADDR_LIMIT ||
	    lc_read_u8(t, contents + len, &z) < 0 || z != 0)
		r->partial = true;
	return 0;
}

/* "abc" or "ab"... within LC_VALUE_TEXT_MAX. */
static void render_quoted(struct lc_strbuf *sb, const struct sread *r)
{
	const size_t max = LC_VALUE_TEXT_MAX;

	if (r->n == r->len && esc_width(r->buf, r->n, true, max) + 2 <= max) {
		lc_strbuf_append(sb, "\"", 1);
		esc_append(sb, r->buf, r->n, true, max);
		lc_strbuf_append(sb, "\"", 1);
		return;
	}
	lc_strbuf_append(sb, "\"", 1);
	esc_append(sb, r->buf, r->n, true, max - 5);
	lc_strbuf_append(sb, "\"...", 4);
}

/* A chunk's source for display, at most LC_VALUE_TEXT_MAX bytes: "@file"
 * and "=name" as stored (a long "@" path keeps its tail, as
 * luaO_chunkid does), code strings as [string "first line..."]. */
static void render_source(struct lc_strbuf *sb, const struct sread *r)
{
	const size_t max = LC_VALUE_TEXT_MAX;
	const char *s = r->buf;
	size_t n = r->n;

	if (n > 0 && (s[0] == '@' || s[0] == '=')) {
		size_t start = 1;

		if (r->n == r->len &&
		    esc_width(s, n, false, max) <= max) {
			esc_append(sb, s, n, false, max);
			return;
		}
		if (s[0] == '@' && r->n == r->len) {
			/* "@..." and the longest tail that fits. */
			start = n > max - 4 ? n - (max - 4) : 1;
			while (start < n &&
			       ((s[start] & 0xc0) == 0x80 ||
				esc_width(s + start, n - start, false, max) >
				max - 4))
				start++;
			lc_strbuf_append(sb, "@...", 4);
			esc_append(sb, s + start, n - start, false, max - 4);
			return;
		}
		esc_append(sb, s, n, false, max - 3);
		lc_strbuf_append(sb, "...", 3);
		return;
	}
	{
		const char *nl = memchr(s, '\n', n);
		size_t line = nl ? (size_t)(nl - s) : n;
		const size_t frame = sizeof("[string \"\"]") - 1;

		lc_strbuf_append(sb, "[string \"", 9);
		if (!nl && r->n == r->len &&
		    esc_width(s, line, true, max) + frame <= max) {
			esc_append(sb, s, line, true, max);
			lc_strbuf_append(sb, "\"]", 2);
		} else {
			esc_append(sb, s, line, true, max - frame - 3);
			lc_strbuf_append(sb, "...\"]", 5);
		}
	}
}

/* ---- value kinds ---- */

static void value_init(struct lc_value *v)
{
	lc_value_init(v);
}

static void set_text(struct lc_value *v, struct lc_strbuf *sb)
{
	v->text = lc_strbuf_steal(sb);
	if (!v->text)
		v->partial = true;
}

static void set_textf(struct lc_value *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_textf(struct lc_value *v, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	v->text = s;
	if (!s)
		v->partial = true;
}

static void dec_number(const struct lc_layout *l, const struct lc_tvalue *tv,
		       enum vkind k, struct lc_value *v)
{
	char buf[64];

	v->type = "number";
	/* The build's number format (tv.n, tv.i: LUA_32BITS has 4-byte
	 * ones), in the value word's low bytes. */
	if (k == VK_INT) {
		int64_t i = l->tv.i.size == 4 ? (int32_t)(uint32_t)tv->value :
			    (int64_t)tv->value;

		snprintf(buf, sizeof(buf), "%" PRId64, i);
	} else {
		double d;

		if (l->tv.n.size == 4) {
			float f;
			uint32_t w = (uint32_t)tv->value;

			memcpy(&f, &w, sizeof(f));
			d = f;
		} else {
			memcpy(&d, &tv->value, sizeof(d));
		}
		/* Lua's own %.14g; a float's 9 digits, which give its
		 * value back (Lua's %.7g would not). */
		snprintf(buf, sizeof(buf), l->tv.n.size == 4 ? "%.9g" : "%.14g", d);
		/* lobject.c:tostringbuff (5.3+): a float that looks like
		 * an integer gets ".0". */
		if (l->major >= 503 &&
		    buf[strspn(buf, "-0123456789")] == '\0')
			strcat(buf, ".0");
	}
	v->text = strdup(buf);
	if (!v->text)
		v->partial = true;
}

int lc_lua_number_format(struct lc_lua_ctx *ctx, uint64_t g, unsigned *nsize,
			 unsigned *isize, char *why, size_t size)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	const double pi = 3.14159265358979323846;
	const float pif = (float)pi;
	uint64_t dbits;
	uint32_t fbits;
	struct lc_tvalue tv;

	*nsize = *isize = 0;
	memcpy(&dbits, &pi, sizeof(dbits));
	memcpy(&fbits, &pif, sizeof(fbits));
	if (lc_lua_loaded_field(ctx, g, "math", "pi", &tv) == 0) {
		if (classify(l, tv.tag) != VK_FLT) {
			snprintf(why, size, "math.pi has tag 0x%x, not a float's", tv.tag);
			return -1;
		}
		if (tv.value == dbits)
			*nsize = 8;
		else if ((uint32_t)tv.value == fbits)
			*nsize = 4;
		else {
			snprintf(why, size, "math.pi reads as 0x%016" PRIx64 ", neither a double's nor a float's bits",
				 tv.value);
			return -1;
		}
	}
	if (l->major >= 503 &&
	    lc_lua_loaded_field(ctx, g, "math", "maxinteger", &tv) == 0) {
		if (classify(l, tv.tag) != VK_INT) {
			snprintf(why, size, "math.maxinteger has tag 0x%x, not an integer's", tv.tag);
			return -1;
		}
		if (tv.value == (uint64_t)INT64_MAX)
			*isize = 8;
		else if ((uint32_t)tv.value == (uint32_t)INT32_MAX)
			*isize = 4;
		else {
			snprintf(why, size, "math.maxinteger reads as 0x%" PRIx64 ", neither 2^63-1 nor 2^31-1",
				 tv.value);
			return -1;
		}
	}
	return 0;
}

static void dec_string(struct lc_lua_ctx *ctx, const struct lc_tvalue *tv,
		       struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_strbuf sb = { 0 };
	struct sread r;

	v->type = "string";
	v->addr = tv->value;
	if (str_read(ctx, tv->value, l->major == 501 ? 4 : (int)(tv->tag & 0x3f),
		     LC_VALUE_STR_MAX, &r) < 0) {
		v->partial = true;
		set_textf(v, "string: 0x%" PRIx64 " (unreadable)", tv->value);
		return;
	}
	v->len = r.len > INT64_MAX ? INT64_MAX : (int64_t)r.len;
	v->partial = r.partial;
	if (!r.buf) {
		set_textf(v, "string: 0x%" PRIx64 " (unreadable)", tv->value);
		return;
	}
	if (r.n == 0 && r.len > 0) {
		free(r.buf);
		set_textf(v, "string: 0x%" PRIx64 " (unreadable)", tv->value);
		return;
	}
	render_quoted(&sb, &r);
	set_text(v, &sb);
	v->str = r.buf;
	v->strlen = r.n;
}

/* Is node the shared dummy node?  5.5 ltable.h:isdummy: BITDUMMY in
 * flags (bit 6), passed here as lastfree.  5.3/5.4: lastfree ==
 * NULL.  5.1/5.2 compare with &dummynode_, a static in the Lua module:
 * the node lies in the module's image, or lastfree == node (what
 * setnodevector leaves for size 0). */
static bool is_dummy(const struct lc_layout *l, uint64_t lsz, uint64_t node,
		     uint64_t lastfree)
{
	if (l->major >= 505)
		return lastfree != 0;
	if (l->major >= 503)
		return lastfree == 0;
	if (lsz != 0)
		return false;
	return lastfree == node ||
	       (node >= l->module_start && node < l->module_end);
}

static void dec_table(struct lc_lua_ctx *ctx, uint64_t h, struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint64_t lsz, asz, node, lastfree, mt, flags = 0;

	v->type = "table";
	v->addr = h;
	set_textf(v, "table: 0x%" PRIx64, h);
	if (!gc_check(ctx, h, 5)) {
		v->partial = true;
		return;
	}
	if (lc_lua_read_field(ctx, h, l->tab.lsizenode, &lsz) < 0 ||
	    lc_lua_read_field(ctx, h, l->tab.sizearray, &asz) < 0 ||
	    rd_ptr(ctx, h, l->tab.node.off, &node) < 0 ||
	    rd_ptr(ctx, h, l->tab.node.off + 8, &lastfree) < 0 ||
	    rd_ptr(ctx, h, l->tab.metatable.off, &mt) < 0 ||
	    (l->major >= 504 &&
	     lc_lua_read_field(ctx, h, l->tab.flags, &flags) < 0)) {
		v->partial = true;
		return;
	}
	/* 5.5 has no lastfree (node + 8 is the metatable): BITDUMMY. */
	if (l->major >= 505)
		lastfree = flags & 0x40;
	v->metatable = mt;
	if (l->major == 501) {
		int64_t s = (int64_t)(int32_t)(uint32_t)asz;	/* int */

		if (s < 0)
			v->partial = true;
		else
			v->len = s;
	} else if (l->major == 504 && (flags & 0x80) && (asz & (asz - 1))) {
		/* (5.5's asize is the size) */
		/* ltable.c:luaH_realasize: alimit is not the size (BITRAS
		 * set) and not a power of 2: the size is the next one. */
		uint64_t size = asz;

		for (int sh = 1; sh < 64; sh <<= 1)
			size |= size >> sh;
		v->len = (int64_t)(size + 1);
	} else {
		v->len = (int64_t)asz;
	}
	if (lsz > 30) {		/* MAXHBITS is 30 (5.3/5.4), 26 before */
		v->partial = true;
	} else if (is_dummy(l, lsz, node, lastfree)) {
		v->hsize = 0;
		/* getfreepos never takes a real lastfree to NULL. */
		if (lsz != 0)
			v->partial = true;
	} else {
		v->hsize = (int64_t)1 << lsz;
	}
}

static void c_symbol(struct lc_lua_ctx *ctx, uint64_t addr,
		     struct lc_strbuf *sb)
{
	Dwfl *dwfl = lc_lua_program(ctx)->dwfl;
	Dwfl_Module *mod = dwfl && addr ? dwfl_addrmodule(dwfl, addr) : NULL;
	const char *name = NULL;
	GElf_Off off = 0;
	GElf_Sym sym;

	if (mod)
		name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL,
					    NULL);
	if (!name) {
		lc_strbuf_appendf(sb, "0x%" PRIx64, addr);
		return;
	}
	/* A symbol is the target's string too. */
	esc_append(sb, name, strlen(name), false, SIZE_MAX);
	if (off)
		lc_strbuf_appendf(sb, "+0x%" PRIx64, (uint64_t)off);
}

static void dec_cfunc(struct lc_lua_ctx *ctx, uint64_t f, struct lc_value *v)
{
	struct lc_strbuf sb = { 0 };

	v->addr = f;
	lc_strbuf_append(&sb, "function: [C] ", 14);
	c_symbol(ctx, f, &sb);
	set_text(v, &sb);
}

static void dec_lclosure(struct lc_lua_ctx *ctx, uint64_t cl,
			 struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_strbuf sb = { 0 };
	uint64_t p, src;
	int64_t line;
	struct sread r = { 0 };

	v->addr = cl;
	/* Proto's tt: LUA_TPROTO 9 (5.1-5.3), LUA_VPROTO 10 (5.4). */
	if (rd_ptr(ctx, cl, l->cl.p.off, &p) < 0 ||
	    !gc_check(ctx, p, l->major >= 504 ? 10 : 9) ||
	    rd_ptr(ctx, p, l->p.source.off, &src) < 0 ||
	    lc_lua_read_sfield(ctx, p, l->p.linedefined, &line) < 0) {
		v->partial = true;
		set_textf(v, "function: 0x%" PRIx64, cl);
		return;
	}
	lc_strbuf_append(&sb, "function: ", 10);
	if (!src) {
		/* 5.4 stripped binary chunks have no source ("=?"). */
		lc_strbuf_append(&sb, "=?", 2);
	} else if (str_read(ctx, src, -1, LC_VALUE_STR_MAX, &r) < 0 ||
		   !r.buf) {
		v->partial = true;
		lc_strbuf_append(&sb, "?", 1);
	} else {
		if (r.partial)
			v->partial = true;
		render_source(&sb, &r);
	}
	free(r.buf);
	lc_strbuf_appendf(&sb, ":%" PRId64, line);
	set_text(v, &sb);
}

static void dec_function(struct lc_lua_ctx *ctx, const struct lc_tvalue *tv,
			 enum vkind k, struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint64_t cl = tv->value, f;

	v->type = "function";
	switch (k) {
	case VK_LCF:
		dec_cfunc(ctx, tv->value, v);
		return;
	case VK_LCL:
		if (!gc_check(ctx, cl, 6))
			break;
		dec_lclosure(ctx, cl, v);
		return;
	case VK_CCL:
		/* 5.2.0 tags every closure's header LUA_TFUNCTION (lfunc.c
		 * luaF_newCclosure); any 5.2 may be 5.2.0 when guessed. */
		if (!(gc_check(ctx, cl, 0x26) ||
		      (l->major == 502 && (l->release == 50200 || l->version_guessed) &&
		       gc_check(ctx, cl, 6))) ||
		    rd_ptr(ctx, cl, l->cl.f.off, &f) < 0)
			break;
		dec_cfunc(ctx, f, v);
		v->addr = cl;	/* tostring shows the closure, a GC object */
		return;
	default: {			/* 5.1: union Closure */
		uint8_t isC;

		if (!gc_check(ctx, cl, 6) || !LC_HAS(l->cl.isC) ||
		    lc_read_u8(lc_lua_mem(ctx), cl + (uint64_t)l->cl.isC.off,
			       &isC) < 0)
			break;
		if (!isC) {
			dec_lclosure(ctx, cl, v);
			return;
		}
		if (rd_ptr(ctx, cl, l->cl.f.off, &f) < 0)
			break;
		dec_cfunc(ctx, f, v);
		v->addr = cl;	/* a C closure, as tostring shows it */
		return;
	}
	}
	v->addr = cl;
	v->partial = true;
	set_textf(v, "function: 0x%" PRIx64, cl);
}

static void dec_udata(struct lc_lua_ctx *ctx, uint64_t u, struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint64_t len, mt;

	v->type = "userdata";
	v->addr = u;
	set_textf(v, "userdata: 0x%" PRIx64, u);
	/* 5.1/5.2: union Udata's uv.len, uv.metatable (the layout names
	 * them); 5.3/5.4 len, metatable. */
	if (!gc_check(ctx, u, 7) ||
	    lc_lua_read_field(ctx, u, l->ud.len, &len) < 0 ||
	    rd_ptr(ctx, u, l->ud.metatable.off, &mt) < 0) {
		v->partial = true;
		return;
	}
	v->len = len > INT64_MAX ? INT64_MAX : (int64_t)len;
	v->metatable = mt;
}

static void dec_thread(struct lc_lua_ctx *ctx, uint64_t th, struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	uint64_t status;

	v->type = "thread";
	v->addr = th;
	if (!gc_check(ctx, th, 8) ||
	    lc_lua_read_field(ctx, th, l->L.status, &status) < 0) {
		v->partial = true;
		set_textf(v, "thread: 0x%" PRIx64, th);
		return;
	}
	set_textf(v, "thread: 0x%" PRIx64 " (status %d)", th, (int)status);
}

void lc_lua_value_tv(struct lc_lua_ctx *ctx, const struct lc_tvalue *tv,
		     struct lc_value *v)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	enum vkind k = classify(l, tv->tag);

	value_init(v);
	switch (k) {
	case VK_NIL:
		v->type = "nil";
		v->text = strdup("nil");
		break;
	case VK_BOOL:
		/* Value.b is an int: the upper half of the word is stale. */
		v->type = "boolean";
		v->text = strdup((uint32_t)tv->value ? "true" : "false");
		break;
	case VK_FALSE:
	case VK_TRUE:
		v->type = "boolean";
		v->text = strdup(k == VK_TRUE ? "true" : "false");
		break;
	case VK_LUD:
		v->type = "lightuserdata";
		v->addr = tv->value;
		set_textf(v, "userdata: 0x%" PRIx64, tv->value);
		return;
	case VK_FLT:
	case VK_INT:
		dec_number(l, tv, k, v);
		return;
	case VK_STR:
		dec_string(ctx, tv, v);
		return;
	case VK_TABLE:
		dec_table(ctx, tv->value, v);
		return;
	case VK_FUNC51:
	case VK_LCL:
	case VK_LCF:
	case VK_CCL:
		dec_function(ctx, tv, k, v);
		return;
	case VK_UDATA:
		dec_udata(ctx, tv->value, v);
		return;
	case VK_THREAD:
		dec_thread(ctx, tv->value, v);
		return;
	default:
		v->type = "?";
		v->partial = true;
		set_textf(v, "? (tag 0x%x)", tv->tag);
		return;
	}
	if (!v->text)
		v->partial = true;
}

void lc_lua_value(struct lc_lua_ctx *ctx, uint64_t addr, struct lc_value *v)
{
	struct lc_tvalue tv;

	if (addr >= ADDR_LIMIT || lc_lua_read_tvalue(ctx, addr, &tv) < 0) {
		value_init(v);
		v->type = "?";
		v->partial = true;
		set_textf(v, "? (unreadable at 0x%" PRIx64 ")", addr);
		return;
	}
	lc_lua_value_tv(ctx, &tv, v);
}


static void unreadable(struct lc_value *v, const char *why)
{
	value_init(v);
	v->type = "?";
	v->partial = true;
	set_textf(v, "? (%s)", why);
}

/* ---- frames ---- */

struct vlist {
	struct lc_var *v;
	size_t n, cap;
	bool nomem;
};

static struct lc_var *vpush(struct vlist *vl, const char *kind,
			    const char *name, int index)
{
	struct lc_var *var;

	if (vl->nomem)
		return NULL;
	if (vl->n == vl->cap) {
		size_t ncap = vl->cap ? vl->cap * 2 : 16;
		struct lc_var *p = realloc(vl->v, ncap * sizeof(*p));

		if (!p) {
			vl->nomem = true;
			return NULL;
		}
		vl->v = p;
		vl->cap = ncap;
	}
	var = &vl->v[vl->n];
	memset(var, 0, sizeof(*var));
	var->kind = kind;
	var->index = index;
	var->name = strdup(name ? name : "?");
	if (!var->name) {
		vl->nomem = true;
		return NULL;
	}
	vl->n++;
	return var;
}

/* The Lua closure cl's upvalues, named by its Proto pv: values through
 * upvals[k] -> UpVal -> v (5.4.5+: v.p, at the same place). */
static void push_upvalues(struct lc_lua_ctx *ctx,
			  const struct lc_proto_view *pv, uint64_t cl,
			  struct vlist *vl)
{
	const struct lc_layout *l = lc_lua_layout(ctx);

	for (int k = 0; k < pv->nupvalnames && k < LC_MAX_UPVALS; k++) {
		struct lc_var *var = vpush(vl, "upvalue",
					   pv->upvalnames ? pv->upvalnames[k] :
					   NULL, k + 1);
		uint64_t uv, vp;

		if (!var)
			break;
		if (!LC_HAS(l->cl.p) || !LC_HAS(l->uv.v) ||
		    rd_ptr(ctx, cl, l->cl.p.off + 8 + 8 * k, &uv) < 0 ||
		    !ptr_ok(uv) || rd_ptr(ctx, uv, l->uv.v.off, &vp) < 0)
			unreadable(&var->value, "no UpVal");
		else
			lc_lua_value(ctx, vp, &var->value);
	}
}

/* One past the last slot Lua allocated: 5.1 stack_last = stack +
 * size - EXTRA_STACK - 1 (lstate.c:stack_init, ldo.c:luaD_reallocstack);
 * 5.2/5.3 stack + size - EXTRA_STACK; 5.4 stack + size with size +
 * EXTRA_STACK slots allocated. */
static uint64_t stack_end(const struct lc_layout *l, const struct lc_lstate *st)
{
	uint64_t extra = EXTRA_STACK + (l->major == 501 ? 1 : 0);

	return st->stack_last + extra * l->sz_stack_slot;
}

static bool slot_ok(const struct lc_layout *l, const struct lc_lstate *st,
		    uint64_t a)
{
	return st->stack && a >= st->stack && a < stack_end(l, st) &&
	       (a - st->stack) % l->sz_stack_slot == 0;
}

static void slot_value(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		       uint64_t a, struct lc_value *v)
{
	if (!slot_ok(lc_lua_layout(ctx), st, a))
		unreadable(v, "outside the stack");
	else
		lc_lua_value(ctx, a, v);
}

/* Number of extra arguments of a 5.4 vararg frame (ci->u.l.nextraargs,
 * at savedpc + 12: after the pointer and the int-sized 'trap'). */
static int nextraargs(struct lc_lua_ctx *ctx, const struct lc_ci *ci, int *ret)
{
	const struct lc_layout *l = lc_lua_layout(ctx);

	if (!LC_HAS(l->ci.savedpc))
		return -1;
	return rd_s32(ctx, ci->addr + (uint64_t)l->ci.savedpc.off + 12, ret);
}

struct lc_error *lc_lua_frame_vars(struct lc_lua_ctx *ctx,
				   const struct lc_lstate *st,
				   const struct lc_ci *cis, size_t n, size_t i,
				   struct lc_var **ret, size_t *nret)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	const uint64_t stride = l->sz_stack_slot;
	const struct lc_ci *ci;
	const struct lc_proto_view *pv;
	struct vlist vl = { 0 };
	struct lc_tvalue fv;
	uint64_t cl, base = 0;
	bool have_base;
	int pc;

	*ret = NULL;
	*nret = 0;
	if (!cis || i >= n)
		return lc_error_create(LC_ERR_INVALID, "no frame %zu of %zu",
				       i, n);
	ci = &cis[i];
	if (!ci->is_lua && !ci->bad)
		return NULL;		/* C functions: nothing to show */
	if (ci->bad || !ci->proto || !stride)
		return lc_error_fault(ci->func, "the function of a Lua frame");
	if (lc_lua_read_tvalue(ctx, ci->func, &fv) < 0 || !ptr_ok(fv.value))
		return lc_error_fault(ci->func, "the function of a Lua frame");
	cl = fv.value;
	pv = lc_lua_proto_view(ctx, ci->proto);
	if (!pv)
		return lc_error_fault(ci->proto, "the Proto of a Lua frame");
	pc = lc_lua_current_pc(ctx, ci);
	if (pc < -1)
		return lc_error_create(LC_ERR_CORRUPT,
			"the saved pc of CallInfo 0x%" PRIx64 " is outside its function's code",
			ci->addr);

	/* Locals: luaF_getlocalname(p, k, pc) names register k-1. */
	if (l->major >= 504) {
		base = ci->func + stride;
		have_base = true;
	} else {
		have_base = lc_lua_read_stkid(ctx, ci->addr, l->ci.base,
					      st->stack, &base) == 0;
	}
	for (int k = 1; k <= MAXREGS; k++) {
		const char *name = lc_names_local(pv, k, pc);
		struct lc_var *var;

		if (!name)
			break;
		var = vpush(&vl, "local", name, k - 1);
		if (!var)
			break;
		if (have_base)
			slot_value(ctx, st, base + (uint64_t)(k - 1) * stride,
				   &var->value);
		else
			unreadable(&var->value, "no frame base");
	}

	/* Varargs (ldebug.c:findvararg). */
	if (l->major >= 504) {
		/* 5.4: below the (moved) function slot: vararg k at
		 * func - nextraargs + k - 1; only after OP_VARARGPREP.
		 * 5.5 the same for hidden varargs (is_vararg is
		 * PF_VAHID: a vararg table is a local). */
		int nx;

		if (pv->is_vararg && pc >= 0 && nextraargs(ctx, ci, &nx) == 0 &&
		    nx > 0) {
			for (int k = 1; k <= nx && k <= LC_MAX_VARARGS; k++) {
				struct lc_var *var = vpush(&vl, "vararg",
							   "(vararg)", k);
				uint64_t a = ci->func -
					(uint64_t)(nx - k + 1) * stride;

				if (!var)
					break;
				if ((uint64_t)nx * stride > ci->func)
					unreadable(&var->value,
						   "outside the stack");
				else
					slot_value(ctx, st, a, &var->value);
			}
		}
	} else if (have_base && base > ci->func && pv->numparams >= 0 &&
		   (base - ci->func) % stride == 0) {
		/* 5.2/5.3: vararg k at func + numparams + k while below
		 * base; 5.1 leaves them in the same place
		 * (ldo.c:adjust_varargs). */
		uint64_t nx = (base - ci->func) / stride;

		nx = nx > 1 + (uint64_t)pv->numparams ?
		     nx - 1 - (uint64_t)pv->numparams : 0;
		for (uint64_t k = 1; k <= nx && k <= LC_MAX_VARARGS; k++) {
			struct lc_var *var = vpush(&vl, "vararg", "(*vararg)",
						   (int)k);

			if (!var)
				break;
			slot_value(ctx, st, ci->func +
				   ((uint64_t)pv->numparams + k) * stride,
				   &var->value);
		}
	}

	push_upvalues(ctx, pv, cl, &vl);

	if (vl.nomem) {
		lc_vars_free(vl.v, vl.n);
		return &lc_error_nomem;
	}
	*ret = vl.v;
	*nret = vl.n;
	return NULL;
}

/* ---- the data stack ---- */

struct range {
	uint64_t lo, hi;	/* [lo, hi) */
	long frame;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

struct lc_error *lc_lua_stack_slots(struct lc_lua_ctx *ctx,
				    const struct lc_lstate *st,
				    const struct lc_ci *cis, size_t n,
				    int residue, struct lc_slot **ret,
				    size_t *nret)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	const uint64_t stride = l->sz_stack_slot;
	struct range *rg = NULL;
	struct lc_slot *slots;
	uint64_t end, top, nlive, nres, total;
	size_t nrg = 0, p = 0;

	*ret = NULL;
	*nret = 0;
	if (!stride || !ptr_ok(st->stack) || st->stack_last < st->stack)
		return lc_error_create(LC_ERR_CORRUPT,
			"lua_State 0x%" PRIx64 " has no stack", st->addr);
	end = stack_end(l, st);
	top = st->top < st->stack ? st->stack : st->top > end ? end : st->top;
	nlive = (top - st->stack) / stride;
	if (nlive > LC_MAX_SLOTS)
		nlive = LC_MAX_SLOTS;
	top = st->stack + nlive * stride;
	nres = residue > 0 ? (uint64_t)residue : 0;
	if (nres > (end - top) / stride)
		nres = (end - top) / stride;
	total = nlive + nres;

	/* Frame ranges: cis[j] owns [func_j, func_{j-1}); cis[0] up to
	 * top. */
	if (n) {
		rg = calloc(n, sizeof(*rg));
		if (!rg)
			return &lc_error_nomem;
	}
	for (size_t j = 0; j < n; j++) {
		rg[j].lo = cis[j].func;
		rg[j].hi = j ? cis[j - 1].func : top;
		rg[j].frame = (long)j;
	}
	/* 5.4 vararg functions: their arguments below the moved func
	 * (ltm.c:luaT_adjustvarargs put the function and the fixed
	 * parameters above them). */
	for (size_t j = 0; l->major >= 504 && j < n; j++) {
		const struct lc_proto_view *pv;
		uint64_t below = j + 1 < n ? cis[j + 1].func : st->stack;
		uint64_t lo;
		int nx;

		if (!cis[j].is_lua || cis[j].bad || !cis[j].proto ||
		    lc_lua_current_pc(ctx, &cis[j]) < 0 ||
		    !(pv = lc_lua_proto_view(ctx, cis[j].proto)) ||
		    !pv->is_vararg || pv->numparams < 0 ||
		    nextraargs(ctx, &cis[j], &nx) < 0 || nx < 0)
			continue;
		lo = cis[j].func -
		     ((uint64_t)nx + (uint64_t)pv->numparams + 1) * stride;
		if (lo > cis[j].func || lo <= below)
			continue;	/* wrapped, or into the caller's func */
		rg[j].lo = lo;
		if (j + 1 < n && rg[j + 1].hi > lo)
			rg[j + 1].hi = lo;
	}
	/* Sweep the slots through the non-empty ranges by address: one
	 * pass however odd the chain (overlaps are resolved arbitrarily
	 * but deterministically). */
	for (size_t j = 0; j < n; j++)
		if (rg[j].lo < rg[j].hi)
			rg[nrg++] = rg[j];
	if (nrg > 1)
		qsort(rg, nrg, sizeof(*rg), cmp_range);

	slots = calloc(total ? total : 1, sizeof(*slots));
	if (!slots) {
		free(rg);
		return &lc_error_nomem;
	}
	for (uint64_t k = 0; k < total; k++) {
		struct lc_slot *s = &slots[k];
		uint64_t a = st->stack + k * stride;

		s->addr = a;
		s->index = (long)k;
		s->frame = -1;
		if (k >= nlive) {
			s->residue = true;
		} else {
			while (p < nrg && rg[p].hi <= a)
				p++;
			if (p < nrg && rg[p].lo <= a) {
				s->frame = rg[p].frame;
				s->is_func = a == cis[s->frame].func;
			}
		}
		lc_lua_value(ctx, a, &s->value);
	}
	free(rg);
	*ret = slots;
	*nret = (size_t)total;
	return NULL;
}



/* ---- single objects (lc_object_create) ---- */

#define LC_OBJECT_ENTRIES	100	/* default table entries shown */
#define LC_OBJECT_NODE_READS	(1u << 20)

struct elist {
	struct lc_object *o;
	size_t max;
	size_t budget;		/* array slots and nodes still to read */
	bool nomem;
};

static struct lc_entry *epush(struct elist *el)
{
	struct lc_object *o = el->o;
	struct lc_entry *p;

	if (o->nentries >= el->max) {
		o->more++;
		return NULL;
	}
	p = realloc(o->entries, (o->nentries + 1) * sizeof(*p));
	if (!p) {
		el->nomem = true;
		return NULL;
	}
	o->entries = p;
	p = &o->entries[o->nentries++];
	value_init(&p->key);
	value_init(&p->value);
	return p;
}

static bool entry_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
		     const struct lc_tvalue *v, void *arg)
{
	struct lc_entry *e = epush(arg);

	if (e) {
		lc_lua_value_tv(ctx, k, &e->key);
		lc_lua_value_tv(ctx, v, &e->value);
	}
	return !((struct elist *)arg)->nomem;
}

static void table_entries(struct lc_lua_ctx *ctx, struct elist *el)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	const struct lc_value *tv = &el->o->value;
	uint64_t array;

	if (tv->len > 0 && rd_ptr(ctx, tv->addr, l->tab.array.off, &array) == 0) {
		for (int64_t i = 0; i < tv->len && !el->nomem && el->budget;
		     i++, el->budget--) {
			struct lc_value v;
			struct lc_entry *e;

			if (l->major >= 505) {
				/* ltable.h getArrVal, getArrTag: values
				 * below array, downwards; an unsigned,
				 * then one tag byte each above it. */
				struct lc_tvalue atv;
				uint8_t tag;

				if (rd_ptr(ctx, array - 8 * (uint64_t)(i + 1),
					   0, &atv.value) < 0 ||
				    lc_read_u8(lc_lua_mem(ctx), array + 4 +
					       (uint64_t)i, &tag) < 0) {
					unreadable(&v, "array part");
				} else {
					atv.tag = tag;
					lc_lua_value_tv(ctx, &atv, &v);
				}
			} else {
				lc_lua_value(ctx, array + (uint64_t)i * l->sz_tvalue, &v);
			}
			if (strcmp(v.type, "nil") == 0) {
				lc_value_deinit(&v);
				continue;
			}
			e = epush(el);
			if (!e) {
				lc_value_deinit(&v);
				if (el->nomem)
					break;
				continue;
			}
			e->key.type = "number";
			set_textf(&e->key, "%" PRId64, i + 1);
			e->value = v;
		}
	}
	/* A hash part that does not read to its end is shown as far as it
	 * does, marked. */
	if (tv->hsize > 0 && !el->nomem &&
	    lc_lua_table_scan(ctx, tv->addr, entry_fn, el, &el->budget) < 0)
		el->o->value.partial = true;
	if (!el->budget)
		el->o->more_bounded = true;
}

static void closure_upvalues(struct lc_lua_ctx *ctx, struct lc_object *o)
{
	const struct lc_layout *l = lc_lua_layout(ctx);
	const struct lc_proto_view *pv;
	uint64_t cl = o->value.addr, p;
	struct vlist vl = { 0 };

	if (!LC_HAS(l->cl.p) || rd_ptr(ctx, cl, l->cl.p.off, &p) < 0 ||
	    !(pv = lc_lua_proto_view(ctx, p)))
		return;
	push_upvalues(ctx, pv, cl, &vl);
	if (vl.nomem)
		o->value.partial = true;
	o->upvalues = vl.v;
	o->nupvalues = vl.n;
}

static void full_string(struct lc_lua_ctx *ctx, struct lc_object *o)
{
	struct lc_strbuf sb = { 0 };
	struct sread r;

	if (str_read(ctx, o->value.addr, -1, LC_VALUE_STR_MAX, &r) < 0 ||
	    !r.buf) {
		free(r.buf);
		return;
	}
	lc_strbuf_append(&sb, "\"", 1);
	esc_append(&sb, r.buf, r.n, true, SIZE_MAX);
	lc_strbuf_append(&sb, r.n < r.len ? "\"..." : "\"", r.n < r.len ? 4 : 1);
	o->full = lc_strbuf_steal(&sb);
	free(r.buf);
}

struct lc_error *lc_lua_object(struct lc_lua_ctx *ctx,
			       enum lc_object_kind kind, uint64_t addr,
			       size_t max_entries, struct lc_object **ret)
{
	struct lc_memory *t = lc_lua_mem(ctx);
	const struct lc_layout *l = lc_lua_layout(ctx);
	struct lc_object *o = calloc(1, sizeof(*o));

	if (!o)
		return &lc_error_nomem;
	if (kind == LC_OBJECT_TVALUE) {
		lc_lua_value(ctx, addr, &o->value);
	} else {
		uint8_t tt;
		struct lc_tvalue tv = { .value = addr };

		if (!ptr_ok(addr) || !LC_HAS(l->L.tt) ||
		    lc_read_u8(t, addr + (uint64_t)l->L.tt.off, &tt) < 0) {
			value_init(&o->value);
			o->value.type = "?";
			o->value.partial = true;
			set_textf(&o->value, "? (unreadable at 0x%" PRIx64 ")",
				  addr);
		} else {
			/* A TValue's tag for this object: 5.1 the type; 5.2+
			 * the variant with BIT_ISCOLLECTABLE. */
			tv.tag = l->major == 501 ? tt : (tt | 0x40u);
			lc_lua_value_tv(ctx, &tv, &o->value);
		}
	}
	if (strcmp(o->value.type, "table") == 0) {
		struct elist el = {
			.o = o,
			.max = max_entries ? max_entries : LC_OBJECT_ENTRIES,
			.budget = LC_OBJECT_NODE_READS,
		};

		table_entries(ctx, &el);
		if (el.nomem)
			o->value.partial = true;
	} else if (strcmp(o->value.type, "function") == 0 && o->value.text &&
		   strncmp(o->value.text, "function: [C]", 13) != 0) {
		closure_upvalues(ctx, o);
	} else if (strcmp(o->value.type, "string") == 0) {
		full_string(ctx, o);
	}
	*ret = o;
	return NULL;
}

