/* Unit tests for targets and the decoder on synthetic memory images.
 *
 * The layout comes from a real Lua build's DWARF (Debian's liblua5.4 with
 * its -dbg package, or any library named by LUACORE_TEST_LUA54); the
 * images are built with those offsets, so the tests check the decoder's
 * logic, not a copied header. */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "prog/program.h"
#include "puc_support.h"

#define BASE	0x100000ull
#define SIZE	0x10000

struct image {
	uint64_t base;
	uint8_t bytes[SIZE];
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

/* Symbols as shown: version suffixes dropped, C++ names demangled with
 * libstdc++'s demangler, nothing else touched. */
START_TEST(test_symbol_display)
{
	static const struct { const char *raw, *shown, *linkage; } cases[] = {
		{ "__libc_start_main@@GLIBC_2.34", "__libc_start_main", NULL },
		{ "memcpy@GLIBC_2.2.5", "memcpy", NULL },
		{ "luaV_execute", "luaV_execute", NULL },
		{ "_ZN3nse11script_scanERSt6vectorINS_6TargetESaIS1_EENS_5stypeE",
		  "nse::script_scan(std::vector<nse::Target, std::allocator<nse::Target> >&, nse::stype)",
		  "_ZN3nse11script_scanERSt6vectorINS_6TargetESaIS1_EENS_5stypeE" },
		{ "_ZNSo9_M_insertIdEERSoT_@@GLIBCXX_3.4.9",
		  "std::ostream& std::ostream::_M_insert<double>(double)",
		  "_ZNSo9_M_insertIdEERSoT_" },
		{ "_ZL6l_parkP9lua_State", "l_park(lua_State*)", "_ZL6l_parkP9lua_State" },
		{ "f", "f", NULL },		/* not the type "float" */
		{ "_Z", "_Z", NULL },		/* not a valid mangled name */
		{ "_Zx9garbage", "_Zx9garbage", NULL },
		{ "@odd", "@odd", NULL },
	};
	char *linkage, *s, big[5000];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = lc_symbol_display(cases[i].raw, &linkage);
		ck_assert_str_eq(s, cases[i].shown);
		if (cases[i].linkage)
			ck_assert_str_eq(linkage, cases[i].linkage);
		else
			ck_assert_ptr_null(linkage);
		free(s);
		free(linkage);
	}
	/* Too long to hand to the demangler: left as it is. */
	memset(big, 'a', sizeof(big) - 1);
	memcpy(big, "_ZN", 3);
	big[sizeof(big) - 1] = '\0';
	s = lc_symbol_display(big, &linkage);
	ck_assert_str_eq(s, big);
	ck_assert_ptr_null(linkage);
	free(s);
	ck_assert_ptr_null(lc_symbol_display(NULL, NULL));
}
END_TEST

START_TEST(test_read_fault_address)
{
	struct image *im = calloc(1, sizeof(*im));
	struct lc_target *t;
	struct lc_error *err;
	uint8_t buf[64];

	im->base = BASE;
	ck_assert_ptr_null(lc_target_create_callback(image_read, im, &t));
	ck_assert_ptr_null(lc_target_read(t, BASE + 16, buf, sizeof(buf)));
	err = lc_target_read(t, BASE + SIZE - 8, buf, 32);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(lc_error_code(err), LC_ERR_FAULT);
	ck_assert_uint_eq(lc_error_address(err), BASE + SIZE);
	lc_error_destroy(err);
	lc_target_destroy(t);
	free(im);
}
END_TEST

static const char *lua54_path(void)
{
	const char *p = getenv("LUACORE_TEST_LUA54");

	return p ? p : "/usr/lib/x86_64-linux-gnu/liblua5.4.so.0";
}

/* A target over an image plus the real liblua5.4 for its DWARF. */
static struct lc_target *lua54_target(struct image *im,
				      const struct lc_layout **l)
{
	struct lc_target *t;
	struct lc_error *err;

	im->base = BASE;
	ck_assert_ptr_null(lc_target_create_callback(image_read, im, &t));
	err = lc_target_add_module(t, lua54_path(), 0x7f0000000000ull);
	ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	err = lc_layout_get(t, l);
	ck_assert_msg(err == NULL, "%s (install liblua5.4-0-dbg)",
		      lc_error_message(err));
	return t;
}

