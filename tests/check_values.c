/* Unit tests for vm/puc/values.c on synthetic memory images.
 *
 * Layouts come from the DWARF of Debian's liblua5.1, liblua5.3 and
 * liblua5.4 (their -dbg packages; override the paths with
 * LUACORE_TEST_LUA51/53/54).  Offsets the library's layout lacks (and
 * vm/puc/values.c derives) are read here from that DWARF independently, so
 * an image built with them catches a wrong derivation. */
#include <config.h>

#include <check.h>
#include <dwarf.h>
#include <inttypes.h>
#include <elfutils/libdw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "puc_support.h"
#include "vm/puc/values.h"

#define BASE	0x100000ull
#define SIZE	0x40000ull
#define BIAS	0x7f0000000000ull

struct image {
	uint64_t base;
	uint64_t brk;		/* next free byte for obj() */
	uint8_t *bytes;
};

static int image_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct image *im = arg;

	if (addr < im->base || addr - im->base > SIZE ||
	    len > SIZE - (addr - im->base))
		return -1;
	memcpy(buf, im->bytes + (addr - im->base), len);
	return 0;
}

/* ---- DWARF, read independently of layout.c ---- */

static bool peel(Dwarf_Die *d)
{
	for (int i = 0; i < 16; i++) {
		Dwarf_Attribute a;
		int tag = dwarf_tag(d);

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return true;
		if (!dwarf_attr_integrate(d, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, d))
			return false;
	}
	return false;
}

