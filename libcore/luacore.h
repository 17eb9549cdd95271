/* luacore: read the Lua side of a process (Lua 5.1-5.5) from outside.
 *
 * This is the one public header of libluacore.  Conventions:
 *  - Fallible functions return a struct lc_error * (NULL means success) and
 *    write their result through a last out-parameter named "ret".
 *  - Target addresses are uint64_t, never host pointers.
 *  - _create/_destroy allocate and free; everything a returned object
 *    points to is owned by that object and lives until its _destroy.
 *  - Nothing in the library prints; formatting functions write to the
 *    FILE * they are given.
 */
#ifndef LUACORE_H
#define LUACORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ----------------------------------------------------------- */

/* The version of the header compiled against; lc_version() gives the
 * library's, "MAJOR.MINOR.PATCH". */
#define LC_VERSION_MAJOR	0
#define LC_VERSION_MINOR	1
#define LC_VERSION_PATCH	0
#define LC_VERSION_STRING	"0.1.0"

const char *lc_version(void);

/* ---- errors ------------------------------------------------------------ */

enum lc_error_code {
	LC_ERR_NOMEM = 1,	/* out of memory */
	LC_ERR_OS,		/* a system call failed; message has errno text */
	LC_ERR_FORMAT,		/* a file is not what it should be */
	LC_ERR_FAULT,		/* target memory unreadable; see address */
	LC_ERR_UNSUPPORTED,	/* unsupported architecture or Lua layout */
	LC_ERR_NOT_FOUND,	/* nothing of the kind asked for */
	LC_ERR_INVALID,		/* bad argument */
	LC_ERR_CORRUPT,		/* target data fails validation */
};

struct lc_error;

enum lc_error_code lc_error_code(const struct lc_error *err);
/* Valid until lc_error_destroy. */
const char *lc_error_message(const struct lc_error *err);
/* The address that could not be read, for LC_ERR_FAULT; else 0. */
uint64_t lc_error_address(const struct lc_error *err);
/* Accepts NULL and the static out-of-memory error. */
void lc_error_destroy(struct lc_error *err);

/* ---- what the library is doing ------------------------------------------ */

enum lc_log_level {
	LC_LOG_NOTICE,	/* worth saying to anyone: a wait on the network
			   (debuginfod), and giving up on it */
	LC_LOG_VERBOSE,	/* what it is doing: modules, debug info, layouts,
			   scans, copies (a tool's -v) */
};

/* A line the library says, without a newline; valid during the call. */
typedef void lc_log_fn(void *arg, enum lc_log_level level, const char *msg);

/* Where the library says what it is doing, process-wide: fn gets every
 * line of level up to max (LC_LOG_NOTICE: notices only).  NULL, the
 * default: nowhere. */
void lc_set_log(lc_log_fn *fn, void *arg, enum lc_log_level max);

/* Let the library fetch debug info from debuginfod itself, for a program
 * that does not use debuginfod otherwise (luacore's tools do; a
 * debugger that hosts the library does not): DEBUGINFOD_URLS is taken
 * out of the environment (process-wide, once), so that libdw never
 * queries on its own, and the library asks with it: at most one request
 * per build-id and kind (debug info, executable) in the run, every wait
 * of the run within one DEBUGINFOD_TIMEOUT (seconds, default 90), a
 * notice when a fetch has taken a second, and one when it gives up.
 * Without this call, libdw's own queries run as DEBUGINFOD_URLS says. */
void lc_debuginfod_take(void);

/* Where separate debug files are looked for, process-wide, as libdwfl
 * and eu-stack's --debuginfo-path take it: directories separated by
 * ':', an entry starting with '+' also checking CRCs, one starting with
 * '-' not; a relative entry (".debug") is taken beside the module's own
 * file.  Build-ids are looked up under each absolute directory's
 * .build-id.  NULL, the default: ":.debug:/usr/lib/debug".  Affects the
 * targets opened after the call. */
void lc_set_debuginfo_path(const char *path);

/* ---- targets ----------------------------------------------------------- */

/* A process image to read: a core file with its executable, or any memory
 * behind a read callback (gdb, unit tests). */
struct lc_target;

/* Reads len bytes at addr into buf; returns 0 on success, -1 if any byte
 * is unreadable. */
typedef int lc_read_fn(void *arg, uint64_t addr, void *buf, size_t len);

