/* CPU profiles made by the sampler: functions, locations and samples
 * with their labels, the run's quality, and the frame labels every
 * output format uses.  The formats themselves (folded stacks, pprof,
 * speedscope, the SVG flame graph) are the sinks of sample/sink.h.
 *
 * Internal to libluacore.  A profile owns everything it points to
 * (lc_profile_destroy frees it all).  Functions and locations are
 * interned: ids are indexes into the arrays, stable once given. */
#ifndef LC_PROFILE_H
#define LC_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum lc_prof_kind {
	LC_PROF_NATIVE,		/* a machine frame: host code, the VM's C */
	LC_PROF_LUA,		/* a Lua function (or main chunk) */
	LC_PROF_LUA_C,		/* a C function called from Lua */
	LC_PROF_GC,		/* the collector (a synthetic leaf frame) */
	LC_PROF_IDLE,		/* --wall: a thread that used no CPU */
};

struct lc_prof_func {
	char *name;		/* display name: "innermost", "string.rep",
				   "main"; never NULL */
	char *file;		/* source ("x.lua", "lvm.c") or NULL */
	int64_t start_line;	/* Lua: linedefined; native: 0 */
	enum lc_prof_kind kind;
};

struct lc_prof_loc {
	uint32_t func;		/* index into funcs */
	int64_t line;		/* current line, 0 if unknown */
	uint64_t addr;		/* native pc, 0 for Lua frames */
};

struct lc_prof_sample {
	uint32_t *locs;		/* leaf first (pprof's order) */
	size_t nlocs;
	int64_t count;		/* samples merged into this one (>= 1) */
	/* CPU time they stand for, as charged; in an allocation profile
	 * (lc_profile.alloc) the bytes allocated they stand for */
	int64_t cpu_ns;
	double scale;		/* and the thread's calibration (1 unless
				   lc_profile_scale_threads): outputs give
				   lc_profile_cpu, cpu_ns times scale */
	/* Labels. */
	int tid;
	uint32_t thread_name;	/* index into strings, 0 = none */
	uint64_t vm;		/* global_State, 0 if no Lua on the stack */
	uint64_t coroutine;	/* running lua_State, 0 if none */
	enum lc_prof_kind leaf;	/* what the thread was doing: Lua code,
				   a C function from Lua, the GC, host
				   code (NATIVE) or idle */
	uint32_t vmstate;	/* and its VM, as the VM says it: index
				   into strings ("lua", "trace#3", "c",
				   "gc", "jit": LuaJIT), 0 = not said */
	/* An allocation profile's: the allocations they stand for, and of
	 * those allocations and bytes what was still allocated at the end
	 * (estimates from the samples, as cpu_ns is). */
	int64_t alloc_objects, inuse_objects, inuse_bytes;
};

/* What a run achieved, for the end-of-run report on stderr and for the
 * files that can carry it (pprof comments, speedscope "name"). */
struct lc_prof_quality {
	uint64_t ticks;		/* timer ticks */
	uint64_t late_ticks;	/* ticks that came later than 2 periods */
	uint64_t attempted;	/* thread samples tried */
	uint64_t taken;
	uint64_t lost_read;	/* a stack or state read failed */
	uint64_t lost_gone;	/* the thread exited meanwhile */
	uint64_t lost_inconsistent; /* the Lua state failed validation */
	uint64_t lost_held;	/* released unread: the stop would have
				   lasted past the stop budget */
	uint64_t truncated;	/* stacks cut at the frame limit */
	uint64_t idle_skipped;	/* threads not on a CPU at the tick, not
				   stopped (CPU mode) */
	uint64_t found_asleep;	/* threads stopped and found asleep in a
				   system call: not on a CPU, no sample
				   (CPU mode) */
	uint64_t found_waiting;	/* stopped and found waiting for a CPU
				   (CPU mode) */
	uint64_t late_stops;	/* stops too long after the point's read
				   to stand for it: dropped */
	/* CPU accounting (nanoseconds).  used: what the sampled threads
	 * used during the run (the process's CPU clock; the thread's with
	 * --thread); charged: the sum of the samples' weights, the
	 * estimate of used; between: what threads used between two of
	 * their sample points and were not on a CPU at the second one:
	 * never charged to the stack they were found in, and counted in
	 * used only through the samples taken while they ran. */
	int64_t cpu_used_ns, cpu_charged_ns, cpu_between_ns;
	int64_t cpu_late_ns;	/* what the points of late stops would
				   have charged, the thread being on a CPU */
	/* The process's CPU clock at the first tick: what it used before
	 * sampling began (a launched command's start, while the sampler
	 * read its modules), which no sample can stand for; -1: unknown. */
	int64_t cpu_before_ns;
	/* The samples scaled per thread to the CPU time the kernel counted
	 * for it (lc_profile_scale_threads): what they stand for then; and
	 * the CPU time of threads no sample was charged to, which the
	 * profile cannot place (threads_unseen of them). */
	int64_t cpu_scaled_ns, cpu_unseen_ns;
	uint64_t threads_unseen;
	double rate_hz;		/* requested */
	double achieved_hz;	/* ticks per second of the run */
	double stop_total_s;	/* sum of the time threads were stopped */
	double stop_median_us;
	double stop_p99_us;
	/* The share of the run's wall time its threads were held stopped,
	 * from the stop to the release: on average over the threads
	 * stopped at least once, and the most any one was. */
	double stop_share, stop_share_max;
	double sampler_cpu_s;	/* our own CPU time */
	double sampler_stop_cpu_s;	/* of which in stops (ptrace, copy) */
	double sampler_decode_cpu_s;	/* and in decoding */
	bool realtime;		/* the sampler ran at real-time priority */
	double stop_budget_us;	/* the bound on one stop's hold */
	double stop_max_us;	/* the longest hold, from the stop to the
				   release */
	/* --nonblocking: nothing stopped; Lua stacks read as the threads
	 * ran, each read again until two reads in a row agree. */
	bool nonblocking;
	uint64_t nb_reads;	/* reads of a Lua stack, all samples' */
	uint64_t nb_first;	/* samples whose first two reads agreed */
	uint64_t nb_unknown;	/* lost: the stack resumes a coroutine
				   not found yet (found again soon) */
	uint64_t nb_native;	/* a thread on a CPU that ran no Lua
				   VM's code: its native frames unread */
	uint64_t nb_guessed;	/* charged to a thread by elimination:
				   more than one VM ran at the tick */
	uint64_t nb_scans;	/* memory scans for the VMs and coroutines */
	double nb_scan_s;	/* the time they took */
};