static bool member(Dwarf_Die *type, const char *name, Dwarf_Word *off,
		   Dwarf_Die *mt)
{
	Dwarf_Die c, t = *type;

	if (!peel(&t) || dwarf_child(&t, &c) != 0)
		return false;
	do {
		Dwarf_Attribute a;
		Dwarf_Word o = 0;
		const char *n;
		Dwarf_Die m;

		if (dwarf_tag(&c) != DW_TAG_member)
			continue;
		if (dwarf_attr_integrate(&c, DW_AT_data_member_location, &a))
			dwarf_formudata(&a, &o);
		if (!dwarf_attr_integrate(&c, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, &m))
			continue;
		n = dwarf_diename(&c);
		if (n && strcmp(n, name) == 0) {
			*off = o;
			*mt = m;
			return true;
		}
		if (!n) {
			Dwarf_Word sub;

			if (member(&m, name, &sub, mt)) {
				*off = o + sub;
				return true;
			}
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/* Offset of member path ("u.l.nextraargs") in the type named tname in
 * the Lua module's DWARF, or -1. */
static int dw_off(struct lc_target *t, uint64_t modaddr, const char *tname,
		  const char *path)
{
	Dwfl_Module *mod = dwfl_addrmodule(t->prog->dwfl, modaddr);
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;

	ck_assert_ptr_nonnull(mod);
	while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
		Dwarf_Die c;

		if (dwarf_child(cu, &c) != 0)
			continue;
		do {
			const char *n = dwarf_diename(&c);
			int tag = dwarf_tag(&c);
			Dwarf_Die d = c;
			char buf[64], *save = NULL;
			Dwarf_Word total = 0;
			bool ok = true;

			if ((tag != DW_TAG_structure_type &&
			     tag != DW_TAG_union_type &&
			     tag != DW_TAG_typedef) || !n ||
			    strcmp(n, tname) != 0 ||
			    dwarf_hasattr(&c, DW_AT_declaration) || !peel(&d) ||
			    dwarf_hasattr(&d, DW_AT_declaration))
				continue;
			snprintf(buf, sizeof(buf), "%s", path);
			for (char *p = strtok_r(buf, ".", &save); p && ok;
			     p = strtok_r(NULL, ".", &save)) {
				Dwarf_Word o;
				Dwarf_Die m;

				ok = member(&d, p, &o, &m);
				total += o;
				d = m;
			}
			if (ok)
				return (int)total;
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	return -1;
}

static uint64_t sym_addr(struct lc_target *t, uint64_t modaddr,
			 const char *name)
{
	Dwfl_Module *mod = dwfl_addrmodule(t->prog->dwfl, modaddr);
	int n = dwfl_module_getsymtab(mod);

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		const char *s = dwfl_module_getsym_info(mod, i, &sym, &a, NULL,
							NULL, NULL);

		if (s && strcmp(s, name) == 0 && sym.st_shndx != SHN_UNDEF)
			return a;
	}
	ck_abort_msg("no symbol %s", name);
	return 0;
}

/* ---- environments: one Lua version over one image ---- */

struct env {
	struct image im;
	struct lc_target *t;
	const struct lc_layout *l;
	struct lc_lua_ctx *ctx;
	int major;
	/* From DWARF, here. */
	int tab_tt, tab_lastfree, proto_tt, lcl_tt, lcl_upvals, ccl_tt,
	    ud_tt, ci_nextra, uv_value;
};

static const char *lib_path(int major)
{
	const char *e = getenv(major == 501 ? "LUACORE_TEST_LUA51" :
			       major == 503 ? "LUACORE_TEST_LUA53" :
			       "LUACORE_TEST_LUA54");

	if (e)
		return e;
	return major == 501 ? "/usr/lib/x86_64-linux-gnu/liblua5.1.so.0" :
	       major == 503 ? "/usr/lib/x86_64-linux-gnu/liblua5.3.so.0" :
	       "/usr/lib/x86_64-linux-gnu/liblua5.4.so.0";
}

static struct env *env_open(int major)
{
	struct env *e = calloc(1, sizeof(*e));
	struct lc_error *err;
	uint64_t m;

	ck_assert_ptr_nonnull(e);
	e->im.base = BASE;
	e->im.brk = BASE + 0x1000;
	e->im.bytes = calloc(1, SIZE);
	ck_assert_ptr_nonnull(e->im.bytes);
	e->major = major;
	ck_assert_ptr_null(lc_target_create_callback(image_read, &e->im, &e->t));
	err = lc_target_add_module(e->t, lib_path(major), BIAS);
	ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	err = lc_layout_get(e->t, &e->l);
	ck_assert_msg(err == NULL, "%s (install liblua5.x-0-dbg)",
		      lc_error_message(err));
	ck_assert_int_eq(e->l->major, major);
	ck_assert_ptr_null(lc_test_ctx(e->t, &e->ctx));
	m = e->l->module_start;
	e->tab_tt = dw_off(e->t, m, "Table", "tt");
	e->tab_lastfree = dw_off(e->t, m, "Table", "lastfree");
	e->proto_tt = dw_off(e->t, m, "Proto", "tt");
	e->lcl_tt = dw_off(e->t, m, "LClosure", "tt");
	e->lcl_upvals = major == 501 ? dw_off(e->t, m, "Closure", "l.upvals") :
			dw_off(e->t, m, "LClosure", "upvals");
	e->ccl_tt = dw_off(e->t, m, "CClosure", "tt");
	e->ud_tt = dw_off(e->t, m, "Udata", major == 501 ? "uv.tt" : "tt");
	e->ci_nextra = dw_off(e->t, m, "CallInfo", "u.l.nextraargs");
	e->uv_value = dw_off(e->t, m, "UpVal", "u.value");
	ck_assert_int_ge(e->tab_tt, 0);
	ck_assert_int_ge(e->tab_lastfree, 0);
	ck_assert_int_ge(e->proto_tt, 0);
	ck_assert_int_ge(e->lcl_upvals, 0);
	ck_assert_int_ge(e->ud_tt, 0);
	ck_assert_int_ge(e->uv_value, 0);
	return e;
}

static void env_close(struct env *e)
{
	lc_lua_ctx_destroy(e->ctx);
	lc_target_destroy(e->t);
	free(e->im.bytes);
	free(e);
}

static uint64_t obj(struct env *e, size_t size)
{
	uint64_t a = e->im.brk;

	e->im.brk = (a + size + 15) & ~15ull;
	ck_assert_uint_le(e->im.brk, BASE + SIZE);
	return a;
}

static void putn(struct env *e, uint64_t addr, uint64_t v, unsigned size)
{
	ck_assert_uint_ge(addr, BASE);
	ck_assert_uint_le(addr + size, BASE + SIZE);
	memcpy(e->im.bytes + (addr - BASE), &v, size);
}

static void put(struct env *e, uint64_t base, struct lc_field f, uint64_t v)
{
	ck_assert_int_ge(f.off, 0);
	putn(e, base + (uint64_t)f.off, v, f.size);
}

static void putb(struct env *e, uint64_t addr, const void *s, size_t n)
{
	ck_assert_uint_le(addr + n, BASE + SIZE);
	memcpy(e->im.bytes + (addr - BASE), s, n);
}

/* Tags as each version stores them. */
enum { NIL, BOOL_F, BOOL_T, LUD, FLT, INT, SHRSTR, LNGSTR, TABLE, LCL, LCF,
       CCL, UDATA, THREAD };

static unsigned tag(const struct env *e, int what)
{
	static const unsigned t51[] = { 0, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 6,
					7, 8 };
	static const unsigned t53[] = { 0, 1, 1, 2, 0x03, 0x13, 0x44, 0x54,
					0x45, 0x46, 0x16, 0x66, 0x47, 0x48 };
	static const unsigned t54[] = { 0, 0x01, 0x11, 2, 0x13, 0x03, 0x44,
					0x54, 0x45, 0x46, 0x16, 0x66, 0x47,
					0x48 };

	return e->major == 501 ? t51[what] : e->major == 503 ? t53[what] :
	       t54[what];
}

static void set_tv(struct env *e, uint64_t addr, unsigned tt, uint64_t val)
{
	putn(e, addr + (uint64_t)e->l->tv.value.off, val, 8);
	put(e, addr, e->l->tv.tt, tt);
}

static void dec(struct env *e, unsigned tt, uint64_t val, struct lc_value *v)
{
	uint64_t a = obj(e, 16);

	set_tv(e, a, tt, val);
	lc_lua_value(e->ctx, a, v);
}

static uint64_t dbl(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u;
}

/* A TString holding s[0..n), claiming length len (normally n). */
static uint64_t mkstr_len(struct env *e, const char *s, size_t n,
			  uint64_t len, bool lng)
{
	const struct lc_layout *l = e->l;
	uint64_t a = obj(e, l->ts_contents + n + 1);

	put(e, a, l->ts.tt, e->major == 501 ? 4 : lng ? 0x14 : 0x04);
	if (e->major == 501)
		put(e, a, l->ts.len, len);
	else
		put(e, a, lng ? l->ts.lnglen : l->ts.shrlen, len);
	putb(e, a + l->ts_contents, s, n);
	return a;
}

static uint64_t mkstr(struct env *e, const char *s)
{
	return mkstr_len(e, s, strlen(s), strlen(s), strlen(s) > 40);
}

static void dec_str(struct env *e, const char *s, size_t n,
		    struct lc_value *v)
{
	bool lng = n > 40;

	dec(e, tag(e, lng ? LNGSTR : SHRSTR), mkstr_len(e, s, n, n, lng), v);
}

/* A Table: array size asize (raw field), 1 << lsz nodes or the dummy. */
static uint64_t mktable(struct env *e, unsigned asize, unsigned lsz,
			bool dummy, uint64_t mt, unsigned flags)
{
	const struct lc_layout *l = e->l;
	uint64_t h = obj(e, 96), node = obj(e, 64);

	putn(e, h + (uint64_t)e->tab_tt, 5, 1);
	put(e, h, l->tab.lsizenode, lsz);
	put(e, h, l->tab.sizearray, asize);
	put(e, h, l->tab.flags, flags);
	put(e, h, l->tab.metatable, mt);
	put(e, h, l->tab.node, node);
	if (dummy)	/* 5.1/5.2 setnodevector: lastfree = node + 0 */
		putn(e, h + (uint64_t)e->tab_lastfree,
		     e->major <= 502 ? node : 0, 8);
	else
		putn(e, h + (uint64_t)e->tab_lastfree,
		     node + (lsz < 32 ? (uint64_t)l->sz_node << lsz : 0), 8);
	return h;
}

static uint64_t mkproto(struct env *e, const char *source, int linedefined)
{
	const struct lc_layout *l = e->l;
	uint64_t p = obj(e, 256);

	putn(e, p + (uint64_t)e->proto_tt, e->major == 504 ? 10 : 9, 1);
	put(e, p, l->p.source, source ? mkstr(e, source) : 0);
	put(e, p, l->p.linedefined, (uint64_t)linedefined);
	put(e, p, l->p.lastlinedefined, (uint64_t)linedefined + 10);
	return p;
}

static uint64_t mklcl(struct env *e, uint64_t proto, int nup)
{
	const struct lc_layout *l = e->l;
	uint64_t cl = obj(e, 64 + 8 * (size_t)nup);

	putn(e, cl + (uint64_t)e->lcl_tt, 6, 1);
	if (e->major == 501)
		put(e, cl, l->cl.isC, 0);
	put(e, cl, l->cl.p, proto);
	return cl;
}

static uint64_t mkccl(struct env *e, uint64_t f)
{
	uint64_t cl = obj(e, 64);

	putn(e, cl + (uint64_t)e->ccl_tt, e->major == 501 ? 6 : 0x26, 1);
	if (e->major == 501)
		put(e, cl, e->l->cl.isC, 1);
	put(e, cl, e->l->cl.f, f);
	return cl;
}

static uint64_t mkudata(struct env *e, uint64_t len, uint64_t mt)
{
	uint64_t u = obj(e, 64);

	putn(e, u + (uint64_t)e->ud_tt, 7, 1);
	put(e, u, e->l->ud.len, len);
	put(e, u, e->l->ud.metatable, mt);
	return u;
}

static uint64_t mkthread(struct env *e, int status)
{
	uint64_t th = obj(e, 256);

	put(e, th, e->l->L.tt, 8);
	put(e, th, e->l->L.status, (uint64_t)status);
	return th;
}

#define CHECK_VALUE(v, ty, tx) do {					\
		ck_assert_str_eq((v).type, (ty));			\
		ck_assert_ptr_nonnull((v).text);			\
		ck_assert_str_eq((v).text, (tx));			\
	} while (0)

/* ---- derived offsets ---- */

static void check_offsets(int major)
{
	struct env *e = env_open(major);
	const struct lc_layout *l = e->l;

	/* What vm/puc/values.c assumes for fields the layout lacks. */
	ck_assert_int_eq(e->tab_lastfree, l->tab.node.off + 8);
	ck_assert_int_eq(e->lcl_upvals, l->cl.p.off + 8);
	if (major == 504)
		ck_assert_int_eq(e->ci_nextra, l->ci.savedpc.off + 12);
	/* The CommonHeader tt of every GC object sits where lua_State's
	 * does. */
	ck_assert_int_eq(e->tab_tt, l->L.tt.off);
	ck_assert_int_eq(e->proto_tt, l->L.tt.off);
	ck_assert_int_eq(e->lcl_tt, l->L.tt.off);
	ck_assert_int_eq(e->ud_tt, l->L.tt.off);
	ck_assert_int_eq(l->ts.tt.off, l->L.tt.off);
	env_close(e);
}

START_TEST(test_offsets_51) { check_offsets(501); } END_TEST
START_TEST(test_offsets_53) { check_offsets(503); } END_TEST
START_TEST(test_offsets_54) { check_offsets(504); } END_TEST

/* ---- values per version ---- */

START_TEST(test_values_51)
{
	struct env *e = env_open(501);
	struct lc_value v;
	char want[128];
	uint64_t gettop = sym_addr(e->t, e->l->module_start, "lua_gettop");
	uint64_t mt = mktable(e, 0, 0, true, 0, 0);
	uint64_t h, cl, u, th;

	dec(e, 0, 0x1234, &v);
	CHECK_VALUE(v, "nil", "nil");
	ck_assert(!v.partial);
	ck_assert_int_eq(v.len, -1);
	lc_value_deinit(&v);
	/* Value.b is an int: the stale upper half does not count. */
	dec(e, 1, 0xdeadbeef00000000ull, &v);
	CHECK_VALUE(v, "boolean", "false");
	lc_value_deinit(&v);
	dec(e, 1, 0xdeadbeef00000001ull, &v);
	CHECK_VALUE(v, "boolean", "true");
	lc_value_deinit(&v);
	/* 5.1: every number a double, no ".0". */
	dec(e, 3, dbl(1.0), &v);
	CHECK_VALUE(v, "number", "1");
	lc_value_deinit(&v);
	dec(e, 3, dbl(3.5), &v);
	CHECK_VALUE(v, "number", "3.5");
	lc_value_deinit(&v);
	dec(e, 3, dbl(0.1), &v);
	CHECK_VALUE(v, "number", "0.1");
	lc_value_deinit(&v);
	dec(e, 3, dbl(1e15), &v);
	CHECK_VALUE(v, "number", "1e+15");
	lc_value_deinit(&v);
	dec_str(e, "a\tb\"c", 5, &v);
	CHECK_VALUE(v, "string", "\"a\\tb\\\"c\"");
	ck_assert_int_eq(v.len, 5);
	ck_assert_uint_eq(v.strlen, 5);
	ck_assert_mem_eq(v.str, "a\tb\"c", 5);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	ck_assert_ptr_null(v.str);
	ck_assert_ptr_null(v.text);

	/* Tables: the 5.1 dummy node (lastfree == node), a real one. */
	h = mktable(e, 3, 0, true, mt, 0);
	dec(e, 5, h, &v);
	snprintf(want, sizeof(want), "table: 0x%" PRIx64, h);
	CHECK_VALUE(v, "table", want);
	ck_assert_int_eq(v.len, 3);
	ck_assert_int_eq(v.hsize, 0);
	ck_assert_uint_eq(v.metatable, mt);
	ck_assert_uint_eq(v.addr, h);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	h = mktable(e, 0, 0, false, 0, 0);
	dec(e, 5, h, &v);
	ck_assert_int_eq(v.hsize, 1);
	ck_assert_uint_eq(v.metatable, 0);
	lc_value_deinit(&v);
	h = mktable(e, 7, 3, false, 0, 0);
	dec(e, 5, h, &v);
	ck_assert_int_eq(v.len, 7);
	ck_assert_int_eq(v.hsize, 8);
	lc_value_deinit(&v);

	/* Functions: union Closure, Lua or C by isC. */
	cl = mklcl(e, mkproto(e, "@t.lua", 12), 0);
	dec(e, 6, cl, &v);
	CHECK_VALUE(v, "function", "function: @t.lua:12");
	ck_assert_uint_eq(v.addr, cl);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	cl = mkccl(e, gettop);
	dec(e, 6, cl, &v);
	CHECK_VALUE(v, "function", "function: [C] lua_gettop");
	ck_assert_uint_eq(v.addr, cl);	/* the closure, as tostring shows */
	lc_value_deinit(&v);
	cl = mkccl(e, gettop + 1);
	dec(e, 6, cl, &v);
	CHECK_VALUE(v, "function", "function: [C] lua_gettop+0x1");
	lc_value_deinit(&v);

	u = mkudata(e, 24, mt);
	dec(e, 7, u, &v);
	snprintf(want, sizeof(want), "userdata: 0x%" PRIx64, u);
	CHECK_VALUE(v, "userdata", want);
	ck_assert_int_eq(v.len, 24);
	ck_assert_uint_eq(v.metatable, mt);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	dec(e, 2, 0xabc0, &v);
	CHECK_VALUE(v, "lightuserdata", "userdata: 0xabc0");
	ck_assert_uint_eq(v.addr, 0xabc0);
	lc_value_deinit(&v);
	th = mkthread(e, 1);
	dec(e, 8, th, &v);
	snprintf(want, sizeof(want), "thread: 0x%" PRIx64 " (status 1)", th);
	CHECK_VALUE(v, "thread", want);
	lc_value_deinit(&v);

	/* 5.1 has no variants: 5.2+ tags are garbage here, as are
	 * LUA_TPROTO (9) and LUA_TDEADKEY (11). */
	for (unsigned bad = 9; bad < 12; bad++) {
		dec(e, bad, h, &v);
		ck_assert_str_eq(v.type, "?");
		ck_assert(v.partial);
		lc_value_deinit(&v);
	}
	dec(e, 0x45, h, &v);
	ck_assert_str_eq(v.type, "?");
	ck_assert(v.partial);
	lc_value_deinit(&v);
	env_close(e);
}
END_TEST

START_TEST(test_values_53)
{
	struct env *e = env_open(503);
	struct lc_value v;
	char want[128];
	uint64_t gettop = sym_addr(e->t, e->l->module_start, "lua_gettop");
	uint64_t h, u;

	/* 5.3: LUA_TNUMFLT 0x03, LUA_TNUMINT 0x13. */
	dec(e, 0x13, 42, &v);
	CHECK_VALUE(v, "number", "42");
	lc_value_deinit(&v);
	dec(e, 0x13, (uint64_t)-7, &v);
	CHECK_VALUE(v, "number", "-7");
	lc_value_deinit(&v);
	dec(e, 0x13, 0x8000000000000000ull, &v);
	CHECK_VALUE(v, "number", "-9223372036854775808");
	lc_value_deinit(&v);
	dec(e, 0x03, dbl(1.0), &v);
	CHECK_VALUE(v, "number", "1.0");
	lc_value_deinit(&v);
	dec(e, 0x03, dbl(-2.0), &v);
	CHECK_VALUE(v, "number", "-2.0");
	lc_value_deinit(&v);
	dec(e, 0x03, dbl(0.1), &v);
	CHECK_VALUE(v, "number", "0.1");
	lc_value_deinit(&v);
	dec(e, 0x03, dbl(1e100), &v);
	CHECK_VALUE(v, "number", "1e+100");
	lc_value_deinit(&v);
	dec(e, 0x03, dbl(INFINITY), &v);
	CHECK_VALUE(v, "number", "inf");
	lc_value_deinit(&v);
	dec(e, 0x03, dbl(-INFINITY), &v);
	CHECK_VALUE(v, "number", "-inf");
	lc_value_deinit(&v);
	dec(e, 1, 0xffffffff00000000ull, &v);
	CHECK_VALUE(v, "boolean", "false");
	lc_value_deinit(&v);
	dec(e, 1, 5, &v);
	CHECK_VALUE(v, "boolean", "true");
	lc_value_deinit(&v);

	/* Short and long strings. */
	dec(e, 0x44, mkstr_len(e, "abc", 3, 3, false), &v);
	CHECK_VALUE(v, "string", "\"abc\"");
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	dec(e, 0x54, mkstr_len(e, "long\n", 5, 5, true), &v);
	CHECK_VALUE(v, "string", "\"long\\n\"");
	ck_assert_int_eq(v.len, 5);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	/* The tag says long, the header short: not believed. */
	dec(e, 0x54, mkstr_len(e, "abc", 3, 3, false), &v);
	ck_assert_str_eq(v.type, "string");
	ck_assert(v.partial);
	lc_value_deinit(&v);
	/* Without BIT_ISCOLLECTABLE a string tag is garbage. */
	dec(e, 0x04, mkstr(e, "abc"), &v);
	ck_assert_str_eq(v.type, "?");
	ck_assert(v.partial);
	lc_value_deinit(&v);

	/* 5.3 tables: the dummy node has lastfree NULL. */
	h = mktable(e, 2, 0, true, 0, 0);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.len, 2);
	ck_assert_int_eq(v.hsize, 0);
	lc_value_deinit(&v);
	h = mktable(e, 0, 0, false, 0, 0);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.hsize, 1);
	lc_value_deinit(&v);
	h = mktable(e, 0, 4, false, 0, 0);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.hsize, 16);
	lc_value_deinit(&v);
	/* lastfree NULL with nodes: a dummy, but not a consistent one. */
	h = mktable(e, 0, 4, true, 0, 0);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.hsize, 0);
	ck_assert(v.partial);
	lc_value_deinit(&v);

	/* Light C function and C closure. */
	dec(e, 0x16, gettop, &v);
	CHECK_VALUE(v, "function", "function: [C] lua_gettop");
	ck_assert_uint_eq(v.addr, gettop);
	lc_value_deinit(&v);
	uint64_t cl = mkccl(e, gettop);
	dec(e, 0x66, cl, &v);
	CHECK_VALUE(v, "function", "function: [C] lua_gettop");
	ck_assert_uint_eq(v.addr, cl);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	/* A C closure tag on a Lua closure: the header disagrees. */
	dec(e, 0x66, mklcl(e, mkproto(e, "@x", 1), 0), &v);
	ck_assert_str_eq(v.type, "function");
	ck_assert(v.partial);
	lc_value_deinit(&v);
	dec(e, 0x46, mklcl(e, mkproto(e, "=stdin", 0), 0), &v);
	CHECK_VALUE(v, "function", "function: =stdin:0");
	lc_value_deinit(&v);

	u = mkudata(e, 100, 0);
	dec(e, 0x47, u, &v);
	snprintf(want, sizeof(want), "userdata: 0x%" PRIx64, u);
	CHECK_VALUE(v, "userdata", want);
	ck_assert_int_eq(v.len, 100);
	lc_value_deinit(&v);
	/* Garbage: 5.4-only variants, dead keys, out of range. */
	{
		unsigned bad[] = { 0x11, 0x10, 0x20, 0x23, 0x09, 0x0a,
				   0x45 | 0x80, 0x1234567 };

		for (size_t i = 0; i < LC_ARRAY_SIZE(bad); i++) {
			dec(e, bad[i], h, &v);
			ck_assert_msg(strcmp(v.type, "?") == 0, "tag 0x%x",
				      bad[i]);
			ck_assert(v.partial);
			ck_assert_ptr_nonnull(v.text);
			lc_value_deinit(&v);
		}
	}
	env_close(e);
}
END_TEST