/* Open a core file.  exe may be NULL: the executable is then taken from
 * the core's file notes.  Shared libraries are found through the core's
 * notes and link map, debug info by build-id (including dwz alt files),
 * .gnu_debuglink and debuginfod when DEBUGINFOD_URLS is set. */
struct lc_error *lc_target_open_core(const char *core_path,
				     const char *exe_path,
				     struct lc_target **ret);

/* A target whose memory is read through "read".  Modules (for Lua
 * layouts and symbols) are added with lc_target_add_module. */
struct lc_error *lc_target_create_callback(lc_read_fn *read, void *arg,
					   struct lc_target **ret);

/* Report an ELF file mapped at load bias "bias" in a callback target. */
struct lc_error *lc_target_add_module(struct lc_target *t, const char *path,
				      uint64_t bias);

/* Where the Lua layout comes from, instead of the VM module's DWARF (or,
 * without it, the built-in layout of the release lua_ident names):
 * types_file, any ELF file with DWARF for lua_State and the structs
 * around it (an object of the program's own lstate.c compiled with -g, a
 * debug file, another build of the same sources); or release ("5.4.6"),
 * that release's built-in layout.  Either may be NULL (both NULL: the
 * default again).  Either way the layout is used only once it validates
 * against the target's memory; the report's lua_layout says so.  Takes
 * effect at the next report.  LC_ERR_INVALID for a release that is not
 * 5.Y.Z, or both given; a release with no built-in layout is the
 * report's warning. */
struct lc_error *lc_target_set_layout(struct lc_target *t,
				      const char *types_file,
				      const char *release);

/* Attach to a running process: every thread is seized and stopped with
 * ptrace (PTRACE_SEIZE, PTRACE_INTERRUPT; no signal is sent), memory is
 * read with process_vm_readv, never written.  The process stays stopped
 * until lc_target_detach or lc_target_destroy; if the caller dies, the
 * kernel restarts it.  LC_ERR_OS when ptrace is refused, with the reason
 * (ptrace_scope, another user, no CAP_SYS_PTRACE) and what to do. */
struct lc_error *lc_target_attach(int pid, struct lc_target **ret);

/* Let a live target's threads run again; signals that arrived while they
 * were stopped are delivered.  The target can still be destroyed (its
 * reports stay valid), and read when copied (lc_target_attach_copy). */
void lc_target_detach(struct lc_target *t);

/* How long a live target's threads were stopped: from the first stop to
 * the detach, or until now. */
double lc_target_stopped_seconds(const struct lc_target *t);

/* lc_target_attach, then copy the process's writable memory while it is
 * stopped (its threads' stacks first; of anonymous memory only the pages
 * it touched; at most limit bytes, for at most budget_s seconds) and let
 * it go: the target is returned detached, its reports made from the
 * copy.  The buffers are made ready before the stop.  What the copy
 * lacks (text and read-only data, which do not change, and what the
 * limit or the budget left out) is read from the process as it runs:
 * lc_target_copy_misses counts those reads.  *copied and *mapped get the
 * bytes copied and the bytes of writable mappings; *complete whether
 * every one was copied whole. */
struct lc_error *lc_target_attach_copy(int pid, uint64_t limit,
				       double budget_s, uint64_t *copied,
				       uint64_t *mapped, bool *complete,
				       struct lc_target **ret);
uint64_t lc_target_copy_misses(const struct lc_target *t);

/* Read a running process without stopping it (no ptrace stop, no
 * signal): memory is read with process_vm_readv while it runs.  A
 * thread asleep in the kernel is unwound from the stack pointer and pc
 * the kernel shows for it (/proc/PID/task/TID/syscall), with no other
 * register; a thread that is running has no machine stack, and its
 * report says so.  What was read may change while it is read: the
 * caller compares reports (luacore-inspect --nonblocking).  The target
 * needs no detach. */
struct lc_error *lc_target_attach_nonblocking(int pid,
					      struct lc_target **ret);
/* Such a target's threads listed again, each where it sleeps now: for
 * another read, without reading modules, symbols and layout again.
 * Reports made before stay valid. */
struct lc_error *lc_target_relist(struct lc_target *t);

/* Detach every thread any live target holds.  Async-signal-safe: for
 * the handlers of SIGINT, SIGTERM, SIGSEGV... of a front end. */