START_TEST(test_layout_from_dwarf)
{
	struct image *im = calloc(1, sizeof(*im));
	const struct lc_layout *l;
	struct lc_target *t = lua54_target(im, &l);

	/* lua_ident read through the module's rodata. */
	ck_assert_int_eq(l->major, 504);
	ck_assert_int_eq(l->release / 100, 504);
	ck_assert(!l->version_guessed);
	ck_assert(!l->stkidrel);	/* Debian bookworm: 5.4.4 */
	ck_assert_int_ge(l->L.ci.off, 0);
	ck_assert_int_ge(l->ci.previous.off, 0);
	ck_assert_uint_eq(l->sz_stack_slot, 16);
	lc_target_destroy(t);
	free(im);
}
END_TEST

static void put64(struct image *im, uint64_t addr, uint64_t v)
{
	memcpy(im->bytes + (addr - im->base), &v, 8);
}

static void put(struct image *im, uint64_t addr, struct lc_field f, uint64_t v)
{
	ck_assert_int_ge(f.off, 0);
	memcpy(im->bytes + (addr - im->base) + f.off, &v, f.size);
}

/* Image: global_State at G, main thread at L, stack at STK, three
 * CallInfos at CI0..CI2 (innermost CI2), a Lua closure CL -> proto P with
 * code at CODE and lineinfo at LI. */
enum {
	G = BASE + 0x100, L = BASE + 0x800, STK = BASE + 0x2000,
	CI0 = BASE + 0x3000, CI1 = BASE + 0x3100, CI2 = BASE + 0x3200,
	CL = BASE + 0x4000, P = BASE + 0x4100, CODE = BASE + 0x5000,
	LI = BASE + 0x6000, SRC = BASE + 0x7000,
};

static void build_54(struct image *im, const struct lc_layout *l)
{
	/* global_State and the main thread (5.5: none to point to it). */
	if (LC_HAS(l->G.mainthread))
		put(im, G, l->G.mainthread, L);
	put(im, L, l->L.tt, 8);			/* LUA_VTHREAD */
	put(im, L, l->L.l_G, G);
	put(im, L, l->L.stack, STK);
	put(im, L, l->L.top, STK + 10 * 16);
	put(im, L, l->L.stack_last, STK + 40 * 16);
	put(im, L, l->L.ci, CI2);
	/* CallInfo chain: base_ci <- CI0 <- CI1 <- CI2; base_ci's function
	 * is the stack's first slot, as Lua's stack_init puts it. */
	uint64_t base_ci = L + (uint64_t)l->L.base_ci.off;
	uint64_t cis[3] = { CI0, CI1, CI2 };
	put(im, base_ci, l->ci.func, STK);
	for (int i = 0; i < 3; i++) {
		uint64_t prev = i ? cis[i - 1] : base_ci;

		put(im, cis[i], l->ci.previous, prev);
		put(im, prev, l->ci.next, cis[i]);
		put(im, cis[i], l->ci.func, STK + (uint64_t)i * 3 * 16);
		/* Each slot holds the same Lua closure. */
		put64(im, STK + (uint64_t)i * 3 * 16, CL);
		put(im, STK + (uint64_t)i * 3 * 16, l->tv.tt, 0x46);
		put(im, cis[i], l->ci.callstatus, 0);
		/* savedpc points past the executing instruction. */
		put(im, cis[i], l->ci.savedpc, CODE + (uint64_t)(i * 100 + 1) * 4);
	}
	/* GC headers: LUA_VLCL, LUA_VPROTO (CommonHeader's tt sits at the
	 * same offset in every collectable object). */
	put(im, CL, l->L.tt, 0x06);
	put(im, CL, l->cl.p, P);
	put(im, P, l->L.tt, 10);
	/* Proto: 300 instructions; line deltas +1 each from linedefined 10,
	 * with absolute anchors where lcode.c savelineinfo puts them: at pc
	 * 128 (MAXIWTHABS instructions without one; line 139) and at pc 200
	 * (a jump to line 500, too far for a delta).  The last instruction
	 * (pc 299, line 599) is at lastlinedefined. */
	put(im, P, l->p.code, CODE);
	put(im, P, l->p.sizecode, 300);
	put(im, P, l->p.maxstacksize, 2);
	put(im, P, l->p.linedefined, 10);
	put(im, P, l->p.lastlinedefined, 599);
	put(im, P, l->p.lineinfo, LI);
	put(im, P, l->p.sizelineinfo, 300);
	for (int pc = 0; pc < 300; pc++)
		im->bytes[LI - BASE + pc] = pc == 128 || pc == 200 ? 0x80 : 1;
	uint64_t ABS = LI + 0x400;
	put(im, P, l->p.abslineinfo, ABS);
	put(im, P, l->p.sizeabslineinfo, 2);
	put(im, ABS, l->ali.pc, 128);
	put(im, ABS, l->ali.line, 139);
	put(im, ABS + l->sz_abslineinfo, l->ali.pc, 200);
	put(im, ABS + l->sz_abslineinfo, l->ali.line, 500);
	put(im, P, l->p.source, SRC);
	put(im, SRC, l->ts.tt, 0x04);		/* short string */
	put(im, SRC, l->ts.shrlen, 6);
	memcpy(im->bytes + (SRC - BASE) + l->ts_contents, "@t.lua", 6);
}