START_TEST(test_values_54)
{
	struct env *e = env_open(504);
	struct lc_value v;
	char want[128];
	uint64_t h, th, mt = mktable(e, 0, 0, true, 0, 0);

	/* Nil and its 5.4 variants (empty slot, absent key). */
	for (unsigned t = 0; t <= 0x20; t += 0x10) {
		dec(e, t, 99, &v);
		CHECK_VALUE(v, "nil", "nil");
		ck_assert(!v.partial);
		lc_value_deinit(&v);
	}
	/* Booleans are variants; the payload does not matter. */
	dec(e, 0x01, 1, &v);
	CHECK_VALUE(v, "boolean", "false");
	lc_value_deinit(&v);
	dec(e, 0x11, 0, &v);
	CHECK_VALUE(v, "boolean", "true");
	lc_value_deinit(&v);
	/* 5.4: LUA_VNUMINT 0x03, LUA_VNUMFLT 0x13 (swapped from 5.3). */
	dec(e, 0x03, 3, &v);
	CHECK_VALUE(v, "number", "3");
	lc_value_deinit(&v);
	dec(e, 0x13, dbl(3.0), &v);
	CHECK_VALUE(v, "number", "3.0");
	lc_value_deinit(&v);
	dec(e, 0x13, dbl(5.5), &v);
	CHECK_VALUE(v, "number", "5.5");
	lc_value_deinit(&v);
	dec(e, 0x13, dbl(9007199254740993.0), &v);
	CHECK_VALUE(v, "number", "9.007199254741e+15");
	lc_value_deinit(&v);
	dec(e, 0x13, dbl(1e14), &v);
	CHECK_VALUE(v, "number", "1e+14");
	lc_value_deinit(&v);
	dec(e, 0x13, dbl(123456789012.0), &v);
	CHECK_VALUE(v, "number", "123456789012.0");
	lc_value_deinit(&v);

	/* Array sizes (ltable.c:luaH_realasize): alimit is the size unless
	 * BITRAS is set and it is not a power of 2. */
	h = mktable(e, 5, 0, true, mt, 0);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.len, 5);
	ck_assert_int_eq(v.hsize, 0);
	ck_assert_uint_eq(v.metatable, mt);
	lc_value_deinit(&v);
	h = mktable(e, 5, 1, false, 0, 0x80);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.len, 8);
	ck_assert_int_eq(v.hsize, 2);
	lc_value_deinit(&v);
	h = mktable(e, 4, 0, false, 0, 0x80);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.len, 4);
	lc_value_deinit(&v);
	h = mktable(e, 33, 0, false, 0, 0x80 | 0x3f);
	dec(e, 0x45, h, &v);
	ck_assert_int_eq(v.len, 64);
	lc_value_deinit(&v);
	/* Unbelievable node counts. */
	h = mktable(e, 0, 200, false, 0, 0);
	dec(e, 0x45, h, &v);
	ck_assert(v.partial);
	ck_assert_int_eq(v.hsize, -1);
	lc_value_deinit(&v);

	/* Sources: code strings shown as chunkid does. */
	dec(e, 0x46, mklcl(e, mkproto(e, "return 1\nend", 3), 0), &v);
	CHECK_VALUE(v, "function", "function: [string \"return 1...\"]:3");
	lc_value_deinit(&v);
	dec(e, 0x46, mklcl(e, mkproto(e, "x=1", 0), 0), &v);
	CHECK_VALUE(v, "function", "function: [string \"x=1\"]:0");
	lc_value_deinit(&v);
	dec(e, 0x46, mklcl(e, mkproto(e, NULL, 7), 0), &v);
	CHECK_VALUE(v, "function", "function: =?:7");
	lc_value_deinit(&v);
	{
		char src[200] = "@/very";

		for (int i = 0; i < 20; i++)
			strcat(src, "/long/");
		strcat(src, "file.lua");
		dec(e, 0x46, mklcl(e, mkproto(e, src, 42), 0), &v);
		ck_assert_str_eq(v.type, "function");
		ck_assert_str_eq(v.text + strlen(v.text) - 12,
				 "/file.lua:42");
		ck_assert(strncmp(v.text, "function: @...", 14) == 0);
		ck_assert_uint_le(strlen(v.text), 10 + 60 + 3);
		lc_value_deinit(&v);
	}

	th = mkthread(e, 1);
	dec(e, 0x48, th, &v);
	snprintf(want, sizeof(want), "thread: 0x%" PRIx64 " (status 1)", th);
	CHECK_VALUE(v, "thread", want);
	ck_assert_uint_eq(v.addr, th);
	lc_value_deinit(&v);
	/* A thread tag on a table. */
	dec(e, 0x48, mt, &v);
	ck_assert_str_eq(v.type, "thread");
	ck_assert(v.partial);
	lc_value_deinit(&v);
	dec(e, 0x47, mkudata(e, 8, 0), &v);
	ck_assert_int_eq(v.len, 8);
	ck_assert_uint_eq(v.metatable, 0);
	lc_value_deinit(&v);
	{
		/* Without the collectable bit, 5.3 booleans, proto, upval,
		 * out-of-range. */
		unsigned bad[] = { 0x07, 0x05, 0x21, 0x09, 0x0a, 0x30, 0x4a,
				   0x76, 0xff };

		for (size_t i = 0; i < LC_ARRAY_SIZE(bad); i++) {
			dec(e, bad[i], mt, &v);
			ck_assert_msg(strcmp(v.type, "?") == 0, "tag 0x%x",
				      bad[i]);
			ck_assert(v.partial);
			lc_value_deinit(&v);
		}
	}
	env_close(e);
}
END_TEST