void lc_live_release_all(void);
/* For a front end's handler of SIGTSTP, SIGTTIN and SIGTTOU (sig): let
 * every held thread go (lc_live_release_all), then stop this process as
 * the signal's default action would, and return once it is continued
 * (SIGCONT).  Async-signal-safe. */
void lc_live_stop_self(int sig);
/* How many times lc_live_release_all let a thread go: a front end that
 * sees it change while a target was stopped knows that what it read
 * since may be of a running process (and reads it again). */
unsigned long lc_live_releases(void);

/* The same, with the load address given as where one of the file's
 * sections (".text", say) is mapped: what a debugger lists. */
struct lc_error *lc_target_add_module_section(struct lc_target *t,
					      const char *path,
					      const char *section,
					      uint64_t addr);

/* One machine frame as a debugger unwound it (callback targets). */
struct lc_frame_regs {
	uint64_t pc;		/* the pc, or a caller's return address */
	bool activation;	/* pc is exact: the innermost frame or one
				   interrupted by a signal */
	uint32_t regmask;	/* bit r set: regs[r] is known */
	uint64_t regs[17];	/* DWARF x86_64 numbering, rip = 16 */
};

/* Add a thread to a callback target with its machine frames, innermost
 * first (copied).  Of a frame that is not an activation only the
 * registers a call preserves (rbx, rbp, rsp, r12-r15, rip) are used, as
 * libdwfl's unwinder knows them.  name may be NULL; signo is the signal
 * the thread stopped with, 0 if none.  Threads are reported in the order
 * they are added; the first is the crashed one when the target's signal
 * (lc_target_set_signal) is a fatal one. */
struct lc_error *lc_target_add_thread(struct lc_target *t, int tid,
				      const char *name, int signo,
				      const struct lc_frame_regs *frames,
				      size_t nframes);

/* What a report says of a callback target's process.  Strings are
 * copied; NULL leaves a field unset. */
struct lc_error *lc_target_set_process(struct lc_target *t, int pid,
				       const char *executable,
				       const char *core);
void lc_target_set_signal(struct lc_target *t, int signo, int si_code,
			  uint64_t fault_addr);

/* Tell a callback target where the process has memory, [start, end):
 * with writable regions, reports scan them for idle VMs and coroutines
 * as they scan a core's segments. */
struct lc_error *lc_target_add_region(struct lc_target *t, uint64_t start,
				      uint64_t end, bool writable);

/* Let a callback target read whole pages and keep the last ones it read
 * (off by default): far fewer callbacks when each is costly, as through
 * a debugger.  Reports and objects start with a fresh cache; between
 * other calls, lc_target_invalidate when the memory may have changed. */
void lc_target_set_caching(struct lc_target *t, bool on);
void lc_target_invalidate(struct lc_target *t);

void lc_target_destroy(struct lc_target *t);

/* Ranged read; fails with LC_ERR_FAULT naming the first unreadable
 * address. */
struct lc_error *lc_target_read(struct lc_target *t, uint64_t addr,
				void *buf, size_t len);

/* ---- reports ----------------------------------------------------------- */

/* A Lua value decoded for display.  Strings are owned by the value. */
struct lc_value {
	const char *type;	/* "nil", "boolean", "number", "string",
				   "table", "function", "userdata",
				   "lightuserdata", "thread", "cdata"
				   (LuaJIT), or "?" */
	char *text;		/* rendering: true, 42, 3.5, "a\tb"...,
				   table: 0x..., function: @x.lua:12,
				   function: [C] str_gsub, ...; every
				   byte from the target escaped as a Lua
				   literal would (\ddd), so printed as
				   is */
	uint64_t addr;		/* GC object, light userdata or C pointer */
	int64_t len;		/* string length, userdata size, table
				   array size; -1 if none */
	int64_t hsize;		/* table hash size; -1 if none */
	uint64_t metatable;	/* tables and full userdata; 0 if none */
	char *str;		/* strings: the bytes (at most 4096), NUL-
				   terminated, embedded NULs kept; else NULL */
	size_t strlen;		/* bytes in str */
	bool partial;		/* something was unreadable */
};

struct lc_var {
	const char *kind;	/* "local", "vararg", "upvalue" */
	char *name;		/* as the Proto names it; "?" if unknown */
	int index;		/* register, vararg number or upvalue index */
	struct lc_value value;
};

