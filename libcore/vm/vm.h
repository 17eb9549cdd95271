/* The VM seam: what the report, the sampler and gdb need of an
 * interpreter, one table of operations per VM family (PUC Lua today; a
 * LuaJIT family goes beside it in vm/luajit/).  Nothing above this layer
 * knows a family's structs or function names: it asks the table.
 *
 * Objects and ownership:
 *  - struct lc_interp: one interpreter found in a program (its module,
 *    version, layout).  Opened by a family's open, closed by its close;
 *    owned by the session (report/session.c), which reopens it when the
 *    program's modules change.  Borrows the program.
 *  - struct lc_pass: the caches of one stop (Protos, global names), from
 *    begin to end.  Everything an operation returns that points into the
 *    target's data is copied out; strings in struct lc_frame are malloc'd
 *    and the caller's.
 *  - struct lc_vstate: an interpreter thread (a lua_State) read at this
 *    stop; plain data, the family's own part in priv.
 *  - struct lc_vwalk: a state's frames, innermost first; freed by
 *    lc_vwalk_free. */
#ifndef LC_VM_H
#define LC_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "prog/program.h"
#include "native/unwind.h"

/* What a native frame does for the interpreter: bits, since one machine
 * frame may run several of these (inlined into each other). */
enum {
	LC_ROLE_RUNS_LUA = 1,	/* interprets Lua code: its Lua frames follow it */
	LC_ROLE_RESUME = 2,	/* resumes a coroutine: a coroutine boundary */
	LC_ROLE_CALLS_C = 4,	/* calls a C function for Lua, whose own
				   frame may be gone (a tail call) */
	LC_ROLE_GC = 8,		/* an entry point of the collector */
};

/* What a thread was doing at a stop, as a sample's leaf shows it. */
enum lc_activity {
	LC_ACTIVITY_NATIVE,	/* no interpreter frame on the stack: host code */
	LC_ACTIVITY_LUA,	/* running a Lua function */
	LC_ACTIVITY_C,		/* in a C function called from Lua */
	LC_ACTIVITY_GC,		/* collecting garbage for Lua */
};

enum lc_vframe_kind {
	LC_VFRAME_LUA,		/* a Lua function */
	LC_VFRAME_C,		/* a C function called from Lua */
};

/* An interpreter thread at one stop. */
struct lc_vstate {
	uint64_t addr;		/* lua_State */
	uint64_t vm;		/* its global_State */
	bool active;		/* frames above the base one */
	bool runnable;		/* status OK with frames: running, or it
				   resumed another */
	bool dying;		/* an error status with frames and no
				   handler: the error is on its way to a
				   panic, still on the thread's stack */
	uint64_t resume_depth;	/* orders a resume chain: higher was
				   resumed later */
	bool status_damaged;	/* set by the caller: a native frame runs
				   it though its status says it does not;
				   walk it as a running state */
	uint64_t priv[24];	/* the family's own (PUC: struct lc_lstate) */
};

struct lc_vframe {
	uint64_t addr;		/* CallInfo (PUC) */
	enum lc_vframe_kind kind;
	uint64_t cfunc;		/* C frames: the function, matched against
				   native frames' func_start */
	bool in_run;		/* C frames: runs in the machine frame of
				   the interpreter run that called it, with
				   no frame of its own (LuaJIT's fast
				   functions) */
};

struct lc_vwalk {
	struct lc_vframe *frames;	/* innermost first */
	size_t n;
	bool partial;		/* the chain was broken, cyclic or too long */
	uint64_t after_cfunc;	/* the C function in the slot of the call
				   record just past the current one (a
				   finished call's, or one a damaged
				   current pointer lost), or 0 */
	void *priv;		/* the family's own, freed with the walk */
};

/* A growable array of report frames (luacore.h struct lc_frame). */
struct lc_frames {
	struct lc_frame *v;
	size_t n, cap;
	bool nomem;
};
/* A zeroed frame at the end, or NULL (nomem set). */
struct lc_frame *lc_frames_push(struct lc_frames *o);