/* ---- strings ---- */

START_TEST(test_string_escapes)
{
	struct env *e = env_open(504);
	struct lc_value v;

	dec_str(e, "a\tb\"c\\\n\0x\001\r\177", 12, &v);
	CHECK_VALUE(v, "string", "\"a\\tb\\\"c\\\\\\n\\000x\\001\\r\\127\"");
	ck_assert_int_eq(v.len, 12);
	ck_assert_uint_eq(v.strlen, 12);
	ck_assert_mem_eq(v.str, "a\tb\"c\\\n\0x\001\r\177", 12);
	lc_value_deinit(&v);
	/* Valid UTF-8 kept, invalid bytes escaped. */
	dec_str(e, "h\xc3\xa9llo \xff\xc3(\xed\xa0\x80", 13, &v);
	CHECK_VALUE(v, "string",
		    "\"h\xc3\xa9llo \\255\\195(\\237\\160\\128\"");
	lc_value_deinit(&v);
	/* Lua's notation: ESC is \027 (Lua has no \e); C1 escaped. */
	dec_str(e, "\033[2J\xc2\x9b", 6, &v);
	CHECK_VALUE(v, "string", "\"\\027[2J\\194\\155\"");
	lc_value_deinit(&v);
	dec_str(e, "", 0, &v);
	CHECK_VALUE(v, "string", "\"\"");
	ck_assert_int_eq(v.len, 0);
	lc_value_deinit(&v);
	env_close(e);
}
END_TEST

/* base/escape.c in C notation, as the text output prints names. */
static void check_copy(const char *in, const char *want)
{
	char buf[128];

	lc_esc_copy(buf, sizeof(buf), in);
	ck_assert_str_eq(buf, want);
}

