/* The sampling engine of luacore-sample: samples a running process's
 * threads at a rate, into a profile (profile.h).
 *
 * Internal to libluacore and its tools.  Per sample, a thread is seized
 * and stopped with ptrace only while its registers, its machine stack as
 * deep as the last sample reached and what its Lua state changes as it
 * runs (lua_States, CallInfos, data stack, as found at the last sample)
 * are copied (one process_vm_readv); it is let go before anything is
 * decoded.  Decoding reads that copy, and what it lacks from the running
 * process, a page per system call.  Nothing stays attached between
 * samples.  The sampler owns its profile until lc_sampler_take_profile. */
#ifndef LC_SAMPLER_H
#define LC_SAMPLER_H

#include "base/base.h"
#include "sample/probe.h"
#include "sample/profile.h"

struct lc_sampler_options {
	double rate_hz;		/* samples per second per thread (100) */
	bool wall;		/* every thread every tick, idle labelled */
	int tid;		/* only this thread; 0 = all */
	uint64_t vm;		/* only samples of this global_State; 0 = all */
	/* Name each VM by the string value of this global (NULL: none),
	 * and keep only the samples of the VM named vm_only (NULL: all). */
	const char *vm_name;
	const char *vm_only;
	int max_frames;		/* per stack (0: 256) */
	bool native;		/* keep every machine frame: no Lua-first
				   folding (profile.h) */
	/* A stop that has held its thread this long before its copy is
	 * done lets it go unread: a lost sample (0: 1000). */
	double stop_budget_us;
	/* Never stop or trace a thread: each sample's Lua stack is read
	 * from memory as the thread runs, again until two reads agree (at
	 * most 3); no native frames (nothing says where a running thread
	 * is); see "--nonblocking" in sampler.c. */
	bool nonblocking;
	/* Where the Lua layout comes from (lc_target_set_layout): a file
	 * with DWARF for it, or a release's built-in layout; NULL: the
	 * module's DWARF, else its release's built-in layout. */
	const char *types;
	const char *layout;
	/* An allocation profile (lc_sampler_take_parked; no ticks): the
	 * shim's mean gap between samples in bytes; 0: a CPU profile. */
	int64_t alloc_mean;
	/* With alloc_mean (the mean period): stops at functions (--at),
	 * each lc_sampler_take_parked's objects 1, bytes its calls. */
	bool at;
};

struct lc_sampler;

/* Prepare to sample process pid: modules, symbols, CFI and the Lua
 * layout are loaded now, before any thread is stopped.  Errors as
 * lc_target_attach's (ptrace refused is LC_ERR_OS with the reason). */
struct lc_error *lc_sampler_create(int pid,
				   const struct lc_sampler_options *opts,
				   struct lc_sampler **ret);

/* One tick: sample every thread that used CPU since the last tick (all
 * threads with wall).  Returns 0, or -1 when the process is gone. */
int lc_sampler_tick(struct lc_sampler *s);

/* The profile so far, with its quality numbers brought up to date for a
 * run of "elapsed" seconds.  Owned by the sampler. */
struct lc_profile *lc_sampler_profile(struct lc_sampler *s, double elapsed);

/* The profile, handed over: the caller destroys it. */
struct lc_profile *lc_sampler_take_profile(struct lc_sampler *s,
					   double elapsed);

/* Why the samples have no Lua frames: the message luacore-inspect gives
 * when it finds no interpreter; NULL when there is one.  Valid until
 * lc_sampler_destroy. */
const char *lc_sampler_no_lua(const struct lc_sampler *s);

#define LC_SAMPLER_VMS	8	/* VMs remembered by lc_sampler_vms_seen */

/* The VMs (global_State addresses) the samples so far were of, before
 * the vm filter, at most LC_SAMPLER_VMS, in the order first seen: their
 * number, and *ret the array (valid until lc_sampler_destroy). */
size_t lc_sampler_vms_seen(const struct lc_sampler *s, const uint64_t **ret);

/* VM vm's name (lc_sampler_options.vm_name), or NULL; valid until
 * lc_sampler_destroy. */
const char *lc_sampler_vm_name(const struct lc_sampler *s, uint64_t vm);

