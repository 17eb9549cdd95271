/* VMs: find every global_State of a core, decode a VM (GC state and
 * parameters, every coroutine) and the internals of one lua_State.
 *
 * Nothing here prints.  Ownership:
 *  - lc_vm_scan hands back a malloc'd array of global_State addresses
 *    (the caller frees it; NULL when none).
 *  - lc_vm_decode allocates vm->threads (the array), vm->note, and in each
 *    thread hook_name and note; lc_vm_clear frees exactly those (and
 *    resets the pointers).  The fields the report fills itself (found_by,
 *    chain, and per thread os_tid, resumed_by, frames, slots) are left
 *    zero by the decoder and are the report's to free before lc_vm_clear.
 *  - lc_luathread_decode allocates hook_name and note, which
 *    lc_luathread_clear frees.
 *  - Strings typed const char * (status, gcstate_name, gckind) are static.
 *
 * Per-version definitions used in struct lc_vm and struct lc_luathread:
 *
 *  gcstate_name: the GCS* constant of the version's lgc.h without its
 *    "GCS" prefix, so it greps against the sources:
 *      5.1  0 pause, 1 propagate, 2 sweepstring, 3 sweep, 4 finalize
 *      5.2  0 propagate, 1 atomic, 2 sweepstring, 3 sweepudata, 4 sweep,
 *           5 pause
 *      5.3  0 propagate, 1 atomic, 2 swpallgc, 3 swpfinobj, 4 swptobefnz,
 *           5 swpend, 6 callfin, 7 pause
 *      5.4, 5.5  0 propagate, 1 enteratomic, 2 atomic, 3 swpallgc,
 *           4 swpfinobj, 5 swptobefnz, 6 swpend, 7 callfin, 8 pause
 *    (swp* = sweeping that list, swpend = sweeping done, callfin =
 *    calling finalizers.)  Anything else is "?" and the VM is partial.
 *  gckind: 5.1 "incremental" (it has no other); 5.2 gckind KGC_NORMAL
 *    "incremental", KGC_EMERGENCY "emergency", KGC_GEN "generational";
 *    5.3 "incremental", "emergency"; 5.4 gckind KGC_INC "incremental",
 *    KGC_GEN "generational", with " (emergency)" appended while
 *    gcemergency is set; 5.5 the same, and KGC_GENMAJOR "generational
 *    major".
 *  totalbytes/gcdebt/gcestimate/memory: the fields as stored; memory is
 *    totalbytes in 5.1, totalbytes + GCdebt (gettotalbytes) in 5.2-5.4,
 *    GCtotalbytes - GCdebt in 5.5 (totalbytes is then GCtotalbytes);
 *    gcestimate is 5.1 'estimate', 5.2-5.4 'GCestimate', none in 5.5.
 *  GC parameters as collectgarbage takes and returns them: 5.1-5.3
 *    gcpause and gcstepmul as stored (percent); 5.4 stores gcpause,
 *    gcstepmul and genmajormul divided by 4 (lgc.h getgcparam), so they
 *    are multiplied back, while gcstepsize (log2 of bytes, as
 *    collectgarbage("incremental", p, m, stepsize) takes it) and
 *    genminormul are as stored.  5.2's gcmajorinc has no lc_vm field.
 *    5.5 keeps gcparams[], floating-point bytes: gcpause, gcstepmul,
 *    gcstepsize (bytes) and genminormul are what collectgarbage("param",
 *    NAME) returns; genmajormul is -1 (5.5 has minormajor and
 *    majorminor instead).
 *  ccalls / nny (lc_luathread):
 *      5.1    ccalls = nCcalls; nny = 1 when the thread cannot yield at
 *             its current depth (the main thread always; a coroutine
 *             when nCcalls > baseCcalls, which is what lua_yield checks
 *             for "attempt to yield across metamethod/C-call boundary"),
 *             else 0.
 *      5.2/5.3 ccalls = nCcalls, nny = nny.
 *      5.4.2+, 5.5 nCcalls packs both: ccalls = low 16 bits
 *             (getCcalls), nny = high 16 bits (yieldable() tests them).
 *      5.4.0/5.4.1 (global_State has Cstacklimit): the low 16 bits count
 *             the C stack that is LEFT, downwards, minus L->nci; ccalls
 *             is reported as Cstacklimit - low16 - nci (clamped at 0),
 *             nny as the high 16 bits.  No 5.4.0/5.4.1 source or build
 *             was at hand: this follows the lstate.h comments of those
 *             releases and is unverified.
 *  status: "suspended" (LUA_YIELD, or LUA_OK with no frames and values on
 *    its stack: a coroutine not started yet, as lcorolib.c auxstatus
 *    says), "dead" (LUA_OK, no frames, empty stack), "idle" (a main
 *    thread with LUA_OK and no frames), "error" (any error status: the
 *    thread died of it), "normal" (LUA_OK with frames: the report, which
 *    knows which one runs, turns the running one into "running").
 *  errorjmp_status: the status field of the struct lua_longjmp (ldo.c)
 *    errorJmp points to; 0 without errorJmp, -1 when unreadable.
 *  errorjmp_suspicious: a coroutine that is not running (yielded, or
 *    without frames) yet has an errorJmp: luaD_rawrunprotected restores
 *    errorJmp on every exit, so it should be NULL.  errorjmp_on_stack is
 *    left false (the report knows the OS threads' stacks).
 *  stacksize: slots from stack to stack_last (every version keeps
 *    EXTRA_STACK slots beyond stack_last); topslot: top - stack in slots
 *    (slot 0 holds the base function entry); openupval -1 when unknown;
 *    tbclist 0 when the list is empty (L->tbclist == L->stack).
 */