/* One interpreter found in a program. */
struct lc_interp {
	const struct lc_vm_ops *ops;
	struct lc_program *prog;	/* borrowed */
	const char *version;	/* "5.4.4"; owned by the interp */
	const char *module;	/* path of the module holding it, or NULL */
	uint64_t module_start, module_end;	/* its load range */
	bool version_guessed;	/* no version string: from the shape */
	/* Why the release is read with another's rules (one newer than
	 * any the family knows), or NULL; owned by the interp */
	const char *version_warning;
	/* Where the layout came from and how it was checked ("DWARF of
	 * /usr/lib/.../liblua5.4.so.0", "built-in layout of Lua 5.4.6 ...,
	 * validated against memory: ..."), or NULL; owned by the interp */
	const char *layout_note;
	void *priv;		/* the family's own (PUC: the layout) */
	void *cache;		/* the family's, kept across passes (PUC:
				   struct lc_lua_cache) */
	/* How long what changes seldom and cannot be checked in full at
	 * each use may be reused by later passes (PUC: the names of
	 * package.loaded's functions, each still checked where it was
	 * found), in seconds; 0 (the default): read again by every pass.
	 * A sampler, whose passes are many and short, sets it. */
	double reuse_s;
	/* Frames for a profile only (a sampler): no traceback line is
	 * made for them (lc_frame.traceback stays NULL). */
	bool profile_frames;
	/* Where no symbol names the function that runs Lua: its entry, as
	 * report/stack.c recognised it in a stack with two runs or more,
	 * or in two stacks (learn_runner), or 0; runner_once: the one the
	 * last stack of a single run gave. */
	uint64_t runner, runner_once;
	/* The same, of the function that calls C functions for Lua
	 * (learn_c_caller), or 0. */
	uint64_t c_caller;
};

struct lc_pass;


/* ---- the heap (heap/): objects, their sizes, their references ----
 *
 * A family visits every object of one VM (lc_hobj: plain data) and the
 * references out of one object or out of the VM's roots (lc_href,
 * whose strings are valid during the callback only).  The heap layer
 * keeps what it needs: counts, a sorted address index, parents. */

enum lc_hkind {
	LC_HK_STRING, LC_HK_TABLE, LC_HK_LFUNC, LC_HK_CFUNC, LC_HK_USERDATA,
	LC_HK_THREAD, LC_HK_PROTO, LC_HK_UPVAL,
	LC_HK_TRACE, LC_HK_CDATA,	/* LuaJIT's compiled traces, FFI cdata */
	LC_HK_NKINDS
};

enum {
	LC_HF_LONG = 1,		/* strings: a long string */
	LC_HF_FINOBJ = 2,	/* on the list of objects with a finalizer */
	LC_HF_TOBEFNZ = 4,	/* unreachable, waiting for its finalizer */
	LC_HF_FIXED = 8,	/* never collected (reserved words, ...) */
	LC_HF_OPEN = 16,	/* upvalues: open (its value on a stack) */
	LC_HF_MAIN = 32,	/* threads: the main thread */
	LC_HF_WEAKK = 64,	/* tables: weak keys (__mode has 'k') */
	LC_HF_WEAKV = 128,	/* tables: weak values (__mode has 'v') */
};

struct lc_hobj {
	uint64_t addr;
	uint64_t size;		/* the bytes its free function frees */
	/* What sorts it into a class: Lua functions their Proto, C
	 * functions the C function, tables and userdata their metatable
	 * (0: none); strings a hash of their bytes (never 0: equal
	 * strings have equal hashes), but without LC_HW_EXACT a family
	 * may leave 0 in strings it interns (no two of them alike);
	 * threads, protos, upvalues 0. */
	uint64_t klass;
	/* strings: length; tables: array slots; userdata: bytes;
	 * threads: stack slots; protos: instructions; functions:
	 * upvalues */
	uint64_t len;
	uint32_t hsize;		/* tables: hash nodes (0: the dummy) */
	uint8_t kind;		/* enum lc_hkind */
	uint8_t flags;		/* LC_HF_* */
};

