/* Unit tests for vm/puc/heap.c: VM decoding, GC lists, thread internals and
 * the memory scan, on synthetic images whose offsets come from the DWARF
 * of Debian's liblua5.1, liblua5.3 and liblua5.4 (their -dbg packages;
 * override the paths with LUACORE_TEST_LUA51/53/54), plus the scan on
 * fixture cores when fixtures/out exists (LUACORE_FIXTURES overrides). */
#include <config.h>

#include <check.h>
#include <dwarf.h>
#include <elf.h>
#include <inttypes.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "puc_support.h"
#include "vm/puc/heap.h"

#define BASE	0x100000ull
#define SIZE	0x300000ull	/* 3 MiB: the scan reads it in 3 chunks */
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

static struct image *image_new(void)
{
	struct image *im = calloc(1, sizeof(*im));

	ck_assert_ptr_nonnull(im);
	im->bytes = calloc(1, SIZE);
	ck_assert_ptr_nonnull(im->bytes);
	im->base = BASE;
	im->brk = BASE + 0x1000;
	return im;
}

static void image_free(struct image *im)
{
	free(im->bytes);
	free(im);
}

/* n zeroed bytes of the image, 16-aligned. */
static uint64_t obj(struct image *im, uint64_t n)
{
	uint64_t a = (im->brk + 15) & ~15ull;

	im->brk = a + n;
	ck_assert_uint_le(im->brk, BASE + SIZE);
	return a;
}

static void put(struct image *im, uint64_t addr, struct lc_field f, uint64_t v)
{
	ck_assert_int_ge(f.off, 0);
	ck_assert_uint_le(f.size, 8);
	memcpy(im->bytes + (addr - im->base) + f.off, &v, f.size);
}

static void put64(struct image *im, uint64_t addr, uint64_t v)
{
	memcpy(im->bytes + (addr - im->base), &v, 8);
}

static const char *lua_path(int major)
{
	const char *env = major == 501 ? "LUACORE_TEST_LUA51" :
			  major == 503 ? "LUACORE_TEST_LUA53" :
			  "LUACORE_TEST_LUA54";
	const char *p = getenv(env);

	if (p)
		return p;
	return major == 501 ? "/usr/lib/x86_64-linux-gnu/liblua5.1.so.0" :
	       major == 503 ? "/usr/lib/x86_64-linux-gnu/liblua5.3.so.0" :
	       "/usr/lib/x86_64-linux-gnu/liblua5.4.so.0";
}

static struct lc_target *lua_target(struct image *im, int major,
				    const struct lc_layout **l)
{
	struct lc_target *t;
	struct lc_error *err;

	ck_assert_ptr_null(lc_target_create_callback(image_read, im, &t));
	err = lc_target_add_module(t, lua_path(major), BIAS);
	ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	err = lc_layout_get(t, l);
	ck_assert_msg(err == NULL, "%s (install liblua5.%d-0-dbg)",
		      lc_error_message(err), major % 100);
	ck_assert_int_eq((*l)->major, major);
	return t;
}

/* ---- building VMs and threads ---- */

static uint64_t slot(const struct lc_layout *l)
{
	return l->sz_stack_slot;
}

/* A lua_State at L of VM g: a stack of 40 slots holding "nvals" values
 * above the base function slot, no frames (5.1: a CallInfo array of 8). */
static void build_state(struct image *im, const struct lc_layout *l,
			uint64_t L, uint64_t g, int nvals)
{
	uint64_t stk = obj(im, 48 * slot(l));

	put(im, L, l->L.tt, 8);
	put(im, L, l->L.l_G, g);
	put(im, L, l->L.stack, stk);
	put(im, L, l->L.top, stk + (uint64_t)(1 + nvals) * slot(l));
	put(im, L, l->L.stack_last, stk + 40 * slot(l));
	if (l->major == 501) {
		uint64_t cia = obj(im, 8 * (uint64_t)l->sz_callinfo);

		put(im, L, l->L.base_ci, cia);
		put(im, L, l->L.end_ci, cia + 8 * (uint64_t)l->sz_callinfo);
		put(im, L, l->L.ci, cia);
		put(im, cia, l->ci.func, stk);
		put(im, cia, l->ci.base, stk + slot(l));
		put(im, L, l->L.base, stk + slot(l));
	} else {
		uint64_t base_ci = L + (uint64_t)l->L.base_ci.off;

		put(im, L, l->L.ci, base_ci);
		put(im, base_ci, l->ci.func, stk);
	}
	if (LC_HAS(l->L.tbclist))
		put(im, L, l->L.tbclist, stk);
	put(im, L, l->L.allowhook, 1);
}

static int pause_state(const struct lc_layout *l)
{
	switch (l->major) {
	case 501: return 0;	/* GCSpause */
	case 502: return 5;
	case 503: return 7;
	default: return 8;
	}
}

static void link_list(struct image *im, const struct lc_layout *l, uint64_t g,
		      struct lc_field head, const uint64_t *objs, size_t n);

static struct lc_field list_head(const struct lc_layout *l)
{
	return l->major == 501 ? l->Gx.rootgc : l->Gx.allgc;
}

/* The objects lua_newstate leaves at the end of rootgc (5.1) / allgc
 * (5.2+), oldest last: the registry table, made after the main thread
 * was linked (5.1 f_luaopen, 5.4+ init_registry), then the main thread
 * itself; 5.2 and 5.3 never link the main thread, and the registry is
 * their first object.  Returns how many (at most 2). */
static size_t vm_tail(struct image *im, const struct lc_layout *l, uint64_t g,
		      uint64_t out[2])
{
	uint64_t reg;
	size_t n = 0;

	memcpy(&reg, im->bytes + (g - im->base) + l->G.l_registry.off +
	       l->tv.value.off, 8);
	out[n++] = reg;
	if (l->major == 501 || l->major >= 504)
		out[n++] = g - (uint64_t)l->lg_g_minus_l;
	return n;
}