/* The samples lost, for whatever reason. */
static inline uint64_t lc_prof_lost(const struct lc_prof_quality *q)
{
	return q->lost_read + q->lost_gone + q->lost_inconsistent +
	       q->lost_held + q->nb_unknown;
}

/* One sample as it was taken, in time order: which merged sample it
 * added to and its own weight.  For speedscope's time order. */
struct lc_prof_event {
	uint32_t sample;	/* index into samples */
	uint32_t weight_us;	/* its cpu_ns in microseconds, >= 1 (an
				   allocation profile: its bytes) */
};

#define LC_PROF_EVENTS_MAX	(8u << 20)	/* 64 MB of them at most */

/* A VM's names, read from its own state (luacore.h, lc_vm): the string
 * value of the global the user named, and its allocator function. */
struct lc_prof_vm {
	uint64_t vm;		/* global_State */
	uint32_t name;		/* index into strings, 0 = none */
	uint32_t alloc;		/* index into strings, 0 = none */
};

struct lc_profile {
	struct lc_prof_func *funcs;
	size_t nfuncs, capfuncs;
	struct lc_prof_loc *locs;
	size_t nlocs, caplocs;
	struct lc_prof_sample *samples;
	size_t nsamples, capsamples;
	struct lc_prof_event *events;	/* every lc_profile_add, in order */
	size_t nevents, capevents;
	bool events_cut;	/* more than LC_PROF_EVENTS_MAX (or memory
				   ran out): events holds the first ones */
	struct lc_prof_vm *vms;	/* the VMs with a name, in order seen */
	size_t nvms, capvms;
	char **strings;		/* interned labels; strings[0] = "" */
	size_t nstrings, capstrings;
	int pid;
	char *command;		/* the target's command line, or NULL */
	int64_t start_ns;	/* CLOCK_REALTIME at start */
	int64_t duration_ns;
	int64_t period_ns;	/* 1e9 / rate */
	char *cwd;		/* the target's working directory at the
				   start, for relative chunk names; or NULL */
	bool wall;		/* --wall: wall-clock samples */
	/* --alloc: samples of allocations, one per alloc_mean bytes on
	 * average (the values are estimates of the whole: alloc_*,
	 * inuse_*, cpu_ns as bytes) */
	bool alloc;
	int64_t alloc_mean;
	/* --at: samples of stops at functions (alloc set too): cpu_ns is
	 * the entries a stop stands for, alloc_objects 1 a stop;
	 * alloc_mean the mean period at the start (1: every entry) */
	bool at;
	/* How the folded stacks are written (sink_folded.c): weights in
	 * microseconds of CPU (wall) time rather than sample counts; and
	 * each stack after its VM's name. */
	bool folded_cpu;
	bool folded_vm;
	struct lc_prof_quality q;
	void *index;		/* interning tables (profile.c) */
};

struct lc_profile *lc_profile_create(void);
void lc_profile_destroy(struct lc_profile *p);

/* Interning; UINT32_MAX when memory ran out. */
uint32_t lc_profile_func(struct lc_profile *p, const char *name,
			 const char *file, int64_t start_line,
			 enum lc_prof_kind kind);
uint32_t lc_profile_loc(struct lc_profile *p, uint32_t func, int64_t line,
			uint64_t addr);
uint32_t lc_profile_string(struct lc_profile *p, const char *s);

/* Add a sample (locs copied, leaf first).  Samples with the same stack
 * and labels are merged (count and cpu_ns add up); each is an event, in
 * order.  -1 on ENOMEM. */