START_TEST(test_name_escapes)
{
	char small[8];

	check_copy("plain name_1 (x.lua:3)", "plain name_1 (x.lua:3)");
	check_copy("\033[2J\nfake\t#0\a\b\f\v\r\\", "\\e[2J\\nfake\\t#0\\a\\b\\f\\v\\r\\\\");
	check_copy("\001\037\177\"'", "\\x01\\x1f\\x7f\"'");
	/* Kept: well-formed UTF-8 (2, 3 and 4 bytes). */
	check_copy("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		   "h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* Not UTF-8: stray continuation, bad lead, cut sequence, overlong,
	 * surrogate, past U+10FFFF. */
	check_copy("\x80\xff\xfe", "\\x80\\xff\\xfe");
	check_copy("\xe2\x82", "\\xe2\\x82");
	check_copy("\xc0\xaf\xe0\x80\xaf", "\\xc0\\xaf\\xe0\\x80\\xaf");
	check_copy("\xed\xa0\x80", "\\xed\\xa0\\x80");
	check_copy("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	/* Well-formed but acting on the terminal or the line: C1 (CSI),
	 * U+2028, U+202E (right-to-left override), U+2066; U+00A0 and
	 * U+2027 are kept. */
	check_copy("\xc2\x9b\xc2\xa0", "\\xc2\\x9b\xc2\xa0");
	check_copy("\xe2\x80\xa8\xe2\x80\xae\xe2\x81\xa6\xe2\x80\xa7",
		   "\\xe2\\x80\\xa8\\xe2\\x80\\xae\\xe2\\x81\\xa6\xe2\x80\xa7");
	check_copy(NULL, "");
	/* Cut on a character boundary: "ab" and \e take 4 of 7 bytes; the
	 * next \x01 does not fit. */
	ck_assert_uint_eq(lc_esc_copy(small, sizeof(small), "ab\033\001"), 4);
	ck_assert_str_eq(small, "ab\\e");
	ck_assert_uint_eq(lc_esc_copy(small, 3, "\xc3\xa9\xc3\xa9"), 2);
	ck_assert_str_eq(small, "\xc3\xa9");
}
END_TEST

START_TEST(test_string_shortening)
{
	struct env *e = env_open(504);
	struct lc_value v;
	char s[200], want[100];

	/* 58 bytes fit with their quotes (60); 59 do not. */
	memset(s, 'x', sizeof(s));
	dec_str(e, s, 58, &v);
	ck_assert_uint_eq(strlen(v.text), 60);
	ck_assert_int_eq(v.text[59], '"');
	lc_value_deinit(&v);
	dec_str(e, s, 59, &v);
	snprintf(want, sizeof(want), "\"%.55s\"...", s);
	CHECK_VALUE(v, "string", want);
	ck_assert_int_eq(v.len, 59);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	dec_str(e, s, 200, &v);
	CHECK_VALUE(v, "string", want);
	ck_assert_int_eq(v.len, 200);
	ck_assert_uint_eq(v.strlen, 200);
	ck_assert(!v.partial);
	lc_value_deinit(&v);
	/* Neither an escape nor a UTF-8 character is split. */
	memset(s, 'a', 54);
	memcpy(s + 54, "\n\n\n\n\n\n", 6);
	dec_str(e, s, 60, &v);
	snprintf(want, sizeof(want), "\"%.54s\"...", s);
	CHECK_VALUE(v, "string", want);
	lc_value_deinit(&v);
	memcpy(s + 54, "\xc3\xa9\xc3\xa9\xc3\xa9", 6);
	dec_str(e, s, 60, &v);
	CHECK_VALUE(v, "string", want);
	lc_value_deinit(&v);
	memset(s, 'a', 53);
	memcpy(s + 53, "\xc3\xa9\xc3\xa9\xc3\xa9", 6);
	dec_str(e, s, 59, &v);
	snprintf(want, sizeof(want), "\"%.53s\xc3\xa9\"...", s);
	CHECK_VALUE(v, "string", want);
	lc_value_deinit(&v);
	/* A short string that escapes wide. */
	memset(s, 1, 30);
	dec_str(e, s, 30, &v);
	ck_assert_uint_le(strlen(v.text), 60);
	ck_assert_str_eq(v.text + strlen(v.text) - 4, "\"...");
	ck_assert_int_eq(v.len, 30);
	lc_value_deinit(&v);
	env_close(e);
}
END_TEST

static void check_huge_string(int major)
{
	struct env *e = env_open(major);
	struct lc_value v;
	uint64_t ts;
	char buf[5000];

	/* A long string claiming 2^40 bytes at the very end of the image:
	 * its head is readable, its terminator is not. */
	memset(buf, 'q', sizeof(buf));
	e->im.brk = BASE + SIZE - 8192;
	ts = mkstr_len(e, buf, sizeof(buf), 1ull << 40, true);
	dec(e, tag(e, LNGSTR), ts, &v);
	ck_assert_str_eq(v.type, "string");
	ck_assert(v.partial);
	ck_assert_int_eq(v.len, (int64_t)1 << 40);
	ck_assert_uint_eq(v.strlen, LC_VALUE_STR_MAX);
	ck_assert_uint_le(strlen(v.text), LC_VALUE_TEXT_MAX);
	ck_assert(strncmp(v.text, "\"qqqq", 5) == 0);
	ck_assert_str_eq(v.text + strlen(v.text) - 4, "\"...");
	lc_value_deinit(&v);
	/* Whose head runs off the image too: the first bytes still show. */
	e->im.brk = BASE + SIZE - 128;
	ts = mkstr_len(e, buf, 32, 1ull << 40, true);
	dec(e, tag(e, LNGSTR), ts, &v);
	ck_assert_str_eq(v.type, "string");
	ck_assert(v.partial);
	ck_assert_uint_eq(v.strlen, 64);
	ck_assert(strncmp(v.text, "\"qqqq", 5) == 0);
	lc_value_deinit(&v);
	/* A plausible length without its NUL. */
	e->im.brk = BASE + 0x2000;
	ts = mkstr_len(e, "abcdef", 6, 5, false);
	dec(e, tag(e, SHRSTR), ts, &v);
	CHECK_VALUE(v, "string", "\"abcde\"");
	ck_assert(v.partial);
	lc_value_deinit(&v);
	/* Pointers to nowhere, misaligned, to non-strings. */
	dec(e, tag(e, SHRSTR), BASE + SIZE + 0x1000, &v);
	ck_assert_str_eq(v.type, "string");
	ck_assert(v.partial);
	lc_value_deinit(&v);
	dec(e, tag(e, SHRSTR), ts + 1, &v);
	ck_assert(v.partial);
	lc_value_deinit(&v);
	dec(e, tag(e, SHRSTR), mktable(e, 0, 0, true, 0, 0), &v);
	ck_assert(v.partial);
	ck_assert_ptr_null(v.str);
	lc_value_deinit(&v);
	env_close(e);
}

START_TEST(test_huge_string_51) { check_huge_string(501); } END_TEST
START_TEST(test_huge_string_54) { check_huge_string(504); } END_TEST

START_TEST(test_garbage_pointers)
{
	for (int major = 501; major <= 504; major += major == 501 ? 2 : 1) {
		struct env *e = env_open(major);
		struct lc_value v;
		const int kinds[] = { TABLE, LCL, CCL, UDATA, THREAD };
		const uint64_t ptrs[] = { 0, 8, BASE + SIZE + 64, BASE + 0x1001,
					  ~0ull & ~7ull, 0x0000800000000000ull };

		for (size_t k = 0; k < LC_ARRAY_SIZE(kinds); k++) {
			for (size_t p = 0; p < LC_ARRAY_SIZE(ptrs); p++) {
				dec(e, tag(e, kinds[k]), ptrs[p], &v);
				ck_assert_ptr_nonnull(v.type);
				ck_assert_ptr_nonnull(v.text);
				ck_assert_msg(v.partial, "kind %d ptr %zu", kinds[k], p);
				lc_value_deinit(&v);
			}
		}
		/* A TValue that cannot be read at all. */
		lc_lua_value(e->ctx, BASE + SIZE + 0x100, &v);
		ck_assert_str_eq(v.type, "?");
		ck_assert(v.partial);
		lc_value_deinit(&v);
		lc_lua_value(e->ctx, ~0ull - 4, &v);
		ck_assert_str_eq(v.type, "?");
		lc_value_deinit(&v);
		/* A closure whose Proto is garbage. */
		dec(e, tag(e, LCL), mklcl(e, BASE + 0x1008, 0), &v);
		ck_assert_str_eq(v.type, "function");
		ck_assert(v.partial);
		lc_value_deinit(&v);
		env_close(e);
	}
}
END_TEST

/* ---- frames ---- */

#define SLOT 16u

/* A Proto with code, locals and upvalue names (5.2+ Upvaldesc, 5.1
 * TString *). */
struct locdef {
	const char *name;
	int startpc, endpc;
};

static uint64_t mkproto_full(struct env *e, int numparams, int is_vararg,
			     const struct locdef *locs, int nlocs,
			     const char *const *upnames, int nups)
{
	const struct lc_layout *l = e->l;
	uint64_t p = mkproto(e, "@f.lua", 5);
	uint64_t code = obj(e, 4 * 40), lv, up;

	put(e, p, l->p.code, code);
	put(e, p, l->p.sizecode, 40);
	put(e, p, l->p.numparams, (uint64_t)numparams);
	put(e, p, l->p.is_vararg, (uint64_t)is_vararg);
	put(e, p, l->p.maxstacksize, 20);
	lv = obj(e, (size_t)nlocs * l->sz_locvar + 1);
	for (int i = 0; i < nlocs; i++) {
		uint64_t a = lv + (uint64_t)i * l->sz_locvar;

		put(e, a, l->lv.varname, mkstr(e, locs[i].name));
		put(e, a, l->lv.startpc, (uint64_t)locs[i].startpc);
		put(e, a, l->lv.endpc, (uint64_t)locs[i].endpc);
	}
	put(e, p, l->p.locvars, lv);
	put(e, p, l->p.sizelocvars, (uint64_t)nlocs);
	if (e->major == 501) {
		up = obj(e, 8 * (size_t)nups + 1);
		for (int i = 0; i < nups; i++)
			putn(e, up + 8 * (uint64_t)i, mkstr(e, upnames[i]), 8);
	} else {
		up = obj(e, (size_t)nups * l->sz_upvaldesc + 1);
		for (int i = 0; i < nups; i++)
			put(e, up + (uint64_t)i * l->sz_upvaldesc, l->uvd.name,
			    mkstr(e, upnames[i]));
	}
	put(e, p, l->p.upvalues, up);
	put(e, p, l->p.sizeupvalues, (uint64_t)nups);
	return p;
}

/* Closed upvalue k of closure cl holding (tt, val) inside the UpVal. */
static void set_upval(struct env *e, uint64_t cl, int k, uint64_t tvaddr)
{
	uint64_t uv = obj(e, 64);

	putn(e, cl + (uint64_t)e->lcl_upvals + 8 * (uint64_t)k, uv, 8);
	put(e, uv, e->l->uv.v, tvaddr);
}

static uint64_t closed_upval(struct env *e, uint64_t cl, int k, unsigned tt,
			     uint64_t val)
{
	uint64_t uv = obj(e, 64);

	putn(e, cl + (uint64_t)e->lcl_upvals + 8 * (uint64_t)k, uv, 8);
	set_tv(e, uv + (uint64_t)e->uv_value, tt, val);
	put(e, uv, e->l->uv.v, uv + (uint64_t)e->uv_value);
	return uv;
}

struct want_var {
	const char *kind, *name;
	int index;
	const char *text;
};

static void check_vars(const struct lc_var *vars, size_t n,
		       const struct want_var *w, size_t nw)
{
	for (size_t i = 0; i < n && i < nw; i++) {
		ck_assert_msg(strcmp(vars[i].kind, w[i].kind) == 0 &&
			      strcmp(vars[i].name, w[i].name) == 0 &&
			      vars[i].index == w[i].index &&
			      vars[i].value.text &&
			      strcmp(vars[i].value.text, w[i].text) == 0,
			      "var %zu: got %s %s %d %s, want %s %s %d %s", i,
			      vars[i].kind, vars[i].name, vars[i].index,
			      vars[i].value.text, w[i].kind, w[i].name,
			      w[i].index, w[i].text);
		ck_assert(!vars[i].value.partial);
	}
	ck_assert_uint_eq(n, nw);
}

/* 5.4 image: main thread L with a 40-slot stack at STK; CallInfos
 * CI0 (outer, Lua) <- CI1 (inner, vararg Lua) <- CI2 (C, innermost).
 *   slot 0       base CallInfo's function
 *   slot 1..3    outer: function, locals t, s
 *   slot 4..7    inner as called: original function, a (erased), "two", 5.5
 *   slot 8..11   inner after luaT_adjustvarargs: function (ci->func), a,
 *                n, k
 *   slot 12..13  C function lua_gettop, an argument
 *   top = slot 14; slots 14.. hold stale values. */
struct img54 {
	uint64_t G, L, STK, CI0, CI1, CI2, cl_outer, cl_inner, gettop, env_t,
		p_inner;
};

static uint64_t slot(const struct img54 *m, int k)
{
	return m->STK + (uint64_t)k * SLOT;
}

static void build_54(struct env *e, struct img54 *m)
{
	const struct lc_layout *l = e->l;
	static const struct locdef outer_locs[] = {
		{ "t", 0, 30 }, { "s", 1, 30 },
	};
	/* Nested scopes: i's block ended at 9; k from 10, j in 12..15. */
	static const struct locdef inner_locs[] = {
		{ "a", 0, 30 }, { "n", 3, 30 }, { "i", 5, 9 },
		{ "k", 10, 20 }, { "j", 12, 15 },
	};
	static const char *const inner_ups[] = { "x", "_ENV" };
	uint64_t p_outer, base_ci;

	ck_assert_uint_eq(l->sz_stack_slot, SLOT);
	m->G = obj(e, 1024);
	m->L = obj(e, 1024);
	m->STK = obj(e, 45 * SLOT);
	m->CI0 = obj(e, 128);
	m->CI1 = obj(e, 128);
	m->CI2 = obj(e, 128);
	m->gettop = sym_addr(e->t, l->module_start, "lua_gettop");
	m->env_t = mktable(e, 0, 3, false, 0, 0);
	put(e, m->G, l->G.mainthread, m->L);
	put(e, m->L, l->L.tt, 8);
	put(e, m->L, l->L.l_G, m->G);
	put(e, m->L, l->L.stack, m->STK);
	put(e, m->L, l->L.top, slot(m, 14));
	put(e, m->L, l->L.stack_last, slot(m, 40));
	put(e, m->L, l->L.ci, m->CI2);

	p_outer = mkproto_full(e, 0, 0, outer_locs, 2, NULL, 0);
	m->p_inner = mkproto_full(e, 1, 1, inner_locs, 5, inner_ups, 2);
	m->cl_outer = mklcl(e, p_outer, 0);
	m->cl_inner = mklcl(e, m->p_inner, 2);
	closed_upval(e, m->cl_inner, 0, 0x03, 7);
	set_upval(e, m->cl_inner, 1, slot(m, 2));	/* open: outer's t */

	set_tv(e, slot(m, 0), 0, 0);
	set_tv(e, slot(m, 1), 0x46, m->cl_outer);
	set_tv(e, slot(m, 2), 0x45, m->env_t);
	set_tv(e, slot(m, 3), 0x44, mkstr(e, "sss"));
	set_tv(e, slot(m, 4), 0x46, m->cl_inner);
	set_tv(e, slot(m, 5), 0, 0);
	set_tv(e, slot(m, 6), 0x44, mkstr(e, "two"));
	set_tv(e, slot(m, 7), 0x13, dbl(5.5));
	set_tv(e, slot(m, 8), 0x46, m->cl_inner);
	set_tv(e, slot(m, 9), 0x03, 10);
	set_tv(e, slot(m, 10), 0x03, 2);
	set_tv(e, slot(m, 11), 0x11, 0);
	set_tv(e, slot(m, 12), 0x16, m->gettop);
	set_tv(e, slot(m, 13), 0x03, 99);
	for (int k = 14; k < 45; k++)
		set_tv(e, slot(m, k), 0x03, (uint64_t)(1000 + k));

	base_ci = m->L + (uint64_t)l->L.base_ci.off;
	put(e, base_ci, l->ci.func, slot(m, 0));
	put(e, base_ci, l->ci.next, m->CI0);
	put(e, m->CI0, l->ci.previous, base_ci);
	put(e, m->CI0, l->ci.next, m->CI1);
	put(e, m->CI1, l->ci.previous, m->CI0);
	put(e, m->CI1, l->ci.next, m->CI2);
	put(e, m->CI2, l->ci.previous, m->CI1);
	put(e, m->CI0, l->ci.func, slot(m, 1));
	put(e, m->CI1, l->ci.func, slot(m, 8));
	put(e, m->CI2, l->ci.func, slot(m, 12));
	put(e, m->CI2, l->ci.callstatus, 1u << 1);	/* CIST_C */
	{
		uint64_t code;

		lc_read_u64(e->t->prog->mem, p_outer + (uint64_t)l->p.code.off, &code);
		put(e, m->CI0, l->ci.savedpc, code + 4 * 3);
		lc_read_u64(e->t->prog->mem, m->p_inner + (uint64_t)l->p.code.off, &code);
		put(e, m->CI1, l->ci.savedpc, code + 4 * 14);	/* pc 13 */
	}
	putn(e, m->CI1 + (uint64_t)e->ci_nextra, 2, 4);
}

static void walk(struct env *e, const struct img54 *m, struct lc_lstate *st,
		 struct lc_ci **cis, size_t *n)
{
	bool partial;

	ck_assert_int_eq(lc_lua_state_read(e->ctx, m->L, st), 0);
	ck_assert_ptr_null(lc_lua_walk(e->ctx, st, 100, cis, n, &partial));
	ck_assert(!partial);
	ck_assert_uint_eq(*n, 3);
}

START_TEST(test_frame_vars_54)
{
	struct env *e = env_open(504);
	struct img54 m;
	struct lc_lstate st;
	struct lc_ci *cis;
	struct lc_var *vars;
	size_t n, nv;
	struct lc_error *err;
	char fn[64], tb[64];

	build_54(e, &m);
	walk(e, &m, &st, &cis, &n);
	snprintf(fn, sizeof(fn), "function: [C] lua_gettop");
	snprintf(tb, sizeof(tb), "table: 0x%" PRIx64, m.env_t);
	{
		/* pc 13: a, n, then k and j of the inner block (i's ended). */
		const struct want_var w[] = {
			{ "local", "a", 0, "10" },
			{ "local", "n", 1, "2" },
			{ "local", "k", 2, "true" },
			{ "local", "j", 3, fn },
			{ "vararg", "(vararg)", 1, "\"two\"" },
			{ "vararg", "(vararg)", 2, "5.5" },
			{ "upvalue", "x", 1, "7" },
			{ "upvalue", "_ENV", 2, tb },
		};

		ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, cis, n, 1,
						     &vars, &nv));
		check_vars(vars, nv, w, LC_ARRAY_SIZE(w));
		lc_vars_free(vars, nv);
	}
	{
		/* pc 6: i is live, k and j not yet. */
		const struct want_var w[] = {
			{ "local", "a", 0, "10" },
			{ "local", "n", 1, "2" },
			{ "local", "i", 2, "true" },
			{ "vararg", "(vararg)", 1, "\"two\"" },
			{ "vararg", "(vararg)", 2, "5.5" },
			{ "upvalue", "x", 1, "7" },
			{ "upvalue", "_ENV", 2, tb },
		};

		cis[1].savedpc -= 4 * 7;
		ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, cis, n, 1,
						     &vars, &nv));
		check_vars(vars, nv, w, LC_ARRAY_SIZE(w));
		lc_vars_free(vars, nv);
		cis[1].savedpc += 4 * 7;
	}
	{
		/* The outer frame: t, s; no varargs, no upvalues. */
		const struct want_var w[] = {
			{ "local", "t", 0, tb },
			{ "local", "s", 1, "\"sss\"" },
		};

		ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, cis, n, 2,
						     &vars, &nv));
		check_vars(vars, nv, w, LC_ARRAY_SIZE(w));
		lc_vars_free(vars, nv);
	}
	/* C frame: nothing, no error. */
	vars = (void *)1;
	ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, cis, n, 0, &vars, &nv));
	ck_assert_ptr_null(vars);
	ck_assert_uint_eq(nv, 0);
	/* No such frame. */
	err = lc_lua_frame_vars(e->ctx, &st, cis, n, 3, &vars, &nv);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(lc_error_code(err), LC_ERR_INVALID);
	lc_error_destroy(err);
	/* A pc beyond the code. */
	cis[1].savedpc += 4 * 100;
	err = lc_lua_frame_vars(e->ctx, &st, cis, n, 1, &vars, &nv);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(lc_error_code(err), LC_ERR_CORRUPT);
	ck_assert_ptr_null(vars);
	lc_error_destroy(err);
	cis[1].savedpc -= 4 * 100;
	/* Garbage nextraargs: bounded, values outside the stack partial. */
	putn(e, m.CI1 + (uint64_t)e->ci_nextra, 0x7fffffff, 4);
	ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, cis, n, 1, &vars,
					     &nv));
	ck_assert_uint_eq(nv, 4 + LC_MAX_VARARGS + 2);
	ck_assert(vars[4].value.partial);
	ck_assert_str_eq(vars[4].value.type, "?");
	lc_vars_free(vars, nv);
	/* An unreadable upvalue. */
	putn(e, m.CI1 + (uint64_t)e->ci_nextra, 2, 4);
	putn(e, m.cl_inner + (uint64_t)e->lcl_upvals, BASE + SIZE + 64, 8);
	ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, cis, n, 1, &vars,
					     &nv));
	ck_assert_uint_eq(nv, 8);
	ck_assert_str_eq(vars[6].kind, "upvalue");
	ck_assert_str_eq(vars[6].name, "x");
	ck_assert_str_eq(vars[6].value.type, "?");
	ck_assert(vars[6].value.partial);
	lc_vars_free(vars, nv);
	free(cis);
	env_close(e);
}
END_TEST