/* Link objs[0..n-1], newest first, into g's rootgc/allgc, followed by
 * what lua_newstate put there (vm_tail).  Returns the list's length. */
static size_t link_allgc(struct image *im, const struct lc_layout *l,
			 uint64_t g, const uint64_t *objs, size_t n)
{
	uint64_t all[256];
	size_t nt;

	ck_assert_uint_le(n, LC_ARRAY_SIZE(all) - 2);
	if (n)
		memcpy(all, objs, n * sizeof(*objs));
	nt = vm_tail(im, l, g, all + n);
	link_list(im, l, g, list_head(l), all, n + nt);
	return n + nt;
}

/* A VM as lua_newstate makes it: the main thread right below the
 * global_State (struct LG), a registry table, both on the GC list.
 * Returns g. */
static uint64_t build_vm(struct image *im, const struct lc_layout *l)
{
	uint64_t lg = obj(im, (uint64_t)l->lg_g_minus_l + 4096);
	uint64_t g = lg + (uint64_t)l->lg_g_minus_l;
	uint64_t reg = obj(im, 64);

	ck_assert_int_gt(l->lg_g_minus_l, 0);
	put(im, g, l->G.mainthread, lg);
	build_state(im, l, lg, g, 0);
	put(im, g, l->G.gcstate, (uint64_t)pause_state(l));
	put64(im, g + (uint64_t)l->G.l_registry.off + (uint64_t)l->tv.value.off,
	      reg);
	put(im, g + (uint64_t)l->G.l_registry.off, l->tv.tt,
	    l->major == 501 ? 5 : 0x45);
	put(im, reg, l->L.tt, 5);
	link_allgc(im, l, g, NULL, 0);
	return g;
}

/* A coroutine of VM g with "nvals" values on its stack. */
static uint64_t build_thread(struct image *im, const struct lc_layout *l,
			     uint64_t g, int nvals)
{
	uint64_t L = obj(im, l->sz_lstate);

	build_state(im, l, L, g, nvals);
	return L;
}

/* Give L one Lua frame above its base CallInfo. */
static void add_frame(struct image *im, const struct lc_layout *l, uint64_t L)
{
	uint64_t stk;

	memcpy(&stk, im->bytes + (L - BASE) + l->L.stack.off, 8);
	if (l->major == 501) {
		uint64_t cia;

		memcpy(&cia, im->bytes + (L - BASE) + l->L.base_ci.off, 8);
		put(im, L, l->L.ci, cia + l->sz_callinfo);
	} else {
		uint64_t base_ci = L + (uint64_t)l->L.base_ci.off;
		uint64_t ci = obj(im, 256);

		put(im, ci, l->ci.previous, base_ci);
		put(im, base_ci, l->ci.next, ci);
		put(im, ci, l->ci.func, stk + slot(l));
		put(im, L, l->L.ci, ci);
	}
}

/* Link objs[0..n-1] into a GC list: head field of g, then 'next'. */
static void link_list(struct image *im, const struct lc_layout *l, uint64_t g,
		      struct lc_field head, const uint64_t *objs, size_t n)
{
	put(im, g, head, n ? objs[0] : 0);
	for (size_t i = 0; i < n; i++)
		put(im, objs[i], l->Lx.next, i + 1 < n ? objs[i + 1] : 0);
}

/* A non-thread GC object (a table). */
static uint64_t gc_table(struct image *im, const struct lc_layout *l)
{
	uint64_t o = obj(im, 64);

	put(im, o, l->L.tt, 5);
	return o;
}

/* ---- DWARF read here, apart from layout.c ---- */

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

/* Offset of member "mem" (and, if "sub", of "sub" inside it) of struct
 * "type" among the top-level DIEs of unit, following dwz's imported
 * units; -1 if not there. */
static int64_t unit_offset(Dwarf_Die *unit, const char *type, const char *mem,
			   const char *sub, int depth)
{
	Dwarf_Die c;

	if (dwarf_child(unit, &c) != 0)
		return -1;
	do {
		const char *dn = dwarf_diename(&c);
		Dwarf_Attribute a;
		Dwarf_Die m;

		if (dwarf_tag(&c) == DW_TAG_imported_unit && depth < 2) {
			Dwarf_Die imp;
			int64_t r;

			if (dwarf_attr(&c, DW_AT_import, &a) &&
			    dwarf_formref_die(&a, &imp) &&
			    (r = unit_offset(&imp, type, mem, sub, depth + 1)) >= 0)
				return r;
			continue;
		}
		if (dwarf_tag(&c) != DW_TAG_structure_type || !dn ||
		    strcmp(dn, type) != 0 ||
		    dwarf_hasattr(&c, DW_AT_declaration) ||
		    dwarf_child(&c, &m) != 0)
			continue;
		do {
			Dwarf_Word off, so;
			Dwarf_Die mt, sm;
			const char *mn = dwarf_diename(&m);

			if (!mn || strcmp(mn, mem) != 0 ||
			    !dwarf_attr(&m, DW_AT_data_member_location, &a) ||
			    dwarf_formudata(&a, &off) != 0)
				continue;
			if (!sub)
				return (int64_t)off;
			if (!dwarf_attr_integrate(&m, DW_AT_type, &a) ||
			    !dwarf_formref_die(&a, &mt) || !peel(&mt) ||
			    dwarf_child(&mt, &sm) != 0)
				return -1;
			do {
				const char *sn = dwarf_diename(&sm);

				if (sn && strcmp(sn, sub) == 0 &&
				    dwarf_attr(&sm, DW_AT_data_member_location, &a) &&
				    dwarf_formudata(&a, &so) == 0)
					return (int64_t)(off + so);
			} while (dwarf_siblingof(&sm, &sm) == 0);
			return -1;
		} while (dwarf_siblingof(&m, &m) == 0);
	} while (dwarf_siblingof(&c, &c) == 0);
	return -1;
}