START_TEST(test_walk_and_lines_54)
{
	struct image *im = calloc(1, sizeof(*im));
	const struct lc_layout *l;
	struct lc_target *t = lua54_target(im, &l);
	struct lc_lua_ctx *ctx;
	struct lc_lstate st;
	struct lc_ci *cis;
	size_t n;
	bool partial;

	build_54(im, l);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_state_read(ctx, L, &st), 0);
	ck_assert(lc_lua_state_active(&st));
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 100, &cis, &n, &partial));
	ck_assert(!partial);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(cis[0].addr, CI2);
	ck_assert_uint_eq(cis[2].addr, CI0);
	/* pc 0 -> linedefined + 1; pc 100 -> 10 + 101; pc 200 is the
	 * anchor (500), not 10 + 201. */
	int want[3] = { 500, 111, 11 };
	for (size_t i = 0; i < n; i++) {
		struct lc_frame f = { 0 };

		ck_assert(cis[i].is_lua);
		lc_lua_frame(ctx, &st, cis, n, i, &f);
		ck_assert_str_eq(f.source, "@t.lua");
		ck_assert_str_eq(f.what, "Lua");
		ck_assert_int_eq(f.currentline, want[i]);
		ck_assert(!f.partial);
		lc_frame_free(&f);
	}
	free(cis);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	free(im);
}
END_TEST

START_TEST(test_walk_cycle_is_partial)
{
	struct image *im = calloc(1, sizeof(*im));
	const struct lc_layout *l;
	struct lc_target *t = lua54_target(im, &l);
	struct lc_lua_ctx *ctx;
	struct lc_lstate st;
	struct lc_ci *cis;
	size_t n;
	bool partial;

	build_54(im, l);
	/* CI0 -> previous = CI2: a cycle whose next links agree. */
	put(im, CI0, l->ci.previous, CI2);
	put(im, CI2, l->ci.next, CI0);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_state_read(ctx, L, &st), 0);
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 1000, &cis, &n, &partial));
	ck_assert(partial);		/* bounded by max, marked */
	ck_assert_uint_le(n, 1000);
	free(cis);
	/* previous/next disagreeing stops the walk at once. */
	put(im, CI2, l->ci.next, CI1);
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 1000, &cis, &n, &partial));
	ck_assert(partial);
	ck_assert_uint_eq(n, 3);
	free(cis);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	free(im);
}
END_TEST

START_TEST(test_state_validation)
{
	struct image *im = calloc(1, sizeof(*im));
	const struct lc_layout *l;
	struct lc_target *t = lua54_target(im, &l);
	struct lc_lua_ctx *ctx;
	struct lc_lstate st;

	build_54(im, l);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_state_read(ctx, L, &st), 0);
	ck_assert_int_ne(lc_lua_state_read(ctx, L + 8, &st), 0);
	ck_assert_int_ne(lc_lua_state_read(ctx, BASE + SIZE + 64, &st), 0);
	/* mainthread not pointing back. */
	put(im, G, l->G.mainthread, CL);
	ck_assert_int_ne(lc_lua_state_read(ctx, L, &st), 0);
	put(im, G, l->G.mainthread, L);
	/* top below the stack. */
	put(im, L, l->L.top, STK - 16);
	ck_assert_int_ne(lc_lua_state_read(ctx, L, &st), 0);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	free(im);
}
END_TEST