START_TEST(test_stack_slots_54)
{
	struct env *e = env_open(504);
	struct img54 m;
	struct lc_lstate st;
	struct lc_ci *cis;
	struct lc_slot *s;
	size_t n, ns;
	/* Owner per live slot: base, outer (2), inner (1, including the
	 * arguments below its moved func), the C function (0). */
	static const long owner[14] = { -1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1,
					0, 0 };

	build_54(e, &m);
	walk(e, &m, &st, &cis, &n);
	ck_assert_ptr_null(lc_lua_stack_slots(e->ctx, &st, cis, n, 3, &s, &ns));
	ck_assert_uint_eq(ns, 14 + 3);
	for (size_t k = 0; k < ns; k++) {
		ck_assert_int_eq(s[k].index, (long)k);
		ck_assert_uint_eq(s[k].addr, slot(&m, (int)k));
		if (k < 14) {
			ck_assert_msg(s[k].frame == owner[k],
				      "slot %zu frame %ld", k, s[k].frame);
			ck_assert(!s[k].residue);
			ck_assert_int_eq(s[k].is_func,
					 k == 1 || k == 8 || k == 12);
		} else {
			ck_assert(s[k].residue);
			ck_assert_int_eq(s[k].frame, -1);
			ck_assert(!s[k].is_func);
		}
	}
	ck_assert_str_eq(s[6].value.text, "\"two\"");
	ck_assert_str_eq(s[9].value.text, "10");
	ck_assert_str_eq(s[12].value.text, "function: [C] lua_gettop");
	ck_assert_str_eq(s[15].value.text, "1015");
	lc_slots_free(s, ns);
	/* Residue is bounded by the allocation: stack_last + EXTRA_STACK
	 * = 45 slots. */
	ck_assert_ptr_null(lc_lua_stack_slots(e->ctx, &st, cis, n, 1000, &s,
					      &ns));
	ck_assert_uint_eq(ns, 45);
	ck_assert_str_eq(s[44].value.text, "1044");
	lc_slots_free(s, ns);
	/* No residue asked. */
	ck_assert_ptr_null(lc_lua_stack_slots(e->ctx, &st, cis, n, 0, &s, &ns));
	ck_assert_uint_eq(ns, 14);
	lc_slots_free(s, ns);
	/* Garbage nextraargs: the caller keeps its own function slot. */
	putn(e, m.CI1 + (uint64_t)e->ci_nextra, 1000, 4);
	ck_assert_ptr_null(lc_lua_stack_slots(e->ctx, &st, cis, n, 0, &s, &ns));
	ck_assert_int_eq(s[1].frame, 2);
	ck_assert_int_eq(s[4].frame, 2);
	ck_assert_int_eq(s[8].frame, 1);
	lc_slots_free(s, ns);
	/* A top beyond the stack is clamped to it. */
	st.top = st.stack + 10000 * SLOT;
	ck_assert_ptr_null(lc_lua_stack_slots(e->ctx, &st, cis, n, 5, &s, &ns));
	ck_assert_uint_eq(ns, 45);
	ck_assert(!s[44].residue);
	lc_slots_free(s, ns);
	free(cis);
	env_close(e);
}
END_TEST