/* A sample of an allocation by thread tid, which waits (parked by the
 * allocation shim, shim/luacore-alloc.h) while its stack is copied and
 * read: no stop, no ptrace.  regs: its registers where it parked, in
 * DWARF's x86-64 numbering (0-15, 16 the pc; those it could not give
 * 0).  caller: the return address into the allocator's caller, whose
 * frame is the sample's innermost (the shim's own frames dropped; 0:
 * all kept).  The sample stands for objects allocations of bytes in all
 * (lc_profile_add_alloc); *sample gets the index of the profile sample
 * it went into (-1: none, lost or filtered out by --vm).  go(arg) lets
 * the thread go, called once: as soon as its copy is taken when the copy
 * holds the Lua states its last park ran (decoded after), else after
 * decoding.  hint: a lua_State the thread may run (the allocation's VM's
 * main state), or 0: a thread's first park, which has no state it ran
 * last time, reads the hint's pages now, so that it too goes before its
 * decoding if it runs that state.  0, or -1 when it was lost (lost_read;
 * lost_inconsistent: it ran a state the copy lacked and went before it
 * was read). */
int lc_sampler_take_parked(struct lc_sampler *s, int tid,
			   const uint64_t *regs, uint64_t caller,
			   uint64_t hint, int64_t objects, int64_t bytes,
			   void (*go)(void *arg), void *arg, long *sample);

/* What a thread copies of itself at a park that does not wait (the
 * shim's copied PARK): its registers are the caller's; its stack from
 * stack_lo (rsp - 128) for stack_len bytes; npages pages of 4 KiB, at
 * page_addr[i] each, one after the other in pages; and the lua_States
 * whose pages they are (what lc_sampler_hot gave it).  All the caller's,
 * read during the call only. */
struct lc_sampler_copy {
	uint64_t stack_lo;
	const void *stack;
	size_t stack_len;
	const uint64_t *page_addr;
	const void *pages;
	size_t npages;
	const uint64_t *states;
	size_t nstates;
};

/* A sample of an allocation by thread tid from a copy it took itself
 * and sent without waiting (above); regs, caller, objects, bytes and
 * *sample as lc_sampler_take_parked's.  What the copy lacks is read from
 * the running process, so a sample whose Lua state the copy lacks is
 * not one.  0; -1 lost (lost_read); lost_inconsistent, 1: it ran a
 * state the copy lacks (a thread that should wait for a while for its
 * parks to be copied by the sampler), 2: the copy lacks pages of its
 * state (a CallInfo, its data stack moved; lc_sampler_hot has them
 * now). */
int lc_sampler_take_copied(struct lc_sampler *s, int tid,
			   const uint64_t *regs, uint64_t caller,
			   const struct lc_sampler_copy *c, int64_t objects,
			   int64_t bytes, long *sample);

#define LC_SAMPLER_HOT_PAGES	32
#define LC_SAMPLER_HOT_STATES	8

/* What thread tid should copy at its next park (its last sample's): the
 * pages of the Lua states it ran, those states, and stack_need bytes
 * above its rsp (no further than stack_end, where the mapping that held
 * its rsp ends). */
struct lc_sampler_hot {
	uint64_t stack_need, stack_end;
	size_t npages, nstates;
	uint64_t page[LC_SAMPLER_HOT_PAGES];
	uint64_t state[LC_SAMPLER_HOT_STATES];
};

/* Into *h what thread tid should copy, as of its last sample: true; or
 * false (h zeroed) when it has no sample with a Lua state yet. */
bool lc_sampler_hot(struct lc_sampler *s, int tid, struct lc_sampler_hot *h);

/* The function called name in the process's modules (the program's and
 * its libraries' symbols, and their debug files'): its address, file and
 * offset in the file, into *ret (malloc'd name and module, the caller's).
 * LC_ERR_NOT_FOUND when no module defines it. */
struct lc_error *lc_sampler_resolve(struct lc_sampler *s, const char *name,
				    struct lc_probe_point *ret);

void lc_sampler_destroy(struct lc_sampler *s);

#endif /* LC_SAMPLER_H */