/* The same three-frame image for 5.1 (CallInfo array, L->savedpc for the
 * running function, int tags, absolute lineinfo) and 5.3 (linked
 * CallInfos, CIST_LUA, absolute lineinfo), through Debian's liblua5.1 and
 * liblua5.3 DWARF. */
static struct lc_target *lib_target(struct image *im, const char *lib,
				    const struct lc_layout **l)
{
	struct lc_target *t;
	struct lc_error *err;

	im->base = BASE;
	ck_assert_ptr_null(lc_target_create_callback(image_read, im, &t));
	err = lc_target_add_module(t, lib, 0x7f0000000000ull);
	ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	err = lc_layout_get(t, l);
	ck_assert_msg(err == NULL, "%s (install the liblua5.X-0-dbg packages)",
		      lc_error_message(err));
	return t;
}

static void build_old(struct image *im, const struct lc_layout *l)
{
	uint64_t cis[4];

	put(im, G, l->G.mainthread, L);
	put(im, L, l->L.tt, 8);
	put(im, L, l->L.l_G, G);
	put(im, L, l->L.stack, STK);
	put(im, L, l->L.top, STK + 10 * l->sz_tvalue);
	put(im, L, l->L.stack_last, STK + 40 * l->sz_tvalue);
	if (l->major == 501) {
		/* base_ci is an array: [base, f0, f1, f2]. */
		for (int i = 0; i < 4; i++)
			cis[i] = CI0 + (uint64_t)i * l->sz_callinfo;
		put(im, L, l->L.base_ci, cis[0]);
		put(im, L, l->L.end_ci, cis[0] + 8 * (uint64_t)l->sz_callinfo);
		put(im, L, l->L.ci, cis[3]);
		/* The running function's pc lives in the state. */
		put(im, L, l->L.savedpc, CODE + (uint64_t)(200 + 1) * 4);
	} else {
		cis[0] = L + (uint64_t)l->L.base_ci.off;
		cis[1] = CI0;
		cis[2] = CI1;
		cis[3] = CI2;
		put(im, L, l->L.ci, cis[3]);
		for (int i = 1; i < 4; i++) {
			put(im, cis[i], l->ci.previous, cis[i - 1]);
			put(im, cis[i - 1], l->ci.next, cis[i]);
		}
	}
	/* The base CallInfo's function is the stack's first slot. */
	put(im, cis[0], l->ci.func, STK);
	for (int i = 1; i < 4; i++) {
		uint64_t slot = STK + (uint64_t)(i - 1) * 3 * l->sz_tvalue;

		put(im, cis[i], l->ci.func, slot);
		put64(im, slot, CL);
		/* 5.1 LUA_TFUNCTION; 5.3 a collectable Lua closure. */
		put(im, slot, l->tv.tt, l->major == 501 ? 6 : 0x46);
		/* CIST_LUA: bit 0 in 5.2, bit 1 in 5.3. */
		if (LC_HAS(l->ci.callstatus))
			put(im, cis[i], l->ci.callstatus,
			    l->major == 502 ? 1u << 0 : 1u << 1);
		/* 5.1: the running frame's own savedpc is stale (pc 250);
		 * L->savedpc (pc 200) must win. */
		int pc = l->major == 501 && i == 3 ? 250 : (i - 1) * 100;

		put(im, cis[i], l->ci.savedpc, CODE + (uint64_t)(pc + 1) * 4);
	}
	/* GC headers: 5.1 LUA_TFUNCTION, 5.2.1+/5.3 LUA_TLCL (both 6);
	 * LUA_TPROTO 9. */
	put(im, CL, l->L.tt, 6);
	if (l->major == 501)
		put(im, CL, l->cl.isC, 0);
	put(im, CL, l->cl.p, P);
	put(im, P, l->L.tt, 9);
	put(im, P, l->p.code, CODE);
	put(im, P, l->p.sizecode, 300);
	put(im, P, l->p.maxstacksize, 2);
	/* The last instruction (pc 299) is at lastlinedefined. */
	put(im, P, l->p.linedefined, 10);
	put(im, P, l->p.lastlinedefined, 1000 + 299 * 2);
	put(im, P, l->p.lineinfo, LI);
	put(im, P, l->p.sizelineinfo, 300);
	for (int pc = 0; pc < 300; pc++) {
		int32_t line = 1000 + pc * 2;

		memcpy(im->bytes + (LI - BASE) + pc * 4, &line, 4);
	}
	put(im, P, l->p.source, SRC);
	if (l->major <= 502) {
		/* 5.1 LUA_TSTRING, 5.2 LUA_TSHRSTR: 4. */
		put(im, SRC, l->L.tt, 0x04);
		put(im, SRC, l->ts.len, 6);
	} else {
		put(im, SRC, l->ts.tt, 0x04);
		put(im, SRC, l->ts.shrlen, 6);
	}
	memcpy(im->bytes + (SRC - BASE) + l->ts_contents, "@t.lua", 6);
}

