/* Native frames of a thread via libdwfl, with symbols, source lines and
 * the lua_State pointers that DWARF, registers and stack words offer.
 * Owned by libcore; internal. */
#ifndef LC_UNWIND_H
#define LC_UNWIND_H

#include "prog/target.h"

#define LC_NREGS	17	/* x86_64 DWARF registers 0-16 (rip = 16) */
#define LC_REG_SP	7

struct lc_lua_ctx;

/* A call inlined into a machine frame, innermost first. */
struct lc_inline {
	char *function;		/* malloc'd */
	char *file;		/* malloc'd, or NULL */
	int line;
};

struct lc_native_frame {
	uint64_t pc;		/* as unwound: a return address for callers */
	bool activation;	/* pc is exact (innermost or signal frame) */
	uint64_t regs[LC_NREGS];
	uint32_t regmask;	/* which regs are known */
	char *function;		/* symbol name, malloc'd, or NULL */
	uint64_t func_start;	/* address of that symbol, 0 if none */
	char *module;		/* module path, malloc'd, or NULL */
	char *file;		/* source file, malloc'd, or NULL */
	int line;		/* with inlines: the call site of the
				   outermost inline in this function */
	struct lc_inline *inl;	/* inlined calls at pc, innermost first */
	size_t ninl;
	uint64_t L;		/* validated lua_State from the frame's
				   DWARF parameter named L, 0 if none */
	uint64_t L_raw;		/* that parameter's value, validated or
				   not, 0 if unknown */
	uint64_t *cands;	/* other validated lua_States this frame
				   holds (DWARF, registers, stack words) */
	size_t ncands;
};

/* Unwind thread tid of t (a core), at most max frames.  *partial is set
 * if unwinding stopped early for a reason other than the stack's end.
 * If ctx is non-NULL, lua_State candidates are looked up and validated
 * with it.  The array and its strings are freed by lc_native_frames_free. */
struct lc_error *lc_unwind_thread(struct lc_target *t, struct lc_lua_ctx *ctx,
				  int tid, size_t max,
				  struct lc_native_frame **ret, size_t *nret,
				  bool *partial, char **why);
void lc_native_frames_free(struct lc_native_frame *f, size_t n);
/* Free the target's cache of what DWARF says per pc. */
void lc_unwind_cache_free(struct lc_target *t);

#endif /* LC_UNWIND_H */