/* One data-stack slot (--stack). */
struct lc_slot {
	uint64_t addr;
	long index;		/* from L->stack (0) upwards */
	long frame;		/* index into lc_luathread.frames of the
				   frame owning the slot, -1 if none */
	bool is_func;		/* the slot holding that frame's function */
	bool residue;		/* at or above top: popped, stale */
	struct lc_value value;
};

enum lc_frame_kind {
	LC_FRAME_NATIVE,	/* a machine frame */
	LC_FRAME_LUA,		/* a Lua CallInfo: Lua function, C function
				   called from Lua, main chunk, or (5.1) a
				   lost tail call */
};

struct lc_frame {
	enum lc_frame_kind kind;
	/* Native frames. */
	uint64_t pc;		/* return address or, innermost, the pc */
	uint64_t sp;		/* stack pointer in this frame, 0 if unknown */
	char *function;		/* symbol, demangled and without its version
				   ("ns::f(int)", "__libc_start_main"); for
				   Lua C frames the C symbol */
	char *linkage_name;	/* native frames: the symbol as linked when
				   function is its demangled form, else NULL */
	char *module;		/* path of the file holding pc, as the
				   kernel names it (symlinks resolved);
				   "[vdso]"; "[anon:exec]" for executable
				   memory of no file (JIT code) */
	char *file;		/* source file from DWARF, or NULL */
	int line;		/* source line, 0 if unknown */
	bool inlined;		/* an inlined call inside the next frame */
	/* Lua frames. */
	const char *what;	/* "Lua", "C", "main" or "tail" (5.1) */
	char *source;		/* Proto source as Lua stores it ("@x.lua") */
	char *short_src;	/* as luaO_chunkid would shorten it */
	int currentline;	/* -1 when not known (C, stripped) */
	int linedefined;
	const char *line_from;	/* where currentline's pc came from:
				   "pc" (the interpreter's own, live) or
				   "savedpc" (the CallInfo's); LuaJIT in a
				   compiled trace: "snapshot" (the one
				   whose machine code covers the trace's
				   pc) or "trace start"; NULL for C and
				   tail frames and where nothing said.
				   Static. */
	int savedpc_line;	/* with "pc": the line savedpc gives, which
				   lags when they differ */
	char *name;		/* NULL when Lua gives no name */
	const char *namewhat;	/* "" when Lua gives no name */
	char *global_name;	/* "string.gsub" from package.loaded, or NULL */
	bool istailcall;
	uint64_t state;		/* lua_State this CallInfo belongs to */
	uint64_t ci;		/* CallInfo address (5.1: array element) */
	uint64_t cfunc;		/* C function pointer, for C frames */
	bool unplaced;		/* could not be matched to a native frame */
	bool partial;		/* something in this frame was unreadable */
	struct lc_var *vars;	/* with --locals: locals, varargs, upvalues */
	size_t nvars;
	char *traceback;	/* the line this release's luaL_traceback
				   prints for the frame ("x.lua:3: in
				   function 'net.loop'"), or NULL */
	bool continued;		/* runs on no native frame now: a yield
				   discarded them, and the interpreter
				   continues it after the resume */
	bool runs_lua;		/* native frames: the interpreter's loop,
				   running the Lua frames that follow it;
				   known by its name or, with no symbol
				   for it, by what it holds */
};

struct lc_thread {
	int tid;
	char *name;		/* NULL if unknown */
	int signo;		/* pending/current signal of this thread */
	bool crashed;		/* the thread that took the fatal signal */
	struct lc_frame *frames; /* innermost first */
	size_t nframes;
	uint64_t *states;	/* validated lua_States running here,
				   innermost first */
	size_t nstates;
	bool partial;
	char *note;		/* why the result is partial, or NULL */
	uint64_t vm;		/* global_State of states[0], 0 if none */
};