static void check_old(const char *lib, int major)
{
	struct image *im = calloc(1, sizeof(*im));
	const struct lc_layout *l;
	struct lc_target *t = lib_target(im, lib, &l);
	struct lc_lua_ctx *ctx;
	struct lc_lstate st;
	struct lc_ci *cis;
	size_t n;
	bool partial;
	/* Innermost first: pc 200, 100, 0; lineinfo[pc] = 1000 + 2 pc. */
	const int want[3] = { 1400, 1200, 1000 };

	ck_assert_int_eq(l->major, major);
	build_old(im, l);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_state_read(ctx, L, &st), 0);
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 100, &cis, &n, &partial));
	ck_assert(!partial);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		struct lc_frame f = { 0 };

		ck_assert(cis[i].is_lua);
		lc_lua_frame(ctx, &st, cis, n, i, &f);
		ck_assert_str_eq(f.source, "@t.lua");
		ck_assert_int_eq(f.currentline, want[i]);
		lc_frame_free(&f);
	}
	free(cis);
	/* A broken chain ends the walk, marked partial. */
	if (major == 501)
		put(im, L, l->L.ci, CI0 + 3 * (uint64_t)l->sz_callinfo + 1);
	else
		put(im, CI1, l->ci.next, CI0);
	if (lc_lua_state_read(ctx, L, &st) == 0) {
		ck_assert_ptr_null(lc_lua_walk(ctx, &st, 100, &cis, &n, &partial));
		ck_assert(partial);
		free(cis);
	} else {
		ck_assert_int_eq(major, 501);	/* misaligned ci rejected */
	}
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	free(im);
}

START_TEST(test_walk_and_lines_51)
{
	check_old("/usr/lib/x86_64-linux-gnu/liblua5.1.so.0", 501);
}
END_TEST

/* Debian bookworm has no liblua5.2 debug info: 5.2 comes from the
 * matrix's own -O0 build of 5.2.4 (tests/run-matrix.sh, run first). */
START_TEST(test_walk_and_lines_52)
{
	const char *b = getenv("top_builddir");
	char path[4096];

	snprintf(path, sizeof(path), "%s/fixtures/out/src-5.2.4-O0/lchost",
		 b ? b : ".");
	check_old(path, 502);
}
END_TEST

START_TEST(test_walk_and_lines_53)
{
	check_old("/usr/lib/x86_64-linux-gnu/liblua5.3.so.0", 503);
}
END_TEST

/* The version decision (layout.c), apart from DWARF: a release newer
 * than the newest known one of its version, or of a newer version whose
 * layout looks like 5.5, is read with a warning that names it; an ident
 * that contradicts the layout is an error naming both. */
