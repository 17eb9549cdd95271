/* The Lua decoder: lua_States, CallInfo chains, functions, lines, names.
 *
 * Works on any program through its memory (lc_read); every count and link read from the
 * target is bounded and validated.  Decoding never prints.  A decoder
 * context caches Protos for the duration of one report; everything it
 * returns is owned by the context unless said otherwise. */
#ifndef LC_LUA_H
#define LC_LUA_H

#include "prog/program.h"
#include "vm/puc/layout.h"
#include "vm/puc/names.h"

/* Upper bounds on what we believe from the target. */
#define LC_MAX_CI	1000000		/* CallInfos in one lua_State */
#define LC_MAX_CODE	(1 << 24)	/* instructions in one Proto */
#define LC_MAX_K	(1 << 20)	/* constants in one Proto */
#define LC_MAX_LOCVARS	(1 << 16)
#define LC_MAX_UPVALS	256
#define LC_MAX_STR	(1 << 16)	/* bytes of a string we copy */

struct lc_lstate {
	uint64_t addr;
	uint64_t g;		/* global_State */
	uint64_t mainthread;
	int status;
	uint64_t ci;		/* current CallInfo */
	uint64_t base_ci;	/* 5.1: array start; 5.2+: &L->base_ci */
	uint64_t end_ci;	/* 5.1 only */
	uint64_t stack, stack_last, top;
	uint64_t savedpc;	/* 5.1: pc of the running Lua function */
	uint32_t nCcalls;	/* raw field */
};

/* One CallInfo, decoded. */
struct lc_ci {
	uint64_t addr;
	uint64_t func;		/* stack slot of the function */
	uint64_t savedpc;
	uint64_t livepc;	/* the interpreter's own pc for this frame,
				   used instead of savedpc; 0 if none
				   (lc_lua_live_pc) */
	uint32_t callstatus;
	int tailcalls;		/* 5.1 */
	bool is_lua;		/* as the version's isLua() says */
	uint64_t proto;		/* Lua functions */
	uint64_t cfunc;		/* C functions (light or closure) */
	bool bad;		/* function slot unreadable or not a function */
	bool hook_yield;	/* the top frame of a thread a hook yielded */
	bool continues;		/* 5.2+: a C function with a continuation */
	bool slot_lua;		/* 5.2+: the slot holds a Lua closure */
	bool kind_mismatch;	/* 5.2+: status bits and slot disagree, or
				   bits no release defines are set */
};

struct lc_lua_ctx;
struct lc_lua_cache;

/* What decoder contexts keep across passes over one program: the
 * Protos read, each checked against the target's memory in every pass
 * that uses it (protos_cached in decode.c).  Owned by the family's
 * interpreter. */
struct lc_lua_cache *lc_lua_cache_create(void);
void lc_lua_cache_destroy(struct lc_lua_cache *c);
/* How long an index of a VM's package.loaded serves later passes
 * (lc_interp.reuse_s). */
void lc_lua_cache_set_reuse(struct lc_lua_cache *c, double seconds);
/* Frames for a profile only: lc_lua_frame leaves traceback NULL
 * (lc_interp.profile_frames). */
void lc_lua_cache_set_profile(struct lc_lua_cache *c, bool on);

/* A decoder context over program p with layout l and cache c (all
 * borrowed; c may be NULL: nothing kept after the context).  Contexts
 * that share a cache must not be alive at once. */
struct lc_error *lc_lua_ctx_create(struct lc_program *p,
				   const struct lc_layout *l,
				   struct lc_lua_cache *c,
				   struct lc_lua_ctx **ret);
void lc_lua_ctx_destroy(struct lc_lua_ctx *ctx);
const struct lc_layout *lc_lua_layout(const struct lc_lua_ctx *ctx);

struct lc_memory *lc_lua_mem(const struct lc_lua_ctx *ctx);
struct lc_program *lc_lua_program(const struct lc_lua_ctx *ctx);

/* ---- raw readers, bounded, for the other decoder files ---- */

/* A TValue as stored: payload word and raw tag (5.1-5.3: int tt; 5.4:
 * lu_byte tt_, variant bits 4-5, collectable bit 6). */