/* A lua_State: a main thread or a coroutine. */
struct lc_luathread {
	uint64_t addr;
	uint64_t g;		/* its VM */
	bool is_main;
	const char *status;	/* "running", "normal", "suspended", "dead",
				   "idle" (a main thread with no frames), or
				   "error" (died with raw_status) */
	int raw_status;		/* L->status */
	int os_tid;		/* OS thread running it, 0 if none */
	uint64_t resumed_by;	/* the lua_State that resumed it, or 0 */
	unsigned ccalls;	/* C-call depth */
	unsigned nny;		/* non-yieldable depth (5.2+; 5.1: 0 or 1) */
	uint32_t nCcalls_raw;	/* the field as stored */
	uint64_t errorjmp;	/* struct lua_longjmp *, 0 if none */
	int errorjmp_status;	/* its status field, if readable */
	bool errorjmp_on_stack;	/* points into its OS thread's stack */
	bool errorjmp_suspicious; /* e.g. set in a yielded coroutine */
	uint64_t hook;
	char *hook_name;	/* symbol of the hook function, or NULL */
	int hookmask, basehookcount, hookcount, allowhook;
	uint64_t stack, top, stack_last;
	long stacksize;		/* slots from stack to stack_last */
	long topslot;		/* top - stack, in slots; -1 if unknown */
	long ci_depth;		/* CallInfos above the base one */
	long openupval;		/* open upvalues (list length) */
	uint64_t tbclist;	/* 5.4 to-be-closed list, 0 if none */
	struct lc_frame *frames; /* its Lua frames, innermost first */
	size_t nframes;
	struct lc_slot *slots;	/* with --stack */
	size_t nslots;
	bool partial;
	char *note;
};

struct lc_vm {
	uint64_t g;		/* global_State */
	const char *found_by;	/* "thread" or "scan" */
	uint64_t mainthread;
	uint64_t registry;	/* registry table */
	int64_t totalbytes;	/* as the version defines it */
	int64_t gcdebt;		/* 5.2+; 0 in 5.1 */
	int64_t gcestimate;	/* 5.1-5.3 estimate, 5.4 GCestimate */
	int64_t memory;		/* bytes in use: totalbytes + GCdebt (5.2+) */
	int gcstate;
	const char *gcstate_name; /* "pause", "propagate", "atomic", ... */
	const char *gckind;	/* "incremental", "generational" (5.4),
				   "emergency" ... */
	int gcpause, gcstepmul, gcstepsize; /* -1 where absent */
	int genminormul, genmajormul;	    /* 5.4; -1 where absent */
	struct lc_luathread *threads;	/* main thread first, then the
					   coroutines by address */
	size_t nthreads;
	uint64_t *chain;	/* resume chain, main thread first, the
				   running coroutine last */
	size_t nchain;
	bool partial;
	char *note;
	/* Names read from the VM's own state: the string value of the
	 * global lc_report_options.vm_name names, and its allocator
	 * function's symbol; NULL when not known. */
	char *name;
	char *alloc;
	/* LuaJIT's own state (NULL vmstate for PUC Lua): what g->vmstate
	 * says the VM is doing ("interpreter", "C function", "garbage
	 * collector", "trace exit", "recording", "optimizing",
	 * "assembling", "trace"; static), the trace it runs when
	 * "trace"; whether the compiler is on (1, 0; -1 unread), its state
	 * ("idle", "recording", ...; static, NULL unread) and how many
	 * compiled traces the VM holds (-1 unread); g->cur_L, and when
	 * it does not check out (not a thread of this VM, or not the
	 * one the OS threads' stacks run), why (NULL when it does). */
	const char *vmstate;
	int32_t vmstate_trace;
	int jit_on;
	const char *jit_state;
	int64_t ntraces;
	uint64_t cur_L;
	char *cur_L_note;
	/* Its interpreter's version ("5.4.6", "LuaJIT 2.1..."): a process
	 * may hold VMs of PUC Lua and of LuaJIT. */
	char *version;
};

/* An interpreter found in the process. */
struct lc_lua_found {
	char *version;		/* "5.4.4", "LuaJIT 2.1.1787165859" */
	char *module;		/* path of the module holding it */
	char *layout;		/* where its layout came from, or NULL */
};