START_TEST(test_version_decision)
{
	static const struct {
		const char *ident;
		int shape, release, major;
		const char *version, *warn1, *warn2;
	} ok[] = {
		{ "$LuaVersion: Lua 5.4.8  Copyright (C) 1994-2025", 504,
		  50408, 504, "5.4.8", NULL, NULL },
		{ "Lua 5.5.0", 505, 50500, 505, "5.5.0", NULL, NULL },
		{ "Lua 5.1", 501, 50100, 501, "5.1.0", NULL, NULL },
		{ "Lua 5.3.6", 503, 50306, 503, "5.3.6", NULL, NULL },
		{ "Lua 5.4.9", 504, 50409, 504, "5.4.9", "Lua 5.4.9 is newer",
		  "rules of 5.4.8" },
		{ "Lua 5.2.5", 502, 50205, 502, "5.2.5", "Lua 5.2.5 is newer",
		  "rules of 5.2.4" },
		{ "Lua 5.5.1", 505, 50501, 505, "5.5.1", "Lua 5.5.1 is newer",
		  "rules of 5.5.0" },
		{ "Lua 5.6.0", 505, 50600, 505, "5.6.0", "Lua 5.6.0 is newer",
		  "rules of 5.5.0" },
		{ "", 505, 50500, 505, "5.5", NULL, NULL },
	};
	static const struct {
		const char *ident;
		int shape;
		const char *msg1, *msg2;
	} bad[] = {
		{ "Lua 5.5.0", 504, "Lua 5.5.0", "looks like Lua 5.4" },
		{ "Lua 5.4.8", 505, "Lua 5.4.8", "looks like Lua 5.5" },
		{ "Lua 5.6.0", 504, "Lua 5.6.0", "looks like Lua 5.4" },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct lc_layout l = { 0 };

		ck_assert_ptr_null(lc_layout_version(ok[i].ident, ok[i].shape,
						     &l));
		ck_assert_int_eq(l.release, ok[i].release);
		ck_assert_int_eq(l.major, ok[i].major);
		ck_assert_str_eq(l.version, ok[i].version);
		ck_assert(l.version_guessed == (ok[i].ident[0] == '\0'));
		if (!ok[i].warn1) {
			ck_assert_str_eq(l.version_warning, "");
			continue;
		}
		ck_assert_msg(strstr(l.version_warning, ok[i].warn1) &&
			      strstr(l.version_warning, ok[i].warn2),
			      "%s: %s", ok[i].ident, l.version_warning);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lc_layout l = { 0 };
		struct lc_error *err = lc_layout_version(bad[i].ident,
							 bad[i].shape, &l);

		ck_assert_ptr_nonnull(err);
		ck_assert_msg(strstr(lc_error_message(err), bad[i].msg1) &&
			      strstr(lc_error_message(err), bad[i].msg2),
			      "%s", lc_error_message(err));
		lc_error_destroy(err);
	}
}
END_TEST

/* 5.5 through the matrix's -O0 build of 5.5.0 (tests/run-matrix.sh, run
 * first): the main thread inside global_State, a long source string
 * whose bytes are elsewhere, CallInfo flags from bit 15 on. */
enum {
	G55 = BASE + 0x8000, LSRC = BASE + 0x7400,
	CIST55_C = 1u << 15, CIST55_FRESH = 1u << 16, CIST55_TAIL = 1u << 22,
};