/* The same, in the CU whose name contains "cuname". */
static int64_t dwarf_offset(struct lc_target *t, const char *cuname,
			    const char *type, const char *mem, const char *sub)
{
	Dwfl_Module *mod;
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;

	ck_assert_ptr_nonnull(t->prog->dwfl);
	mod = dwfl_addrmodule(t->prog->dwfl, BIAS + 0x1000);
	ck_assert_ptr_nonnull(mod);
	while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
		const char *n = dwarf_diename(cu);
		int64_t r;

		if (n && strstr(n, cuname) &&
		    (r = unit_offset(cu, type, mem, sub, 0)) >= 0)
			return r;
	}
	return -1;
}

/* global_State.seed (an unsigned int), to stand in for a field the
 * DWARF at hand lacks. */
static struct lc_field field_of_seed(struct lc_target *t)
{
	int64_t off = dwarf_offset(t, "lstate.c", "global_State", "seed", NULL);

	ck_assert_int_gt(off, 0);
	return (struct lc_field){ .off = (int32_t)off, .size = 4 };
}

/* ---- layout ---- */

static const int majors[] = { 501, 503, 504 };

START_TEST(test_layout_vm_fields)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	int64_t g_off = dwarf_offset(t, "lstate.c", "LG", "g", NULL);
	int64_t l_off = dwarf_offset(t, "lstate.c", "LG", "l",
				     major == 501 ? NULL : "l");

	/* struct LG read apart: g - mainthread. */
	ck_assert_int_gt(g_off, 0);
	ck_assert_int_ge(l_off, 0);
	ck_assert(!l->lg_derived);
	ck_assert_int_eq(l->lg_g_minus_l, g_off - l_off);
	ck_assert_int_eq(l->lj.status.off,
			 dwarf_offset(t, "ldo.c", "lua_longjmp", "status", NULL));
	ck_assert_int_eq(l->lj.status.size, 4);
	ck_assert_int_eq(l->Lx.next.off, 0);
	ck_assert(LC_HAS(l->uvx.open_next));
	ck_assert(LC_HAS(l->Gx.totalbytes));
	ck_assert(LC_HAS(l->Gx.gcpause) && LC_HAS(l->Gx.gcstepmul));
	ck_assert(!LC_HAS(l->Gx.Cstacklimit));	/* not 5.4.0/5.4.1 */
	switch (major) {
	case 501:
		ck_assert(LC_HAS(l->Gx.rootgc) && !LC_HAS(l->Gx.allgc));
		ck_assert(LC_HAS(l->Gx.estimate) && !LC_HAS(l->Gx.GCdebt));
		ck_assert(!LC_HAS(l->Gx.gckind));
		ck_assert(LC_HAS(l->L.baseCcalls));
		break;
	case 503:
		ck_assert(LC_HAS(l->Gx.allgc) && LC_HAS(l->Gx.finobj) &&
			  LC_HAS(l->Gx.tobefnz) && LC_HAS(l->Gx.fixedgc));
		ck_assert(LC_HAS(l->Gx.GCdebt) && LC_HAS(l->Gx.gckind));
		ck_assert(!LC_HAS(l->Gx.gcstepsize));
		/* 5.3 UpVal: the open list is u.open.next, not a header. */
		ck_assert_int_gt(l->uvx.open_next.off, 0);
		break;
	default:
		ck_assert(LC_HAS(l->Gx.gcstepsize) && LC_HAS(l->Gx.genminormul) &&
			  LC_HAS(l->Gx.genmajormul) && LC_HAS(l->Gx.gcemergency));
		ck_assert_int_eq(l->L.nCcalls.size, 4);
		ck_assert_int_gt(l->uvx.open_next.off, 0);
		break;
	}
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* ---- gcstate names ---- */