/* 5.1/5.3 image: hand-made CallInfos, inner vararg function f(a, ...)
 * called with (10, "two", 5.5):
 *   slot 0     base function
 *   slot 1     f (ci->func)
 *   slot 2..4  a (erased by adjust_varargs), "two", 5.5
 *   slot 5..6  base: a = 10, local b = "bee"
 *   top = slot 7. */
static void frame_vars_old(int major)
{
	struct env *e = env_open(major);
	const struct lc_layout *l = e->l;
	static const struct locdef locs[] = {
		{ "a", 0, 30 }, { "b", 2, 30 }, { "gone", 0, 2 },
	};
	static const char *const ups[] = { "up1" };
	uint64_t STK = obj(e, 40 * SLOT), CIA = obj(e, 256), p, cl, code;
	struct lc_lstate st = { 0 };
	struct lc_ci ci = { 0 };
	struct lc_var *vars;
	struct lc_slot *s;
	size_t nv, ns;
	const char *vname = "(*vararg)";

	ck_assert_uint_eq(l->sz_stack_slot, SLOT);
	p = mkproto_full(e, 1, major == 501 ? 2 : 1, locs, 3, ups, 1);
	cl = mklcl(e, p, 1);
	closed_upval(e, cl, 0, tag(e, SHRSTR), mkstr(e, "uv"));
	for (int k = 0; k < 40; k++)
		set_tv(e, STK + (uint64_t)k * SLOT, tag(e, FLT),
		       dbl(1000.0 + k));
	set_tv(e, STK, 0, 0);
	set_tv(e, STK + 1 * SLOT, tag(e, LCL), cl);
	set_tv(e, STK + 2 * SLOT, 0, 0);
	set_tv(e, STK + 3 * SLOT, tag(e, SHRSTR), mkstr(e, "two"));
	set_tv(e, STK + 4 * SLOT, tag(e, FLT), dbl(5.5));
	set_tv(e, STK + 5 * SLOT, tag(e, FLT), dbl(10));
	set_tv(e, STK + 6 * SLOT, tag(e, SHRSTR), mkstr(e, "bee"));
	put(e, CIA, l->ci.func, STK + 1 * SLOT);
	put(e, CIA, l->ci.base, STK + 5 * SLOT);
	lc_read_u64(e->t->prog->mem, p + (uint64_t)l->p.code.off, &code);
	st.addr = obj(e, 16);
	st.stack = STK;
	st.top = STK + 7 * SLOT;
	st.stack_last = STK + 30 * SLOT;
	ci.addr = CIA;
	ci.func = STK + 1 * SLOT;
	ci.savedpc = code + 4 * 4;	/* pc 3 */
	ci.is_lua = true;
	ci.proto = p;
	{
		char uv[16];
		const struct want_var w[] = {
			{ "local", "a", 0, major == 501 ? "10" : "10.0" },
			{ "local", "b", 1, "\"bee\"" },
			{ "vararg", vname, 1, "\"two\"" },
			{ "vararg", vname, 2, "5.5" },
			{ "upvalue", "up1", 1, "\"uv\"" },
		};

		snprintf(uv, sizeof(uv), "x");
		ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, &ci, 1, 0,
						     &vars, &nv));
		check_vars(vars, nv, w, LC_ARRAY_SIZE(w));
		lc_vars_free(vars, nv);
	}
	/* A base below func: no varargs, locals still shown. */
	put(e, CIA, l->ci.base, STK);
	ck_assert_ptr_null(lc_lua_frame_vars(e->ctx, &st, &ci, 1, 0, &vars,
					     &nv));
	ck_assert_uint_eq(nv, 3);
	ck_assert_str_eq(vars[2].kind, "upvalue");
	lc_vars_free(vars, nv);
	put(e, CIA, l->ci.base, STK + 5 * SLOT);

	/* Stack: top at 7; the allocation ends at stack_last + 5 slots
	 * (5.2+) or + 6 (5.1: stack_last = stack + size - EXTRA - 1). */
	ck_assert_ptr_null(lc_lua_stack_slots(e->ctx, &st, &ci, 1, 1000, &s,
					      &ns));
	ck_assert_uint_eq(ns, major == 501 ? 36 : 35);
	ck_assert_int_eq(s[0].frame, -1);
	ck_assert(!s[0].is_func);
	for (int k = 1; k < 7; k++) {
		ck_assert_int_eq(s[k].frame, 0);
		ck_assert_int_eq(s[k].is_func, k == 1);
		ck_assert(!s[k].residue);
	}
	ck_assert(s[7].residue);
	ck_assert_int_eq(s[7].frame, -1);
	ck_assert_str_eq(s[7].value.text, major == 501 ? "1007" : "1007.0");
	ck_assert_str_eq(s[3].value.text, "\"two\"");
	lc_slots_free(s, ns);
	env_close(e);
}

/* When luaV_execute's own pc is taken over the CallInfo's savedpc
 * (decode.c, lc_lua_live_pc): only inside the function's code, only when
 * its ci (first) or base local names the CallInfo, and not when savedpc
 * is one instruction ahead (a hook's reference). */
static bool try_live_pc(struct env *e, const struct lc_lstate *st,
			struct lc_ci *ci, unsigned mask, uint64_t pc,
			uint64_t base, uint64_t cia)
{
	struct lc_runvars rv = { .vals = { pc, base, cia }, .mask = mask };

	ci->livepc = 0;
	return lc_lua_live_pc(e->ctx, st, ci, &rv);
}

static void live_pc_rules(int major)
{
	struct env *e = env_open(major);
	const struct lc_layout *l = e->l;
	uint64_t STK = obj(e, 40 * SLOT), CIA = obj(e, 256), p, code;
	uint64_t base = major == 501 ? STK + 3 * SLOT : STK + 2 * SLOT;
	struct lc_lstate st = { 0 };
	struct lc_ci ci = { 0 };
	const unsigned PC = 1u << LC_RUNVAR_PC, BS = 1u << LC_RUNVAR_BASE,
		       CI = 1u << LC_RUNVAR_CI;

	p = mkproto_full(e, 0, 0, NULL, 0, NULL, 0);	/* 40 instructions */
	lc_read_u64(e->t->prog->mem, p + (uint64_t)l->p.code.off, &code);
	put(e, CIA, l->ci.func, STK + 1 * SLOT);
	if (major == 501)
		put(e, CIA, l->ci.base, base);	/* 5.1: base is its own field */
	st.addr = obj(e, 16);
	st.stack = STK;
	st.top = STK + 7 * SLOT;
	st.stack_last = STK + 30 * SLOT;
	ci.addr = CIA;
	ci.func = STK + 1 * SLOT;
	ci.savedpc = code + 4 * 3;	/* stored at the last call: pc 2 */
	ci.is_lua = true;
	ci.proto = p;

#define TRY(m, pcv, basev, civ) \
	try_live_pc(e, &st, &ci, (m), (pcv), (basev), (civ))
	/* Its own: the live pc is used for line, locals and names. */
	ck_assert(TRY(PC | CI, code + 4 * 10, 0, CIA));
	ck_assert_uint_eq(ci.livepc, code + 4 * 10);
	ck_assert_int_eq(lc_lua_current_pc(e->ctx, &ci), 9);
	ck_assert(TRY(PC | BS, code + 4 * 10, base, 0));
	ck_assert(TRY(PC | BS | CI, code + 4 * 10, base, CIA));
	/* ci decides over a stale base (a call out moved the stack). */
	ck_assert(TRY(PC | BS | CI, code + 4 * 10, base + 64 * SLOT, CIA));
	/* Agreeing with savedpc (a call out): still this frame's pc. */
	ck_assert(TRY(PC | CI, code + 4 * 3, 0, CIA));
	/* Not this frame's: another CallInfo, another base, or nothing
	 * to tell (a caller's pc during a call's setup). */
	ck_assert(!TRY(PC | CI, code + 4 * 10, 0, CIA + 128));
	ck_assert(!TRY(PC | BS, code + 4 * 10, base + SLOT, 0));
	ck_assert(!TRY(PC, code + 4 * 10, 0, 0));
	ck_assert(!TRY(BS | CI, 0, base, CIA));
	/* Outside the code array, or not on an instruction. */
	ck_assert(!TRY(PC | CI, code - 4, 0, CIA));
	ck_assert(!TRY(PC | CI, code + 4 * 41, 0, CIA));
	ck_assert(!TRY(PC | CI, code + 4 * 10 + 2, 0, CIA));
	ck_assert(TRY(PC | CI, code + 4 * 40, 0, CIA));	/* past the last */
	/* A hook stored the next instruction as its reference. */
	ck_assert(!TRY(PC | CI, code + 4 * 2, 0, CIA));
	ck_assert_uint_eq(ci.livepc, 0);
	ck_assert_int_eq(lc_lua_current_pc(e->ctx, &ci), 2);
	/* A C frame has no pc of its own. */
	ci.is_lua = false;
	ck_assert(!TRY(PC | CI, code + 4 * 10, 0, CIA));
#undef TRY
	env_close(e);
}