START_TEST(test_walk_and_lines_55)
{
	struct image *im = calloc(1, sizeof(*im));
	const char *b = getenv("top_builddir");
	char path[4096];
	const struct lc_layout *l;
	struct lc_target *t;
	struct lc_lua_ctx *ctx;
	struct lc_lstate st;
	struct lc_ci *cis;
	size_t n;
	bool partial;
	uint64_t L55, m;

	snprintf(path, sizeof(path), "%s/fixtures/out/src-5.5.0-O0/lchost",
		 b ? b : ".");
	t = lib_target(im, path, &l);
	ck_assert_int_eq(l->major, 505);
	ck_assert_str_eq(l->version, "5.5.0");
	ck_assert_str_eq(l->version_warning, "");
	ck_assert(!LC_HAS(l->G.mainthread) && LC_HAS(l->G.mainth));
	ck_assert(l->ts_lngptr && l->stkidrel);
	ck_assert_int_eq(l->lg_g_minus_l, -(int64_t)l->G.mainth.off);
	L55 = G55 + (uint64_t)l->G.mainth.off;
	ck_assert_uint_lt(L55 + l->sz_lstate, BASE + SIZE);

	/* build_54's picture, moved: the thread inside G55. */
	build_54(im, l);
	memcpy(im->bytes + (L55 - BASE), im->bytes + (L - BASE), l->sz_lstate);
	put(im, L55, l->L.l_G, G55);
	{
		uint64_t base_ci = L55 + (uint64_t)l->L.base_ci.off;

		put(im, CI0, l->ci.previous, base_ci);
		put(im, base_ci, l->ci.next, CI0);
	}
	/* 5.4's CIST_C (bit 1) is part of nresults in 5.5: still Lua;
	 * the innermost frame is a tail call, the middle one fresh. */
	put(im, CI2, l->ci.callstatus, (1u << 1) | CIST55_TAIL);
	put(im, CI1, l->ci.callstatus, (1u << 1) | CIST55_FRESH);
	put(im, CI0, l->ci.callstatus, 0);
	/* A long source: tag LUA_VLNGSTR, shrlen < 0, bytes elsewhere. */
	memset(im->bytes + (SRC - BASE), 0, 64);
	put(im, SRC, l->ts.tt, 0x14);
	put(im, SRC, l->ts.shrlen, 0xff);
	put(im, SRC, l->ts.lnglen, 6);
	put64(im, SRC + l->ts_contents, LSRC);
	memcpy(im->bytes + (LSRC - BASE), "@t.lua", 7);

	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_mainthread(ctx, G55, &m), 0);
	ck_assert_uint_eq(m, L55);
	ck_assert_int_eq(lc_lua_state_read(ctx, L55, &st), 0);
	ck_assert_uint_eq(st.mainthread, L55);
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 100, &cis, &n, &partial));
	ck_assert(!partial);
	ck_assert_uint_eq(n, 3);
	int want[3] = { 500, 111, 11 };
	for (size_t i = 0; i < n; i++) {
		struct lc_frame f = { 0 };

		ck_assert(cis[i].is_lua);
		lc_lua_frame(ctx, &st, cis, n, i, &f);
		ck_assert_str_eq(f.source, "@t.lua");
		ck_assert_int_eq(f.currentline, want[i]);
		ck_assert(f.istailcall == (i == 0));
		ck_assert(!f.partial);
		lc_frame_free(&f);
	}
	ck_assert(lc_lua_ci_starts_run(ctx, cis, n, 1));
	ck_assert(!lc_lua_ci_starts_run(ctx, cis, n, 0));
	free(cis);
	/* CIST_C marks a C frame: a light C function (LUA_VLCF) in the
	 * slot, the bit agreeing with it; a Lua closure with CIST_C is a
	 * frame whose bits and function disagree.  A string without its
	 * NUL is none; a thread whose l_G is not a global_State with it
	 * inside is no state. */
	put(im, CI2, l->ci.callstatus, CIST55_C);
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 100, &cis, &n, &partial));
	ck_assert(cis[0].is_lua && cis[0].kind_mismatch);
	free(cis);
	put64(im, STK + 2 * 3 * 16, 0x7f0000001000ull);
	put(im, STK + 2 * 3 * 16, l->tv.tt, 0x16);
	ck_assert_ptr_null(lc_lua_walk(ctx, &st, 100, &cis, &n, &partial));
	ck_assert(!cis[0].is_lua && !cis[0].bad && !cis[0].kind_mismatch);
	free(cis);
	im->bytes[LSRC - BASE + 6] = 'x';
	ck_assert_ptr_null(lc_lua_read_string(ctx, SRC, NULL, NULL));
	put(im, L55, l->L.l_G, G);
	ck_assert_int_ne(lc_lua_state_read(ctx, L55, &st), 0);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	free(im);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("target");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_symbol_display);
	tcase_add_test(tc, test_read_fault_address);
	tcase_add_test(tc, test_layout_from_dwarf);
	tcase_add_test(tc, test_walk_and_lines_54);
	tcase_add_test(tc, test_walk_cycle_is_partial);
	tcase_add_test(tc, test_state_validation);
	tcase_add_test(tc, test_walk_and_lines_51);
	tcase_add_test(tc, test_walk_and_lines_52);
	tcase_add_test(tc, test_walk_and_lines_53);
	tcase_add_test(tc, test_version_decision);
	tcase_add_test(tc, test_walk_and_lines_55);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
