/* The composition root: struct lc_target of luacore.h is a program
 * (prog/), its unwinder (native/) and the interpreter found in it (vm/).
 * This is the only place that creates and destroys across layers; the
 * public lc_target_* functions live in session.c.
 *
 * Ownership: the target owns its program, unwinder and interpreter, and
 * the error that says why no interpreter was found.  The interpreter and
 * the unwinder are made again when the program's modules change
 * (lc_program.generation). */
#ifndef LC_SESSION_H
#define LC_SESSION_H

#include "base/base.h"
#include "prog/program.h"
#include "native/unwind.h"
#include "vm/vm.h"

struct lc_target {
	struct lc_program *prog;
	struct lc_unwinder *unw;
	/* Every interpreter found, one per VM family that finds one (a
	 * process may embed PUC Lua and LuaJIT both): the report reads
	 * each; the sampler and gdb's lua-bt use the first (interps[0]). */
	struct lc_interp **interps;
	size_t ninterps;
	struct lc_error *interp_err;	/* why none was found */
	bool interp_tried;
	unsigned generation;	/* of the program when the above were made */
};

/* A target around program p, which it then owns (destroyed on error). */
struct lc_error *lc_target_wrap(struct lc_program *p, struct lc_target **ret);

/* The (first) interpreter of the target, found once per set of
 * modules; NULL when there is none, with *why (may be NULL) the reason,
 * owned by the target. */
struct lc_interp *lc_target_interp(struct lc_target *t,
				   const struct lc_error **why);
/* Every interpreter of the target (*n of them, the first being
 * lc_target_interp's); NULL and 0 when there is none. */
struct lc_interp *const *lc_target_interps(struct lc_target *t,
					   const struct lc_error **why,
					   size_t *n);
struct lc_unwinder *lc_target_unwinder(struct lc_target *t);

#endif /* LC_SESSION_H */