/* What a reference is, as a Lua user reads it (heap/path.c renders). */
enum lc_hedge {
	LC_HE_ROOT,		/* a root: name ("_LOADED", "_G", "registry",
				   "main thread", "metatable of strings",
				   "to be finalized", "open upvalue") */
	LC_HE_FIELD,		/* t.name (a string key) */
	LC_HE_INDEX,		/* t[index] (an integer key) */
	LC_HE_KEY,		/* t[name] (any other key, rendered) */
	LC_HE_ASKEY,		/* the object is a key of t (name: the value) */
	LC_HE_METATABLE,	/* a table's or userdata's metatable */
	LC_HE_UPVALUE,		/* upvalue name (or index) of a function
				   whose source:linedefined is where */
	LC_HE_ENV,		/* 5.1 environment; 5.2 userdata env */
	LC_HE_USERVALUE,	/* userdata user value index */
	LC_HE_LOCAL,		/* a stack slot: local name (NULL: a slot
				   no local names) in function where,
				   index the slot's level (1 innermost) */
	LC_HE_FUNC,		/* the function of frame index, where */
	LC_HE_PROTO,		/* a function's prototype */
	LC_HE_CONST,		/* a prototype's constant, child, name or
				   source (name says which) */
	LC_HE_OTHER,		/* anything else (name) */
};

struct lc_href {
	uint64_t to;		/* the object referred to */
	uint8_t kind;		/* its lc_hkind, from the reference's tag */
	uint8_t edge;		/* enum lc_hedge */
	bool weak;		/* a weak table's key or value */
	bool open;		/* upvalues: open, the value on a stack */
	int64_t index;
	const char *name;
	const char *where;
};

/* The VM as a whole, beside its objects. */
struct lc_hvm {
	uint64_t memory;	/* the VM's own count of its bytes */
	uint64_t own;		/* bytes of the VM's own structures that no
				   object has (global_State, the string
				   table's array) */
	uint64_t objects;	/* objects visited */
	bool partial;		/* a list broke or a bound was hit */
	char note[512];		/* why, when partial */
};

/* "string", "table", "Lua function", ...; "?" out of range.  Static. */
const char *lc_hkind_name(int kind);
/* s[0..n) is a Lua name, no reserved word: a key read as t.name. */
bool lc_lua_ident(const char *s, size_t n);
/* heap_walk's flags. */
enum {
	/* Strings' classes hash all their bytes (lc_hash_bytes), for
	 * identities across snapshots; else strings longer than
	 * LC_SKETCH_MIN hash only their ends (lc_hash_sketch), which the
	 * census reconciles where two share a sketch. */
	LC_HW_EXACT = 1,
};

/* A hash of the target's bytes [at, at + len), read through views where
 * the memory maps them (a core, a copy): a string's class; never 0;
 * fallback | 1 when a byte is unreadable.  lc_hash_buf: the same hash
 * of bytes in this process. */
uint64_t lc_hash_bytes(struct lc_memory *m, uint64_t at, uint64_t len,
		       uint64_t fallback);
uint64_t lc_hash_buf(const void *p, size_t len);
/* The hash of len and the first and last LC_SKETCH_MIN / 2 bytes: equal
 * strings have equal sketches, unequal ones mostly not.  Up to
 * LC_SKETCH_MIN bytes, lc_hash_bytes itself. */
#define LC_SKETCH_MIN	64
uint64_t lc_hash_sketch(struct lc_memory *m, uint64_t at, uint64_t len,
			uint64_t fallback);
/* lc_hash_sketch of a string of len > LC_SKETCH_MIN bytes from its
 * first and last LC_SKETCH_MIN / 2 bytes, in this process. */
uint64_t lc_hash_ends(const void *head, const void *tail, uint64_t len);

/* Mark vm partial and append a reason to its note ("; " between
 * reasons; what does not fit is dropped). */
