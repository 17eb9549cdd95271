/* Lua struct layouts read from DWARF (libdw), and the Lua version.
 *
 * Offsets are never copied from headers: every field the decoder reads
 * is looked up by name in the debug info of the module holding the VM.
 * A field the version does not have has off == -1.  Owned by whoever
 * opened it (lc_layout_destroy); the PUC interpreter keeps one. */
#ifndef LC_LAYOUT_H
#define LC_LAYOUT_H

#include <stdint.h>

#include "prog/program.h"

struct lc_field {
	int32_t off;		/* byte offset in the struct, -1 if absent */
	uint32_t size;		/* byte size of the member */
};

#define LC_HAS(f) ((f).off >= 0)

/* The newest release of each major version whose sources the decoder
 * was checked against; a newer one is read with its rules and a
 * warning (lc_layout_version). */
#define LC_NEWEST_51	50105
#define LC_NEWEST_52	50204
#define LC_NEWEST_53	50306
#define LC_NEWEST_54	50408
#define LC_NEWEST_55	50500
#define LC_NEWEST_MAJOR	505	/* the newest major version known */

struct lc_layout {
	int release;		/* 50105, 50204, 50306, 50404, 50408, 50500 */
	int major;		/* 501..505: the layout family (the DWARF
				 * shape); a newer major version reads as
				 * the newest known one */
	char version[16];	/* "5.4.4" */
	bool version_guessed;	/* no lua_ident: version from DWARF alone */
	/* Why this release is read with another's rules ("Lua 5.4.9 is
	 * newer than ..."), or "" */
	char version_warning[200];
	bool stkidrel;		/* 5.4.5+: StkId fields are unions */
	bool ci_extra_c_only;	/* 5.2.0: only a yielding C function's func is
				   moved, its offset in ci->u.c.extra */
	/* 5.5: long strings keep a pointer to their bytes in 'contents'
	 * (short ones hold the bytes there, at ts_contents) */
	bool ts_lngptr;
	/* From the built-in table (vm/puc/builtin.h), the module having no
	 * DWARF: to be validated against memory before use (family.c). */
	bool builtin;
	bool forced;		/* that built-in layout asked for (--layout) */
	/* The file whose DWARF it was read from instead of the module's
	 * (--types), or NULL; validated against memory too. */
	char *types_path;
	char *module_path;	/* the module holding the VM */
	uint64_t module_start;	/* its load range, for "is pc in Lua" */
	uint64_t module_end;

	uint32_t sz_stack_slot;	/* TValue (5.1-5.3) or StackValue (5.4) */
	uint32_t sz_tvalue;
	uint32_t sz_callinfo;	/* 5.1 CallInfo array stride */
	uint32_t sz_locvar;
	uint32_t sz_upvaldesc;	/* 5.2+ */
	uint32_t sz_abslineinfo; /* 5.4 */
	uint32_t ts_contents;	/* offset of the bytes of a TString */

	struct {
		struct lc_field tt, status, l_G, ci, base_ci, end_ci, stack,
			stack_last, top, savedpc, nCcalls, baseCcalls, nny,
			size_ci, stacksize, errorJmp, hook, hookmask, allowhook,
			basehookcount, hookcount, openupval, tbclist, oldpc,
			base;
	} L;
	struct {
		/* mainthread: a pointer (5.1-5.4); mainth: the main
		 * thread's lua_State embedded in global_State (5.5,
		 * &g->mainth.l); one of the two is present. */
		struct lc_field mainthread, mainth, l_registry, gcstate,
			frealloc;
	} G;
	struct {
		struct lc_field func, top, previous, next, savedpc, base,
			callstatus, tailcalls, nresults,
			extra,	/* 5.2/5.3: func's stack offset while yielded */
			k;	/* 5.2+: a C function's continuation */
	} ci;
	struct {
		/* n, i: the number members of the value (lua_Number;
		 * lua_Integer, 5.3+), whose sizes say the build's number
		 * format (LUA_32BITS: 4). */
		struct lc_field value, tt, n, i;
	} tv;
	struct {
		struct lc_field isC, p, f;	/* within union Closure */
	} cl;
	struct {
		struct lc_field source, linedefined, lastlinedefined, code,
			sizecode, lineinfo, sizelineinfo, abslineinfo,
			sizeabslineinfo, k, sizek, locvars, sizelocvars,
			upvalues, sizeupvalues, numparams, is_vararg,
			maxstacksize, flag, p, sizep;
	} p;
	struct {
		struct lc_field pc, line;
	} ali;
	struct {
		struct lc_field varname, startpc, endpc;
	} lv;
	struct {
		struct lc_field name, instack, idx, kind;	/* kind: 5.4+ */
	} uvd;
	struct {
		struct lc_field tt, len, shrlen, lnglen;
	} ts;
	struct {
		struct lc_field flags, lsizenode, sizearray, array, node,
			metatable;
	} tab;
	uint32_t sz_node;
	struct {
		/* key_tt is the key's tag, key_val its value (5.4 stores
		 * them apart; before, the key is a TValue at i_key). */
		struct lc_field val, key_val, key_tt;
	} node;
	struct {
		struct lc_field v;
	} uv;
	struct {
		struct lc_field len, metatable;
	} ud;