#ifndef LC_LUA_VM_H
#define LC_LUA_VM_H

#include "vm/vm.h"
#include "vm/puc/puc.h"

/* GC objects walked per VM, over all its lists. */
#define LC_VM_MAX_OBJECTS	50000000
/* Thread objects of one VM listed, at most: each costs the report a few
 * hundred bytes, and a core of a million coroutines is a gigabyte. */
#define LC_VM_MAX_THREADS	1000000
/* Thread objects of the GC lists that do not validate: listed as
 * damaged, the first of them; the rest are counted. */
#define LC_VM_LISTED_DAMAGED	1000
/* Open upvalues counted per thread. */
#define LC_VM_MAX_OPENUPVAL	1000000

/* Find every VM in a core by scanning its writable memory for validated
 * global_States (g->mainthread == g - sizeof-LG-prefix, the main thread
 * round trip, a plausible gcstate, a registry table).  The core file is
 * read with pread in chunks, not through its mapping.  *ret gets a
 * sorted malloc'd array (NULL and 0 when none); callback targets, which
 * have no file to scan, find nothing. */
struct lc_error *lc_vm_scan(struct lc_lua_ctx *ctx, uint64_t **ret,
			    size_t *nret);

/* lc_vm_scan, and in the same pass the objects that may be lua_States (a
 * thread tag in their GC header, an l_G pointing into writable memory):
 * *threads gets a malloc'd array of them (unvalidated), for
 * lc_vm_decode_scanned.  threads may be NULL. */
struct lc_error *lc_vm_scan_threads(struct lc_lua_ctx *ctx, uint64_t **ret,
				    size_t *nret, uint64_t **threads,
				    size_t *nthreads);

/* Decode the VM whose global_State is at g: everything of struct lc_vm
 * but found_by, chain and the per-thread fields the report fills.  Its
 * threads are the main thread first, then every thread object on the GC
 * lists (5.1 rootgc; 5.2 allgc, finobj, tobefnz; 5.3/5.4 also fixedgc)
 * that validates as a lua_State of this VM, oldest first (the lists are
 * newest first), each once.  The walk follows CommonHeader 'next' links,
 * at most LC_VM_MAX_OBJECTS objects over all lists, and detects cycles
 * (Brent); on a core it keeps at most 64 MiB of the core's mapping in
 * RSS (lc_vm_release_core_pages as it goes).  Fails only when g is not a
 * global_State (LC_ERR_FAULT, LC_ERR_CORRUPT) or out of memory; a
 * broken, cyclic or too long list gives vm->partial and vm->note. */
struct lc_error *lc_vm_decode(struct lc_lua_ctx *ctx, uint64_t g,
			      struct lc_vm *ret);
/* Like lc_vm_decode, but the coroutines come from the candidates of
 * lc_vm_scan_threads (those whose l_G is g, whose GC link looks alive and
 * that validate) instead of a walk of the GC lists: the scan reads the
 * core sequentially once for every VM, where the walk costs a random
 * access per heap object (about 1 s per 10M objects). */
struct lc_error *lc_vm_decode_scanned(struct lc_lua_ctx *ctx, uint64_t g,
				      const uint64_t *cands, size_t ncands,
				      struct lc_vm *ret);
/* Same with another bound than LC_VM_MAX_OBJECTS (tests). */
struct lc_error *lc_vm_decode_max(struct lc_lua_ctx *ctx, uint64_t g,
				  size_t max_objects, struct lc_vm *ret);

/* The internals of one validated lua_State (from lc_lua_state_read). */
void lc_luathread_decode(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			 struct lc_luathread *ret);


/* The name of gcstate in Lua major version "major" (501..505), or NULL
 * if out of range. */
const char *lc_vm_gcstate_name(int major, int gcstate);

/* Let go of the pages of the core's mapping this process has touched
 * (madvise MADV_DONTNEED on the read-only file mapping: they are read
 * again from the page cache when needed).  Lowers RSS after walking a
 * big heap.  A no-op for callback targets or when the core is not a
 * file mapping. */
void lc_vm_release_core_pages(struct lc_memory *m);

#endif /* LC_LUA_VM_H */