void lc_hvm_note(struct lc_hvm *vm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* 0 to go on, -1 to stop (the walk then returns). */
typedef int lc_hobj_fn(void *arg, const struct lc_hobj *o);
typedef int lc_href_fn(void *arg, const struct lc_href *r);

struct lc_vm_ops {
	const char *name;	/* "PUC Lua" */
	/* LC_ERR_NOT_FOUND when the program has no such VM; the error
	 * says what is missing and is the caller's. */
	struct lc_error *(*open)(struct lc_program *p, struct lc_interp **ret);
	void (*close)(struct lc_interp *in);
	struct lc_error *(*begin)(struct lc_interp *in, struct lc_pass **ret);
	void (*end)(struct lc_pass *pass);

	/* ---- stacks: the report, the sampler, gdb's lua-bt ---- */

	/* The type and parameter names native frames are searched for. */
	const char *state_type;	/* "lua_State" */
	const char *state_param;	/* "L" */
	/* Locals of the native function that runs Lua, read from each
	 * frame of it and handed back to frame() (native/unwind.h:
	 * var_func, var_names). */
	const char *run_func;	/* PUC: its interpreter loop */
	const char *const *run_vars;	/* PUC: "pc", "base", "ci" */
	/* Read and validate the state at addr: false if it is none. */
	bool (*state)(struct lc_pass *pass, uint64_t addr,
		      struct lc_vstate *ret);
	/* The same, only the answer: the check of a state probe
	 * (native/unwind.h), its arg the pass.  The unwinder asks it of
	 * every register and stack word of every frame. */
	bool (*is_state)(void *pass, uint64_t addr);
	/* Optional (native/unwind.h lc_state_probe.foreign, its arg the
	 * pass): the innermost machine frame f runs code of no module; if
	 * it is the VM's own generated code, its caller's pc and stack
	 * pointer, and a name for it (malloc'd). */
	bool (*foreign)(void *pass, const struct lc_native_frame *f,
			uint64_t *pc, uint64_t *sp, char **name);
	/* The state's frames, innermost first, at most max. */
	struct lc_error *(*walk)(struct lc_pass *pass, const struct lc_vstate *st,
				 size_t max, struct lc_vwalk *ret);
	void (*walk_free)(struct lc_vwalk *w);
	/* Push the report frames of w->frames[i] (more than one where the
	 * family shows frames the walk does not see, e.g. 5.1's lost tail
	 * calls), with locals when asked.  runner: the native frame that
	 * runs it when it is the innermost Lua frame of that frame's run
	 * (its vars are the run_vars), else NULL. */
	void (*frame)(struct lc_pass *pass, const struct lc_vstate *st,
		      const struct lc_vwalk *w, size_t i, bool locals,
		      bool unplaced, const struct lc_native_frame *runner,
		      struct lc_frames *out);
	/* Lua frame w->frames[i] is the outermost of one interpreter run
	 * (one native RUNS_LUA frame runs it and the frames inside it). */
	bool (*starts_run)(struct lc_pass *pass, const struct lc_vwalk *w,
			   size_t i);
	/* Frame i of a resumed coroutine whose native frames a yield
	 * discarded: the interpreter continues it after the resume, with
	 * no native frame of its own until then. */
	bool (*continued)(struct lc_pass *pass, const struct lc_vwalk *w,
			  size_t i);
	/* Where no name says which machine frames run Lua (a stripped
	 * build): how many distinct things the interpreter keeps while it
	 * runs w->frames[i], the innermost Lua frame of a run, are among
	 * words (the values of one machine frame's registers).  0: none;
	 * report/stack.c takes two or more as that frame's. */
	unsigned (*run_marks)(struct lc_pass *pass, const struct lc_vstate *st,
			      const struct lc_vwalk *w, size_t i,
			      const uint64_t *words, size_t n);
	/* A run of the interpreter may hold a C function and no Lua one
	 * (LuaJIT's lua_cpcall calls its C function through the VM). */
	bool c_only_runs;
	/* LC_ROLE_* bits of a native function named fn. */
	unsigned (*roles)(const struct lc_interp *in, const char *fn);
	/* Optional: more LC_ROLE_* bits of machine frame f, from what the
	 * name does not say (LuaJIT: a pc in the interpreter's code, whose
	 * labels are not functions). */
	unsigned (*frame_roles)(const struct lc_interp *in,
				const struct lc_native_frame *f);
	/* Optional: state st was found held by native frame nf[i] of a
	 * thread (nf innermost first, n of them), before its walk: the
	 * family takes from the frames what memory does not say (LuaJIT:
	 * while the interpreter runs Lua, its registers hold the frame
	 * base and pc; the copies in memory are stale). */
	void (*at_frame)(struct lc_pass *pass, struct lc_vstate *st,
			 const struct lc_native_frame *nf, size_t n, size_t i);

	/* Native frame f is one of the interpreter's own (its core, its
	 * C API, its standard library): a Lua-first stack folds it into
	 * the Lua frame it runs for. */
	bool (*own_frame)(const struct lc_interp *in, const struct lc_frame *f);

	/* Optional: what the VM of state st was doing, as the VM says it
	 * (LuaJIT's vmstate): "lua" (interpreting), "trace" (running
	 * compiled trace *trace), "c", "gc" or "jit" (the compiler, or a
	 * trace's exit); static; NULL when it does not say. */
	const char *(*vm_label)(struct lc_pass *pass, const struct lc_vstate *st,
				int32_t *trace);
	/* What the thread was doing, from its mixed frames (innermost
	 * first). */
	enum lc_activity (*activity)(const struct lc_interp *in,
				     const struct lc_frame *frames, size_t n);

	/* ---- the whole process: the VM list, lua-states, lua-value ---- */

	/* The state's Lua-only frames, with locals and the data stack's
	 * slots when asked (lc_luathread's frames, slots, topslot). */
	void (*state_frames)(struct lc_pass *pass, const struct lc_vstate *st,
			     size_t max, bool locals, bool slots, int residue,
			     struct lc_luathread *ret);
	/* Every VM the memory holds (sorted), and the objects that may be
	 * threads, read in the same pass (unvalidated); threads NULL: the
	 * VMs only. */
	struct lc_error *(*scan)(struct lc_pass *pass, uint64_t **vms,
				 size_t *nvms, uint64_t **threads,
				 size_t *nthreads);
	/* Decode the VM at vm: its GC state and every thread (from the
	 * scan's candidates when scanned, else its GC lists). */
	struct lc_error *(*decode_vm)(struct lc_pass *pass, uint64_t vm,
				      bool scanned, const uint64_t *threads,
				      size_t nthreads, struct lc_vm *ret);
	/* The internals of one state (lc_luathread minus what the report
	 * fills). */
	void (*decode_state)(struct lc_pass *pass, const struct lc_vstate *st,
			     struct lc_luathread *ret);
	/* Names of VM vm read from its own state: into *name the string
	 * value of its global named global (NULL global: none), into
	 * *alloc its allocator function's symbol; malloc'd, NULL when not
	 * known. */
	void (*vm_names)(struct lc_pass *pass, uint64_t vm, const char *global,
			 char **name, char **alloc);
	/* The object at addr for lc_object_create. */
	struct lc_error *(*object)(struct lc_pass *pass, enum lc_object_kind kind,
				   uint64_t addr, size_t max,
				   struct lc_object **ret);

	/* ---- sampling ---- */

	/* The state the innermost frame of st resumes (a C function whose
	 * first argument is a thread of the same VM with frames: PUC's
	 * coroutine.resume), or 0: how a sampler that reads as the
	 * program runs finds a coroutine it has not seen yet. */
	uint64_t (*resumes)(struct lc_pass *pass, const struct lc_vstate *st);

	/* What changes as the states run, to copy at the next stop: the
	 * states, the frames' records (the report frames' ci), the used
	 * data stacks.  At most room ranges, in that order; returns how
	 * many. */
	size_t (*hot)(struct lc_pass *pass, const uint64_t *states,
		      size_t nstates, const struct lc_frame *frames,
		      size_t nframes, uint64_t (*ranges)[2], size_t room);

	/* ---- the heap (optional: NULL where the family has none) ---- */

	/* Visit every object of VM vm once (the GC's lists, and what the
	 * release keeps off them), bounded; *ret gets the VM's totals.
	 * Fails only when vm is no VM; a broken list is ret->partial.
	 * flags: LC_HW_*. */
	struct lc_error *(*heap_walk)(struct lc_pass *pass, uint64_t vm,
				      unsigned flags, lc_hobj_fn *fn,
				      void *arg, struct lc_hvm *ret);
	/* The references out of o (NULL: the VM's roots, in the order
	 * paths prefer them), each to a collectable object; optional (a
	 * family without it has no paths).  Returns -1
	 * when o could not be read whole (what was read was visited). */
	int (*heap_refs)(struct lc_pass *pass, uint64_t vm,
			 const struct lc_hobj *o, lc_href_fn *fn, void *arg);
	/* A class's name, malloc'd: "source:linedefined" of a Proto, a C
	 * function's symbol, a metatable's __name (or the registry key
	 * that holds it); NULL when it has none. */
	char *(*heap_class)(struct lc_pass *pass, uint64_t vm,
			    enum lc_hkind kind, uint64_t klass);
	/* Up to max bytes of string o, malloc'd (*len: how many). */
	char *(*heap_string)(struct lc_pass *pass, const struct lc_hobj *o,
			     size_t max, size_t *len);
};

/* The families (vm/<family>/family.c). */
extern const struct lc_vm_ops lc_puc_ops;	/* PUC Lua 5.1-5.5 */
extern const struct lc_vm_ops lc_luajit_ops;	/* LuaJIT 2.1, GC64 */

/* The families, NULL-terminated, in the order they are tried. */
extern const struct lc_vm_ops *const lc_vm_families[];

/* Every family's interpreter in p (a process may embed more than one),
 * in family order: *ret gets a malloc'd array (NULL when none).  When
 * none is found, the error of the first family that found its VM and
 * could not read it (any code but LC_ERR_NOT_FOUND), else of the first
 * family, says why (the caller's); LC_ERR_NOMEM otherwise only. */
struct lc_error *lc_interp_open_all(struct lc_program *p,
				    struct lc_interp ***ret, size_t *nret);
void lc_interp_close(struct lc_interp *in);

/* What a thread was doing, by a family's roles (vm_ops.activity for
 * both families): the innermost Lua frame says Lua or C; a collector
 * entry point (LC_ROLE_GC) leafward of it makes it GC work; no Lua
 * frame: host code. */
enum lc_activity lc_activity_by_roles(const struct lc_interp *in,
				      const struct lc_frame *frames, size_t n);

/* The answers of a family's is_state in one pass: a stack holds the same
 * lua_State in frame after frame, and a pass reads one view of the
 * memory.  lc_seen_check answers from it, or asks check(arg, addr) and
 * keeps the answer. */
#define LC_SEEN_STATES	64
struct lc_seen {
	uint64_t addr[LC_SEEN_STATES];	/* 0: free */
	bool ok[LC_SEEN_STATES];
};
bool lc_seen_check(struct lc_seen *c, uint64_t addr,
		   bool (*check)(void *arg, uint64_t addr), void *arg);

/* pc lies in the interpreter's module. */
bool lc_interp_has_pc(const struct lc_interp *in, uint64_t pc);

void lc_vwalk_free(const struct lc_interp *in, struct lc_vwalk *w);

/* The report's data every family fills (luacore.h): a value as "nil"
 * with no length; freeing values, variables, slots and a frame's
 * strings and variables. */
void lc_value_init(struct lc_value *v);
void lc_value_deinit(struct lc_value *v);
void lc_vars_free(struct lc_var *vars, size_t n);
void lc_slots_free(struct lc_slot *slots, size_t n);
void lc_frame_free(struct lc_frame *f);
/* What decode_vm and decode_state allocate: a VM's threads array and
 * note, each thread's hook_name and note (not frames or slots, which
 * the report adds and frees). */
void lc_luathread_clear(struct lc_luathread *th);
void lc_vm_clear(struct lc_vm *vm);

#endif /* LC_VM_H */