/* lc_profile_add with what the VM was doing (lc_prof_sample.vmstate),
 * NULL for nothing said. */
int lc_profile_add_vmstate(struct lc_profile *p, const uint32_t *locs,
			   size_t nlocs, int64_t cpu_ns, int tid,
			   const char *thread_name, uint64_t vm,
			   uint64_t coroutine, enum lc_prof_kind leaf,
			   const char *vmstate);
/* An allocation's sample, standing for objects allocations of bytes in
 * all: added as lc_profile_add_vmstate adds, with alloc_objects; the
 * index of the sample it went into, or -1 on ENOMEM. */
long lc_profile_add_alloc(struct lc_profile *p, const uint32_t *locs,
			  size_t nlocs, int tid, const char *thread_name,
			  uint64_t vm, uint64_t coroutine,
			  enum lc_prof_kind leaf, int64_t objects,
			  int64_t bytes);
int lc_profile_add(struct lc_profile *p, const uint32_t *locs, size_t nlocs,
		   int64_t cpu_ns, int tid, const char *thread_name,
		   uint64_t vm, uint64_t coroutine, enum lc_prof_kind leaf);

/* What sample s stands for in the outputs: its CPU time as charged,
 * times its thread's scale. */
static inline int64_t lc_profile_cpu(const struct lc_prof_sample *s)
{
	return (int64_t)((double)s->cpu_ns * s->scale + 0.5);
}

/* Scale each sample of thread tids[i] by scales[i] (a thread not listed
 * keeps 1).  -1 on ENOMEM. */
int lc_profile_scale_threads(struct lc_profile *p, const int *tids,
			     const double *scales, size_t n);

/* Name VM vm (name or alloc NULL: unknown).  -1 on ENOMEM. */
int lc_profile_set_vm(struct lc_profile *p, uint64_t vm, const char *name,
		      const char *alloc);

/* The VM's name and its allocator's, or NULL. */
const char *lc_profile_vm_name(const struct lc_profile *p, uint64_t vm);
const char *lc_profile_vm_alloc(const struct lc_profile *p, uint64_t vm);

struct lc_stack;
struct lc_interp;

/* A decoded thread's stack (report/stack.h) as locations, leaf first, into
 * locs (room for th->nframes): a Lua function by its global or call-site
 * name, else "main chunk" or "function <src:line>", with its chunk's path
 * (made absolute against cwd) and line; a C function called from Lua by
 * its name or symbol; a machine frame by its symbol, "??" when it has
 * none, with its source file and line from DWARF.  Unless native, a
 * stack with Lua on it is Lua-first: the machine frames in (interp's
 * VM family, own_frame) and those of C functions that their Lua frame
 * shows are left out, so that the Lua function, the C function called
 * from Lua or [GC] they run for is the leaf; host frames stay.  Names come from the target and are taken as they
 * are (lc_profile_label escapes them).  *leaf gets the stack's activity, as
 * the VM family tells it (PUC Lua: LC_PROF_LUA or LC_PROF_LUA_C for the
 * innermost Lua frame's kind, LC_PROF_GC when a collector entry point
 * lies leafward of it, LC_PROF_NATIVE when the stack has no Lua
 * frame).  Returns how many
 * locations were written (fewer than frames only when memory ran
 * out). */
size_t lc_profile_stack_of(struct lc_profile *p, const struct lc_stack *th,
			   const struct lc_interp *in, bool native,
			   uint32_t *locs, enum lc_prof_kind *leaf);

/* Paths in labels are cut from the left to this many bytes, at a '/'
 * ("…/scenarios/sample/split.lua"), as Lua shortens a chunk's name. */
#define LC_PROF_PATH_MAX	40

/* path, or its short form (a buffer of the calling thread's, valid until
 * its next call). */
const char *lc_profile_short_path(const char *path);

/* Per function: the weight (cpu_ns) of the samples it is the leaf of,
 * into self, and of those it is anywhere in, once per sample however
 * deep it recurses, into total.  Both have room for p->nfuncs entries.
 * With lua_view, a stack with Lua on it counts as the Lua side sees it:
 * the VM's own machine frames (leafward of the outermost Lua or C-from-
 * Lua frame) are left out, so the innermost Lua function, C function
 * called from Lua, [GC] or [idle] is the leaf; host frames rootward of
 * Lua stay, unless host is given: then they are left out too, and
 * *host gets the weight of the samples that had any.  -1 on ENOMEM.
 * For the live view of luacore-sample --top. */
int lc_profile_func_weights(const struct lc_profile *p, bool lua_view,
			    int64_t *self, int64_t *total, int64_t *host);

/* A frame's label in folded stacks, speedscope and the SVG:
 * "name (file:start_line)" for Lua functions, "name [C]" for C functions
 * called from Lua, "[GC]", "[idle]", and the bare name for native
 * frames.  Names and files are escaped as the text report escapes them
 * (base/escape.c: no control byte, valid UTF-8).  Written into buf
 * (always NUL-terminated). */
void lc_profile_label(const struct lc_profile *p, uint32_t func, char *buf,
		      size_t size);

#endif /* LC_PROFILE_H */