START_TEST(test_live_pc_51) { live_pc_rules(501); } END_TEST
START_TEST(test_live_pc_54) { live_pc_rules(504); } END_TEST

START_TEST(test_frame_51) { frame_vars_old(501); } END_TEST
START_TEST(test_frame_53) { frame_vars_old(503); } END_TEST

/* ---- single objects (lc_object_create) ---- */

/* A number TValue's tag and payload: 5.1 has only doubles. */
static void set_num(struct env *e, uint64_t addr, bool integer, double d)
{
	if (e->major == 501)
		set_tv(e, addr, tag(e, FLT), dbl(d));
	else if (integer)
		set_tv(e, addr, tag(e, INT), (uint64_t)(int64_t)d);
	else
		set_tv(e, addr, tag(e, FLT), dbl(d));
}

/* {10, nil, "s"; x = true, [7] = 1.5} with 4 hash nodes. */
static uint64_t mktable_full(struct env *e)
{
	const struct lc_layout *l = e->l;
	uint64_t h = mktable(e, 3, 2, false, 0, 0);
	uint64_t arr = obj(e, 3 * l->sz_tvalue);
	uint64_t node = obj(e, 4 * l->sz_node);
	uint64_t n0 = node, n2 = node + 2 * l->sz_node;

	put(e, h, l->tab.array, arr);
	put(e, h, l->tab.node, node);
	putn(e, h + (uint64_t)e->tab_lastfree, node + 4 * l->sz_node, 8);
	set_num(e, arr, true, 10);
	set_tv(e, arr + 2 * l->sz_tvalue, tag(e, SHRSTR), mkstr(e, "s"));
	/* Keys: TValue i_key (5.1-5.3) or key_tt/key_val (5.4). */
	putn(e, n0 + (uint64_t)l->node.key_val.off, mkstr(e, "x"), 8);
	put(e, n0, l->node.key_tt, tag(e, SHRSTR));
	set_tv(e, n0 + (uint64_t)l->node.val.off, tag(e, BOOL_T), 1);
	putn(e, n2 + (uint64_t)l->node.key_val.off,
	     e->major == 501 ? dbl(7) : 7, 8);
	put(e, n2, l->node.key_tt, tag(e, e->major == 501 ? FLT : INT));
	set_num(e, n2 + (uint64_t)l->node.val.off, false, 1.5);
	return h;
}

static void check_entry(const struct lc_object *o, size_t i, const char *k,
			const char *v)
{
	ck_assert_uint_lt(i, o->nentries);
	ck_assert_str_eq(o->entries[i].key.text, k);
	ck_assert_str_eq(o->entries[i].value.text, v);
}

static void check_objects(int major)
{
	struct env *e = env_open(major);
	const struct lc_layout *l = e->l;
	struct lc_object *o;
	uint64_t h = mktable_full(e), tv = obj(e, 16), s;

	/* Through the GC pointer and through a TValue: the same. */
	set_tv(e, tv, tag(e, TABLE), h);
	for (int k = 0; k < 2; k++) {
		ck_assert_ptr_null(lc_object_create(e->t, k ? LC_OBJECT_TVALUE :
						    LC_OBJECT_GC, k ? tv : h,
						    0, &o));
		ck_assert_str_eq(o->value.type, "table");
		ck_assert_int_eq(o->value.len, 3);
		ck_assert_int_eq(o->value.hsize, 4);
		ck_assert_uint_eq(o->nentries, 4);
		check_entry(o, 0, "1", "10");
		check_entry(o, 1, "3", "\"s\"");
		check_entry(o, 2, "\"x\"", "true");
		check_entry(o, 3, "7", "1.5");
		ck_assert_uint_eq(o->more, 0);
		ck_assert(!o->more_bounded);
		lc_object_destroy(o);
	}
	/* At most 2: the others are counted. */
	ck_assert_ptr_null(lc_object_create(e->t, LC_OBJECT_GC, h, 2, &o));
	ck_assert_uint_eq(o->nentries, 2);
	ck_assert_uint_eq(o->more, 2);
	lc_object_destroy(o);

	/* An array size of 2^31-1 (5.1's int) or 2^32-1 (unsigned) whose
	 * array is unreadable: a bounded walk, "more" a lower bound. */
	put(e, h, l->tab.sizearray, major == 501 ? 0x7fffffff : 0xffffffff);
	put(e, h, l->tab.array, 0x10);
	ck_assert_ptr_null(lc_object_create(e->t, LC_OBJECT_GC, h, 5, &o));
	ck_assert_uint_eq(o->nentries, 5);
	ck_assert_str_eq(o->entries[0].value.type, "?");
	ck_assert(o->more_bounded);
	ck_assert_uint_gt(o->more, 1000);
	lc_object_destroy(o);

	/* A string: its full bytes, escaped; a Lua closure: its upvalues
	 * (none named in this Proto); garbage: "unreadable at". */
	s = mkstr(e, "a\tb");
	ck_assert_ptr_null(lc_object_create(e->t, LC_OBJECT_GC, s, 0, &o));
	ck_assert_str_eq(o->value.type, "string");
	ck_assert_str_eq(o->full, "\"a\\tb\"");
	lc_object_destroy(o);
	ck_assert_ptr_null(lc_object_create(e->t, LC_OBJECT_GC, 0x10, 0, &o));
	ck_assert_str_eq(o->value.type, "?");
	ck_assert_str_eq(o->value.text, "? (unreadable at 0x10)");
	ck_assert(o->value.partial);
	lc_object_destroy(o);
	env_close(e);
}

START_TEST(test_objects_51) { check_objects(501); } END_TEST
START_TEST(test_objects_53) { check_objects(503); } END_TEST
START_TEST(test_objects_54) { check_objects(504); } END_TEST

/* ---- the page cache of callback targets ---- */

struct counted {
	uint8_t page[2 * LC_PAGE_SIZE];	/* at CACHE_BASE */
	uint64_t lo, hi;		/* the readable part */
	int calls;
};

#define CACHE_BASE	0x200000ull

static int counted_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct counted *c = arg;

	c->calls++;
	if (addr < c->lo || addr > c->hi || len > c->hi - addr)
		return -1;
	memcpy(buf, c->page + (addr - CACHE_BASE), len);
	return 0;
}

START_TEST(test_callback_cache)
{
	struct counted c = { .lo = CACHE_BASE,
			     .hi = CACHE_BASE + 2 * LC_PAGE_SIZE };
	struct lc_target *t;
	uint64_t v;

	ck_assert_ptr_null(lc_target_create_callback(counted_read, &c, &t));
	c.page[8] = 1;
	/* Off by default: every read is a callback, and sees changes. */
	ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + 8, &v, 8));
	ck_assert_uint_eq(v, 1);
	c.page[8] = 2;
	ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + 8, &v, 8));
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(c.calls, 2);

	/* On: one callback per page, stale until invalidated. */
	lc_target_set_caching(t, true);
	c.calls = 0;
	for (int i = 0; i < 100; i++)
		ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + 8 * (uint64_t)i,
						  &v, 8));
	ck_assert_int_eq(c.calls, 1);
	c.page[8] = 3;
	ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + 8, &v, 8));
	ck_assert_uint_eq(v, 2);
	lc_target_invalidate(t);
	ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + 8, &v, 8));
	ck_assert_uint_eq(v, 3);
	/* Across two pages. */
	c.page[LC_PAGE_SIZE] = 4;
	ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + LC_PAGE_SIZE - 4,
					  &v, 8));
	ck_assert_uint_eq(v >> 32, 4);

	/* A page readable only in part: the exact bytes are still read,
	 * and what is not readable fails naming its address. */
	lc_target_invalidate(t);
	c.lo = CACHE_BASE + 100;
	c.hi = CACHE_BASE + 200;
	c.page[120] = 5;
	ck_assert_ptr_null(lc_target_read(t, CACHE_BASE + 120, &v, 8));
	ck_assert_uint_eq(v & 0xff, 5);
	{
		struct lc_error *err = lc_target_read(t, CACHE_BASE + 196, &v, 8);

		ck_assert_ptr_nonnull(err);
		ck_assert_int_eq(lc_error_code(err), LC_ERR_FAULT);
		ck_assert_uint_eq(lc_error_address(err), CACHE_BASE + 200);
		lc_error_destroy(err);
	}
	lc_target_destroy(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("values");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_offsets_51);
	tcase_add_test(tc, test_offsets_53);
	tcase_add_test(tc, test_offsets_54);
	tcase_add_test(tc, test_values_51);
	tcase_add_test(tc, test_values_53);
	tcase_add_test(tc, test_values_54);
	tcase_add_test(tc, test_string_escapes);
	tcase_add_test(tc, test_name_escapes);
	tcase_add_test(tc, test_string_shortening);
	tcase_add_test(tc, test_huge_string_51);
	tcase_add_test(tc, test_huge_string_54);
	tcase_add_test(tc, test_garbage_pointers);
	tcase_add_test(tc, test_frame_vars_54);
	tcase_add_test(tc, test_live_pc_51);
	tcase_add_test(tc, test_live_pc_54);
	tcase_add_test(tc, test_stack_slots_54);
	tcase_add_test(tc, test_frame_51);
	tcase_add_test(tc, test_frame_53);
	tcase_add_test(tc, test_objects_51);
	tcase_add_test(tc, test_objects_53);
	tcase_add_test(tc, test_objects_54);
	tcase_add_test(tc, test_callback_cache);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