	/* ---- VMs, GC lists and per-thread internals (vm/puc/heap.c) ---- */

	/* global_State fields beyond G above; off == -1 where the version
	 * has none (e.g. rootgc is 5.1 only, allgc 5.2+, Cstacklimit
	 * 5.4.0-5.4.1 only). */
	struct {
		/* GCtotalbytes and gcparams (an array of
		 * floating-point bytes, lobject.c:luaO_codeparam) are
		 * 5.5's */
		struct lc_field totalbytes, GCtotalbytes, GCdebt, GCestimate,
			estimate, gckind, gcemergency, gcpause, gcstepmul,
			gcstepsize, genminormul, genmajormul, gcmajorinc,
			gcparams, Cstacklimit, rootgc, allgc, finobj, tobefnz,
			fixedgc;
	} Gx;
	struct {
		/* CommonHeader 'next' (GC list link), 5.3+ 'nci'. */
		struct lc_field next, nci;
	} Lx;
	struct {
		/* The link of a thread's open-upvalue list: 5.1/5.2 the
		 * CommonHeader 'next'; 5.3/5.4 'u.open.next'. */
		struct lc_field open_next;
	} uvx;
	struct {
		/* struct lua_longjmp (ldo.c's CU). */
		struct lc_field previous, status;
	} lj;
	uint32_t sz_lstate;	/* sizeof(lua_State) */

	/* ---- the heap walk (vm/puc/objects.c): what each object's free
	 * function frees ---- */
	struct {
		/* Closures: nupvalues; upvals (LClosure, 5.1 l.upvals) and
		 * upvalue (CClosure) are where the upvalue arrays start, so
		 * that sizeLclosure(n) = upvals.off + 8n and sizeCclosure(n)
		 * = upvalue.off + sz_tvalue n in every release; env: 5.1's
		 * environment table (the same offset in both kinds). */
		struct lc_field nupvalues, upvals, upvalue, env;
	} clx;
	struct {
		/* nuvalue, uv: 5.4+ user values (UValue each sz_uvalue);
		 * env: 5.1/5.2's environment table; user/ttuv: 5.3's user
		 * value and its tag. */
		struct lc_field nuvalue, uv, env, user, ttuv;
	} udx;
	struct {
		/* 5.3/5.4 Table.lastfree (a dummy node has none). */
		struct lc_field lastfree;
	} tabx;
	struct {
		/* A closed upvalue's own TValue (5.1-5.4 u.value, 5.5
		 * u.value too). */
		struct lc_field value;
	} uvv;
	struct {
		/* 5.5: where a regular long string's bytes start. */
		struct lc_field falloc;
	} tsx;
	struct {
		/* The string table (5.1/5.2 chains its strings by 'next'),
		 * the basic types' metatables, 5.1's userdata waiting for
		 * __gc (a circular list), 5.3+'s threads with open
		 * upvalues. */
		struct lc_field strt_hash, strt_size, mt, tmudata, twups;
	} Gh;
	struct {
		struct lc_field l_gt;	/* 5.1: the thread's globals */
	} Lh;
	uint32_t sz_table;	/* sizeof(Table) */
	uint32_t sz_proto;	/* sizeof(Proto) */
	uint32_t sz_upval;	/* sizeof(UpVal) */
	uint32_t sz_global;	/* sizeof(global_State) */
	/* What luaE_freethread frees besides the stack and CallInfos:
	 * sizeof(LX) (5.2+), sizeof(lua_State) (5.1). */
	uint32_t sz_lx;
	/* A userdata's header: 5.1/5.2 sizeof(union Udata), 5.3
	 * sizeof(union UUdata), 5.4+ offsetof(Udata, uv) (the header with
	 * user values; offsetof(Udata0, bindata) without is sz_udata0). */
	uint32_t sz_udata, sz_udata0, sz_uvalue;
	uint32_t sz_tstring;	/* sizeof(TString) (5.5 external strings) */
	/* g - g->mainthread for a VM made by lua_newstate (struct LG in
	 * lstate.c: 5.1 { lua_State l; global_State g; }, 5.2-5.4 { LX l;
	 * global_State g; } with LX = { extra; lua_State l; }; 5.5 embeds
	 * the LX in global_State, so it is minus G.mainth's offset); 0 if
	 * unknown. */
	int64_t lg_g_minus_l;
	bool lg_derived;	/* no struct LG in the DWARF: from sizes */
};

/* Find the module holding the Lua VM in p and read its layout.  On
 * failure the error says what is missing (no Lua module, no debug info,
 * unknown layout); the caller owns both the layout and the error. */
struct lc_error *lc_layout_open(struct lc_program *p, struct lc_layout **ret);

void lc_layout_destroy(struct lc_layout *l);

/* The version decision, apart from DWARF: ident is what lua_ident holds
 * (or "" when the module has none), shape the major version the DWARF
 * layout looks like (501..505).  Fills release, major, version,
 * version_guessed and version_warning of l.  A release newer than the
 * newest one known of its major version, or of a major version newer
 * than LC_NEWEST_MAJOR whose layout looks like the newest, is accepted
 * with a warning that names it; an ident that contradicts the shape is
 * an error (the caller's) that names both. */
struct lc_error *lc_layout_version(const char *ident, int shape,
				   struct lc_layout *l);

#endif /* LC_LAYOUT_H */