struct lc_report {
	char *core;		/* path, or NULL for a live/callback target */
	char *executable;
	int pid;
	int signo;		/* fatal signal, 0 if none (e.g. gcore) */
	int si_code;
	uint64_t fault_addr;
	char *lua_version;	/* "5.4.4", NULL if no Lua was found */
	char *lua_module;	/* path of the module holding the Lua VM */
	struct lc_thread *threads;
	size_t nthreads;
	bool partial;		/* any thread partial or a warning below */
	char **warnings;
	size_t nwarnings;
	/* Crash context. */
	uint64_t regs[17];	/* crashed thread, DWARF x86_64 numbering */
	bool have_regs;
	char *exe_build_id;	/* hex, or NULL */
	char *core_build_id;	/* of the main module per the core */
	bool build_id_mismatch;
	/* Every VM in the process. */
	struct lc_vm *vms;
	size_t nvms;
	size_t nvms_scanned;	/* of which found only by the memory scan */
	/* Live targets: the process was stopped for stopped_seconds (the
	 * front end sets it once it has detached). */
	bool live;
	double stopped_seconds;
	bool not_stopped;	/* read as it ran (lc_target_attach_nonblocking) */
	/* Where the Lua layout came from and how it was checked: "DWARF of
	 * MODULE", or "built-in layout of Lua 5.4.6 (the module has no
	 * DWARF), validated against memory: ..."; NULL if no Lua. */
	char *lua_layout;
	/* Every interpreter found (the first is lua_version's): a process
	 * may embed PUC Lua and LuaJIT both, each read with its own. */
	struct lc_lua_found *luas;
	size_t nluas;
};

struct lc_report_options {
	int max_frames;		/* per thread; 0 means the default (512) */
	bool locals;		/* fill lc_frame.vars */
	bool stack;		/* fill lc_luathread.slots */
	int residue;		/* stale slots above top (default 16) */
	int tid;		/* only this OS thread; 0 = all */
	uint64_t vm;		/* only this global_State; 0 = all */
	const uint64_t *states;	/* decode these lua_States too */
	size_t nstates;
	bool no_native;		/* Lua frames only */
	bool no_scan;		/* skip the memory scan for idle VMs */
	bool no_vms;		/* threads only: no VM and coroutine list */
	/* Name each VM by the string value of this global (skynet's
	 * SERVICE_NAME): lc_vm.name.  NULL: none. */
	const char *vm_name;
};

/* Decode every thread of the target.  A report with partial results is
 * still returned (report->partial); an error means nothing was shown. */
struct lc_error *lc_report_create(struct lc_target *t,
				  const struct lc_report_options *opts,
				  struct lc_report **ret);
void lc_report_destroy(struct lc_report *r);

/* Human text, grep-friendly. */
void lc_report_print_text(const struct lc_report *r, FILE *out);

/* Parts of the text report, for front ends that show one at a time (the
 * gdb commands).  Each part is printed exactly as in the whole report. */
enum lc_text_part {
	LC_TEXT_HEADER = 1,	/* core, executable, pid, signal, lua, ... */
	LC_TEXT_WARNINGS = 2,
	LC_TEXT_THREADS = 4,	/* every thread's mixed backtrace */
	LC_TEXT_VMS = 8,	/* every VM and its lua_States */
	LC_TEXT_ALL = 15,
};

struct lc_text_options {
	unsigned parts;		/* LC_TEXT_* bits */
	/* LC_TEXT_VMS: only the VM holding this lua_State, with only this
	 * state under it; 0 = all. */
	uint64_t state;
	/* List a state's Lua frames under it even when they are also shown
	 * in its OS thread's backtrace. */
	bool state_frames;
};

void lc_report_print_text_parts(const struct lc_report *r,
				const struct lc_text_options *o, FILE *out);
/* One JSON document, format "luacore-inspect/0". */
void lc_report_print_json(const struct lc_report *r, FILE *out);

/* ---- single objects (gdb's lua-value) --------------------------------- */

/* What an address given to lc_object_create points to. */
enum lc_object_kind {
	LC_OBJECT_TVALUE,	/* a TValue, or a StkId (5.4 StackValue) */
	LC_OBJECT_GC,		/* a GC object: Table, TString, Closure,
				   Udata or lua_State; its header's tag
				   says which */
};

/* A table entry: key and value. */
struct lc_entry {
	struct lc_value key;
	struct lc_value value;
};

struct lc_object {
	struct lc_value value;	/* as a TValue holding it displays */
	char *full;		/* strings: the bytes escaped and quoted,
				   at most 4096 of them; else NULL */
	struct lc_entry *entries; /* tables: array part, then hash part */
	size_t nentries;
	size_t more;		/* entries left out past the maximum */
	bool more_bounded;	/* counting stopped at 2^20 slots and nodes
				   read: "more" is a lower bound */
	struct lc_var *upvalues; /* Lua closures, named as the Proto names
				    them */
	size_t nupvalues;
};