struct lc_tvalue {
	uint64_t value;
	unsigned tag;
};

int lc_lua_read_tvalue(struct lc_lua_ctx *ctx, uint64_t addr,
		       struct lc_tvalue *ret);
/* Unsigned integer field of the struct at base (0 on success). */
int lc_lua_read_field(struct lc_lua_ctx *ctx, uint64_t base,
		      struct lc_field f, uint64_t *ret);
/* The same, sign-extended from the field's size. */
int lc_lua_read_sfield(struct lc_lua_ctx *ctx, uint64_t base,
		       struct lc_field f, int64_t *ret);
/* A StkId field (5.4.5+ StkIdRel offsets resolved against stack). */
int lc_lua_read_stkid(struct lc_lua_ctx *ctx, uint64_t base, struct lc_field f,
		      uint64_t stack, uint64_t *ret);
/* Where the bytes of the TString at ts start (is_long: a long string,
 * as its tag says; 5.5 keeps a pointer to those).  0 on success. */
int lc_lua_string_bytes(struct lc_lua_ctx *ctx, uint64_t ts, bool is_long,
			uint64_t *ret);
/* The main thread of the global_State at g: g->mainthread (5.1-5.4),
 * &g->mainth.l (5.5).  0 on success; the address is not validated. */
int lc_lua_mainthread(struct lc_lua_ctx *ctx, uint64_t g, uint64_t *ret);
/* A TString's bytes, at most LC_MAX_STR, malloc'd and NUL-terminated
 * (embedded NULs kept), or NULL.  *lenp gets the full length as stored;
 * *truncated whether fewer bytes were copied.  Both may be NULL. */
char *lc_lua_read_string(struct lc_lua_ctx *ctx, uint64_t ts, uint64_t *lenp,
			 bool *truncated);
/* Visit the used nodes of a table's hash part in node order; fn returns
 * false to stop.  At most *budget nodes are read (decremented).  Returns
 * -1 if the table or one of its nodes could not be read (the visit then
 * stops there), 0 otherwise, a spent budget included. */
typedef bool lc_node_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *key,
			const struct lc_tvalue *val, void *arg);
int lc_lua_table_scan(struct lc_lua_ctx *ctx, uint64_t tbl, lc_node_fn *fn,
		      void *arg, size_t *budget);
/* package.loaded[lib][name] of VM g, as stored: 0, or -1 when a table
 * on the way or the field is missing or unreadable. */
int lc_lua_loaded_field(struct lc_lua_ctx *ctx, uint64_t g, const char *lib,
			const char *name, struct lc_tvalue *ret);
/* The string value of VM g's global `name` (package.loaded._G[name]),
 * at most LC_VM_NAME_MAX bytes, malloc'd; NULL when it is not a string
 * or cannot be read. */
#define LC_VM_NAME_MAX	128
char *lc_lua_global_string(struct lc_lua_ctx *ctx, uint64_t g,
			   const char *name);
/* VM g's allocator function (global_State.frealloc), 0 if unknown. */
uint64_t lc_lua_allocator(struct lc_lua_ctx *ctx, uint64_t g);
/* The Proto at proto as a names view (code, constants, locals, upvalue
 * names); owned by ctx, NULL if unreadable. */
const struct lc_proto_view *lc_lua_proto_view(struct lc_lua_ctx *ctx,
					      uint64_t proto);
/* The pc a Lua CallInfo executes (-1: not started), -2 if unknown. */
int lc_lua_current_pc(struct lc_lua_ctx *ctx, const struct lc_ci *ci);

/* Read and validate a lua_State candidate: thread tag, l_G/mainthread
 * round trip, stack bounds.  Returns 0 if addr is a plausible lua_State. */
int lc_lua_state_read(struct lc_lua_ctx *ctx, uint64_t addr,
		      struct lc_lstate *ret);

/* True if the state has frames above its base CallInfo. */
bool lc_lua_state_active(const struct lc_lstate *st);

/* The C calls in use on the state (*ret), which also order a resume
 * chain (higher = resumed later): nCcalls; 5.4+ its low 16 bits; 5.4.0
 * and 5.4.1 the C stack limit less what is left and the CallInfos.
 * -1 when a field is unreadable (*ret 0). */
