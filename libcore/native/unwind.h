/* The native layer: a thread's machine frames via libdwfl (or as a
 * debugger handed them in), with symbols, source lines, inlined calls,
 * and the interpreter states that DWARF variables, registers and stack
 * words offer, as a probe of the VM layer recognizes them.  It knows no
 * VM: the probe names the type and parameter to look for and validates
 * each candidate.
 *
 * Ownership: an unwinder borrows its program and owns its cache of what
 * DWARF says per pc (symbols, inlines, variable locations), which it
 * drops when the program's modules change or another probe comes.
 * Frames returned are the caller's (lc_native_frames_free). */
#ifndef LC_UNWIND_H
#define LC_UNWIND_H

#include "prog/program.h"

#define LC_FRAME_VARS	4	/* locals a probe may ask for by name */

/* What a VM family wants found in native frames. */
struct lc_native_frame;

struct lc_state_probe {
	const char *type_name;	/* variables pointing to this struct */
	const char *param_name;	/* the parameter naming the state a frame
				   runs ("L"), or NULL */
	bool (*check)(void *arg, uint64_t addr);	/* a valid state? */
	void *arg;
	/* Locals of one function whose values the family wants: in each
	 * frame that runs var_func (itself or inlined), the variables of
	 * these names in scope at pc, innermost first.  NULL: none. */
	const char *var_func;
	const char *const *var_names;	/* NULL-terminated, at most
					   LC_FRAME_VARS */
	/* Optional: the innermost machine frame f runs code of no module,
	 * which no unwind information covers: is it the interpreter's own
	 * generated code (LuaJIT: a compiled trace)?  Then true, with the
	 * pc and stack pointer its caller's frame starts from and a name
	 * for f (malloc'd, or NULL). */
	bool (*foreign)(void *arg, const struct lc_native_frame *f,
			uint64_t *pc, uint64_t *sp, char **name);
};

struct lc_unwinder;

/* A call inlined into a machine frame, innermost first. */
struct lc_inline {
	char *function;		/* malloc'd: demangled from DW_AT_linkage_name
				   where there is one (a C++ function), else
				   DW_AT_name */
	char *file;		/* malloc'd, or NULL */
	int line;
};

struct lc_native_frame {
	uint64_t pc;		/* as unwound: a return address for callers */
	bool activation;	/* pc is exact (innermost or signal frame) */
	uint64_t regs[LC_NREGS];
	uint32_t regmask;	/* which regs are known */
	char *function;		/* symbol name, malloc'd, or NULL: demangled,
				   without a version (lc_symbol_display) */
	char *linkage;		/* the symbol as it is linked, when function
				   is its demangled form; malloc'd, or NULL */
	uint64_t func_start;	/* address of that symbol, 0 if none */
	char *module;		/* lc_program_module_name, or the name of
				   executable memory of no module
				   ("[anon:exec]"); malloc'd, or NULL */
	char *file;		/* source file, malloc'd, or NULL */
	int line;		/* with inlines: the call site of the
				   outermost inline in this function */
	struct lc_inline *inl;	/* inlined calls at pc, innermost first */
	size_t ninl;
	uint64_t L;		/* validated state from the frame's DWARF
				   parameter of the probe's name, 0 if none */
	uint64_t L_raw;		/* that parameter's value, validated or
				   not, 0 if unknown */
	uint64_t *cands;	/* other validated states this frame holds
				   (DWARF, registers, stack words) */
	size_t ncands;
	uint64_t vars[LC_FRAME_VARS];	/* the probe's var_names[k], where
					   DWARF locates them ... */
	unsigned varmask;	/* ... bit k set */
};

struct lc_error *lc_unwinder_create(struct lc_program *p,
				    struct lc_unwinder **ret);
void lc_unwinder_destroy(struct lc_unwinder *u);

/* Why a native stack is partial (bits). */
enum {
	LC_NATIVE_TRUNCATED = 1,	/* more frames than max */
	LC_NATIVE_BROKEN = 2,		/* unwinding failed or stopped early */
};

/* Unwind thread tid, at most max frames.  *partial gets LC_NATIVE_* bits
 * if unwinding stopped for a reason other than the stack's end, *why
 * says why (malloc'd, or NULL).  With a probe, each frame's state candidates are
 * looked up and validated with it.  The array and its strings are freed
 * by lc_native_frames_free. */
struct lc_error *lc_unwind_thread(struct lc_unwinder *u,
				  const struct lc_state_probe *probe,
				  int tid, size_t max,
				  struct lc_native_frame **ret, size_t *nret,
				  unsigned *partial, char **why);
void lc_native_frames_free(struct lc_native_frame *f, size_t n);

#endif /* LC_UNWIND_H */