/* Decode the object at addr; tables list at most max_entries entries
 * (0: 100), counting the others among the first 2^20 array slots and
 * hash nodes.  Errors: LC_ERR_UNSUPPORTED (no Lua layout), LC_ERR_NOMEM;
 * an unreadable or invalid object is a value of type "?" marked
 * partial, not an error. */
struct lc_error *lc_object_create(struct lc_target *t,
				  enum lc_object_kind kind, uint64_t addr,
				  size_t max_entries, struct lc_object **ret);
void lc_object_destroy(struct lc_object *o);
void lc_object_print_text(const struct lc_object *o, FILE *out);

/* ---- the heap: census, reference paths, diffs --------------------------- */

/* What lc_heap_create reads.  Zeroed: a census of every VM, the 20
 * biggest of each list. */
struct lc_heap_options {
	uint64_t vm;		/* only the VM whose global_State is here;
				   0: every VM */
	size_t top;		/* entries per list (0: 20; at most 1000) */
	bool paths;		/* the shortest path from the GC roots of
				   each listed table and string */
	bool strong;		/* paths through strong references only: an
				   object held by weak tables alone is then
				   unreachable */
	const uint64_t *path_to; /* objects whose paths are wanted */
	size_t npath_to;
	/* A baseline to diff against: a snapshot written by lc_heap_save
	 * or a core of the same process (its executable baseline_exe, or
	 * NULL: from its notes).  Objects are the same when address, type
	 * and class (a function's prototype, a table's metatable) are;
	 * an address that holds another object counts as new. */
	const char *baseline;
	const char *baseline_exe;
	bool snapshot;		/* keep every object, for lc_heap_save */
	bool pprof_paths;	/* group every object by retaining path, for
				   lc_heap_write_pprof's by_path */
};

/* The Lua heaps of a target, read once: a census of each VM (objects by
 * type, with the bytes the VM's own free functions would free; strings,
 * tables, functions by definition, userdata by metatable, threads,
 * prototypes; the total against the VM's own count), the paths asked
 * for, the diff against the baseline.  A live target is read as it is
 * now: stop it first (lc_target_attach_copy copies it while stopped).
 * Errors: no Lua VM (LC_ERR_NOT_FOUND), no layout (LC_ERR_UNSUPPORTED),
 * a baseline that cannot be read (LC_ERR_FORMAT, LC_ERR_OS); a heap
 * that breaks on the way is lc_heap_partial, not an error.
 * Owned by the caller: lc_heap_destroy. */
struct lc_heap;
struct lc_error *lc_heap_create(struct lc_target *t,
				const struct lc_heap_options *opts,
				struct lc_heap **ret);
void lc_heap_destroy(struct lc_heap *h);
/* Something could not be read: a list broke, a bound was hit. */
bool lc_heap_partial(const struct lc_heap *h);
void lc_heap_print_text(const struct lc_heap *h, FILE *out);
/* One JSON document (format luacore-heap/1, doc/luacore-heap.schema.json). */
void lc_heap_print_json(const struct lc_heap *h, FILE *out);
/* A pprof profile (profile.proto, uncompressed) with the sample types
 * inuse_objects/count and inuse_space/bytes: by retaining path (each
 * object under the steps of its shortest path; needs pprof_paths) or
 * by class (type, then definition or metatable name). */
struct lc_error *lc_heap_write_pprof(const struct lc_heap *h, bool by_path,
				     FILE *out);
/* Every object (address, type, size, class) for a later diff (needs
 * snapshot, or paths or a baseline). */
struct lc_error *lc_heap_save(const struct lc_heap *h, FILE *out);

/* ---- strings from a target -------------------------------------------- */

/* s as the text output prints every string a target supplied (names,
 * paths, and the messages that quote them), nothing for NULL: printable
 * ASCII and well-formed UTF-8 as they are (but C1 controls, U+2028,
 * U+2029 and the bidirectional controls), backslash as \\, \a \b \t \n
 * \v \f \r, ESC as \e, any other byte as \xNN.  What it writes has no
 * control byte and is valid UTF-8.  For a front end's own printing of
 * error messages and warnings (lc_error_message, lc_report.warnings). */
void lc_print_escaped(const char *s, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* LUACORE_H */