int lc_lua_state_ccalls(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			unsigned *ret);

/* Walk the CallInfos of st, innermost first, excluding the base CallInfo.
 * Stores at most max entries in *ret (malloc'd, caller frees).  *partial
 * is set if the chain was broken, cyclic or longer than max. */
struct lc_error *lc_lua_walk(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			     size_t max, struct lc_ci **ret, size_t *nret,
			     bool *partial);

/* The C function in the slot of the CallInfo just past st's current one
 * (5.1: the next array entry; 5.2+: ci->next, kept for reuse, lstate.c
 * luaE_extendCI), or 0 when there is none or it holds no C function.
 * That CallInfo is a finished call's, whose slot its results have
 * mostly overwritten, or, where st->ci is damaged, the running call's. */
uint64_t lc_lua_ci_after(struct lc_lua_ctx *ctx, const struct lc_lstate *st);

/* One step down a CallInfo chain, for every walk of one: from ci to the
 * CallInfo it was called from (5.1: the array entry below; 5.2+:
 * previous, whose next must be ci).  A cursor starts zeroed per walk;
 * it detects a cycle within twice the chain's length (Brent's
 * algorithm), and every step of every walk of the context counts
 * against the context's budget (LC_CI_BUDGET).  0: *prev is the next
 * CallInfo; LC_CI_BROKEN, LC_CI_CYCLE, LC_CI_SPENT otherwise. */
#define LC_CI_BUDGET	(1u << 22)	/* CallInfo steps in one pass */
enum { LC_CI_BROKEN = -1, LC_CI_CYCLE = -2, LC_CI_SPENT = -3 };
struct lc_ci_cursor {
	uint64_t mark;
	size_t power, lam;
};
int lc_lua_ci_prev(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		   struct lc_ci_cursor *c, uint64_t ci, uint64_t *prev);
/* Why a step failed, in words. */
const char *lc_lua_ci_why(int step);

/* The locals of the luaV_execute frame that runs ci (the innermost Lua
 * CallInfo of its run), where DWARF locates them.  Bit k of mask: vals[k]
 * is known. */
enum { LC_RUNVAR_PC, LC_RUNVAR_BASE, LC_RUNVAR_CI, LC_RUNVAR_CL, LC_NRUNVARS };
struct lc_runvars {
	uint64_t vals[LC_NRUNVARS];
	unsigned mask;
};

/* Use luaV_execute's pc for ci (ci->livepc) when it is ci's: inside ci's
 * code array, with its ci, base or (5.1 at -O2) cl local naming ci, and not one
 * instruction behind savedpc (a hook, which stores the next instruction
 * as the reference).  Returns whether it is used. */
bool lc_lua_live_pc(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		    struct lc_ci *ci, const struct lc_runvars *rv);

/* How many distinct things luaV_execute keeps while it runs ci (the
 * innermost Lua CallInfo of its run) words[] hold -- ci itself, its
 * closure, its base, its Proto's constants, a pc in its code -- for
 * telling the interpreter's machine frame by its registers where no
 * symbol names it.  0 when ci is no readable Lua frame. */
unsigned lc_lua_run_marks(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			  const struct lc_ci *ci, const uint64_t *words,
			  size_t n);

/* Fill the Lua fields of frame f for cis[i] (cis as lc_lua_walk gave
 * them, innermost first).  Strings in f are malloc'd (the report frees
 * them).  Sets f->partial when something was unreadable. */
void lc_lua_frame(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		  const struct lc_ci *cis, size_t n, size_t i,
		  struct lc_frame *f);
/* The line luaL_traceback of this release prints for frame f
 * (malloc'd, or NULL when out of memory). */
char *lc_lua_traceback_line(struct lc_lua_ctx *ctx, const struct lc_frame *f);

/* 5.1: does cis[i] start a new luaV_execute?  5.2+: per CIST flags.
 * The innermost Lua CallInfo of each native luaV_execute run is where
 * a run ends; this says where it begins (the outermost of the run). */
bool lc_lua_ci_starts_run(struct lc_lua_ctx *ctx, const struct lc_ci *cis,
			  size_t n, size_t i);

#endif /* LC_LUA_H */