START_TEST(test_gcstate_names)
{
	static const char *const want[][10] = {
		{ "pause", "propagate", "sweepstring", "sweep", "finalize" },
		{ "propagate", "atomic", "swpallgc", "swpfinobj", "swptobefnz",
		  "swpend", "callfin", "pause" },
		{ "propagate", "enteratomic", "atomic", "swpallgc", "swpfinobj",
		  "swptobefnz", "swpend", "callfin", "pause" },
	};
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	int n = 0;

	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	while (n < 10 && want[_i][n])
		n++;
	for (int s = 0; s <= n; s++) {
		struct lc_vm vm;

		put(im, g, l->G.gcstate, (uint64_t)s);
		ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
		ck_assert_int_eq(vm.gcstate, s);
		if (s < n) {
			ck_assert_str_eq(vm.gcstate_name, want[_i][s]);
			ck_assert(!vm.partial);
		} else {
			/* One past the version's last state. */
			ck_assert_str_eq(vm.gcstate_name, "?");
			ck_assert(vm.partial);
			ck_assert_ptr_nonnull(vm.note);
		}
		lc_vm_clear(&vm);
	}
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* ---- GC accounting, kind, parameters ---- */

START_TEST(test_gc_params_54)
{
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, 504, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	struct lc_vm vm;

	put(im, g, l->Gx.totalbytes, 100000);
	put(im, g, l->Gx.GCdebt, (uint64_t)-2500);
	put(im, g, l->Gx.GCestimate, 60000);
	/* Stored as collectgarbage's value / 4, except stepsize (log2) and
	 * genminormul. */
	put(im, g, l->Gx.gcpause, 50);
	put(im, g, l->Gx.gcstepmul, 25);
	put(im, g, l->Gx.gcstepsize, 13);
	put(im, g, l->Gx.genminormul, 20);
	put(im, g, l->Gx.genmajormul, 25);
	put(im, g, l->Gx.gckind, 1);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert_uint_eq(vm.g, g);
	ck_assert_uint_eq(vm.mainthread, g - (uint64_t)l->lg_g_minus_l);
	ck_assert_uint_ne(vm.registry, 0);
	ck_assert_int_eq(vm.totalbytes, 100000);
	ck_assert_int_eq(vm.gcdebt, -2500);
	ck_assert_int_eq(vm.memory, 97500);
	ck_assert_int_eq(vm.gcestimate, 60000);
	ck_assert_int_eq(vm.gcpause, 200);
	ck_assert_int_eq(vm.gcstepmul, 100);
	ck_assert_int_eq(vm.gcstepsize, 13);
	ck_assert_int_eq(vm.genminormul, 20);
	ck_assert_int_eq(vm.genmajormul, 100);
	ck_assert_str_eq(vm.gckind, "generational");
	lc_vm_clear(&vm);
	put(im, g, l->Gx.gckind, 0);
	put(im, g, l->Gx.gcemergency, 1);
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert_str_eq(vm.gckind, "incremental (emergency)");
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_gc_params_51_53)
{
	int major = _i == 0 ? 501 : 503;
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	struct lc_vm vm;

	put(im, g, l->Gx.totalbytes, 100000);
	if (major == 501) {
		put(im, g, l->Gx.estimate, 70000);
	} else {
		put(im, g, l->Gx.GCdebt, 3000);
		put(im, g, l->Gx.GCestimate, 70000);
		put(im, g, l->Gx.gckind, 1);
	}
	put(im, g, l->Gx.gcpause, 150);
	put(im, g, l->Gx.gcstepmul, 400);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert_int_eq(vm.totalbytes, 100000);
	ck_assert_int_eq(vm.gcestimate, 70000);
	ck_assert_int_eq(vm.gcdebt, major == 501 ? 0 : 3000);
	ck_assert_int_eq(vm.memory, major == 501 ? 100000 : 103000);
	ck_assert_int_eq(vm.gcpause, 150);	/* as stored */
	ck_assert_int_eq(vm.gcstepmul, 400);
	ck_assert_int_eq(vm.gcstepsize, -1);
	ck_assert_int_eq(vm.genminormul, -1);
	ck_assert_int_eq(vm.genmajormul, -1);
	ck_assert_str_eq(vm.gckind, major == 501 ? "incremental" : "emergency");
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* ---- C calls and non-yieldable calls ---- */

START_TEST(test_ccalls_per_version)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t co = build_thread(im, l, g, 0);
	uint64_t mt = g - (uint64_t)l->lg_g_minus_l;
	struct lc_lstate st;
	struct lc_luathread th;

	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	switch (major) {
	case 501:
		/* nny: 1 when nCcalls > baseCcalls (lua_yield's test). */
		put(im, co, l->L.nCcalls, 5);
		put(im, co, l->L.baseCcalls, 3);
		ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_uint_eq(th.ccalls, 5);
		ck_assert_uint_eq(th.nny, 1);
		ck_assert_uint_eq(th.nCcalls_raw, 5);
		lc_luathread_clear(&th);
		put(im, co, l->L.baseCcalls, 5);
		ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_uint_eq(th.nny, 0);
		lc_luathread_clear(&th);
		/* The main thread never yields. */
		ck_assert_int_eq(lc_lua_state_read(ctx, mt, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert(th.is_main);
		ck_assert_uint_eq(th.nny, 1);
		lc_luathread_clear(&th);
		break;
	case 503:
		put(im, co, l->L.nCcalls, 7);
		put(im, co, l->L.nny, 2);
		ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_uint_eq(th.ccalls, 7);
		ck_assert_uint_eq(th.nny, 2);
		lc_luathread_clear(&th);
		break;
	default: {
		struct lc_layout *lw = (struct lc_layout *)l;
		struct lc_field save = lw->Gx.Cstacklimit;

		/* getCcalls: low 16 bits; nny: high 16 bits. */
		put(im, co, l->L.nCcalls, 0x00030005);
		ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_uint_eq(th.ccalls, 5);
		ck_assert_uint_eq(th.nny, 3);
		ck_assert_uint_eq(th.nCcalls_raw, 0x00030005);
		lc_luathread_clear(&th);
		/* 5.4.0/5.4.1 count down from Cstacklimit, less nci.  No such
		 * DWARF here: borrow 'seed' (an unsigned int) as the field. */
		lw->Gx.Cstacklimit = field_of_seed(t);
		put(im, g, lw->Gx.Cstacklimit, 200);
		put(im, co, l->Lx.nci, 4);
		put(im, co, l->L.nCcalls, 0x00010000 | 190);
		ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_uint_eq(th.ccalls, 200 - 190 - 4);
		ck_assert_uint_eq(th.nny, 1);
		lc_luathread_clear(&th);
		lw->Gx.Cstacklimit = save;
		break;
	}
	}
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* ---- status, errorJmp, hooks, upvalues ---- */

START_TEST(test_status_names)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t mt = g - (uint64_t)l->lg_g_minus_l;
	uint64_t dead = build_thread(im, l, g, 0);
	uint64_t fresh = build_thread(im, l, g, 1);	/* the function */
	uint64_t yielded = build_thread(im, l, g, 2);
	uint64_t failed = build_thread(im, l, g, 1);
	uint64_t running = build_thread(im, l, g, 3);
	struct {
		uint64_t L;
		const char *status;
	} cases[] = {
		{ mt, "idle" }, { dead, "dead" }, { fresh, "suspended" },
		{ yielded, "suspended" }, { failed, "error" },
		{ running, "normal" },
	};

	put(im, yielded, l->L.status, 1);	/* LUA_YIELD */
	add_frame(im, l, yielded);
	put(im, failed, l->L.status, 2);	/* LUA_ERRRUN */
	add_frame(im, l, running);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	for (size_t i = 0; i < LC_ARRAY_SIZE(cases); i++) {
		struct lc_lstate st;
		struct lc_luathread th;

		ck_assert_int_eq(lc_lua_state_read(ctx, cases[i].L, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_msg(strcmp(th.status, cases[i].status) == 0,
			      "case %zu: %s, want %s", i, th.status,
			      cases[i].status);
		ck_assert_int_eq(th.is_main, cases[i].L == mt);
		ck_assert_int_eq(th.ci_depth,
				 cases[i].L == yielded || cases[i].L == running);
		ck_assert_int_eq(th.stacksize, 40);
		ck_assert_int_eq(th.topslot,
				 cases[i].L == fresh || cases[i].L == failed ? 2 :
				 cases[i].L == yielded ? 3 :
				 cases[i].L == running ? 4 : 1);
		ck_assert(!th.partial);
		lc_luathread_clear(&th);
	}
	/* The main thread with a frame is running or normal: "normal". */
	add_frame(im, l, mt);
	{
		struct lc_lstate st;
		struct lc_luathread th;

		ck_assert_int_eq(lc_lua_state_read(ctx, mt, &st), 0);
		lc_luathread_decode(ctx, &st, &th);
		ck_assert_str_eq(th.status, "normal");
		lc_luathread_clear(&th);
	}
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_errorjmp)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t yielded = build_thread(im, l, g, 2);
	uint64_t running = build_thread(im, l, g, 2);
	uint64_t lj = obj(im, 256);
	struct lc_lstate st;
	struct lc_luathread th;

	put(im, lj, l->lj.status, 3);
	put(im, yielded, l->L.status, 1);
	add_frame(im, l, yielded);
	add_frame(im, l, running);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	/* None: nothing to say. */
	ck_assert_int_eq(lc_lua_state_read(ctx, yielded, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert_uint_eq(th.errorjmp, 0);
	ck_assert(!th.errorjmp_suspicious);
	lc_luathread_clear(&th);
	/* A yielded coroutine keeps no recovery point. */
	put(im, yielded, l->L.errorJmp, lj);
	ck_assert_int_eq(lc_lua_state_read(ctx, yielded, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert_uint_eq(th.errorjmp, lj);
	ck_assert_int_eq(th.errorjmp_status, 3);
	ck_assert(th.errorjmp_suspicious);
	ck_assert(!th.errorjmp_on_stack);	/* the report's to say */
	lc_luathread_clear(&th);
	/* A coroutine with frames may well be inside a pcall. */
	put(im, running, l->L.errorJmp, lj);
	ck_assert_int_eq(lc_lua_state_read(ctx, running, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert(!th.errorjmp_suspicious);
	lc_luathread_clear(&th);
	/* Unreadable: status -1. */
	put(im, running, l->L.errorJmp, BASE + SIZE + 0x1000);
	ck_assert_int_eq(lc_lua_state_read(ctx, running, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert_int_eq(th.errorjmp_status, -1);
	lc_luathread_clear(&th);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* The address of an exported function of the Lua module. */
static uint64_t module_sym(struct lc_target *t, const char *name)
{
	Dwfl_Module *mod = dwfl_addrmodule(t->prog->dwfl, BIAS + 0x1000);
	int n;

	ck_assert_ptr_nonnull(mod);
	n = dwfl_module_getsymtab(mod);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(mod, i, &sym, &addr,
						       NULL, NULL, NULL);

		if (s && strcmp(s, name) == 0 && sym.st_shndx != SHN_UNDEF)
			return addr;
	}
	ck_abort_msg("no symbol %s", name);
	return 0;
}

START_TEST(test_hook)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t co = build_thread(im, l, g, 0);
	struct lc_lstate st;
	struct lc_luathread th;

	put(im, co, l->L.hook, module_sym(t, "lua_gethook"));
	put(im, co, l->L.hookmask, 8);			/* LUA_MASKCOUNT */
	put(im, co, l->L.basehookcount, 1000);
	put(im, co, l->L.hookcount, 665);
	put(im, co, l->L.allowhook, 0);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert_uint_eq(th.hook, module_sym(t, "lua_gethook"));
	ck_assert_ptr_nonnull(th.hook_name);
	ck_assert_str_eq(th.hook_name, "lua_gethook");
	ck_assert_int_eq(th.hookmask, 8);
	ck_assert_int_eq(th.basehookcount, 1000);
	ck_assert_int_eq(th.hookcount, 665);
	ck_assert_int_eq(th.allowhook, 0);
	lc_luathread_clear(&th);
	ck_assert_ptr_null(th.hook_name);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_openupval_and_tbc)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t co = build_thread(im, l, g, 4);
	uint64_t uv[3] = { obj(im, 64), obj(im, 64), obj(im, 64) };
	uint64_t stk;
	struct lc_lstate st;
	struct lc_luathread th;

	memcpy(&stk, im->bytes + (co - BASE) + l->L.stack.off, 8);
	put(im, co, l->L.openupval, uv[0]);
	put(im, uv[0], l->uvx.open_next, uv[1]);
	put(im, uv[1], l->uvx.open_next, uv[2]);
	if (LC_HAS(l->L.tbclist))
		put(im, co, l->L.tbclist, stk + 2 * slot(l));
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert_int_eq(th.openupval, 3);
	ck_assert(!th.partial);
	if (major == 504)
		ck_assert_uint_eq(th.tbclist, stk + 2 * slot(l));
	else
		ck_assert_uint_eq(th.tbclist, 0);
	lc_luathread_clear(&th);
	/* A cycle: counted once around at most, marked. */
	put(im, uv[2], l->uvx.open_next, uv[0]);
	if (LC_HAS(l->L.tbclist))
		put(im, co, l->L.tbclist, stk);		/* none */
	ck_assert_int_eq(lc_lua_state_read(ctx, co, &st), 0);
	lc_luathread_decode(ctx, &st, &th);
	ck_assert(th.partial);
	ck_assert_ptr_nonnull(th.note);
	ck_assert_ptr_nonnull(strstr(th.note, "cyclic"));
	ck_assert_int_le(th.openupval, 8);
	ck_assert_uint_eq(th.tbclist, 0);
	lc_luathread_clear(&th);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* ---- GC lists ---- */

START_TEST(test_gc_list_threads)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t mt = g - (uint64_t)l->lg_g_minus_l;
	uint64_t c1 = build_thread(im, l, g, 0), c2 = build_thread(im, l, g, 1);
	uint64_t other = build_vm(im, l);
	uint64_t stranger = build_thread(im, l, other, 0);
	uint64_t bogus = obj(im, l->sz_lstate);
	/* Newest first, as luaC_newobj links them, before what
	 * lua_newstate linked (link_allgc). */
	uint64_t list[] = { gc_table(im, l), c2, gc_table(im, l), stranger,
			    bogus, c1, gc_table(im, l) };
	struct lc_vm vm;

	put(im, bogus, l->L.tt, 8);	/* a thread tag, nothing else */
	link_allgc(im, l, g, list, LC_ARRAY_SIZE(list));
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	/* Main first, then by address; the other VM's thread and the
	 * bogus one, damage on this VM's list, listed as damaged, and
	 * said so. */
	ck_assert_uint_eq(vm.nthreads, 5);
	ck_assert_uint_eq(vm.threads[0].addr, mt);
	ck_assert(vm.threads[0].is_main);
	ck_assert_uint_eq(vm.threads[1].addr, c1);
	ck_assert_uint_eq(vm.threads[2].addr, c2);
	ck_assert(!vm.threads[1].is_main);
	ck_assert_str_eq(vm.threads[1].status, "dead");
	ck_assert_str_eq(vm.threads[2].status, "suspended");
	ck_assert_uint_eq(vm.threads[2].g, g);
	ck_assert_uint_lt(stranger, bogus);
	ck_assert_uint_eq(vm.threads[3].addr, stranger);
	ck_assert_uint_eq(vm.threads[4].addr, bogus);
	for (int i = 3; i < 5; i++) {
		ck_assert_str_eq(vm.threads[i].status, "damaged");
		ck_assert(!vm.threads[i].is_main);
		ck_assert_uint_eq(vm.threads[i].g, g);
	}
	ck_assert(vm.partial);
	ck_assert_ptr_nonnull(strstr(vm.note, "2 thread objects on the GC lists do not validate"));
	lc_vm_clear(&vm);
	ck_assert_ptr_null(vm.threads);
	/* Without the bogus one and the stranger, nothing to report. */
	list[3] = gc_table(im, l);
	list[4] = gc_table(im, l);
	link_allgc(im, l, g, list, LC_ARRAY_SIZE(list));
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert_uint_eq(vm.nthreads, 3);
	ck_assert(!vm.partial);
	ck_assert_ptr_null(vm.note);
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_gc_lists_53_54)
{
	int major = _i == 0 ? 503 : 504;
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t ca = build_thread(im, l, g, 0), cb = build_thread(im, l, g, 0);
	uint64_t cc = build_thread(im, l, g, 0), cd = build_thread(im, l, g, 0);
	uint64_t a[] = { ca, gc_table(im, l) }, b[] = { gc_table(im, l), cb };
	uint64_t c[] = { cc }, d[] = { gc_table(im, l), cd };
	struct lc_vm vm;

	/* Every list is walked, whatever it should hold. */
	link_allgc(im, l, g, a, 2);
	link_list(im, l, g, l->Gx.finobj, b, 2);
	link_list(im, l, g, l->Gx.tobefnz, c, 1);
	link_list(im, l, g, l->Gx.fixedgc, d, 2);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert_uint_eq(vm.nthreads, 5);
	ck_assert(!vm.partial);
	lc_vm_clear(&vm);
	/* The same thread on two lists counts once, marked. */
	c[0] = ca;
	link_list(im, l, g, l->Gx.tobefnz, c, 1);
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert_uint_eq(vm.nthreads, 4);
	ck_assert(vm.partial);
	ck_assert_ptr_nonnull(strstr(vm.note, "more than once"));
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_gc_list_cycle)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, major, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t c1 = build_thread(im, l, g, 0), c2 = build_thread(im, l, g, 0);
	uint64_t list[40];
	size_t n = LC_ARRAY_SIZE(list);
	struct lc_vm vm;

	for (size_t i = 0; i < n; i++)
		list[i] = gc_table(im, l);
	list[3] = c1;
	list[30] = c2;
	link_list(im, l, g, list_head(l), list, n);
	/* The last object points back into the middle: a lasso. */
	put(im, list[n - 1], l->Lx.next, list[17]);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_decode_max(ctx, g, 100000, &vm));
	ck_assert(vm.partial);
	ck_assert_ptr_nonnull(vm.note);
	ck_assert_ptr_nonnull(strstr(vm.note, "cyclic"));
	/* Found by the cycle check, not by the bound; both threads found
	 * once. */
	ck_assert_ptr_null(strstr(vm.note, "stopped"));
	ck_assert_uint_eq(vm.nthreads, 3);
	lc_vm_clear(&vm);
	/* A cycle through the head. */
	put(im, list[n - 1], l->Lx.next, list[0]);
	ck_assert_ptr_null(lc_vm_decode_max(ctx, g, 100000, &vm));
	ck_assert(vm.partial);
	ck_assert_ptr_nonnull(strstr(vm.note, "cyclic"));
	ck_assert_uint_eq(vm.nthreads, 3);
	lc_vm_clear(&vm);
	/* A self loop. */
	put(im, list[0], l->Lx.next, list[0]);
	ck_assert_ptr_null(lc_vm_decode_max(ctx, g, 100000, &vm));
	ck_assert(vm.partial);
	ck_assert_uint_eq(vm.nthreads, 1);
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_gc_list_bounds)
{
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, 504, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	uint64_t c1 = build_thread(im, l, g, 0), c2 = build_thread(im, l, g, 0);
	uint64_t list[100];
	size_t total;
	struct lc_vm vm;

	for (size_t i = 0; i < LC_ARRAY_SIZE(list); i++)
		list[i] = gc_table(im, l);
	list[5] = c1;
	list[50] = c2;
	total = link_allgc(im, l, g, list, LC_ARRAY_SIZE(list));
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	/* A bound of exactly the list's length is no cut. */
	ck_assert_ptr_null(lc_vm_decode_max(ctx, g, total, &vm));
	ck_assert(!vm.partial);
	ck_assert_uint_eq(vm.nthreads, 3);
	lc_vm_clear(&vm);
	/* The object bound: what was seen so far, marked. */
	ck_assert_ptr_null(lc_vm_decode_max(ctx, g, 20, &vm));
	ck_assert(vm.partial);
	ck_assert_ptr_nonnull(strstr(vm.note, "stopped"));
	ck_assert_uint_eq(vm.nthreads, 2);
	lc_vm_clear(&vm);
	/* A link into unreadable memory. */
	put(im, list[60], l->Lx.next, BASE + SIZE + 0x10000);
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	ck_assert(vm.partial);
	ck_assert_ptr_nonnull(strstr(vm.note, "broken"));
	ck_assert_uint_eq(vm.nthreads, 3);
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

START_TEST(test_decode_rejects)
{
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, 504, &l);
	struct lc_lua_ctx *ctx;
	uint64_t g = build_vm(im, l);
	struct lc_vm vm;
	struct lc_error *err;

	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	err = lc_vm_decode(ctx, g + 8, &vm);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(lc_error_code(err), LC_ERR_CORRUPT);
	lc_error_destroy(err);
	err = lc_vm_decode(ctx, BASE + SIZE + 0x1000, &vm);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(lc_error_code(err), LC_ERR_FAULT);
	lc_error_destroy(err);
	ck_assert_ptr_null(lc_vm_decode(ctx, g, &vm));
	lc_vm_clear(&vm);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* ---- the scan ---- */

START_TEST(test_scan_callback_finds_nothing)
{
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t = lua_target(im, 504, &l);
	struct lc_lua_ctx *ctx;
	uint64_t *gs = (uint64_t *)1;
	size_t n = 99;

	build_vm(im, l);
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_scan(ctx, &gs, &n));
	ck_assert_ptr_null(gs);
	ck_assert_uint_eq(n, 0);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	image_free(im);
}
END_TEST

/* Write im as an x86_64 core file: one writable PT_LOAD holding it, one
 * read-only PT_LOAD holding a copy of its first 64 KiB. */
static void write_core(const char *path, const struct image *im)
{
	FILE *f = fopen(path, "wb");
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	static const uint8_t zero[4096];

	ck_assert_ptr_nonnull(f);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	memset(ph, 0, sizeof(ph));
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R | PF_W;
	ph[0].p_offset = 4096;
	ph[0].p_vaddr = BASE;
	ph[0].p_filesz = ph[0].p_memsz = SIZE;
	ph[0].p_align = 4096;
	ph[1] = ph[0];
	ph[1].p_flags = PF_R;
	ph[1].p_offset = 4096 + SIZE;
	ph[1].p_vaddr = BASE + SIZE + 0x100000;
	ph[1].p_filesz = ph[1].p_memsz = 0x10000;
	ck_assert_uint_eq(fwrite(&eh, sizeof(eh), 1, f), 1);
	ck_assert_uint_eq(fwrite(ph, sizeof(ph), 1, f), 1);
	ck_assert_uint_eq(fwrite(zero, 4096 - sizeof(eh) - sizeof(ph), 1, f), 1);
	ck_assert_uint_eq(fwrite(im->bytes, SIZE, 1, f), 1);
	ck_assert_uint_eq(fwrite(im->bytes, 0x10000, 1, f), 1);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_scan_synthetic_core)
{
	int major = majors[_i];
	struct image *im = image_new();
	const struct lc_layout *l;
	struct lc_target *t0 = lua_target(im, major, &l), *t;
	struct lc_lua_ctx *ctx;
	char path[] = "/tmp/check_vm_core.XXXXXX";
	uint64_t g1, g2, g3, bad_tt, bad_state, bad_reg, *gs;
	size_t n;
	int fd;

	g1 = build_vm(im, l);
	/* VMs near the end of the first 1 MiB chunk and in the third. */
	im->brk = BASE + 0x100000 - (uint64_t)l->lg_g_minus_l - 8192;
	g2 = build_vm(im, l);
	im->brk = BASE + 0x200000 + 0x100;
	g3 = build_vm(im, l);
	/* Look-alikes: the word pattern without a thread, a bad gcstate, a
	 * nil registry. */
	bad_tt = build_vm(im, l);
	put(im, bad_tt - (uint64_t)l->lg_g_minus_l, l->L.tt, 5);
	bad_state = build_vm(im, l);
	put(im, bad_state, l->G.gcstate, 99);
	bad_reg = build_vm(im, l);
	put(im, bad_reg + (uint64_t)l->G.l_registry.off, l->tv.tt, 0);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	write_core(path, im);
	{
		struct lc_error *err = lc_target_open_core(path, NULL, &t);

		ck_assert_msg(err == NULL, "%s", lc_error_message(err));
		err = lc_target_add_module(t, lua_path(major), BIAS);
		ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	}
	ck_assert_ptr_null(lc_test_ctx(t, &ctx));
	ck_assert_ptr_null(lc_vm_scan(ctx, &gs, &n));
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(gs[0], g1);
	ck_assert_uint_eq(gs[1], g2);
	ck_assert_uint_eq(gs[2], g3);
	free(gs);
	/* And decoding walks the file image's lists too. */
	{
		struct lc_vm vm;

		ck_assert_ptr_null(lc_vm_decode(ctx, g2, &vm));
		ck_assert_uint_eq(vm.nthreads, 1);
		ck_assert_str_eq(vm.threads[0].status, "idle");
		lc_vm_clear(&vm);
		lc_vm_release_core_pages(t->prog->mem);
		ck_assert_ptr_null(lc_vm_decode(ctx, g3, &vm));
		ck_assert_uint_eq(vm.mainthread,
				  g3 - (uint64_t)l->lg_g_minus_l);
		lc_vm_clear(&vm);
	}
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	lc_target_destroy(t0);
	unlink(path);
	image_free(im);
}
END_TEST

/* ---- the scan on fixture cores ---- */

static const char *fixtures_dir(void)
{
	static char buf[4096];
	const char *d = getenv("LUACORE_FIXTURES");
	const char *b = getenv("top_builddir");

	if (d)
		return d;
	snprintf(buf, sizeof(buf), "%s/fixtures/out", b ? b : ".");
	return buf;
}

static const struct {
	const char *build, *scenario;
	size_t nvms;
	size_t max_threads;	/* of any one VM */
} fixtures[] = {
	{ "deb-5.4", "multi_vm", 2, 2 },
	{ "deb-5.4", "two_threads", 2, 2 },
	{ "deb-5.4", "coroutines3", 1, 4 },
	{ "deb-5.1", "multi_vm", 2, 2 },
	{ "deb-5.1", "coroutines3", 1, 4 },
	{ "deb-5.3", "two_threads", 2, 2 },
	{ "deb-5.3", "coroutines3", 1, 4 },
	{ "src-5.2.4-O2", "multi_vm", 2, 2 },
	{ "src-5.2.4-O2", "coroutines3", 1, 4 },
	{ "src-5.4.7-O2", "two_threads", 2, 2 },
	{ "src-5.4.7-O0", "coroutines3", 1, 4 },
	/* 5.5: the main thread inside global_State points back to it */
	{ "src-5.5.0-O2", "multi_vm", 2, 2 },
	{ "src-5.5.0-O0", "coroutines3", 1, 4 },
	{ "src-5.4.8-O2", "two_threads", 2, 2 },
};

START_TEST(test_scan_fixture)
{
	char *core, *exe;
	struct lc_target *t;
	struct lc_lua_ctx *ctx;
	struct lc_error *err;
	uint64_t *gs;
	size_t n, most = 0;

	ck_assert_int_gt(asprintf(&core, "%s/%s/%s/core", fixtures_dir(),
				  fixtures[_i].build, fixtures[_i].scenario), 0);
	ck_assert_int_gt(asprintf(&exe, "%s/%s/%s/exe", fixtures_dir(),
				  fixtures[_i].build, fixtures[_i].scenario), 0);
	err = lc_target_open_core(core, exe, &t);
	ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	free(core);
	free(exe);
	/* make check runs this after tests/run-matrix.sh, which remakes
	 * every core with its executable. */
	ck_assert_msg(!t->prog->build_id_mismatch,
		      "%s/%s: the core is older than its executable: remake the cells (tests/matrix/make-all.sh)",
		      fixtures[_i].build, fixtures[_i].scenario);
	err = lc_test_ctx(t, &ctx);
	ck_assert_msg(err == NULL, "%s", lc_error_message(err));
	ck_assert_ptr_null(lc_vm_scan(ctx, &gs, &n));
	ck_assert_msg(n == fixtures[_i].nvms, "%s/%s: %zu VMs, want %zu",
		      fixtures[_i].build, fixtures[_i].scenario, n,
		      fixtures[_i].nvms);
	for (size_t i = 0; i < n; i++) {
		struct lc_vm vm;

		ck_assert_ptr_null(lc_vm_decode(ctx, gs[i], &vm));
		ck_assert_msg(!vm.partial, "%s", vm.note ? vm.note : "");
		ck_assert(vm.threads[0].is_main);
		ck_assert_str_ne(vm.gcstate_name, "?");
		ck_assert_int_gt(vm.memory, 0);
		ck_assert_uint_ne(vm.registry, 0);
		for (size_t k = 0; k < vm.nthreads; k++)
			ck_assert_uint_eq(vm.threads[k].g, gs[i]);
		if (vm.nthreads > most)
			most = vm.nthreads;
		lc_vm_clear(&vm);
	}
	ck_assert_uint_eq(most, fixtures[_i].max_threads);
	free(gs);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vm");
	TCase *tc = tcase_create("synthetic");
	SRunner *sr;
	char probe[4096];
	struct stat sb;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_layout_vm_fields, 0, 3);
	tcase_add_loop_test(tc, test_gcstate_names, 0, 3);
	tcase_add_test(tc, test_gc_params_54);
	tcase_add_loop_test(tc, test_gc_params_51_53, 0, 2);
	tcase_add_loop_test(tc, test_ccalls_per_version, 0, 3);
	tcase_add_loop_test(tc, test_status_names, 0, 3);
	tcase_add_loop_test(tc, test_errorjmp, 0, 3);
	tcase_add_loop_test(tc, test_hook, 0, 3);
	tcase_add_loop_test(tc, test_openupval_and_tbc, 0, 3);
	tcase_add_loop_test(tc, test_gc_list_threads, 0, 3);
	tcase_add_loop_test(tc, test_gc_lists_53_54, 0, 2);
	tcase_add_loop_test(tc, test_gc_list_cycle, 0, 3);
	tcase_add_test(tc, test_gc_list_bounds);
	tcase_add_test(tc, test_decode_rejects);
	tcase_add_test(tc, test_scan_callback_finds_nothing);
	tcase_add_loop_test(tc, test_scan_synthetic_core, 0, 3);
	suite_add_tcase(s, tc);
	/* Fixture cores are made by tests/run-matrix.sh, which make check
	 * runs first.  Missing cores are a failure, not a skip. */
	snprintf(probe, sizeof(probe), "%s/deb-5.4/multi_vm/core",
		 fixtures_dir());
	if (stat(probe, &sb) != 0)
		fprintf(stderr, "check_vm: no fixture cores in %s: run tests/run-matrix.sh (make check does) or set LUACORE_FIXTURES\n",
			fixtures_dir());
	{
		TCase *tf = tcase_create("fixtures");

		tcase_set_timeout(tf, 60);
		tcase_add_loop_test(tf, test_scan_fixture, 0,
				    (int)LC_ARRAY_SIZE(fixtures));
		suite_add_tcase(s, tf);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
